"""bench_recipes.py's references at equal cost: evaluations and seconds."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("hydra", reason="the experiments extra is not installed")
pytest.importorskip("stable_baselines3", reason="the rl extra is not installed")

from placerl.baselines import solve
from placerl.cluster import load_cluster
from placerl.graph import load_graph

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_recipes.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_recipes", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


@pytest.fixture(scope="module")
def case():
    graph = load_graph("synthetic:layered?n=30&seed=3")
    cluster = load_cluster("placeto?n_devices=4")
    start = np.asarray(solve("heft", graph, cluster, "step_time").placement)
    return graph, cluster, start


def _climb(graph, cluster, start, budget, seed=0):
    return solve("local_search", graph, cluster, "step_time", max_rounds=10**6, time_limit=1e6,
                 max_evaluations=budget, init=start, seed=seed).runtime  # fmt: skip


def test_evaluations_to_reach_is_the_fewest_that_reach_the_target(bench, case):
    graph, cluster, start = case
    first, optimum = _climb(graph, cluster, start, 1), _climb(graph, cluster, start, 0)
    assert optimum < first  # HEFT is not a local optimum here: there is a climb to bisect
    target = np.sqrt(first * optimum)  # somewhere along the climb
    needed = bench.evaluations_to_reach(graph, cluster, start, target, seed=0)
    assert 1 < needed < np.inf
    assert _climb(graph, cluster, start, int(needed)) <= target
    assert _climb(graph, cluster, start, int(needed) - 1) > target
    assert bench.evaluations_to_reach(graph, cluster, start, first, seed=0) == 1


def test_evaluations_to_reach_is_inf_below_the_local_optimum(bench, case):
    graph, cluster, start = case
    optimum = _climb(graph, cluster, start, 0)
    assert bench.evaluations_to_reach(graph, cluster, start, 0.9 * optimum, seed=0) == np.inf


def test_local_searches_stop_at_the_seconds_given(bench, case):
    graph, cluster, start = case
    unlimited = bench.local_searches(graph, cluster, start, 0)
    timed = bench.local_searches(graph, cluster, start, 0, seconds=0.0, restarts=10**6)
    assert all(evaluations <= 3 for _, evaluations, _ in timed)  # the start and a unit's moves
    assert all(t[1] < u[1] for t, u in zip(timed, unlimited, strict=True))


def test_iterated_local_searches_go_on_past_the_optimum_while_time_lasts(bench, case):
    graph, cluster, start = case
    climbs = bench.local_searches(graph, cluster, start, 0)
    kicked = bench.local_searches(graph, cluster, start, 0, seconds=0.2, restarts=10**6)
    for (runtime, evaluations, _), (iterated, more, seconds) in zip(climbs, kicked, strict=True):
        assert iterated <= runtime and more > evaluations and seconds < 1.0


def test_break_even_is_the_evaluation_cost_that_pays_for_the_policy(bench):
    assert bench.break_even(0.2, 50, 150) == pytest.approx(0.002)  # 0.2 s over 100 saved
    assert bench.break_even(0.2, 50, 50) == np.inf
    assert bench.break_even(0.2, 50, 20) == np.inf  # the search needs fewer: it always wins
    assert bench.break_even(0.2, 50, np.inf) == 0.0  # the search never gets there


def test_budgets_summarizes_the_zero_shot_cost(bench):
    def row(needed, evaluations=10):
        return {"recipe": "improve", "method": "zero-shot", "evaluations": evaluations,
                "wall_s": 0.5, "iterated_local_search_evaluations": 900,
                "local_search_to_match": needed,
                "break_even_ms": 1e3 * bench.break_even(0.5, evaluations, needed)}  # fmt: skip

    rows = [row(40.0), row(60.0, 30), row(float("inf")), {"recipe": "improve", "method": "local"}]
    (summary,) = bench.budgets(rows)
    assert summary["runs"] == 3 and summary["policy_evaluations"] == 17
    assert summary["local_search_evaluations_to_match"] == 60  # the median, inf counted
    assert summary["never"] == "1/3"
    assert summary["break_even_ms"] == pytest.approx(16.67)  # 0.5 s over the 30 saved of row 2
    assert bench.budgets([row(float("inf")), row(float("inf"))])[0][
        "local_search_evaluations_to_match"] == "never"  # fmt: skip
    assert bench.budgets([{"recipe": "classic", "method": "local_search"}]) == []
