"""placerl.bench.ablation: from a faithful preset to its tuned recipe, one choice a step."""

import itertools
import json
import math

import pytest

pytest.importorskip("hydra", reason="the experiments extra is not installed")
pytest.importorskip("stable_baselines3", reason="the rl extra is not installed")

from placerl.bench import load_suite
from placerl.bench.ablation import RUNGS, ladder, paired_rows, run_ladder
from placerl.compose import compose_run
from placerl.errors import ConfigError
from tests.bench_modules import module_fixture

bench = module_fixture("bench_ablation")
#: The fewest steps that train and place: the protocol is tested, not the policies.
TINY = [
    "total_steps=16",
    "n_envs=1",
    "eval_every=0",
    "eval_samples=0",
    "progress_bar=false",
    "checkpoint_every=0",
    "agent.warm_start_epochs=1",
    "+agent.hyperparams.n_steps=16",
]


@pytest.mark.parametrize("preset", ["placeto_faithful", "doppler_faithful", "gdp_faithful"])
def test_each_rung_adds_one_tuned_choice_to_the_rungs_below(preset):
    steps = ladder(preset)
    tuned_name = compose_run(f"experiment={preset}").preset.tuned
    tuned = compose_run(f"experiment={tuned_name}")
    assert [s.name for s in steps] == ["faithful", *(name for name, _ in RUNGS), "tuned"]
    assert (steps[0].recipe, steps[0].overrides) == (preset, ())
    assert (steps[-1].recipe, steps[-1].overrides) == (tuned_name, ())
    for below, step in itertools.pairwise(steps[1:-1]):
        assert step.overrides[: len(below.overrides)] == below.overrides  # cumulative
    for step, (_, options) in zip(steps[1:-1], RUNGS, strict=True):
        run = compose_run(f"experiment={step.recipe}", *step.overrides).check()
        assert step.overrides[0] == "preset.name=null" and run.preset.name is None
        assert all(run.option(path) == tuned.option(path) for path in options)
    features, clone, rollback = steps[1:4]
    assert features.overrides[1:] == ("env.features=heft",)
    assert "agent.warm_start=best_of" in clone.overrides
    assert rollback.overrides[-1] == "agent.rollback=true"


def test_the_ladder_starts_from_a_faithful_preset_only():
    with pytest.raises(ConfigError, match="experiment 'placeto' is no faithful preset"):
        ladder("placeto")


def _record(case, seed, runtime):
    return {"case": case, "seed": seed, "runtime": runtime, "feasible": True, "error": None}


def test_each_step_pairs_with_the_one_below_by_case_and_seed():
    records = {
        "faithful": [_record(c, s, 2.0) for c in "abcdef" for s in (0, 1)],
        "+heft_features": [_record(c, s, 1.0) for c in "abcdef" for s in (0, 1)],
        "+clone": [_record(c, s, 1.0) for c in "abc" for s in (0, 1)]
        + [{**_record("z", 0, 5.0), "feasible": False}],  # pairs with nothing
    }
    first, second = paired_rows("p", records)
    assert (first["step"], first["versus"], first["pairs"]) == ("+heft_features", "faithful", 12)
    assert first["ratio"] == pytest.approx(0.5) and first["wins"] == 12
    assert first["ci_low"] == first["ci_high"] == pytest.approx(0.5)
    assert "+heft_features is 50.0% faster than faithful" in first["verdict"]
    assert (second["pairs"], second["ratio"], second["wins"], second["losses"]) == (6, 1.0, 0, 0)
    assert "the choice changes no placement here" in second["verdict"]
    assert math.isnan(paired_rows("p", {"a": [], "b": []})[0]["ratio"])


def _trained(record, family, policy_step):
    seed = record["seed"]
    training = {"id": f"{family}|{seed}", "family": family, "seed": seed, "steps": 64}
    training["policy_step"] = policy_step
    return {**record, "training": training}


def test_a_step_whose_trainings_kept_no_update_says_it_measures_its_start():
    faithful = [_trained(_record(c, s, 2.0), "f", 64) for c in "abcdef" for s in (0, 1)]
    clone = [_trained(_record(c, s, 1.0), "f", 0) for c in "abcdef" for s in (0, 1)]
    (row,) = paired_rows("p", {"faithful": faithful, "+clone": clone})
    assert row["kept"] == "0/64, 0/64"  # one per training: family f at seeds 0 and 1
    assert "+clone is 50.0% faster than faithful" in row["verdict"]
    assert row["verdict"].endswith(
        "every training of +clone kept its weights of step 0 (the warm start's clone where "
        "it clones): no policy-gradient update was kept"
    )
    for record in clone[::2]:  # the training of seed 0 kept an update: no such claim
        record["training"]["policy_step"] = 32
    (row,) = paired_rows("p", {"faithful": faithful, "+clone": clone})
    assert row["kept"] == "32/64, 0/64" and "no policy-gradient update" not in row["verdict"]


def test_only_the_steps_asked_for_run_and_an_unknown_one_is_refused(tmp_path):
    suite = load_suite("placebench-v1")
    cases = suite.select("tiny", "test", "tiny/chain-n12")
    message = r"the ladder of gdp_faithful has no step \+clon; its steps: faithful, \+heft"
    with pytest.raises(ConfigError, match=message):
        run_ladder(suite, cases, "gdp_faithful", TINY, [0], tmp_path, steps=["+clon"])
    assert not any(tmp_path.iterdir())


def test_the_script_climbs_a_ladder_and_writes_the_paired_steps_and_the_board(bench, tmp_path):
    """Two steps of DOPPLER's ladder (the fastest to train) on one tiny family, one seed."""
    bench.main(
        [
            "--presets",
            "doppler_faithful",
            "--family",
            "tiny/chain-n12",
            "--seeds",
            "0",
            "--steps",
            "faithful",
            "+heft_features",
            "--classic",
            "heft",
            "--out",
            str(tmp_path),
            "--budget",
            *TINY,
        ]
    )
    steps = tmp_path / "doppler_faithful"
    assert sorted(p.name for p in steps.iterdir()) == ["+heft_features", "faithful"]
    record = json.loads(next((steps / "faithful").glob("tiny__*.json")).read_text())
    assert record["placer"].startswith("recipe:doppler_faithful[total_steps=16")
    assert 0 <= record["training"]["policy_step"] <= record["training"]["steps"]
    rows = json.loads((tmp_path / "ablation.json").read_text())["rows"]
    assert [(r["step"], r["versus"], r["pairs"]) for r in rows] == [
        ("+heft_features", "faithful", 2)
    ]
    text = (tmp_path / "ablation.md").read_text()
    assert "| doppler_faithful | +heft_features | faithful | 2 |" in text
    kept = rows[0]["kept"]
    assert kept.endswith("/16") and f"| {kept} |" in text  # the one training's kept step
    board = (tmp_path / "LEADERBOARD.md").read_text()
    assert "recipe:doppler_faithful[preset.name=null,env.features=heft," in board
    assert "| heft " in board and "vs heft" in board  # each step against the classic row
