"""placerl-dashboard: the order-comparison workspace, built and checked without network."""

import json

import pytest

pytest.importorskip("wandb_workspaces", reason="the experiments extra is not installed")

from placerl.dashboard import describe, main, order_workspace
from placerl.errors import ConfigError


def test_the_workspace_groups_training_runs_by_order_and_holds_the_panels():
    workspace = order_workspace("me", "placerl", group="synthetic:cifar10 @ placeto")
    shown = describe(workspace)
    assert shown["groupby"] == ["order.name"]
    assert shown["filters"] == (
        "Metric(\"JobType\") == 'train' and Metric(\"Group\") == 'synthetic:cifar10 @ placeto'"
    )
    assert [p["type"] for p in shown["panels"]] == [
        "LinePlot",
        "LinePlot",
        "BarPlot",
        "ParallelCoordinatesPlot",
    ]
    lines = [p for p in workspace.sections[0].panels if type(p).__name__ == "LinePlot"]
    assert [line.y[0] for line in lines] == ["eval/runtime_ms", "sim/best_runtime_ms"]
    assert all(line.groupby_rangefunc == "minmax" for line in lines)
    bar = workspace.sections[0].panels[2]
    assert bar.metrics[0].name == "speedup/heft" and bar.groupby.name == "order.name"


def test_the_workspace_serializes_to_wandb_s_view_model_offline():
    view = order_workspace("me", "placerl", baseline="m_etf")._to_model()
    text = view.model_dump_json()
    for key in (
        "eval/runtime_ms",
        "sim/best_runtime_ms",
        "speedup/m_etf",
        "order.value.name",
    ):  # wandb's key of the config field order.name
        assert key in text, key


def test_dry_run_prints_the_workspace(capsys):
    assert main(["--entity", "me", "--dry-run"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["project"] == "placerl" and len(shown["panels"]) == 4
    assert shown["filters"] == "Metric(\"JobType\") == 'train'"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"entity": ""}, "placerl-dashboard needs an entity; got ''"),
        ({"project": ""}, "placerl-dashboard needs a project; got ''"),
        ({"baseline": ""}, "placerl-dashboard needs a baseline; got ''"),
    ],
)
def test_empty_names_are_refused(kwargs, message):
    arguments = {"entity": "me", "project": "placerl", **kwargs}
    entity, project = arguments.pop("entity"), arguments.pop("project")
    with pytest.raises(ConfigError, match=message):
        order_workspace(entity, project, **arguments)


def test_the_command_line_names_a_missing_entity(capsys):
    with pytest.raises(SystemExit):
        main(["--entity", "", "--dry-run"])
    assert "placerl-dashboard needs an entity" in capsys.readouterr().err
