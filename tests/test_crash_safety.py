"""A training run killed at any moment (SIGKILL, also mid-checkpoint) resumes and loses nothing."""

import json
import multiprocessing
import os
import time

import numpy as np
import pytest

pytest.importorskip("stable_baselines3", reason="the rl extra is not installed")

from placerl._processes import adopt_environment, start_method
from placerl.run_config import AgentGroup, EnvGroup, OrderGroup

#: The groups' bare defaults (the construct env, no warm start), not the main job's recipe.
CONFIG = {
    "graph": {"spec": "synthetic:layered?n=12&seed=0"},
    "cluster": {"spec": "placeto?n_devices=2"},
    "order": OrderGroup(),
    "env": EnvGroup(),
    "agent": AgentGroup(
        extractor="mlp", warm_start=None, hyperparams={"n_steps": 32, "batch_size": 32}
    ),
    "n_envs": 1,
    "total_steps": 640,
    "eval_every": 32,
    "eval_samples": 0,
    "checkpoint_every": 32,
    "baselines": [],
    "progress_bar": False,
    "threads": 1,
    "seed": 3,
}


def _train(config: dict, out_dir: str, environ: dict) -> None:
    adopt_environment(environ)
    from placerl.train import train

    train(config, out_dir=out_dir)


def _start(out_dir) -> multiprocessing.Process:
    """A training process of its own (forked from a server that imported torch once)."""
    config = {**CONFIG, "resume": True}
    environ = {**os.environ, "WANDB_MODE": "disabled"}
    job = multiprocessing.get_context(start_method()).Process(
        target=_train, args=(config, str(out_dir), environ)
    )
    job.start()
    return job


def _finishes(job: multiprocessing.Process) -> bool:
    job.join(timeout=300)
    return job.exitcode == 0


def _checkpointed_steps(out_dir) -> int:
    state = out_dir / "checkpoint" / "state.json"
    return json.loads(state.read_text())["steps"] if state.is_file() else 0


def test_a_run_killed_several_times_resumes_to_the_uninterrupted_result(tmp_path):
    assert _finishes(_start(tmp_path / "reference"))  # a process like the others
    reference = json.loads((tmp_path / "reference" / "result.json").read_text())
    out = tmp_path / "killed"
    first_checkpoint, kills = None, 0
    rng = np.random.default_rng(0)
    while kills < 3:
        job = _start(out)
        before = _checkpointed_steps(out)
        deadline = time.monotonic() + 120
        while _checkpointed_steps(out) <= before and job.is_alive():  # train a little
            assert time.monotonic() < deadline, "no checkpoint in 2 minutes"
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.3))  # then die anywhere, a checkpoint write included
        if not job.is_alive():
            break  # finished before the kill: nothing left to interrupt
        job.kill()  # SIGKILL
        job.join()
        kills += 1
        first_checkpoint = first_checkpoint or _checkpointed_steps(out)
    assert kills >= 2, "the run finished before it could be killed twice"
    assert _finishes(_start(out))
    result = json.loads((out / "result.json").read_text())
    assert result["steps"] == reference["steps"] == 640
    steps = [c["step"] for c in result["curve"]]
    assert steps == sorted(steps) and steps[-1] == 640
    same = [c for c in reference["curve"] if c["step"] <= first_checkpoint]
    assert result["curve"][: len(same)] == [
        dict(c, wall_s=r["wall_s"]) for c, r in zip(same, result["curve"], strict=False)
    ]
    leftovers = sorted(p.name for p in (out / "checkpoint").iterdir())
    assert leftovers == sorted(
        [
            *json.loads((out / "checkpoint" / "state.json").read_text())["files"].values(),
            "state.json",
        ]
    )
