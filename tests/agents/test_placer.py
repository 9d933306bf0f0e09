"""A trained policy is a placer: registered by entry point, checked against its padding."""

import subprocess
import sys

import numpy as np
import pytest
import torch

from placerl.baselines import solve
from placerl.errors import ConfigError
from placerl.run_config import AgentGroup, EnvGroup, OrderGroup
from placerl.train import train

GRAPH = "synthetic:layered?n=12&seed=0"


def tiny_run(env: EnvGroup) -> dict:
    """64 steps of the GNN policy on ``GRAPH`` over two devices, in ``env``."""
    return {
        "graph": {"spec": GRAPH},
        "cluster": {"spec": "placeto?n_devices=2"},
        "order": OrderGroup(),
        "env": env,
        "agent": AgentGroup(warm_start=None, hyperparams={"n_steps": 32, "batch_size": 32}),
        "n_envs": 1,
        "total_steps": 64,
        "eval_every": 0,
        "eval_samples": 0,
        "baselines": ["single_device"],
        "resume": False,
        "progress_bar": False,
    }


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    out = tmp_path_factory.mktemp("policy")
    train(tiny_run(EnvGroup(max_nodes=16, max_edges=40)), out_dir=str(out))
    return out / "model.zip"


def test_policy_is_a_placer_in_the_result_schema(model_path):
    result = solve("policy", GRAPH, "placeto?n_devices=2", path=str(model_path))
    assert result.placer == "policy" and result.feasible
    assert len(result.placement) == 12
    # another graph that fits the padding
    other = solve(
        "policy",
        "synthetic:layered?n=10&seed=5",
        "placeto?n_devices=2",
        path=str(model_path),
        search="sample",
        budget=40,
    )
    assert len(other.placement) == 10


def test_place_policy_works_in_a_fresh_process(model_path):
    """The entry point registers the placer without importing placerl.agents first."""
    code = (
        "from placerl.baselines import place, PLACERS; import sys;"
        "assert 'stable_baselines3' not in sys.modules;"
        f"p = place('policy', {GRAPH!r}, 'placeto?n_devices=2', path={str(model_path)!r});"
        "print(len(p))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "12"


def test_the_policy_placer_without_the_rl_extra_names_it(model_path):
    code = (
        "import sys; sys.modules['stable_baselines3'] = None;"
        "from placerl.agents.placer import policy_placer;"
        f"policy_placer({str(model_path)!r})"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode != 0
    assert "MissingExtraError" in out.stderr and "pip install 'placerl[rl]'" in out.stderr


def test_a_gnn_policy_places_graphs_beyond_its_padding_as_it_would_with_more(model_path):
    """The GNN's context pools and passes messages: a graph larger than the padding it was
    trained with gets a larger padding, and the padding changes nothing it decides."""
    from placerl.agents.episodes import rollout
    from placerl.agents.placer import env_for, load_model, reads_any_size
    from placerl.baselines import Problem
    from placerl.cluster import load_cluster
    from placerl.envs import PlacementEnv
    from placerl.graph import load_graph

    model = load_model(model_path, "cpu")
    assert reads_any_size(model) and model.placerl_settings["max_nodes"] == 16
    larger = "synthetic:layered?n=30&seed=0"
    problem = Problem(load_graph(larger), load_cluster("placeto?n_devices=2"), "step_time")
    env = env_for(model, problem)
    assert (env.max_nodes, env.max_edges) == (30, 40)  # its 36 edges fit the padding
    settings = {k: model.placerl_settings[k] for k in ("order", "memory", "observation")}
    roomier = PlacementEnv(problem.graph, problem.cluster, max_nodes=64, max_edges=200, **settings)
    placement = rollout(model, env).placement
    np.testing.assert_array_equal(placement, rollout(model, roomier).placement)
    placed = solve("policy", larger, "placeto?n_devices=2", path=str(model_path))
    np.testing.assert_array_equal(placed.placement, placement)


def test_a_recurrent_policy_refuses_a_graph_beyond_its_padding(tmp_path):
    from placerl.agents import make_agent
    from placerl.envs import PlacementEnv

    env = PlacementEnv(GRAPH, "placeto?n_devices=2", max_nodes=16, max_edges=40)
    model = make_agent("recurrent_ppo", env, "gnn", n_steps=16, batch_size=16)
    model.save(tmp_path / "model.zip")
    with pytest.raises(
        ConfigError,
        match=r"has 30 nodes; the policy's padding is max_nodes=16, "
        r"and its network reads only graphs within it",
    ):
        solve(
            "policy",
            "synthetic:layered?n=30&seed=0",
            "placeto?n_devices=2",
            path=str(tmp_path / "model.zip"),
        )


@pytest.mark.parametrize("kind", ["hierarchical", "dual", "one_shot"])
def test_a_per_node_policy_places_a_larger_graph_rebuilt_for_its_padding(tmp_path, kind):
    """A head that reads every row's state is tied to its padding, its weights are not: the
    policy rebuilt for a larger padding decides as it would, rebuilt for a larger one still
    (the padding changes nothing it decides)."""
    from placerl.agents import make_agent
    from placerl.agents.episodes import rollout
    from placerl.agents.fitting import fit_to_env, fits, places_any_size, reads_any_size
    from placerl.agents.placer import env_for, load_model
    from placerl.baselines import Problem
    from placerl.cluster import load_cluster
    from placerl.envs import PlacementDualEnv, PlacementHierarchicalEnv, PlacementOneShotEnv
    from placerl.graph import load_graph

    cls = {
        "hierarchical": PlacementHierarchicalEnv,
        "dual": PlacementDualEnv,
        "one_shot": PlacementOneShotEnv,
    }[kind]
    extra = {"groups": 4} if kind == "hierarchical" else {}
    env = cls(GRAPH, "placeto?n_devices=2", max_nodes=16, max_edges=40, **extra)
    make_agent("maskable_ppo", env, "gnn", n_steps=16, batch_size=16).save(tmp_path / "m.zip")
    model = load_model(tmp_path / "m.zip", "cpu")
    assert places_any_size(model) and not reads_any_size(model)
    larger = "synthetic:layered?n=30&seed=0"
    problem = Problem(load_graph(larger), load_cluster("placeto?n_devices=2"), "step_time")
    padded = env_for(model, problem)
    assert (padded.max_nodes, padded.max_edges) == (30, 40)
    fitted = fit_to_env(model, padded)
    assert fits(fitted, padded) and not fits(model, padded)
    assert fit_to_env(fitted, padded) is fitted  # nothing to rebuild
    weights = model.policy.state_dict()
    for name, tensor in fitted.policy.state_dict().items():
        assert torch.equal(tensor, weights[name]), name
    settings = {k: model.placerl_settings[k] for k in ("order", "memory", "observation")}
    roomier = cls(problem.graph, problem.cluster, max_nodes=64, max_edges=200, **settings, **extra)
    placement = rollout(model, padded).placement  # rollout fits the model itself
    np.testing.assert_array_equal(placement, rollout(model, roomier).placement)
    placed = solve("policy", larger, "placeto?n_devices=2", path=str(tmp_path / "m.zip"))
    np.testing.assert_array_equal(placed.placement, placement)


def test_a_policy_whose_weights_depend_on_the_padding_is_not_rebuilt():
    """SB3's own extractor flattens every node into its first layer: refused, by parameter."""
    from placerl.agents import make_agent
    from placerl.agents.fitting import fit_to_env, places_any_size
    from placerl.envs import PlacementEnv

    env = PlacementEnv(GRAPH, "placeto?n_devices=2", max_nodes=16, max_edges=40, observation="flat")
    model = make_agent("maskable_ppo", env, None, n_steps=16, batch_size=16)
    assert not places_any_size(model)
    larger = PlacementEnv(
        "synthetic:layered?n=30&seed=0", "placeto?n_devices=2", observation="flat"
    )
    with pytest.raises(
        ConfigError,
        match=r"parameter '.+' has shape .+ its network's weights "
        r"depend on the padding",
    ):
        fit_to_env(model, larger)


@pytest.fixture(scope="module")
def refine_path(tmp_path_factory):
    out = tmp_path_factory.mktemp("refine")
    train(
        tiny_run(EnvGroup(kind="refine", init="single_device", reward="normalized_delta")),
        out_dir=str(out),
    )
    return out / "model.zip"


def test_a_refining_policy_starts_where_init_says(refine_path):
    from placerl.agents.placer import env_for, load_model
    from placerl.agents.search import run_search
    from placerl.baselines.problem import Problem
    from placerl.cluster import load_cluster
    from placerl.graph import load_graph

    problem = Problem(load_graph(GRAPH), load_cluster("placeto?n_devices=2"), "step_time")
    model = load_model(refine_path, "cpu")
    assert env_for(model, problem).init == "single_device"  # as trained
    env = env_for(model, problem, init="heft")
    assert env.init == "heft"
    heft = solve("heft", GRAPH, "placeto?n_devices=2")
    found = run_search(model, env, "greedy")
    assert found.runtime <= heft.runtime * (1 + 1e-12)  # a refinement never ends above its start
    placed = solve(
        "policy",
        GRAPH,
        "placeto?n_devices=2",
        path=str(refine_path),
        init="best_of?placers=heft,m_etf",
    )
    assert placed.runtime <= heft.runtime * (1 + 1e-12)


def test_init_starts_a_constructing_policys_search_not_its_env(model_path):
    from placerl.agents.placer import env_for, load_model
    from placerl.baselines.problem import Problem
    from placerl.cluster import load_cluster
    from placerl.graph import load_graph

    problem = Problem(load_graph(GRAPH), load_cluster("placeto?n_devices=2"), "step_time")
    with pytest.raises(
        ConfigError,
        match=r"init='heft': the policy's env \(construct\) starts "
        r"from no placement; only a refining policy takes one",
    ):
        env_for(load_model(model_path, "cpu"), problem, init="heft")
    placed = solve("policy", GRAPH, "placeto?n_devices=2", path=str(model_path), init="heft")
    assert placed.runtime <= solve("heft", GRAPH, "placeto?n_devices=2").runtime * (1 + 1e-12)


def test_saved_settings_rebuild_init_and_invalid_action_old_names_too(refine_path):
    """A policy's env takes its saved ``init`` and ``invalid_action``; one saved before the
    rename (``initial``) or before ``invalid_action`` existed still rebuilds."""
    from placerl.agents.placer import env_for, load_model
    from placerl.baselines.problem import Problem
    from placerl.cluster import load_cluster
    from placerl.graph import load_graph

    problem = Problem(load_graph(GRAPH), load_cluster("placeto?n_devices=2"), "step_time")
    model = load_model(refine_path, "cpu")
    saved = dict(model.placerl_settings)
    assert saved["invalid_action"] == "nearest" and saved["init"] == "single_device"
    try:
        model.placerl_settings = {**saved, "invalid_action": "raise"}
        assert env_for(model, problem).invalid_action == "raise"
        old = {k: v for k, v in saved.items() if k not in ("init", "invalid_action")}
        model.placerl_settings = {**old, "initial": "heft"}
        env = env_for(model, problem)
        assert (env.init, env.invalid_action) == ("heft", "nearest")
    finally:
        model.placerl_settings = saved  # load_model caches the model


def test_a_bad_init_placement_is_refused_by_name(refine_path):
    with pytest.raises(ConfigError, match="init='nowhere' is neither an env start placement"):
        solve("policy", GRAPH, "placeto?n_devices=2", path=str(refine_path), init="nowhere")


BAD = [
    ({"path": "nowhere.zip"}, "no policy file at nowhere.zip"),
    ({"init": "nowhere"}, "unknown placer 'nowhere'"),  # a constructing policy's search init
]


@pytest.mark.parametrize("devices", [3, 8])
def test_a_policy_places_on_another_device_count(model_path, devices):
    """Trained on 2 devices, the device-head GNN places on 3 and 8: no parameter of its
    network has a device-count dimension, and the rebuilt network holds the same weights."""
    from placerl.agents.fitting import fit_to_env
    from placerl.agents.placer import env_for, load_model
    from placerl.baselines.problem import Problem
    from placerl.cluster import load_cluster
    from placerl.graph import load_graph

    cluster = f"placeto?n_devices={devices}"
    model = load_model(model_path)
    env = env_for(model, Problem(load_graph(GRAPH), load_cluster(cluster), "step_time"))
    fitted = fit_to_env(model, env)
    assert fitted is not model and fitted.action_space.n == devices
    for name, tensor in model.policy.state_dict().items():
        torch.testing.assert_close(fitted.policy.state_dict()[name], tensor)
    result = solve("policy", GRAPH, cluster, path=str(model_path))
    assert result.feasible and set(result.placement) <= set(range(devices))


def test_a_policy_with_per_device_parameters_names_them_on_another_count(tmp_path):
    """SB3's mlp head has one logit per device: on another device count it is refused,
    naming the parameter and the count it was trained on."""
    from placerl.agents import make_agent
    from placerl.envs import PlacementEnv

    model = make_agent(
        "maskable_ppo",
        PlacementEnv(GRAPH, "placeto?n_devices=2"),
        "gnn",
        head="mlp",
        n_steps=32,
        batch_size=32,
    )
    model.save(tmp_path / "mlp_head.zip")
    message = (
        r"the policy was trained on 2 devices and the cluster has 3; its parameter "
        r"'mlp_extractor.policy_net.0.weight' .* places on 2 devices only"
    )
    with pytest.raises(ConfigError, match=message):
        solve("policy", GRAPH, "placeto?n_devices=3", path=str(tmp_path / "mlp_head.zip"))


@pytest.mark.parametrize(("change", "message"), BAD, ids=["path", "init"])
def test_bad_uses(model_path, change, message):
    arguments = {
        "graph": GRAPH,
        "cluster": "placeto?n_devices=2",
        "path": str(model_path),
        **change,
    }
    with pytest.raises(ConfigError, match=message):
        solve("policy", arguments.pop("graph"), arguments.pop("cluster"), **arguments)


def test_a_file_that_is_not_a_zip(tmp_path):
    (tmp_path / "model.zip").write_text("half a model")
    with pytest.raises(ConfigError, match=r"model.zip is not a model zip .*truncated"):
        solve("policy", GRAPH, "placeto?n_devices=2", path=str(tmp_path / "model.zip"))


def test_a_zip_without_placerl_settings(tmp_path):
    from stable_baselines3 import PPO

    model = PPO("MlpPolicy", "CartPole-v1")
    model.save(tmp_path / "plain.zip")
    with pytest.raises(ConfigError, match="is not a placerl policy"):
        solve("policy", GRAPH, "placeto?n_devices=2", path=str(tmp_path / "plain.zip"))


def test_policy_is_not_standalone():
    from placerl.baselines import PLACERS

    assert not PLACERS["policy"].standalone
    assert PLACERS["heft"].standalone


@pytest.mark.parametrize("saved", [1, None])
def test_a_policy_of_other_observations_is_refused(tmp_path, saved):
    """A policy saved with another observation version (or none: before versions were saved)
    would read these observations wrongly."""
    from placerl.agents import make_agent
    from placerl.envs import PlacementEnv
    from placerl.envs.case import OBSERVATION_VERSION

    model = make_agent(
        "maskable_ppo", PlacementEnv(GRAPH, "placeto?n_devices=2"), "mlp", n_steps=32, batch_size=32
    )
    assert model.placerl_settings["observation_version"] == OBSERVATION_VERSION
    settings = {k: v for k, v in model.placerl_settings.items() if k != "observation_version"}
    if saved is not None:
        settings["observation_version"] = saved
    model.placerl_settings = settings
    model.save(tmp_path / "old.zip")
    message = (
        r"old.zip was trained on observations of version 1; this placerl's envs give "
        rf"version {OBSERVATION_VERSION}"
    )
    with pytest.raises(ConfigError, match=message):
        solve("policy", GRAPH, "placeto?n_devices=2", path=str(tmp_path / "old.zip"))
