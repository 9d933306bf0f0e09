"""Submitting a placer: one of your own, or a trained policy file, scored as the classic ones."""

import numpy as np
import pytest

from placerl.baselines import PLACERS, register_placer
from placerl.bench import load_suite
from placerl.bench.leaderboard import leaderboard
from placerl.bench.run import run_cases
from placerl.run_config import AgentGroup, EnvGroup, RunConfig
from placerl.train import train

CASES = ("tiny", "test")


def test_your_own_registered_placer_gets_a_leaderboard_row(tmp_path):
    with PLACERS.scope():

        @register_placer("alternate", optimizes="any")
        def alternate(problem, *, shift: int = 0):
            """Node v on device (v + shift) mod D: a placer of one's own."""
            devices = problem.cluster.num_devices
            return (np.arange(problem.graph.num_nodes) + shift) % devices

        records = run_cases("placebench-v1", *CASES, "alternate?shift=1", tmp_path / "alt")
    assert len(records) == len(load_suite("placebench-v1").select(*CASES))
    assert all(r["error"] is None and r["score"] is not None for r in records)
    row = leaderboard([tmp_path / "alt"]).iloc[0]
    assert (row["placer"], row["cases"]) == ("alternate?shift=1", len(records))


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory):
    """A GNN policy trained 64 steps on a train case of the tiny tier (pipeline, 3 devices)."""
    case = load_suite("placebench-v1").case("tiny/chain-n12-s0")
    assert case.split == "train"
    out = tmp_path_factory.mktemp("policy")
    run = RunConfig.from_dict(
        {
            "graph": {"spec": case.graph},
            "cluster": {"spec": case.cluster},
            "env": EnvGroup(objective=case.objective, max_nodes=40, max_edges=120),
            "agent": AgentGroup(warm_start=None, hyperparams={"n_steps": 32, "batch_size": 32}),
            "n_envs": 2,
            "total_steps": 64,
            "eval_every": 0,
            "eval_samples": 0,
            "progress_bar": False,
            "baselines": ["heft"],
        },
        base=RunConfig.schema(),
    )
    train(run, out_dir=str(out))
    return out / "model.zip"


def test_a_trained_policy_file_is_scored_with_its_search_counted(policy_file, tmp_path):
    greedy = run_cases("placebench-v1", *CASES, f"policy?path={policy_file}", tmp_path / "g")
    searched = run_cases(
        "placebench-v1",
        *CASES,
        f"policy?path={policy_file}&search=sample&budget=20",
        tmp_path / "s",
    )
    assert all(r["error"] is None and r["feasible"] for r in greedy + searched)
    assert all(r["simulator_calls"] >= 1 for r in greedy)  # the greedy episode simulates
    assert all(r["simulator_calls"] == 20 for r in searched)  # the budget, all of it counted
    assert all(s["score"] >= g["score"] - 1e-12 for g, s in zip(greedy, searched, strict=True))
