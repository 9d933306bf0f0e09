"""The plots of ``placerl-report``, each with its intervals.

Trained runs are drawn per graph group (a family's graphs pooled, see
:func:`placerl.report.graph_group`) and agent, one bar or line per order; evaluation runs (a
placer, order ``none``) as bars labelled by their placer spec.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from placerl.comparison import t_interval

#: The ``order`` of an evaluation run (a placer follows no traversal order); its ``agent`` is
#: the placer spec, and the plots label it by that.
NO_ORDER = "none"


def report_figures(runs: Any, orders: Any, out: Path, *, metric_label: str) -> list[str]:
    """Write the report's PNGs into ``out``; returns their names (without ``.png``).

    Args:
        runs: One row per run and graph (:func:`placerl.report.select_metric`'s frame).
        orders: The paired comparisons (:func:`placerl.report.compare_orders`).
        out: The report folder.
        metric_label: The runtime's axis label.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    labelled = runs.assign(series=_series(runs))
    names = []
    for name, column, label in (
        ("runtime_per_order", "runtime_ms", metric_label),
        ("speedup_vs_best", "speedup_vs_best", "speedup over the best baseline"),
    ):
        means, errors = error_bars(labelled, column)
        ax = means.plot.bar(
            figsize=(max(8, 1.2 * len(means) * math.sqrt(means.shape[1])), 4.5),
            rot=0,
            yerr=errors,
            capsize=2,
        )
        ax.set_ylabel(f"{label}\nmean over graphs and seeds, 95% CI")
        if column == "speedup_vs_best":  # above the line beats the best baseline placer
            ax.axhline(1.0, color="black", linestyle="--", linewidth=1, label="best baseline")
        ax.legend(fontsize=6, ncol=2)
        ax.figure.tight_layout()
        ax.figure.savefig(out / f"{name}.png", dpi=110)
        plt.close(ax.figure)
        names.append(name)
    if _plot_curves(runs, out / "learning_curves.png", metric_label):
        names.append("learning_curves")
    if len(orders):
        _plot_ratios(orders, out / "order_ratios.png")
        names.append("order_ratios")
    return names


def _series(runs: Any) -> Any:
    """Bar labels: the order (with the agent when several agents trained), or the placer."""
    trained = runs["order"] != NO_ORDER
    several = runs.loc[trained, "agent"].nunique() > 1
    label = runs["order"] + (", " + runs["agent"] if several else "")
    return label.where(trained, runs["agent"])


def error_bars(runs: Any, column: str) -> tuple[Any, np.ndarray]:
    """Means of ``column`` per group (rows) and series (columns), and their Student-t 95%
    intervals as pandas' asymmetric error bars ``(series, 2, groups)``: below and above each
    mean, cut at 0 as the report's tables cut them (runtimes and speedups are positive); 0
    where a bar has one value."""
    grouped = runs.groupby(["group", "series"])[column]
    means = grouped.mean()
    bounds = grouped.apply(t_interval, floor=0.0)  # one interval per bar, as in the tables
    below = means - bounds.map(lambda bound: bound[0])
    above = bounds.map(lambda bound: bound[1]) - means
    table = means.unstack()
    bars = [part.unstack().reindex_like(table).to_numpy().T for part in (below, above)]
    return table, np.nan_to_num(np.stack(bars, axis=1))


def _plot_curves(runs: Any, path: Path, metric_label: str) -> bool:
    """One panel per graph group and agent, a line per order (mean over its runs) with a
    min-max band; ``False`` (nothing written) when no run has a curve."""
    import matplotlib.pyplot as plt

    trained = runs[(runs["order"] != NO_ORDER) & (runs["curve"].map(len) > 0)]
    cells = list(trained.groupby(["group", "agent"], sort=True))
    if not cells:
        return False
    cols = min(3, len(cells))
    rows = math.ceil(len(cells) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.5 * cols, 3.2 * rows), squeeze=False)
    for ax, ((group, agent), cell) in zip(axes.flat, cells, strict=False):
        for order, runs_of_order in cell.groupby("order", sort=True):
            curves = [dict(c) for c in runs_of_order["curve"]]
            steps = sorted(set().union(*curves))
            values = [[c[s] for c in curves if s in c] for s in steps]
            (line,) = ax.plot(steps, [np.mean(v) for v in values], label=order, linewidth=1)
            ax.fill_between(
                steps,
                [min(v) for v in values],
                [max(v) for v in values],
                color=line.get_color(),
                alpha=0.12,
                linewidth=0,
            )
        ax.set_title(f"{group}, {agent}", fontsize=8)
        ax.set_xlabel("env steps", fontsize=7)
        ax.set_ylabel(f"{metric_label}: mean, min-max", fontsize=7)
        ax.tick_params(labelsize=6)
        ax.legend(fontsize=5)
    for ax in list(axes.flat)[len(cells) :]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _plot_ratios(orders: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    labels = [f"{r['group']} {r['agent']}: {r['order']}" for _, r in orders.iterrows()]
    ratio = orders["ratio"].to_numpy(float)
    low = np.nan_to_num(ratio - orders["ratio_ci95_low"].to_numpy(float))
    high = np.nan_to_num(orders["ratio_ci95_high"].to_numpy(float) - ratio)
    fig, ax = plt.subplots(figsize=(8, 0.8 + 0.3 * len(labels)))
    ax.errorbar(ratio, range(len(labels)), xerr=[low, high], fmt="o", capsize=3, markersize=4)
    ax.axvline(1.0, color="gray", linestyle="--", linewidth=1)
    ax.set_yticks(range(len(labels)), labels, fontsize=6)
    ax.set_xlabel(
        f"runtime over {orders['reference'].iloc[0]} (paired geometric mean, bootstrap 95% CI)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
