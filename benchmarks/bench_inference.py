"""Zero-shot inference seconds of the recipes' policies, per graph size.

A recipe's network (composed as ``placerl-train experiment=<recipe>`` composes it; ``default``
is ``'~experiment'``) is built for ``synthetic:layered?n=<size>&seed=24`` on
``placeto?n_devices=4`` and trained for one tiny rollout: what a step costs depends on the
network's sizes and the graph, not on what the weights learned. Per recipe and size:

* ``whole``: one greedy episode, every step's forward pass over the whole observation;
* ``reusing``: the same episode reusing at each step what the last computed (placerl's
  default: :func:`placerl.agents.episodes.rollout`'s ``incremental``; the per-node GNN
  recomputes the rows within reach of a change), side by side with ``whole``;
* ``best_of``: the classic placers ``best_of`` runs, uncached;
* ``guarded``: ``policy?search=greedy&init=best_of`` (the greedy placement or ``best_of``'s,
  whichever simulates faster), ``best_of``'s seconds included.

Each figure is the median of ``--repeat`` runs, the two greedy variants interleaved.

    python benchmarks/bench_inference.py                   # doppler and default, 80-300 nodes
    python benchmarks/bench_inference.py --threads 1 --name inference_1thread

Results: ``benchmarks/results/<name>.{json,md}`` (``inference`` by default).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
from _common import add_run_options, apply_run_options, markdown_table, write_results
from bench_recipes import recipe_overrides

from placerl.agents.episodes import rollout
from placerl.agents.placer import env_for, load_model
from placerl.agents.search import run_search
from placerl.baselines.problem import Problem
from placerl.baselines.references import reference
from placerl.cluster import load_cluster
from placerl.graph import load_graph
from placerl.train import train

CLUSTER = "placeto?n_devices=4"


def graph_spec(size: int) -> str:
    """The benchmark's graph of ``size`` nodes (a held-out seed of the layered family)."""
    return f"synthetic:layered?n={size}&seed=24"


def recipe_policy(recipe: str, spec: str, out: str) -> Any:
    """``recipe``'s network for ``spec``, after one tiny rollout of training."""
    from placerl.compose import compose_run

    run = compose_run(*recipe_overrides(recipe))
    graph = load_graph(spec)
    config = dataclasses.replace(
        run,
        graph=dataclasses.replace(run.graph, spec=spec),
        cluster=dataclasses.replace(run.cluster, spec=CLUSTER),
        total_steps=64,
        eval_every=0,
        checkpoint_every=0,
        baselines=[],
        progress_bar=False,
        env=dataclasses.replace(run.env, max_nodes=graph.num_nodes, max_edges=graph.num_edges),
        agent=dataclasses.replace(
            run.agent,
            warm_start=None,
            hyperparams={**run.agent.hyperparams, "n_steps": 8, "batch_size": 64},
        ),
    )
    train(config, out_dir=out)
    return load_model(f"{out}/model.zip", "cpu")


def measure(recipe: str, size: int, repeat: int) -> dict[str, Any]:
    """One row: the recipe's inference seconds on the graph of ``size`` nodes."""
    spec = graph_spec(size)
    with tempfile.TemporaryDirectory() as out:
        model = recipe_policy(recipe, spec, out)
    graph, cluster = load_graph(spec), load_cluster(CLUSTER)
    env = env_for(model, Problem(graph, cluster, "step_time"))
    times: dict[str, list[float]] = {"whole": [], "reusing": [], "best_of": [], "guarded": []}
    rollout(model, env, seed=0)  # warm up (numba compilation)
    for _ in range(repeat):
        placements = []
        for name, incremental in (("whole", False), ("reusing", True)):
            start = time.perf_counter()
            placements.append(rollout(model, env, seed=0, incremental=incremental).placement)
            times[name].append(time.perf_counter() - start)
        if (placements[0] != placements[1]).any():
            raise AssertionError(f"{recipe} at {size} nodes: the two greedy passes differ")
        start = time.perf_counter()
        reference(graph, cluster, "step_time", "best_of", use_cache=False)
        best_of_s = time.perf_counter() - start
        times["best_of"].append(best_of_s)
        times["guarded"].append(run_search(model, env, "greedy", init="best_of").wall_s + best_of_s)
    median = {name: statistics.median(values) for name, values in times.items()}
    return {
        "recipe": recipe,
        "nodes": size,
        "whole_s": round(median["whole"], 3),
        "reusing_s": round(median["reusing"], 3),
        "whole / reusing": round(median["whole"] / median["reusing"], 2),
        "best_of_s": round(median["best_of"], 3),
        "guarded_s": round(median["guarded"], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", default="doppler,default")
    parser.add_argument("--sizes", default="80,150,300", help="graph sizes (nodes)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--name", default="inference")
    add_run_options(parser)
    args = parser.parse_args()
    apply_run_options(args)
    warnings.simplefilter("ignore")
    rows = [
        measure(recipe, int(size), args.repeat)
        for recipe in args.recipes.split(",")
        for size in args.sizes.split(",")
    ]
    table = markdown_table(rows)
    print(table)
    command = " ".join(["python benchmarks/bench_inference.py", *sys.argv[1:]])
    note = (
        f"Command: `{command}` ({torch.get_num_threads()} torch threads). Seconds: "
        f"medians of {args.repeat} runs.\n\n"
    )
    write_results(args.name, rows, args.out, config=args, markdown=note + table + "\n")


if __name__ == "__main__":
    main()
