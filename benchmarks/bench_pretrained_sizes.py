"""The shipped policies on graphs of other sizes than they trained on, zero-shot.

Each shipped policy (``placerl/data/pretrained``) trained on its family's graphs of one size
(80 nodes for ``layered``, about 300 to 400 for the cell families). This places its family's
test graphs (the card's generator seeds) drawn at other node counts with the shipped file,
greedy, through :func:`placerl.baselines.solve`, and pairs each runtime with the best
constructive placer's on the same graph (:func:`placerl.bench.scores.best_constructive`:
HEFT, m-ETF, m-SCT). The policy's file is loaded and numba compiled by one placement of the
first graph before any is timed. The shipped policies refine ``best_of``'s placement (for
the cell families, the best constructive placement itself) and keep only the moves that make
it faster (``undo_worse``: each move tried costs a simulation, ``calls_median``), so they
never end slower than that start: a ratio below 1 is what their passes gained, and none can
lose. They were cloned from a one-step oracle (``total_steps=0``), not trained by RL.

    python benchmarks/bench_pretrained_sizes.py                    # 300 and 1000 nodes
    python benchmarks/bench_pretrained_sizes.py --policies layered --sizes 160,300

Results: ``benchmarks/results/pretrained_sizes.{json,md}``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import add_run_options, apply_run_options, markdown_table, write_results

from placerl.agents.pretrained import load_card, shipped
from placerl.baselines import solve
from placerl.bench.run import count_evaluations
from placerl.bench.scores import best_constructive
from placerl.comparison import compare_pairs
from placerl.graph import load_graph
from placerl.graph.loaders import parse_spec


def resized(spec: str, nodes: int) -> str:
    """A synthetic graph spec with its node count set to ``nodes`` (seed and options kept)."""
    scheme, body, options = parse_spec(spec)
    query = "&".join(f"{k}={v}" for k, v in {**options, "n": nodes}.items())
    return f"{scheme}:{body}?{query}"


def measure(name: str, nodes: int) -> dict[str, object]:
    """One row: policy ``name`` on its family's test seeds drawn at ``nodes`` nodes. A graph
    whose policy placement does not fit, or that no constructive placer fits, is counted as
    ``unpaired`` instead of paired."""
    card = load_card(name)
    cluster, objective = card["cluster"], card["objective"]
    graphs = [load_graph(resized(case["graph"], nodes)) for case in card["test"]]
    solve("policy", graphs[0], cluster, objective, pretrained=name)  # loads and compiles once
    pairs, seconds, calls, placers = [], [], [], set()
    for graph in graphs:
        start = time.perf_counter()
        with count_evaluations() as counted:
            result = solve("policy", graph, cluster, objective, pretrained=name)
        seconds.append(time.perf_counter() - start)
        calls.append(counted.calls - 1)  # solve's own check of the placement is not the policy's
        best = best_constructive(graph, cluster, objective)
        if result.feasible and best is not None and best.feasible:
            pairs.append((result.runtime, best.runtime))
            placers.add(best.placer)
    runtimes = np.array(pairs, dtype=float).reshape(-1, 2)  # (policy, constructive) per graph
    paired = compare_pairs(runtimes[:, 0], runtimes[:, 1])
    return {
        "policy": name,
        "trained_nodes": card["reads"]["max_nodes"],
        "nodes": round(statistics.mean(g.num_nodes for g in graphs)),
        "graphs": len(graphs),
        "unpaired": len(graphs) - len(pairs),
        "vs_constructive": round(paired.ratio, 4),
        "ci_low": round(paired.ci_low, 4),
        "ci_high": round(paired.ci_high, 4),
        "wins": paired.wins,
        "losses": paired.losses,
        "best_constructive": ",".join(sorted(placers)),
        "calls_median": round(statistics.median(calls)),
        "place_s_median": round(statistics.median(seconds), 3),
        "place_s_max": round(max(seconds), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", default=",".join(shipped()))
    parser.add_argument("--sizes", default="300,1000")
    add_run_options(parser)
    args = parser.parse_args()
    apply_run_options(args)
    rows = []
    for name in args.policies.split(","):
        for nodes in map(int, args.sizes.split(",")):
            rows.append(measure(name, nodes))
            print(rows[-1], flush=True)
    command = "python benchmarks/bench_pretrained_sizes.py " + " ".join(sys.argv[1:])
    text = (
        f"Command: `{command.strip()}`.\n\n"
        "`vs_constructive`: the geometric mean of the policy's runtime over the best "
        "constructive placer's, with its 95% bootstrap interval (below 1: the policy's "
        "placements run faster); `wins`/`losses`: graphs where it is faster/slower; "
        "`unpaired`: graphs where the policy's placement or every constructive one does not "
        "fit; `calls_median`: simulations per placement (each move the policy tries); "
        "`place_s_*`: seconds per placement once the file is loaded. Each policy starts from "
        "best_of's placement and keeps only the moves that make it faster: it cannot end "
        "slower than its start.\n\n"
        f"{markdown_table(rows)}\n"
    )
    write_results("pretrained_sizes", rows, args.out, config=args, markdown=text)
    print(text)


if __name__ == "__main__":
    main()
