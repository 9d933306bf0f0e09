"""placerl/Parallelize-v1: checkers, determinism, the strategy it builds, bad input, learning."""

import re

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env
from torch import nn

import placerl  # registers the ids
from placerl.agents import make_agent
from placerl.baselines import solve
from placerl.envs import ParallelizeEnv
from placerl.errors import ConfigError, EpisodeError, PlacementError
from placerl.graph.folding import fold_repeats
from placerl.graph.passes import with_backward
from placerl.graph.torch_import import from_module
from tests.envs import assert_clone_resumes

ID = "placerl/Parallelize-v1"
TINY = "zoo:transformer?variant=bert_tiny&training=true"


def rollout(env, seed, pick=None):
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    trace, rewards = [obs], []
    while True:
        mask = env.unwrapped.action_masks()
        action = pick(env) if pick else int(rng.choice(np.flatnonzero(mask)))
        obs, reward, terminated, truncated, info = env.step(action)
        trace.append(obs)
        rewards.append(reward)
        if terminated or truncated:
            return trace, rewards, info


@pytest.mark.parametrize("order", ["topo", "bfs", "reverse_topo", "random"])
@pytest.mark.parametrize("fold", [False, True])
def test_gymnasium_and_sb3_checkers_pass(order, fold):
    env = gym.make(ID, graph=TINY, order=order, fold=fold)
    gym_check_env(env.unwrapped, skip_render_check=True)
    sb3_check_env(env.unwrapped, warn=False)


def test_same_seed_same_episode_and_pickles_mid_episode():
    a, b = rollout(gym.make(ID, graph=TINY), 5), rollout(gym.make(ID, graph=TINY), 5)
    assert a[1] == b[1]
    np.testing.assert_array_equal(a[2]["placement"], b[2]["placement"])
    env = gym.make(ID, graph=TINY)
    env.reset(seed=0)
    env.step(1)
    assert_clone_resumes(env, (0, 1, 2))


def test_an_episode_decides_every_variable_once_and_scores_its_strategy():
    env = ParallelizeEnv(TINY)
    space = env.cost.space
    assert sorted(env.sequence.tolist()) == list(range(space.num_variables))
    _, rewards, info = rollout(env, 0)
    strategy = info["placement"]
    assert space.check(strategy) is not None  # a valid strategy, followers included
    assert info["runtime"] == env.model.evaluate(strategy).runtime
    assert rewards[-1] == pytest.approx(np.log(env.reference_runtime / info["runtime"]))
    assert all(r == 0.0 for r in rewards[:-1])


def test_slots_describe_the_current_variables_configurations():
    env = ParallelizeEnv(TINY)
    obs, info = env.reset(seed=0)
    i = int(env.sequence[0])
    count = len(env.cost.space.configs[i])
    assert info["action_mask"].sum() == count == obs["devices"][:, -1].sum()
    assert obs["current"][env._row_of[env.cost.space.variables[i]]] == 1.0
    assert obs["devices"][0, :6].sum() == 0.0  # slot 0: unsplit


def test_dense_rewards_add_up_to_the_improvement_over_the_reference():
    env = ParallelizeEnv(TINY, reward="normalized_delta", reference="megatron")
    _, rewards, info = rollout(env, 3)
    expected = (env.reference_runtime - info["runtime"]) / env.reference_runtime
    assert sum(rewards) == pytest.approx(expected)


def test_folding_visits_one_copy_of_each_block_and_ties_the_others():
    env = ParallelizeEnv(TINY, fold=True)
    plain = ParallelizeEnv(TINY)
    assert len(env.sequence) < len(plain.sequence)
    _, _, info = rollout(env, 1)
    copies = next(iter(fold_repeats(env.graph).blocks.values()))
    for copy in copies[1:]:
        np.testing.assert_array_equal(info["placement"][copy], info["placement"][copies[0]])


def test_a_masked_slot_becomes_the_nearest_valid_one_or_is_refused_by_name():
    env = ParallelizeEnv(TINY)
    env.reset(seed=0)
    i = int(env.sequence[0])
    count = len(env.cost.space.configs[i])
    assert count < env.num_slots - 2  # slot ``count`` is masked and nearer C - 1 than 0
    _, _, _, _, info = env.step(count)
    assert env.chosen[i] == count - 1 == info["action_taken"] and info["invalid_action"] == count
    strict = ParallelizeEnv(TINY, invalid_action="raise")
    strict.reset(seed=0)
    v = int(strict.cost.space.variables[i])
    message = (
        f"variable {i} (node {v} ({strict.graph.names[v]!r})): slot {count} is past its "
        f"{count} configurations; allowed: 0..{count - 1}"
    )
    with pytest.raises(PlacementError, match=re.escape(message)):
        strict.step(count)


# ------------------------------------------------------------------------- bad input
def test_bad_actions_and_steps_outside_an_episode_are_refused():
    env = ParallelizeEnv(TINY)
    with pytest.raises(EpisodeError, match="outside an episode"):
        env.step(0)
    env.reset(seed=0)
    with pytest.raises(PlacementError, match=r"integer slot index in 0\.\.13, got 1\.5"):
        env.step(1.5)
    with pytest.raises(PlacementError, match=r"action 14 is not a slot in 0\.\.13"):
        env.step(14)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"reference": "heft"}, "reference must be one of .*data_parallel.*got 'heft'"),
        ({"fold": "yes"}, "fold must be True or False, got 'yes'"),
        ({"slots": 3}, r"slots=3 is fewer than the most configurations of a variable \(14\)"),
        ({"order": "sideways"}, "unknown traversal order 'sideways'"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        ParallelizeEnv(TINY, **kwargs)


def test_a_graph_without_op_shapes_is_refused():
    with pytest.raises(placerl.errors.GraphError, match="no recorded shape"):
        ParallelizeEnv("synthetic:layered?n=10&seed=0")


# --------------------------------------------------------------------------- learning
@pytest.mark.parametrize("extractor", ["gnn", "lstm"])
def test_gnn_and_lstm_policies_learn_a_near_optimal_strategy(extractor):
    mlp = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64))
    graph = with_backward(from_module(mlp, (torch.randn(32, 64),), training=True))
    env = ParallelizeEnv(graph, "gpu4_pcie")
    optimum = solve("pase_dp", graph, "gpu4_pcie", "strategy").runtime
    assert env.reference_runtime > 3 * optimum  # data parallelism all-reduces big gradients
    model = make_agent(
        "maskable_ppo", env, extractor, seed=0, n_steps=64, batch_size=32, learning_rate=3e-3
    )
    model.learn(1500)
    obs, _ = env.reset(seed=0)
    done = False
    while not done:
        action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
        obs, _, done, _, info = env.step(action)
    assert info["runtime"] <= 1.1 * optimum


def test_parallelize_holds_one_graph():
    env = ParallelizeEnv(TINY)
    with pytest.raises(ConfigError, match="reset option 'graph' is not taken"):
        env.reset(options={"graph": 1})


def test_the_placement_envs_refuse_the_strategy_objective():
    message = "objective 'strategy' chooses a configuration per node, not a device: use placerl/"
    with pytest.raises(ConfigError, match=message):
        gym.make("placerl/Placement-v1", graph=TINY, objective="strategy")
