"""train(config): files, result, resume, and every bad option."""

import itertools
import json

import numpy as np
import pytest

pytest.importorskip("stable_baselines3", reason="the rl extra is not installed")

from placerl.agents.factory import ALGORITHMS
from placerl.baselines import solve
from placerl.envs.case import OBSERVATION_VERSION
from placerl.errors import ConfigError
from placerl.sim import CostModel, lower_bound
from placerl.train import TrainConfig, _load_checkpoint, _vector_env, changed_options, train

SMALL = {
    "graph": "synthetic:layered?n=12&seed=0",
    "cluster": "placeto?n_devices=2",
    "extractor": "mlp",
    "n_envs": 2,
    "hyperparams": {"n_steps": 32, "batch_size": 32},
    "baselines": ["single_device", "heft"],
}


def test_train_writes_a_complete_result(tmp_path):
    result = train({**SMALL, "total_steps": 256, "eval_every": 128, "checkpoint_every": 128,
                    "eval_samples": 3, "out_dir": str(tmp_path)})  # fmt: skip
    assert result.steps >= 256
    assert [c["step"] for c in result.curve][:3] == [0, 128, 256]
    (outcome,) = result.graphs
    assert set(outcome.baselines) == {"single_device", "heft"}
    assert outcome.sampled_runtime <= outcome.final_runtime
    assert outcome.best_runtime <= outcome.sampled_runtime
    assert outcome.speedups()["heft"] == pytest.approx(outcome.baselines["heft"]
                                                        / outcome.final_runtime)  # fmt: skip
    assert result.timings["steps_per_s"] > 0
    for name in ("model.zip", "result.json", "best_placement.json", "checkpoint/state.json"):
        assert (tmp_path / name).is_file(), name
    files = json.loads((tmp_path / "checkpoint" / "state.json").read_text())["files"]
    assert files["model"] == f"model-{result.steps}.zip"
    assert sorted(p.name for p in (tmp_path / "checkpoint").glob("model-*")) == [files["model"]]
    written = json.loads((tmp_path / "result.json").read_text())
    assert written["graphs"][0]["best_runtime"] == outcome.best_runtime
    bound = lower_bound(CostModel(SMALL["graph"], SMALL["cluster"]))
    assert written["graphs"][0]["lower_bound"] == outcome.lower_bound == bound
    assert bound <= outcome.best_runtime and bound <= min(outcome.baselines.values())
    assert written["config"]["graph"] == SMALL["graph"]
    assert written["config"]["seed"] == 0 and written["config"]["order"] == "topo"
    versions = written["provenance"]
    assert versions["placerl"] and versions["torch"] and versions["stable-baselines3"]
    assert versions["git_revision"] is None or len(versions["git_revision"]) >= 40
    best = json.loads((tmp_path / "best_placement.json").read_text())["0"]
    assert len(best["placement"]) == 12


def test_a_baselines_steps_stand_for_the_steps_trained():
    """``total_steps=100`` trains two rollouts of 64: the search gets 128 evaluations."""
    search = "local_search?init=heft&restarts=1000&max_evaluations={steps}&time_limit=60"
    result = train({**SMALL, "total_steps": 100, "eval_every": 0, "baselines": [search]})
    assert result.steps == 128
    (outcome,) = result.graphs
    assert list(outcome.baselines) == [search]  # the same key in every run of the config
    budgeted = solve("local_search", SMALL["graph"], SMALL["cluster"], init="heft",
                     restarts=1000, max_evaluations=128, time_limit=60)  # fmt: skip
    assert budgeted.info["evaluations"] == 128
    assert outcome.baselines[search] == budgeted.runtime


def test_a_run_that_trained_nothing_gives_a_steps_search_one_evaluation():
    """``max_evaluations=0`` would mean no limit: the search gets its start only."""
    search = "local_search?init=heft&restarts=1000&max_evaluations={steps}&time_limit=60"
    result = train({**SMALL, "total_steps": 0, "eval_every": 0, "baselines": [search]})
    assert result.steps == 0
    heft = solve("heft", SMALL["graph"], SMALL["cluster"]).runtime
    assert result.graphs[0].baselines[search] == heft


def test_resume_continues_steps_curve_and_best(tmp_path):
    first = train({**SMALL, "total_steps": 128, "eval_every": 64, "out_dir": str(tmp_path)})
    state = json.loads((tmp_path / "checkpoint" / "state.json").read_text())
    assert state["steps"] == first.steps
    resumed = train({**SMALL, "total_steps": 256, "eval_every": 64, "out_dir": str(tmp_path),
                     "resume": True})  # fmt: skip
    assert resumed.steps >= 256
    steps = [c["step"] for c in resumed.curve]
    assert steps[: len(first.curve)] == [c["step"] for c in first.curve]  # the curve goes on
    assert steps == sorted(steps)
    assert resumed.graphs[0].best_runtime <= first.graphs[0].best_runtime
    assert resumed.timings["train"] >= first.timings["train"]


def test_the_best_curve_tracks_the_search_at_every_rollout_without_evaluations(tmp_path):
    result = train({**SMALL, "total_steps": 128, "eval_every": 0, "out_dir": str(tmp_path)})
    assert [c["step"] for c in result.curve] == [128]  # the final evaluation only
    steps = [p["step"] for p in result.best_curve]
    assert steps[:2] == [64, 128] and steps == sorted(steps)  # 2 envs x 32 steps per rollout
    found = [p["best"][0] for p in result.best_curve]
    assert found == sorted(found, reverse=True) and found[-1] == result.graphs[0].best_runtime
    resumed = train({**SMALL, "total_steps": 256, "eval_every": 0, "out_dir": str(tmp_path),
                     "resume": True})  # fmt: skip
    assert resumed.best_curve[: len(result.best_curve)] == result.best_curve
    assert [p["step"] for p in resumed.best_curve][-1] == resumed.steps
    written = json.loads((tmp_path / "result.json").read_text())
    assert written["best_curve"] == resumed.best_curve


def test_resume_without_a_checkpoint_starts_fresh(tmp_path):
    result = train({**SMALL, "total_steps": 64, "eval_every": 0, "out_dir": str(tmp_path),
                    "resume": True})  # fmt: skip
    assert result.steps >= 64


def test_same_seed_same_result():
    a = train({**SMALL, "total_steps": 256, "eval_every": 64, "threads": 1})
    b = train({**SMALL, "total_steps": 256, "eval_every": 64, "threads": 1})
    assert a.graphs[0].final_runtime == b.graphs[0].final_runtime
    np.testing.assert_array_equal(a.graphs[0].best_placement, b.graphs[0].best_placement)
    assert [c["runtimes"] for c in a.curve] == [c["runtimes"] for c in b.curve]
    assert [c["step"] for c in a.curve] == [0, 64, 128, 192, 256, 256]


def test_warm_start_clones_the_placer():
    result = train({**SMALL, "total_steps": 64, "eval_every": 0, "warm_start": "heft",
                    "warm_start_epochs": 300})  # fmt: skip
    report = result.warm_start
    assert report["accuracy"] > 0.75  # identical devices: the expert's tie-break is not copied
    assert report["policy_runtime"] <= 1.05 * report["expert_runtime"]
    assert result.timings["warm_start"] > 0


def test_warm_start_rounds_run_dagger_after_the_clone():
    result = train({**SMALL, "env": "refine", "total_steps": 0, "eval_every": 0,
                    "env_kwargs": {"initial": "m_topo", "undo_worse": True},
                    "warm_start": "best_move", "warm_start_epochs": 2, "warm_start_rounds": 1})
    report = result.warm_start
    assert report["rounds"] == 1 and len(report["round_runtimes"]) == 2
    assert report["samples"] == 2 * 12  # the expert's pass and the clone's, over 12 nodes
    assert report["policy_runtime"] == min(report["round_runtimes"])


@pytest.mark.parametrize("keep_best", [True, False])
def test_keep_best_ends_with_the_best_evaluation(keep_best):
    result = train({**SMALL, "total_steps": 512, "eval_every": 64, "keep_best": keep_best,
                    "hyperparams": {"n_steps": 32, "batch_size": 32, "learning_rate": 3e-2}})
    evaluations = [c["runtimes"][0] for c in result.curve]  # the last one is the final weights
    expected = min(evaluations) if keep_best else evaluations[-1]
    assert result.graphs[0].final_runtime == expected
    best_step = result.curve[evaluations.index(min(evaluations))]["step"]
    assert result.policy_step == (best_step if keep_best and evaluations[-1] > min(evaluations)
                                  else result.steps)
    found = [c["best"][0] for c in result.curve]  # the best seen so far never gets worse
    assert found == sorted(found, reverse=True) and found[-1] == result.graphs[0].best_runtime
    assert all(f <= e for f, e in zip(found, evaluations, strict=True))


@pytest.mark.parametrize("rollback", [True, False])
def test_rollback_keeps_the_greedy_curve_from_getting_worse(rollback):
    erratic = {"n_steps": 32, "batch_size": 32, "learning_rate": 3e-2}
    result = train({**SMALL, "extractor": "gnn", "total_steps": 768, "eval_every": 64,
                    "keep_best": False, "rollback": rollback, "warm_start": "heft",
                    "hyperparams": erratic})  # fmt: skip
    curve = [c["runtimes"][0] for c in result.curve]
    worse = [b > a * (1 + 1e-12) for a, b in itertools.pairwise(curve)]
    assert not any(worse) if rollback else any(worse)
    assert (result.graphs[0].final_runtime <= curve[0]) or not rollback


def test_greedy_episodes_of_weights_seen_before_are_not_run_again(monkeypatch):
    """The evaluations and the rollback checks share their greedy episodes: the run is the
    one that runs every episode anew (every figure equal), with fewer episodes."""
    from placerl.agents import episodes

    made, original = [], episodes.GreedyEpisodes.__init__

    def run(keep):
        def init(self, env, **ignored):
            original(self, env, keep)
            made.append(self)

        made.clear()
        monkeypatch.setattr(episodes.GreedyEpisodes, "__init__", init)
        result = train({**SMALL, "extractor": "gnn", "total_steps": 256, "eval_every": 64,
                        "hyperparams": {"n_steps": 32, "batch_size": 32,
                                        "learning_rate": 3e-2}})  # fmt: skip
        return result, made[0]

    remembered, with_memory = run(8)
    anew, without = run(0)
    figures = lambda result: [{k: v for k, v in c.items() if k != "wall_s"}  # noqa: E731
                              for c in result.curve]  # fmt: skip
    assert figures(remembered) == figures(anew) and remembered.graphs == anew.graphs
    assert (remembered.policy_step, remembered.steps, remembered.best_curve) == (
        anew.policy_step, anew.steps, anew.best_curve)
    assert len({tuple(c["runtimes"]) for c in anew.curve}) > 1  # the weights did change
    assert with_memory.runs + with_memory.reused == without.runs
    assert with_memory.reused >= 5 and without.reused == 0


def test_rollback_checks_only_its_share_of_the_graphs(monkeypatch):
    from placerl.agents.episodes import GreedyEpisodes

    checked = []
    real = GreedyEpisodes.score

    def counting(self, model, indices=None):
        checked.append(None if indices is None else list(indices))
        return real(self, model, indices)

    monkeypatch.setattr(GreedyEpisodes, "score", counting)
    graphs = [f"synthetic:layered?n=8&seed={s}" for s in range(5)]
    train({**SMALL, "graph": graphs, "total_steps": 64, "eval_every": 0,
           "rollback_graphs": 2})  # fmt: skip
    rollback_checks = [c for c in checked if c is not None]
    assert rollback_checks and all(c == [0, 4] for c in rollback_checks)


def test_validation_graphs_choose_the_weights_keep_best_keeps(monkeypatch):
    """Every evaluation scores the policy on the validation graphs too, and the kept weights
    are those of the best validation score, not of the best training-graph score."""
    from placerl.agents.episodes import GreedyEpisodes

    scored = []
    real = GreedyEpisodes.score

    def recording(self, model, indices=None):
        scored.append([g.name for g in self.env.graphs])
        return real(self, model, indices)

    monkeypatch.setattr(GreedyEpisodes, "score", recording)
    validation = ["synthetic:layered?n=10&seed=7", "synthetic:layered?n=9&seed=8"]
    fast = {"n_steps": 32, "batch_size": 32, "learning_rate": 3e-2}
    result = train({**SMALL, "total_steps": 256, "eval_every": 64, "hyperparams": fast,
                    "rollback": False, "validation_graphs": validation})  # fmt: skip
    assert ["layered-n10-s7", "layered-n9-s8"] in scored
    scores = [c["validation"] for c in result.curve]
    assert len(scores) == len(result.curve) >= 5 and len(set(scores)) > 1
    kept = result.curve[int(np.argmin(scores))]["step"]
    assert result.policy_step == (kept if min(scores) < scores[-1] else result.steps)


def test_validation_graphs_larger_than_the_padding_are_refused():
    with pytest.raises(ConfigError, match=r"validation_graphs: .*max_nodes"):
        train({**SMALL, "total_steps": 64, "eval_every": 64,
               "validation_graphs": ["synthetic:layered?n=30&seed=1"]})  # fmt: skip


def test_keep_best_holds_across_a_resume(tmp_path):
    fast = {"n_steps": 32, "batch_size": 32, "learning_rate": 3e-2}
    train({**SMALL, "total_steps": 256, "eval_every": 64, "hyperparams": fast,
           "out_dir": str(tmp_path)})  # fmt: skip
    state = json.loads((tmp_path / "checkpoint" / "state.json").read_text())
    assert (tmp_path / "checkpoint" / state["files"]["best"]).is_file()
    resumed = train({**SMALL, "total_steps": 512, "eval_every": 64, "hyperparams": fast,
                     "out_dir": str(tmp_path), "resume": True})  # fmt: skip
    evaluations = [c["runtimes"][0] for c in resumed.curve]  # both runs' evaluations
    assert resumed.graphs[0].final_runtime == min(evaluations)


def test_resume_refuses_another_configuration(tmp_path):
    train({**SMALL, "total_steps": 64, "eval_every": 0, "out_dir": str(tmp_path)})
    with pytest.raises(ConfigError, match="another configuration \\(extractor, order differ\\)"):
        train({**SMALL, "total_steps": 128, "eval_every": 0, "out_dir": str(tmp_path),
               "resume": True, "extractor": "gnn", "order": "bfs"})  # fmt: skip
    more = train({**SMALL, "total_steps": 128, "eval_every": 0, "out_dir": str(tmp_path),
                  "resume": True, "baselines": ["heft"]})  # the schedule may change
    assert more.steps >= 128


def test_resume_names_a_corrupted_checkpoint_state(tmp_path):
    train({**SMALL, "total_steps": 64, "eval_every": 0, "out_dir": str(tmp_path)})
    (tmp_path / "checkpoint" / "state.json").write_text('{"steps": 6')
    with pytest.raises(ConfigError, match=r"state.json is not a checkpoint state .*afresh"):
        train({**SMALL, "total_steps": 128, "eval_every": 0, "out_dir": str(tmp_path),
               "resume": True})  # fmt: skip


def test_resume_refuses_a_checkpoint_of_other_observations(tmp_path):
    train({**SMALL, "total_steps": 64, "eval_every": 0, "out_dir": str(tmp_path)})
    path = tmp_path / "checkpoint" / "state.json"
    state = json.loads(path.read_text())
    assert state["observation_version"] == OBSERVATION_VERSION
    path.write_text(json.dumps({**state, "observation_version": 1}))
    with pytest.raises(ConfigError, match=r"checkpoint trained on observations of version 1; "
                                          r"this placerl gives version \d.*resume=False"):
        train({**SMALL, "total_steps": 128, "eval_every": 0, "out_dir": str(tmp_path),
               "resume": True})  # fmt: skip
    del state["observation_version"]  # written before checkpoints carried it: SB3 checks
    path.write_text(json.dumps(state))
    assert train({**SMALL, "total_steps": 128, "eval_every": 0, "out_dir": str(tmp_path),
                  "resume": True}).steps >= 128  # fmt: skip


def test_a_checkpoint_of_another_shape_is_refused_by_name(tmp_path):
    train({**SMALL, "total_steps": 64, "eval_every": 0, "out_dir": str(tmp_path)})
    state = json.loads((tmp_path / "checkpoint" / "state.json").read_text())
    other = TrainConfig.from_dict({**SMALL, "env_kwargs": {"max_nodes": 20}})
    venv = _vector_env(other)
    with pytest.raises(ConfigError, match=r"trained on observations of another shape; this "
                                          r"placerl gives version \d.*resume=False"):
        _load_checkpoint(ALGORITHMS["maskable_ppo"].load(),
                         tmp_path / "checkpoint" / state["files"]["model"], venv, "cpu", tmp_path)


def test_an_env_argument_added_later_counts_as_its_default():
    def config(**env_kwargs):
        return TrainConfig.from_dict({**SMALL, "env": "refine", "env_kwargs": env_kwargs}).to_dict()

    saved = config(initial="best_of", passes=1)  # written before undo_worse existed
    assert changed_options(saved, config(initial="best_of", passes=1, undo_worse=False)) == []
    assert changed_options(saved, config(initial="best_of", passes=1, undo_worse=True)) == [
        "env_kwargs"]
    assert changed_options(saved, config(initial="best_of", passes=2)) == ["env_kwargs"]


def test_time_limit_stops_training_early():
    result = train({**SMALL, "total_steps": 100_000, "eval_every": 0, "time_limit_s": 1e-9})
    assert result.steps == SMALL["n_envs"]  # stopped at the first step after the budget
    assert result.graphs[0].final_runtime > 0  # evaluated as usual


def test_several_graphs_and_subprocess_envs():
    result = train({**SMALL, "graph": ["synthetic:layered?n=12&seed=0",
                                       "synthetic:layered?n=9&seed=1"],
                    "vec_env": "subproc", "total_steps": 128, "eval_every": 0})  # fmt: skip
    assert [g.graph for g in result.graphs] == ["layered-n12-s0", "layered-n9-s1"]


BAD = [
    ({"env": "grow"}, "env must be one of construct, refine, dual, one_shot, hierarchical, "
                      "got 'grow'"),
    ({"vec_env": "ray"}, "vec_env must be one of dummy, subproc, got 'ray'"),
    ({"n_envs": 0}, "n_envs must be an integer >= 1, got 0"),
    ({"total_steps": 1.5}, "total_steps must be an integer >= 0, got 1.5"),
    ({"rollback_graphs": -1}, "rollback_graphs must be an integer >= 0, got -1"),
    ({"validation_graphs": "synthetic:cifar10"}, "validation_graphs must be a list of specs, "
                                                 "got 'synthetic:cifar10'"),
    ({"resume": True}, "resume=True needs an out_dir"),
    ({"time_limit_s": -1}, "time_limit_s must be a number >= 0, got -1"),
    ({"time_limit_s": "1m"}, "time_limit_s must be a number >= 0, got '1m'"),
    ({"epochs": 3}, "unknown train option.*epochs; known: algo, baselines"),
    ({"order": "zigzag"}, "unknown traversal order 'zigzag'"),
    ({"algo": "sac"}, "unknown algorithm 'sac'"),
    ({"start_from_best": True}, "start_from_best needs env='refine'.*got env='construct'"),
    ({"device": "tpu"}, "device must be 'auto', 'cpu', 'cuda', 'cuda:<index>' or 'mps', got 'tpu'"),
    ({"out_dir": __file__}, r"out_dir '.*test_train.py' is a file; give a folder"),
]


@pytest.mark.parametrize(("change", "message"), BAD, ids=[m[:25] for _, m in BAD])
def test_bad_options(change, message):
    with pytest.raises(ConfigError, match=message):
        train({**SMALL, "total_steps": 8, **change})


def test_start_from_best_refines_from_the_best_placement_so_far():
    result = train({**SMALL, "env": "refine", "start_from_best": True, "total_steps": 256,
                    "eval_every": 0, "env_kwargs": {"initial": "single_device",
                                                    "reward": "normalized_delta"}})  # fmt: skip
    (outcome,) = result.graphs
    assert outcome.best_runtime < outcome.baselines["single_device"]


def test_short_refine_episodes_train_while_evaluations_and_the_saved_policy_pass_over_all(
        tmp_path):  # fmt: skip
    from placerl.agents.placer import env_for, load_model
    from placerl.baselines import Problem
    from placerl.cluster import load_cluster
    from placerl.graph import load_graph

    config = {**SMALL, "env": "refine", "start_from_best": True, "total_steps": 128,
              "eval_every": 64, "n_envs": 2, "out_dir": str(tmp_path),
              "env_kwargs": {"initial": "single_device", "moves": 3},
              "hyperparams": {"n_steps": 32, "batch_size": 32}}  # fmt: skip
    result = train(config)
    arguments = TrainConfig.from_dict(config).env_arguments(evaluation=True)
    assert "moves" not in arguments and arguments["initial"] == "single_device"
    assert TrainConfig.from_dict(config).env_arguments()["moves"] == 3
    model = load_model(str(tmp_path / "model.zip"))
    assert model.placerl_settings["moves"] == 3  # saved, so training can be rebuilt
    problem = Problem(load_graph(SMALL["graph"]), load_cluster(SMALL["cluster"]), "step_time")
    env = env_for(model, problem)
    assert env.moves is None  # but a placement passes over every node
    assert result.steps >= 128


@pytest.mark.parametrize("vec_env", ["dummy", "subproc"])
def test_start_from_best_wraps_every_training_env(vec_env):
    from placerl.envs import StartFromBest
    from placerl.train import _vector_env

    config = TrainConfig(**{**SMALL, "env": "refine", "start_from_best": True,
                            "vec_env": vec_env})  # fmt: skip
    venv = _vector_env(config)
    try:
        assert all(venv.env_is_wrapped(StartFromBest))
    finally:
        venv.close()


def test_config_round_trips():
    config = TrainConfig(graph=["a", "b"], baselines=("heft",))
    data = config.to_dict()
    assert data["graph"] == ["a", "b"] and data["baselines"] == ["heft"]
    assert TrainConfig.from_dict(data).to_dict() == data


def test_the_progress_bar_counts_whole_rollouts_at_the_runs_mean_rate():
    from stable_baselines3.common.vec_env import DummyVecEnv

    from placerl.agents import make_agent
    from placerl.agents.callbacks import Progress
    from placerl.envs import PlacementEnv

    env = DummyVecEnv([lambda: PlacementEnv(SMALL["graph"], SMALL["cluster"])] * 2)
    model = make_agent("maskable_ppo", env, "mlp", n_steps=128)
    progress = Progress(300)
    progress.init_callback(model)
    progress.on_training_start({}, {})
    try:
        assert progress.bar.total == 512  # 300 steps run as two rollouts of 2 x 128
        assert progress.bar.smoothing == 0  # the mean since the start, as steps_per_s
    finally:
        progress.on_training_end()
