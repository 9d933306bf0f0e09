"""placerl.bench.recipe: a recipe trains on train cases, selects on validation, scores test."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("stable_baselines3", reason="the rl extra is not installed")
pytest.importorskip("pandas", reason="the experiments extra is not installed")

from placerl.bench import Case, load_suite
from placerl.bench.leaderboard import leaderboard
from placerl.bench.recipe import recipe_label, run_recipe, training_run
from placerl.bench.suite import Suite
from placerl.errors import ConfigError
from placerl.run_config import check_recipe

#: A budget that trains in seconds: what is tested is the protocol, not the policy.
QUICK = ("total_steps=128", "n_envs=2", "eval_every=64", "eval_samples=0", "progress_bar=false")
FAMILY = "tiny/chain-n12"


@pytest.fixture(scope="module")
def suite():
    return load_suite("placebench-v1")


@pytest.fixture(scope="module")
def scored(suite, tmp_path_factory):
    out = tmp_path_factory.mktemp("recipe")
    cases = [c for c in suite.select("tiny", "test") if c.family == FAMILY]
    return out, cases, run_recipe(suite, cases, "placeto", QUICK, 3, out)


def test_the_policy_trains_on_train_selects_on_validation_and_scores_test(suite, scored):
    out, cases, records = scored
    train, validation = suite.training_cases(FAMILY)
    assert [r["case"] for r in records] == [c.name for c in cases]
    for record in records:
        training = record["training"]
        assert training["cases"] == [c.name for c in train]
        assert training["budget"] == {"total_steps": 128, "time_limit_s": 0.0}
        assert training["device"].split(":")[0] in ("cpu", "cuda", "mps")
        assert {c.split for c in train} == {"train"}
        assert training["validation"] == [c.name for c in validation]
        assert (
            record["placer"] == "recipe:placeto[total_steps=128,n_envs=2,eval_every=64,"
            "eval_samples=0]"
        )  # how it runs is no part of the name
        assert record["seed"] == training["seed"] == 3 and record["error"] is None
        assert record["feasible"] and record["score"] > 0
    saved = json.loads((out / "training" / "tiny__chain-n12-seed3" / "result.json").read_text())
    assert saved["config"]["validation_graphs"] == [c.graph for c in validation]
    assert saved["config"]["graph"]["spec"] == [c.graph for c in train]


def test_every_training_call_is_counted_once_and_starts_the_trace(scored):
    out, _, records = scored
    saved = json.loads((out / "training" / "tiny__chain-n12-seed3" / "result.json").read_text())
    training = records[0]["training"]
    assert training["simulator_calls"] == saved["simulator_calls"]["total"] > 0
    assert saved["simulator_calls"]["validation"] > 0  # selection read the validation cases
    for record in records:
        assert record["training"] == training  # one training for the family
        first, last = record["trace"][0], record["trace"][-1]
        assert first[0] >= training["simulator_calls"] and first[1] >= training["wall_s"]
        assert last[0] <= training["simulator_calls"] + record["simulator_calls"]
        assert last[1] <= training["wall_s"] + record["wall_s"] + 1e-9
        assert last[2] == record["runtime"]  # the anytime curve ends at the placement scored
    row = leaderboard([out]).iloc[0]
    assert row["seeds"] == 1 and row["cases"] == len(records)
    assert row["simulator_calls"] == training["simulator_calls"] + sum(
        r["simulator_calls"] for r in records
    )


def test_a_finished_run_is_read_back_without_training_again(suite, scored, monkeypatch):
    out, cases, records = scored

    def fail(*args, **kwargs):
        raise AssertionError("trained again")

    monkeypatch.setattr("placerl.train.train", fail)
    monkeypatch.setattr("placerl.bench.recipe.run_case", fail)
    assert run_recipe(suite, cases, "placeto", QUICK, 3, out) == records


class Trained(Exception):
    """What the stand-in for training raises: the run it was asked to train."""


def test_a_new_seed_in_the_same_folder_trains_again(suite, scored, monkeypatch):
    out, cases, _ = scored

    def train(run, out_dir):
        raise Trained(run.seed, out_dir)

    monkeypatch.setattr("placerl.train.train", train)
    with pytest.raises(Trained) as trained:
        run_recipe(suite, cases, "placeto", QUICK, 4, out)
    assert trained.value.args == (4, str(out / "training" / "tiny__chain-n12-seed4"))


@pytest.mark.parametrize(
    ("recipe", "overrides", "message"),
    [
        ("placetoo", (), r"unknown recipe 'placetoo'; known: doppler, doppler_faithful, .*placeto"),
        ("placeto", ("graph.spec=x",), r"'graph.spec=x': the suite sets graph.spec"),
        ("placeto", ("seed=3",), r"'seed=3': the suite sets seed"),
        ("placeto", ("env.objective=pipeline",), r"the suite sets env.objective"),
    ],
)
def test_an_unknown_recipe_or_an_override_of_the_suite_is_refused(recipe, overrides, message):
    with pytest.raises(ConfigError, match=message):
        check_recipe(recipe, overrides)


def test_a_policy_trains_on_one_cluster():
    train = [
        Case("t/a-s0", "t", "train", "synthetic:chain?n=8&seed=0", "homogeneous?n_devices=2"),
        Case("t/a-s1", "t", "train", "synthetic:chain?n=8&seed=1", "homogeneous?n_devices=3"),
    ]
    with pytest.raises(ConfigError, match="a policy trains on one cluster"):
        training_run("placeto", (), 0, train, [])
    with pytest.raises(ConfigError, match="no training case"):
        training_run("placeto", (), 0, [], [])


def test_validation_on_another_cluster_does_not_select_and_padding_fits_every_graph():
    train = [Case("t/a-s0", "t", "train", "synthetic:chain?n=8&seed=0", "homogeneous?n_devices=2")]
    validation = [
        Case("t/a-s1", "t", "validation", "synthetic:chain?n=30&seed=1", "homogeneous?n_devices=2"),
        Case("t/a-s2", "t", "validation", "synthetic:chain?n=9&seed=2", "homogeneous?n_devices=3"),
    ]
    run = training_run("placeto", (), 0, train, validation)
    assert run.validation_graphs == ["synthetic:chain?n=30&seed=1"]
    assert run.env.max_nodes >= 30 and run.cluster.spec == "homogeneous?n_devices=2"


def test_a_family_without_training_cases_learns_where_the_suite_says(suite):
    train, validation = suite.training_cases("devices/layered-n80")
    assert train and {c.family for c in train} == {"families/layered-n80"}
    assert {c.split for c in validation} == {"validation"}
    lonely = Suite(
        "mine",
        1,
        (Case("mine/g", "mine", "test", "synthetic:chain?n=8&seed=0", "homogeneous?n_devices=2"),),
    )
    with pytest.raises(ConfigError, match="family 'mine/g': no training case"):
        run_recipe(lonely, list(lonely.cases), "placeto", QUICK, 0, "unused")


def test_the_family_is_the_name_without_its_seed_and_cluster():
    case = Case("devices/layered-n80-s24@pcie-d4", "devices", "test", "g", "c")
    assert case.family == "devices/layered-n80"
    assert Case("x/y", "x", "test", "g", "c", family="x/all").family == "x/all"


def test_the_label_names_the_budget_not_how_it_ran():
    assert recipe_label("gdp") == "recipe:gdp"
    assert (
        recipe_label("gdp", ["total_steps=8", "threads=1", "logger=wandb"])
        == "recipe:gdp[total_steps=8]"
    )
    assert (
        recipe_label("gdp", ["total_steps=8"], "case") == "recipe:gdp[learn_on=case,total_steps=8]"
    )


def test_learning_on_each_case_scores_the_best_placement_its_training_found(suite, tmp_path):
    case = next(c for c in suite.select("tiny", "test") if c.family == FAMILY)
    records = run_recipe(suite, [case], "placeto", QUICK, 1, tmp_path, learn_on="case")
    record, folder = records[0], tmp_path / "training" / f"{case.name.replace('/', '__')}-seed1"
    result = json.loads((folder / "result.json").read_text())
    best = json.loads((folder / "best_placement.json").read_text())
    assert record["placer"].startswith("recipe:placeto[learn_on=case,total_steps=128")
    assert record["training"]["cases"] == [case.name] and record["training"]["validation"] == []
    assert result["config"]["graph"]["spec"] == [case.graph]  # trained on the case itself
    assert record["runtime"] == pytest.approx(next(iter(best.values()))["runtime"], rel=1e-12)
    assert record["simulator_calls"] == 0  # the placement is the training's: its calls count
    assert record["training"]["simulator_calls"] == result["simulator_calls"]["total"] > 0
    saved = json.loads((folder / "training.json").read_text())
    assert saved["provenance"] == result["provenance"] and "provenance" not in record["training"]
    calls, seconds, found = zip(*record["trace"], strict=True)  # the training's search
    assert record["trace"] == [list(p) for p in record["training"]["trace"]]
    assert list(calls) == sorted(calls) and calls[-1] <= record["training"]["simulator_calls"]
    assert list(seconds) == sorted(seconds) and seconds[-1] <= record["training"]["wall_s"]
    assert list(found) == sorted(found, reverse=True) and len(set(found)) == len(found)
    assert found[-1] == pytest.approx(record["runtime"], rel=1e-12)
    again = run_recipe(suite, [case], "placeto", QUICK, 1, tmp_path, learn_on="case")
    assert again == records  # read back, not trained again


def test_learn_on_must_be_family_or_case(suite):
    with pytest.raises(ConfigError, match="learn_on must be one of family, case, got 'graph'"):
        run_recipe(suite, [], "placeto", QUICK, 0, "unused", learn_on="graph")


def test_a_search_at_inference_places_and_names_the_row(suite, scored, tmp_path):
    out, cases, _ = scored
    training = out / "training"
    (tmp_path / "training").symlink_to(training)  # the family's training, read back
    records = run_recipe(
        suite, cases[:1], "placeto", QUICK, 3, tmp_path, search={"search": "local", "budget": 20}
    )
    assert records[0]["placer"].endswith("eval_samples=0]?search=local&budget=20")
    # every evaluation of the search counts in the case's record but its start's, which the
    # env's reset gives (sampled episodes, the test's search before, may repeat a placement)
    assert records[0]["simulator_calls"] >= 20 - 1
    with pytest.raises(ConfigError, match="learn_on='case' keeps the best placement"):
        run_recipe(
            suite,
            cases[:1],
            "placeto",
            QUICK,
            3,
            tmp_path,
            learn_on="case",
            search={"search": "local"},
        )
