"""``invalid_action``: what every env does with an action its mask rules out.

``nearest`` and ``penalize`` replace it by the nearest allowed action (smallest cyclic index
distance, ties to the lower index; ``penalize`` also costs ``INVALID_ACTION_PENALTY``), ``raise``
refuses it naming the node; an allowed action gives the same step under all three.
"""

import functools
import itertools
import pickle
import re

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import placerl  # noqa: F401  (registers the ids)
from placerl._env_ids import ENV_IDS, ENV_KINDS, env_class
from placerl.envs import INVALID_ACTION_PENALTY, INVALID_ACTIONS, ParallelizeEnv
from placerl.envs.invalid import nearest_allowed
from placerl.errors import ConfigError, PlacementError
from tests.envs import masked_problem

#: Every MDP: the placement kinds (the sanity and measured ids are their classes) and
#: Parallelize-v1.
KINDS = [*ENV_KINDS, "parallelize"]
TINY = "zoo:transformer?variant=bert_tiny&training=true"
#: Invalid actions checked per test (each clones the env twice: Parallelize-v1's is large).
CHECKS = 24
REASONS = (
    "cannot run",
    "cannot hold",
    "is not a device",
    "is not a ready node that fits",
    "is past its",
)


def build(kind, invalid_action="nearest"):
    """An env of ``kind`` on a problem where its masks rule actions out."""
    if kind == "parallelize":
        return ParallelizeEnv(TINY, invalid_action=invalid_action)
    graph, cluster = masked_problem()
    return env_class(kind)(graph=graph, cluster=cluster, invalid_action=invalid_action)


@functools.lru_cache
def built(kind, invalid_action):
    """:func:`build`, once per process (the property test resets it per example)."""
    return build(kind, invalid_action)


def nearest(action, mask):
    """The documented rule, written out: the allowed index of smallest cyclic distance to
    ``action`` over ``len(mask)`` choices, the lower index on a tie."""
    n = len(mask)
    return int(
        min(np.flatnonzero(mask), key=lambda i: (min(abs(i - action), n - abs(i - action)), i))
    )


def deciding_rows(env):
    """The rows whose choice counts in a ``MultiDiscrete`` action (the others are ignored)."""
    return env._used_groups() if getattr(env, "grouped", False) else env.rows


def allowed_action(env, rng):
    """A uniformly random action among those the mask allows."""
    mask = env.action_masks()
    if isinstance(env.action_space, gym.spaces.MultiDiscrete):
        rows = mask.reshape(len(env.action_space.nvec), -1)
        return np.array([rng.choice(np.flatnonzero(row)) for row in rows])
    return int(rng.choice(np.flatnonzero(mask)))


def invalid_actions(env, rng):
    """Up to three actions the mask rules out in ``env``'s state, each with the action
    ``nearest`` takes instead (one or every deciding row replaced, in ``MultiDiscrete``)."""
    mask = env.action_masks()
    if isinstance(env.action_space, gym.spaces.Discrete):
        bad = rng.permutation(np.flatnonzero(~mask))[:3]
        return [(int(a), nearest(int(a), mask)) for a in bad]
    rows = mask.reshape(len(env.action_space.nvec), -1)
    valid = allowed_action(env, rng)
    out, every, every_taken = [], valid.copy(), valid.copy()
    for row in deciding_rows(env):
        bad = np.flatnonzero(~rows[row])
        if len(bad):
            action, taken = valid.copy(), valid.copy()
            action[row] = every[row] = rng.choice(bad)
            taken[row] = every_taken[row] = nearest(action[row], rows[row])
            out.append((action, taken))
    return [*out[:2], (every, every_taken)] if out else []


def clone(env):
    return pickle.loads(pickle.dumps(env))


def assert_same_step(a, b, reward_gap=0.0):
    """Two steps' outcomes are equal, but for ``a``'s reward being ``reward_gap`` lower and
    its invalid-action info."""
    obs_a, reward_a, *ends_a, info_a = a
    obs_b, reward_b, *ends_b, info_b = b
    for key in obs_b:
        np.testing.assert_array_equal(obs_a[key], obs_b[key], err_msg=key)
    assert reward_a == reward_b - reward_gap and ends_a == ends_b
    rest = {k: v for k, v in info_a.items() if k not in ("invalid_action", "action_taken")}
    np.testing.assert_equal(rest, info_b)


def states_with_invalid_actions(env, episodes=3):
    """Step episodes of ``env`` with allowed actions; yield ``(action, taken)`` for the
    actions the mask rules out in each state on the way (``taken``: what ``nearest`` takes)."""
    for seed in range(episodes):
        rng = np.random.default_rng(seed)
        env.reset(seed=seed)
        done = False
        while not done:
            yield from invalid_actions(env, rng)
            _, _, terminated, truncated, _ = env.step(allowed_action(env, rng))
            done = terminated or truncated


# ------------------------------------------------------------------------- the option
def test_nearest_is_the_smallest_cyclic_distance_ties_to_the_lower_index():
    mask = np.array([1, 0, 0, 0, 1, 0], dtype=bool)
    assert [nearest_allowed(a, mask) for a in range(6)] == [0, 0, 0, 4, 4, 0]  # 2: a tie
    wraps = np.array([0, 0, 0, 0, 0, 1, 0, 1], dtype=bool)
    assert nearest_allowed(0, wraps) == 7 and nearest_allowed(1, wraps) == 7  # 1 -> 7: 2 away
    assert nearest_allowed(6, wraps) == 5  # 5 and 7 both 1 away: the lower
    for action in range(8):
        assert nearest_allowed(action, wraps) == nearest(action, wraps)


@pytest.mark.parametrize("option", ["nearest", "penalize"])
@pytest.mark.parametrize("kind", KINDS)
def test_an_invalid_action_is_replaced_by_the_nearest_allowed_one(kind, option):
    """The step is exactly the nearest allowed action's, recorded in the info; ``penalize``
    also subtracts INVALID_ACTION_PENALTY from its reward."""
    env = build(kind, option)
    gap = INVALID_ACTION_PENALTY if option == "penalize" else 0.0
    checked = 0
    for action, taken in itertools.islice(states_with_invalid_actions(env), CHECKS):
        twin = clone(env)
        replaced, nearest_step = clone(env).step(action), twin.step(taken)
        assert_same_step(replaced, nearest_step, gap)
        info = replaced[-1]
        np.testing.assert_array_equal(info["invalid_action"], action)
        np.testing.assert_array_equal(info["action_taken"], taken)
        assert "invalid_action" not in nearest_step[-1] and "action_taken" not in nearest_step[-1]
        checked += 1
    assert checked >= 3


def test_the_penalty_is_one():
    assert INVALID_ACTION_PENALTY == 1.0


@pytest.mark.parametrize("kind", KINDS)
def test_raise_names_the_node_and_why_and_changes_nothing(kind):
    """Every action the mask rules out in an episode raises, naming a node by index and name
    (as the graph names it) and the reason; the env is left as it was."""
    env = build(kind, "raise")
    names = env.graph.names if kind == "parallelize" else env.graphs[0].names
    rng = np.random.default_rng(1)
    checked = 0
    for action, _ in itertools.islice(states_with_invalid_actions(env), CHECKS):
        probe, twin = clone(env), clone(env)
        with pytest.raises(PlacementError) as refused:
            probe.step(action)
        message = str(refused.value)
        named = re.findall(r"node (\d+) \('([^']*)'\)", message)
        assert named and all(names[int(v)] == name for v, name in named), message
        assert any(reason in message for reason in REASONS), message
        valid = allowed_action(twin, rng)
        assert_same_step(probe.step(valid), twin.step(valid))  # the refusal changed nothing
        checked += 1
    assert checked >= 3


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_allowed_actions_give_the_same_episode_under_every_option(kind, seed):
    """Property: whatever allowed actions an episode takes, the three options step it alike
    (what a masked algorithm sees does not depend on the option)."""
    envs = [built(kind, option) for option in INVALID_ACTIONS]
    starts = [env.reset(seed=seed) for env in envs]
    for obs, info in starts[1:]:
        assert_same_step((obs, 0.0, info), (starts[0][0], 0.0, starts[0][1]))
    rng = np.random.default_rng(seed)
    done = False
    while not done:
        action = allowed_action(envs[0], rng)
        steps = [env.step(action) for env in envs]
        for step in steps[1:]:
            assert_same_step(step, steps[0])
        assert "invalid_action" not in steps[0][-1]
        done = steps[0][2] or steps[0][3]


# ------------------------------------------------------------------- bad option values
@pytest.mark.parametrize("value", ["ignore", "Nearest", None, 1])
@pytest.mark.parametrize("env_id", [env_id for env_id, _, _ in ENV_IDS])
def test_an_unknown_option_value_is_refused_listing_the_allowed_ones(env_id, value):
    message = f"invalid_action must be one of raise, penalize, nearest, got {value!r}"
    with pytest.raises(ConfigError, match=re.escape(message)):
        gym.make(env_id, invalid_action=value)


@pytest.mark.parametrize("kind", KINDS)
def test_the_option_is_kept_in_the_settings(kind):
    assert build(kind, "penalize").settings()["invalid_action"] == "penalize"
    assert build(kind).settings()["invalid_action"] == "nearest"


def test_the_run_config_offers_the_same_values_and_default():
    """run_config keeps its own copy (it must not import the envs): the two must agree."""
    from placerl.envs.invalid import DEFAULT_INVALID_ACTION
    from placerl.run_config import INVALID_ACTIONS as CONFIG_VALUES
    from placerl.run_config import EnvGroup

    assert CONFIG_VALUES == INVALID_ACTIONS
    assert EnvGroup().invalid_action == DEFAULT_INVALID_ACTION == "nearest"
