"""SB3's default MultiInputPolicy on the env: raw edge indices saturate it, ``flat`` fixes it."""

import numpy as np
import pytest
import torch
from stable_baselines3 import PPO

from placerl.agents.episodes import rollout
from placerl.agents.factory import make_agent
from placerl.envs import PlacementEnv
from placerl.envs.sanity import SanityEnv

GRAPH = "synthetic:layered?n=27&seed=0"


def _saturation(observation: str) -> float:
    """Share of the first tanh layer's units beyond |0.99| at initialisation, over an episode."""
    env = PlacementEnv(graph=GRAPH, observation=observation)
    model = PPO("MultiInputPolicy", env, seed=0)
    obs, _ = env.reset(seed=0)
    seen, done = [], False
    while not done:
        seen.append(obs)
        obs, _, done, _, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
    batch, _ = model.policy.obs_to_tensor({k: np.stack([o[k] for o in seen]) for k in obs})
    with torch.no_grad():
        features = model.policy.extract_features(batch)
        hidden = model.policy.mlp_extractor.policy_net(features)  # Linear + Tanh, twice
        first = torch.tanh(model.policy.mlp_extractor.policy_net[0](features))
    assert hidden.shape[1] == 64
    return float((first.abs() > 0.99).float().mean())


def test_raw_indices_saturate_and_flat_does_not():
    assert _saturation("graph") > 0.3
    assert _saturation("flat") < 0.02


@pytest.mark.parametrize("problem", ["chain", "branches"])
def test_default_multi_input_policy_learns_on_flat(problem):
    env = SanityEnv(problem, observation="flat")
    model = PPO(
        "MultiInputPolicy", env, seed=0, n_steps=64, batch_size=64, gamma=1.0, learning_rate=1e-3
    )
    model.learn(2_000)
    result = rollout(model, SanityEnv(problem, observation="flat"))
    assert result.runtime == pytest.approx(env.problem.optimal_runtime, rel=1e-9)


@pytest.mark.slow
def test_flat_multi_input_policy_beats_random_on_27_nodes():
    """The issue's measurement: on a 27-node graph the flat MLP learns; compare with heft."""
    from placerl.baselines.references import reference

    env = PlacementEnv(graph=GRAPH, observation="flat")
    model = make_agent("ppo", env, None, seed=0)
    model.learn(20_000)
    learned = rollout(model, PlacementEnv(graph=GRAPH, observation="flat")).runtime
    random = reference(env.graphs[0], env.cluster, "step_time", "random").score
    assert learned < random
