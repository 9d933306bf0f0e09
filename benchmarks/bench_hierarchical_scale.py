"""The hierarchical recipe on PlaceBench's ``scale`` tier: time to place 10k-100k nodes.

Mirhoseini et al.'s grouper-placer (``configs/experiment/hierarchical.yaml``) is the recipe
meant for graphs this size: its placer decides a device per group (64 here), not per node.
This script trains it with a small, stated budget and places every case of the ``scale`` tier
(layered graphs of 10k, 50k and 100k nodes on 8, 16 and 32 NVLink GPUs), recording per case
the time to place, the runtime, the score against the tier's constructive placers (HEFT,
m-ETF, m-SCT: PlaceBench's score) and the runtime ratio to HEFT alone (timed in the same
run), and the gap to the lower bound.

What it trains on. The suite says a ``scale`` case learns from the layered family's train and
validation cases (``Suite.trained_on``), which are on Placeto's 4 devices. This recipe's
policy reads a fixed device count: its group placer has one logit per device
(:mod:`placerl.agents.group_heads`), so a 4-device policy cannot place on 8, 16 or 32 GPUs
(the policy placer refuses it, naming both counts). So the recipe trains on the same train graphs,
selecting on the same validation graphs, moved onto each case's cluster: one training per
device count, each case placed zero-shot by the policy of its cluster. A graph of 10k-100k
nodes is far beyond the 80-node padding the policy trains with: the grouper-placer's weights
have no node-count dimension, and the policy placer rebuilds its network for the larger
padding (:func:`placerl.agents.fitting.fit_to_env`); training with a 100k-node padding
instead is out of reach (a rollout buffer of 1,024 observations of 100k rows).

Each seed trains its own policies. Records go to ``<out>/`` as PlaceBench records
(``placerl.bench.leaderboard`` reads them; the trainings under ``<out>/training/``), a
summary with provenance to ``<summary>/hierarchical_scale.json`` and ``.md``. Then, as
``bench_learned.py`` does for the other recipes, iterated local search gets the recipe's
simulator calls and seconds per case (each training counted once) and the paired rows join
``placebench-v1/learned/versus.json``. A finished case, training or search is read back, not
run again.

    python benchmarks/bench_hierarchical_scale.py --threads 1            # every size, 3 seeds
    python benchmarks/bench_hierarchical_scale.py --sizes 10000 --seeds 0 --total-steps 2000
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _common beside this script

from _common import add_run_options, apply_run_options, markdown_table, write_results
from bench_learned import known_runtimes, save_versus, searches
from bench_placebench import folder_name

from placerl.baselines import solve
from placerl.bench.case import Case
from placerl.bench.leaderboard import leaderboard, table_markdown
from placerl.bench.placebench import CLASSIC_ROWS, SCALE_CLUSTERS
from placerl.bench.recipe import NOT_IN_RECORD, TRAINING_FILE, recipe_label, training_run
from placerl.bench.run import TRAINING_DIR, record_path, run_case
from placerl.bench.suite import Suite, load_suite
from placerl.bench.versus import versus_rows
from placerl.cluster import load_cluster
from placerl.graph import load_graph

RESULTS = Path(__file__).resolve().parent / "results"
OUT = RESULTS / "placebench-v1" / "recipe_hierarchical" / "scale"
#: Where the matched searches and the paired rows go: beside the other learned recipes'.
VERSUS = RESULTS / "placebench-v1" / "learned"
#: The committed classic rows the leaderboard pairs the recipe with on this tier.
CLASSIC = tuple(
    RESULTS / "placebench-v1" / folder_name(placer) / "scale"
    for placer, tiers in CLASSIC_ROWS
    if "scale" in tiers
)
RECIPE = "hierarchical"
#: The summary's file name (``.json`` and ``.md``).
SUMMARY = "hierarchical_scale"
#: The training budget when none is given: env steps, two per placement (group, then place).
TOTAL_STEPS = 4_000


def training_cases(suite: Suite, case: Case) -> tuple[list[Case], list[Case]]:
    """The train and validation cases ``case`` learns from (``Suite.trained_on``), on
    ``case``'s cluster: a policy places on the device count it trained on."""
    train, validation = suite.training_cases(case.family)
    return (
        [dataclasses.replace(c, cluster=case.cluster) for c in train],
        [dataclasses.replace(c, cluster=case.cluster) for c in validation],
    )


def train_for(
    suite: Suite, case: Case, overrides: list[str], seed: int, out: Path
) -> dict[str, Any]:
    """Train the recipe for ``case`` (its family's graphs on its cluster) in
    ``out/training/`` or read back the training there; what a record stores of it (the
    fields of :func:`placerl.bench.recipe.train_family`'s, and the ``cluster``)."""
    from placerl.train import train

    train_cases, validation = training_cases(suite, case)
    run = training_run(RECIPE, overrides, seed, train_cases, validation)
    devices = load_cluster(case.cluster).num_devices
    folder = out / TRAINING_DIR / f"{case.family.replace('/', '__')}-d{devices}-seed{seed}"
    done = _finished_training(folder, run.to_dict())
    if done:
        return done
    result = train(run, out_dir=str(folder))
    timings = result.timings
    info = {
        "id": f"{recipe_label(RECIPE, overrides)}|{case.family}|d{devices}|seed={seed}",
        "recipe": RECIPE,
        "overrides": list(overrides),
        "seed": seed,
        "family": case.family,
        "cluster": case.cluster,
        "cases": [c.name for c in train_cases],
        "validation": [c.name for c in validation if c.graph in run.validation_graphs],
        "budget": {"total_steps": run.total_steps, "time_limit_s": run.time_limit_s},
        "device": str(result.model.device),
        "steps": result.steps,
        "simulator_calls": result.simulator_calls["total"],
        "wall_s": sum(timings.get(k, 0.0) for k in ("warm_start", "train", "evaluate")),
        "policy": str(folder / "model.zip"),
        "config": run.to_dict(),
        "provenance": result.provenance,
    }
    (folder / TRAINING_FILE).write_text(json.dumps(info, indent=1))
    return info


def _finished_training(folder: Path, config: dict[str, Any]) -> dict[str, Any] | None:
    """The training of ``config`` finished in ``folder``, if it is there."""
    try:
        info = json.loads((folder / TRAINING_FILE).read_text())
    except (OSError, ValueError):
        return None
    return info if info.get("config") == config and (folder / "model.zip").is_file() else None


def place(
    suite: Suite, case: Case, overrides: list[str], seed: int, out: Path, force: bool = False
) -> tuple[dict[str, Any], bool]:
    """The record of ``case`` placed by the recipe's policy for its cluster (trained first
    when needed), written to ``out``, and whether it was placed in this run: a finished
    record of the same label and seed is read back unless ``force``."""
    label = recipe_label(RECIPE, overrides)
    path = record_path(out, case, seed)
    if not force and path.is_file():
        record = json.loads(path.read_text())
        if (record.get("placer"), record.get("seed")) == (label, seed) and not record["error"]:
            return record, False
    training = {
        k: v
        for k, v in train_for(suite, case, overrides, seed, out).items()
        if k not in NOT_IN_RECORD
    }
    _warm_up(training["policy"])
    record = run_case(
        case,
        "policy",
        out,
        suite=suite.id,
        label=label,
        training=training,
        options={"path": training["policy"]},
    )
    return record, True


def _warm_up(policy: str) -> None:
    """Import what placing with a policy imports (SB3, sb3-contrib, PyG): an interpreter's
    start-up, not the time to place that the record's ``wall_s`` reports."""
    from placerl.agents.placer import load_model

    load_model(policy, "cpu")


def heft_run(case: Case) -> tuple[float, float]:
    """HEFT's runtime on ``case`` and its seconds to place it, timed here (the same machine
    and load as the policy's), its compiled kernels warmed up first on a small graph (the
    policy's placing is timed warm too)."""
    solve("heft", load_graph("synthetic:layered?n=16&seed=0"), case.cluster, case.objective)
    graph = load_graph(case.graph)
    start = time.perf_counter()
    result = solve("heft", graph, case.cluster, case.objective)
    return float(result.runtime), time.perf_counter() - start


def earlier_rows(summary: Path | None) -> dict[tuple[str, int], dict[str, Any]]:
    """The rows of the summary an earlier run wrote to ``summary``, by case and seed (none
    where there is no summary, or one that does not read)."""
    try:
        rows = json.loads((summary / f"{SUMMARY}.json").read_text())["rows"]
        return {(row["case"], row["seed"]): row for row in rows}
    except (OSError, ValueError, KeyError, TypeError):  # also summary=None
        return {}


def kept_heft_seconds(row: dict[str, Any] | None, record: dict[str, Any]) -> float | None:
    """HEFT's seconds to place in ``row``, an earlier summary's row, if that row is
    ``record``'s (same seconds to place: the run that placed the record timed HEFT beside
    it); ``None``: HEFT must be timed here."""
    if row is None or row.get("heft_place_s") is None:
        return None
    return row["heft_place_s"] if row.get("place_s") == round(record["wall_s"], 2) else None


def memory_shares(suite: Suite, case: Case) -> tuple[float, float]:
    """The resident bytes of ``case``'s graph over its cluster's memory, and of the largest
    graph it trains on over one device's: how much memory constrains a placement there."""
    cluster = load_cluster(case.cluster)
    train, _ = training_cases(suite, case)
    largest = max(float(load_graph(c.graph).arrays.mem_bytes.sum()) for c in train)
    graph = float(load_graph(case.graph).arrays.mem_bytes.sum())
    return graph / float(cluster.memory.sum()), largest / float(cluster.memory.min())


def summary_row(
    record: dict[str, Any], heft: tuple[float, float], shares: tuple[float, float]
) -> dict[str, Any]:
    """One case's line of the summary table (milliseconds, seconds, ratios)."""
    graph = load_graph(record["graph"])
    training = record["training"] or {}
    runtime, bound = record["runtime"], record["lower_bound"]
    fits = bool(record["feasible"])
    return {
        "case": record["case"],
        "nodes": graph.num_nodes,
        "devices": load_cluster(record["cluster"]).num_devices,
        "place_s": round(record["wall_s"], 2),
        "heft_place_s": round(heft[1], 2),
        "runtime_ms": round(1e3 * runtime, 3),
        "heft_ms": round(1e3 * heft[0], 3),
        "vs_heft": round(runtime / heft[0], 3),
        "score": None if record["score"] is None else round(record["score"], 3),
        "reference": record["reference"]["placer"] if record["reference"] else None,
        "gap": None if record["gap"] is None else round(record["gap"], 3),
        "heft_gap": round(heft[0] / bound - 1, 3),
        "feasible": fits,
        "why": record["why"] or "",
        "mem_share": round(shares[0], 3),
        "train_mem_share": round(shares[1], 3),
        "train_steps": training.get("steps"),
        "train_calls": training.get("simulator_calls"),
        "train_s": None if "wall_s" not in training else round(training["wall_s"], 1),
    }


def run(
    suite: Suite,
    cases: list[Case],
    overrides: list[str],
    seeds: list[int],
    out: Path,
    summary: Path | None,
    config: dict[str, Any],
    *,
    classic: tuple[Path, ...] = (),
    force: bool = False,
    versus: Path | None = None,
) -> list[dict[str, Any]]:
    """Place every case with each seed's policies (training per cluster as needed), then
    write the summary to ``summary/hierarchical_scale.{json,md}`` (``None``: nowhere) with
    the leaderboard of the records and the ``classic`` rows' folders; with ``versus``, also
    meet iterated local search at the recipe's calls and seconds per case there
    (:func:`match_search`). Returns the summary's rows."""
    rows, records, earlier = [], [], earlier_rows(summary)
    for case in cases:
        shares, timed = memory_shares(suite, case), heft_run(case)
        for seed in seeds:
            record, new = place(suite, case, overrides, seed, out, force)
            if record["error"]:
                raise RuntimeError(f"{case.name}: {record['error']}")
            # a record read back keeps HEFT's time from the run that placed it, where the
            # earlier summary has that; any other is timed here, beside this run's placing
            kept = None if new else kept_heft_seconds(earlier.get((case.name, seed)), record)
            heft = timed if kept is None else (timed[0], kept)
            rows.append({"seed": seed} | summary_row(record, heft, shares))
            records.append(record)
            print(json.dumps(rows[-1]), flush=True)
    if versus is not None:
        match_search(suite, cases, records, versus, [out, *classic], config)
    board = leaderboard([out, *(folder for folder in classic if folder.is_dir())])
    board = board[board["tier"].isin({c.tier for c in cases})]
    if summary is not None:
        table = json.loads(board.to_json(orient="records"))
        markdown = _markdown(rows, table_markdown(board), overrides, out)
        write_results(
            SUMMARY,
            rows,
            summary,
            config=config,
            markdown=markdown,
            extra={"leaderboard": table},
        )
    return rows


def match_search(
    suite: Suite,
    cases: list[Case],
    records: list[dict[str, Any]],
    versus: Path,
    folders: list[Path],
    config: dict[str, Any],
) -> list[dict[str, Any]]:
    """Iterated local search on the tier of ``cases`` at the calls and seconds per case of
    the recipe's ``records`` (each training counted once), in ``versus/search/``, and the
    paired rows pooled into ``versus/versus.json`` (``bench_learned.py``'s); the best known
    runtimes come from ``folders`` and ``versus``. Returns the rows."""
    label = records[0]["placer"]
    found = searches(suite, versus, records, label, cases)
    known = known_runtimes([versus, *folders])
    rows = versus_rows(records, found, "all", known)
    seeds = ", ".join(map(str, sorted({r["seed"] for r in records})))
    last_run = (
        f"the hierarchical recipe on the {cases[0].tier} tier, trained per cluster; seeds {seeds}"
    )
    save_versus(rows, versus, config, last_run, [str(versus.parent)], suite.id)
    return rows


def _markdown(rows: list[dict[str, Any]], board: str, overrides: list[str], out: Path) -> str:
    steps = next((row["train_steps"] for row in rows), None)
    lines = [
        "# The hierarchical recipe on PlaceBench's scale tier",
        "",
        f"`{recipe_label(RECIPE, overrides)}`: trained on the layered family's train graphs "
        "(80 nodes), selecting on its validation graphs, on each case's cluster (its policy "
        f"reads one device count: one training per cluster and seed), {steps} env steps each (two "
        "per placement, after cloning best_of's placements); each case placed zero-shot by "
        "its cluster's policy, greedy, rebuilt for the case's padding. Records in "
        f"`{_shown(out)}`.",
        "",
        "Columns: `place_s` the time to place (model file loaded, env built, the policy's "
        "two steps; the graph loaded before), `heft_place_s` HEFT's, timed by the run that "
        "placed the record (a record read back keeps the time its earlier row had; without "
        "such a row, HEFT is timed again); "
        "`vs_heft` the runtime over HEFT's; `score` PlaceBench's (the best constructive "
        "placer's runtime, `reference`, over this one: above 1 beats them all); `gap` and "
        "`heft_gap` the distance to the lower bound; `mem_share` the graph's resident bytes "
        "over the cluster's memory, `train_mem_share` the largest training graph's over one "
        "device's (below 1: memory never constrains a training placement); `train_*` the "
        "training's env steps, simulator calls and seconds.",
        "",
        markdown_table(rows),
        "",
        f"{sum(row['feasible'] for row in rows)} of {len(rows)} placements fit the devices' "
        "memory.",
        "",
        "The leaderboard over these records and the committed classic rows of the tier "
        "(`placerl.bench.leaderboard`; the recipe's `wall_s` includes its trainings):",
        "",
        board,
    ]
    return "\n".join(lines) + "\n"


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it is inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def scale_cases(suite: Suite, sizes: list[int]) -> list[Case]:
    """The ``scale`` cases of the given graph sizes, in the suite's order."""
    wanted = {f"scale/layered-n{n}" for n in sizes}
    return [c for c in suite.select("scale", "test") if c.family in wanted]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sizes = list(SCALE_CLUSTERS)
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=sizes,
        choices=sizes,
        help="graph sizes of the scale cases",
    )
    parser.add_argument(
        "--total-steps",
        type=int,
        default=TOTAL_STEPS,
        help="training env steps per cluster (two per placement)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--overrides",
        nargs="*",
        default=[],
        help="more recipe overrides (they name the records' placer)",
    )
    parser.add_argument("--records", default=str(OUT), help="where the records go")
    parser.add_argument("--force", action="store_true", help="place finished cases again")
    parser.add_argument(
        "--versus",
        default=str(VERSUS),
        help="where iterated local search meets the recipe at its budget ('' for nowhere)",
    )
    add_run_options(parser)  # --out: where the summary goes (benchmarks/results); --threads
    args = parser.parse_args(argv)
    apply_run_options(args)
    overrides = [f"total_steps={args.total_steps}", *args.overrides]
    if args.threads:  # no part of the label (placerl.bench.recipe.NOT_IN_LABEL)
        overrides += [f"threads={args.threads}", "progress_bar=false"]
    suite = load_suite("placebench-v1")
    records = Path(os.path.relpath(args.records)) if _inside(args.records) else Path(args.records)
    run(
        suite,
        scale_cases(suite, args.sizes),
        overrides,
        args.seeds,
        records,
        Path(args.out),
        vars(args),
        classic=CLASSIC,
        force=args.force,
        versus=Path(args.versus) if args.versus else None,
    )


def _inside(path: str) -> bool:
    """Whether ``path`` is under the working directory (the records then name their policy
    files relative to it, as committed results should)."""
    return Path(path).resolve().is_relative_to(Path.cwd())


if __name__ == "__main__":
    main()
