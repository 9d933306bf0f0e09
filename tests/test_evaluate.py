"""evaluate(): any placer, a trained policy included, in the result schema training shares."""

import json

import pytest

from placerl.baselines import solve
from placerl.errors import ClusterError, ConfigError
from placerl.evaluate import evaluate
from placerl.sim import CostModel, lower_bound

GRAPH, CLUSTER = "synthetic:layered?n=12&seed=0", "placeto?n_devices=2"


def test_a_placer_in_the_training_schema(tmp_path):
    result = evaluate(
        [GRAPH, "synthetic:layered?n=9&seed=1"],
        CLUSTER,
        "heft",
        baselines=("single_device", "m_etf"),
        out_dir=str(tmp_path),
    )
    assert [g.graph for g in result.graphs] == ["layered-n12-s0", "layered-n9-s1"]
    first = result.graphs[0]
    assert first.final_runtime == pytest.approx(solve("heft", GRAPH, CLUSTER).runtime)
    assert first.speedups()["single_device"] == pytest.approx(
        first.baselines["single_device"] / first.final_runtime
    )
    written = json.loads((tmp_path / "result.json").read_text())
    assert written["kind"] == "eval" and written["schema"] == 2
    assert written["config"]["placer"] == "heft" and "steps" not in written
    assert written["graphs"][1]["best_placement"] == result.graphs[1].best_placement
    assert written["graphs"][1]["best_placement_by_op"] == result.graphs[1].best_placement_by_op
    assert written["provenance"]["placerl"]
    bound = lower_bound(CostModel(GRAPH, CLUSTER))
    assert written["graphs"][0]["lower_bound"] == first.lower_bound == bound <= first.final_runtime


def test_placer_options_come_with_the_spec():
    result = evaluate(GRAPH, CLUSTER, "random?seed=3")
    expected = solve("random", GRAPH, CLUSTER, seed=3)
    assert result.graphs[0].best_placement == expected.placement.tolist()


def test_a_trained_policy_is_evaluated_like_any_placer(tmp_path):
    pytest.importorskip("stable_baselines3", reason="the rl extra is not installed")
    from placerl.run_config import AgentGroup, EnvGroup
    from placerl.train import train

    agent = AgentGroup(
        extractor="mlp", warm_start=None, hyperparams={"n_steps": 32, "batch_size": 32}
    )
    trained = train(
        {
            "graph": {"spec": GRAPH},
            "cluster": {"spec": CLUSTER},
            "env": EnvGroup(),
            "agent": agent,
            "n_envs": 2,
            "total_steps": 64,
            "eval_every": 0,
            "eval_samples": 0,
            "progress_bar": False,
            "resume": False,
        },
        out_dir=str(tmp_path),
    )
    result = evaluate(GRAPH, CLUSTER, f"policy?path={tmp_path}/model.zip")
    assert result.graphs[0].final_runtime == pytest.approx(trained.graphs[0].final_runtime)


@pytest.mark.parametrize(
    ("placer", "message"),
    [
        ("hefty", "unknown placer 'hefty'"),
        ("random?sed=3", "sed"),
    ],
)
def test_bad_placer_specs_are_named(placer, message):
    with pytest.raises(ConfigError, match=message):
        evaluate(GRAPH, CLUSTER, placer)


BAD = [
    ({"placer": 3}, ConfigError, "a placer spec must be a string like 'heft', got 3"),
    ({"graphs": []}, ConfigError, r"graphs must be a non-empty list of specs, got \[\]"),
    ({"graphs": 7}, ConfigError, "graphs must be a non-empty list of specs, got 7"),
    ({"baselines": "heft"}, ConfigError, "baselines must be a list of specs, got 'heft'"),
    (
        {"baselines": ["local_search?max_evaluations={steps}"]},
        ConfigError,
        r"\{steps\} and \{calls\} stand for the budget a training run spent \(placerl-train\);"
        " an evaluation trains none, so give a number",
    ),
    ({"baselines": None}, ConfigError, "baselines must be a list of specs, got None"),
    ({"baselines": ["hefty"]}, ConfigError, "unknown placer 'hefty'"),
    ({"objective": "fast"}, ConfigError, "unknown objective 'fast'"),
    ({"cluster": "tpu_pod"}, ClusterError, "unknown cluster preset 'tpu_pod'"),
    ({"graphs": "synthetic:nope"}, ConfigError, "unknown graph family 'nope'"),
    ({"out_dir": __file__}, ConfigError, r"out_dir '.*test_evaluate.py' is a file; give a folder"),
]


@pytest.mark.parametrize(("change", "error", "message"), BAD, ids=[m[:28] for _, _, m in BAD])
def test_bad_arguments_fail_before_any_work(change, error, message):
    arguments = {"graphs": GRAPH, "cluster": CLUSTER, "placer": "heft", **change}
    with pytest.raises(error, match=message):
        evaluate(
            arguments.pop("graphs"), arguments.pop("cluster"), arguments.pop("placer"), **arguments
        )
