"""The ablation ladder: a faithful preset, then placerl's tuned choices added one at a time.

A faithful preset (``experiment=placeto_faithful``; :class:`~placerl.run_config.PresetGroup`)
names its tuned recipe (``preset.tuned``). The ladder climbs from one to the other: each
rung of :data:`RUNGS` takes the tuned recipe's values of its options and keeps the rungs
below it, and the last step is the tuned recipe itself::

    faithful -> +heft_features -> +clone -> +rollback -> tuned

A rung drops the preset's claim (``preset.name=null``: it no longer runs as the paper did)
and overrides only the options whose tuned value differs from the faithful one; a rung that
would change nothing is left out (its row would repeat the one below). Everything else,
the budget included, is the faithful recipe's, so two adjacent steps' records pair by case
and seed: :func:`paired_rows` compares each step with the one below
(:func:`placerl.comparison.compare_pairs`: the geometric-mean runtime ratio with its
bootstrap 95% interval, wins and losses, the signed-rank test), the gain of one choice.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from placerl.bench.case import Case
from placerl.bench.recipe import run_recipe
from placerl.bench.suite import Suite
from placerl.compose import compose_run, group_options
from placerl.errors import ConfigError
from placerl.overrides import quoted_override
from placerl.run_config import UNSET

#: The rungs above the faithful preset, bottom up: a name and the options it takes from the
#: tuned recipe.
RUNGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("+heft_features", ("env.features",)),
    ("+clone", ("agent.warm_start", "agent.warm_start_epochs")),
    ("+rollback", ("agent.rollback",)),
)


@dataclass(frozen=True)
class Step:
    """One step of a ladder: a recipe and the overrides that make the step of it.

    Attributes:
        name: ``faithful``, a rung of :data:`RUNGS` or ``tuned``.
        recipe: The ``experiment`` it runs.
        overrides: Its ``placerl-train`` overrides (without the budget).
    """

    name: str
    recipe: str
    overrides: tuple[str, ...] = ()


def faithful_presets() -> list[str]:
    """Every ``experiment`` that names a preset with a tuned recipe (it composes each)."""
    presets = {
        name: compose_run(f"experiment={name}").preset for name in group_options("experiment")
    }
    return [name for name, preset in presets.items() if preset.name and preset.tuned]


def ladder(preset: str) -> list[Step]:
    """The steps from the faithful ``preset`` to its tuned recipe (see the module).

    Raises:
        ConfigError: ``preset`` is no faithful preset (it names no tuned recipe).
    """
    faithful = compose_run(f"experiment={preset}")
    tuned_name = faithful.preset.tuned
    if not (faithful.preset.name and tuned_name):
        raise ConfigError(
            f"experiment {preset!r} is no faithful preset (it names no "
            "preset.tuned recipe): the ladder climbs from a faithful preset to "
            "its tuned recipe"
        )
    tuned = compose_run(f"experiment={tuned_name}")
    steps, taken = [Step("faithful", preset)], ["preset.name=null"]
    for name, options in RUNGS:
        changes = [
            _override(path, tuned.option(path), faithful.option(path))
            for path in options
            if tuned.option(path) != faithful.option(path)
        ]
        if changes:
            taken += changes
            steps.append(Step(name, preset, tuple(taken)))
    return [*steps, Step("tuned", tuned_name)]


def _override(path: str, value: Any, before: Any) -> str:
    """The override that sets ``path`` to ``value`` (deletes it for :data:`UNSET`); ``+``
    adds a key the free mapping lacked (``before``)."""
    if value is UNSET:
        return f"~{path}"
    if isinstance(value, bool) or value is None:
        text = {None: "null", True: "true", False: "false"}[value]
    elif isinstance(value, str | int | float):
        text = str(value)
    else:
        raise ConfigError(f"the ladder sets scalar options only; {path} is {value!r}")
    return quoted_override(f"{'+' if before is UNSET else ''}{path}={text}")


def run_ladder(
    suite: Suite,
    cases: list[Case],
    preset: str,
    budget: Sequence[str],
    seeds: Sequence[int],
    out_dir: str | Path,
    *,
    steps: Sequence[str] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """Run the steps of ``preset``'s ladder (``steps``, by name; ``None``: every one) on
    ``cases`` at each seed, with the ``budget`` overrides (``total_steps=...``) on every
    step, each step in ``out_dir/<preset>/<step>`` (:func:`~placerl.bench.recipe.run_recipe`:
    finished trainings and records are read back); returns each step's records, by name, in
    the ladder's order.

    Raises:
        ConfigError: As :func:`ladder` and :func:`~placerl.bench.recipe.run_recipe`; a step
            the ladder does not have (naming those it has).
    """
    records: dict[str, list[dict[str, Any]]] = {}
    for step in _chosen(ladder(preset), steps, preset):
        folder = Path(out_dir) / preset / step.name
        records[step.name] = [
            record
            for seed in seeds
            for record in run_recipe(
                suite, cases, step.recipe, [*step.overrides, *budget], seed, folder
            )
        ]
    return records


def _chosen(steps: list[Step], names: Sequence[str] | None, preset: str) -> list[Step]:
    """The ``steps`` named in ``names`` (all for ``None``), in the ladder's order."""
    if names is None:
        return steps
    unknown = sorted(set(names) - {step.name for step in steps})
    if unknown:
        raise ConfigError(
            f"the ladder of {preset} has no step {', '.join(unknown)}; its steps: "
            f"{', '.join(step.name for step in steps)}"
        )
    return [step for step in steps if step.name in names]


def paired_rows(preset: str, records: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per step above the first: its records' runtimes over those of the step below,
    paired by case and seed (records that failed or place infeasibly pair with nothing)."""
    from placerl.comparison import compare_pairs

    names = list(records)
    rows = []
    for below, step in itertools.pairwise(names):
        pairs = _pairs(records[step], records[below])
        trainings = step_trainings(records[step])
        result = compare_pairs(*zip(*pairs, strict=True)) if pairs else compare_pairs([], [])
        rows.append(
            {
                "preset": preset,
                "step": step,
                "versus": below,
                "pairs": result.pairs,
                "ratio": result.ratio,
                "ci_low": result.ci_low,
                "ci_high": result.ci_high,
                "wins": result.wins,
                "losses": result.losses,
                "p_value": result.p_value,
                "kept": kept_weights(trainings),
                "verdict": _verdict(result, step, below, trainings),
            }
        )
    return rows


def kept_weights(trainings: list[dict[str, Any]]) -> str:
    """Which weights each of ``trainings`` (:func:`step_trainings`) kept: ``kept/steps``
    (``0/8192``: the weights before the first update, the warm start's clone where the step
    clones; ``?`` for a training recorded without it)."""
    return ", ".join(f"{t.get('policy_step', '?')}/{t.get('steps', '?')}" for t in trainings)


def step_trainings(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The trainings of a step's ``records``, each once, by family and seed."""
    trainings = {t["id"]: t for r in records if (t := r.get("training"))}
    return sorted(trainings.values(), key=lambda t: (str(t.get("family")), t.get("seed") or 0))


def _verdict(result: Any, step: str, below: str, trainings: list[dict[str, Any]]) -> str:
    """The comparison's verdict (in words for a choice where every pair ties: its own speak
    of an order, the setting it was first written for), saying so where none of ``step``'s
    ``trainings`` kept an update: its row then measures the weights it started from."""
    if result.pairs and result.ties == result.pairs:
        verdict = (
            f"{step} and {below} give the same runtime in all {result.pairs} pairs: the "
            "choice changes no placement here"
        )
    else:
        verdict = result.verdict(step, below)
    steps = [t.get("policy_step") for t in trainings]
    if steps and all(s == 0 for s in steps):
        verdict += (
            f"; every training of {step} kept its weights of step 0 (the warm start's clone "
            "where it clones): no policy-gradient update was kept"
        )
    return verdict


def _pairs(
    candidate: list[dict[str, Any]], reference: list[dict[str, Any]]
) -> list[tuple[float, float]]:
    """``(candidate runtime, reference runtime)`` of every case and seed both placed."""

    def runtimes(records: list[dict[str, Any]]) -> dict[tuple[str, Any], float]:
        return {
            (r["case"], r.get("seed")): float(r["runtime"])
            for r in records
            if r.get("feasible") and not r.get("error")
        }

    theirs = runtimes(reference)
    return [(runtime, theirs[key]) for key, runtime in runtimes(candidate).items() if key in theirs]
