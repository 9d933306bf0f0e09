"""Time the constructive placers, the lower bound and a simulation on PlaceBench's scale tier.

For each case of the ``scale`` tier (``synthetic:layered?n=...&seed=0`` on as many NVLink GPUs
as its weights need, :data:`placerl.bench.placebench.SCALE_CLUSTERS`; objective ``step_time``)
it times, one run each on the machine it runs on:

* ``draw graph``: :func:`placerl.graph.load_graph` of the case's spec;
* ``lower bound``: the bound :func:`placerl.bench.scores.score_placement` reports (a cost
  model built, then :func:`placerl.sim.lower_bound`);
* ``heft``, ``m_etf``, ``m_sct``: the placer alone on a fresh problem (its derived arrays
  count), with the simulated runtime of its placement over the bound and whether it fits;
* ``simulate``: one evaluation of HEFT's placement (``CostModel.evaluate``, no per-node times),
  the simulation :func:`~placerl.bench.scores.score_placement` makes (scoring a placement
  costs a graph draw, a simulation, the bound and, once per case through the reference
  cache, the three placers);
* ``python heft (reference)``, at ``--reference-sizes`` only: HEFT on the Python
  :class:`~placerl.baselines.list_scheduling.ListSchedule`, the implementation before the
  compiled kernels, side by side with the compiled one (its placement must be the same).

It writes ``bench_scale.json`` (rows with provenance and the load average at the start) and
``bench_scale.md`` under ``--out``, and prints the tables.

    python benchmarks/bench_scale.py                       # 10k, 50k, 100k: minutes on 2 cores
    python benchmarks/bench_scale.py --sizes 10000 --reference-sizes 10000
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_note, markdown_table, write_results

from placerl.baselines import solve
from placerl.baselines.list_scheduling import heft, heft_reference, m_etf, m_sct
from placerl.baselines.problem import Problem
from placerl.bench.placebench import SCALE_CLUSTERS, scale
from placerl.cluster import load_cluster
from placerl.graph import load_graph
from placerl.sim import CostModel, lower_bound

PLACERS = ("heft", "m_etf", "m_sct")
PLACER_FNS = {"heft": heft, "m_etf": m_etf, "m_sct": m_sct}


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """``(seconds, result)`` of one call."""
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def measure(case: Any, reference: bool) -> list[dict[str, Any]]:
    """The rows of one scale case (see the module)."""
    seconds, graph = timed(lambda: load_graph(case.graph))
    n = graph.num_nodes
    rows = [_row(n, graph.num_edges, "draw graph", seconds)]
    seconds, bound = timed(lambda: lower_bound(CostModel(graph, case.cluster, case.objective)))
    rows.append(_row(n, graph.num_edges, "lower bound", seconds, runtime=bound))
    placements = {}
    model = CostModel(graph, case.cluster, case.objective)
    for placer in PLACERS:
        # The placer alone on a fresh problem (its derived arrays count): solve() would add
        # a solvability check and a simulation, timed apart here.
        problem = Problem(graph, model.cluster, case.objective)
        seconds, placements[placer] = timed(lambda: PLACER_FNS[placer](problem))  # noqa: B023
        sim = model.evaluate(placements[placer], times=False)
        rows.append(
            _row(
                n,
                graph.num_edges,
                placer,
                seconds,
                runtime=sim.runtime,
                bound=bound,
                feasible=sim.feasible,
            )
        )
    seconds, _ = timed(lambda: model.evaluate(placements["heft"], times=False))
    rows.append(_row(n, graph.num_edges, "simulate", seconds))
    if reference:
        problem = Problem(graph, load_cluster(case.cluster), case.objective)
        seconds, before = timed(lambda: heft_reference(problem))
        rows.append(
            _row(
                n,
                graph.num_edges,
                "python heft (reference)",
                seconds,
                same=bool(np.array_equal(before, placements["heft"])),
            )
        )
    return rows


def _row(
    nodes: int,
    edges: int,
    task: str,
    seconds: float,
    *,
    runtime: float | None = None,
    bound: float | None = None,
    feasible: bool | None = None,
    same: bool | None = None,
) -> dict[str, Any]:
    return {
        "nodes": nodes,
        "edges": edges,
        "task": task,
        "seconds": round(seconds, 4),
        "runtime_s": runtime,
        "over_bound": None if bound is None or runtime is None else round(runtime / bound, 4),
        "feasible": feasible,
        "same_placement": same,
    }


def warm_up() -> None:
    """Compile (or load from numba's cache) every kernel on a small graph, so that the
    timings are the work's, not the compiler's."""
    for placer in PLACERS:
        solve(placer, "synthetic:layered?n=200&seed=0", "gpu8_nvlink?n_devices=8")
    lower_bound(CostModel("synthetic:layered?n=200&seed=0", "gpu8_nvlink?n_devices=8"))


def tables(rows: list[dict[str, Any]], note: str) -> str:
    """The markdown: seconds per task and size, then the placements' runtimes over the bound."""
    sizes = sorted({row["nodes"] for row in rows})
    gpus = ", ".join(f"{SCALE_CLUSTERS[n]} (at {n:,} nodes)" for n in sizes)
    tasks = list(dict.fromkeys(row["task"] for row in rows))
    cell = {(row["task"], row["nodes"]): row for row in rows}
    timing = [
        {"task": task, **{f"{n:,} nodes (s)": _cell(cell.get((task, n))) for n in sizes}}
        for task in tasks
    ]
    quality = [
        {"placer": placer, **{f"{n:,} nodes": _quality(cell.get((placer, n))) for n in sizes}}
        for placer in PLACERS
    ]
    return (
        f"# PlaceBench scale tier: time to draw, bound, place and simulate\n\n"
        f"One run per cell, on the machine named above.{note} Layered graphs of seed 0 on "
        f"{gpus} NVLink GPUs, `step_time`.\n\n{markdown_table(timing)}\n\n"
        f"Simulated runtime over the lower bound (and whether the placement fits the "
        f"devices' memory):\n\n{markdown_table(quality)}\n"
    )


def _cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return "-"
    same = row.get("same_placement")
    return f"{row['seconds']:.3f}" + ("" if same is None else f" (same: {same})")


def _quality(row: dict[str, Any] | None) -> str:
    if row is None:
        return "-"
    return f"{row['over_bound']:.4f}" + ("" if row["feasible"] else " (over memory)")


def main() -> None:
    """Parse the arguments, measure, write and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        default=",".join(map(str, SCALE_CLUSTERS)),
        help="graph sizes of the scale tier to time (comma-separated)",
    )
    parser.add_argument(
        "--reference-sizes",
        default="10000",
        help="sizes where the Python HEFT runs beside (comma-separated; '' none)",
    )
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()
    sizes = {int(s) for s in args.sizes.split(",") if s}
    reference = {int(s) for s in args.reference_sizes.split(",") if s}
    note, load = load_note()
    warm_up()
    rows = []
    for nodes, case in zip(SCALE_CLUSTERS, scale(), strict=True):  # in SCALE_CLUSTERS' order
        if nodes in sizes:
            rows += measure(case, nodes in reference)
            print(f"{case.name}: done", flush=True)
    text = tables(rows, note)
    write_results("bench_scale", rows, args.out, config=args, markdown=text, extra=load)
    print(text)


if __name__ == "__main__":
    main()
