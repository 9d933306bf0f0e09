"""``placerl/PlacementOneShot-v1``: every node's device in one action (GDP's MDP)."""

import math
import re

import gymnasium as gym
import numpy as np
import pytest

import placerl  # noqa: F401  (registers the ids)
from placerl.baselines import place
from placerl.cluster import Cluster, Device, homogeneous
from placerl.envs import INVALID_ACTION_PENALTY, PlacementOneShotEnv
from placerl.errors import EpisodeError, PlacementError
from placerl.graph import CompGraph
from placerl.sim import simulate

SMALL = "synthetic:layered?n=12&seed=1"
CPU_GPU = Cluster([Device("cpu", "cpu"), Device("gpu", "gpu")], bandwidth=1e10)


def grouped_graph() -> CompGraph:
    nodes = [
        {"name": "f", "cost": 1.0, "group": "g"},
        {"name": "x", "cost": 1.0},
        {"name": "b", "cost": 1.0, "group": "g"},
    ]
    return CompGraph(nodes, [("f", "x"), ("x", "b")])


def test_one_step_places_every_node_and_scores_it():
    env = PlacementOneShotEnv(graph=SMALL, cluster="placeto?n_devices=3", max_nodes=16)
    obs, info = env.reset(seed=0)
    assert env.action_space.nvec.tolist() == [3] * 16
    assert env.action_masks().shape == (16 * 3,) and not obs["current"].any()
    action = np.arange(16) % 3
    obs, reward, done, _, info = env.step(action)
    placement = action[env.case.row_of]  # rows follow the order
    expected = simulate(env.graphs[0], placement, env.cluster).runtime
    assert done and info["runtime"] == pytest.approx(expected)
    np.testing.assert_array_equal(info["placement"], placement)
    assert reward == pytest.approx(math.log(env.case.reference_runtime / expected))
    assert obs["nodes"][:12, 6].all()  # every node placed
    with pytest.raises(EpisodeError, match="after the episode ended"):
        env.step(action)


def test_a_group_follows_its_first_row_and_its_other_rows_have_one_choice():
    env = PlacementOneShotEnv(graph=grouped_graph(), cluster=homogeneous(2))
    env.reset(seed=0)
    assert env.rows.tolist() == [0, 1]  # topo rows: f, x; b follows f
    assert env.action_masks().reshape(3, 2).tolist() == [[True, True], [True, True], [True, False]]
    _, _, _, _, info = env.step(np.array([1, 0, 0]))
    assert info["placement"].tolist() == [1, 0, 1]


def test_the_expert_action_replays_the_expert():
    env = PlacementOneShotEnv(graph="synthetic:layered?n=40&seed=1", cluster="placeto?n_devices=4")
    env.reset(seed=0)
    heft = np.asarray(place("heft", env.graphs[0], env.cluster))
    _, _, _, _, info = env.step(env.expert_action(heft))
    np.testing.assert_array_equal(info["placement"], heft)


def test_memory_overflow_is_scored_by_the_penalty():
    too_big = CompGraph(
        [
            {"name": "a", "cost": 1.0, "mem_bytes": 10.0},
            {"name": "b", "cost": 1.0, "mem_bytes": 10.0},
        ]
    )
    env = PlacementOneShotEnv(graph=too_big, cluster=homogeneous(2, memory=15.0))
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.array([0, 0]))
    assert info["feasible"] is False
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.array([0, 1]))
    assert info["feasible"] is True


def test_registered():
    env = gym.make("placerl/PlacementOneShot-v1", graph=SMALL, cluster="gpu4_pcie")
    assert env.unwrapped.settings()["env"] == "one_shot"


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (np.zeros(11, dtype=int), r"action must be 12 integers \(one device per row\), .* \(11,\)"),
        (np.zeros(12), "action must be 12 integers .* dtype float64"),
        (np.full(12, 4), r"row 0, node \d+ \('layer0/node\d'\): 4 is not a device index in 0\.\.3"),
        (np.full(12, -1), r"row 0, node \d+ \('layer0/node\d'\): -1 is not a device index"),
    ],
)
def test_actions_outside_the_space_are_refused_naming_the_node(action, message):
    env = PlacementOneShotEnv(graph=SMALL, cluster="gpu4_pcie")  # whatever invalid_action says
    env.reset(seed=0)
    with pytest.raises(PlacementError, match=message):
        env.step(action)


def gpu_only_graph() -> CompGraph:
    nodes = [{"name": "a", "cost": 1.0}, {"name": "b", "cost": 1.0, "costs": {"cpu": math.inf}}]
    return CompGraph(nodes, [("a", "b")])


def test_a_device_that_cannot_run_a_node_is_refused_naming_it():
    env = PlacementOneShotEnv(graph=gpu_only_graph(), cluster=CPU_GPU, invalid_action="raise")
    env.reset(seed=0)
    with pytest.raises(
        PlacementError,
        match=re.escape("row 1: node 1 ('b'): device 0 (cpu) cannot run it; allowed: [1]"),
    ):
        env.step(np.array([0, 0]))


@pytest.mark.parametrize("option", ["nearest", "penalize"])
def test_a_device_that_cannot_run_a_node_becomes_the_nearest_that_can(option):
    env = PlacementOneShotEnv(graph=gpu_only_graph(), cluster=CPU_GPU, invalid_action=option)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(np.array([0, 0]))
    assert info["invalid_action"].tolist() == [0, 0] and info["action_taken"].tolist() == [0, 1]
    assert info["placement"].tolist() == [0, 1] and info["feasible"]
    penalty = INVALID_ACTION_PENALTY if option == "penalize" else 0.0
    assert reward == pytest.approx(math.log(env.case.reference_runtime / info["runtime"]) - penalty)
