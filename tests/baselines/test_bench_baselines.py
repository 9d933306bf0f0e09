"""The comparison benchmark runs end to end on a small selection and writes its tables."""

import csv
import json

import pytest

from tests.bench_modules import module_fixture

bench = module_fixture("bench_baselines")


def test_writes_csv_markdown_and_json(bench, tmp_path, capsys):
    argv = [
        "--quick",
        "--out",
        str(tmp_path),
        "--graphs",
        "fork_join_16,bert24_inference",
        "--placers",
        "heft,tarnawski_dp,milp",
    ]
    rows = bench.main(argv)
    assert len(rows) == 2 * 2 * 3
    with open(tmp_path / "baselines.csv") as f:
        table = list(csv.DictReader(f))
    assert {r["placer"] for r in table} == {"heft", "tarnawski_dp", "milp"}
    dp = next(
        r
        for r in table
        if r["graph"] == "bert24_inference"
        and r["placer"] == "tarnawski_dp"
        and r["objective"] == "pipeline"
    )
    assert float(dp["runtime"]) == pytest.approx(bench.MSR_OPTIMA["bert24_inference"])
    too_big = next(r for r in table if r["graph"] == "bert24_inference" and r["placer"] == "milp")
    assert too_big["status"].startswith("error: milp is for small graphs")
    text = (tmp_path / "baselines.md").read_text()
    assert "| fork_join_16 | 16 |" in text and "published optimum" in text
    assert text in capsys.readouterr().out
    assert len(json.loads((tmp_path / "baselines.json").read_text())["rows"]) == len(rows)


def test_the_inception_stand_in_has_the_shape_of_the_msr_graph(bench):
    graph = bench.inception_v3_layers()
    assert graph.num_nodes == 313
    assert graph.arrays.kind_costs["cpu"] == pytest.approx(
        10 * graph.arrays.kind_costs["accelerator"]
    )


def test_summary_counts_wins_and_failures(bench, tmp_path):
    argv = [
        "--quick",
        "--out",
        str(tmp_path),
        "--graphs",
        "fork_join_16,bert24_inference",
        "--placers",
        "heft,tarnawski_dp,milp",
        "--objectives",
        "pipeline",
    ]
    rows = bench.main(argv)
    by_placer = {e["placer"]: e for e in bench.summary(rows, ["heft", "tarnawski_dp", "milp"])}
    dp, milp = by_placer["tarnawski_dp"], by_placer["milp"]
    assert dp["cases"] == 2 and dp["ok"] == 2 and dp["best"] >= 1 and dp["mean_ratio"] >= 1
    assert milp["ok"] == 1  # too big for bert24_inference: an error, not a ratio
    assert milp["mean_ratio_msr"] != milp["mean_ratio_msr"]  # nan: no msr result
    text = (tmp_path / "baselines.md").read_text()
    assert text.index("pipeline: summary over 2 cases") < text.index("pipeline: runtime / best")
    assert "| tarnawski_dp | pipeline | 2/2 |" in text
    assert "| bert24_inference | 32 | msr 6 acc + 1 cpu |" in text


def test_a_zoo_case_runs_with_the_exact_placers(bench, tmp_path):
    rows = bench.main(
        [
            "--quick",
            "--out",
            str(tmp_path),
            "--graphs",
            "zoo_resnet50_20",
            "--placers",
            "tarnawski_dp,milp",
            "--objectives",
            "pipeline",
        ]
    )
    assert {r["suite"] for r in rows} == {"zoo"} and {r["status"] for r in rows} == {"ok"}
    dp, milp = rows
    assert dp["nodes"] == 20 and dp["devices"] == "gpu4_pcie 4 gpu"
    assert dp["optimal"] and milp["optimal"]
    assert milp["runtime"] == pytest.approx(dp["runtime"], rel=1e-6)


def test_cases_have_unique_labels_and_suites(bench):
    labels = [c.label for c in bench.CASES]
    assert len(labels) == len(set(labels))
    assert {c.suite for c in bench.CASES} == set(bench.SUITES)
    assert all(c.suite == "zoo" for c in bench.ZOO_CASES)
    quick = [c.label for c in bench.CASES if c.quick and c.suite == "zoo"]
    assert "zoo_resnet50" in quick and "zoo_inception_v3" not in quick
