"""The ``nodes`` head on the dual env: select a ready node, then its device (DOPPLER)."""

import numpy as np
import pytest
import torch

from placerl.agents import make_agent
from placerl.agents.episodes import rollout
from placerl.agents.imitation import behaviour_clone
from placerl.agents.node_heads import MaskableNodePolicy
from placerl.agents.search import SEARCHES, run_search
from placerl.baselines import solve
from placerl.envs import PlacementDualEnv, PlacementEnv
from placerl.errors import ConfigError
from placerl.run_config import AgentGroup, EnvGroup, OrderGroup
from placerl.train import train

GRAPH, CLUSTER = "synthetic:layered?n=16&seed=1", "placeto?n_devices=3"


def _env(**kwargs):
    return PlacementDualEnv(GRAPH, CLUSTER, **kwargs)


@pytest.mark.parametrize("extractor", ["gnn", "lstm"])
def test_the_nodes_head_is_the_dual_envs_default_and_scores_rows_then_devices(extractor):
    env = _env(max_nodes=20)
    model = make_agent("maskable_ppo", env, extractor, seed=0)
    assert isinstance(model.policy, MaskableNodePolicy)
    assert model.policy.features_extractor.node_dim > 0
    obs, _ = env.reset(seed=0)
    batch, _ = model.policy.obs_to_tensor(obs)
    logits = model.policy.action_net(model.policy.extract_features(batch))
    assert logits.shape == (1, 20)
    assert (logits[0, 16:] > -1e7).all()  # padding rows are left to the env's mask
    env.step(int(np.flatnonzero(env.action_masks())[0]))
    batch, _ = model.policy.obs_to_tensor(env._observation())
    logits = model.policy.action_net(model.policy.extract_features(batch))
    assert (logits[0, 3:] == -1e8).all() and (logits[0, :3] > -1e7).all()  # 3 devices
    model.learn(64)
    result = rollout(model, env, graph=0, seed=0)
    assert (result.placement >= 0).all() and result.feasible


def test_the_select_scores_are_the_scorer_on_every_concatenated_pair():
    """The head's shortcuts (the first layer's context part once per sample, no row scores
    for place steps) give the scores of the plain formulation: the select network on every
    ``(state, context)`` pair in select steps, the device scores in place steps."""
    from placerl.agents.node_heads import _padded

    env = _env(max_nodes=20)
    head = make_agent("maskable_ppo", env, "gnn", seed=0).policy.action_net
    torch.manual_seed(0)
    latent = torch.randn(6, head.devices_end + 1 + head.num_nodes * (1 + head.node_dim))
    latent[:, head.devices_end] = torch.tensor([0.0, 1.0, 0.0, 1.0, 1.0, 0.0])  # phases
    states = latent[:, head.devices_end + 1 + head.num_nodes :].reshape(6, head.num_nodes, -1)
    context = latent[:, : head.context_dim]
    pairs = torch.cat([states, context[:, None, :].expand(-1, head.num_nodes, -1)], dim=-1)
    rows = _padded(head.select(pairs).squeeze(-1), head.actions)
    devices = _padded(head.place(latent[:, : head.devices_end]), head.actions)
    expected = torch.where(latent[:, head.devices_end, None] > 0.5, devices, rows)
    torch.testing.assert_close(head(latent), expected, rtol=1e-5, atol=1e-6)
    placing_only = latent[[1, 3]]
    torch.testing.assert_close(head(placing_only), devices[[1, 3]])


def test_cloning_imitates_the_expert_in_its_order():
    env = _env()
    model = make_agent("maskable_ppo", env, "gnn", seed=0)
    report = behaviour_clone(model, env, "heft", epochs=150)
    heft = solve("heft", GRAPH, CLUSTER).runtime
    assert report.samples == 2 * 16
    assert report.accuracy > 0.9
    assert report.policy_runtime <= 1.05 * heft


def test_the_trained_dual_policy_is_a_placer_with_every_search(tmp_path):
    result = train(
        {
            "graph": {"spec": GRAPH},
            "cluster": {"spec": CLUSTER},
            "order": OrderGroup(),
            "env": EnvGroup(kind="dual"),
            "agent": AgentGroup(warm_start="heft", warm_start_epochs=20),
            "n_envs": 2,
            "total_steps": 128,
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
        found = run_search(model, _env(), search, budget=0 if search == "greedy" else 16)
        assert found.runtime <= found.greedy_runtime * (1 + 1e-12), search


BAD = [
    ({"algo": "ppo"}, "the dual env needs head='nodes' with algo='maskable_ppo'"),
    ({"head": "devices"}, "needs head='nodes' .* got head='devices'"),
    ({"extractor": "mlp"}, "head='nodes' needs extractor 'gnn' or 'lstm', got 'mlp'"),
]


@pytest.mark.parametrize(("change", "message"), BAD, ids=["ppo", "devices", "mlp"])
def test_the_dual_env_needs_the_nodes_head(change, message):
    args = {"algo": "maskable_ppo", "extractor": "gnn", **change}
    algo, extractor = args.pop("algo"), args.pop("extractor")
    with pytest.raises(ConfigError, match=message):
        make_agent(algo, _env(), extractor, **args)


def test_the_nodes_head_needs_the_dual_env():
    with pytest.raises(ConfigError, match=r"head='nodes' is the dual env's \(env='dual'\), not"):
        make_agent("maskable_ppo", PlacementEnv(GRAPH, CLUSTER), "gnn", head="nodes")


def test_per_node_states_match_the_neighbourhood_context():
    """The whole-graph pass gives the current node the embedding the k-hop pass does."""
    from placerl.agents.extractors import GnnExtractor

    env = PlacementEnv(GRAPH, CLUSTER)
    obs, _ = env.reset(seed=0)
    for _ in range(5):
        obs, *_ = env.step(0)
    torch.manual_seed(0)
    plain = GnnExtractor(env.observation_space, hidden=16)
    whole = GnnExtractor(env.observation_space, hidden=16, per_node=True)
    whole.load_state_dict(plain.state_dict())
    batch = {k: torch.as_tensor(v)[None] for k, v in obs.items()}
    context, states = whole.encode(batch)
    np.testing.assert_allclose(
        context[:, :16].detach(), plain.context(batch)[:, :16].detach(), rtol=1e-5, atol=1e-6
    )
    assert states.shape == (1, 16, 16)
