"""The Hydra apps: every config composes, bad overrides fail early, placerl-train runs."""

import contextlib
import io
import json
import logging
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path
from unittest import mock

import pytest

pytest.importorskip("hydra", reason="the experiments extra is not installed")
pytest.importorskip("stable_baselines3", reason="the rl extra is not installed")

from hydra import compose, initialize_config_module
from hydra.errors import ConfigCompositionException
from omegaconf.errors import ConfigKeyError

import placerl.apps  # registers the run schema
from placerl.compose import compose_run
from placerl.errors import ConfigError
from placerl.run_config import EnvGroup, RunConfig

GROUPS = ("graph", "cluster", "order", "env", "agent", "logger", "experiment", "hparams_search")


def _options(group: str) -> list[str]:
    folder = resources.files("placerl.configs") / group
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


def _compose(*overrides: str, name: str = "train") -> RunConfig:
    return compose_run(*overrides, config_name=name)


#: A tiny training job: 12 nodes, the MLP extractor, short rollouts.
TINY = [
    "graph=layered_100",
    "cluster=placeto4",
    "agent=maskable_ppo_mlp",
    "eval_samples=0",
    "n_envs=2",
    "progress_bar=false",
    "+agent.hyperparams.n_steps=32",
    "+agent.hyperparams.batch_size=32",
]
SPEC = "graph.spec='synthetic:layered?n=12&seed=0'"


def _app(cwd, app: str, *overrides: str) -> subprocess.CompletedProcess:
    """Run ``placerl.apps.<app>`` as its console script would, with ``overrides`` as its
    arguments, in ``cwd`` and with wandb disabled: in this process (a subprocess would import
    torch and SB3 again, 4 s of CPU per run; the console scripts themselves run in a fresh
    process in ``test_packaging.py`` and ``test_tracking.py``). Hydra's logging setup and the
    global Hydra instance are put back afterwards."""
    from hydra.core.global_hydra import GlobalHydra

    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    argv = [f"placerl-{app.removesuffix('_app')}", *overrides]
    code = 0
    with (
        mock.patch.object(sys, "argv", argv),
        mock.patch.dict(os.environ, WANDB_MODE="disabled"),
        contextlib.chdir(cwd),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        GlobalHydra.instance().clear()
        try:
            getattr(placerl.apps, app)()
        except SystemExit as exit_:  # Hydra exits on errors and after --help
            code = exit_.code if isinstance(exit_.code, int) else 1
        finally:
            GlobalHydra.instance().clear()
            for handler in set(root.handlers) - set(handlers):
                handler.close()
            root.handlers[:], root.level = handlers, level
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


CHOICES = [(group, option) for group in GROUPS for option in _options(group)]


@pytest.mark.parametrize(("group", "option"), CHOICES, ids=[f"{g}={o}" for g, o in CHOICES])
def test_every_config_composes_into_a_checked_run_config(group, option):
    run = _compose(f"{group}={option}")
    assert isinstance(run, RunConfig) and run.check() is run
    assert RunConfig.from_dict(run.to_dict(), base=RunConfig.schema()) == run
    if group in ("graph", "cluster"):
        text = (resources.files("placerl.configs") / group / f"{option}.yaml").read_text()
        spec = getattr(run, group).spec
        assert all(s in text for s in ([spec] if isinstance(spec, str) else spec))


@pytest.mark.parametrize("group", ["graph", "cluster", "logger"])
def test_eval_composes_with_every_shared_group(group):
    for option in _options(group):
        run = _compose(f"{group}={option}", name="eval")
        assert run.placer == "heft" and getattr(run, group) is not None


def test_every_group_has_options():
    assert all(_options(group) for group in GROUPS)
    from placerl.graph.orders import ORDERS

    assert set(_options("order")) == set(ORDERS)  # one config per registered order


def test_defaults_are_the_main_job():
    run = _compose()
    assert run.graph.spec == "synthetic:cifar10?seed=0"
    assert (run.agent.algo, run.agent.extractor) == ("maskable_ppo", "gnn")
    assert (run.env.kind, run.env.moves) == ("refine", 4)  # experiment=excursions
    assert _compose("~experiment").env.kind == "construct"  # the plain defaults


def test_python_and_the_cli_build_the_same_main_job():
    """train({}), train(RunConfig()) and placerl-train with no overrides: one experiment."""
    assert RunConfig() == _compose() == RunConfig.from_dict({})
    assert RunConfig().to_dict() == _compose().to_dict()
    assert _compose("experiment=excursions") == RunConfig()  # the main job's recipe
    # the defaults the old flat TrainConfig disagreed on, as the main job has them
    run = RunConfig()
    assert (run.eval_samples, run.resume, run.progress_bar) == (8, True, True)
    assert (run.graph.spec, run.cluster.spec) == (
        "synthetic:cifar10?seed=0",
        "gpu8_nvlink?n_devices=4",
    )


EXPERIMENTS = _options("experiment")


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_builds_the_same_run_through_python(experiment):
    run = _compose(f"experiment={experiment}")
    as_python = RunConfig.from_dict(
        json.loads(json.dumps(run.to_dict())), base=RunConfig.schema()
    )  # a recorded run, rebuilt
    assert as_python == run and as_python.to_dict() == run.to_dict()
    rebuilt = RunConfig(**{f: getattr(run, f) for f in run.__dataclass_fields__})
    assert rebuilt.check().to_dict() == run.to_dict()


def test_a_python_mapping_overrides_as_the_cli_does():
    cli = _compose("total_steps=4000", "env.reward=normalized_delta", "order=bfs")
    python = RunConfig.from_dict(
        {"total_steps": 4000, "env": {"reward": "normalized_delta"}, "order": {"name": "bfs"}}
    )
    assert python == cli
    tuned = _compose("agent.hyperparams.learning_rate=0.001", "+agent.hyperparams.n_steps=64")
    keyed = RunConfig.from_dict({"agent": {"hyperparams": {"learning_rate": 0.001, "n_steps": 64}}})
    assert keyed == tuned and keyed.agent.hyperparams["n_epochs"] == 2  # merged, as Hydra does
    whole = RunConfig.from_dict({"env": EnvGroup(kind="dual")})  # a group object replaces
    assert whole.env == EnvGroup(kind="dual") == _compose("env=dual").env


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"total_step": 5}, "unknown option 'total_step'; did you mean total_steps?"),
        ({"env": {"rewrd": "x"}}, "unknown option 'env.rewrd'; did you mean env.reward?"),
        ({"env_kwargs": {"reward": "x"}, "total_steps": 5}, "'env_kwargs' is now env.<argument>"),
        ({"algo": "ppo"}, "'algo' is now agent.algo"),
        ({"out_dir": "x"}, r"'out_dir' is now train\(config, out_dir=...\)"),
        ({"order": "bfs"}, r"order is a group: give order.name \({'order': {'name': 'bfs'}}\)"),
        ({"env": {"initial": "heft"}}, "unknown option 'env.initial'; did you mean env.init?"),
        (["total_steps"], "a run config is a RunConfig or a mapping"),
    ],
)
def test_a_bad_python_config_fails_before_any_work(data, message):
    with pytest.raises(ConfigError, match=message):
        RunConfig.from_dict(data)


def test_experiment_sets_what_it_changes():
    run = _compose("experiment=pipeline_msr")
    assert run.env.objective == "pipeline" and run.graph.spec == "msr:bert_l-3_inference"
    assert "tarnawski_dp" in run.baselines
    family = _compose("experiment=generalization")
    assert len(family.graph.spec) == 24 and family.env_arguments()["max_nodes"] == 80


def test_agent_options_reach_the_run():
    run = _compose("agent.rollback_graphs=24", "agent.rollback=true")
    assert (run.agent.rollback, run.agent.rollback_graphs) == (True, 24)
    assert _compose().agent.rollback_graphs == 0  # all graphs
    assert _compose().agent.warm_start_rounds == 0  # plain cloning
    dagger = _compose("agent.warm_start_rounds=2", "agent.warm_start=best_of")
    assert dagger.check().agent.warm_start_rounds == 2
    held = _compose("validation_graphs=['synthetic:cifar10?seed=1']")
    assert list(held.validation_graphs) == ["synthetic:cifar10?seed=1"]


def test_refine_env_passes_its_own_arguments():
    run = _compose("env=refine")
    assert run.env.kind == "refine"
    arguments = run.env_arguments()
    assert arguments["init"] == "best_of" and arguments["passes"] == 1
    assert "init" not in _compose("env=construct").env_arguments()  # Placement-v1 has none


@pytest.mark.parametrize(
    ("override", "error", "message"),
    [
        ("total_step=5", ConfigError, "unknown option 'total_step'; did you mean total_steps?"),
        (
            "env.max_nodz=5",
            ConfigError,
            "unknown option 'env.max_nodz'; did you mean env.max_nodes?",
        ),
        ("grpah=cifar10", ConfigError, "unknown option 'grpah'; did you mean graph?"),
        (
            "cluster.spec=gpu8_nvlink?n_devices=4",
            ConfigError,
            "\"cluster.spec='gpu8_nvlink?n_devices=4'\"",
        ),
        ("total_steps=many", ConfigCompositionException, "could not be converted to Integer"),
        ("graph=imagenet", ConfigCompositionException, "Could not find 'graph/imagenet'"),
    ],
)
def test_bad_overrides_fail_before_any_work(override, error, message):
    with pytest.raises((error, ConfigKeyError)) as caught:
        _compose(override)
    text = str(caught.value) + str(getattr(caught.value, "__cause__", ""))
    assert message in text


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("+total_step=4000", "unknown option 'total_step'; did you mean total_steps?"),
        ("+env.rewrd=x", "unknown option 'env.rewrd'; did you mean env.reward?"),
        ("+agent.colour=red", r"unknown option 'agent.colour' \(known here: algo, extractor"),
    ],
)
def test_added_keys_the_schema_lacks_fail_before_any_work(override, message):
    """Hydra's hint for a typo (``+key=...``) must not train the defaults without a word."""
    with pytest.raises(ConfigError, match=message):
        _compose(override)


def test_the_train_app_says_how_to_quote_a_spec_and_spell_a_key(tmp_path):
    done = _app(tmp_path, "train_app", "cluster.spec=gpu8_nvlink?n_devices=4")
    assert done.returncode != 0 and "cluster.spec='gpu8_nvlink?n_devices=4'" in done.stderr
    typo = _app(tmp_path, "train_app", "total_step=64")
    assert typo.returncode != 0 and "did you mean total_steps?" in typo.stderr


def test_help_gives_each_field_its_meaning(tmp_path):
    done = _app(tmp_path, "train_app", "--help")
    assert done.returncode == 0, done.stderr
    for field, meaning in (
        ("env.kind", "construct"),
        ("total_steps", "Env steps to train for"),
        ("agent.warm_start", "A placer to clone before RL"),
    ):
        line = next(line for line in done.stdout.splitlines() if line.strip().startswith(field))
        assert meaning in line or meaning in done.stdout.split(line)[1][:400], field


def test_a_config_error_is_a_failed_job_the_report_lists(tmp_path):
    from placerl.report import open_jobs

    sweep = tmp_path / "sweep"
    done = _app(
        tmp_path, "train_app", "-m", *TINY, "agent.warm_start_epochs=0", f"hydra.sweep.dir={sweep}"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    [job] = open_jobs([sweep])
    assert job.status == "failed"
    assert "agent.warm_start_epochs must be an integer >= 1" in job.detail


def test_the_train_app_refuses_an_added_typo(tmp_path):
    done = _app(tmp_path, "train_app", *TINY, "+total_step=64", f"hydra.run.dir={tmp_path}")
    assert done.returncode != 0
    assert "did you mean total_steps?" in done.stderr
    assert not (tmp_path / "result.json").exists()


def test_placerl_train_runs_and_resumes(tmp_path):
    out = tmp_path / "run"
    job = [*TINY, SPEC, "total_steps=128", "eval_every=64"]
    done = _app(tmp_path, "train_app", *job, f"hydra.run.dir={out}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "policy (greedy, weights of step" in done.stdout and "heft" in done.stdout
    result = json.loads((out / "result.json").read_text())
    assert result["steps"] >= 128
    assert result["config"]["graph"]["spec"] == "synthetic:layered?n=12&seed=0"
    assert (out / ".hydra" / "config.yaml").is_file() and (out / "model.zip").is_file()
    for picture in ("learning_curve.png", "placement.png"):
        assert (out / picture).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", picture
    (out / "result.json").unlink()  # as if interrupted after its last checkpoint
    again = _app(tmp_path, "train_app", *job, "total_steps=256", f"hydra.run.dir={out}")
    assert again.returncode == 0, again.stderr[-2000:]
    resumed = json.loads((out / "result.json").read_text())
    assert resumed["steps"] >= 256
    assert [c["step"] for c in resumed["curve"]][: len(result["curve"])] == [
        c["step"] for c in result["curve"]
    ]  # the curve went on from the checkpoint
    forced = _app(tmp_path, "train_app", *job, "force=true", f"hydra.run.dir={out}")
    assert forced.returncode == 0, forced.stderr[-2000:]
    fresh = json.loads((out / "result.json").read_text())
    assert fresh["steps"] == result["steps"]  # trained again from scratch, not resumed


def test_help_lists_the_config_groups(tmp_path):
    done = _app(tmp_path, "train_app", "--help")
    assert done.returncode == 0, done.stderr
    for group in GROUPS:
        assert f"\n{group}: " in done.stdout
    assert "placerl-train" in done.stdout


def test_configs_are_one_copy_mapped_into_the_package():
    root = Path(__file__).resolve().parents[1]
    assert not (root / "placerl" / "configs").exists()
    if Path(placerl.apps.__file__).resolve().is_relative_to(root):  # a checkout install
        assert Path(str(resources.files("placerl.configs"))).resolve() == root / "configs"


def test_sweep_keeps_going_past_a_failure_and_skips_finished_jobs(tmp_path):
    sweep = tmp_path / "sweep"
    job = [
        "-m",
        *TINY,
        "graph.spec='synthetic:nope','synthetic:layered?n=12&seed=0'",
        "total_steps=64",
        "eval_every=0",
        f"hydra.sweep.dir={sweep}",
    ]
    done = _app(tmp_path, "train_app", *job)
    assert done.returncode == 0, done.stderr[-2000:]
    (failed,) = [d for d in sweep.iterdir() if "nope" in d.name]
    (finished,) = [d for d in sweep.iterdir() if "seed=0" in d.name]
    assert "unknown graph family 'nope'" in (failed / "error.txt").read_text()
    assert (finished / "result.json").is_file() and not (finished / "error.txt").exists()
    assert not list(finished.glob("*.log"))  # logging to the console only: no empty log file
    summary = done.stdout[done.stdout.index(f"sweep {sweep}: mean over seeds") :]
    assert f"(1 failed job(s): {failed.name})" in summary and "| layered-n12-s0 |" in summary
    before = (finished / "result.json").stat().st_mtime_ns
    again = _app(tmp_path, "train_app", *job)
    assert "already holds result.json; skipped" in again.stdout
    assert (finished / "result.json").stat().st_mtime_ns == before
    logged = _app(tmp_path, "train_app", *job, "logger.mode=disabled")  # no result changes
    assert "already holds result.json; skipped" in logged.stdout
    assert (finished / "result.json").stat().st_mtime_ns == before
    (finished / "result.json").write_text('{"config": {"seed": 0')  # half-written
    redone = _app(tmp_path, "train_app", *job)
    assert "is not a readable result (JSONDecodeError); running the job again" in redone.stdout
    assert json.loads((finished / "result.json").read_text())["steps"] >= 64


def test_placerl_eval_writes_the_same_schema_and_skips_when_done(tmp_path):
    out = tmp_path / "eval"
    job = [
        SPEC,
        "cluster=placeto4",
        "placer='random?seed=1'",
        "baselines=[single_device,heft]",
        f"hydra.run.dir={out}",
    ]
    done = _app(tmp_path, "eval_app", *job)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "[1] random?seed=1" in done.stdout and "single device" in done.stdout
    result = json.loads((out / "result.json").read_text())
    assert result["config"]["placer"] == "random?seed=1"
    assert set(result["graphs"][0]["baselines"]) == {"single_device", "heft"}
    assert not list(out.glob("*.log"))
    again = _app(tmp_path, "eval_app", *job)
    assert "already holds result.json; skipped" in again.stdout


def test_placerl_bench_scores_a_tier_and_a_dataset_as_typed(tmp_path):
    from placerl.bench.leaderboard import leaderboard
    from placerl.graph import load_graph

    out = tmp_path / "bench"
    done = _app(
        tmp_path, "bench_app", "placer=heft", "tier=tiny", "split=test", f"hydra.run.dir={out}"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "| tiny " in done.stdout and (out / "leaderboard.md").is_file()
    assert len(list(out.glob("tiny__*.json"))) == 16
    assert leaderboard([out]).iloc[0]["cases"] == 16
    data = tmp_path / "data"
    data.mkdir()
    load_graph("synthetic:layered?n=12&seed=1").save(data / "g1.json")
    (data / "notes.json").write_text("{}")
    done = _app(
        tmp_path,
        "bench_app",
        "placer=heft",
        f"dataset={data}",
        "cluster.spec='homogeneous?n_devices=4'",
        f"hydra.run.dir={tmp_path / 'ds'}",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "FAILED data/notes" in done.stdout and "notes.json" in done.stdout
    assert json.loads((tmp_path / "ds" / "data__g1.json").read_text())["cluster"] == (
        "homogeneous?n_devices=4"
    )
    bad = _app(tmp_path, "bench_app", "tier=huge", f"hydra.run.dir={tmp_path / 'bad'}")
    assert bad.returncode != 0 and "known: tiny" in (tmp_path / "bad" / "error.txt").read_text()


@pytest.mark.parametrize(
    ("launcher", "seeds"),
    [
        (["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"], [0, 1]),
        (["hydra/launcher=submitit_local", "hydra.launcher.timeout_min=10"], [0]),
    ],
    ids=["joblib", "submitit_local"],
)
def test_sweeps_run_on_the_parallel_launchers(tmp_path, launcher, seeds):
    """Joblib runs two jobs side by side; submitit one (each job is a fresh Python)."""
    sweep = tmp_path / "sweep"
    done = _app(
        tmp_path,
        "train_app",
        "-m",
        *launcher,
        *TINY,
        SPEC,
        "total_steps=64",
        "eval_every=0",
        f"seed={','.join(map(str, seeds))}",
        f"hydra.sweep.dir={sweep}",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = sorted(json.loads(p.read_text())["config"]["seed"] for p in sweep.rglob("result.json"))
    assert found == seeds


def test_an_optuna_search_minimizes_the_runs_objective_and_resumes(tmp_path):
    import yaml

    sweep = tmp_path / "search"
    arguments = [
        "hparams_search=placeto_optuna",
        "hydra.sweeper.n_trials=2",
        SPEC,
        "agent.warm_start_epochs=5",  # the sweep is under test, not the clone
        "cluster=placeto4",
        "total_steps=128",
        "eval_every=64",
        "n_envs=2",
        "+agent.hyperparams.n_steps=32",
        "baselines=[single_device,round_robin]",
        f"hydra.sweep.dir={sweep}",
    ]
    done = _app(tmp_path, "train_app", *arguments)
    assert done.returncode == 0, done.stderr[-2000:]
    results = [json.loads(p.read_text()) for p in sorted(sweep.glob("trial_*/result.json"))]
    assert len(results) == 2
    objectives = [
        r["graphs"][0]["final_runtime"] / min(r["graphs"][0]["baselines"].values()) for r in results
    ]
    best = yaml.safe_load((sweep / "optimization_results.yaml").read_text())
    assert best["best_value"] == pytest.approx(min(objectives))
    again = _app(tmp_path, "train_app", *arguments)  # the same trials again: all skipped
    assert again.stdout.count("already holds result.json") == 2
    other = _app(tmp_path, "train_app", *arguments, "hydra.sweeper.sampler.seed=5")
    assert other.returncode == 0, other.stderr[-2000:]  # other parameters under the same names
    assert other.stdout.count("holds a result of another configuration") >= 1


@pytest.mark.parametrize(
    ("search", "kind"), [("doppler_optuna", "dual"), ("gdp_optuna", "one_shot")]
)
def test_each_recipe_has_an_optuna_search_that_runs_its_env(tmp_path, search, kind):
    import yaml

    sweep = tmp_path / "search"
    done = _app(
        tmp_path,
        "train_app",
        f"hparams_search={search}",
        "hydra.sweeper.n_trials=1",
        SPEC,
        "agent.warm_start_epochs=5",
        "total_steps=64",
        "eval_every=64",
        "n_envs=2",
        "+agent.hyperparams.n_steps=32",
        "+agent.hyperparams.batch_size=32",
        "baselines=[single_device]",
        f"hydra.sweep.dir={sweep}",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (trial,) = sweep.glob("trial_*")
    config = json.loads((trial / "result.json").read_text())["config"]
    assert config["env"]["kind"] == kind and config["agent"]["warm_start"] == "best_of"
    assert config["agent"]["warm_start_epochs"] == 5  # a command-line value beats the search
    sampled = dict(
        o.split("=", 1) for o in yaml.safe_load((trial / ".hydra" / "overrides.yaml").read_text())
    )
    rate = float(sampled["++agent.hyperparams.learning_rate"])
    assert config["agent"]["hyperparams"]["learning_rate"] == pytest.approx(rate)
    hidden = int(sampled["++agent.extractor_kwargs.hidden"])
    assert config["agent"]["extractor_kwargs"]["hidden"] == hidden


def test_a_job_folder_name_stays_short_stable_and_distinct():
    from placerl.apps import MAX_JOB_DIRNAME, job_dirname

    short = "seed=0,order=bfs"
    assert job_dirname(short) == short
    long = ",".join(f"++agent.hyperparams.option_{i}=0.00018646436842137198" for i in range(9))
    name = job_dirname(long)
    assert len(name.encode()) <= MAX_JOB_DIRNAME and name.startswith(long[:100])
    assert job_dirname(long) == name  # a re-run finds the same folder
    assert job_dirname(long + "9") != name  # names that differ only past the cut stay apart
    accented = "graph.spec='é" + "x" * 300 + "'"
    assert len(job_dirname(accented).encode()) <= MAX_JOB_DIRNAME  # cut on a character


def test_a_sweep_with_many_overrides_runs_in_short_job_folders(tmp_path):
    """Seven long overrides (an Optuna search's parameters) made a folder name over the file
    system's 255 bytes, and the job failed before training."""
    sweep = tmp_path / "sweep"
    long = [
        "++agent.hyperparams.learning_rate=0.00018646436842137198",
        "++agent.hyperparams.clip_range=0.2",
        "++agent.hyperparams.ent_coef=0.001",
        "++agent.hyperparams.gae_lambda=0.95",
        "++agent.hyperparams.vf_coef=0.5",
        "++agent.hyperparams.max_grad_norm=0.5",
        "++agent.hyperparams.gamma=1.0",
    ]
    job = [
        "-m",
        *TINY,
        SPEC,
        "total_steps=64",
        "eval_every=0",
        "seed=0,1",
        *long,
        f"hydra.sweep.dir={sweep}",
    ]
    done = _app(tmp_path, "train_app", *job)
    assert done.returncode == 0, done.stderr[-2000:]
    folders = sorted(d for d in sweep.iterdir() if d.is_dir())
    assert len(folders) == 2 and all(len(d.name.encode()) <= 200 for d in folders)
    assert all((d / "result.json").is_file() for d in folders)
    again = _app(tmp_path, "train_app", *job)
    assert again.stdout.count("already holds result.json; skipped") == 2


def test_the_slurm_launcher_config_extends_submitit():
    with initialize_config_module(config_module="placerl.configs", version_base=None):
        cfg = compose(
            config_name="train", overrides=["hydra/launcher=slurm"], return_hydra_config=True
        )
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("submitit_launcher.SlurmLauncher")
    assert launcher.gpus_per_node == 1 and launcher.timeout_min == 240


def test_a_sweep_of_placers_shows_placers_not_orders():
    import pandas as pd

    from placerl.apps import sweep_table

    row = {
        "graph": "g",
        "seeds": 1,
        "runtime_ms": 1.0,
        "runtime_ci95_low": float("nan"),
        "runtime_ci95_high": float("nan"),
        "speedup_vs_best": 1.0,
    }
    placers = pd.DataFrame([{**row, "order": "none", "agent": "m_etf"}])
    assert list(sweep_table(placers).columns) == [
        "graph",
        "placer",
        "seeds",
        "runtime_ms",
        "runtime_ci95_low",
        "runtime_ci95_high",
        "speedup_vs_best",
    ]
    trained = pd.DataFrame([{**row, "order": "bfs", "agent": "gnn"}])
    assert list(sweep_table(trained).columns)[:3] == ["graph", "order", "agent"]


def test_a_result_of_an_older_placerl_is_named_and_trained_again(tmp_path):
    from placerl.apps import _stale_result

    run = _compose()
    (tmp_path / "result.json").write_text(json.dumps({"config": {"env_kwargs": {}}, "graphs": []}))
    assert _stale_result(tmp_path, run) == "of an older placerl (result schema 1)"
    current = {"kind": "train", "schema": 2, "config": run.to_dict()}
    (tmp_path / "result.json").write_text(json.dumps(current))
    assert _stale_result(tmp_path, run) == ""
    current["config"]["env"]["reward"] = "log_speedup"
    (tmp_path / "result.json").write_text(json.dumps(current))
    assert _stale_result(tmp_path, run) == "of another configuration (env.reward differ)"


def test_a_hyperparameter_search_on_a_test_case_fails_naming_it(tmp_path):
    from placerl.report import open_jobs

    sweep = tmp_path / "search"
    done = _app(
        tmp_path,
        "train_app",
        "hparams_search=placeto_optuna",
        "hydra.sweeper.n_trials=1",
        "graph.spec='synthetic:layered?n=80&seed=24'",
        "total_steps=64",
        f"hydra.sweep.dir={sweep}",
    )
    assert "test case 'families/layered-n80-s24': tuning may not read it" in done.stdout
    [job] = open_jobs([sweep])
    assert job.status == "failed" and "tuning may not read it" in job.detail
    assert not list(sweep.rglob("model.zip"))  # refused before any work


def test_placerl_bench_sweeps_a_recipe_over_seeds_as_typed(tmp_path):
    """``placerl-bench recipe=placeto tier=... seed=0,1 -m``: one training per seed, scored
    on the family's test cases, and the sweep's leaderboard pools the seeds."""
    from placerl.bench.leaderboard import leaderboard

    sweep = tmp_path / "sweep"
    done = _app(
        tmp_path,
        "bench_app",
        "-m",
        "recipe=placeto",
        "tier=tiny",
        "family=tiny/chain-n12",
        "seed=0,1",
        "recipe_overrides=['total_steps=128','n_envs=2','eval_every=64',"
        "'eval_samples=0','progress_bar=false']",
        f"hydra.sweep.dir={sweep}",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    records = sorted(sweep.rglob("tiny__chain-n12-s*@seed*.json"))
    assert [r.name.split("@")[1] for r in records] == ["seed0.json"] * 2 + ["seed1.json"] * 2
    row = leaderboard([sweep]).iloc[0]
    assert (row["cases"], row["seeds"]) == (4, 2) and row["placer"].startswith("recipe:placeto[")
    bad = _app(tmp_path, "bench_app", "recipe=placetoo", f"hydra.run.dir={tmp_path / 'bad'}")
    assert bad.returncode != 0
    assert (
        "unknown recipe 'placetoo'; known: doppler" in (tmp_path / "bad" / "error.txt").read_text()
    )
    bad = _app(
        tmp_path,
        "bench_app",
        "recipe=placeto",
        "learn_on=graph",
        f"hydra.run.dir={tmp_path / 'bad_learn_on'}",
    )
    assert bad.returncode != 0
    assert (
        "learn_on must be one of family, case, got 'graph'"
        in (tmp_path / "bad_learn_on" / "error.txt").read_text()
    )
