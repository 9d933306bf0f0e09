"""Train the pretrained policies that ship with placerl, score them and write them into the package.

For each family of PlaceBench's ``families`` tier (``layered``, ``cifar10``, ``ptb``, ``nmt``)
this trains a recipe with :func:`placerl.bench.recipe.train_family` (on the family's ``train``
cases, selecting on its ``validation`` ones, as a PlaceBench recipe row trains), writes the
policy into ``placerl/data/pretrained/<name>.zip`` with its weights in float16 (half the bytes:
a GNN policy is about 0.9 MB then; the optimizer's state is already left out, its
imitation warm start fits with an optimizer of its own), places every test case of the family
with the shipped file (the ``policy`` placer, greedy) and writes the card ``<name>.json``
(:mod:`placerl.agents.pretrained`): the recipe and budget, the cases, the cluster and widths
the policy reads, its leaderboard row (:func:`placerl.bench.leaderboard.leaderboard` over its
records) and, per test case, the runtime and placement of its greedy placement, which
``tests/agents/test_pretrained.py`` checks. Every figure is of the shipped (float16) weights;
the card's ``training.float32_score`` is the score of the weights as trained, on the same cases.

The default recipe is ``improve`` cloned only (``total_steps=0``): PPO steps after the clone
placed held-out layered graphs no better (0.891x the best constructive placer after 16k steps
and after none: benchmarks/results/archive/recipes_improve_16k.md, recipes_improve.md), for
minutes more per family. The cell families start their refinement from the constructive
placers' best (``best_of?placers=heft,m_etf,m_sct``), which is also their reward's
reference: ``best_of``'s DP costs seconds on a cell and never wins under ``step_time``, and
the policy then places a 300-node cell in about a second
(recipes_improve_cifar10_env-initial-best_of-placers-heft-m_etf-m_sct.md).

    python benchmarks/train_pretrained.py                         # the four families
    python benchmarks/train_pretrained.py --families layered --steps 0
    python benchmarks/train_pretrained.py --recipe placeto --steps 4000 --override env.passes=1
"""

from __future__ import annotations

import argparse
import hashlib
import io
import math
import os
import statistics
import time
import zipfile
from pathlib import Path
from typing import Any

from placerl._provenance import provenance
from placerl.agents.placer import load_model, reads_any_size
from placerl.agents.pretrained import CARD_VERSION, feature_widths
from placerl.baselines import place
from placerl.bench.leaderboard import leaderboard
from placerl.bench.placebench import placebench_v1
from placerl.bench.recipe import recipe_label, train_family
from placerl.bench.run import run_case
from placerl.bench.suite import Suite
from placerl.cluster import Cluster
from placerl.compose import compose_run
from placerl.errors import ConfigError
from placerl.graph import load_graph
from placerl.results import write_json
from placerl.run_config import check_recipe
from placerl.sim import simulate

ROOT = Path(__file__).resolve().parents[1]
#: Where the shipped policies go (package data of the wheel).
OUT = ROOT / "placerl" / "data" / "pretrained"
#: Where the training runs and the records go (not shipped).
WORK = ROOT / "outputs" / "pretrained"
TIER = "families"
#: The shipped name of each family of the tier.
FAMILIES = {
    "layered": "families/layered-n80",
    "cifar10": "families/cifar10",
    "ptb": "families/ptb",
    "nmt": "families/nmt",
}
#: The refine env's start and reward reference on the cell families (see the module): the
#: constructive placers' best, not ``best_of``'s DP, which costs a minute a cell on a busy
#: machine and never wins there. The reference only scales PPO's reward. Hydra reads the
#: commas of an unquoted value as a list.
CELL_OVERRIDES = (
    "env.init='best_of?placers=heft,m_etf,m_sct'",
    "env.reference='best_of?placers=heft,m_etf,m_sct'",
)
#: Overrides that change how a run goes, not what it learns (no part of the recipe's label).
QUIET = ("progress_bar=false", "threads=1")


def family_overrides(recipe: str, name: str, steps: int, extra: list[str]) -> list[str]:
    """The overrides ``name``'s policy trains with: the budget, no sampled rollouts at the
    end (the card scores the greedy placement; sampling 8 per graph costs most of a clone's
    evaluation), the cell families' start for a refining recipe, then ``extra``."""
    refines = compose_run(f"experiment={recipe}").env.kind == "refine"
    cell = list(CELL_OVERRIDES) if refines and name != "layered" else []
    return [f"total_steps={steps}", "eval_samples=0", *cell, *extra]


def ship(trained: Path, out: Path) -> None:
    """Copy the model zip ``trained`` to ``out`` with its floating-point weights in float16,
    deflated. SB3's loader copies them into the float32 network, so the file loads as any
    model zip; written atomically."""
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".zip.partial")
    with (
        zipfile.ZipFile(trained) as source,
        zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for member in source.infolist():
            data = source.read(member.filename)
            if member.filename == "policy.pth":
                data = _halved(data)
            target.writestr(member.filename, data)
    os.replace(partial, out)


def _halved(data: bytes) -> bytes:
    """A saved state dict with its floating-point tensors in float16; a tensor that two
    names share (SB3's ``features_extractor`` is ``pi_features_extractor``) stays shared, so
    it is stored once."""
    import torch

    state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    halves: dict[tuple[Any, ...], Any] = {}
    for key, tensor in state.items():
        if tensor.is_floating_point():
            ident = (
                tensor.untyped_storage().data_ptr(),
                tensor.storage_offset(),
                tuple(tensor.shape),
                tuple(tensor.stride()),
            )
            state[key] = halves.setdefault(ident, tensor.half())
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def score_cases(
    suite: Suite,
    family: str,
    policy: Path,
    label: str,
    training: dict[str, Any],
    records: Path | None,
) -> list[dict[str, Any]]:
    """The records of ``policy``'s greedy placements of ``family``'s test cases (written in
    ``records`` unless ``None``)."""
    cases = suite.select(TIER, "test", family)
    return [
        run_case(
            case,
            "policy",
            records,
            suite=suite.id,
            label=label,
            training=training,
            options={"path": str(policy)},
        )
        for case in cases
    ]


def leaderboard_row(records: Path, label: str) -> dict[str, Any]:
    """The leaderboard's row of ``label`` over the records in ``records``, as plain JSON
    values, with ``vs_constructive``: the geometric-mean runtime over the best constructive
    placer's (below 1: faster; the score's inverse)."""
    table = leaderboard([records])
    (row,) = table[table["placer"] == label].to_dict("records")
    row = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
    row["vs_constructive"] = 1 / row["score_value"] if row["score_value"] else None
    return row


def test_entries(records: list[dict[str, Any]], policy: Path) -> list[dict[str, Any]]:
    """Per test case, the figures the card commits: the greedy placement of ``policy`` and
    its runtime, placed again here (records keep no placement), which must give the
    record's runtime: a figure the test checks is one that reproduces.

    Raises:
        RuntimeError: A placement whose runtime is not the record's.
    """
    keys = (
        "case",
        "graph",
        "runtime",
        "score",
        "feasible",
        "reference",
        "simulator_calls",
        "wall_s",
    )
    entries = []
    for record in records:
        graph = load_graph(record["graph"])
        placement = place("policy", graph, record["cluster"], record["objective"], path=str(policy))
        runtime = simulate(graph, placement, record["cluster"], record["objective"]).runtime
        if not math.isclose(runtime, record["runtime"], rel_tol=1e-9):
            raise RuntimeError(
                f"{record['case']}: placed again, the policy's placement runs "
                f"{runtime} s, not {record['runtime']} s"
            )
        entries.append(
            {
                **{k: record[k] for k in keys},
                "nodes": graph.num_nodes,
                "placement": [int(d) for d in placement],
            }
        )
    return entries


def card(
    name: str,
    suite: Suite,
    family: str,
    recipe: str,
    overrides: list[str],
    seed: int,
    training: dict[str, Any],
    zip_path: Path,
    records: list[dict[str, Any]],
    row: dict[str, Any],
    float32_score: float | None,
) -> dict[str, Any]:
    """The card of the shipped policy ``name`` (:data:`placerl.agents.pretrained.CARD_FIELDS`)."""
    model = load_model(zip_path, "cpu")
    settings = model.placerl_settings
    first = suite.select(TIER, "test", family)[0]
    data = zip_path.read_bytes()
    tests = test_entries(records, zip_path)
    seconds = [t["wall_s"] for t in tests]
    return {
        "name": name,
        "card_version": CARD_VERSION,
        "file": zip_path.name,
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "recipe": recipe,
        "overrides": overrides,
        "label": recipe_label(recipe, overrides),
        "seed": seed,
        "suite": suite.id,
        "tier": TIER,
        "family": family,
        "cases": {
            "train": training["cases"],
            "validation": training["validation"],
            "test": [t["case"] for t in tests],
        },
        "cluster": first.cluster,
        "objective": first.objective,
        "reads": {
            "num_devices": settings["num_devices"],
            "feature_width": feature_widths(model.observation_space),
            "env": settings["env"],
            "max_nodes": settings["max_nodes"],
            "max_edges": settings["max_edges"],
            "any_size": reads_any_size(model),
            "any_device_count": places_other_counts(zip_path, first),
            "observation_version": settings["observation_version"],
        },
        "training": {
            k: training[k] for k in ("id", "budget", "steps", "simulator_calls", "wall_s", "device")
        }
        | {"float32_score": float32_score},
        "leaderboard": row,
        "place_s": {
            "median": statistics.median(seconds),
            "max": max(seconds),
            "max_nodes": max(t["nodes"] for t in tests),
        },
        "test": tests,
        "provenance": provenance(),
    }


def places_other_counts(policy: Path, case: Any, counts: tuple[int, ...] = (2, 8)) -> bool:
    """Whether ``policy`` places ``case``'s graph on its cluster's preset with each of
    ``counts`` devices (a network without per-device parameters,
    :func:`placerl.agents.fitting.fit_to_env`): tried, not assumed."""
    graph, preset = load_graph(case.graph), case.cluster.split("?")[0]
    for count in counts:
        try:
            place(
                "policy",
                graph,
                Cluster.preset(preset, n_devices=count),
                case.objective,
                path=str(policy),
            )
        except ConfigError as error:
            print(f"{policy.name} does not place on {count} devices: {error}", flush=True)
            return False
    return True


def build(
    name: str, recipe: str, overrides: list[str], seed: int, work: Path, out: Path
) -> dict[str, Any]:
    """Train, ship, score and write the card of ``name``; returns the card."""
    suite, family = placebench_v1(), FAMILIES[name]
    start = time.perf_counter()
    trained = train_family(suite, family, recipe, [*overrides, *QUIET], seed, work)
    training = {k: v for k, v in trained.items() if k != "config"}
    zip_path = out / f"{name}.zip"
    ship(Path(training["policy"]), zip_path)
    label = recipe_label(recipe, overrides)
    records_dir = work / "records" / name
    records = score_cases(suite, family, zip_path, label, training, records_dir)
    as_trained = score_cases(suite, family, Path(training["policy"]), label, training, None)
    float32 = _geomean([r["score"] for r in as_trained])
    row = leaderboard_row(records_dir, label)
    result = card(
        name, suite, family, recipe, overrides, seed, training, zip_path, records, row, float32
    )
    write_json(out / f"{name}.json", result)
    print(
        f"{name}: {row['score']} vs the best constructive placer "
        f"({row['vs_constructive']:.4f}x its runtime; float32 weights: score "
        f"{float32:.4f}), {result['place_s']['median']:.2f} s to place, "
        f"{result['bytes'] / 1e6:.2f} MB, {time.perf_counter() - start:.0f} s in all",
        flush=True,
    )
    return result


def _geomean(values: list[float | None]) -> float | None:
    """The geometric mean of the values that are not ``None``."""
    kept = [v for v in values if v is not None]
    return math.exp(sum(map(math.log, kept)) / len(kept)) if kept else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="improve", help="an experiment config (recipe)")
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument(
        "--steps",
        type=int,
        default=0,
        help="env steps of RL after the recipe's warm start (total_steps)",
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        help="a further recipe override (repeatable), e.g. env.passes=1",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", default=str(WORK), help="training runs and records")
    parser.add_argument("--out", default=str(OUT), help="where the zips and cards go")
    args = parser.parse_args(argv)
    check_recipe(args.recipe, args.override)
    plans = {
        name: family_overrides(args.recipe, name, args.steps, args.override)
        for name in args.families
    }
    for overrides in plans.values():  # every family's before the first trains
        check_recipe(args.recipe, overrides)
    for name, overrides in plans.items():
        build(name, args.recipe, overrides, args.seed, Path(args.work), Path(args.out))


if __name__ == "__main__":
    main()
