"""milp: agrees with the DP and with brute force on tiny graphs."""

import math
import warnings

import pytest
from hypothesis import given, settings

from placerl.baselines import SearchLimitWarning, solve
from placerl.baselines.split_model import ContractionCycleWarning
from placerl.cluster import Cluster
from placerl.errors import ConfigError, PlacementError
from placerl.graph import load_graph
from tests.baselines.helpers import (
    MSR_OPTIMA,
    brute_force_pipeline,
    msr_like_cluster,
    pipeline_problems,
)


def run(name, graph, cluster, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContractionCycleWarning)
        return solve(name, graph, cluster, "pipeline", **options)


@settings(max_examples=25)
@given(pipeline_problems(max_nodes=5))
def test_agrees_with_the_dp(problem):
    graph, cluster = problem
    try:
        expected = run("tarnawski_dp", graph, cluster).runtime
    except PlacementError:
        with pytest.raises(PlacementError):
            run("milp", graph, cluster)
        return
    result = run("milp", graph, cluster)
    assert result.runtime == pytest.approx(expected, abs=1e-6)
    assert result.info["value"] == pytest.approx(expected, abs=1e-6)
    assert result.optimal and result.feasible


@settings(max_examples=15)
@given(pipeline_problems(max_nodes=5))
def test_without_contiguity_it_finds_the_unrestricted_optimum(problem):
    graph, cluster = problem
    best = brute_force_pipeline(graph, cluster, contiguous=False)
    if math.isinf(best):
        return
    result = run("milp", graph, cluster, contiguous=False)
    assert result.runtime == pytest.approx(best, abs=1e-6)


def test_refuses_large_graphs_by_name():
    graph = load_graph("msr:bert24_inference")
    with pytest.raises(ConfigError, match="milp is for small graphs: 'bert24_inference' has 32"):
        run("milp", graph, msr_like_cluster(2, 1), max_nodes=20)


def test_at_the_time_limit_it_warns_and_returns_its_incumbent_with_a_bound():
    graph, cluster = load_graph("msr:bert24_inference"), Cluster.from_msr("bert24_inference")
    with pytest.warns(SearchLimitWarning, match="milp: stopped at the time limit"):
        result = solve("milp", graph, cluster, "pipeline", time_limit=1.0, max_nodes=40)
    assert not result.optimal and result.feasible
    assert result.lower_bound <= MSR_OPTIMA["bert24_inference"] <= result.runtime


def test_bad_limits_are_named():
    with pytest.raises(ConfigError, match="milp: option 'time_limit' must be a number > 0"):
        run("milp", load_graph("synthetic:chain?n=4"), msr_like_cluster(2, 0), time_limit=0.0)
