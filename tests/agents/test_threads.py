"""Torch threads: the cores a process may use, the count training takes, and the phases."""

import os

import pytest
import torch
from stable_baselines3.common.callbacks import BaseCallback

from placerl.agents import threads
from placerl.run_config import AgentGroup, EnvGroup, OrderGroup
from placerl.train import _worker_env, train


def test_cpu_quota_reads_cgroup_v2_and_v1(tmp_path):
    v2 = tmp_path / "cpu.max"
    missing = (tmp_path / "none_quota", tmp_path / "none_period")
    v2.write_text("150000 100000\n")
    assert threads.cpu_quota(v2, missing) == 1.5
    v2.write_text("max 100000\n")
    assert threads.cpu_quota(v2, missing) is None
    quota, period = tmp_path / "quota", tmp_path / "period"
    quota.write_text("400000\n")
    period.write_text("100000\n")
    assert threads.cpu_quota(tmp_path / "absent", (quota, period)) == 4.0
    quota.write_text("-1\n")  # v1's "no quota"
    assert threads.cpu_quota(tmp_path / "absent", (quota, period)) is None
    v2.write_text("garbage")
    assert threads.cpu_quota(v2, missing) is None


def test_available_cores_is_capped_by_the_quota(monkeypatch):
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: set(range(64)))
    monkeypatch.setattr(threads, "cpu_quota", lambda: 16.0)
    assert threads.available_cores() == 16  # 64 cores visible, 16 granted
    monkeypatch.setattr(threads, "cpu_quota", lambda: 0.5)
    assert threads.available_cores() == 1
    monkeypatch.setattr(threads, "cpu_quota", lambda: None)
    assert threads.available_cores() == 64


def test_training_threads_follow_the_request_then_omp_then_the_free_cores(monkeypatch):
    monkeypatch.setattr(threads, "_affinity", lambda: set(range(6)))
    monkeypatch.setattr(threads, "available_cores", lambda: 6)
    monkeypatch.setattr(threads, "busy_elsewhere", lambda: 0.2)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert threads.training_threads(3) == 3
    assert threads.training_threads(0) == 6
    monkeypatch.setattr(threads, "busy_elsewhere", lambda: 2.4)  # two cores taken by others
    assert threads.training_threads(0) == 4
    monkeypatch.setattr(threads, "busy_elsewhere", lambda: 9.0)
    assert threads.training_threads(0) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # a launcher running jobs side by side
    assert threads.training_threads(0) == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "many")
    assert threads.training_threads(0) == 1


def test_the_load_is_ignored_under_a_quota(monkeypatch):
    """Under a CPU quota the CPUs are shared by design: their load is not this process's."""
    monkeypatch.setattr(threads, "_affinity", lambda: set(range(64)))
    monkeypatch.setattr(threads, "available_cores", lambda: 16)
    monkeypatch.setattr(threads, "busy_elsewhere", lambda: 40.0)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert threads.training_threads(0) == 16


def test_cpu_times_sum_the_process_cpus(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text(
        "cpu  9 9 9 9 9 9 9 9 0 0\n"
        "cpu0 10 0 5 80 5 0 0 0 0 0\n"
        "cpu1 50 0 10 40 0 0 0 0 0 0\n"
        "cpu2 1 1 1 1 1 1 1 1 0 0\nintr 5\n"
    )
    assert threads._cpu_times({0, 1}, stat) == (75, 200)  # idle and iowait are not busy
    assert threads._cpu_times({7}, stat) is None
    assert threads._cpu_times({0}, tmp_path / "absent") is None


def test_busy_elsewhere_subtracts_this_process(monkeypatch):
    ticks = iter([(100, 1000), (190, 1100)])  # 90 of 100 ticks busy on 2 CPUs: 1.8 cores
    clock = iter([5.0, 5.03])  # this process used 0.03 s of CPU in the 0.1 s window
    monkeypatch.setattr(threads, "_affinity", lambda: {0, 1})
    monkeypatch.setattr(threads, "_cpu_times", lambda cpus: next(ticks))
    monkeypatch.setattr(threads.time, "process_time", lambda: next(clock))
    monkeypatch.setattr(threads.time, "sleep", lambda s: None)
    assert threads.busy_elsewhere(0.1) == pytest.approx(1.8 - 0.3)


def test_env_workers_run_single_threaded(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # restored after the test
    before = torch.get_num_threads()
    try:
        env = _worker_env(
            {"graph": "synthetic:layered?n=8&seed=0", "cluster": "placeto"},
            "construct",
            False,
            environ=dict(os.environ),
        )
        assert torch.get_num_threads() == 1
        assert threads.os.environ["OMP_NUM_THREADS"] == "1"
        env.close()
    finally:
        torch.set_num_threads(before)


class _RecordThreads(BaseCallback):
    """Torch's thread count in each phase of training."""

    def __init__(self):
        super().__init__()
        self.during_rollouts, self.during_updates = set(), set()
        self.at_training_end = None

    def _on_step(self):
        self.during_rollouts.add(torch.get_num_threads())
        return True

    def _on_rollout_end(self):  # runs after placerl's PhaseThreads switched to updates
        self.during_updates.add(torch.get_num_threads())

    def _on_training_end(self):  # the last rollback check runs then: at rollout threads
        self.at_training_end = torch.get_num_threads()


def test_rollouts_and_updates_get_their_own_thread_counts():
    before = torch.get_num_threads()
    record = _RecordThreads()
    try:
        agent = AgentGroup(
            extractor="mlp", warm_start=None, hyperparams={"n_steps": 16, "batch_size": 16}
        )
        result = train(
            {
                "graph": {"spec": "synthetic:layered?n=10&seed=0"},
                "cluster": {"spec": "placeto"},
                "order": OrderGroup(),
                "env": EnvGroup(),
                "agent": agent,
                "n_envs": 2,
                "total_steps": 64,
                "eval_every": 0,
                "eval_samples": 0,
                "baselines": [],
                "progress_bar": False,
                "resume": False,
                "threads": 3,
                "rollout_threads": 1,
            },
            callbacks=[record],
        )
        assert record.during_rollouts == {1}
        assert record.during_updates == {3} and record.at_training_end == 1
        assert result.timings["torch_threads"] == 3
        assert torch.get_num_threads() == 3  # train() leaves the update count set
    finally:
        torch.set_num_threads(before)
