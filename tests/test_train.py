"""train(config): files, result, resume, and every bad option."""

import dataclasses
import itertools
import json
import re

import numpy as np
import pytest

pytest.importorskip("stable_baselines3", reason="the rl extra is not installed")

from placerl.agents.factory import ALGORITHMS
from placerl.baselines import solve
from placerl.envs.case import OBSERVATION_VERSION
from placerl.errors import ConfigError
from placerl.run_config import AgentGroup, EnvGroup, OrderGroup, RunConfig
from placerl.sim import CostModel, lower_bound
from placerl.train import _load_checkpoint, _vector_env, changed_options, train

GRAPH, CLUSTER = "synthetic:layered?n=12&seed=0", "placeto?n_devices=2"
#: A tiny run on the groups' bare defaults (the construct env, no warm start), not the main
#: job's recipe: 12 nodes, the MLP extractor, two envs of 32-step rollouts.
SMALL = {
    "graph": {"spec": GRAPH},
    "cluster": {"spec": CLUSTER},
    "order": OrderGroup(),
    "env": EnvGroup(),
    "agent": AgentGroup(
        extractor="mlp", warm_start=None, hyperparams={"n_steps": 32, "batch_size": 32}
    ),
    "n_envs": 2,
    "eval_samples": 0,
    "progress_bar": False,
    "resume": False,
    "baselines": ["single_device", "heft"],
}


def small(**options) -> RunConfig:
    """:data:`SMALL` with ``options`` over it, key by key into the groups
    (``agent={"extractor": "gnn"}``)."""
    return RunConfig.from_dict(options, base=RunConfig.from_dict(SMALL, base=RunConfig.schema()))


def test_train_writes_a_complete_result(tmp_path):
    result = train(
        small(total_steps=256, eval_every=128, checkpoint_every=128, eval_samples=3),
        out_dir=str(tmp_path),
    )
    assert result.steps >= 256
    assert [c["step"] for c in result.curve][:3] == [0, 128, 256]
    (outcome,) = result.graphs
    assert set(outcome.baselines) == {"single_device", "heft"}
    assert outcome.sampled_runtime <= outcome.final_runtime
    assert outcome.best_runtime <= outcome.sampled_runtime
    assert outcome.speedups()["heft"] == pytest.approx(
        outcome.baselines["heft"] / outcome.final_runtime
    )
    assert result.timings["steps_per_s"] > 0
    for name in ("model.zip", "result.json", "best_placement.json", "checkpoint/state.json"):
        assert (tmp_path / name).is_file(), name
    files = json.loads((tmp_path / "checkpoint" / "state.json").read_text())["files"]
    assert files["model"] == f"model-{result.steps}.zip"
    assert sorted(p.name for p in (tmp_path / "checkpoint").glob("model-*")) == [files["model"]]
    written = json.loads((tmp_path / "result.json").read_text())
    assert written["kind"] == "train" and written["schema"] == 2
    assert written["graphs"][0]["best_runtime"] == outcome.best_runtime
    bound = lower_bound(CostModel(GRAPH, CLUSTER))
    assert written["graphs"][0]["lower_bound"] == outcome.lower_bound == bound
    assert bound <= outcome.best_runtime and bound <= min(outcome.baselines.values())
    assert written["config"]["graph"] == {"spec": GRAPH}
    assert written["config"]["seed"] == 0 and written["config"]["order"]["name"] == "topo"
    assert (
        written["config"]
        == RunConfig.from_dict(
            small(total_steps=256, eval_every=128, checkpoint_every=128, eval_samples=3)
        ).to_dict()
    )
    versions = written["provenance"]
    assert versions["placerl"] and versions["torch"] and versions["stable-baselines3"]
    assert versions["git_revision"] is None or len(versions["git_revision"]) >= 40
    best = json.loads((tmp_path / "best_placement.json").read_text())["layered-n12-s0"]
    assert len(best["placement"]) == 12


def test_best_placement_names_a_device_of_the_cluster_for_every_op(tmp_path):
    from placerl.cluster import load_cluster
    from placerl.graph import load_graph

    result = train(small(total_steps=64, eval_every=0), out_dir=str(tmp_path))
    graph, cluster = load_graph(GRAPH), load_cluster(CLUSTER)
    written = json.loads((tmp_path / "best_placement.json").read_text())
    assert list(written) == [graph.name]
    best = written[graph.name]
    devices = [device.name for device in cluster.devices]
    assert sorted(best["placement_by_op"]) == sorted(graph.names)  # every op, by name
    assert set(best["placement_by_op"].values()) <= set(devices)
    assert [best["placement_by_op"][name] for name in graph.names] == [
        devices[d] for d in best["placement"]
    ]
    (outcome,) = result.graphs
    assert best["runtime"] == outcome.best_runtime and best["feasible"] is True
    assert best["placement_by_op"] == outcome.best_placement_by_op


@pytest.mark.parametrize("folder", [True, False], ids=["out_dir", "no out_dir"])
def test_train_returns_the_model_with_the_weights_it_kept(tmp_path, folder):
    """``result.model`` is the SB3 model the outcomes were measured with: its greedy episode
    gives ``final_runtime`` (the kept weights, not necessarily the last), and ``model.zip``
    holds the same weights."""
    from placerl.agents.episodes import rollout
    from placerl.agents.placer import load_model
    from placerl.envs import PlacementEnv

    fast = {"n_steps": 32, "batch_size": 32, "learning_rate": 3e-2}
    result = train(
        small(total_steps=256, eval_every=64, agent={"hyperparams": fast}),
        out_dir=str(tmp_path) if folder else None,
    )
    model = result.model
    assert model is not None and model.num_timesteps == result.steps
    assert "model" not in result.to_dict()
    env = PlacementEnv(GRAPH, CLUSTER)
    obs, _ = env.reset(seed=0)
    action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
    assert env.action_masks()[int(action)]
    assert rollout(model, env, graph=0).runtime == result.graphs[0].final_runtime
    if folder:
        saved = load_model(tmp_path / "model.zip", "cpu").policy.state_dict()
        for name, weights in model.policy.state_dict().items():
            np.testing.assert_array_equal(weights.cpu().numpy(), saved[name].cpu().numpy())
    else:
        assert result.out_dir is None and not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ({"env_kwargs": {"reward": "normalized_delta"}}, r"'env_kwargs' is now env\.<argument>"),
        ({"initial": "best_of"}, r"'initial' is now env\.init"),
        ({"extractor": "gnn"}, r"'extractor' is now agent\.extractor"),
        ({"out_dir": "runs/x"}, r"'out_dir' is now train\(config, out_dir=\.\.\.\)"),
    ],
)
def test_a_key_of_the_old_flat_config_names_its_new_place(old, new):
    with pytest.raises(ConfigError, match=new):
        train(small(total_steps=8, **old))


@pytest.mark.parametrize(
    ("typo", "message"),
    [
        ({"total_step": 1}, "unknown option 'total_step'; did you mean total_steps?"),
        ({"env": {"rewad": "delta"}}, "unknown option 'env.rewad'; did you mean env.reward?"),
        ({"agent": {"warm_starts": None}}, "did you mean agent.warm_start?"),
    ],
)
def test_a_misspelled_key_fails_with_the_closest_known_one(typo, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        train({**SMALL, **typo})


def test_a_mapping_merges_into_the_main_job():
    main = RunConfig()
    assert RunConfig.from_dict({}) == main
    assert RunConfig.from_dict({"total_steps": 5}) == dataclasses.replace(main, total_steps=5)
    nested = RunConfig.from_dict({"env": {"reward": "log_speedup"}, "agent": {"rollback": False}})
    assert nested.env == dataclasses.replace(main.env, reward="log_speedup")
    assert nested.agent == dataclasses.replace(main.agent, rollback=False)
    assert dataclasses.replace(nested, env=main.env, agent=main.agent) == main
    whole = RunConfig.from_dict({"env": EnvGroup(kind="construct")})
    assert whole.env == EnvGroup(kind="construct") and whole.agent == main.agent
    assert RunConfig.from_dict(main) is main


def test_the_main_job_is_what_placerl_train_composes():
    pytest.importorskip("hydra", reason="the experiments extra is not installed")
    from placerl.compose import compose_run

    main = RunConfig()
    assert compose_run() == main
    assert main.env.kind == "refine" and main.env.start_from_best and main.env.moves == 4
    assert main.eval_samples == 8 and main.progress_bar and main.resume


def test_a_baselines_steps_stand_for_the_steps_trained():
    """``total_steps=100`` trains two rollouts of 64: the search gets 128 evaluations."""
    search = "local_search?init=heft&restarts=1000&max_evaluations={steps}&time_limit=60"
    result = train(small(total_steps=100, eval_every=0, baselines=[search]))
    assert result.steps == 128
    (outcome,) = result.graphs
    assert list(outcome.baselines) == [search]  # the same key in every run of the config
    budgeted = solve(
        "local_search",
        GRAPH,
        CLUSTER,
        init="heft",
        restarts=1000,
        max_evaluations=128,
        time_limit=60,
    )
    assert budgeted.info["evaluations"] == 128
    assert outcome.baselines[search] == budgeted.runtime


def test_a_run_that_trained_nothing_gives_a_steps_search_one_evaluation():
    """``max_evaluations=0`` would mean no limit: the search gets its start only."""
    search = "local_search?init=heft&restarts=1000&max_evaluations={steps}&time_limit=60"
    result = train(small(total_steps=0, eval_every=0, baselines=[search]))
    assert result.steps == 0
    heft = solve("heft", GRAPH, CLUSTER).runtime
    assert result.graphs[0].baselines[search] == heft


def test_resume_continues_steps_curve_and_best(tmp_path):
    first = train(small(total_steps=128, eval_every=64), out_dir=str(tmp_path))
    state = json.loads((tmp_path / "checkpoint" / "state.json").read_text())
    assert state["steps"] == first.steps
    resumed = train(small(total_steps=256, eval_every=64, resume=True), out_dir=str(tmp_path))
    assert resumed.steps >= 256
    steps = [c["step"] for c in resumed.curve]
    assert steps[: len(first.curve)] == [c["step"] for c in first.curve]  # the curve goes on
    assert steps == sorted(steps)
    assert resumed.graphs[0].best_runtime <= first.graphs[0].best_runtime
    assert resumed.timings["train"] >= first.timings["train"]


def test_the_best_curve_tracks_the_search_at_every_rollout_without_evaluations(tmp_path):
    result = train(small(total_steps=128, eval_every=0), out_dir=str(tmp_path))
    assert [c["step"] for c in result.curve] == [128]  # the final evaluation only
    steps = [p["step"] for p in result.best_curve]
    assert steps[:2] == [64, 128] and steps == sorted(steps)  # 2 envs x 32 steps per rollout
    found = [p["best"][0] for p in result.best_curve]
    assert found == sorted(found, reverse=True) and found[-1] == result.graphs[0].best_runtime
    calls = [p["calls"] for p in result.best_curve]  # the anytime curve of the search
    seconds = [p["wall_s"] for p in result.best_curve]
    assert calls[0] > 0 and calls == sorted(calls) and seconds == sorted(seconds)
    assert calls[-1] <= result.simulator_calls["total"]
    assert seconds[-1] <= sum(result.timings[k] for k in ("warm_start", "train", "evaluate"))
    assert all(p["feasible"] == [True] for p in result.best_curve)
    resumed = train(small(total_steps=256, eval_every=0, resume=True), out_dir=str(tmp_path))
    assert resumed.best_curve[: len(result.best_curve)] == result.best_curve
    seconds = [p["wall_s"] for p in resumed.best_curve]  # the first process's final rollouts too
    assert seconds == sorted(seconds) and resumed.timings["evaluate"] > result.timings["evaluate"]
    assert [p["step"] for p in resumed.best_curve][-1] == resumed.steps
    written = json.loads((tmp_path / "result.json").read_text())
    assert written["best_curve"] == resumed.best_curve


def test_resume_without_a_checkpoint_starts_fresh(tmp_path):
    result = train(small(total_steps=64, eval_every=0, resume=True), out_dir=str(tmp_path))
    assert result.steps >= 64


def test_same_seed_same_result():
    a = train(small(total_steps=256, eval_every=64, threads=1))
    b = train(small(total_steps=256, eval_every=64, threads=1))
    assert a.graphs[0].final_runtime == b.graphs[0].final_runtime
    np.testing.assert_array_equal(a.graphs[0].best_placement, b.graphs[0].best_placement)
    assert [c["runtimes"] for c in a.curve] == [c["runtimes"] for c in b.curve]
    assert [c["step"] for c in a.curve] == [0, 64, 128, 192, 256, 256]


def test_warm_start_clones_the_placer():
    result = train(
        small(total_steps=64, eval_every=0, agent={"warm_start": "heft", "warm_start_epochs": 600})
    )
    # 600 epochs: at 300 the MLP's clone also agrees on 83% of the choices but, on a few it
    # gets wrong, runs 1.16x HEFT
    report = result.warm_start
    assert report["accuracy"] > 0.75  # identical devices: the expert's tie-break is not copied
    assert report["policy_runtime"] <= 1.05 * report["expert_runtime"]
    assert result.timings["warm_start"] > 0


def test_warm_start_rounds_run_dagger_after_the_clone():
    result = train(
        small(
            total_steps=0,
            eval_every=0,
            env={"kind": "refine", "init": "m_topo", "undo_worse": True},
            agent={"warm_start": "best_move", "warm_start_epochs": 2, "warm_start_rounds": 1},
        )
    )
    report = result.warm_start
    assert report["rounds"] == 1 and len(report["round_runtimes"]) == 2
    assert report["samples"] == 2 * 12  # the expert's pass and the clone's, over 12 nodes
    assert report["policy_runtime"] == min(report["round_runtimes"])


@pytest.mark.parametrize("keep_best", [True, False])
def test_keep_best_ends_with_the_best_evaluation(keep_best):
    fast = {"n_steps": 32, "batch_size": 32, "learning_rate": 3e-2}
    no_rollback = {"hyperparams": fast, "rollback": False}  # the weights are the step's
    result = train(small(total_steps=512, eval_every=64, keep_best=keep_best, agent=no_rollback))
    evaluations = [c["runtimes"][0] for c in result.curve]  # the last one is the final weights
    expected = min(evaluations) if keep_best else evaluations[-1]
    assert result.graphs[0].final_runtime == expected
    best_step = result.curve[evaluations.index(min(evaluations))]["step"]
    assert result.policy_step == (
        best_step if keep_best and evaluations[-1] > min(evaluations) else result.steps
    )
    found = [c["best"][0] for c in result.curve]  # the best seen so far never gets worse
    assert found == sorted(found, reverse=True) and found[-1] == result.graphs[0].best_runtime
    assert all(f <= e for f, e in zip(found, evaluations, strict=True))


@pytest.mark.parametrize("rollback", [True, False])
def test_rollback_keeps_the_greedy_curve_from_getting_worse(rollback):
    erratic = {"n_steps": 32, "batch_size": 32, "learning_rate": 3e-2}
    result = train(
        small(
            total_steps=768,
            eval_every=64,
            keep_best=False,
            agent={
                "extractor": "gnn",
                "rollback": rollback,
                "warm_start": "heft",
                "hyperparams": erratic,
            },
        )
    )
    curve = [c["runtimes"][0] for c in result.curve]
    worse = [b > a * (1 + 1e-12) for a, b in itertools.pairwise(curve)]
    assert not any(worse) if rollback else any(worse)
    assert (result.graphs[0].final_runtime <= curve[0]) or not rollback


def test_greedy_episodes_of_weights_seen_before_are_not_run_again(monkeypatch):
    """The evaluations and the rollback checks share their greedy episodes: the run is the
    one that runs every episode anew (every figure equal), with fewer episodes. (The MLP
    extractor: the untrained GNN already places as HEFT here, and 256 steps do not move it.)"""
    from placerl.agents import episodes

    made, original = [], episodes.GreedyEpisodes.__init__

    def run(keep):
        def init(self, env, **ignored):
            original(self, env, keep)
            made.append(self)

        made.clear()
        monkeypatch.setattr(episodes.GreedyEpisodes, "__init__", init)
        result = train(
            small(
                total_steps=256,
                eval_every=64,
                agent={"hyperparams": {"n_steps": 32, "batch_size": 32, "learning_rate": 3e-2}},
            )
        )
        return result, made[0]

    remembered, with_memory = run(8)
    anew, without = run(0)

    def figures(curve, cost=("wall_s",)):
        return [{k: v for k, v in c.items() if k not in cost} for c in curve]

    assert figures(remembered.curve) == figures(anew.curve) and remembered.graphs == anew.graphs
    assert (remembered.policy_step, remembered.steps) == (anew.policy_step, anew.steps)
    cost = ("wall_s", "calls")  # what the memory saves
    assert figures(remembered.best_curve, cost) == figures(anew.best_curve, cost)
    assert remembered.best_curve[-1]["calls"] < anew.best_curve[-1]["calls"]
    assert len({tuple(c["runtimes"]) for c in anew.curve}) > 1  # the weights did change
    assert with_memory.runs + with_memory.reused == without.runs
    assert with_memory.reused >= 5 and without.reused == 0


def test_the_kept_step_is_that_of_the_weights_a_rollback_returned_to(monkeypatch):
    from placerl.agents.episodes import GreedyEpisodes

    real, checks = GreedyEpisodes.score, []

    def ever_worse(self, model, indices=None):  # every rollback check after the first loses
        results, score = real(self, model, indices)
        if indices is None:  # an evaluation's
            return results, score
        checks.append(None)
        return results, float(len(checks))

    monkeypatch.setattr(GreedyEpisodes, "score", ever_worse)
    result = train(small(total_steps=128, eval_every=0, keep_best=False))
    assert len(checks) > 2 and result.steps >= 128
    assert result.policy_step == 0  # every update undone: the first check's weights
    monkeypatch.setattr(GreedyEpisodes, "score", real)
    assert train(small(total_steps=128, eval_every=0, keep_best=False)).policy_step > 0


def test_rollback_checks_only_its_share_of_the_graphs(monkeypatch):
    from placerl.agents.episodes import GreedyEpisodes

    checked = []
    real = GreedyEpisodes.score

    def counting(self, model, indices=None):
        checked.append(None if indices is None else list(indices))
        return real(self, model, indices)

    monkeypatch.setattr(GreedyEpisodes, "score", counting)
    graphs = [f"synthetic:layered?n=8&seed={s}" for s in range(5)]
    train(small(graph={"spec": graphs}, total_steps=64, eval_every=0, agent={"rollback_graphs": 2}))
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
    result = train(
        small(
            total_steps=256,
            eval_every=64,
            validation_graphs=validation,
            agent={"hyperparams": fast, "rollback": False},
        )
    )
    assert ["layered-n10-s7", "layered-n9-s8"] in scored
    scores = [c["validation"] for c in result.curve]
    assert len(scores) == len(result.curve) >= 5 and len(set(scores)) > 1
    kept = result.curve[int(np.argmin(scores))]["step"]
    assert result.policy_step == (kept if min(scores) < scores[-1] else result.steps)


def test_validation_graphs_larger_than_the_padding_are_refused():
    with pytest.raises(ConfigError, match=r"validation_graphs: .*max_nodes"):
        train(
            small(
                total_steps=64, eval_every=64, validation_graphs=["synthetic:layered?n=30&seed=1"]
            )
        )


def test_keep_best_holds_across_a_resume(tmp_path):
    fast = {"agent": {"hyperparams": {"n_steps": 32, "batch_size": 32, "learning_rate": 3e-2}}}
    train(small(total_steps=256, eval_every=64, **fast), out_dir=str(tmp_path))
    state = json.loads((tmp_path / "checkpoint" / "state.json").read_text())
    assert (tmp_path / "checkpoint" / state["files"]["best"]).is_file()
    resumed = train(
        small(total_steps=512, eval_every=64, resume=True, **fast), out_dir=str(tmp_path)
    )
    evaluations = [c["runtimes"][0] for c in resumed.curve]  # both runs' evaluations
    assert resumed.graphs[0].final_runtime == min(evaluations)


def test_resume_refuses_another_configuration(tmp_path):
    train(small(total_steps=64, eval_every=0), out_dir=str(tmp_path))
    with pytest.raises(
        ConfigError,
        match=r"another configuration \(agent\.extractor, "
        r"order\.name differ\)",
    ):
        train(
            small(
                total_steps=128,
                eval_every=0,
                resume=True,
                agent={"extractor": "gnn"},
                order={"name": "bfs"},
            ),
            out_dir=str(tmp_path),
        )
    more = train(
        small(total_steps=128, eval_every=0, resume=True, baselines=["heft"]), out_dir=str(tmp_path)
    )  # the schedule may change
    assert more.steps >= 128


def test_resume_names_a_corrupted_checkpoint_state(tmp_path):
    train(small(total_steps=64, eval_every=0), out_dir=str(tmp_path))
    (tmp_path / "checkpoint" / "state.json").write_text('{"steps": 6')
    with pytest.raises(ConfigError, match=r"state.json is not a checkpoint state .*afresh"):
        train(small(total_steps=128, eval_every=0, resume=True), out_dir=str(tmp_path))


def test_resume_refuses_a_checkpoint_of_other_observations(tmp_path):
    train(small(total_steps=64, eval_every=0), out_dir=str(tmp_path))
    path = tmp_path / "checkpoint" / "state.json"
    state = json.loads(path.read_text())
    assert state["observation_version"] == OBSERVATION_VERSION
    path.write_text(json.dumps({**state, "observation_version": 1}))
    with pytest.raises(
        ConfigError,
        match=r"checkpoint trained on observations of version 1; "
        r"this placerl gives version \d.*resume=False",
    ):
        train(small(total_steps=128, eval_every=0, resume=True), out_dir=str(tmp_path))
    del state["observation_version"]  # written before checkpoints carried it: SB3 checks
    path.write_text(json.dumps(state))
    assert (
        train(small(total_steps=128, eval_every=0, resume=True), out_dir=str(tmp_path)).steps >= 128
    )


def test_resume_refuses_a_checkpoint_of_an_older_placerl_by_name(tmp_path):
    train(small(total_steps=64, eval_every=0), out_dir=str(tmp_path))
    path = tmp_path / "checkpoint" / "state.json"
    state = json.loads(path.read_text())
    del state["schema"]  # an older placerl's checkpoint: a flat config
    path.write_text(json.dumps({**state, "config": {"env_kwargs": {}, "graph": "g"}}))
    with pytest.raises(
        ConfigError,
        match=r"checkpoint of an older placerl \(config schema 1; "
        r"this placerl writes 2\).*resume=False",
    ):
        train(small(total_steps=128, eval_every=0, resume=True), out_dir=str(tmp_path))


def test_a_checkpoint_of_another_shape_is_refused_by_name(tmp_path):
    train(small(total_steps=64, eval_every=0), out_dir=str(tmp_path))
    state = json.loads((tmp_path / "checkpoint" / "state.json").read_text())
    other = RunConfig.from_dict(small(env={"max_nodes": 20})).check()
    venv = _vector_env(other)
    with pytest.raises(
        ConfigError,
        match=r"trained on observations of another shape; this "
        r"placerl gives version \d.*resume=False",
    ):
        _load_checkpoint(
            ALGORITHMS["maskable_ppo"].load(),
            tmp_path / "checkpoint" / state["files"]["model"],
            venv,
            "cpu",
            tmp_path,
        )


def test_an_env_argument_added_later_counts_as_its_default():
    def config(**env):
        return RunConfig.from_dict(small(env={"kind": "refine", **env})).to_dict()

    saved = config(init="best_of", passes=1)
    del saved["env"]["undo_worse"]  # written before undo_worse existed
    assert changed_options(saved, config(init="best_of", passes=1, undo_worse=False)) == []
    assert changed_options(saved, config(init="best_of", passes=1, undo_worse=True)) == [
        "env.undo_worse"
    ]
    assert changed_options(saved, config(init="best_of", passes=2)) == ["env.passes"]


def test_time_limit_stops_training_early():
    result = train(small(total_steps=100_000, eval_every=0, time_limit_s=1e-9))
    assert result.steps == SMALL["n_envs"]  # stopped at the first step after the budget
    assert result.graphs[0].final_runtime > 0  # evaluated as usual


def test_several_graphs_and_subprocess_envs():
    result = train(
        small(
            graph={"spec": ["synthetic:layered?n=12&seed=0", "synthetic:layered?n=9&seed=1"]},
            vec_env="subproc",
            total_steps=128,
            eval_every=0,
        )
    )
    assert [g.graph for g in result.graphs] == ["layered-n12-s0", "layered-n9-s1"]


BAD = [
    (
        {"env": {"kind": "grow"}},
        "env.kind must be one of construct, refine, dual, one_shot, hierarchical, got 'grow'",
    ),
    ({"vec_env": "ray"}, "vec_env must be one of dummy, subproc, got 'ray'"),
    ({"n_envs": 0}, "n_envs must be an integer >= 1, got 0"),
    ({"total_steps": 1.5}, "total_steps must be an integer >= 0, got 1.5"),
    ({"agent": {"rollback_graphs": -1}}, "agent.rollback_graphs must be an integer >= 0, got -1"),
    (
        {"validation_graphs": "synthetic:cifar10"},
        "validation_graphs must be a list of specs, got 'synthetic:cifar10'",
    ),
    ({"time_limit_s": -1}, "time_limit_s must be a number >= 0, got -1"),
    ({"time_limit_s": "1m"}, "time_limit_s must be a number >= 0, got '1m'"),
    ({"epochs": 3}, "unknown option 'epochs'.*known here: agent, baselines"),
    ({"order": {"name": "zigzag"}}, "order.name must be one of topo, .*got 'zigzag'"),
    ({"agent": {"algo": "sac"}}, "agent.algo must be one of maskable_ppo, .*got 'sac'"),
    (
        {"env": {"start_from_best": True}},
        "env.start_from_best needs env.kind='refine'.*got env.kind='construct'",
    ),
    ({"device": "tpu"}, "device must be 'auto', 'cpu', 'cuda', 'cuda:<index>' or 'mps', got 'tpu'"),
    ({"out_dir": __file__}, r"out_dir '.*test_train.py' is a file; give a folder"),
]


@pytest.mark.parametrize(("change", "message"), BAD, ids=[m[:25] for _, m in BAD])
def test_bad_options(change, message):
    change = dict(change)
    out_dir = change.pop("out_dir", None)  # a keyword of train, not an option
    with pytest.raises(ConfigError, match=message):
        train(small(**{"total_steps": 8, **change}), out_dir=out_dir)


def test_start_from_best_refines_from_the_best_placement_so_far():
    result = train(
        small(
            total_steps=256,
            eval_every=0,
            env={
                "kind": "refine",
                "start_from_best": True,
                "init": "single_device",
                "reward": "normalized_delta",
            },
        )
    )
    (outcome,) = result.graphs
    assert outcome.best_runtime < outcome.baselines["single_device"]


def test_short_refine_episodes_train_while_evaluations_and_the_saved_policy_pass_over_all(tmp_path):
    from placerl.agents.placer import env_for, load_model
    from placerl.baselines import Problem
    from placerl.cluster import load_cluster
    from placerl.graph import load_graph

    config = small(
        total_steps=128,
        eval_every=64,
        n_envs=2,
        env={
            "kind": "refine",
            "start_from_best": True,
            "init": "single_device",
            "moves": 3,
            "kick": 2,
        },
        agent={"hyperparams": {"n_steps": 32, "batch_size": 32}},
    )
    result = train(config, out_dir=str(tmp_path))
    arguments = RunConfig.from_dict(config).env_arguments(evaluation=True)
    assert "moves" not in arguments and "kick" not in arguments
    assert arguments["init"] == "single_device"
    training = RunConfig.from_dict(config).env_arguments()
    assert training["moves"] == 3 and training["kick"] == 2
    model = load_model(str(tmp_path / "model.zip"))
    assert model.placerl_settings["moves"] == 3  # saved, so training can be rebuilt
    assert model.placerl_settings["kick"] == 2
    problem = Problem(load_graph(GRAPH), load_cluster(CLUSTER), "step_time")
    env = env_for(model, problem)
    assert env.moves is None and env.kick == 0  # a placement passes over its own start
    assert result.steps >= 128


@pytest.mark.parametrize("vec_env", ["dummy", "subproc"])
def test_start_from_best_wraps_every_training_env(vec_env):
    from placerl.envs import StartFromBest

    config = RunConfig.from_dict(
        small(env={"kind": "refine", "start_from_best": True}, vec_env=vec_env)
    ).check()
    venv = _vector_env(config)
    try:
        assert all(venv.env_is_wrapped(StartFromBest))
    finally:
        venv.close()


def test_config_round_trips():
    config = RunConfig.from_dict({"graph": {"spec": ("a", "b")}, "baselines": ("heft",)})
    data = config.to_dict()
    assert data["graph"] == {"spec": ["a", "b"]} and data["baselines"] == ["heft"]
    assert RunConfig.from_dict(data).to_dict() == data
    assert RunConfig.from_dict(data) == config


def test_the_progress_bar_counts_whole_rollouts_at_the_runs_mean_rate():
    from stable_baselines3.common.vec_env import DummyVecEnv

    from placerl.agents import make_agent
    from placerl.agents.callbacks import Progress
    from placerl.envs import PlacementEnv

    env = DummyVecEnv([lambda: PlacementEnv(GRAPH, CLUSTER)] * 2)
    model = make_agent("maskable_ppo", env, "mlp", n_steps=128)
    progress = Progress(300)
    progress.init_callback(model)
    progress.on_training_start({}, {})
    try:
        assert progress.bar.total == 512  # 300 steps run as two rollouts of 2 x 128
        assert progress.bar.smoothing == 0  # the mean since the start, as steps_per_s
    finally:
        progress.on_training_end()


def test_every_simulation_through_the_envs_is_counted(tmp_path, monkeypatch):
    """The run's simulator calls are every ``_score`` any of its envs made: training
    rollouts, greedy evaluations, rollback checks, the final greedy and sampled rollouts."""
    from placerl.envs.base import PlacementEnvBase

    made = []
    score = PlacementEnvBase._score
    monkeypatch.setattr(
        PlacementEnvBase, "_score", lambda self, result: made.append(1) or score(self, result)
    )
    search = "local_search?max_evaluations={calls}"
    result = train(
        small(
            total_steps=128,
            eval_every=64,
            eval_samples=2,
            validation_graphs=["synthetic:layered?n=12&seed=0"],
            baselines=["heft", search],
        ),
        out_dir=str(tmp_path),
    )
    calls = result.simulator_calls
    assert (
        calls["total"]
        == len(made)
        == sum(calls[k] for k in ("training", "evaluation", "validation"))
    )
    assert calls["training"] >= 128 // 12 and calls["evaluation"] > 0 and calls["validation"] > 0
    assert json.loads((tmp_path / "result.json").read_text())["simulator_calls"] == calls
    from placerl.baselines.references import reference
    from placerl.graph import load_graph

    resolved = search.replace("{calls}", str(calls["total"]))  # searched at the run's calls
    graph = load_graph("synthetic:layered?n=12&seed=0")
    again = reference(graph, "placeto?n_devices=2", "step_time", resolved).score
    assert result.graphs[0].baselines[search] == again
