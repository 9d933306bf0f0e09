"""The measured env ids: the placement envs with real runtimes as reward."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import placerl  # noqa: F401  (registers the ids)

MEASURED = ["placerl/PlacementMeasured-v1", "placerl/PlacementRefineMeasured-v1"]
OPTIONS = {"objective": "measured?warmup=0&repeats=1"}


@pytest.mark.parametrize("env_id", MEASURED)
def test_measured_ids_are_nondeterministic_and_pass_the_checkers(env_id):
    assert gym.spec(env_id).nondeterministic
    kwargs = {**OPTIONS, "passes": 1} if "Refine" in env_id else OPTIONS
    env = gym.make(env_id, **kwargs)
    assert env.unwrapped.objective.startswith("measured")
    gym_check_env(env.unwrapped, skip_render_check=True)
    sb3_check_env(env.unwrapped, warn=False)


def test_an_episode_ends_with_a_measured_runtime():
    env = gym.make(MEASURED[0], **OPTIONS)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    done, info = False, {}
    while not done:
        _, reward, terminated, truncated, info = env.step(int(rng.integers(2)))
        done = terminated or truncated
    assert info["runtime"] > 0 and np.isfinite(reward)
    assert info["reference_runtime"] > 0
