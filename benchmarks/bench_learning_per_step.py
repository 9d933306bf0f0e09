"""Learning per env step under rollout layouts: does batching more envs (or fewer PPO epochs)
cost policy quality?

Each variant trains the GNN policy (MaskablePPO) on each graph for a few seeds, evaluating
greedily every ``--every`` steps; a curve point is the greedy runtime over HEFT's (below 1:
better than HEFT), the mean of the seeds. Variants differ only in how the steps are collected
and reused: envs side by side (``n_envs`` x ``n_steps`` per rollout), PPO epochs, minibatch.

    python benchmarks/bench_learning_per_step.py                # about 15 minutes on 2 cores
    python benchmarks/bench_learning_per_step.py --variants before,default --seeds 0,1

Results go to ``benchmarks/results/learning_per_step.{json,md,png}``: the table gives per
variant and graph the final greedy ratio, the mean over the curve (area under it: how fast it
learns), the best evaluation, and training seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import add_run_options, apply_run_options, markdown_table, write_results

from placerl.train import train

GRAPHS = ("synthetic:layered?n=100&seed=0", "synthetic:cifar10?seed=0")
CLUSTER = "placeto?n_devices=4"

#: Rollout layouts: envs, steps per env per rollout, PPO epochs, minibatch size.
VARIANTS: dict[str, dict[str, Any]] = {
    "before": {"n_envs": 4, "hyperparams": {"n_steps": 256, "n_epochs": 4, "batch_size": 256}},
    "16x64": {"n_envs": 16, "hyperparams": {"n_steps": 64, "n_epochs": 4, "batch_size": 256}},
    "32x32": {"n_envs": 32, "hyperparams": {"n_steps": 32, "n_epochs": 4, "batch_size": 256}},
    "16x64_2ep": {"n_envs": 16, "hyperparams": {"n_steps": 64, "n_epochs": 2,
                                                 "batch_size": 256}},
    "default": {},  # placerl's defaults, whatever they are when this runs
}


def run(variant: str, graph: str, seed: int, steps: int, every: int) -> dict[str, Any]:
    """One training run: the curve of greedy runtime over HEFT's."""
    config = {"graph": graph, "cluster": CLUSTER, "extractor": "gnn", "total_steps": steps,
              "eval_every": every, "checkpoint_every": 0, "baselines": ["heft"], "seed": seed,
              "keep_best": False, **VARIANTS[variant]}  # fmt: skip
    result = train(config)
    (outcome,) = result.graphs
    heft = outcome.baselines["heft"]
    return {"variant": variant, "graph": graph, "seed": seed,
            "steps": [p["step"] for p in result.curve],
            "ratio": [p["runtimes"][0] / heft for p in result.curve],
            "train_s": result.timings["train"]}  # fmt: skip


def summarize(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per variant and graph: final, mean-over-curve and best ratios (seed means)."""
    rows = []
    for variant in dict.fromkeys(r["variant"] for r in runs):
        for graph in dict.fromkeys(r["graph"] for r in runs):
            mine = [r for r in runs if r["variant"] == variant and r["graph"] == graph]
            curves = np.array([r["ratio"] for r in mine])
            train_s = float(np.mean([r["train_s"] for r in mine]))
            rows.append({"variant": variant, "graph": graph.split(":")[1], "seeds": len(mine),
                         "final": round(float(curves[:, -1].mean()), 3),
                         "curve mean": round(float(curves.mean()), 3),
                         "best": round(float(curves.min(axis=1).mean()), 3),
                         "train s": round(train_s, 1)})  # fmt: skip
    return rows


def plot(runs: list[dict[str, Any]], path: Path) -> None:
    """Curves per graph: the seed mean with a min-max band, one colour per variant."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    graphs = list(dict.fromkeys(r["graph"] for r in runs))
    fig, axes = plt.subplots(1, len(graphs), figsize=(6 * len(graphs), 4), squeeze=False)
    for ax, graph in zip(axes[0], graphs, strict=True):
        for variant in dict.fromkeys(r["variant"] for r in runs):
            mine = [r for r in runs if r["variant"] == variant and r["graph"] == graph]
            curves = np.array([r["ratio"] for r in mine])
            steps = mine[0]["steps"]
            ax.plot(steps, curves.mean(axis=0), label=variant)
            ax.fill_between(steps, curves.min(axis=0), curves.max(axis=0), alpha=0.15)
        ax.axhline(1.0, color="grey", linestyle=":", linewidth=1)
        ax.set(title=graph, xlabel="env steps", ylabel="greedy runtime / HEFT")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="before,16x64,32x32,16x64_2ep")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--steps", type=int, default=16_000)
    parser.add_argument("--every", type=int, default=1_000, help="evaluation interval")
    add_run_options(parser)
    args = parser.parse_args()
    apply_run_options(args)
    variants = args.variants.split(",")
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    start, runs = time.perf_counter(), []
    for variant in variants:
        for graph in GRAPHS:
            for seed in (int(s) for s in args.seeds.split(",")):
                runs.append(run(variant, graph, seed, args.steps, args.every))
                print({k: runs[-1][k] for k in ("variant", "graph", "seed")},
                      f"final {runs[-1]['ratio'][-1]:.3f}", flush=True)  # fmt: skip
    rows = summarize(runs)
    out = Path(args.out)
    write_results("learning_per_step", runs, out)
    plot(runs, out / "learning_per_step.png")
    threads = f" --threads {args.threads}" if args.threads else ""
    note = (f"Command: `python benchmarks/bench_learning_per_step.py --variants {args.variants} "
            f"--seeds {args.seeds} --steps {args.steps}{threads}` "
            f"({time.perf_counter() - start:.0f} s in all). GNN, MaskablePPO, {CLUSTER}; ratios "
            "are greedy runtime / HEFT's (below 1: better), means over seeds; `curve mean` "
            f"averages every evaluation (every {args.every} steps, from step 0).")  # fmt: skip
    text = f"{note}\n\n{markdown_table(rows)}\n"
    (out / "learning_per_step.md").write_text(text)
    print(f"\n{text}")


if __name__ == "__main__":
    main()
