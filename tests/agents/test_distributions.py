"""The grid distribution equals sb3-contrib's multi-categorical, batched."""

import numpy as np
import pytest
import torch
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st
from sb3_contrib.common.maskable.distributions import MaskableMultiCategoricalDistribution

from placerl.agents.distributions import MaskableGridDistribution, grid_distribution


@settings(max_examples=30, deadline=None)
@given(
    batch=st.integers(1, 4),
    rows=st.integers(1, 6),
    choices=st.integers(1, 5),
    seed=st.integers(0, 2**16),
)
def test_log_prob_entropy_and_mode_match_the_per_row_distribution(batch, rows, choices, seed):
    rng = np.random.default_rng(seed)
    logits = torch.as_tensor(rng.normal(size=(batch, rows * choices)), dtype=torch.float32)
    masks = rng.random((batch, rows, choices)) < 0.6
    masks[..., rng.integers(choices)] = True  # every row keeps a choice
    grid = MaskableGridDistribution(rows, choices).proba_distribution(logits)
    loop = MaskableMultiCategoricalDistribution([choices] * rows).proba_distribution(logits)
    grid.apply_masking(masks.reshape(batch, -1))
    loop.apply_masking(masks.reshape(batch, -1))
    actions = torch.as_tensor(np.argmax(masks * rng.random(masks.shape), axis=-1))
    torch.testing.assert_close(grid.log_prob(actions), loop.log_prob(actions))
    torch.testing.assert_close(grid.entropy(), loop.entropy())
    torch.testing.assert_close(grid.mode(), loop.mode())
    sampled = grid.sample()
    assert sampled.shape == (batch, rows)
    assert masks[np.arange(batch)[:, None], np.arange(rows), sampled.numpy()].all()


def test_only_multidiscrete_spaces_of_equal_rows_get_it():
    assert isinstance(grid_distribution(spaces.MultiDiscrete([3, 3, 3])), MaskableGridDistribution)
    assert grid_distribution(spaces.MultiDiscrete([3, 2])) is None
    assert grid_distribution(spaces.Discrete(3)) is None


@pytest.mark.parametrize("kind", ["one_shot", "hierarchical"])
def test_the_multidiscrete_envs_policies_use_it(kind):
    from placerl._env_ids import env_class
    from placerl.agents import make_agent

    env = env_class(kind)(graph="synthetic:layered?n=12&seed=1", cluster="placeto?n_devices=3")
    model = make_agent("maskable_ppo", env, "gnn", n_steps=8, batch_size=8)
    assert isinstance(model.policy.action_dist, MaskableGridDistribution)
    model.learn(16)  # rollouts and an update run through it
