"""A recipe on PlaceBench: train on ``train``, select on ``validation``, score on ``test``.

:func:`run_recipe` groups the cases to score by :attr:`~placerl.bench.case.Case.family`. For
each family it trains the recipe (an ``experiment`` config, as ``placerl-train
experiment=<recipe>`` runs it) once on the family's ``train`` cases, with its ``validation``
cases choosing the kept weights, then places every case of the family with the trained policy
(the ``policy`` placer) and scores it as a classic placer's placement
(:func:`placerl.bench.run.run_case`). A family without training cases learns from those the
suite names (:attr:`~placerl.bench.suite.Suite.trained_on`: zero-shot transfer).

With ``learn_on="case"`` the recipe is a per-graph search instead, as Placeto and the
hierarchical planner were run: it trains from nothing on each case it scores, and the best
placement its training found (every episode, evaluation and final rollout) is the case's
placement (the ``file`` placer reads it back). Its record's ``training`` is that case's alone.

Every simulator call is counted: the training's (env steps, evaluations, validation, rollback
checks, warm-start episodes: :func:`placerl.train.simulator_calls`) go in each record's
``training`` once per family, the policy's on the case in ``simulator_calls``; the anytime
trace starts after the training's calls and seconds. The guard
(:mod:`placerl.bench.guard`) refuses validation graphs that are a test case.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from placerl.bench.case import Case
from placerl.bench.run import TRAINING_DIR, record_path, run_case
from placerl.bench.suite import Suite
from placerl.compose import compose_run
from placerl.errors import ConfigError
from placerl.graph import load_graph
from placerl.results import write_json
from placerl.run_config import LEARN_ON, RunConfig, check_recipe

#: The file in a training folder that says what the training cost.
TRAINING_FILE = "training.json"
#: Fields of ``training.json`` a record's ``training`` leaves out (the record has its own
#: provenance; the config is in the training folder's ``result.json``).
NOT_IN_RECORD = ("config", "provenance")
#: Overrides that change no placement (how it runs, not what it learns): no part of a label.
NOT_IN_LABEL = ("progress_bar", "threads", "rollout_threads", "logger", "force", "device")


def recipe_label(
    recipe: str,
    overrides: list[str] | tuple[str, ...] = (),
    learn_on: str = "family",
    search: Mapping[str, Any] | None = None,
) -> str:
    """How records and the leaderboard name a recipe with its overrides (its budget):
    ``recipe:placeto``, ``recipe:placeto[total_steps=4000]``, per case
    ``recipe:placeto[learn_on=case,total_steps=4000]``, and with a search at inference
    ``recipe:improve?search=local&budget=200``."""
    shown = [
        o for o in overrides if o.lstrip("+~").partition("=")[0].split(".")[0] not in NOT_IN_LABEL
    ]
    if learn_on != "family":
        shown.insert(0, f"learn_on={learn_on}")
    label = f"recipe:{recipe}" + (f"[{','.join(shown)}]" if shown else "")
    return label + ("?" + "&".join(f"{k}={v}" for k, v in search.items()) if search else "")


def training_run(
    recipe: str,
    overrides: list[str] | tuple[str, ...],
    seed: int,
    train: list[Case],
    validation: list[Case],
) -> RunConfig:
    """The :class:`~placerl.run_config.RunConfig` that trains ``recipe`` on the ``train``
    cases, selecting on the ``validation`` cases that share their cluster and objective.

    Raises:
        ConfigError: No training case, or training cases on two clusters or objectives.
    """
    if not train:
        raise ConfigError("no training case to learn from")
    (cluster, objective), *other = dict.fromkeys((c.cluster, c.objective) for c in train)
    if other:
        raise ConfigError(
            f"training cases {train[0].name!r} and more are on "
            f"{[cluster, *other]}: a policy trains on one cluster"
        )
    run = compose_run(f"experiment={recipe}", *overrides)
    selecting = [c for c in validation if (c.cluster, c.objective) == (cluster, objective)]
    if not (run.eval_every and run.keep_best):
        selecting = []  # the recipe evaluates only at the end: its last weights are kept
    graphs = [load_graph(c.graph) for c in (*train, *selecting)]
    env = {
        "objective": objective,  # a padded observation: room for every graph it reads
        "max_nodes": max(run.env.max_nodes or 0, *(g.num_nodes for g in graphs)),
        "max_edges": max(run.env.max_edges or 0, *(g.num_edges for g in graphs)),
    }
    updates = {
        "graph": {"spec": [c.graph for c in train]},
        "cluster": {"spec": cluster},
        "env": env,
        "seed": seed,
        "baselines": [],
        "validation_graphs": [c.graph for c in selecting],
    }
    return RunConfig.from_dict(updates, base=run).check()


def family_run(
    suite: Suite, family: str, recipe: str, overrides: list[str] | tuple[str, ...], seed: int
) -> RunConfig:
    """:func:`training_run` for ``family`` of ``suite``.

    Raises:
        ConfigError: As :func:`training_run`, naming the suite and the family.
    """
    try:
        return training_run(recipe, overrides, seed, *suite.training_cases(family))
    except ConfigError as error:
        raise ConfigError(f"{suite.id} family {family!r}: {error}") from None


def train_family(
    suite: Suite,
    family: str,
    recipe: str,
    overrides: list[str] | tuple[str, ...],
    seed: int,
    out_dir: Path,
) -> dict[str, Any]:
    """Train ``recipe`` for ``family`` in ``out_dir`` (or read back the training there) and
    return what the records store of it: the recipe, the cases, the policy file, the
    simulator calls and seconds it cost, and the torch device it trained on."""

    train_cases, validation = suite.training_cases(family)
    run = family_run(suite, family, recipe, overrides, seed)
    folder = out_dir / TRAINING_DIR / f"{family.replace('/', '__')}-seed{seed}"
    label = f"{recipe_label(recipe, overrides)}|{family}|seed={seed}"
    return _train_in(
        folder,
        run,
        label,
        recipe,
        overrides,
        family,
        train_cases,
        [c for c in validation if c.graph in run.validation_graphs],
    )


def train_case(
    case: Case, recipe: str, overrides: list[str] | tuple[str, ...], seed: int, out_dir: Path
) -> dict[str, Any]:
    """Train ``recipe`` from nothing on ``case`` alone (``learn_on="case"``), as
    :func:`train_family` does for a family; the info names the ``best_placement`` file."""
    run = training_run(recipe, overrides, seed, [case], [])
    folder = out_dir / TRAINING_DIR / f"{case.name.replace('/', '__')}-seed{seed}"
    label = f"{recipe_label(recipe, overrides, 'case')}|{case.name}|seed={seed}"
    info = _train_in(folder, run, label, recipe, overrides, case.family, [case], [])
    best_curve = json.loads((folder / "result.json").read_text()).get("best_curve", [])
    return {
        **info,
        "best_placement": str(folder / "best_placement.json"),
        "trace": _search_trace(best_curve),
    }


def _search_trace(best_curve: list[dict[str, Any]]) -> list[list[float]]:
    """``[calls, seconds, best runtime]`` of a one-graph training's best curve where its best
    placement fits (a curve recorded without calls and seconds gives none)."""
    return [
        [point["calls"], point["wall_s"], point["best"][0]]
        for point in best_curve
        if "calls" in point and all(point.get("feasible", [False]))
    ]


def _train_in(
    folder: Path,
    run: RunConfig,
    label: str,
    recipe: str,
    overrides: list[str] | tuple[str, ...],
    family: str,
    train_cases: list[Case],
    validation: list[Case],
) -> dict[str, Any]:
    """Train ``run`` in ``folder`` (or read back the training there) and return what the
    records store of it."""
    from placerl.train import train

    done = _read_training(folder, run.to_dict())
    if done:
        return done
    result = train(run, out_dir=str(folder))
    timings = result.timings
    info = {
        "id": label,
        "recipe": recipe,
        "overrides": list(overrides),
        "seed": run.seed,
        "family": family,
        "cases": [c.name for c in train_cases],
        "validation": [c.name for c in validation],
        "budget": {"total_steps": run.total_steps, "time_limit_s": run.time_limit_s},
        "device": str(result.model.device),  # where the policy trained (cpu, cuda:0)
        "steps": result.steps,
        # the step of the kept weights: 0 is the warm start's (or the initial) policy
        "policy_step": result.policy_step,
        "simulator_calls": result.simulator_calls["total"],
        "wall_s": sum(timings.get(k, 0.0) for k in ("warm_start", "train", "evaluate")),
        "policy": str(folder / "model.zip"),
        "config": run.to_dict(),
        "provenance": result.provenance,
    }
    write_json(folder / TRAINING_FILE, info)
    return info


def _read_training(folder: Path, config: dict[str, Any]) -> dict[str, Any] | None:
    """The training of ``config`` finished in ``folder``, if it is there."""
    try:
        info = json.loads((folder / TRAINING_FILE).read_text())
    except (OSError, ValueError):
        return None
    ready = info.get("config") == config and all(
        (folder / name).is_file() for name in ("model.zip", "best_placement.json")
    )
    return info if ready else None


def run_recipe(
    suite: Suite,
    cases: list[Case],
    recipe: str,
    overrides: list[str] | tuple[str, ...],
    seed: int,
    out_dir: str | Path,
    *,
    force: bool = False,
    learn_on: str = "family",
    search: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Train, select and score ``recipe`` on ``cases`` of ``suite`` (see the module); one
    record per case in ``out_dir``, in the order of ``cases``. A case whose record of this
    recipe and seed is there is read back (unless ``force``); a family whose training
    finished in ``out_dir/training`` (:data:`~placerl.bench.run.TRAINING_DIR`) is not trained
    again. ``search`` gives the trained policy a search at inference (the ``policy`` placer's
    ``search``, ``budget``, ...: its calls count in each case's record, the label names it).

    Raises:
        ConfigError: An unknown recipe or ``learn_on``, an override of what the suite sets,
            or a family with nothing to learn from (before any training).
    """
    check_recipe(recipe, overrides)
    if learn_on not in LEARN_ON:
        raise ConfigError(f"learn_on must be one of {', '.join(LEARN_ON)}, got {learn_on!r}")
    out = Path(out_dir)
    label = recipe_label(recipe, overrides, learn_on, search)
    if learn_on == "case":
        if search:
            raise ConfigError(
                "learn_on='case' keeps the best placement its training found; "
                f"a search at inference ({search}) needs learn_on='family'"
            )
        return _run_per_case(suite, cases, recipe, overrides, seed, out, label, force)
    return _run_per_family(suite, cases, recipe, overrides, seed, out, label, force, search)


def _run_per_case(
    suite: Suite,
    cases: list[Case],
    recipe: str,
    overrides: list[str] | tuple[str, ...],
    seed: int,
    out: Path,
    label: str,
    force: bool,
) -> list[dict[str, Any]]:
    """``learn_on="case"``: each case's record, read back or trained and scored."""
    done = {} if force else {c.name: finished_record(out, c, label, seed) for c in cases}
    return [
        done.get(c.name) or _run_on_case(suite, c, recipe, overrides, seed, out, label)
        for c in cases
    ]


def _run_per_family(
    suite: Suite,
    cases: list[Case],
    recipe: str,
    overrides: list[str] | tuple[str, ...],
    seed: int,
    out: Path,
    label: str,
    force: bool,
    search: Mapping[str, Any] | None,
) -> list[dict[str, Any]]:
    """``learn_on="family"``: one training per family, then each case placed by it."""
    families = list(dict.fromkeys(c.family for c in cases))
    for family in families:  # every family can train before the first one does
        family_run(suite, family, recipe, overrides, seed)
    records: dict[str, dict[str, Any]] = {}
    for family in families:
        todo = [
            c
            for c in cases
            if c.family == family and (force or not _scored(out, c, label, seed, records))
        ]
        if not todo:
            continue
        info = train_family(suite, family, recipe, overrides, seed, out)
        training = {k: v for k, v in info.items() if k not in NOT_IN_RECORD}
        for case in todo:
            records[case.name] = run_case(
                case,
                "policy",
                out,
                suite=suite.id,
                label=label,
                training=training,
                options={"path": training["policy"], **(search or {})},
            )
    return [records[c.name] for c in cases]


def _run_on_case(
    suite: Suite,
    case: Case,
    recipe: str,
    overrides: list[str] | tuple[str, ...],
    seed: int,
    out: Path,
    label: str,
) -> dict[str, Any]:
    """Train ``recipe`` on ``case`` and score the best placement the training found."""
    training = {
        k: v
        for k, v in train_case(case, recipe, overrides, seed, out).items()
        if k not in NOT_IN_RECORD
    }
    return run_case(
        case,
        "file",
        out,
        suite=suite.id,
        label=label,
        training=training,
        options={"path": training["best_placement"]},
    )


def finished_record(
    out: str | Path, case: Case, label: str, seed: int | None
) -> dict[str, Any] | None:
    """The finished record of ``case`` by ``label`` at ``seed`` in ``out``, if there (what a
    resumed run reads back instead of placing the case again)."""
    records: dict[str, dict[str, Any]] = {}
    return records[case.name] if _scored(out, case, label, seed, records) else None


def _scored(
    out: str | Path, case: Case, label: str, seed: int | None, records: dict[str, dict[str, Any]]
) -> bool:
    """Whether ``out`` holds a finished record of ``case`` by ``label`` at ``seed`` (kept in
    ``records``)."""
    try:
        record = json.loads(record_path(out, case, seed).read_text())
    except (OSError, ValueError):
        return False
    if record.get("error") or (record.get("placer"), record.get("seed")) != (label, seed):
        return False
    records[case.name] = record
    return True
