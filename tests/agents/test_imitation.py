"""Behaviour cloning's demonstrations: placer experts, the ``best_move`` state expert, the
weights that balance keeping a node against moving it, and DAgger's rounds."""

import copy
import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from placerl.agents import imitation, make_agent
from placerl.agents.episodes import playing, rollout
from placerl.agents.imitation import balanced_weights, behaviour_clone, expert_episodes
from placerl.baselines import solve
from placerl.envs import PlacementEnv, PlacementRefineEnv

GRAPH, CLUSTER = "synthetic:layered?n=12&seed=1", "placeto?n_devices=3"
TWO = [GRAPH, "synthetic:layered?n=12&seed=2"]


def refine_env(init: str = "m_topo") -> PlacementRefineEnv:
    return PlacementRefineEnv(graph=TWO, cluster=CLUSTER, init=init, undo_worse=True)


def untrained(env: PlacementRefineEnv):
    return make_agent("maskable_ppo", env, "gnn", seed=0, n_steps=32)


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
    env = PlacementRefineEnv(
        graph=[GRAPH, "synthetic:layered?n=12&seed=2"],
        cluster=CLUSTER,
        init="m_topo",
        undo_worse=True,
    )
    demos = expert_episodes(env, "best_move")
    assert len(demos.actions) == 24  # a pass over each graph's 12 nodes
    replay = PlacementRefineEnv(
        graph=[GRAPH, "synthetic:layered?n=12&seed=2"], cluster=CLUSTER, init="m_topo"
    )
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
    env = PlacementRefineEnv(graph=GRAPH, cluster=CLUSTER, init="single_device")
    demos = expert_episodes(env, "heft")
    heft = np.asarray(solve("heft", GRAPH, CLUSTER).placement)
    order = env.case.order
    np.testing.assert_array_equal(demos.actions, heft[order])
    keeps = heft[order] == 0  # the nodes HEFT leaves on the start's device
    assert 0 < keeps.sum() < len(keeps)
    np.testing.assert_allclose(demos.weights, balanced_weights(keeps))


def test_dagger_samples_are_the_policys_states_labelled_by_the_expert():
    env = refine_env()
    model = untrained(env)
    demos = expert_episodes(env, "best_move", model)
    greedy = [rollout(model, env, graph=g, seed=0).runtime for g in range(2)]
    assert demos.runtimes == pytest.approx(greedy)  # the policy played, greedily
    replay, differs = refine_env(), 0
    for g in range(2):
        obs, _ = replay.reset(seed=0, options={"graph": g})
        with playing(model) as act:
            for t in range(12):
                label, played = replay.best_move(), act(obs, replay, True)
                assert demos.actions[12 * g + t] == label
                np.testing.assert_array_equal(demos.observations["nodes"][12 * g + t], obs["nodes"])
                differs += label != played
                obs, *_ = replay.step(played)
    assert differs > 0  # the untrained policy strays from the expert: other states


def test_demonstrations_add_up_with_weights_balanced_over_both():
    first = expert_episodes(refine_env(), "best_move")
    second = expert_episodes(refine_env("single_device"), "best_move")
    both = first + second
    np.testing.assert_array_equal(both.actions, np.concatenate([first.actions, second.actions]))
    for key, rows in both.observations.items():
        np.testing.assert_array_equal(
            rows, np.concatenate([first.observations[key], second.observations[key]])
        )
    np.testing.assert_array_equal(both.returns, np.concatenate([first.returns, second.returns]))
    np.testing.assert_array_equal(both.masks, np.concatenate([first.masks, second.masks]))
    np.testing.assert_allclose(
        both.weights, balanced_weights(np.concatenate([first.keeps, second.keeps]))
    )
    assert both.runtimes == first.runtimes + second.runtimes


def test_without_rounds_cloning_fits_the_experts_episodes_once():
    env = refine_env()
    model = untrained(env)
    report = behaviour_clone(model, env, "best_move", epochs=2)
    assert (report.samples, report.rounds, report.kept_round) == (24, 0, 0)
    assert report.round_runtimes == (report.policy_runtime,)
    greedy = np.mean([rollout(model, env, graph=g, seed=0).runtime for g in range(2)])
    assert report.policy_runtime == pytest.approx(greedy)  # the fit's own greedy episodes


def test_dagger_rounds_add_the_clones_states_and_keep_the_fastest_weights():
    env = refine_env()
    model = untrained(env)
    report = behaviour_clone(model, env, "best_move", epochs=3, rounds=2)
    assert report.samples == 3 * 24  # the expert's episodes, then the clone's in each round
    assert len(report.round_runtimes) == 3
    assert report.kept_round == int(np.argmin(report.round_runtimes))
    assert report.policy_runtime == min(report.round_runtimes)
    kept = np.mean([rollout(model, env, graph=g, seed=0).runtime for g in range(2)])
    assert kept == pytest.approx(report.policy_runtime)


def test_dagger_restores_an_earlier_fit_when_the_last_is_slower(monkeypatch):
    """The last fit is scored by ``rollout`` (made to report it slowest here); the earlier
    ones by the episodes they played in the next round."""
    env = refine_env()
    model = untrained(env)
    slowest = SimpleNamespace(runtime=np.inf)
    monkeypatch.setattr(imitation, "rollout", lambda *args, **kwargs: slowest)
    report = behaviour_clone(model, env, "best_move", epochs=3, rounds=2)
    assert report.round_runtimes[-1] == np.inf and report.kept_round < 2
    kept = np.mean([rollout(model, env, graph=g, seed=0).runtime for g in range(2)])
    assert kept == pytest.approx(report.round_runtimes[report.kept_round])


def test_dagger_restores_the_first_fit_when_every_later_one_is_slower(monkeypatch):
    env = refine_env()
    model = untrained(env)
    expert_episodes_of = imitation.expert_episodes
    first_fit = {}

    def episodes(env, expert, model=None):  # the second fit's episodes made slowest
        played = expert_episodes_of(env, expert, model)
        if model is not None and not first_fit:
            first_fit.update(copy.deepcopy(model.policy.state_dict()))
            return played
        return (
            played
            if model is None
            else dataclasses.replace(played, runtimes=[np.inf] * len(played.runtimes))
        )

    monkeypatch.setattr(imitation, "expert_episodes", episodes)
    monkeypatch.setattr(
        imitation, "rollout", lambda *args, **kwargs: SimpleNamespace(runtime=np.inf)
    )
    report = behaviour_clone(model, env, "best_move", epochs=3, rounds=2)
    assert report.kept_round == 0 and report.round_runtimes[1:] == (np.inf, np.inf)
    kept = model.policy.state_dict()
    assert kept.keys() == first_fit.keys()
    for name, tensor in first_fit.items():
        assert torch.equal(kept[name], tensor), name
