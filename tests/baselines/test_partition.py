"""min_cut: balanced minimum cut by recursive Kernighan-Lin."""

import numpy as np
import pytest

from placerl.baselines import solve
from placerl.cluster import Cluster
from placerl.errors import ConfigError
from placerl.graph import CompGraph, load_graph


def two_chains(length=5, time=1.0):
    nodes = [
        {"name": f"{c}{i}", "cost": 1.0, "mem_bytes": 1.0} for c in "ab" for i in range(length)
    ]
    edges = [(f"{c}{i}", f"{c}{i + 1}", {"time": time}) for c in "ab" for i in range(length - 1)]
    return CompGraph(nodes, edges)


def test_two_independent_chains_go_to_two_devices_uncut():
    placement = solve("min_cut", two_chains(), Cluster.preset("homogeneous", n_devices=2)).placement
    assert len(set(placement[:5])) == 1 and len(set(placement[5:])) == 1
    assert placement[0] != placement[5]


def test_the_work_is_balanced_over_many_devices():
    graph, cluster = load_graph("synthetic:layered?n=120&seed=4"), Cluster.preset("gpu8_nvlink")
    placement = solve("min_cut", graph, cluster).placement
    work = np.bincount(placement, weights=graph.arrays.cost, minlength=8)
    assert work.max() <= 1.6 * work.mean()


def test_memory_limits_are_respected():
    graph = two_chains(length=6)
    cluster = Cluster.preset("homogeneous", n_devices=3, memory=4.0)
    result = solve("min_cut", graph, cluster)
    assert result.feasible
    assert np.bincount(result.placement).max() <= 4


def test_faster_devices_get_more_work():
    graph = load_graph("synthetic:layered?n=100&seed=1")
    cluster = Cluster.preset("homogeneous", n_devices=2, speeds=[3.0, 1.0])
    placement = solve("min_cut", graph, cluster).placement
    work = np.bincount(placement, weights=graph.arrays.cost, minlength=2)
    assert work[0] > 2 * work[1]


@pytest.mark.parametrize(("option", "value"), [("imbalance", 0.0), ("max_iter", 0), ("seed", -1)])
def test_bad_options_are_named(option, value):
    with pytest.raises(ConfigError, match=f"min_cut: option '{option}'"):
        solve(
            "min_cut", two_chains(), Cluster.preset("homogeneous", n_devices=2), **{option: value}
        )
