"""bench_learning_per_step.py: each variant is paired with the default layout by graph and seed."""

import pytest

pytest.importorskip("stable_baselines3", reason="the rl extra is not installed")
pytest.importorskip("scipy", reason="the paired test needs scipy")

from tests.bench_modules import benchmark_module


@pytest.fixture(scope="module")
def bench():
    with benchmark_module("bench_learning_per_step") as module:
        yield module


def _run(variant, graph, seed, ratio, extractor="gnn"):
    return {"variant": variant, "extractor": extractor, "graph": f"synthetic:{graph}",
            "seed": seed, "steps": [0, 1000, 2000], "ratio": ratio, "train_s": 1.0}


def test_variants_pair_with_the_reference_of_their_own_label(bench):
    runs = [_run("8x128 (a)", "g1", s, [2.0, 1.0, 1.0]) for s in range(8)]
    runs += [_run("8x128_2ep (a)", "g1", s, [2.0, 1.3, 1.3]) for s in range(8)]
    runs += [_run("8x128", "g1", s, [9.0, 9.0, 9.0]) for s in range(8)]  # another label
    runs += [_run("8x128_2ep (a)", "g1", 99, [1.0, 1.0, 1.0])]  # no reference for seed 99
    (row, both) = bench.paired(runs)
    assert (row["variant"], row["against"], row["graph"]) == ("8x128_2ep (a)", "8x128 (a)", "g1")
    assert row["pairs"] == 8 and row["better / worse"] == "0 / 8"
    assert row["curve mean ratio"].startswith("1.150")  # 4.6 / 4
    assert row["final ratio"].startswith("1.300")
    assert "slower than 8x128 (a)" in row["verdict (curve mean)"]
    assert both["graph"] == "both graphs" and both["pairs"] == 8


def test_pairs_span_graphs_and_keep_extractors_apart(bench):
    runs = []
    for graph, worse in (("g1", 1.1), ("g2", 0.9)):
        for seed in range(3):
            runs.append(_run("8x128", graph, seed, [1.0, 1.0, 1.0]))
            runs.append(_run("16x64", graph, seed, [1.0, worse, worse]))
            runs.append(_run("16x64", graph, seed, [1.0, 1.0, 1.0], extractor="lstm"))
    rows = bench.paired(runs)
    assert [(r["extractor"], r["graph"], r["pairs"]) for r in rows] == [
        ("gnn", "g1", 3), ("gnn", "g2", 3), ("gnn", "both graphs", 6)]
    assert "3 pairs are too few to confirm it" in rows[0]["verdict (curve mean)"]
