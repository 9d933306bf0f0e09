"""wandb tracking: what an offline run holds, and training going on when wandb cannot start."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("wandb", reason="the experiments extra is not installed")
pytest.importorskip("stable_baselines3", reason="the rl extra is not installed")

from placerl.errors import ConfigError
from placerl.run_config import LoggerGroup
from placerl.tracking import Tracker, WandbTracker, open_tracker, run_labels
from tests.wandb_records import read_records

CONFIG = {
    "graph": {"spec": "synthetic:layered?n=12&seed=0"},
    "cluster": {"spec": "placeto"},
    "order": {"name": "bfs"},
    "env": {"objective": "step_time"},
    "agent": {"algo": "maskable_ppo", "extractor": "gnn"},
    "seed": 2,
}


def _history_keys(records) -> set[str]:
    return {
        item.key or "/".join(item.nested_key)
        for r in records
        if r.WhichOneof("record_type") == "history"
        for item in r.history.item
    }


def test_offline_run_holds_config_metrics_summaries_and_media(tmp_path):
    out = tmp_path / "run"
    command = [
        sys.executable,
        "-c",
        "from placerl.apps import train_app; train_app()",
        "graph=layered_100",
        "graph.spec='synthetic:layered?n=12&seed=0'",
        "cluster=placeto4",
        "order=bfs",
        "agent=maskable_ppo_mlp",
        "logger=wandb",
        "total_steps=128",
        "eval_every=64",
        "eval_samples=0",
        "n_envs=2",
        "progress_bar=false",
        "+agent.hyperparams.n_steps=32",
        "+agent.hyperparams.batch_size=32",
        f"hydra.run.dir={out}",
    ]
    env = {
        **os.environ,
        "WANDB_MODE": "offline",
        "WANDB_SILENT": "true",
        **{
            f"WANDB_{kind}_DIR": str(tmp_path / kind.lower())
            for kind in ("CACHE", "CONFIG", "DATA", "ARTIFACT")
        },
    }
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "wandb sync" in done.stdout
    (run_file,) = (out / "wandb").glob("offline-run-*/run-*.wandb")
    records = read_records(run_file)
    (run,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    assert run.run_group == "synthetic:layered?n=12&seed=0 @ placeto?n_devices=4"
    assert set(run.tags) == {"order:bfs", "agent:maskable_ppo_mlp", "objective:step_time"}
    assert run.job_type == "train"
    config = {item.key: json.loads(item.value_json) for item in run.config.update}
    assert config["order"] == {"name": "bfs", "seed": 0} and config["total_steps"] == 128
    keys = _history_keys(records)
    expected = {
        "charts/SPS",
        "rollout/ep_rew_mean",
        "train/loss",
        "eval/runtime_ms",
        "sim/best_runtime_ms",
        "placement/_type",
        "charts/learning_curve/_type",
    }
    assert expected <= keys, expected - keys
    evaluated = {
        r.history.step.num
        for r in records
        if r.WhichOneof("record_type") == "history"
        and any((i.key or "/".join(i.nested_key)) == "eval/runtime_ms" for i in r.history.item)
    }
    curve = json.loads((out / "result.json").read_text())["curve"]
    assert {point["step"] for point in curve} <= evaluated  # each at its own step, from 0
    minimized = {
        r.metric.name
        for r in records
        if r.WhichOneof("record_type") == "metric" and r.metric.summary.min
    }
    assert minimized == {"eval/runtime_ms", "sim/best_runtime_ms"}
    summary = {
        item.key
        for r in records
        if r.WhichOneof("record_type") == "summary"
        for item in r.summary.update
    }
    assert {"final_runtime_ms", "best_runtime_ms", "speedup/heft"} <= summary
    (table,) = (out / "wandb").glob("offline-run-*/files/media/table/placement_*.table.json")
    rows = json.loads(table.read_text())["data"]
    best = json.loads((out / "best_placement.json").read_text())["layered-n12-s0"]
    assert [node for _, node, _, _ in rows] == list(range(len(best["placement"])))
    assert {op: device for _, _, op, device in rows} == best["placement_by_op"]  # by name
    assert {graph for graph, _, _, _ in rows} == {"layered-n12-s0"}


def test_training_goes_on_when_wandb_cannot_start(monkeypatch, tmp_path):
    import wandb

    def broken(**kwargs):
        raise RuntimeError("no network")

    monkeypatch.setattr(wandb, "init", broken)
    with pytest.warns(UserWarning, match="wandb could not start \\(no network\\)"):
        tracker = WandbTracker(LoggerGroup(kind="wandb"), CONFIG, str(tmp_path))
    assert tracker.callbacks() == []
    tracker.log_result(None, {})  # nothing to record into, and no error
    tracker.close()


def test_labels_group_by_graph_and_cluster_and_tag_the_rest():
    labels = run_labels(CONFIG)
    assert labels["group"] == "synthetic:layered?n=12&seed=0 @ placeto"
    assert labels["tags"] == ["order:bfs", "agent:maskable_ppo_gnn", "objective:step_time"]
    assert labels["name"] == "bfs-maskable_ppo_gnn-seed2"
    family = run_labels({**CONFIG, "graph": {"spec": ["a", "b"]}})
    assert family["group"] == "2 graphs (a, ...) @ placeto"


def test_none_logger_records_nothing_and_unknown_loggers_are_named(tmp_path):
    tracker = open_tracker(LoggerGroup(kind="none"), CONFIG, str(tmp_path))
    assert type(tracker) is Tracker and tracker.callbacks() == []
    with pytest.raises(ConfigError, match="unknown logger 'tensorboard'; known: none, wandb"):
        open_tracker(LoggerGroup(kind="tensorboard"), CONFIG, str(tmp_path))


def test_the_sync_command_can_be_pasted_into_a_shell():
    import shlex

    from placerl.tracking import sync_command

    folder = "multirun/placerl-train/graph.spec='synthetic:layered?n=12&seed=0',seed=1/wandb/x"
    assert shlex.split(sync_command(folder)) == ["wandb", "sync", folder]
