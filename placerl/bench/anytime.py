"""Anytime curves: the score a placer has reached after so many simulator calls or seconds.

Each record's ``trace`` (:class:`placerl.bench.run.EvaluationCounter`) is its best runtime
after each improvement. :func:`anytime_curve` turns the traces of a leaderboard row into one
curve: at each budget, the geometric mean over the row's cases of the score reached within it
(the case's best constructive runtime over the best runtime so far), defined from the budget
at which every case has a placement. :func:`plot_anytime` draws every row of a tier against
simulator calls and against seconds, so the regime where each placer wins shows: where an
evaluation is a microsecond of simulation, seconds matter; where it is a measured run on
hardware, calls do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: The trace column of each axis.
AXES = {"calls": 0, "seconds": 1}
#: Points per curve.
GRID_POINTS = 200
#: Inches of the panels.
PANEL_HEIGHT = 5.5
#: Inches of the legend below them: a margin, and a line of entries (8 pt).
LEGEND_MARGIN = 0.3
LEGEND_LINE = 0.19
#: Characters beyond which the legend's entries take a line each, not two to a line.
LONG_LABEL = 70


def anytime_curve(records: Sequence[Mapping[str, Any]], axis: str, grid: np.ndarray) -> np.ndarray:
    """The geometric-mean score of ``records`` within each budget of ``grid`` (``nan``
    where a case has no placement yet, or no record has a trace to read).

    Raises:
        KeyError: An unknown ``axis`` (``calls`` or ``seconds``).
    """
    column = AXES[axis]
    logs = np.full((len(records), len(grid)), np.nan)
    for row, record in enumerate(records):
        reference = (record.get("reference") or {}).get("runtime")
        trace = np.asarray(record.get("trace") or [], dtype=float).reshape(-1, 3)
        if not reference or not len(trace):
            continue
        reached = np.searchsorted(trace[:, column], grid, side="right") - 1
        best = np.where(reached >= 0, trace[np.maximum(reached, 0), 2], np.nan)
        logs[row] = np.log(reference / best)
    with np.errstate(invalid="ignore"):
        return np.exp(logs.mean(axis=0))


def plot_anytime(
    rows: Mapping[str, Sequence[Mapping[str, Any]]], path: str | Path, title: str
) -> Path:
    """Draw the anytime curve of each row (``{placer: records}``) against simulator calls and
    against seconds, beside each other, with the best constructive placer's level (1.0);
    returns ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    labels = short_labels(list(rows))
    # the legend lists every row below the panels: the figure grows with it, so the panels
    # keep their height however many rows a tier has, and long specs take a line each
    columns = 1 if max(map(len, labels.values()), default=0) > LONG_LABEL else 2
    entries = len(rows) + 1  # and the best constructive placer's level
    legend = LEGEND_MARGIN + LEGEND_LINE * -(-entries // columns)  # inches
    height = PANEL_HEIGHT + legend
    figure, panels = plt.subplots(1, 2, figsize=(13, height), sharey=True)
    colors = plt.get_cmap("tab20").colors
    styles = [
        {"color": colors[i % len(colors)], "linestyle": ("-", "--", ":")[i // len(colors) % 3]}
        for i in range(len(rows))
    ]
    for panel, axis in zip(panels, AXES, strict=True):
        points = [
            p[AXES[axis]] for recs in rows.values() for r in recs for p in r.get("trace") or []
        ]
        top = max(points, default=1.0) * 1.05
        low = 1e-6 if axis == "seconds" else 1.0
        # every trace point is on the grid: a curve that starts late still shows its start
        grid = np.unique(
            np.concatenate([[0.0], points, np.geomspace(low, max(top, low * 10), GRID_POINTS)])
        )
        for (placer, records), style in zip(rows.items(), styles, strict=True):
            curve = anytime_curve(records, axis, grid)
            panel.plot(grid, curve, label=labels[placer], drawstyle="steps-post", **style)
        panel.axhline(
            1.0, color="black", linestyle="--", linewidth=1, label="best constructive placer"
        )
        panel.set_xscale("symlog", linthresh=1.0 if axis == "calls" else 1e-3)
        panel.set_xlim(left=0.0)
        panel.set_xlabel("simulator calls" if axis == "calls" else "seconds")
        panel.grid(True, which="both", alpha=0.3)
    panels[0].set_ylabel("score (geometric mean; higher is faster)")
    handles, shown = panels[0].get_legend_handles_labels()
    figure.legend(
        handles,
        shown,
        loc="lower left",
        bbox_to_anchor=(0.01, 0.0),
        ncol=columns,
        fontsize=8,
        frameon=False,
    )
    figure.suptitle(title)
    figure.tight_layout(rect=(0, legend / height, 1, 1))
    path = Path(path)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def short_labels(placers: Sequence[str]) -> dict[str, str]:
    """Each placer spec by its name and the options that tell it from the other specs of that
    name (``local_search max_evaluations=1000`` beside ``local_search ...=10000``)."""
    from placerl._spec import parse_query
    from placerl.errors import ConfigError

    parsed = {}
    for spec in placers:
        name, _, query = spec.partition("?")
        try:
            parsed[spec] = (name, parse_query(query, what=spec))
        except ConfigError:  # not a placer spec: as it is
            parsed[spec] = (spec, {})
    labels = {}
    for spec, (name, options) in parsed.items():
        kin = [o for n, o in parsed.values() if n == name]
        shown = [f"{k}={v}" for k, v in options.items() if any(other.get(k) != v for other in kin)]
        labels[spec] = " ".join([name, *shown])
    return labels
