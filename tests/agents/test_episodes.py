"""Episodes of a policy: on the refine env, the best placement the episode passed through."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from placerl.agents import make_agent
from placerl.agents.episodes import (
    VisitedBest,
    greedy_score,
    rollout,
    sampled_rollouts,
    spread_graphs,
)
from placerl.baselines import solve
from placerl.envs import PlacementEnv, PlacementRefineEnv

GRAPH, CLUSTER = "synthetic:layered?n=16&seed=1", "placeto?n_devices=3"


def _untrained(env):
    torch.manual_seed(0)
    return make_agent("maskable_ppo", env, "mlp", n_steps=32, batch_size=32)


def test_a_refine_rollout_never_ends_worse_than_its_start():
    env = PlacementRefineEnv(GRAPH, CLUSTER, initial="heft")
    heft = solve("heft", GRAPH, CLUSTER)
    run = rollout(_untrained(env), env, graph=0, seed=0)
    end = env.placement  # where the untrained episode ended
    assert env.case.model.evaluate(end).runtime > 1.01 * heft.runtime
    assert run.runtime == pytest.approx(heft.runtime) and run.feasible
    np.testing.assert_array_equal(run.placement, heft.placement)
    assert env.case.model.evaluate(run.placement).runtime == pytest.approx(run.runtime)


def test_sampled_refine_episodes_keep_their_best_placement_too():
    env = PlacementRefineEnv(GRAPH, CLUSTER, initial="heft")
    runs, _ = sampled_rollouts(_untrained(env), env, 4, seed=0)
    heft = solve("heft", GRAPH, CLUSTER).runtime
    assert len(runs) == 4 and all(r.runtime <= heft * (1 + 1e-12) for r in runs)


@pytest.mark.parametrize("algo", ["maskable_ppo", "ppo"])
def test_a_greedy_rollout_takes_the_action_predict_gives(algo):
    """The greedy step reads the largest allowed logit instead of building the distribution:
    the action SB3's ``predict`` gives, step for step, ties included (the untrained
    device-equivariant head ties identical devices) and where memory masks devices."""
    tight = "placeto?n_devices=3&memory=2e7"  # devices fill up: masked devices on the way
    env = PlacementEnv(GRAPH, tight, memory="mask" if algo == "maskable_ppo" else "penalty")
    torch.manual_seed(1)
    model = make_agent(algo, env, "gnn", n_steps=32, batch_size=32)
    run = rollout(model, env, graph=0, seed=0)
    obs, _ = env.reset(seed=0, options={"graph": 0})
    done, masked = False, 0
    while not done:
        extra = {"action_masks": env.action_masks()} if algo == "maskable_ppo" else {}
        masked += int(not env.action_masks().all())
        action, _ = model.predict(obs, deterministic=True, **extra)
        obs, _, done, _, _ = env.step(int(action))
    np.testing.assert_array_equal(run.placement, env.placement)
    assert masked > 0 or algo == "ppo"


def test_other_envs_end_where_the_episode_ends():
    env = PlacementEnv(GRAPH, CLUSTER)
    run = rollout(_untrained(env), env, graph=0, seed=0)
    np.testing.assert_array_equal(run.placement, env.placement)
    visited = VisitedBest(env)
    visited.see({"feasible": True, "runtime": 0.0})  # ignored: not a refine env
    assert visited.outcome(run) is run


@given(count=st.integers(1, 400), chosen=st.integers(0, 500))
def test_spread_graphs_picks_distinct_graphs_from_first_to_last(count, chosen):
    picked = spread_graphs(count, chosen)
    expected = count if chosen == 0 or chosen >= count else chosen
    assert len(picked) == expected and len(set(picked.tolist())) == expected
    assert picked[0] == 0 and picked[-1] == (count - 1 if expected > 1 else 0)
    assert np.all(np.diff(picked) > 0)
    if 1 < expected < count:  # evenly: the gaps differ by at most one
        assert np.ptp(np.diff(picked)) <= 1


def test_greedy_score_on_a_subset_runs_and_averages_those_graphs_only():
    graphs = [f"synthetic:layered?n=10&seed={s}" for s in range(3)]
    env = PlacementEnv(graphs, CLUSTER)
    model = _untrained(env)
    every, score = greedy_score(model, env)
    some, subset = greedy_score(model, env, [0, 2])
    assert [r.graph_index for r in some] == [0, 2]
    assert [r.runtime for r in some] == [every[0].runtime, every[2].runtime]
    assert subset == pytest.approx(np.mean([r.runtime / r.reference_runtime for r in some]))
    assert score == pytest.approx(np.mean([r.runtime / r.reference_runtime for r in every]))
