"""``reset(seed=s)`` gives the same episode whatever happened before, in every mode."""

import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

import placerl  # noqa: F401  (registers the ids)
from placerl.baselines.references import reference
from placerl.envs import StartFromBest

SMALL = "synthetic:layered?n=12&seed=1"
GRAPHS = [SMALL, "synthetic:chain?n=6", "msr:bert24_inference"]

MODES = {
    "construct": ("placerl/Placement-v1", {}),
    "construct, dense reward": ("placerl/Placement-v1", {"reward": "normalized_delta"}),
    "construct, penalty memory": ("placerl/Placement-v1", {"memory": "penalty"}),
    "construct, several graphs": ("placerl/Placement-v1", {"graph": GRAPHS}),
    "construct, random order": ("placerl/Placement-v1", {"order": "random", "order_seed": 3}),
    "refine from single_device": ("placerl/PlacementRefine-v1", {}),
    "refine from uniform": ("placerl/PlacementRefine-v1", {"init": "uniform"}),
    "refine from the random placer": ("placerl/PlacementRefine-v1", {"init": "random?seed=3"}),
    "refine from reference": (
        "placerl/PlacementRefine-v1",
        {"init": "reference", "reference": "heft"},
    ),
    "refine from a placer": ("placerl/PlacementRefine-v1", {"init": "m_topo", "passes": 2}),
    "refine, several graphs": ("placerl/PlacementRefine-v1", {"graph": GRAPHS, "init": "uniform"}),
    "refine, pipeline": ("placerl/PlacementRefine-v1", {"objective": "pipeline"}),
    "refine, short episodes": ("placerl/PlacementRefine-v1", {"moves": 5}),
    "sanity": ("placerl/SanityBranches-v1", {}),
}


def make(env_id, **kwargs):
    if "Sanity" not in env_id:
        kwargs = {"graph": SMALL, "cluster": "gpu4_pcie", **kwargs}
    return gym.make(env_id, **kwargs)


def trajectory(env, seed, actions):
    """Everything an agent sees in one episode, as plain comparable values."""
    obs, info = env.reset(seed=seed)
    seen = [(obs, None, info)]
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        seen.append((obs, reward, info))
        if terminated or truncated:
            break
    return seen


def assert_same(a, b):
    assert len(a) == len(b)
    for (obs_a, reward_a, info_a), (obs_b, reward_b, info_b) in zip(a, b, strict=True):
        assert reward_a == reward_b
        for key in obs_a:
            np.testing.assert_array_equal(obs_a[key], obs_b[key])
        assert info_a.keys() == info_b.keys()
        for key in info_a:
            np.testing.assert_array_equal(info_a[key], info_b[key])


def actions_for(env, seed):
    rng = np.random.default_rng(seed)
    return [int(a) for a in rng.integers(env.action_space.n, size=200)]


@pytest.mark.parametrize("mode", MODES)
def test_two_envs_with_the_same_seeds_and_actions_agree(mode):
    env_id, kwargs = MODES[mode]
    a, b = make(env_id, **kwargs), make(env_id, **kwargs)
    for seed in (0, 5, 0):
        actions = actions_for(a, seed)
        assert_same(trajectory(a, seed, actions), trajectory(b, seed, actions))


@pytest.mark.parametrize("mode", MODES)
def test_a_reset_seed_replays_its_episode_after_other_episodes(mode):
    env_id, kwargs = MODES[mode]
    env = make(env_id, **kwargs)
    actions = actions_for(env, 1)
    first = trajectory(env, 7, actions)
    for seed in (1, 2, 3):  # other episodes, some better, some worse
        trajectory(env, seed, actions_for(env, seed))
    env.reset()  # and an unseeded one
    assert_same(first, trajectory(env, 7, actions))


def test_refine_starts_from_the_placement_given_in_the_reset_options():
    env = make("placerl/PlacementRefine-v1")
    start = np.arange(12) % 4
    env.reset(seed=0, options={"init": start})
    np.testing.assert_array_equal(env.unwrapped.placement, start)
    env.reset(seed=0, options={"init": {0: start[::-1].copy()}})  # by graph index
    np.testing.assert_array_equal(env.unwrapped.placement, start[::-1])
    two = make("placerl/PlacementRefine-v1", graph=[SMALL, "synthetic:chain?n=6"])
    two.reset(seed=0, options={"graph": 0, "init": {1: np.zeros(6, int)}})  # graph 1's only
    single = reference(SMALL, "gpu4_pcie").placement
    np.testing.assert_array_equal(two.unwrapped.placement, single)  # graph 0: its default


def test_reset_options_pick_the_graph():
    env = make("placerl/Placement-v1", graph=GRAPHS)
    for index in (2, 0, 1):
        _, info = env.reset(seed=0, options={"graph": index})
        assert (
            info["graph_index"] == index
            and env.unwrapped.case.graph.num_nodes == [12, 6, 32][index]
        )


def test_start_from_best_starts_each_episode_from_the_best_placement_so_far():
    env = StartFromBest(make("placerl/PlacementRefine-v1", init="uniform"))
    _, info = env.reset(seed=0)
    best = info["best_runtime"]
    rng = np.random.default_rng(0)
    for _ in range(3):
        done = False
        while not done:
            _, _, done, _, info = env.step(int(rng.integers(4)))
            assert info["best_runtime"] <= best
            best = info["best_runtime"]
        runtime, placement = env.best_placement()
        assert runtime == best
        _, info = env.reset(seed=0)  # the same seed, yet it starts from the best so far
        np.testing.assert_array_equal(env.unwrapped.placement, placement)
        assert info["runtime"] == pytest.approx(best)
    plain = make("placerl/PlacementRefine-v1", init="uniform")
    plain.reset(seed=0)
    assert not np.array_equal(plain.unwrapped.placement, placement)  # the wrapper did it
    assert env.best_placement(graph_index=3) is None


def test_two_start_from_best_envs_with_the_same_seeds_and_actions_agree():
    a, b = (StartFromBest(make("placerl/PlacementRefine-v1", init="uniform")) for _ in "ab")
    for seed in (0, 1, 0, 2):  # the history is the same, so the starts are the same
        actions = actions_for(a, seed)
        assert_same(trajectory(a, seed, actions), trajectory(b, seed, actions))


REPLAY = """
import hashlib, sys
import os
import subprocess
import sys

import gymnasium as gym, numpy as np
import placerl

digest = hashlib.sha256()
for env_id, kwargs in [("placerl/Placement-v1", {}), ("placerl/PlacementRefine-v1",
                       {"init": "uniform", "reference": "heft"})]:
    env = gym.make(env_id, graph="synthetic:layered?n=12&seed=1", cluster="gpu4_pcie", **kwargs)
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=4)
    for _ in range(30):
        obs, reward, done, _, info = env.step(int(rng.integers(4)))
        digest.update(obs["nodes"].tobytes() + np.float64(reward).tobytes())
        if done:
            break
    digest.update(np.asarray(info["placement"]).tobytes())
print(digest.hexdigest())
"""


def test_processes_with_their_own_caches_replay_the_same_episodes(tmp_path):
    runs = []
    for name in ("one", "two"):
        env = {**os.environ, "PLACERL_CACHE": str(tmp_path / name)}
        done = subprocess.run(
            [sys.executable, "-c", REPLAY], env=env, capture_output=True, text=True, check=True
        )
        runs.append(done.stdout.strip())
    assert runs[0] == runs[1] and len(runs[0]) == 64
