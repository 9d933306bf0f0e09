"""bench_training_speed.py: rows at other epoch counts scale the learning rate to match."""

from types import SimpleNamespace

import pytest

pytest.importorskip("stable_baselines3", reason="the rl extra is not installed")

from placerl.agents.factory import PPO_DEFAULTS
from tests.bench_modules import module_fixture

bench = module_fixture("bench_training_speed")


def test_the_epoch_switch_keeps_the_epochs_total_step(bench):
    assert bench.epoch_switch(PPO_DEFAULTS["n_epochs"]) == {}  # placerl's defaults, untouched
    switch = bench.epoch_switch(4)
    assert switch == {"n_epochs": 4, "learning_rate": pytest.approx(1e-3)}
    assert switch["n_epochs"] * switch["learning_rate"] == pytest.approx(
        PPO_DEFAULTS["n_epochs"] * PPO_DEFAULTS["learning_rate"]
    )


def test_each_row_trains_with_its_epochs(bench, monkeypatch):
    configs = []

    def fake_train(config, callbacks):
        configs.append(config)
        timings = {"train": 2.0, "steps_per_s": 512.0, "torch_threads": 1}
        return SimpleNamespace(timings=timings)

    monkeypatch.setattr(bench, "train", fake_train)
    row = bench.rows_for(100, "lstm", "cpu", 8, 1024, 30_000.0, 1, ("dummy",), epochs=4)
    assert configs[0]["agent"].hyperparams == bench.epoch_switch(4)
    assert row["epochs"] == 4 and row["dummy steps/s"] == 512
    bench.rows_for(100, "lstm", "cpu", 8, 1024, 30_000.0, 1, ("dummy",))
    assert configs[1]["agent"].hyperparams == {}


def test_a_throughput_run_trains_the_bare_construct_setting(bench, monkeypatch):
    """A real (tiny) run: the config the benchmark gives ``train`` is valid and trains the
    groups' bare defaults (construct env, no warm start, no rollback), not the main job."""
    from placerl.run_config import RunConfig
    from placerl.train import train as real

    configs = []

    def recording(config, **kwargs):
        configs.append(config)
        return real(config, **kwargs)

    monkeypatch.setattr(bench, "train", recording)
    speed, update_share, threads = bench.throughput("mlp", 12, "dummy", 64, "cpu", 2, epochs=4)
    assert speed > 0 and 0 < update_share < 1 and threads >= 1
    run = RunConfig.from_dict(configs[0])
    assert run.env.kind == "construct" and run.agent.warm_start is None
    assert not run.agent.rollback and run.agent.hyperparams == bench.epoch_switch(4)
