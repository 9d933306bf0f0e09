"""single_device, round_robin, random, m_topo."""

import math

import numpy as np
import pytest

from placerl.baselines import InfeasiblePlacementWarning, solve
from placerl.cluster import Cluster, Device
from placerl.errors import PlacementError
from placerl.graph import CompGraph, load_graph
from tests.baselines.helpers import chain


def test_single_device_picks_the_fastest_device_that_fits():
    graph = load_graph("synthetic:chain?n=20&seed=0")
    result = solve("single_device", graph, Cluster.preset("cpu_gpu", n_gpus=2))
    assert set(result.placement) == {1}  # the first GPU, not the slow CPU


def test_single_device_skips_devices_without_room():
    graph = chain([1.0, 1.0], mem_bytes=5.0)
    devices = Cluster.preset("cpu_gpu", n_gpus=1, cpu_memory=100.0).devices
    cluster = Cluster((devices[0], type(devices[1])("gpu:0", "gpu", memory=8.0)))
    assert set(solve("single_device", graph, cluster).placement) == {0}


def test_single_device_without_a_device_that_holds_everything_is_the_least_overflowing():
    graph = chain([1.0, 1.0], mem_bytes=5.0)
    devices = (Device("small", memory=6.0), Device("larger", memory=9.0))
    with pytest.warns(InfeasiblePlacementWarning, match="over its memory"):
        result = solve("single_device", graph, Cluster(devices))
    assert not result.feasible and set(result.placement) == {1}


def test_single_device_without_a_device_that_runs_everything_is_an_error():
    nodes = [
        {"name": "a", "cost": 1.0, "costs": {"cpu": math.inf}},
        {"name": "b", "cost": 1.0, "costs": {"gpu": math.inf}},
    ]
    graph = CompGraph(nodes, [("a", "b")], name="split")
    cluster = Cluster((Device("g", "gpu"), Device("c", "cpu")))
    with pytest.raises(PlacementError, match="single_device: no device can run every node"):
        solve("single_device", graph, cluster)


def test_round_robin_cycles_through_devices_in_topological_order():
    graph = CompGraph(
        [{"name": x, "cost": 1.0} for x in "dcba"], [("a", "b"), ("b", "c"), ("c", "d")]
    )
    placement = solve("round_robin", graph, Cluster.preset("homogeneous", n_devices=3)).placement
    assert placement.tolist() == [0, 2, 1, 0]  # a, b, c, d -> 0, 1, 2, 0


def test_round_robin_keeps_groups_together_and_skips_full_devices():
    nodes = [{"name": f"n{i}", "cost": 1.0, "mem_bytes": 1.0} for i in range(4)]
    nodes[0]["group"] = nodes[2]["group"] = "g"
    graph = CompGraph(nodes, [(f"n{i}", f"n{i + 1}") for i in range(3)])
    cluster = Cluster.preset("homogeneous", n_devices=3, memory=2.0)
    placement = solve("round_robin", graph, cluster).placement
    assert placement[0] == placement[2]
    assert np.bincount(placement, minlength=3).max() <= 2


def test_random_is_reproducible_and_seeded():
    graph, cluster = load_graph("synthetic:layered?n=40"), Cluster.preset("gpu4_pcie")
    a = solve("random", graph, cluster, seed=1).placement
    assert np.array_equal(a, solve("random", graph, cluster, seed=1).placement)
    assert not np.array_equal(a, solve("random", graph, cluster, seed=2).placement)


def test_m_topo_fills_devices_with_balanced_shares():
    placement = solve(
        "m_topo", chain([1.0] * 8), Cluster.preset("homogeneous", n_devices=2)
    ).placement
    assert placement.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]


def test_m_topo_gives_faster_devices_more_work():
    cluster = Cluster.preset("homogeneous", n_devices=2, speeds=[3.0, 1.0])
    placement = solve("m_topo", chain([1.0] * 8), cluster).placement
    assert placement.tolist() == [0] * 6 + [1] * 2


def test_m_topo_moves_on_when_memory_is_full():
    graph = chain([1.0] * 6, mem_bytes=1.0)
    cluster = Cluster.preset("homogeneous", n_devices=3, memory=2.0)
    placement = solve("m_topo", graph, cluster).placement
    assert placement.tolist() == [0, 0, 1, 1, 2, 2]
    assert solve("m_topo", graph, cluster).feasible


def test_m_topo_with_a_device_that_cannot_run_some_node():
    nodes = [
        {"name": f"n{i}", "cost": 1.0, "costs": {"cpu": math.inf if i == 3 else 1.0}}
        for i in range(4)
    ]
    graph = CompGraph(nodes, [(f"n{i}", f"n{i + 1}") for i in range(3)])
    cluster = Cluster.preset("cpu_gpu", n_gpus=1)
    result = solve("m_topo", graph, cluster)
    assert result.feasible and result.placement[3] == 1
