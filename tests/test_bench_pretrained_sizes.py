"""bench_pretrained_sizes.py: a shipped policy on its family's test seeds at another size."""

import pytest

pytest.importorskip("stable_baselines3", reason="the rl extra is not installed")

from tests.bench_modules import module_fixture

bench = module_fixture("bench_pretrained_sizes")


def test_a_resized_spec_keeps_the_seed_and_options(bench):
    assert bench.resized("synthetic:layered?n=80&seed=24", 300) == "synthetic:layered?n=300&seed=24"
    assert bench.resized("synthetic:cifar10?seed=1", 600) == "synthetic:cifar10?seed=1&n=600"


def test_a_row_pairs_every_test_seed_with_the_best_constructive_placer(bench):
    row = bench.measure("layered", 24)
    assert (row["policy"], row["trained_nodes"], row["nodes"], row["graphs"]) == (
        "layered",
        80,
        24,
        8,
    )
    assert row["ci_low"] <= row["vs_constructive"] <= row["ci_high"]
    assert row["wins"] + row["losses"] <= 8 and row["place_s_median"] <= row["place_s_max"]
    assert set(row["best_constructive"].split(",")) <= {"heft", "m_etf", "m_sct"}
    assert row["unpaired"] == 0 and row["calls_median"] > 0  # each move tried is simulated


def test_a_graph_without_a_fitting_reference_is_left_unpaired(bench, monkeypatch):
    monkeypatch.setattr(bench, "best_constructive", lambda graph, cluster, objective: None)
    row = bench.measure("layered", 24)
    assert (row["unpaired"], row["wins"], row["losses"]) == (8, 0, 0)
    assert row["vs_constructive"] != row["vs_constructive"]  # nan: nothing to pair
