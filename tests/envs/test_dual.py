"""``placerl/PlacementDual-v1``: select a ready node, then place it (DOPPLER's MDP)."""

import math
import re

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import placerl  # noqa: F401  (registers the ids)
from placerl.baselines import place
from placerl.cluster import homogeneous, load_cluster
from placerl.envs import PlacementDualEnv
from placerl.errors import PlacementError
from placerl.graph import CompGraph, load_graph
from placerl.graph.orders import traversal_order
from placerl.sim import simulate

SMALL = "synthetic:layered?n=24&seed=3"


def training_graph(layers: int = 4) -> CompGraph:
    """A forward chain, its backward chain, and each layer's two nodes in one group: the
    groups feed each other both ways, so readiness by whole groups would deadlock."""
    nodes = [{"name": f"f{i}", "cost": 1.0, "group": f"l{i}"} for i in range(layers)]
    nodes += [
        {"name": f"b{i}", "cost": 2.0, "group": f"l{i}", "backward": True} for i in range(layers)
    ]
    edges = [(f"f{i}", f"f{i + 1}") for i in range(layers - 1)]
    edges += [(f"b{i + 1}", f"b{i}") for i in range(layers - 1)]
    edges += [(f"f{layers - 1}", f"b{layers - 1}")] + [(f"f{i}", f"b{i}") for i in range(layers)]
    return CompGraph(nodes, sorted(set(edges)))


def play(env: PlacementDualEnv, choose) -> tuple[list, dict, list[int]]:
    """Run an episode; returns the rewards, the last info and the selected nodes in order."""
    env.reset(seed=0)
    rewards, selected, done, info = [], [], False, {}
    while not done:
        obs = env._observation()
        if obs["current"].sum() == 0:
            action = choose(env, obs)
            selected.append(int(env.case.order[action]))
        else:
            action = choose(env, obs)
        _, reward, done, _, info = env.step(action)
        rewards.append(reward)
    return rewards, info, selected


def random_choice(seed: int):
    rng = np.random.default_rng(seed)
    return lambda env, obs: int(rng.choice(np.flatnonzero(env.action_masks())))


def test_two_steps_per_node_and_the_phases_show_in_the_observation():
    env = PlacementDualEnv(graph=SMALL, cluster="placeto?n_devices=3")
    obs, info = env.reset(seed=0)
    assert env.action_space.n == 24
    assert obs["current"].sum() == 0 and obs["ready"].sum() > 0 and not obs["devices"].any()
    np.testing.assert_array_equal(env.action_masks(), obs["ready"] > 0)
    row = int(np.flatnonzero(obs["ready"])[0])
    obs, reward, done, _, info = env.step(row)
    assert reward == 0.0 and not done and "runtime" not in info
    assert obs["current"][row] == 1 and obs["ready"].sum() == 0 and obs["devices"].any()
    assert env.action_masks()[:3].all() and not env.action_masks()[3:].any()
    steps = 1
    rng = np.random.default_rng(0)
    while not done:
        _, _, done, _, info = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        steps += 1
    assert steps == 2 * 24 and (info["placement"] >= 0).all()
    assert info["runtime"] == pytest.approx(
        simulate(env.graphs[0], info["placement"], env.cluster).runtime
    )


@pytest.mark.parametrize("graph", [SMALL, "training"])
def test_every_selected_node_has_its_producers_placed(graph):
    g = training_graph() if graph == "training" else load_graph(graph)
    env = PlacementDualEnv(graph=g, cluster=homogeneous(2))
    _, _, selected = play(env, random_choice(1))
    position = np.argsort(traversal_order(g, "topo"))
    placed = set()
    for v in selected:
        members = env.case.members[v]
        anchor = members[np.argmin(position[members])]
        assert set(g.arrays.src[g.arrays.dst == anchor].tolist()) <= placed
        placed |= set(members.tolist())
    assert placed == set(range(g.num_nodes))
    assert len(selected) == (4 if graph == "training" else g.num_nodes)  # one step per group


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(3, 30), seed=st.integers(0, 10_000), devices=st.integers(1, 4), fold=st.booleans()
)
def test_random_episodes_always_finish(n, seed, devices, fold):
    """Property: whatever the graph, groups and choices, some node stays ready until all
    are placed, and every node ends on a device."""
    env = PlacementDualEnv(
        graph=f"synthetic:layered?n={n}&seed={seed}", cluster=homogeneous(devices), fold=fold
    )
    _, info, selected = play(env, random_choice(seed))
    assert len(selected) == len(env.ready_tables.rows)
    assert (info["placement"] >= 0).all() and info["placement"].max() < devices


def test_random_episodes_finish_on_a_training_graph_with_groups():
    env = PlacementDualEnv(graph=training_graph(6), cluster=homogeneous(3))
    for seed in range(5):
        _, info, selected = play(env, random_choice(seed))
        assert len(selected) == 6 and (info["placement"] >= 0).all()
        assert info["placement"][:6].tolist() == info["placement"][6:].tolist()  # groups


def test_the_expert_replays_heft_in_heft_order():
    env = PlacementDualEnv(graph="synthetic:layered?n=40&seed=1", cluster="placeto?n_devices=4")
    heft = np.asarray(place("heft", env.graphs[0], env.cluster))
    _, info, selected = play(env, lambda e, obs: e.expert_action(heft))
    np.testing.assert_array_equal(info["placement"], heft)
    assert info["runtime"] == pytest.approx(simulate(env.graphs[0], heft, env.cluster).runtime)
    ranks = env.ready_tables.priority[env.ready_tables.unit_of_row[env.case.row_of[selected]]]
    assert ranks[0] == ranks.max()  # the critical path's head first


def test_dense_rewards_sum_to_the_final_improvement():
    env = PlacementDualEnv(graph=SMALL, cluster="placeto?n_devices=3", reward="normalized_delta")
    rewards, info, _ = play(env, random_choice(2))
    reference = env.case.reference_runtime
    assert sum(rewards) == pytest.approx((reference - info["runtime"]) / reference)
    assert all(r == 0.0 for r in rewards[::2])  # select steps earn nothing


def test_no_ready_node_that_fits_ends_the_episode_with_the_penalty():
    too_big = CompGraph(
        [
            {"name": "a", "cost": 1.0, "mem_bytes": 10.0},
            {"name": "b", "cost": 1.0, "mem_bytes": 10.0},
        ]
    )
    env = PlacementDualEnv(graph=too_big, cluster=homogeneous(1, memory=15.0))
    env.reset(seed=0)
    env.step(0)
    _, reward, done, _, info = env.step(0)
    assert done and info["infeasible"] is True
    assert reward == pytest.approx(math.log(1 / 3))


def test_registered_and_rebuilt_from_its_settings():
    env = gym.make("placerl/PlacementDual-v1", graph=SMALL, cluster="gpu4_pcie")
    assert isinstance(env.unwrapped, PlacementDualEnv)
    assert env.unwrapped.settings()["env"] == "dual"


# ---------------------------------------------------------------------------- bad input
@pytest.fixture
def env():
    env = PlacementDualEnv(
        graph="synthetic:layered?n=12&seed=1",
        cluster=load_cluster("gpu4_pcie"),
        invalid_action="raise",
    )
    env.reset(seed=0)
    return env


def test_a_node_that_is_not_ready_is_refused_by_name(env):
    waiting = int(np.flatnonzero(~env.action_masks()[:12])[-1])
    name = env.graphs[0].names[int(env.case.order[waiting])]
    with pytest.raises(PlacementError, match=rf"row {waiting} is not a ready node.*{name}.*waits"):
        env.step(waiting)


def test_a_placed_node_or_padding_is_refused(env):
    first = int(np.flatnonzero(env.action_masks())[0])
    env.step(first)
    env.step(0)
    with pytest.raises(PlacementError, match="is placed already"):
        env.step(first)
    padded = PlacementDualEnv(
        graph="synthetic:layered?n=12&seed=1", max_nodes=16, invalid_action="raise"
    )
    padded.reset(seed=0)
    with pytest.raises(PlacementError, match=r"row 14 .* 12 rows, 14 is padding"):
        padded.step(14)


def test_a_device_the_node_cannot_use_is_refused_by_name():
    too_big = CompGraph(
        [
            {"name": "a", "cost": 1.0, "mem_bytes": 10.0},
            {"name": "b", "cost": 1.0, "mem_bytes": 10.0},
        ]
    )
    env = PlacementDualEnv(
        graph=too_big, cluster=homogeneous(2, memory=15.0), invalid_action="raise"
    )
    env.reset(seed=0)
    env.step(0)
    env.step(0)
    env.step(1)
    message = (
        "node 1 ('b'): device 0 (gpu:0) cannot hold its group (10 bytes, 5 free); allowed: [1]"
    )
    with pytest.raises(PlacementError, match=re.escape(message)):
        env.step(0)


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (1.5, "action must be an integer row index in 0..11, got 1.5"),
        (True, "action must be an integer row"),
        (-1, "action -1 is not a row index in 0..11"),
        (12, "action 12 is not a row index in 0..11"),
    ],
)
def test_actions_that_are_not_rows_are_refused(env, action, message):
    with pytest.raises(PlacementError, match=message):
        env.step(action)


def test_a_place_step_action_past_the_devices_is_invalid_then_outside_the_space(env):
    """In a place step, actions 4..11 are in the ``Discrete(12)`` space but name no device:
    the mask rules them out (``invalid_action``); 12 is outside the space."""
    row = int(np.flatnonzero(env.action_masks())[0])
    env.step(row)
    v = int(env.case.order[row])
    message = (
        f"node {v} ({env.graphs[0].names[v]!r}): action 7 is not a device (the cluster "
        "has devices 0..3); allowed: [0, 1, 2, 3]"
    )
    with pytest.raises(PlacementError, match=re.escape(message)):
        env.step(7)
    with pytest.raises(PlacementError, match=r"action 12 is not a row or device index in 0\.\.11"):
        env.step(12)


def test_nearest_takes_the_nearest_ready_row_and_device():
    """The default: a row that is not ready goes to the nearest ready row, a device past the
    devices to the nearest device (cyclic index distance over the 12 actions)."""
    env = PlacementDualEnv(graph="synthetic:layered?n=12&seed=1", cluster="gpu4_pcie")
    env.reset(seed=0)
    ready = np.flatnonzero(env.action_masks())
    waiting = int(np.flatnonzero(~env.action_masks())[-1])
    gaps = np.abs(ready - waiting)
    expected = int(ready[np.argmin(np.minimum(gaps, 12 - gaps))])
    _, reward, _, _, info = env.step(waiting)
    assert (info["invalid_action"], info["action_taken"], reward) == (waiting, expected, 0.0)
    assert env._row == expected
    _, _, _, _, info = env.step(9)  # devices 0..3: 3 is 6 away, 0 is 3 away (cyclic)
    assert (info["invalid_action"], info["action_taken"]) == (9, 0)
    assert env.placement[env.case.order[expected]] == 0
