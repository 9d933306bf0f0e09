"""Episodes of a policy: on the refine env, the best placement the episode passed through."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from sb3_contrib.common.maskable.distributions import MaskableCategoricalDistribution
from stable_baselines3.common.distributions import CategoricalDistribution

from placerl.agents import make_agent
from placerl.agents.episodes import (
    GreedyEpisodes,
    VisitedBest,
    _most_likely,
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
    env = PlacementRefineEnv(GRAPH, CLUSTER, init="heft")
    heft = solve("heft", GRAPH, CLUSTER)
    run = rollout(_untrained(env), env, graph=0, seed=0)
    end = env.placement  # where the untrained episode ended
    assert env.case.model.evaluate(end).runtime > 1.01 * heft.runtime
    assert run.runtime == pytest.approx(heft.runtime) and run.feasible
    np.testing.assert_array_equal(run.placement, heft.placement)
    assert env.case.model.evaluate(run.placement).runtime == pytest.approx(run.runtime)


def test_sampled_refine_episodes_keep_their_best_placement_too():
    env = PlacementRefineEnv(GRAPH, CLUSTER, init="heft")
    runs, _ = sampled_rollouts(_untrained(env), env, 4, seed=0)
    heft = solve("heft", GRAPH, CLUSTER).runtime
    assert len(runs) == 4 and all(r.runtime <= heft * (1 + 1e-12) for r in runs)


_CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.mark.parametrize(
    ("algo", "device"),
    [
        ("maskable_ppo", "cpu"),
        ("ppo", "cpu"),
        pytest.param("maskable_ppo", "cuda", marks=_CUDA),
        pytest.param("ppo", "cuda", marks=_CUDA),
    ],
)
def test_a_greedy_rollout_takes_the_action_predict_gives(algo, device):
    """The greedy step reads the largest allowed logit instead of building the distribution:
    the action SB3's ``predict`` gives, step for step, ties included (the untrained
    device-equivariant head ties identical devices) and where memory masks devices; with the
    policy on a GPU too (observations go to its device, logits come back)."""
    tight = "placeto?n_devices=3&memory=2e7"  # devices fill up: masked devices on the way
    env = PlacementEnv(GRAPH, tight, memory="mask" if algo == "maskable_ppo" else "penalty")
    torch.manual_seed(1)
    model = make_agent(algo, env, "gnn", n_steps=32, batch_size=32, device=device)
    assert model.policy.device.type == device
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


class _Logits:
    """A stand-in policy whose features are its logits."""

    action_net = staticmethod(lambda latent: latent)
    mlp_extractor = SimpleNamespace(forward_actor=lambda features: features)


def _mode(logits, masks):
    """sb3's greedy action: the mode of the (masked) categorical it builds."""
    logits = torch.tensor([logits], dtype=torch.float32)
    if masks is None:
        return int(CategoricalDistribution(logits.shape[1]).proba_distribution(logits).mode())
    distribution = MaskableCategoricalDistribution(logits.shape[1]).proba_distribution(logits)
    distribution.apply_masking(np.array([masks]))
    return int(distribution.mode())


@pytest.mark.parametrize(
    ("logits", "masks"),
    [
        ([-2e-5, 0.0, 1000.0], [True, True, False]),  # rounds into a tie beside a large masked one
        ([0.5, 0.5, 0.1], None),  # an exact tie
        ([0.1, 0.3, 0.3 + 3e-8, 0.2], None),  # a later logit one rounding above
        ([4.0, 0.3, 0.3, 0.2], [False, True, True, True]),
    ],
)
def test_the_greedy_action_is_the_categoricals_mode_ties_included(logits, masks):
    features = torch.tensor([logits], dtype=torch.float32)
    assert _most_likely(_Logits(), features, masks and np.array(masks)) == _mode(logits, masks)


@given(
    logits=st.lists(st.floats(-30, 30, width=32), min_size=2, max_size=6),
    ulps=st.integers(0, 4),
    masked=st.lists(st.booleans(), min_size=6, max_size=6),
)
def test_the_greedy_action_is_the_mode_also_among_near_ties(logits, ulps, masked):
    """Any logits with the largest repeated a few roundings apart, any masks."""
    top = np.float32(max(logits))
    logits = [*logits, float(top), float(np.nextafter(top, np.float32(np.inf)) if ulps else top)]
    for _ in range(ulps - 1):
        logits[-1] = float(np.nextafter(np.float32(logits[-1]), np.float32(np.inf)))
    masks = np.array((masked * 2)[: len(logits)])
    masks[-1] |= not masks.any()
    features = torch.tensor([logits], dtype=torch.float32)
    assert _most_likely(_Logits(), features, masks) == _mode(logits, list(masks))
    assert _most_likely(_Logits(), features, None) == _mode(logits, None)


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


def greedy_score(model, env, indices=None):
    """Every greedy episode run now."""
    return GreedyEpisodes(env, keep=0).score(model, indices)


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


def test_greedy_episodes_run_each_weights_once_and_forget_the_oldest():
    graphs = [f"synthetic:layered?n=10&seed={s}" for s in range(3)]
    env = PlacementEnv(graphs, CLUSTER)
    model = _untrained(env)
    episodes = GreedyEpisodes(env, keep=2)
    first, score = episodes.score(model)
    again, subset = episodes.score(model, [2, 0])
    assert (episodes.runs, episodes.reused) == (3, 2)
    assert again == [first[2], first[0]] and score == greedy_score(model, env)[1]
    assert subset == greedy_score(model, env, [2, 0])[1]
    assert [r.runtime for r in first] == [r.runtime for r in greedy_score(model, env)[0]]
    original = {k: v.clone() for k, v in model.policy.state_dict().items()}
    for seed in (1, 2):  # two other weights: the first ones are the oldest of three
        torch.manual_seed(seed)
        with torch.no_grad():
            for parameter in model.policy.parameters():
                parameter.add_(torch.randn_like(parameter))
        episodes.rollouts(model, [0])
    assert (episodes.runs, episodes.reused) == (5, 2)
    model.policy.load_state_dict(original)
    episodes.rollouts(model, [0])  # forgotten (keep=2): run again
    assert (episodes.runs, episodes.reused) == (6, 2)


def test_without_memory_every_call_runs_its_episodes():
    env = PlacementEnv(GRAPH, CLUSTER)
    model, episodes = _untrained(env), GreedyEpisodes(env, keep=0)
    episodes.score(model)
    episodes.score(model)
    assert (episodes.runs, episodes.reused) == (2, 0)
