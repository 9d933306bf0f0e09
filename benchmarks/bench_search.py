"""Search at inference against ``local_search``, at equal budgets of simulator evaluations.

One policy per seed is trained on the training graphs of a synthetic family (cloning each
graph's ``best_of`` placement first, then PPO), then places held-out graphs it never saw. On
each held-out graph and budget ``B`` (simulator evaluations), every method gets the same ``B``:

* ``local_search(best_of)`` - the reference: hill climbing from the best classic placement
  (the candidates' own work, list scheduling and the DP's split, is not charged to its budget,
  as the policy's training is not charged to the policy's);
* ``best_of`` - the best classic placement itself, no search (one evaluation per candidate:
  the zero-shot target);
* ``policy greedy`` - the policy's greedy placement (zero-shot, one evaluation);
* ``policy local`` - policy-guided local search from the greedy placement;
* ``local_search(policy)`` - plain local search from the same greedy placement (how much the
  policy's move order adds);
* ``policy sample`` - the best of sampled episodes;
* ``policy active`` - fine-tuning on the held-out graph (``--active``: slow in wall time).

The split is fixed before any tuning: ``synthetic:layered?n=80&seed=0..23`` train,
``seed=24..31`` held out, on ``placeto?n_devices=4`` under ``step_time``.

    python benchmarks/bench_search.py                  # 3 seeds, budgets 240 and 960
    python benchmarks/bench_search.py --quick          # 1 seed, 3 graphs, budget 240

Results: ``benchmarks/results/search.{json,md}`` (runs, and per method and budget the
geometric mean of runtime over the reference's with a 95% interval over graphs and seeds, the
wins and the worst case).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import add_run_options, apply_run_options, markdown_table, write_results

from placerl.agents.placer import env_for, load_model
from placerl.agents.search import run_search
from placerl.baselines import solve
from placerl.baselines.best_of import DEFAULT_CANDIDATES
from placerl.baselines.problem import Problem
from placerl.baselines.references import reference
from placerl.cluster import load_cluster
from placerl.comparison import geometric_interval, geometric_mean
from placerl.graph import load_graph
from placerl.run_config import AgentGroup, EnvGroup, OrderGroup
from placerl.train import train

FAMILY = "synthetic:layered?n=80&seed={seed}"
TRAIN, HELD_OUT = range(24), range(24, 32)
CLUSTER, OBJECTIVE, START = "placeto?n_devices=4", "step_time", "best_of"
REFERENCE = "local_search(best_of)"


def train_policy(seed: int, steps: int, out: str) -> str:
    """The family policy of ``seed``: clone ``best_of`` on every training graph, then PPO."""
    specs = [FAMILY.format(seed=s) for s in TRAIN]
    graphs = [load_graph(FAMILY.format(seed=s)) for s in (*TRAIN, *HELD_OUT)]
    padding = {
        "max_nodes": max(g.num_nodes for g in graphs),
        "max_edges": max(g.num_edges for g in graphs),
    }
    # The groups' bare defaults (the construct env, the GNN), not the main job's recipe.
    result = train(
        {
            "graph": {"spec": specs},
            "cluster": {"spec": CLUSTER},
            "order": OrderGroup(),
            "env": EnvGroup(objective=OBJECTIVE, **padding),
            "agent": AgentGroup(warm_start=START),
            "total_steps": steps,
            "seed": seed,
            "eval_every": 4_000,
            "eval_samples": 0,
            "checkpoint_every": 0,
            "baselines": [],
            "progress_bar": False,
            "resume": False,
        },
        out_dir=out,
    )
    print(
        f"seed {seed}: trained {result.steps} steps in {result.timings['train']:.0f} s "
        f"(policy of step {result.policy_step})",
        flush=True,
    )
    return str(Path(out) / "model.zip")


Found = dict[str, tuple[float, int, float]]


def methods(model: Any, spec: str, budget: int, active: bool) -> Found:
    """(runtime, evaluations, seconds) per method on ``spec`` at ``budget``."""
    graph, cluster = load_graph(spec), load_cluster(CLUSTER)
    env = env_for(model, Problem(graph, cluster, OBJECTIVE))
    out = {}
    start = time.perf_counter()
    ref = solve(
        "local_search",
        graph,
        cluster,
        OBJECTIVE,
        max_rounds=10**6,
        time_limit=1e6,
        max_evaluations=budget,
        init=reference(graph, cluster, OBJECTIVE, START).placement,
    )
    out[REFERENCE] = (ref.runtime, ref.info["evaluations"], time.perf_counter() - start)
    classic = reference(graph, cluster, OBJECTIVE, START)  # the zero-shot target, no search
    out[START] = (classic.runtime, len(DEFAULT_CANDIDATES.split(",")), 0.0)
    for name in ("greedy", "local", "sample", *(("active",) if active else ())):
        result = run_search(model, env, name, budget=0 if name == "greedy" else budget)
        out[f"policy {name}"] = (result.runtime, result.evaluations, result.wall_s)
        if name == "greedy":
            greedy = result.placement
    start = time.perf_counter()
    plain = solve(
        "local_search",
        graph,
        cluster,
        OBJECTIVE,
        init=greedy,
        max_rounds=10**6,
        time_limit=1e6,
        max_evaluations=max(budget - 1, 1),
    )
    out["local_search(policy)"] = (
        plain.runtime,
        plain.info["evaluations"] + 1,
        time.perf_counter() - start,
    )
    return out


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per method and budget: geometric mean ratio with a 95% t-interval, wins, worst."""
    out = []
    keys = dict.fromkeys((r["method"], r["budget"]) for r in rows)
    for method, budget in keys:
        ratios = np.array(
            [r["vs_reference"] for r in rows if r["method"] == method and r["budget"] == budget]
        )
        low, high = geometric_interval(ratios)
        out.append(
            {
                "method": method,
                "budget": budget,
                "runs": len(ratios),
                "geomean_vs_reference": round(geometric_mean(ratios), 3),
                "ci95": f"{low:.3f}-{high:.3f}",
                "at_most_reference": f"{int((ratios <= 1 + 1e-9).sum())}/{len(ratios)}",
                "worst": round(float(ratios.max()), 3),
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=40_000, help="training steps per policy")
    parser.add_argument("--budgets", default="240,960", help="simulator evaluations")
    parser.add_argument("--graphs", type=int, default=len(HELD_OUT), help="held-out graphs")
    parser.add_argument("--active", action="store_true", help="also active search (slow)")
    parser.add_argument("--quick", action="store_true", help="1 seed, 3 graphs, budget 240")
    add_run_options(parser)
    args = parser.parse_args()
    apply_run_options(args)
    if args.quick:
        args.seeds, args.graphs, args.budgets, args.steps = 1, 3, "240", 8_000
    budgets = [int(b) for b in args.budgets.split(",")]
    warnings.simplefilter("ignore")  # the DP's pair budget inside best_of warns per graph
    begin, rows = time.perf_counter(), []
    for seed in range(args.seeds):
        with tempfile.TemporaryDirectory() as out:
            model = load_model(train_policy(seed, args.steps, out), "cpu")
            for s in list(HELD_OUT)[: args.graphs]:
                spec = FAMILY.format(seed=s)
                for budget in budgets:
                    found = methods(model, spec, budget, args.active)
                    base = found[REFERENCE][0]
                    for method, (runtime, evaluations, wall) in found.items():
                        rows.append(
                            {
                                "graph": spec.split(":")[1],
                                "seed": seed,
                                "budget": budget,
                                "method": method,
                                "vs_reference": round(runtime / base, 4),
                                "evaluations": evaluations,
                                "wall_s": round(wall, 2),
                            }
                        )
                    print(
                        spec,
                        budget,
                        {m: round(v[0] / base, 3) for m, v in found.items()},
                        flush=True,
                    )
    command = "python benchmarks/bench_search.py " + " ".join(sys.argv[1:])
    name = "search_quick" if args.quick else "search"
    table = markdown_table(summarize(rows))
    text = (
        f"Command: `{command.strip()}` ({time.perf_counter() - begin:.0f} s). Runtime over "
        f"`{REFERENCE}` at the same budget of simulator evaluations, on held-out "
        f"{FAMILY.format(seed='24..31')}, {CLUSTER} (below 1: better).\n\n{table}\n\n"
        f"Runs:\n\n{markdown_table(rows)}\n"
    )
    write_results(name, rows, args.out, config=args, markdown=text)
    print(f"\n{table}")


if __name__ == "__main__":
    main()
