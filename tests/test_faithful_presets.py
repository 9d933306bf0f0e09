"""The faithful presets (``experiment=<paper>_faithful``): the papers' choices, pinned."""

import re

import pytest

pytest.importorskip("hydra", reason="the experiments extra is not installed")
pytest.importorskip("stable_baselines3", reason="the rl extra is not installed")

from placerl.bench import load_suite
from placerl.bench.recipe import run_recipe
from placerl.compose import compose_run, group_options
from placerl.errors import ConfigError
from placerl.run_config import UNSET, RunConfig
from placerl.train import train

PRESETS = ("placeto_faithful", "doppler_faithful", "gdp_faithful")
GRAPH, CLUSTER = "synthetic:layered?n=10&seed=2", "placeto?n_devices=3"
#: A few steps on a 10-node graph: what is tested is that the preset trains, not how well.
FEW = [
    f"graph.spec='{GRAPH}'",
    f"cluster.spec='{CLUSTER}'",
    "n_envs=2",
    "total_steps=64",
    "eval_every=0",
    "eval_samples=0",
    "progress_bar=false",
    "baselines=[]",
    "checkpoint_every=0",
    "agent.warm_start_epochs=2",
    "+agent.hyperparams.n_steps=32",
    "env.max_nodes=10",
    "env.max_edges=16",
]


@pytest.mark.parametrize("preset", PRESETS)
def test_a_preset_names_itself_and_its_tuned_recipe_and_holds_its_pins(preset):
    run = compose_run(f"experiment={preset}")
    assert run.preset.name == preset and run.preset.tuned in group_options("experiment")
    assert run.check() is run  # the preset's own values keep its pins
    assert all(run.option(path) == value for path, value in run.preset.fixed.items())
    assert run.env.features == "plain" and not run.agent.rollback  # no HEFT figures, no rollback
    assert {"env.kind", "env.reward", "env.features", "agent.warm_start", "agent.rollback"} <= set(
        run.preset.fixed
    )


def test_the_papers_mdps_starts_and_updates():
    placeto, doppler, gdp = (compose_run(f"experiment={p}") for p in PRESETS)
    assert (placeto.env.kind, placeto.env.init, placeto.env.start_from_best) == (
        "refine",
        "single_device",
        False,
    )  # a trivial start, as Placeto's
    assert placeto.env.reward == "normalized_delta" and placeto.agent.warm_start is None
    assert (doppler.env.kind, doppler.agent.warm_start) == ("dual", "heft")  # critical path
    assert (gdp.env.kind, gdp.agent.warm_start, len(gdp.graph.spec)) == ("one_shot", None, 24)
    for run in (placeto, doppler):  # REINFORCE-style: one pass, one minibatch, MC returns
        hyper = run.agent.hyperparams
        assert (hyper["n_epochs"], hyper["gae_lambda"], hyper["gamma"]) == (1, 1.0, 1.0)
        assert hyper["batch_size"] >= 10**9


@pytest.mark.parametrize("preset", PRESETS)
def test_a_preset_trains_a_few_steps(preset, tmp_path):
    run = compose_run(f"experiment={preset}", *FEW)
    result = train(run, out_dir=str(tmp_path))
    assert result.steps >= 64 and result.graphs[0].final_runtime > 0
    settings = result.model.placerl_settings
    assert settings["features"] == "plain" and settings["env"] == run.env.kind
    if preset != "gdp_faithful":  # one minibatch of the whole rollout, one pass over it
        assert result.model.n_epochs == 1
        assert result.model.batch_size == result.model.n_steps * result.model.n_envs == 64


@pytest.mark.parametrize(
    ("preset", "override", "shown"),
    [
        ("placeto_faithful", "agent.warm_start=best_of", "agent.warm_start='best_of'"),
        ("placeto_faithful", "agent.rollback=true", "agent.rollback=True"),
        ("placeto_faithful", "env.init=best_of", "env.init='best_of'"),
        ("placeto_faithful", "agent.hyperparams.n_epochs=4", "agent.hyperparams.n_epochs=4"),
        ("placeto_faithful", "~agent.hyperparams.n_epochs", "agent.hyperparams.n_epochs=(unset)"),
        ("doppler_faithful", "agent.warm_start=best_of", "agent.warm_start='best_of'"),
        ("gdp_faithful", "env.features=heft", "env.features='heft'"),
    ],
)
def test_an_option_a_preset_does_not_take_is_refused_naming_both(preset, override, shown):
    run = compose_run(f"experiment={preset}", override)
    message = (
        f"^{re.escape(preset)} does not take {re.escape(shown)}: the preset fixes .* "
        f"The tuned recipe experiment={run.preset.tuned} takes it; preset.name=null"
    )
    with pytest.raises(ConfigError, match=message):
        run.check()


def test_training_refuses_it_before_any_work(tmp_path):
    with pytest.raises(ConfigError, match=r"placeto_faithful does not take agent\.warm_start"):
        train(
            compose_run("experiment=placeto_faithful", "agent.warm_start=best_of", *FEW),
            out_dir=str(tmp_path),
        )
    assert not any(tmp_path.iterdir())


def test_the_benchmark_refuses_it_before_any_training(tmp_path):
    suite = load_suite("placebench-v1")
    cases = [c for c in suite.select("tiny", "test") if c.family == "tiny/chain-n12"]
    with pytest.raises(
        ConfigError,
        match=r"tiny/chain-n12.*gdp_faithful does not take "
        r"agent\.rollback=True",
    ):
        run_recipe(suite, cases, "gdp_faithful", ["agent.rollback=true"], 0, tmp_path)
    assert not any(tmp_path.iterdir())


def test_dropping_the_claim_drops_the_pins():
    run = compose_run("experiment=placeto_faithful", "preset.name=null", "agent.warm_start=best_of")
    assert run.check().agent.warm_start == "best_of" and run.preset.fixed  # kept, not enforced
    python = RunConfig.from_dict(
        {"preset": {"name": None}, "agent": {"rollback": True}},
        base=compose_run("experiment=placeto_faithful"),
    )
    assert python.check().agent.rollback


def test_a_pin_of_no_option_is_refused_naming_the_preset():
    run = RunConfig.from_dict({"preset": {"name": "mine", "fixed": {"agent.warmstart": None}}})
    with pytest.raises(
        ConfigError,
        match=r"preset mine pins 'agent.warmstart' is no option: "
        r"agent has no 'warmstart' \(known there: algo, ",
    ):
        run.check()
    assert RunConfig().option("agent.hyperparams.no_such_key") is UNSET
    assert RunConfig().option("env.kind") == RunConfig().env.kind


def test_an_unknown_feature_set_is_refused_in_the_run_config():
    with pytest.raises(ConfigError, match=r"env\.features must be one of heft, plain, got 'none'"):
        compose_run("env.features=none").check()
