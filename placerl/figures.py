"""Figures of a training run, saved as PNG: the learning curve and the best placement's timeline."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

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
    """The best placement of ``graph`` as a timeline (:func:`plot_timeline`), on the run's
    own graph, cluster and objective.

    Returns:
        The PNG's path.
    """
    from placerl.run_config import RunConfig
    from placerl.train import make_env

    run = RunConfig.from_dict(result.config, base=RunConfig.schema())
    env = make_env(run.env_arguments(evaluation=True), run.env.kind)
    env.reset(seed=0, options={"graph": graph})
    outcome = result.graphs[graph]
    # a measured run is drawn as the simulator schedules it: measuring again would take the
    # hardware for minutes, and a measurement has no per-op timeline
    simulated = env.objective if env.objective in ("step_time", "pipeline") else "step_time"
    return plot_timeline(
        env.case.graph,
        np.asarray(outcome.best_placement, dtype=np.int64),
        env.cluster,
        simulated,
        path,
        title=f"best placement found, {outcome.graph}",
    )


#: Ops whose bar is at least this share of the time axis get their name written on it.
LABELLED_SHARE = 0.04


def plot_timeline(
    graph: Any,
    placement: np.ndarray,
    cluster: Any,
    objective: str,
    path: str | Path,
    *,
    title: str | None = None,
) -> Path:
    """Which op runs where, and when: one row per device (its name and kind).

    Under ``step_time`` a Gantt chart of the simulated step: each op a bar from its start to
    its finish (named where it is wide enough), each transfer between devices a thin grey bar
    under its producer's row, from the producer's finish for the transfer's uncontended time
    (the simulator may start it later on a busy channel), and the step time as a line. Under
    ``pipeline`` (no schedule) each device's load, compute and communication stacked, with
    the largest load, the time per sample, as a line.

    Args:
        graph: A :class:`~placerl.graph.CompGraph` or graph spec.
        placement: A device index per node.
        cluster: A :class:`~placerl.cluster.Cluster` or cluster spec.
        objective: ``step_time`` or ``pipeline`` (any objective with a schedule or loads).
        path: Where the PNG goes.
        title: The figure's title (default: the graph, objective and runtime).

    Returns:
        The PNG's path.
    """
    from placerl.cluster import load_cluster
    from placerl.graph import load_graph
    from placerl.sim import simulate

    graph, cluster = load_graph(graph), load_cluster(cluster)
    placement = np.asarray(placement, dtype=np.int64)
    result = simulate(graph, placement, cluster, objective)
    plt = _pyplot()
    devices = cluster.num_devices
    fig, ax = plt.subplots(figsize=(10, 1.6 + 0.6 * devices))
    if result.start is not None:
        _draw_schedule(ax, graph, placement, cluster, result)
        ax.axvline(1e3 * result.runtime, color="black", linestyle="--", label="step time")
    else:
        _draw_loads(ax, graph, placement, cluster, result)
        ax.axvline(
            1e3 * result.runtime,
            color="black",
            linestyle="--",
            label="largest load (time per sample)",
        )
    ax.set_yticks(range(devices), [f"{d.name} ({d.kind})" for d in cluster.devices])
    ax.set_ylim(devices - 0.5, -0.7)  # device 0 on top, room for its transfers
    ax.set_xlim(0, 1.04e3 * result.runtime if np.isfinite(result.runtime) else None)
    ax.set_xlabel("time (ms)")
    feasible = "" if result.feasible else ", does not fit"
    ax.set_title(title or f"{graph.name}, {objective}")
    ax.text(
        1.0,
        1.01,
        f"{objective}: {1e3 * result.runtime:.4g} ms{feasible}",
        transform=ax.transAxes,
        ha="right",
        va="bottom",
        fontsize=8,
    )
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=3, frameon=False)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _draw_loads(ax: Any, graph: Any, placement: np.ndarray, cluster: Any, result: Any) -> None:
    """Each device's load: its ops' compute one after another (named where they fit), then
    its communication."""
    from placerl.sim import CostModel

    durations = 1e3 * CostModel(graph, cluster, result.objective).durations
    span = max(1e3 * float(result.runtime), 1e-12)
    for device in range(cluster.num_devices):
        left = 0.0
        for v in np.flatnonzero(placement == device).tolist():
            width = float(durations[v, device])
            _op_bar(ax, graph, v, device, left, width, span)
            left += width
        ax.barh(
            device,
            1e3 * result.comm[device],
            left=left,
            height=0.55,
            color="0.6",
            label="communication" if device == 0 else None,
        )


def _op_bar(
    ax: Any, graph: Any, v: int, device: int, left: float, width: float, span: float
) -> None:
    """Op ``v``'s bar on ``device``'s row, in the device's colour, named where it is wide."""
    ax.barh(
        device,
        width,
        left=left,
        height=0.55,
        color=f"C{device % 10}",
        edgecolor="black",
        linewidth=0.3,
    )
    if width >= LABELLED_SHARE * span:
        ax.text(
            left + width / 2,
            device,
            _short(graph.node(v).name),
            ha="center",
            va="center",
            fontsize=6,
            clip_on=True,
        )


def _short(name: str, width: int = 16) -> str:
    """An op's name cut to ``width`` characters, keeping its end (the op, not the scope)."""
    return name if len(name) <= width else "..." + name[-(width - 3) :]


def _draw_schedule(ax: Any, graph: Any, placement: np.ndarray, cluster: Any, result: Any) -> None:
    """Each op's bar on its device's row, its name where it fits, and each cross-device
    transfer as a thin bar above its producer's row."""
    from placerl.sim.reference import edge_seconds

    start, finish = 1e3 * result.start, 1e3 * result.finish
    span = max(float(finish.max(initial=0.0)), 1e-12)
    for v, device in enumerate(placement.tolist()):
        _op_bar(ax, graph, v, device, float(start[v]), float(finish[v] - start[v]), span)
    arrays, drawn = graph.arrays, False
    for e, (u, v) in enumerate(zip(arrays.src.tolist(), arrays.dst.tolist(), strict=True)):
        source, target = int(placement[u]), int(placement[v])
        if source == target:
            continue
        seconds = 1e3 * edge_seconds(graph, cluster, e, source, target)
        ax.barh(
            source - 0.38,
            seconds,
            left=finish[u],
            height=0.1,
            color="0.45",
            label=None if drawn else "transfer to another device (uncontended time)",
        )
        drawn = True
