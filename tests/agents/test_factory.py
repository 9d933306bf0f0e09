"""make_agent: every algorithm, extractor and head; every bad argument names itself."""

import pytest
import torch

from placerl.agents.factory import ALGORITHMS, make_agent
from placerl.agents.heads import DevicePolicy, MaskableDevicePolicy
from placerl.envs import PlacementEnv
from placerl.envs.sanity import SanityEnv
from placerl.errors import ConfigError


@pytest.mark.parametrize("algo", sorted(ALGORITHMS))
@pytest.mark.parametrize("extractor", ["gnn", "lstm", "mlp"])
def test_every_algorithm_learns_a_few_steps(algo, extractor):
    sizes = {"n_steps": 16} if algo == "a2c" else {"n_steps": 16, "batch_size": 16}
    model = make_agent(algo, SanityEnv("chain"), extractor, seed=1, **sizes)
    model.learn(32)
    assert model.num_timesteps >= 32
    expected_head = "mlp" if algo == "recurrent_ppo" else "devices"
    assert model.placerl_settings["head"] == expected_head
    assert model.placerl_settings["algo"] == algo


@pytest.mark.parametrize("verbose", [0, 1])
def test_learning_writes_no_log_folder_and_prints_only_when_verbose(
    verbose, tmp_path, monkeypatch, capsys
):
    import tempfile

    from placerl.agents.placer import load_model

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where SB3 makes SB3-<date>
    model = make_agent(
        "maskable_ppo", SanityEnv("chain"), "mlp", n_steps=16, batch_size=16, verbose=verbose
    )
    model.learn(32)
    model.save(tmp_path / "m.zip")
    loaded = load_model(tmp_path / "m.zip", "cpu")
    loaded.set_env(SanityEnv("chain"))
    loaded.learn(16)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.zip"]
    printed = capsys.readouterr().out
    assert ("total_timesteps" in printed) == bool(verbose), printed


def test_a_tensorboard_log_keeps_sb3s_logger(tmp_path):
    model = make_agent("maskable_ppo", SanityEnv("chain"), "mlp", tensorboard_log=str(tmp_path))
    assert not model._custom_logger  # SB3 configures its tensorboard writer in learn()


def test_device_head_is_the_default():
    model = make_agent("maskable_ppo", SanityEnv("chain"), "gnn")
    assert isinstance(model.policy, MaskableDevicePolicy)
    assert isinstance(make_agent("ppo", SanityEnv("chain"), "mlp").policy, DevicePolicy)


def test_settings_survive_save_and_load(tmp_path):
    from sb3_contrib import MaskablePPO

    model = make_agent("maskable_ppo", SanityEnv("branches"), "lstm")
    model.save(tmp_path / "m.zip")
    loaded = MaskablePPO.load(tmp_path / "m.zip")
    assert loaded.placerl_settings == model.placerl_settings
    assert loaded.placerl_settings["max_nodes"] == 6
    assert isinstance(loaded.policy, MaskableDevicePolicy)


@pytest.mark.parametrize("algo", ["maskable_ppo", "ppo", "recurrent_ppo"])
def test_the_ppo_variants_step_a_fused_adam_with_sb3s_epsilon(algo):
    optimizer = make_agent(algo, SanityEnv("chain"), "mlp").policy.optimizer
    assert type(optimizer).__name__ == "Adam"
    assert optimizer.defaults["fused"] is True and optimizer.defaults["eps"] == 1e-5
    given = make_agent(
        algo, SanityEnv("chain"), "mlp", policy_kwargs={"optimizer_kwargs": {"eps": 1e-6}}
    ).policy.optimizer
    assert not given.defaults["fused"] and given.defaults["eps"] == 1e-6  # given: kept
    sgd = make_agent(
        algo, SanityEnv("chain"), "mlp", policy_kwargs={"optimizer_class": torch.optim.SGD}
    ).policy.optimizer
    assert type(sgd).__name__ == "SGD"  # another class: none of Adam's options forced on it


def test_a2c_keeps_its_rmsprop():
    optimizer = make_agent("a2c", SanityEnv("chain"), "mlp").policy.optimizer
    assert type(optimizer).__name__ == "RMSprop"


@pytest.mark.parametrize(("n_envs", "n_steps"), [(1, 256), (4, 256), (8, 128), (16, 64), (24, 43)])
def test_the_rollout_is_split_over_the_envs(n_envs, n_steps):
    from stable_baselines3.common.vec_env import DummyVecEnv

    from placerl.agents.factory import PPO_ROLLOUT

    venv = DummyVecEnv([lambda: SanityEnv("chain")] * n_envs)
    model = make_agent("maskable_ppo", venv, "mlp")
    assert model.n_steps == n_steps and n_envs * n_steps >= min(n_envs * 256, PPO_ROLLOUT)
    assert make_agent("maskable_ppo", venv, "mlp", n_steps=8).n_steps == 8  # given: kept
    assert make_agent("a2c", venv, "mlp").n_steps == 32  # A2C keeps its own per-env default


def test_batch_size_fits_the_rollout():
    model = make_agent("maskable_ppo", SanityEnv("chain"), "mlp", n_steps=8)
    assert model.batch_size == 8


BAD = [
    (dict(algo="dqn"), "unknown algorithm 'dqn'; known: a2c, maskable_ppo, ppo, recurrent_ppo"),
    (dict(extractor="transformer"), "unknown feature extractor 'transformer'; known: gnn"),
    (
        dict(head="transformer"),
        "'maskable_ppo' has heads devices, mlp, nodes, attention, groups, not",
    ),
    (dict(algo="recurrent_ppo", head="devices"), "has heads mlp, not 'devices'"),
    (dict(learning_rat=1e-3), "unknown option.*learning_rat for algorithm 'maskable_ppo'"),
    (dict(n_epochs="4"), "option 'n_epochs' of algorithm 'maskable_ppo' must be an integer"),
    (dict(extractor_kwargs={"hiden": 8}), "unknown option.*hiden for extractor 'mlp'"),
    (dict(extractor=None), "SB3's own extractor feeds raw edge indices"),
    (dict(policy_kwargs={"net_arch": [64]}), "the device head reads the extractor's output"),
    (dict(n_steps=0), "option 'n_steps' of algorithm 'maskable_ppo' must be an integer >= 1"),
    (dict(batch_size=-8), "option 'batch_size' of algorithm 'maskable_ppo' must be an integer"),
    (dict(extractor_kwargs={"hidden": 0}), "MlpExtractor option 'hidden' must be an integer >= 1"),
    (
        dict(extractor="gnn", extractor_kwargs={"rounds": -1}),
        "GnnExtractor option 'rounds' must be an integer >= 1, got -1",
    ),
    (
        dict(extractor="lstm", extractor_kwargs={"layers": 0}),
        "LstmExtractor option 'layers' must be an integer >= 1, got 0",
    ),
    (dict(policy_kwargs={"head_hidden": 0}), "the device head option 'head_hidden' must be an"),
]


@pytest.mark.parametrize(("change", "message"), BAD, ids=[m[:30] for _, m in BAD])
def test_bad_arguments(change, message):
    arguments = {"algo": "maskable_ppo", "extractor": "mlp", **change}
    with pytest.raises(ConfigError, match=message):
        make_agent(
            arguments.pop("algo"), SanityEnv("chain"), arguments.pop("extractor"), **arguments
        )


def test_one_device_warns_that_there_is_nothing_to_choose():
    env = PlacementEnv(graph="synthetic:layered?n=10&seed=0", cluster="placeto?n_devices=1")
    with pytest.warns(UserWarning, match="one device: every placement puts every node there"):
        make_agent("maskable_ppo", env, "mlp")


def test_not_a_placement_env():
    import gymnasium as gym

    with pytest.raises(ConfigError, match="needs a placerl placement env, got"):
        make_agent("ppo", gym.make("CartPole-v1"), "mlp")


def test_device_head_needs_a_placerl_extractor():
    env = PlacementEnv(graph="synthetic:layered?n=10&seed=0", observation="flat")
    with pytest.raises(ConfigError, match="the device head needs a placerl extractor"):
        make_agent("ppo", env, None, head="devices")
    assert make_agent("ppo", env, None).placerl_settings["head"] == "mlp"
