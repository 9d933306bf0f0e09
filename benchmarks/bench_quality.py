"""RL placements against every non-learned placer: how good, how fast to train.

For each graph and cluster pair it runs the non-learned placers (``local_search`` starts from
the best constructive placer; ``tarnawski_dp`` is the optimum under ``pipeline``), reports the
margin of the best placer over single device (pairs under 20% say little about RL), then
trains MaskablePPO with each extractor (GNN, LSTM, MLP) and reports the greedy policy and the
best of K sampled rollouts relative to single device, to the best placer and to the optimum
where known, with the training throughput (env steps per second, updates included).

    python benchmarks/bench_quality.py --quick     # about 10 minutes on 2 cores
    python benchmarks/bench_quality.py             # the full suite

Results go to ``benchmarks/results/quality[_quick].{json,md}`` with the command that made them.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import markdown_table, write_results

from placerl.baselines import solve
from placerl.train import train

CONSTRUCTIVE = ("single_device", "random", "round_robin", "m_topo", "heft", "m_etf", "m_sct")
EXTRACTORS = ("gnn", "lstm", "mlp")


@dataclass(frozen=True)
class Case:
    """A graph on a cluster under an objective."""

    name: str
    graph: str
    cluster: str
    objective: str = "step_time"
    quick: bool = True


CASES = [
    Case("layered_100", "synthetic:layered?n=100&seed=0", "placeto?n_devices=4"),
    Case("cifar10", "synthetic:cifar10?seed=0", "gpu4_pcie"),
    Case("bert_l-3_inference", "msr:bert_l-3_inference", "msr:bert_l-3_inference", "pipeline"),
    Case("zoo_inception_v3_300", "zoo:inception_v3?max_nodes=300", "placeto?n_devices=4",
         quick=False),
    Case("zoo_gnmt_100", "zoo:gnmt?max_nodes=100", "gpu4_pcie", quick=False),
    Case("zoo_bert_200", "zoo:transformer?max_nodes=200", "gpu4_pcie", quick=False),
    Case("ptb", "synthetic:ptb?seed=0", "gpu4_pcie", quick=False),
    Case("nmt", "synthetic:nmt?seed=0", "gpu4_pcie", quick=False),
    *(Case(name, f"msr:{name}", f"msr:{name}", "pipeline", quick=False)
      for name in ("bert24_inference", "gnmt_inference", "resnet50_inference")),
]  # fmt: skip


def placers(case: Case, time_limit: float) -> dict[str, float]:
    """Runtime of every non-learned placer on the case (``inf`` where infeasible)."""
    out = {}

    def run(label: str, name: str, **options: object) -> None:
        result = solve(name, case.graph, case.cluster, case.objective, **options)
        out[label] = result.runtime if result.feasible else math.inf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in CONSTRUCTIVE:
            run(name, name)
        best = min((n for n in out if n != "random"), key=out.get)
        run(f"local_search({best})", "local_search", init=best, time_limit=time_limit)
        if case.objective == "pipeline":
            run("tarnawski_dp", "tarnawski_dp")
    return out


def learn(case: Case, extractor: str, steps: int, samples: int) -> dict[str, float]:
    """Train on the case; the greedy and best-of-K sampled runtimes and the throughput."""
    result = train({"graph": case.graph, "cluster": case.cluster, "objective": case.objective,
                    "extractor": extractor, "total_steps": steps, "eval_every": 0,
                    "checkpoint_every": 0, "eval_samples": samples, "baselines": []})  # fmt: skip
    (outcome,) = result.graphs
    timings = result.timings
    return {"greedy": outcome.final_runtime, "sampled": outcome.sampled_runtime,
            "best_seen": outcome.best_runtime, "steps": result.steps,
            "train_s": timings["train"], "steps_per_s": timings["steps_per_s"]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="three cases, 8k steps each")
    parser.add_argument("--steps", type=int, default=None, help="training steps per run")
    parser.add_argument("--samples", type=int, default=8, help="K sampled rollouts")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()
    steps = args.steps or (8_000 if args.quick else 60_000)
    cases = [c for c in CASES if c.quick or not args.quick]
    rows, start = [], time.perf_counter()
    for case in cases:
        runtimes = placers(case, time_limit=5.0 if args.quick else 60.0)
        single = runtimes["single_device"]  # inf when no device holds the graph
        optimum = runtimes.get("tarnawski_dp")
        best_name = min(runtimes, key=runtimes.get)
        best = runtimes[best_name]
        print(f"{case.name}: best placer {best_name} {best * 1e3:.3f} ms, margin over single "
              f"device {single / best - 1:.1%}", flush=True)  # fmt: skip
        if not math.isfinite(best):
            print(f"{case.name}: no feasible placer; skipped", flush=True)
            continue
        margin = round(single / best - 1, 3) if math.isfinite(single) else "inf"
        for extractor in EXTRACTORS:
            rl = learn(case, extractor, steps, args.samples)
            row = {
                "case": case.name, "objective": case.objective, "extractor": extractor,
                "best_placer": best_name, "margin": margin,
                "rl_vs_single": round(rl["greedy"] / single, 3) if math.isfinite(single) else "",
                "rl_vs_best": round(rl["greedy"] / best, 3),
                "sampled_vs_best": round(rl["sampled"] / best, 3),
                "rl_vs_optimum": round(rl["greedy"] / optimum, 3) if optimum else "",
                "steps": rl["steps"], "train_s": round(rl["train_s"], 1),
                "steps_per_s": round(rl["steps_per_s"]),
            }  # fmt: skip
            rows.append(row)
            print(row, flush=True)
    suffix = "_quick" if args.quick else ""
    command = "python benchmarks/bench_quality.py" + (" --quick" if args.quick else "")
    table = markdown_table(rows)
    note = (f"Command: `{command}` ({steps} training steps per run, K={args.samples} samples; "
            f"{time.perf_counter() - start:.0f} s in all). Ratios are runtimes over the "
            "reference (below 1: the policy is faster).")  # fmt: skip
    write_results(f"quality{suffix}", rows, args.out)
    (Path(args.out) / f"quality{suffix}.md").write_text(f"{note}\n\n{table}\n")
    print(f"\n{note}\n\n{table}")


if __name__ == "__main__":
    main()
