"""Behaviour cloning's demonstrations: placer experts, the ``best_move`` state expert, and the
weights that balance keeping a node against moving it."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from placerl.agents.imitation import balanced_weights, expert_episodes
from placerl.baselines import solve
from placerl.envs import PlacementEnv, PlacementRefineEnv

GRAPH, CLUSTER = "synthetic:layered?n=12&seed=1", "placeto?n_devices=3"


@given(st.lists(st.booleans(), min_size=1, max_size=50))
def test_keeps_and_moves_weigh_equal_shares(flags):
    keeps = np.array(flags)
    weights = balanced_weights(keeps)
    assert weights.mean() == pytest.approx(1.0)
    if keeps.all() or not keeps.any():
        assert (weights == 1).all()
    else:
        assert weights[keeps].sum() == pytest.approx(weights[~keeps].sum())


def test_best_move_demonstrations_are_one_improvement_step_per_node():
    env = PlacementRefineEnv(graph=[GRAPH, "synthetic:layered?n=12&seed=2"], cluster=CLUSTER,
                             initial="m_topo", undo_worse=True)  # fmt: skip
    demos = expert_episodes(env, "best_move")
    assert len(demos.actions) == 24  # a pass over each graph's 12 nodes
    replay = PlacementRefineEnv(graph=[GRAPH, "synthetic:layered?n=12&seed=2"], cluster=CLUSTER,
                                initial="m_topo")  # fmt: skip
    keeps, starts, ends = [], [], []
    for g in range(2):
        _, info = replay.reset(seed=0, options={"graph": g})
        starts.append(info["runtime"])
        for t in range(12):
            action = replay.best_move()
            assert demos.actions[12 * g + t] == action
            keeps.append(replay.keeps_placement(action))
            _, _, _, _, info = replay.step(action)
        ends.append(info["runtime"])
    assert demos.runtimes == pytest.approx(ends)
    assert all(e < s for e, s in zip(ends, starts, strict=True))  # m_topo leaves room to improve
    keeps = np.array(keeps)
    assert 0 < keeps.sum() < len(keeps)
    np.testing.assert_allclose(demos.weights, balanced_weights(keeps))


def test_placer_demonstrations_while_constructing_weigh_alike():
    demos = expert_episodes(PlacementEnv(GRAPH, CLUSTER), "heft")
    assert (demos.weights == 1).all() and len(demos.actions) == 12


def test_a_placer_expert_refining_another_start_is_balanced_too():
    env = PlacementRefineEnv(graph=GRAPH, cluster=CLUSTER, initial="single_device")
    demos = expert_episodes(env, "heft")
    heft = np.asarray(solve("heft", GRAPH, CLUSTER).placement)
    order = env.case.order
    np.testing.assert_array_equal(demos.actions, heft[order])
    keeps = heft[order] == 0  # the nodes HEFT leaves on the start's device
    assert 0 < keeps.sum() < len(keeps)
    np.testing.assert_allclose(demos.weights, balanced_weights(keeps))
