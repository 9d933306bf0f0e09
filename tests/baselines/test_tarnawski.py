"""tarnawski_dp: the published msr optima, brute force on tiny graphs, limits, bad input."""

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings

from placerl.baselines import SearchLimitWarning, solve
from placerl.baselines.split_model import ContractionCycleWarning
from placerl.baselines.tarnawski import DEFAULT_MAX_PAIRS
from placerl.cluster import Cluster, Device
from placerl.errors import ConfigError, PlacementError
from placerl.graph import CompGraph, load_graph
from placerl.sim import simulate
from tests.baselines.helpers import (
    MSR_OPTIMA,
    brute_force_pipeline,
    chain,
    msr_like_cluster,
    pipeline_problems,
)


def dp(graph, cluster, objective="pipeline", **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContractionCycleWarning)
        return solve("tarnawski_dp", graph, cluster, objective, **options)


@pytest.mark.parametrize("name", sorted(MSR_OPTIMA))
def test_reproduces_the_published_msr_optimum(name):
    graph, cluster = load_graph(f"msr:{name}"), Cluster.from_msr(name)
    result = dp(graph, cluster)
    assert result.runtime == pytest.approx(MSR_OPTIMA[name], rel=1e-6)
    assert result.info["value"] == pytest.approx(result.runtime, rel=1e-9)
    assert simulate(graph, result.placement, cluster, "pipeline").runtime == result.runtime
    assert result.feasible and result.optimal
    assert result.lower_bound == pytest.approx(result.runtime, rel=1e-9)
    assert result.solve_time > 0  # recorded; its speed is bench_lower_bounds' to measure


def test_training_graph_keeps_each_backward_node_with_its_forward_node():
    graph, cluster = load_graph("msr:bert24_training"), Cluster.from_msr("bert24_training")
    placement = dp(graph, cluster).placement
    group = graph.arrays.group
    for g in np.unique(group[group >= 0]):
        assert len(set(placement[group == g])) == 1


@given(pipeline_problems())
def test_equals_brute_force_over_contiguous_splits(problem):
    graph, cluster = problem
    best = brute_force_pipeline(graph, cluster)
    if math.isinf(best):
        with pytest.raises(PlacementError):
            dp(graph, cluster)
        return
    result = dp(graph, cluster)
    assert result.runtime == best
    assert result.feasible and result.optimal
    assert result.info["value"] == pytest.approx(best, abs=1e-9)


@settings(max_examples=30)
@given(pipeline_problems(max_nodes=6, training=True))
def test_equals_brute_force_on_training_graphs(problem):
    graph, cluster = problem
    best = brute_force_pipeline(graph, cluster)
    if math.isinf(best):
        return
    assert dp(graph, cluster).runtime == best


@settings(max_examples=30)
@given(pipeline_problems())
def test_merging_free_blocks_keeps_the_optimum(problem):
    graph, cluster = problem
    try:
        merged = dp(graph, cluster).runtime
    except PlacementError:
        return
    assert dp(graph, cluster, merge_free=False).runtime == merged


def test_merging_free_blocks_shrinks_gnmt_from_millions_of_ideals():
    result = dp(load_graph("msr:gnmt_inference"), Cluster.from_msr("gnmt_inference"))
    assert result.info["free_merged"] == 18
    assert result.info["ideals"] == 17914


def fork_join(branches, length):
    nodes = [{"name": "fork", "cost": 1.0}, {"name": "join", "cost": 1.0}]
    edges = []
    for b in range(branches):
        names = [f"b{b}.{i}" for i in range(length)]
        nodes += [{"name": x, "cost": 1.0 + b + i} for i, x in enumerate(names)]
        edges += [("fork", names[0]), *itertools.pairwise(names), (names[-1], "join")]
    return CompGraph(nodes, [(u, v, {"time": 0.5}) for u, v in edges], name="fork_join")


def test_a_wide_fork_join_is_solved_exactly():
    branches, length = 6, 3
    result = dp(fork_join(branches, length), msr_like_cluster(3, 0))
    assert result.info["ideals"] == 2 + (length + 1) ** branches
    assert result.optimal
    assert result.runtime == pytest.approx(result.info["value"])


def test_gives_up_beyond_max_ideals_with_a_bound():
    graph, cluster = load_graph("msr:bert_l-3_inference"), Cluster.from_msr("bert_l-3_inference")
    with pytest.warns(SearchLimitWarning, match="more than 100 ideals"):
        result = solve("tarnawski_dp", graph, cluster, "pipeline", max_ideals=100)
    assert not result.optimal
    assert result.lower_bound <= MSR_OPTIMA["bert_l-3_inference"] <= result.runtime * (1 + 1e-9)
    assert result.feasible
    assert "gave_up" in result.info


def test_an_antichain_too_wide_gives_up_before_counting_with_the_same_split():
    graph, cluster = fork_join(6, 3), msr_like_cluster(3, 0)  # 6 branches: 2**6 ideals and more
    with pytest.warns(SearchLimitWarning, match="more than 63 ideals .an antichain of 6 blocks"):
        early = solve("tarnawski_dp", graph, cluster, "pipeline", max_ideals=63)
    with pytest.warns(SearchLimitWarning, match="more than 64 ideals;"):  # counted: 4,098
        counted = solve("tarnawski_dp", graph, cluster, "pipeline", max_ideals=64)
    assert np.array_equal(early.placement, counted.placement)
    assert early.lower_bound == counted.lower_bound
    assert not early.optimal


def test_gives_up_at_the_time_limit_with_a_bound():
    graph, cluster = load_graph("msr:gnmt_inference"), Cluster.from_msr("gnmt_inference")
    with pytest.warns(SearchLimitWarning, match="time limit"):
        result = solve("tarnawski_dp", graph, cluster, "pipeline", time_limit=1e-3)
    assert result.lower_bound <= MSR_OPTIMA["gnmt_inference"] <= result.runtime * (1 + 1e-9)
    assert not result.optimal


def test_the_default_stop_counts_pairs_and_gives_the_same_split_on_any_machine():
    """The pair budget is checked at fixed points: a slow machine visits the same pairs."""
    graph, cluster = load_graph("msr:gnmt_inference"), Cluster.from_msr("gnmt_inference")
    runs = []
    for _ in range(2):
        with pytest.warns(SearchLimitWarning, match=r"100000 pairs \(max-load budget"):
            runs.append(solve("tarnawski_dp", graph, cluster, "pipeline", max_pairs=100_000))
    first, second = runs
    np.testing.assert_array_equal(first.placement, second.placement)
    assert first.info["pairs"] == second.info["pairs"] >= 100_000
    assert first.lower_bound <= first.runtime and not first.optimal
    full = solve("tarnawski_dp", graph, cluster, "pipeline")
    assert full.optimal and full.runtime <= first.runtime
    assert full.info["pairs"] < DEFAULT_MAX_PAIRS


def test_scored_under_step_time_it_is_not_claimed_optimal():
    graph, cluster = load_graph("msr:bert24_inference"), Cluster.from_msr("bert24_inference")
    result = dp(graph, cluster, "step_time")
    assert not result.optimal and result.lower_bound is None
    assert result.info["value"] == pytest.approx(MSR_OPTIMA["bert24_inference"])


def test_colocation_cycle_is_fused_with_a_warning():
    # a -> b -> c with a and c colocated: b must join them in any contiguous split.
    graph = CompGraph(
        [
            {"name": "a", "cost": 1.0, "group": "ac"},
            {"name": "b", "cost": 1.0},
            {"name": "c", "cost": 1.0, "group": "ac"},
        ],
        [("a", "b", {"time": 0.1}), ("b", "c", {"time": 0.1})],
    )
    with pytest.warns(ContractionCycleWarning, match="closes 1 cycle"):
        result = solve("tarnawski_dp", graph, msr_like_cluster(2, 0), "pipeline")
    assert len(set(result.placement)) == 1


def test_no_contiguous_split_fitting_memory_is_an_error():
    # a -> b -> c on two devices of 10 bytes: only {a, c} | {b} fits, and it is not contiguous.
    nodes = [
        {"name": x, "cost": 1.0, "mem_bytes": m} for x, m in zip("abc", [4, 7, 4], strict=True)
    ]
    graph = CompGraph(nodes, [("a", "b"), ("b", "c")])
    with pytest.raises(PlacementError, match="no contiguous split of 'graph' fits"):
        solve("tarnawski_dp", graph, msr_like_cluster(2, 0, memory=10.0), "pipeline")


def test_pair_dependent_bandwidth_is_a_config_error():
    devices = tuple(Device(f"gpu:{i}") for i in range(3))
    bandwidth = np.array([[1, 1, 2], [1, 1, 1], [1, 1, 1]]) * 1e9
    cluster = Cluster(devices, bandwidth=bandwidth)
    graph = chain([1.0, 1.0], out_bytes=1e6)
    with pytest.raises(ConfigError, match=r"do not depend on the device pair.*bandwidth"):
        solve("tarnawski_dp", graph, cluster, "pipeline")


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("max_ideals", 0, "'max_ideals' must be an integer >= 1"),
        ("max_pairs", 0, "'max_pairs' must be an integer >= 1"),
        ("time_limit", -1.0, "'time_limit' must be a number > 0"),
        ("orders", 0, "'orders' must be an integer >= 1"),
        ("seed", -1, "'seed' must be an integer >= 0"),
    ],
)
def test_bad_options_are_named(option, value, message):
    graph, cluster = chain([1.0, 2.0]), msr_like_cluster(2, 0)
    with pytest.raises(ConfigError, match=f"tarnawski_dp: option {message}"):
        solve("tarnawski_dp", graph, cluster, "pipeline", **{option: value})


def test_heterogeneous_device_types_use_each_type():
    # One fast and one slow accelerator type: the DP counts devices per type.
    devices = (Device("fast", "gpu", speed=2.0), Device("slow", "gpu", speed=1.0))
    cluster = Cluster(devices, bandwidth=1e12)
    graph = chain([4.0, 2.0, 2.0, 4.0])
    result = dp(graph, cluster)
    assert result.optimal
    assert result.runtime == pytest.approx(4.0)  # fast device: 4 + 2 + 2 at speed 2; slow: 4
