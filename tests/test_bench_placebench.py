"""bench_placebench.py: the classic rows of PlaceBench, regenerated into one folder."""

import json

import pytest

from tests.bench_modules import module_fixture

bench = module_fixture("bench_placebench")


def test_every_classic_row_runs_on_its_tiers_and_only_constructive_ones_at_scale(bench):
    pairs = bench.rows(["tiny", "families", "models", "devices", "scale"], None)
    at_scale = {placer for placer, tier in pairs if tier == "scale"}
    assert at_scale == {"single_device", "random", "heft", "m_etf", "m_sct"}
    assert {tier for placer, tier in pairs if placer.startswith("milp")} == {"tiny"}
    ils = [p for p, t in pairs if t == "families" and "max_evaluations" in p]
    assert [p.split("max_evaluations=")[1].split("&")[0] for p in ils] == [
        "1000",
        "10000",
        "100000",
    ]
    assert bench.folder_name("local_search?init=best_of") == "local_search_init_best_of"


def test_a_run_writes_records_per_placer_and_tier_and_the_leaderboard(bench, tmp_path, capsys):
    bench.main(["--tiers", "tiny", "--placers", "heft", "--out", str(tmp_path)])
    records = sorted((tmp_path / "heft" / "tiny").glob("tiny__*.json"))
    assert len(records) == 16 and json.loads(records[0].read_text())["placer"] == "heft"
    assert "| tiny " in (tmp_path / "LEADERBOARD.md").read_text()
    with pytest.raises(SystemExit):
        bench.main(["--placers", "hfet", "--out", str(tmp_path)])
    assert "not a classic row: hfet; rows: best_of, heft" in capsys.readouterr().err
