"""``placerl-dashboard``: the wandb workspace that compares traversal orders, built as code.

It reads what :mod:`placerl.tracking` logs: training runs (``job_type`` ``train``) tagged
``order:<name>``, grouped here by that order (its config field ``order.name``), with
``eval/runtime_ms`` (greedy) and ``sim/best_runtime_ms`` (best placement so far) per step, and
the ``speedup/<placer>`` and ``best_runtime_ms`` summaries. The workspace holds:

- the two runtime curves per order (mean over seeds with a min-max band);
- a bar of the mean speedup over a baseline placer per order (min-max over seeds);
- a parallel-coordinates panel of order, extractor, environment, best and final runtime.

Built with the ``wandb-workspaces`` library (:func:`order_workspace`, no network); saving it
(``placerl-dashboard --entity E --project P``) needs a wandb login.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from placerl._extras import require
from placerl.errors import ConfigError

#: The config field runs are grouped by (what the ``order:`` tag names).
ORDER_FIELD = "order.name"
DEFAULT_NAME = "placerl: traversal orders"


def order_workspace(
    entity: str,
    project: str,
    *,
    group: str | None = None,
    baseline: str = "heft",
    name: str = DEFAULT_NAME,
) -> Any:
    """The workspace (a ``wandb_workspaces.workspaces.Workspace``, not saved).

    Args:
        entity: The wandb entity (user or team).
        project: The wandb project the runs are in.
        group: Only runs of this wandb group (one graph on one cluster: ``<graph spec> @
            <cluster spec>``); ``None``: every training run of the project.
        baseline: The placer whose ``speedup/<baseline>`` summary the bar panel shows.
        name: The workspace's (view's) name.

    Raises:
        ConfigError: An empty entity, project or baseline.
    """
    for field, value in (("entity", entity), ("project", project), ("baseline", baseline)):
        if not value:
            article = "an" if field[0] in "aeiou" else "a"
            raise ConfigError(f"placerl-dashboard needs {article} {field}; got {value!r}")
    ws = require("wandb_workspaces.workspaces", "placerl-dashboard")
    wr = require("wandb_workspaces.reports.v2", "placerl-dashboard")
    filters = [ws.Metric("JobType") == "train"]
    if group is not None:
        filters.append(ws.Metric("Group") == group)
    by_order = {
        "groupby": wr.Config(ORDER_FIELD),
        "groupby_aggfunc": "mean",
        "groupby_rangefunc": "minmax",
    }
    curves = [
        wr.LinePlot(title=title, x="Step", y=[metric], **by_order)
        for title, metric in (
            ("greedy runtime (ms) per order", "eval/runtime_ms"),
            ("best runtime found (ms) per order", "sim/best_runtime_ms"),
        )
    ]
    speedup = wr.BarPlot(
        title=f"speedup over {baseline} per order",
        metrics=[wr.SummaryMetric(f"speedup/{baseline}")],
        **by_order,
    )
    columns = [
        wr.ParallelCoordinatesPlotColumn(metric=m)
        for m in (
            wr.Config(ORDER_FIELD),
            wr.Config("agent.extractor"),
            wr.Config("env.kind"),
            wr.SummaryMetric("best_runtime_ms"),
            wr.SummaryMetric("final_runtime_ms"),
        )
    ]
    parallel = wr.ParallelCoordinatesPlot(
        title="order, policy and env against runtime", columns=columns
    )
    return ws.Workspace(
        entity=entity,
        project=project,
        name=name,
        sections=[
            ws.Section(name="Traversal orders", panels=[*curves, speedup, parallel], is_open=True)
        ],
        runset_settings=ws.RunsetSettings(filters=filters, groupby=[ws.Config(ORDER_FIELD)]),
    )


def describe(workspace: Any) -> dict[str, Any]:
    """What a workspace shows, as plain data: its filters, grouping and panels."""
    settings = workspace.runset_settings
    return {
        "name": workspace.name,
        "project": workspace.project,
        "filters": settings.filters
        if isinstance(settings.filters, str)
        else " and ".join(map(str, settings.filters)),
        "groupby": [g.name for g in settings.groupby],
        "panels": [
            {"type": type(p).__name__, "title": p.title}
            for section in workspace.sections
            for p in section.panels
        ],
    }


def main(argv: Sequence[str] | None = None) -> int:
    """``placerl-dashboard --entity E --project P [--group G] [--baseline heft] [--dry-run]``."""
    parser = argparse.ArgumentParser(prog="placerl-dashboard", description=__doc__.splitlines()[0])
    parser.add_argument("--entity", required=True, help="wandb user or team")
    parser.add_argument("--project", default="placerl", help="wandb project (default placerl)")
    parser.add_argument("--group", default=None, help="only this wandb group (graph @ cluster)")
    parser.add_argument("--baseline", default="heft", help="the speedup panel's placer")
    parser.add_argument("--name", default=DEFAULT_NAME, help="the view's name")
    parser.add_argument(
        "--dry-run", action="store_true", help="print what the workspace holds; save nothing"
    )
    args = parser.parse_args(argv)
    try:
        workspace = order_workspace(
            args.entity, args.project, group=args.group, baseline=args.baseline, name=args.name
        )
    except ConfigError as error:
        parser.error(str(error))
    if args.dry_run:
        print(json.dumps(describe(workspace), indent=2))
        return 0
    saved = workspace.save()
    print(f"workspace saved: {saved.url}")
    return 0
