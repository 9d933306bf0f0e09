"""``placerl-report DIR...``: tables and plots from finished runs and sweeps.

Every ``result.json`` under the given folders (``placerl-train`` and ``placerl-eval`` runs) is
one row per graph. The report aggregates them per graph x cluster x objective x order x agent:
the mean over seeds with a 95% Student-t confidence interval (runs whose configs differ in
more than the seed, such as the env or the budget, carry different ``variant`` labels and are
never pooled), and a paired comparison of each
traversal order against a reference order on the same graphs, agents and seeds (ratio of
runtimes, wins, and a Wilcoxon signed-rank p-value). It writes ``report.md``, ``runs.csv``,
``summary.csv``, ``orders.csv`` and three plots: runtime per order per graph, learning curves
per order, and speedup over the best baseline placer. An evaluation run (``placerl-eval``) has
order ``none``, its placer spec as agent, and its bars labelled by that spec.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from placerl._options import check_out_dir
from placerl.errors import ConfigError
from placerl.train import is_evaluation

KEYS = ["graph", "cluster", "objective", "order", "agent", "variant"]
#: The ``order`` of an evaluation run (a placer follows no traversal order); its ``agent`` is
#: the placer spec, and the plots label it by that.
NO_ORDER = "none"
#: The order the others face unless ``--reference-order`` says otherwise.
DEFAULT_REFERENCE_ORDER = "topo"

#: Config fields that do not make runs different experiments: the seed and the bookkeeping.
NOT_VARIANT = {
    "graph",
    "cluster",
    "objective",
    "order",
    "algo",
    "extractor",
    "seed",
    "placer",
    "out_dir",
    "resume",
    "device",
    "progress_bar",
    "baselines",
    "eval_every",
    "eval_samples",
    "checkpoint_every",
}


def load_runs(folders: Sequence[str | Path]) -> Any:
    """One row per (result.json, graph) under ``folders``, as a pandas DataFrame.

    A ``result.json`` that cannot be read (truncated, hand-edited) is skipped with a warning
    naming it; ``frame.attrs["skipped"]`` lists those files with the reason.

    Raises:
        FileNotFoundError: A folder does not exist, or none holds a readable ``result.json``.
    """
    import pandas as pd

    rows, skipped = [], []
    for folder in map(Path, folders):
        if not folder.exists():
            raise FileNotFoundError(f"no such folder: {folder}")
        for path in sorted(folder.rglob("result.json")):
            try:
                rows.extend(_rows(json.loads(path.read_text()), path.parent))
            except (ValueError, KeyError, TypeError, IndexError) as error:
                reason = f"{type(error).__name__}: {error}"
                warnings.warn(f"skipped {path}: not a readable result ({reason})", stacklevel=2)
                skipped.append(f"{path} ({reason})")
    if not rows:
        raise FileNotFoundError(f"no readable result.json under {', '.join(map(str, folders))}")
    frame = pd.DataFrame(rows)
    frame.attrs["skipped"] = skipped
    return frame


def variant(config: dict[str, Any]) -> str:
    """What else the run's config sets (env, head, hyperparameters, budget, ...), as a short
    stable label, so that runs differing in more than the seed are never pooled."""
    rest = {k: v for k, v in sorted(config.items()) if k not in NOT_VARIANT}
    return hashlib.sha1(json.dumps(rest, sort_keys=True).encode()).hexdigest()[:8]


def _rows(result: dict[str, Any], run: Path) -> list[dict[str, Any]]:
    config = result["config"]
    if is_evaluation(config):
        order, agent, seed = NO_ORDER, config["placer"], 0
    else:
        order, seed = config["order"], config["seed"]
        agent = f"{config['algo']}_{config['extractor']}"
    rows, label = [], variant(config)
    for g, outcome in enumerate(result["graphs"]):
        best = min(outcome["baselines"].values()) if outcome["baselines"] else np.nan
        rows.append({
            "run": str(run), "graph": outcome["graph"], "cluster": config["cluster"],
            "objective": config["objective"], "order": order, "agent": agent,
            "variant": label, "seed": seed,
            "runtime_ms": 1e3 * outcome["final_runtime"],
            "best_seen_ms": 1e3 * outcome["best_runtime"],
            "best_baseline_ms": 1e3 * best, "speedup_vs_best": best / outcome["final_runtime"],
            "steps": result["steps"], "train_s": result["timings"].get("train", 0.0),
            "curve": [(p["step"], 1e3 * p["runtimes"][g]) for p in result["curve"]],
        })  # fmt: skip
    return rows


def summarize(runs: Any) -> Any:
    """Mean, 95% confidence half-width and count per graph x cluster x objective x order x
    agent."""
    from scipy import stats

    def half_width(values: Any) -> float:
        n = len(values)
        if n < 2:
            return np.nan  # one seed: no interval
        return float(stats.t.ppf(0.975, n - 1) * values.std(ddof=1) / np.sqrt(n))

    grouped = runs.groupby(KEYS, sort=True)
    table = grouped.agg(seeds=("seed", "nunique"), runtime_ms=("runtime_ms", "mean"),
                        best_seen_ms=("best_seen_ms", "mean"),
                        speedup_vs_best=("speedup_vs_best", "mean"))  # fmt: skip
    table["runtime_ci95_ms"] = grouped["runtime_ms"].apply(half_width)
    return table.reset_index()


def compare_orders(runs: Any, reference: str = "topo") -> Any:
    """Each order against ``reference`` on the same graph, cluster, objective, agent and seed.

    Returns:
        Per order: paired runs, the geometric-mean runtime ratio to the reference (below 1:
        faster), wins (strictly faster), and the Wilcoxon signed-rank p-value (``nan`` under 6
        pairs or when every pair ties).
    """
    import pandas as pd
    from scipy import stats

    trained = runs[runs["order"] != NO_ORDER]
    pivot = trained.pivot_table(index=["graph", "cluster", "objective", "agent", "variant",
                                       "seed"], columns="order", values="runtime_ms")  # fmt: skip
    rows = []
    for order in pivot.columns:
        if order == reference or reference not in pivot.columns:
            continue
        pairs = pivot[[reference, order]].dropna()
        ratio = np.log(pairs[order] / pairs[reference])
        p_value = np.nan
        if len(pairs) >= 6 and np.any(ratio != 0):
            p_value = float(stats.wilcoxon(pairs[order], pairs[reference]).pvalue)
        rows.append({"order": order, "reference": reference, "pairs": len(pairs),
                     "ratio": float(np.exp(ratio.mean())) if len(pairs) else np.nan,
                     "wins": int((pairs[order] < pairs[reference]).sum()),
                     "p_value": p_value})  # fmt: skip
    return pd.DataFrame(rows, columns=["order", "reference", "pairs", "ratio", "wins",
                                       "p_value"])  # fmt: skip


def write_report(folders: Sequence[str | Path], out: str | Path, *,
                 reference_order: str | None = None) -> Path:  # fmt: skip
    """Write the report of every run under ``folders`` into ``out``; returns ``report.md``.

    Args:
        folders: Run or sweep folders holding ``result.json`` files.
        out: Where the report goes.
        reference_order: The order the others face (``None``: ``topo``, and where no run used
            it the report says so).

    Raises:
        FileNotFoundError: See :func:`load_runs`.
        ConfigError: ``out`` is a file; a ``reference_order`` given that no run used.
    """
    out = Path(out)
    check_out_dir(out)
    runs = load_runs(folders)
    orders_run = sorted(set(runs["order"]) - {NO_ORDER})
    if reference_order is not None and orders_run and reference_order not in orders_run:
        raise ConfigError(f"reference order {reference_order!r} is none of the runs' orders: "
                          f"{', '.join(orders_run)}")  # fmt: skip
    reference_order = reference_order or DEFAULT_REFERENCE_ORDER
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(runs)
    orders = compare_orders(runs, reference_order)
    runs.drop(columns="curve").to_csv(out / "runs.csv", index=False)
    summary.to_csv(out / "summary.csv", index=False)
    orders.to_csv(out / "orders.csv", index=False)
    figures = _plots(runs, summary, out)
    text = [f"# placerl report: {len(runs)} runs x graphs from {', '.join(map(str, folders))}",
            "", "## Per graph, order and agent (mean over seeds, 95% CI)", "",
            summary.to_markdown(index=False, floatfmt=".4g"), "",
            f"## Orders against {reference_order} (paired)", "",
            orders.to_markdown(index=False, floatfmt=".4g") if len(orders)
            else _no_pairs(orders_run, reference_order),
            "", *[f"![{name}]({name}.png)" for name in figures], ""]  # fmt: skip
    skipped = runs.attrs.get("skipped", [])
    if skipped:
        text += ["## Skipped result files", "", *[f"- {entry}" for entry in skipped], ""]
    path = out / "report.md"
    path.write_text("\n".join(text))
    return path


def _no_pairs(orders_run: list[str], reference_order: str) -> str:
    """Why the paired table is empty."""
    if reference_order not in orders_run:
        return (f"(no pairs: no run used {reference_order}; the runs' orders: "
                f"{', '.join(orders_run) or 'none'}; pick one with --reference-order)")
    return f"(no pairs: no other order ran on the same graph, agent and seed as {reference_order})"


def _plots(runs: Any, summary: Any, out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    names = []
    for name, column, label in (("runtime_per_order", "runtime_ms", "runtime (ms)"),
                                ("speedup_vs_best", "speedup_vs_best",
                                 "speedup over the best baseline")):  # fmt: skip
        series = summary["order"].where(summary["order"] != NO_ORDER, summary["agent"])
        table = summary.assign(series=series).pivot_table(index="graph", columns="series",
                                                          values=column)  # fmt: skip
        ax = table.plot.bar(figsize=(8, 4), rot=0)
        ax.set_ylabel(label)
        ax.figure.tight_layout()
        ax.figure.savefig(out / f"{name}.png", dpi=110)
        plt.close(ax.figure)
        names.append(name)
    fig, ax = plt.subplots(figsize=(8, 4))
    for (graph, order), group in runs[runs["order"] != NO_ORDER].groupby(["graph", "order"]):
        curves = [dict(c) for c in group["curve"] if c]
        steps = sorted(set().union(*curves)) if curves else []
        if steps:
            mean = [np.mean([c[s] for c in curves if s in c]) for s in steps]
            ax.plot(steps, mean, label=f"{graph}, {order}")
    ax.set_xlabel("env steps")
    ax.set_ylabel("greedy runtime (ms), mean over seeds")
    if ax.lines:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "learning_curves.png", dpi=110)
    plt.close(fig)
    return [*names, "learning_curves"]


def main(argv: Sequence[str] | None = None) -> int:
    """``placerl-report DIR... [--out report] [--reference-order topo]``."""
    parser = argparse.ArgumentParser(prog="placerl-report", description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", help="run or sweep folders holding result.json")
    parser.add_argument("--out", default="report", help="where the report goes")
    parser.add_argument("--reference-order", default=None,
                        help=f"order the others face (default {DEFAULT_REFERENCE_ORDER})")
    args = parser.parse_args(argv)
    try:
        path = write_report(args.folders, args.out, reference_order=args.reference_order)
    except (FileNotFoundError, ConfigError) as error:
        parser.error(str(error))
    print(path.read_text())
    print(f"Report, CSV tables and plots in {path.parent}")
    return 0
