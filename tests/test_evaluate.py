"""evaluate(): any placer, a trained policy included, in the training result schema."""

import json

import pytest

from placerl.baselines import solve
from placerl.errors import ConfigError
from placerl.evaluate import evaluate

GRAPH, CLUSTER = "synthetic:layered?n=12&seed=0", "placeto?n_devices=2"


def test_a_placer_in_the_training_schema(tmp_path):
    result = evaluate([GRAPH, "synthetic:layered?n=9&seed=1"], CLUSTER, "heft",
                      baselines=("single_device", "m_etf"), out_dir=str(tmp_path))  # fmt: skip
    assert [g.graph for g in result.graphs] == ["layered-n12-s0", "layered-n9-s1"]
    first = result.graphs[0]
    assert first.final_runtime == pytest.approx(solve("heft", GRAPH, CLUSTER).runtime)
    assert first.speedups()["single_device"] == pytest.approx(
        first.baselines["single_device"] / first.final_runtime)
    written = json.loads((tmp_path / "result.json").read_text())
    assert written["config"]["placer"] == "heft" and written["steps"] == 0
    assert written["graphs"][1]["best_placement"] == result.graphs[1].best_placement
    assert written["provenance"]["placerl"]


def test_placer_options_come_with_the_spec():
    result = evaluate(GRAPH, CLUSTER, "random?seed=3")
    expected = solve("random", GRAPH, CLUSTER, seed=3)
    assert result.graphs[0].best_placement == expected.placement.tolist()


def test_a_trained_policy_is_evaluated_like_any_placer(tmp_path):
    pytest.importorskip("stable_baselines3", reason="the rl extra is not installed")
    from placerl.train import train

    trained = train({"graph": GRAPH, "cluster": CLUSTER, "extractor": "mlp", "n_envs": 2,
                     "total_steps": 64, "eval_every": 0, "out_dir": str(tmp_path),
                     "hyperparams": {"n_steps": 32, "batch_size": 32}})  # fmt: skip
    result = evaluate(GRAPH, CLUSTER, f"policy?path={tmp_path}/model.zip")
    assert result.graphs[0].final_runtime == pytest.approx(trained.graphs[0].final_runtime)


@pytest.mark.parametrize(("placer", "message"), [
    ("hefty", "unknown placer 'hefty'"),
    ("random?sed=3", "sed"),
])  # fmt: skip
def test_bad_placer_specs_are_named(placer, message):
    with pytest.raises(ConfigError, match=message):
        evaluate(GRAPH, CLUSTER, placer)
