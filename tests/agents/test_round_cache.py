"""A per-node GNN in one episode recomputes only the rows within reach of a change: the same
embeddings, actions and placements as the whole forward pass at every step."""

import numpy as np
import pytest
import torch

from placerl.agents import make_agent
from placerl.agents.episodes import one_episode, rollout
from placerl.agents.extractors import GNN_LAYERS, GnnExtractor
from placerl.envs import PlacementDualEnv, PlacementEnv

CLUSTER = "placeto?n_devices=3"
GRAPHS = ["synthetic:layered?n=40&seed=1", "synthetic:layered?n=24&seed=2"]


def _as_batch(obs):
    return {k: torch.as_tensor(v, dtype=torch.float32)[None] for k, v in obs.items()}


def _episode_steps(env, seed=0, graph=0):
    """Observations of one random episode on ``env``'s graph ``graph``."""
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed, options={"graph": graph})
    seen, done = [obs], False
    while not done:
        action = int(rng.choice(np.flatnonzero(env.action_masks())))
        obs, _, terminated, truncated, _ = env.step(action)
        seen.append(obs)
        done = terminated or truncated
    return seen


@pytest.mark.parametrize("layer", sorted(GNN_LAYERS))
def test_each_step_gets_the_whole_passes_embeddings_from_a_few_rows(layer):
    env = PlacementDualEnv(GRAPHS, CLUSTER)
    torch.manual_seed(0)
    extractor = GnnExtractor(env.observation_space, layer=layer, hidden=16, per_node=True)
    first = _episode_steps(env, graph=0)
    steps = first + _episode_steps(env, graph=1)  # then a new graph
    updated = []
    with torch.no_grad():
        expected = [extractor.encode(_as_batch(obs)) for obs in steps]
        with extractor.episode():
            for obs, (context, states) in zip(steps, expected, strict=True):
                got_context, got_states = extractor.encode(_as_batch(obs))
                torch.testing.assert_close(got_states, states, rtol=1e-5, atol=1e-6)
                torch.testing.assert_close(got_context, context, rtol=1e-5, atol=1e-6)
                updated.append(extractor._episode.updated)
    rows = env.max_nodes
    assert updated[0] == [rows] * 4  # the first step computes every row
    assert updated[len(first)] == [rows] * 4  # so does the first on the new graph
    later = np.array(updated[1 : len(first)])
    assert (later[:, 0] <= 2).all()  # a step changes the current node's row and the placed one
    assert later.sum(axis=1).mean() < 0.4 * later.shape[1] * rows  # rows within reach only
    assert extractor._episode is None  # the block ends its cache


def test_an_unchanged_observation_recomputes_nothing_and_batches_take_the_whole_pass():
    env = PlacementDualEnv(GRAPHS[0], CLUSTER)
    torch.manual_seed(0)
    extractor = GnnExtractor(env.observation_space, hidden=16, per_node=True)
    obs, _ = env.reset(seed=0)
    batch = _as_batch(obs)
    with torch.no_grad(), extractor.episode():
        first = extractor.encode(batch)[1]
        again = extractor.encode(batch)[1]
        assert extractor._episode.updated == [0] * 4
        two = {k: v.repeat(2, *[1] * (v.dim() - 1)) for k, v in batch.items()}
        both = extractor.encode(two)[1]  # a batch: the whole pass, the cache left alone
        assert extractor._episode.updated == [0] * 4
    assert torch.equal(first, again)
    torch.testing.assert_close(both[1], first[0], rtol=1e-5, atol=1e-6)


def test_a_step_that_raises_leaves_the_cache_as_the_last_good_step_left_it(monkeypatch):
    env = PlacementDualEnv(GRAPHS[0], CLUSTER)
    torch.manual_seed(0)
    extractor = GnnExtractor(env.observation_space, hidden=16, per_node=True)
    steps = _episode_steps(env)[:3]
    with torch.no_grad():
        expected = [extractor.encode(_as_batch(obs))[1] for obs in steps]
        with extractor.episode():
            extractor.encode(_as_batch(steps[0]))
            with monkeypatch.context() as patch:
                patch.setattr(extractor.rounds[1], "forward", _interrupted)
                with pytest.raises(RuntimeError, match="interrupted"):
                    extractor.encode(_as_batch(steps[1]))
            for obs, states in zip(steps[1:], expected[1:], strict=True):
                torch.testing.assert_close(
                    extractor.encode(_as_batch(obs))[1], states, rtol=1e-5, atol=1e-6
                )


def _interrupted(*args, **kwargs):
    raise RuntimeError("interrupted")


def test_a_nested_block_leaves_the_outer_cache_in_place():
    env = PlacementDualEnv(GRAPHS[0], CLUSTER)
    extractor = GnnExtractor(env.observation_space, hidden=16, per_node=True)
    with extractor.episode():
        outer = extractor._episode
        with extractor.episode():
            assert extractor._episode is not outer
        assert extractor._episode is outer
    assert extractor._episode is None


def test_gradients_take_the_whole_pass_inside_an_episode_block():
    env = PlacementDualEnv(GRAPHS[0], CLUSTER)
    extractor = GnnExtractor(env.observation_space, hidden=16, per_node=True)
    obs, _ = env.reset(seed=0)
    with extractor.episode():
        extractor.encode(_as_batch(obs))[1].sum().backward()
        assert extractor._episode.updated == []  # never used
    assert all(p.grad is not None for p in extractor.rounds.parameters())


def test_the_neighbourhood_extractor_keeps_no_cache():
    env = PlacementEnv(GRAPHS[0], CLUSTER)
    extractor = GnnExtractor(env.observation_space, hidden=16)
    with extractor.episode():
        assert extractor._episode is None


def test_a_greedy_episode_reusing_rows_places_as_the_whole_pass_does():
    env = PlacementDualEnv(GRAPHS[0], CLUSTER)
    model = make_agent("maskable_ppo", env, "gnn", seed=0, n_steps=64, batch_size=64)
    model.learn(64)  # weights away from their initialization
    reused = rollout(model, env, graph=0, seed=0)
    whole = rollout(model, env, graph=0, seed=0, incremental=False)
    np.testing.assert_array_equal(reused.placement, whole.placement)
    assert reused.runtime == whole.runtime
    sampled = []
    for flag in (True, False):
        torch.manual_seed(1)
        sampled.append(rollout(model, env, graph=0, seed=0, deterministic=False, incremental=flag))
    np.testing.assert_array_equal(sampled[0].placement, sampled[1].placement)


def test_one_episode_enters_every_extractor_of_the_policy():
    env = PlacementDualEnv(GRAPHS[0], CLUSTER)
    policy = make_agent("maskable_ppo", env, "gnn", seed=0).policy
    extractors = [m for m in policy.modules() if isinstance(m, GnnExtractor)]
    assert extractors
    with one_episode(policy):
        assert all(m._episode is not None for m in extractors)
    assert all(m._episode is None for m in extractors)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_reusing_rows_on_cuda_gives_the_whole_passes_embeddings():
    env = PlacementDualEnv(GRAPHS[0], CLUSTER)
    torch.manual_seed(0)
    extractor = GnnExtractor(env.observation_space, hidden=16, per_node=True).cuda()
    steps = _episode_steps(env)
    cuda = lambda obs: {k: v.cuda() for k, v in _as_batch(obs).items()}  # noqa: E731
    with torch.no_grad():
        expected = [extractor.encode(cuda(obs))[1] for obs in steps]
        with extractor.episode():
            for obs, states in zip(steps, expected, strict=True):
                torch.testing.assert_close(
                    extractor.encode(cuda(obs))[1], states, rtol=1e-5, atol=1e-5
                )
