"""The ``attention`` head on the one-shot env: every node's device in one pass (GDP)."""

import numpy as np
import pytest
import torch

from placerl.agents import make_agent
from placerl.agents.attention_heads import MaskableAttentionPolicy
from placerl.agents.episodes import rollout
from placerl.agents.imitation import behaviour_clone
from placerl.agents.search import SEARCHES, run_search
from placerl.baselines import solve
from placerl.envs import PlacementEnv, PlacementOneShotEnv
from placerl.errors import ConfigError
from placerl.run_config import AgentGroup, EnvGroup, OrderGroup
from placerl.train import train

GRAPH, CLUSTER = "synthetic:layered?n=16&seed=1", "placeto?n_devices=3"


def _env(**kwargs):
    return PlacementOneShotEnv(GRAPH, CLUSTER, **kwargs)


def _logits(model, env):
    obs, _ = env.reset(seed=0)
    batch, _ = model.policy.obs_to_tensor(obs)
    with torch.no_grad():
        return model.policy.action_net(model.policy.extract_features(batch))


@pytest.mark.parametrize("extractor", ["gnn", "lstm"])
def test_the_attention_head_gives_every_row_its_device_logits(extractor):
    env = _env()
    model = make_agent("maskable_ppo", env, extractor, seed=0)
    assert isinstance(model.policy, MaskableAttentionPolicy)
    assert _logits(model, env).shape == (1, 16 * 3)
    model.learn(32)
    result = rollout(model, env, graph=0, seed=0)
    assert (result.placement >= 0).all()


def test_padding_rows_change_nothing():
    """Padding is left out of the attention and of the pooled context: the real rows' logits
    do not depend on how far the observation is padded."""
    tight = make_agent("maskable_ppo", _env(), "gnn", seed=0)
    padded_env = _env(max_nodes=24, max_edges=40)
    padded = make_agent("maskable_ppo", padded_env, "gnn", seed=1)
    padded.policy.load_state_dict(tight.policy.state_dict())
    np.testing.assert_allclose(
        _logits(padded, padded_env)[:, : 16 * 3], _logits(tight, _env()), rtol=1e-4, atol=1e-5
    )


def test_cloning_reproduces_the_expert():
    env = _env()
    model = make_agent("maskable_ppo", env, "gnn", seed=0)
    report = behaviour_clone(model, env, "heft", epochs=100)
    assert report.samples == 1 and report.accuracy == 1.0
    assert report.policy_runtime == pytest.approx(solve("heft", GRAPH, CLUSTER).runtime)


def test_the_trained_one_shot_policy_is_a_placer_with_every_search(tmp_path):
    agent = AgentGroup(warm_start="heft", hyperparams={"n_steps": 16, "batch_size": 16})
    result = train(
        {
            "graph": {"spec": GRAPH},
            "cluster": {"spec": CLUSTER},
            "order": OrderGroup(),
            "env": EnvGroup(kind="one_shot"),
            "agent": agent,
            "n_envs": 2,
            "total_steps": 64,
            "eval_every": 0,
            "eval_samples": 0,
            "baselines": ["single_device"],
            "progress_bar": False,
            "resume": False,
        },
        out_dir=str(tmp_path),
    )
    path = str(tmp_path / "model.zip")
    greedy = solve("policy", GRAPH, CLUSTER, path=path)
    assert greedy.runtime == pytest.approx(result.graphs[0].final_runtime)
    from placerl.agents.placer import load_model

    model = load_model(path, "cpu")
    for search in sorted(SEARCHES):
        found = run_search(model, _env(), search, budget=0 if search == "greedy" else 40)
        assert found.runtime <= found.greedy_runtime * (1 + 1e-12), search
        assert found.evaluations <= 41, search


def test_local_search_orders_moves_by_the_rows_probabilities():
    from placerl.agents.search import greedy_preferences

    env = _env()
    model = make_agent("maskable_ppo", env, "gnn", seed=0)
    behaviour_clone(model, env, "heft", epochs=100)
    _, preferences = greedy_preferences(model, env)
    heft = np.asarray(solve("heft", GRAPH, CLUSTER).placement)
    assert (preferences.argmax(axis=1) == heft).all()


BAD = [
    ({"algo": "ppo"}, "the one_shot env needs head='attention' with algo='maskable_ppo'"),
    ({"head": "nodes"}, "needs head='attention' .* got head='nodes'"),
    ({"extractor": "mlp"}, "head='attention' needs extractor 'gnn' or 'lstm', got 'mlp'"),
    ({"policy_kwargs": {"head_hidden": 30}}, "attention_heads=4 must divide head_hidden=30"),
]


@pytest.mark.parametrize(("change", "message"), BAD, ids=["ppo", "nodes", "mlp", "heads"])
def test_the_one_shot_env_needs_the_attention_head(change, message):
    args = {"algo": "maskable_ppo", "extractor": "gnn", **change}
    algo, extractor = args.pop("algo"), args.pop("extractor")
    with pytest.raises(ConfigError, match=message):
        make_agent(algo, _env(), extractor, **args)


def test_the_attention_head_needs_the_one_shot_env():
    with pytest.raises(ConfigError, match="head='attention' is the one_shot env's"):
        make_agent("maskable_ppo", PlacementEnv(GRAPH, CLUSTER), "gnn", head="attention")
