"""placerl.bench.leaderboard: one row per (suite, tier, placer), from the record files only."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

pytest.importorskip("pandas", reason="the experiments extra is not installed")

from placerl.bench.leaderboard import leaderboard, main, write_leaderboard
from placerl.bench.run import run_cases
from placerl.errors import ConfigError


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    run_cases("placebench-v1", "tiny", "test", "heft", root / "heft", progress=False)
    run_cases(
        "placebench-v1",
        "tiny",
        "test",
        "local_search?max_evaluations=20",
        root / "ls",
        progress=False,
    )
    return root


def test_one_row_per_tier_and_placer(runs):
    table = leaderboard([runs])
    assert list(table["placer"]) == ["heft", "local_search?max_evaluations=20"]
    heft = table.iloc[0]
    assert (heft["suite"], heft["tier"], heft["cases"]) == ("placebench-v1", "tiny", 16)
    assert (heft["infeasible"], heft["failed"], heft["simulator_calls"]) == (0, 0, 0)
    assert heft["ci_low"] <= heft["score_value"] <= heft["ci_high"]
    assert heft["score"].startswith(f"{heft['score_value']:.3f} [")
    assert table.iloc[1]["simulator_calls"] > 0 and heft["mean_gap"] > 0


def test_written_with_its_provenance_and_read_again_past_its_own_json(runs, tmp_path):
    out = write_leaderboard([runs], runs / "board.md")
    text = out.read_text()
    assert text.startswith("# PlaceBench leaderboard")
    assert "Suite placebench-v1; commit(s) " in text and "date(s) 20" in text
    rows = json.loads(out.with_suffix(".json").read_text())["rows"]
    assert [row["cases"] for row in rows] == [16, 16]
    plot = runs / "board-anytime-tiny-test.png"  # the anytime curves of the tier, embedded
    assert plot.is_file() and f"]({plot.name})" in text
    plot.unlink()
    assert len(leaderboard([runs])) == 2  # board.json is not a record
    (runs / "board.md").unlink()
    (runs / "board.json").unlink()


def test_a_record_without_a_field_is_refused_naming_file_and_field(runs, tmp_path):
    shutil.copytree(runs / "heft", tmp_path / "heft")
    path = next((tmp_path / "heft").glob("*.json"))
    record = json.loads(path.read_text())
    del record["simulator_calls"]
    path.write_text(json.dumps(record))
    with pytest.raises(ConfigError, match=f"{path.name}.*'simulator_calls' is missing"):
        leaderboard([tmp_path])


def test_records_of_two_suites_never_pool(runs, tmp_path):
    shutil.copytree(runs / "heft", tmp_path / "heft")
    path = sorted((tmp_path / "heft").glob("*.json"))[-1]
    path.write_text(json.dumps({**json.loads(path.read_text()), "suite": "placebench-v2"}))
    with pytest.raises(ConfigError, match="placebench-v1.*" + path.name + ".*never pool"):
        leaderboard([tmp_path])


def test_a_search_matched_to_one_family_is_no_row(runs, tmp_path):
    """Searches at one family's budget (bench_learned's) score part of a tier: not read."""
    from placerl.bench.versus import FAMILY_SEARCHES

    shutil.copytree(runs / "heft", tmp_path / "search" / FAMILY_SEARCHES / "ils-chain" / "tiny")
    shutil.copytree(runs / "ls", tmp_path / "ls")
    assert list(leaderboard([tmp_path])["placer"]) == ["local_search?max_evaluations=20"]


def test_the_cli_prints_the_table_and_refuses_an_empty_folder(runs, tmp_path, capsys):
    assert main([str(runs / "heft")]) == 0
    printed = capsys.readouterr().out
    assert "Suite placebench-v1" in printed and "| heft" in printed
    main([str(runs / "heft"), "--out", str(tmp_path / "lb.md")])
    assert (tmp_path / "lb.md").is_file() and (tmp_path / "lb.json").is_file()
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit) as exit_:
        main([str(tmp_path / "empty")])
    assert exit_.value.code == 2 and "no record JSON" in capsys.readouterr().err


def test_a_record_read_twice_counts_once_and_splits_never_pool(tmp_path):
    from placerl.bench.run import run_cases

    run_cases("placebench-v1", "tiny", "test", "heft", tmp_path / "test")
    (tmp_path / "validation").mkdir()
    for path in (tmp_path / "test").glob("*.json"):  # as if the validation cases had run
        record = json.loads(path.read_text())
        (tmp_path / "validation" / path.name).write_text(
            json.dumps({**record, "split": "validation", "case": record["case"] + "-v"})
        )
    table = leaderboard([tmp_path, tmp_path / "test"])  # the test folder under both
    rows = sorted(zip(table["split"], table["cases"], strict=True))
    assert rows == [("test", 16), ("validation", 16)]
    copy = tmp_path / "copy"
    copy.mkdir()
    original = next((tmp_path / "test").glob("*.json"))
    record = json.loads(original.read_text())
    (copy / original.name).write_text(json.dumps({**record, "wall_s": 9.0}))
    assert leaderboard([tmp_path]).query("split == 'test'")["cases"].item() == 16
    (copy / original.name).write_text(json.dumps({**record, "runtime": 1.0, "score": 0.5}))
    with pytest.raises(ConfigError, match="two different records of case 'tiny/"):
        leaderboard([tmp_path])


def test_each_row_is_paired_with_the_strongest_classic_placer_its_budget_affords(runs):
    table = leaderboard([runs]).set_index("placer")
    search = table.loc["local_search?max_evaluations=20"]
    assert search["reference"] == "heft"  # heft needs no call: within any budget
    heft_runtimes = {r["case"]: r["runtime"] for r in _records(runs / "heft")}
    ratios = [r["runtime"] / heft_runtimes[r["case"]] for r in _records(runs / "ls")]
    assert search["ratio"] == pytest.approx(np.exp(np.mean(np.log(ratios))))
    assert search["ratio_low"] <= search["ratio"] <= search["ratio_high"]
    assert search["vs_reference"].startswith(f"{search['ratio']:.3f}x [")
    # heft's budget (0 calls per case) affords no search: nothing else to pair it with
    assert not isinstance(table.loc["heft"]["reference"], str)  # None (NaN in the frame)
    assert table.loc["heft"]["vs_reference"] == ""


def test_a_training_is_counted_once_and_seeds_pool_into_one_row(runs, tmp_path):
    for seed in (0, 1):
        for record in _records(runs / "ls"):
            training = {
                "id": f"recipe|tiny|seed={seed}",
                "simulator_calls": 1000,
                "wall_s": 2.0,
                "seed": seed,
            }
            named = {**record, "placer": "recipe:x", "seed": seed, "training": training}
            path = tmp_path / f"{record['case'].replace('/', '__')}@seed{seed}.json"
            path.write_text(json.dumps(named))
    row = leaderboard([tmp_path]).iloc[0]
    calls = sum(r["simulator_calls"] for r in _records(runs / "ls"))
    assert (row["cases"], row["seeds"]) == (32, 2)
    assert row["simulator_calls"] == 2 * calls + 2 * 1000  # each seed's training once
    assert row["calls_per_case"] == row["simulator_calls"] / 32


def _records(folder):
    return [json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))]


def test_records_of_one_recipe_with_two_budgets_never_pool(runs, tmp_path):
    for seed, steps in ((0, 4000), (1, 8000)):
        record = _records(runs / "ls")[0]
        training = {
            "id": f"r|{seed}",
            "simulator_calls": 1,
            "wall_s": 1.0,
            "seed": seed,
            "budget": {"total_steps": steps, "time_limit_s": 0.0},
        }
        (tmp_path / f"r{seed}.json").write_text(
            json.dumps({**record, "placer": "recipe:x", "seed": seed, "training": training})
        )
    with pytest.raises(
        ConfigError,
        match=r"r0.json and .*r1.json are records of 'recipe:x' "
        r"with different budgets \(training.budget "
        r"\{'total_steps': 4000",
    ):
        leaderboard([tmp_path])


def test_the_reference_covers_the_row_s_cases(runs, tmp_path):
    """A row of a few cases (an exact solver run on the small ones) may score best on its
    own cases: it is no reference for a row over more cases."""
    shutil.copytree(runs, tmp_path / "runs")
    record = _records(runs / "heft")[0]
    faster = {
        **record,
        "placer": "exact",
        "runtime": record["runtime"] / 2,
        "score": record["score"] * 2,
    }
    (tmp_path / "runs" / "exact.json").write_text(json.dumps(faster))
    table = leaderboard([tmp_path / "runs"]).set_index("placer")
    assert table.loc["local_search?max_evaluations=20"]["reference"] == "heft"
    assert table.loc["exact"]["reference"] == "heft"  # heft covers its one case
