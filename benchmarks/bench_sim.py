"""Simulator speed: the numba kernels side by side with the pure-Python reference.

Both evaluate the same random placements of layered synthetic graphs in one run, so the ratio
is meaningful on a noisy machine. Usage: ``python benchmarks/bench_sim.py [--quick]``.
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import best_time, markdown_table, write_results

from placerl.cluster import Cluster
from placerl.graph import load_graph
from placerl.sim import CostModel, reference


def measure(n: int, objective: str, cluster_name: str) -> dict:
    graph = load_graph(f"synthetic:layered?n={n}&seed=0")
    cluster = Cluster.preset(cluster_name)
    model = CostModel(graph, cluster, objective)
    placements = np.random.default_rng(0).integers(0, cluster.num_devices, (8, n))
    state = {"i": 0}

    def fast() -> None:
        model.evaluate(placements[state["i"] % 8])
        state["i"] += 1

    def slow() -> None:
        reference.simulate(graph, placements[state["i"] % 8], cluster, objective)
        state["i"] += 1

    t_fast = best_time(fast, repeat=5, number=max(1, 20_000 // n))
    t_ref = best_time(slow, repeat=2 if n >= 5000 else 3)
    return {
        "nodes": n,
        "edges": graph.num_edges,
        "cluster": cluster_name,
        "objective": objective,
        "fast (us)": round(t_fast * 1e6, 1),
        "reference (ms)": round(t_ref * 1e3, 2),
        "speedup": f"{t_ref / t_fast:.0f}x",
        "evals/s": int(1 / t_fast),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 and 1k nodes only")
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args()
    sizes = (100, 1000) if args.quick else (100, 1000, 5000)
    rows = [
        measure(n, objective, cluster)
        for n in sizes
        for cluster in ("placeto", "gpu4_pcie")
        for objective in ("step_time", "pipeline")
    ]
    print(markdown_table(rows))
    write_results("bench_sim", rows, args.out)


if __name__ == "__main__":
    main()
