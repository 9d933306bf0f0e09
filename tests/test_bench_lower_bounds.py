"""bench_lower_bounds.py: the room each graph leaves, and the per-family summary."""

import math

import pytest

from placerl.baselines import solve
from tests.bench_modules import module_fixture

bench = module_fixture("bench_lower_bounds")

GRAPH, CLUSTER = "synthetic:layered?n=20&seed=0", "placeto?n_devices=3"


def test_a_row_orders_the_bound_and_the_searches(bench):
    row = bench.measure(GRAPH, CLUSTER, 50, 0.5)
    bound, climb, ils = (row[f"{key} / constructive"] for key in ("bound", "climb", "ils"))
    # No placement beats the bound; both searches start from the constructive placement and
    # keep the best, and the iterated search's first climb is the plain one.
    assert bound <= climb <= 1.0
    assert bound <= ils <= climb
    # "constructive" is the fastest of HEFT, m-ETF and m-SCT: the bar of the zero-shot target.
    constructive = min(solve(p, GRAPH, CLUSTER).runtime for p in bench.CONSTRUCTIVE)
    bound_ms = float(row["lower bound (ms)"])
    assert bound == pytest.approx(bound_ms * 1e-3 / constructive, rel=1e-3)
    assert float(row["best constructive"]) == pytest.approx(1 / bound, abs=1e-3)


def test_families_are_summarized_by_geometric_means_and_the_bar(bench):
    rows = [
        {
            "graph": "synthetic:ptb?seed=1",
            "bound / constructive": 0.8,
            "climb / constructive": 0.99,
            "ils / constructive": 0.9,
        },
        {
            "graph": "synthetic:ptb?seed=24",
            "bound / constructive": 0.98,
            "climb / constructive": 1.0,
            "ils / constructive": 0.8,
        },
        {
            "graph": "zoo:resnet50",
            "bound / constructive": 0.9,
            "climb / constructive": 1.0,
            "ils / constructive": 0.99,
        },
    ]
    ptb, zoo = bench.family_summary(rows)
    assert (ptb["family"], ptb["graphs"], zoo["family"], zoo["graphs"]) == ("ptb", 2, "zoo", 1)
    assert ptb["bound / constructive"] == round(math.sqrt(0.8 * 0.98), 3)
    assert ptb["climb / constructive"] == round(math.sqrt(0.99), 3)
    assert ptb["ils / constructive"] == round(math.sqrt(0.9 * 0.8), 3)
    bar = f"graphs whose bound is above {bench.ZERO_SHOT_BAR}"
    assert (ptb[bar], zoo[bar]) == (1, 0)  # the bound's count, not the searches'


def test_the_held_out_cases_are_the_recipes_benchmarks(bench):
    pytest.importorskip("stable_baselines3", reason="the rl extra is not installed")
    cases = bench.CASES["held_out"]()
    assert ("synthetic:nmt?seed=27", "gpu8_nvlink?n_devices=4") in cases
    assert ("synthetic:nmt?seed=25", "gpu8_nvlink?n_devices=4") not in cases  # seed 24's graph
    assert len(cases) == 3 * 4 + len(bench.ZOO_HELD_OUT)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--evaluations", "0"], "--evaluations must be at least 1, got 0"),
        (["--ils-seconds", "0"], "--ils-seconds must be above 0, got 0"),
    ],
)
def test_bad_budgets_are_refused_before_any_graph(bench, monkeypatch, capsys, option, message):
    monkeypatch.setattr("sys.argv", ["bench_lower_bounds.py", *option])
    with pytest.raises(SystemExit):
        bench.main()
    assert message in capsys.readouterr().err
