"""Learning per env step under rollout layouts: does batching more envs (or fewer PPO epochs)
cost policy quality?

Each variant trains a policy (MaskablePPO, GNN by default) on each graph for a few seeds, evaluating
greedily every ``--every`` steps; a curve point is the greedy runtime over HEFT's (below 1:
better than HEFT), the mean of the seeds. Variants differ only in how the steps are collected
and reused: envs side by side (``n_envs`` x ``n_steps`` per rollout), PPO epochs, minibatch.

    python benchmarks/bench_learning_per_step.py                # about 15 minutes on 2 cores
    python benchmarks/bench_learning_per_step.py --variants before,default --seeds 0,1
    python benchmarks/bench_learning_per_step.py --variants 8x128_3ep --append   # add one
    python benchmarks/bench_learning_per_step.py --report   # table and plot of the saved runs

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

from _common import (
    add_run_options,
    apply_run_options,
    markdown_table,
    read_results,
    write_markdown,
    write_results,
)

from placerl.comparison import compare_pairs
from placerl.run_config import AgentGroup, EnvGroup, OrderGroup
from placerl.train import train

GRAPHS = ("synthetic:layered?n=100&seed=0", "synthetic:cifar10?seed=0")
CLUSTER = "placeto?n_devices=4"

#: Rollout layouts (``n_envs`` and ``agent.hyperparams``): envs, steps per env per rollout, PPO
#: epochs, minibatch size; 4 epochs at
#: 1e-3 were placerl's defaults until 2026-11-27, when the ``8x128_2ep`` settings replaced them.
_PPO = {"n_epochs": 4, "batch_size": 256, "learning_rate": 1e-3}
VARIANTS: dict[str, dict[str, Any]] = {
    "before": {"n_envs": 4, "hyperparams": {"n_steps": 256, **_PPO}},
    "8x128": {"n_envs": 8, "hyperparams": {"n_steps": 128, **_PPO}},
    "16x64": {"n_envs": 16, "hyperparams": {"n_steps": 64, **_PPO}},
    "32x32": {"n_envs": 32, "hyperparams": {"n_steps": 32, **_PPO}},
    "8x128_3ep": {"n_envs": 8, "hyperparams": {"n_steps": 128, **_PPO, "n_epochs": 3}},
    # half the update work: two epochs at twice the learning rate (the placeto recipe's tuning
    # chose 2 epochs at 2.5e-3)
    "8x128_2ep": {
        "n_envs": 8,
        "hyperparams": {"n_steps": 128, "n_epochs": 2, "batch_size": 256, "learning_rate": 2e-3},
    },
    "16x64_2ep": {
        "n_envs": 16,
        "hyperparams": {"n_steps": 64, "n_epochs": 2, "batch_size": 256, "learning_rate": 2e-3},
    },
    # placerl's defaults (train()'s n_envs, make_agent's PPO settings), whatever they are when
    # this runs; not the main job's tuned recipe
    "default": {},
}


def config(
    variant: str, graph: str, seed: int, steps: int, every: int, extractor: str = "gnn"
) -> dict[str, Any]:
    """The :func:`train` config of one run: the groups' bare defaults (the construct env, no
    warm start), not the main job's recipe, with the variant's layout over them; no rollback
    and the last weights kept: the learning curves of PPO itself."""
    layout = dict(VARIANTS[variant])
    agent = AgentGroup(
        extractor=extractor,
        warm_start=None,
        rollback=False,
        hyperparams=layout.pop("hyperparams", {}),
    )
    return {
        "graph": {"spec": graph},
        "cluster": {"spec": CLUSTER},
        "order": OrderGroup(),
        "env": EnvGroup(),
        "agent": agent,
        "total_steps": steps,
        "eval_every": every,
        "eval_samples": 0,
        "checkpoint_every": 0,
        "baselines": ["heft"],
        "seed": seed,
        "keep_best": False,
        "progress_bar": False,
        "resume": False,
        **layout,
    }


def run(
    variant: str,
    graph: str,
    seed: int,
    steps: int,
    every: int,
    extractor: str = "gnn",
    label: str = "",
) -> dict[str, Any]:
    """One training run: the curve of greedy runtime over HEFT's, recorded as the variant's
    name followed by ``label`` (which code made it, when that changed)."""
    result = train(config(variant, graph, seed, steps, every, extractor))
    (outcome,) = result.graphs
    heft = outcome.baselines["heft"]
    return {
        "variant": variant + label,
        "extractor": extractor,
        "graph": graph,
        "seed": seed,
        "steps": [p["step"] for p in result.curve],
        "ratio": [p["runtimes"][0] / heft for p in result.curve],
        "train_s": result.timings["train"],
    }


def _key(run: dict[str, Any]) -> tuple[str, str, str, int]:
    return run["variant"], run.get("extractor", "gnn"), run["graph"], run["seed"]


def previous_runs(out: Path) -> list[dict[str, Any]]:
    """The runs of an earlier invocation (``--append``)."""
    return previous_results(out)["rows"]


def previous_results(out: Path) -> dict[str, Any]:
    """The result file of an earlier invocation, with its provenance (none: no file)."""
    path = out / "learning_per_step.json"
    return read_results(path) if path.is_file() else {"provenance": None, "rows": []}


def previous_commands(out: Path) -> list[str]:
    """The commands that made the runs ``--append`` keeps."""
    path = out / "learning_per_step_commands.txt"
    return path.read_text().splitlines() if path.is_file() else []


def summarize(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per variant and graph: final, mean-over-curve and best ratios (seed means)."""
    rows = []
    for variant, extractor in dict.fromkeys(_key(r)[:2] for r in runs):
        for graph in dict.fromkeys(r["graph"] for r in runs):
            mine = [r for r in runs if _key(r)[:3] == (variant, extractor, graph)]
            if not mine:
                continue
            curves = np.array([r["ratio"] for r in mine])
            train_s = float(np.mean([r["train_s"] for r in mine]))
            rows.append(
                {
                    "variant": variant,
                    "extractor": extractor,
                    "graph": graph.split(":")[1],
                    "seeds": len(mine),
                    "final": round(float(curves[:, -1].mean()), 3),
                    "final median": round(float(np.median(curves[:, -1])), 3),
                    "curve mean": round(float(curves.mean()), 3),
                    "best": round(float(curves.min(axis=1).mean()), 3),
                    "train s": round(train_s, 1),
                }
            )
    return rows


#: The layout every other variant is compared with, pair by pair (same graph and seed).
REFERENCE = "8x128"

#: One training run as recorded: variant, extractor, graph, seed, steps, ratio, train_s.
Run = dict[str, Any]


def _split_variant(name: str) -> tuple[str, str]:
    """A recorded variant name as (layout, label): labels start with a space."""
    layout, _, label = name.partition(" ")
    return layout, f" {label}" if label else ""


def paired(runs: list[dict[str, Any]], reference: str = REFERENCE) -> list[dict[str, Any]]:
    """Each variant against ``reference`` of the same label, extractor and graph, paired by
    seed, then over all graphs at once: the geometric-mean ratio of their curve means (the
    area under the greedy curve, below 1: the variant learns faster per step) and of their
    finals, with bootstrap 95% intervals, wins of the variant and the signed-rank test's
    verdict on the curve mean (:func:`placerl.comparison.compare_pairs`).

    Raises:
        ValueError: Two runs share variant, extractor, graph and seed, or a run and its
            reference differ in their evaluations' count or last step.
    """
    by_key: dict[tuple[str, str, str, int], dict[str, Any]] = {}
    for run in runs:
        if _key(run) in by_key:
            raise ValueError(f"two runs of variant, extractor, graph and seed {_key(run)}")
        by_key[_key(run)] = run
    graphs = list(dict.fromkeys(r["graph"] for r in runs))
    rows = []
    for name, extractor in dict.fromkeys(_key(r)[:2] for r in runs):
        layout, label = _split_variant(name)
        if layout == reference:
            continue
        against = reference + label
        for graph, pairs in _pairs_by_graph(by_key, (name, extractor), against, graphs).items():
            rows.append(_paired_row(name, against, extractor, graph, pairs))
    return rows


def _pairs_by_graph(
    by_key: dict[tuple[str, str, str, int], Run],
    variant: tuple[str, str],
    against: str,
    graphs: list[str],
) -> dict[str, list[tuple[Run, Run]]]:
    """(run, reference run) pairs of ``variant`` (name, extractor) per graph that has any,
    and over all of them where there are several."""
    pairs = {}
    for graph in graphs:
        mine = [
            (run, by_key[(against, *key[1:])])
            for key, run in by_key.items()
            if key[:3] == (*variant, graph) and (against, *key[1:]) in by_key
        ]
        for run, reference_run in mine:  # steps may differ by a few within a rollout
            schedules = [(len(r["steps"]), r["steps"][-1]) for r in (run, reference_run)]
            if schedules[0] != schedules[1]:
                raise ValueError(
                    f"{_key(run)} and its reference were evaluated at different "
                    f"steps ({schedules[0][0]} evaluations to step "
                    f"{schedules[0][1]} against {schedules[1][0]} to "
                    f"{schedules[1][1]}): their curves do not compare"
                )
        if mine:
            pairs[graph] = mine
    if len(pairs) > 1:
        pairs["all graphs"] = [pair for mine in pairs.values() for pair in mine]
    return pairs


def _paired_row(
    name: str, against: str, extractor: str, graph: str, pairs: list[tuple[Run, Run]]
) -> dict[str, Any]:
    mine = [run["ratio"] for run, _ in pairs]
    theirs = [reference_run["ratio"] for _, reference_run in pairs]
    area = compare_pairs(np.mean(mine, axis=1), np.mean(theirs, axis=1))
    final = compare_pairs([c[-1] for c in mine], [c[-1] for c in theirs])
    return {
        "variant": name,
        "against": against,
        "extractor": extractor,
        "graph": graph.split(":")[-1],
        "pairs": area.pairs,
        "curve mean ratio": _interval(area),
        "better / worse": f"{area.wins} / {area.losses}",
        "final ratio": _interval(final),
        "verdict (curve mean)": area.verdict(name, against),
    }


def _interval(comparison) -> str:
    if comparison.ci_note:
        return f"{comparison.ratio:.3f}"
    return f"{comparison.ratio:.3f} [{comparison.ci_low:.3f}, {comparison.ci_high:.3f}]"


def plot(runs: list[dict[str, Any]], path: Path) -> None:
    """Curves per graph: the seed mean with a min-max band, one colour per variant."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    graphs = list(dict.fromkeys(r["graph"] for r in runs))
    fig, axes = plt.subplots(1, len(graphs), figsize=(6 * len(graphs), 4), squeeze=False)
    for ax, graph in zip(axes[0], graphs, strict=True):
        for variant, extractor in dict.fromkeys(_key(r)[:2] for r in runs):
            mine = [r for r in runs if _key(r)[:3] == (variant, extractor, graph)]
            if not mine:
                continue
            curves = np.array([r["ratio"] for r in mine])
            steps = mine[0]["steps"]
            ax.plot(steps, curves.mean(axis=0), label=f"{extractor} {variant}")
            ax.fill_between(steps, curves.min(axis=0), curves.max(axis=0), alpha=0.15)
        ax.axhline(1.0, color="grey", linestyle=":", linewidth=1)
        ax.set(title=graph, xlabel="env steps", ylabel="greedy runtime / HEFT")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="before,8x128,16x64,32x32")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--extractor", default="gnn", help="gnn, lstm or mlp")
    parser.add_argument("--steps", type=int, default=16_000)
    parser.add_argument("--every", type=int, default=1_000, help="evaluation interval")
    parser.add_argument(
        "--append",
        action="store_true",
        help="keep the runs already in the results (same steps and interval), "
        "replacing those of the same variant, graph and seed",
    )
    parser.add_argument(
        "--label",
        default="",
        help="appended to the variant names in the results (e.g. ' (v2)': "
        "the same layouts run by other code)",
    )
    parser.add_argument(
        "--report", action="store_true", help="train nothing: the table and plot of the saved runs"
    )
    add_run_options(parser)
    args = parser.parse_args()
    apply_run_options(args)
    variants = args.variants.split(",")
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    out = Path(args.out)
    start, runs = time.perf_counter(), previous_runs(out) if args.append else []
    if args.report:  # the table of the file's runs, under the provenance of their run
        earlier = previous_results(out)
        report(earlier["rows"], previous_commands(out), out, earlier["provenance"])
        return
    for variant in variants:
        for graph in GRAPHS:
            for seed in (int(s) for s in args.seeds.split(",")):
                key = (variant + args.label, args.extractor, graph, seed)
                runs = [r for r in runs if _key(r) != key]
                runs.append(
                    run(variant, graph, seed, args.steps, args.every, args.extractor, args.label)
                )
                print(
                    {k: runs[-1][k] for k in ("variant", "graph", "seed")},
                    f"final {runs[-1]['ratio'][-1]:.3f}",
                    flush=True,
                )
    threads = f" --threads {args.threads}" if args.threads else ""
    command = (
        f"python benchmarks/bench_learning_per_step.py --variants {args.variants} "
        f"--seeds {args.seeds} --steps {args.steps}{threads}"
        f"{f' --extractor {args.extractor}' if args.extractor != 'gnn' else ''}"
        f"{f' --label {args.label!r}' if args.label else ''}"
        f"{' --append' if args.append else ''}  # {time.perf_counter() - start:.0f} s"
    )
    commands = [*previous_commands(out), command] if args.append else [command]
    (out / "learning_per_step_commands.txt").write_text("\n".join(commands) + "\n")
    path = write_results("learning_per_step", runs, out, config=args)
    report(runs, commands, out, read_results(path)["provenance"])


def report(
    runs: list[dict[str, Any]], commands: list[str], out: Path, provenance: dict[str, Any] | None
) -> None:
    """Write and print the table (``learning_per_step.md``, headed by the ``provenance`` of
    the runs' file) and the plot of ``runs``."""
    plot(runs, out / "learning_per_step.png")
    steps, every = runs[0]["steps"][-1], runs[0]["steps"][1] - runs[0]["steps"][0]
    note = (
        f"MaskablePPO, {CLUSTER}, {steps} steps; ratios are greedy runtime / HEFT's "
        "(below 1: better), means over seeds; `curve mean` averages every evaluation "
        f"(every {every} steps, from step 0). Made by:\n\n```\n" + "\n".join(commands) + "\n```"
    )
    text = f"{note}\n\n{markdown_table(summarize(runs))}\n"
    comparisons = paired(runs)
    if comparisons:
        text += (
            "\nEach variant against the default layout of its label, paired by graph and "
            "seed (ratios of the variant's value over the reference's; below 1: the "
            "variant's greedy placements were faster; `faster` in a verdict means that):"
            f"\n\n{markdown_table(comparisons)}\n"
        )
    write_markdown("learning_per_step", text, out, provenance)
    print(f"\n{text}")


if __name__ == "__main__":
    main()
