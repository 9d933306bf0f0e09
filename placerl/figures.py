"""Figures of a training run, saved as PNG: the learning curve and the best placement."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

from placerl.train import TrainResult


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def plot_learning_curve(result: TrainResult, path: str | Path) -> Path:
    """Greedy evaluation runtime against steps, per graph, with the best runtime found so far
    (a step line: what a search recipe reports) and the baselines as lines.

    The y-axis spans the curve and every baseline, so a reference line never sits on or past
    the plot's edge.

    Returns:
        The PNG's path.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    steps = [point["step"] for point in result.curve]
    shown: list[float] = []
    graphs = result.graphs[:8]  # more lines say nothing
    for g, outcome in enumerate(graphs):
        runtimes = [1e3 * point["runtimes"][g] for point in result.curve]
        line = ax.plot(steps, runtimes, marker=".", label=f"greedy policy, {outcome.graph}")[0]
        shown += runtimes
        if all("best" in point for point in result.curve):  # absent from older runs' curves
            found = [1e3 * point["best"][g] for point in result.curve]
            ax.plot(
                steps,
                found,
                drawstyle="steps-post",
                color=line.get_color(),
                linewidth=2.2,
                alpha=0.6,
                label=f"best found so far, {outcome.graph}",
            )
            shown += found
        for k, (name, runtime) in enumerate(sorted(outcome.baselines.items())):
            # One graph: a colour per baseline. Several: the graph's colour, a style per
            # baseline. Drawn above the curve, so a policy that matches a baseline hides neither.
            colour = f"C{k + 1}" if len(graphs) == 1 else line.get_color()
            ax.axhline(
                1e3 * runtime,
                color=colour,
                linestyle=("--", ":", "-.")[k % 3],
                linewidth=1.2,
                zorder=3,
                label=f"{name}, {outcome.graph}",
            )
            shown.append(1e3 * runtime)
    if shown:
        if max(shown) > 1.5 * min(shown):  # a far baseline (one device) would flatten the rest
            from matplotlib.ticker import FuncFormatter

            ax.set_yscale("log")
            for axis in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):
                axis(FuncFormatter(lambda value, _: f"{value:g}"))  # 7, not 7x10^0
        ax.set_ylim(*runtime_limits(shown, log=ax.get_yscale() == "log"))
    ax.set_xlabel("env steps")
    ax.set_ylabel("runtime (ms)")
    ax.set_title("policy runtime during training")
    for text in ax.legend(
        fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False
    ).get_texts():  # below the axes: long specs wrap
        text.set_text(textwrap.fill(text.get_text(), 60))
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def runtime_limits(
    values: list[float], margin: float = 0.08, log: bool = False
) -> tuple[float, float]:
    """Y-limits that hold every value with ``margin`` of the span (or of the value) to spare;
    with ``log``, of the span of the values' logarithms (positive values)."""
    if log:
        low, high = runtime_limits(np.log(values).tolist(), margin)
        return float(np.exp(low)), float(np.exp(high))
    low, high = min(values), max(values)
    pad = margin * ((high - low) or abs(high) or 1.0)
    # at least one float step: a pad below the values' resolution (a subnormal value, a span
    # far below their magnitude) would leave a value on the axis's edge
    return (
        min(low - pad, float(np.nextafter(low, -np.inf))),
        max(high + pad, float(np.nextafter(high, np.inf))),
    )


def plot_best_placement(result: TrainResult, path: str | Path, *, graph: int = 0) -> Path:
    """The best placement of ``graph`` drawn by device (the env's ``rgb_array`` rendering).

    Returns:
        The PNG's path.
    """
    from placerl.envs.render import render_rgb
    from placerl.run_config import RunConfig
    from placerl.train import make_env

    run = RunConfig.from_dict(result.config, base=RunConfig.schema())
    env = make_env(run.env_arguments(evaluation=True), run.env.kind)
    env.reset(seed=0, options={"graph": graph})
    placement = np.asarray(result.graphs[graph].best_placement, dtype=np.int64)
    image = render_rgb(env.case, placement, env.cluster)
    plt = _pyplot()
    path = Path(path)
    plt.imsave(path, image)
    return path
