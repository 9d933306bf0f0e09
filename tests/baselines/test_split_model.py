"""The contiguous-split model: device types, ordering edges, fused cycles, free blocks."""

import math

import numpy as np
import pytest

from placerl.baselines.problem import Problem
from placerl.baselines.split_model import (
    ContractionCycleWarning,
    build_split_model,
    pair_independent_edge_times,
)
from placerl.cluster import Cluster
from placerl.errors import ConfigError
from placerl.graph import CompGraph, load_graph
from tests.baselines.helpers import chain, msr_like_cluster


def model(graph, cluster, **options):
    return build_split_model(Problem(graph, cluster, "pipeline"), **options)


def test_devices_group_into_types():
    m = model(chain([1.0, 2.0]), Cluster.preset("cpu_gpu", n_gpus=3))
    assert m.types.counts.tolist() == [1, 3]
    assert m.types.is_cpu.tolist() == [True, False]
    assert m.types.of_device.tolist() == [0, 1, 1, 1]
    assert m.types.durations[:, 0] == pytest.approx([15.0, 30.0])


def test_blocks_are_numbered_topologically():
    graph = CompGraph([{"name": x, "cost": 1.0} for x in "cab"], [("a", "b"), ("b", "c")])
    m = model(graph, msr_like_cluster(2, 0))
    assert m.block_of.tolist() == [2, 0, 1]
    assert m.order_edges.tolist() == [[0, 1], [1, 2]]


def test_backward_edges_do_not_order_parts_but_orphans_are_mirrored():
    nodes = [
        {"name": "f0", "cost": 1.0, "group": "0"},
        {"name": "f1", "cost": 1.0, "group": "1"},
        {"name": "b1", "cost": 1.0, "group": "1", "backward": True},
        {"name": "b0", "cost": 1.0, "group": "0", "backward": True},
        {"name": "opt", "cost": 1.0, "backward": True},  # a group without forward nodes
    ]
    edges = [("f0", "f1"), ("f1", "b1"), ("b1", "b0"), ("b0", "opt")]
    m = model(CompGraph(nodes, edges), msr_like_cluster(2, 0))
    f0, f1, opt = m.block_of[[0, 1, 4]]
    assert m.block_of[2] == f1 and m.block_of[3] == f0
    assert sorted(map(tuple, m.order_edges.tolist())) == sorted([(f0, f1), (opt, f0)])


def test_cycles_closed_by_colocation_are_fused_and_named():
    graph = CompGraph(
        [
            {"name": "a", "cost": 1, "group": "g"},
            {"name": "b", "cost": 1},
            {"name": "c", "cost": 1, "group": "g"},
        ],
        [("a", "b"), ("b", "c")],
    )
    with pytest.warns(ContractionCycleWarning, match=r"fused \(e.g. g, b\)"):
        m = model(graph, msr_like_cluster(2, 0))
    assert m.num_blocks == 1
    assert m.fused_groups == (("g", "b"),)


def test_free_leaves_merge_into_their_neighbour():
    graph = CompGraph(
        [{"name": "in", "cost": 0.0}, {"name": "op", "cost": 1.0}, {"name": "out", "cost": 0.0}],
        [("in", "op"), ("op", "out")],
    )
    assert model(graph, msr_like_cluster(2, 0)).num_blocks == 1
    assert model(graph, msr_like_cluster(2, 0), merge_free=False).num_blocks == 3


def test_free_leaves_with_memory_stay_when_memory_can_bind():
    graph = CompGraph(
        [{"name": "op", "cost": 1.0, "mem_bytes": 6}, {"name": "out", "cost": 0.0, "mem_bytes": 6}],
        [("op", "out")],
    )
    assert model(graph, msr_like_cluster(2, 0, memory=10.0)).num_blocks == 2
    assert model(graph, msr_like_cluster(2, 0, memory=20.0)).num_blocks == 1


def test_load_matches_the_simulator():
    graph, cluster = load_graph("msr:bert24_training"), Cluster.from_msr("bert24_training")
    m = model(graph, cluster)
    half = np.arange(m.num_blocks // 2)
    placement = np.where(np.isin(m.block_of, half), 0, 1)
    from placerl.sim import simulate

    loads = simulate(graph, placement, cluster, "pipeline").load
    assert m.load(half, 0) == pytest.approx(loads[0])


def test_explicit_edge_times_need_no_uniform_links():
    graph = chain([1.0, 1.0], time=0.25)
    cluster = Cluster.preset("cpu_gpu", n_gpus=2)
    assert pair_independent_edge_times(Problem(graph, cluster)).tolist() == [0.25]


def test_uniform_links_give_latency_plus_bytes_over_bandwidth():
    graph = chain([1.0, 1.0], out_bytes=12e9)
    times = pair_independent_edge_times(Problem(graph, Cluster.preset("gpu4_pcie")))
    assert times == pytest.approx([1.0 + 10e-6])


def test_pair_dependent_links_are_refused():
    cluster = Cluster.preset("homogeneous", n_devices=2, latency=0.0)
    cluster = Cluster(cluster.devices, bandwidth=np.array([[1.0, 1.0], [2.0, 1.0]]))
    with pytest.raises(ConfigError, match="bandwidth from 1 to 2; use local_search"):
        pair_independent_edge_times(Problem(chain([1.0, 1.0], out_bytes=1.0), cluster))


def test_memory_per_block():
    graph = chain([1.0, 1.0], mem_bytes=3.0)
    m = model(graph, msr_like_cluster(1, 1, memory=math.inf))
    assert m.block_memory.tolist() == [3.0, 3.0]
