"""``placerl/PlacementHierarchical-v1``: a group per node, then a device per group."""

import math
import re

import numpy as np
import pytest

import placerl  # noqa: F401  (registers the ids)
from placerl.baselines import place
from placerl.cluster import Cluster, Device, homogeneous
from placerl.envs.hierarchical import PlacementHierarchicalEnv
from placerl.errors import ConfigError, EpisodeError, PlacementError
from placerl.graph import CompGraph
from placerl.sim import simulate

SMALL, CLUSTER = "synthetic:layered?n=12&seed=1", "placeto?n_devices=3"


def test_a_group_step_then_a_place_step_places_every_node_by_its_group():
    env = PlacementHierarchicalEnv(graph=SMALL, cluster=CLUSTER, groups=4, max_nodes=16)
    obs, _ = env.reset(seed=0)
    assert env.action_space.nvec.tolist() == [4] * 16
    assert not obs["groups"].any() and not env.grouped
    groups = np.arange(16) % 4
    obs, reward, done, _, _ = env.step(groups)
    assert (reward, done, env.grouped) == (0.0, False, True)
    np.testing.assert_array_equal(obs["groups"][:12].argmax(axis=1), groups[:12])
    assert not obs["groups"][12:].any()  # padding rows have no group
    devices = np.array([2, 0, 1, 1] + [0] * 12)
    obs, reward, done, _, info = env.step(devices)
    placement = devices[groups[env.case.row_of]]  # each node on its group's device
    np.testing.assert_array_equal(info["placement"], placement)
    expected = simulate(env.graphs[0], placement, env.cluster).runtime
    assert done and info["runtime"] == pytest.approx(expected)
    assert reward == pytest.approx(math.log(env.case.reference_runtime / expected))
    with pytest.raises(EpisodeError, match="after the episode ended"):
        env.step(devices)


def test_masks_allow_the_groups_then_the_devices_of_the_groups_that_hold_nodes():
    env = PlacementHierarchicalEnv(graph=SMALL, cluster=CLUSTER, groups=4, max_nodes=16)
    env.reset(seed=0)
    mask = env.action_masks().reshape(16, 4)
    assert mask[:12].all() and mask[12:].tolist() == [[True, False, False, False]] * 4
    env.step(np.array([0, 2] * 6 + [0] * 4))  # groups 1 and 3 stay empty
    mask = env.action_masks().reshape(16, 4)
    assert mask[[0, 2]].tolist() == [[True, True, True, False]] * 2  # 3 devices, 4 choices
    assert mask[[1, 3]].tolist() == [[True, False, False, False]] * 2
    assert not mask[4:, 1:].any()


def test_a_colocation_group_follows_its_first_row():
    nodes = [
        {"name": "f", "cost": 1.0, "group": "g"},
        {"name": "x", "cost": 1.0},
        {"name": "b", "cost": 1.0, "group": "g"},
    ]
    env = PlacementHierarchicalEnv(
        graph=CompGraph(nodes, [("f", "x"), ("x", "b")]), cluster=homogeneous(2), groups=2
    )
    env.reset(seed=0)
    assert env.rows.tolist() == [0, 1]
    env.step(np.array([1, 0, 0]))  # row 2 (b) follows f into group 1 whatever it says
    _, _, _, _, info = env.step(np.array([0, 1, 0]))
    assert info["placement"].tolist() == [1, 0, 1]


def test_a_group_goes_only_where_every_node_of_it_runs():
    cluster = Cluster([Device("cpu", "cpu"), Device("gpu", "gpu")], bandwidth=1e10)
    nodes = [
        {"name": "a", "cost": 1.0},
        {"name": "b", "cost": 1.0, "costs": {"cpu": math.inf}},
        {"name": "c", "cost": 1.0},
    ]
    env = PlacementHierarchicalEnv(
        graph=CompGraph(nodes, [("a", "b"), ("b", "c")]),
        cluster=cluster,
        groups=2,
        invalid_action="raise",
    )
    env.reset(seed=0)
    env.step(np.array([0, 0, 1]))  # group 0 holds a and b (gpu only); group 1 holds c
    assert env.action_masks().reshape(3, 2)[:2].tolist() == [[False, True], [True, True]]
    with pytest.raises(
        PlacementError,
        match=re.escape("group 0: device 0 (cpu) cannot run its node 1 ('b'); allowed: [1]"),
    ):
        env.step(np.array([0, 0, 0]))
    _, _, _, _, info = env.step(np.array([1, 0, 0]))
    assert info["placement"].tolist() == [1, 1, 0]
    env.invalid_action = "penalize"  # the same choice, replaced: group 0 to the gpu
    env.reset(seed=0)
    env.step(np.array([0, 0, 1]))
    _, reward, _, _, info = env.step(np.array([0, 0, 0]))
    assert info["placement"].tolist() == [1, 1, 0] and info["action_taken"].tolist() == [1, 0, 0]
    assert reward == pytest.approx(math.log(env.case.reference_runtime / info["runtime"]) - 1.0)


def test_a_choice_past_the_devices_is_invalid_in_the_place_step():
    """With more groups than devices, choices D.. are in the space but name no device."""
    env = PlacementHierarchicalEnv(
        graph=SMALL, cluster=CLUSTER, groups=4, max_nodes=16, invalid_action="raise"
    )
    env.reset(seed=0)
    env.step(np.arange(16) % 4)
    first = int(env.case.order[0])  # row 0 is in group 0
    message = (
        f"group 0 (with node {first} ({env.graphs[0].names[first]!r})): 3 is not a "
        "device (the cluster has devices 0..2); allowed: [0, 1, 2]"
    )
    with pytest.raises(PlacementError, match=re.escape(message)):
        env.step(np.full(16, 3))
    with pytest.raises(PlacementError, match=re.escape("group 0: 4 is not a choice index in 0..3")):
        env.step(np.full(16, 4))


def test_the_expert_action_replays_the_expert_in_groups_of_consecutive_nodes():
    env = PlacementHierarchicalEnv(
        graph="synthetic:layered?n=40&seed=1", cluster="placeto?n_devices=4", groups=8
    )
    env.reset(seed=0)
    heft = np.asarray(place("heft", env.graphs[0], env.cluster))
    groups = env.expert_action(heft)
    env.step(groups)
    rows = env.rows
    assert set(groups[rows].tolist()) <= set(range(8))
    np.testing.assert_array_equal(groups[rows] // 2, heft[env.case.order[rows]])
    _, _, _, _, info = env.step(env.expert_action(heft))
    np.testing.assert_array_equal(info["placement"], heft)


BAD = [
    ({"groups": 2}, "groups must be an integer >= 3, got 2"),
    ({"groups": 13}, "groups must be at most max_nodes=12, got 13"),
    ({"groups": 4.0}, "groups must be an integer >= 3, got 4.0"),
]


@pytest.mark.parametrize(("change", "message"), BAD, ids=[m[:24] for _, m in BAD])
def test_bad_arguments_fail_at_construction(change, message):
    with pytest.raises(ConfigError, match=message):
        PlacementHierarchicalEnv(graph=SMALL, cluster=CLUSTER, **change)


def test_the_default_groups_fit_the_padding():
    assert PlacementHierarchicalEnv(graph=SMALL, cluster=CLUSTER).groups == 12
    big = PlacementHierarchicalEnv(graph="synthetic:layered?n=40&seed=1", cluster=CLUSTER)
    assert big.groups == 16


ACTIONS = [
    (np.zeros(12), r"action must be 12 integers \(one group per row\), .* dtype float64"),
    (np.zeros(5, dtype=np.int64), r"action must be 12 integers .* shape \(5,\)"),
    (np.full(12, 7), r"row 0, node \d+ \('layer0/node\d'\): 7 is not a group index in 0\.\.3"),
    (np.full(12, -1), r"row 0, node \d+ \('layer0/node\d'\): -1 is not a group index"),
]


@pytest.mark.parametrize(("action", "message"), ACTIONS, ids=["float", "short", "big", "neg"])
def test_a_bad_group_action_names_the_row_and_node(action, message):
    env = PlacementHierarchicalEnv(graph=SMALL, cluster=CLUSTER, groups=4)
    env.reset(seed=0)
    with pytest.raises(PlacementError, match=message):
        env.step(action)


def test_the_settings_rebuild_the_groups():
    env = PlacementHierarchicalEnv(graph=SMALL, cluster=CLUSTER, groups=5)
    assert env.settings()["groups"] == 5 and env.settings()["env"] == "hierarchical"
