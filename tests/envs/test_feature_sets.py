"""The envs' ``features`` option: ``plain`` zeroes HEFT's figures and nothing else."""

from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest

import placerl  # noqa: F401  (registers the ids)
from placerl._env_ids import ENV_KINDS
from placerl.agents.placer import env_for
from placerl.baselines.problem import Problem
from placerl.cluster import load_cluster
from placerl.envs.case import RANK
from placerl.envs.device_features import HEFT_SCHEDULE_COLUMNS
from placerl.envs.feature_sets import FEATURE_SETS, feature_set
from placerl.errors import ConfigError
from placerl.graph import load_graph
from tests.envs.test_envs import rollout

GRAPH, CLUSTER = "synthetic:layered?n=12&seed=1", "placeto?n_devices=3"
HIDDEN = {"nodes": [RANK], "devices": list(HEFT_SCHEDULE_COLUMNS)}


def _zeroed(obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``obs`` with the columns ``plain`` hides set to 0."""
    out = {key: value.copy() for key, value in obs.items()}
    for key, columns in HIDDEN.items():
        out[key][..., columns] = 0.0
    return out


@pytest.mark.parametrize("kind", sorted(ENV_KINDS))
def test_plain_is_heft_with_the_rank_and_the_list_schedule_zeroed(kind):
    """One episode of the same actions under both sets: every observation of ``plain`` is
    ``heft``'s with the rank column and HEFT's schedule columns at 0, the rest unchanged."""
    runs = {}
    for features in ("heft", "plain"):
        env = gym.make(ENV_KINDS[kind], graph=GRAPH, cluster=CLUSTER, features=features)
        runs[features] = rollout(env, seed=3)
    (heft, heft_rewards, _), (plain, plain_rewards, _) = runs["heft"], runs["plain"]
    assert heft_rewards == plain_rewards  # same actions (the mask is no feature), same MDP
    for shown, hidden in zip(heft, plain, strict=True):
        for key, value in _zeroed(shown).items():
            np.testing.assert_array_equal(hidden[key], value, err_msg=f"{kind} {key}")
    if kind == "construct":  # the columns hold something under heft: the test can fail
        assert any(obs["nodes"][:, RANK].any() for obs in heft)
        assert any(obs["devices"][:, HIDDEN["devices"]].any() for obs in heft)


def test_the_default_set_shows_everything_and_settings_keep_the_set():
    assert feature_set("heft").nodes == feature_set("heft").devices == ()
    env = gym.make(ENV_KINDS["construct"], graph=GRAPH, cluster=CLUSTER, features="plain")
    assert env.unwrapped.settings()["features"] == "plain"
    assert (
        gym.make(ENV_KINDS["construct"], graph=GRAPH, cluster=CLUSTER).unwrapped.features == "heft"
    )


def test_a_saved_policy_rebuilds_its_env_with_its_set_and_older_ones_with_heft():
    settings = gym.make(
        ENV_KINDS["refine"], graph=GRAPH, cluster=CLUSTER, features="plain"
    ).unwrapped.settings()
    problem = Problem(load_graph(GRAPH), load_cluster(CLUSTER), "step_time")
    model = SimpleNamespace(placerl_settings={**settings, "algo": "maskable_ppo"})
    assert env_for(model, problem).features == "plain"
    del model.placerl_settings["features"]  # a policy saved before feature sets existed
    assert env_for(model, problem).features == "heft"


@pytest.mark.parametrize("bad", ["none", "HEFT", None, 1])
def test_an_unknown_set_is_refused_naming_the_known_ones(bad):
    with pytest.raises(
        ConfigError,
        match=r"features must be one of the feature sets heft "
        r"\(HEFT's upward rank .*\); plain .*got",
    ):
        gym.make(ENV_KINDS["construct"], graph=GRAPH, cluster=CLUSTER, features=bad)
    assert set(FEATURE_SETS) == {"heft", "plain"}
