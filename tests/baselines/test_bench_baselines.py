"""The comparison benchmark runs end to end on a small selection and writes its tables."""

import csv
import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_baselines.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_baselines", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def test_writes_csv_markdown_and_json(bench, tmp_path, capsys):
    argv = ["--quick", "--out", str(tmp_path), "--graphs", "fork_join_16,bert24_inference",
            "--placers", "heft,tarnawski_dp,milp"]  # fmt: skip
    rows = bench.main(argv)
    assert len(rows) == 2 * 2 * 3
    with open(tmp_path / "baselines.csv") as f:
        table = list(csv.DictReader(f))
    assert {r["placer"] for r in table} == {"heft", "tarnawski_dp", "milp"}
    dp = next(r for r in table if r["graph"] == "bert24_inference" and r["placer"] == "tarnawski_dp"
              and r["objective"] == "pipeline")  # fmt: skip
    assert float(dp["runtime"]) == pytest.approx(bench.MSR_OPTIMA["bert24_inference"])
    too_big = next(r for r in table if r["graph"] == "bert24_inference" and r["placer"] == "milp")
    assert too_big["status"].startswith("error: milp is for small graphs")
    text = (tmp_path / "baselines.md").read_text()
    assert "| fork_join_16 | 16 |" in text and "published optimum" in text
    assert text in capsys.readouterr().out
    assert len(json.loads((tmp_path / "baselines.json").read_text())) == len(rows)


def test_the_inception_stand_in_has_the_shape_of_the_msr_graph(bench):
    graph = bench.inception_v3_layers()
    assert graph.num_nodes == 313
    assert graph.arrays.kind_costs["cpu"] == pytest.approx(
        10 * graph.arrays.kind_costs["accelerator"]
    )
