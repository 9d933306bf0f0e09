"""Tests of the graph passes (placerl.graph.passes): with_backward and coarsen."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from placerl.errors import ConfigError, GraphError, PlacementError
from placerl.graph import CompGraph
from placerl.graph.passes import (
    BACKWARD_FACTOR,
    COARSENINGS,
    GRAD_SUFFIX,
    Coarsening,
    coarsen,
    contract,
    register_coarsening,
    with_backward,
)
from placerl.graph.torch_import import from_module
from placerl.graph.zoo import build_model
from tests.strategies import dags

METHODS = list(COARSENINGS)


@pytest.fixture(scope="module")
def resnet():
    """The op graph of the small ResNet in training mode."""
    return from_module(*build_model("resnet50", "small"), training=True)


def is_acyclic(graph: CompGraph) -> bool:
    return nx.is_directed_acyclic_graph(graph.to_networkx())


def grouped(*specs, edges=()):
    """A graph from (name, cost, group) triples."""
    nodes = [{"name": n, "cost": c, "out_bytes": 10.0, "group": g} for n, c, g in specs]
    return CompGraph(nodes, edges)


# ------------------------------------------------------------------------ with_backward
@given(dags(with_kinds=True))
def test_backward_graph_invariants(graph):
    training = with_backward(graph)
    n = graph.num_nodes
    assert training.num_nodes == 2 * n
    assert training.num_edges == 2 * graph.num_edges + n
    assert is_acyclic(training)
    assert training.nodes[:n] == tuple(
        node for node in training.nodes if not node.backward
    )  # forward first, in their order
    for node in graph.nodes:
        fwd = training.node(node.name)
        bwd = training.node(node.name + GRAD_SUFFIX)
        assert bwd.backward and not fwd.backward
        assert fwd.group is not None and bwd.group == fwd.group  # colocated
        assert bwd.cost == pytest.approx(BACKWARD_FACTOR * node.cost)
        assert bwd.costs["cpu"] == pytest.approx(BACKWARD_FACTOR * node.costs["cpu"])
        assert bwd.attrs["forward"] == node.name
    assert training.total_cost == pytest.approx((1 + BACKWARD_FACTOR) * graph.total_cost)
    groups = [node.group for node in training.nodes if not node.backward]
    assert len(set(groups)) == n  # one group per forward node


@given(dags())
def test_backward_edges_mirror_the_forward_ones(graph):
    training = with_backward(graph)
    edges = {(e.src, e.dst): e.bytes for e in training.edges}
    for e in graph.edges:
        assert edges[(e.src, e.dst)] == e.bytes
        assert edges[(e.dst + GRAD_SUFFIX, e.src + GRAD_SUFFIX)] == e.bytes  # the gradient
    for node in graph.nodes:
        assert edges[(node.name, node.name + GRAD_SUFFIX)] == node.out_bytes  # the activation


def test_backward_keeps_existing_groups_and_factor():
    graph = grouped(("a", 1.0, "g"), ("b", 2.0, "g"), ("c", 3.0, None), edges=[("a", "c")])
    training = with_backward(graph, factor=3.0)
    assert training.node("a/grad").group == training.node("b/grad").group == "g"
    assert training.node("c/grad").group == "c"
    assert training.node("c/grad").cost == 9.0
    assert training.meta["backward_factor"] == 3.0
    assert training.name == "graph_training"


def test_backward_uses_profiled_times():
    node = {"name": "a", "cost": 1.0, "costs": {"cpu": 4.0, "gpu": 1.0}}
    node["attrs"] = {"backward_costs": {"cpu": 5.0}}
    training = with_backward(CompGraph([node]))
    assert training.node("a/grad").costs == {"cpu": 5.0, "gpu": 2.0}


def test_backward_of_an_imported_model(resnet):
    training = with_backward(resnet)
    assert is_acyclic(training)
    conv = training.node("layer1.0.conv1/conv2d/grad")
    assert conv.op == "conv2d_grad" and conv.attrs["module"] == "layer1.0.conv1"
    assert conv.attrs["flops"] == 2 * resnet.node("layer1.0.conv1/conv2d").attrs["flops"]
    assert sum(n.mem_bytes for n in training.nodes) == sum(n.mem_bytes for n in resnet.nodes)


def test_backward_name_clash_gets_a_suffix():
    graph = CompGraph([{"name": "a", "cost": 1.0}, {"name": "a/grad", "cost": 1.0}])
    training = with_backward(graph)
    assert training.node("a/grad").backward is False
    assert training.node("a/grad_1").attrs["forward"] == "a"


def test_backward_twice_is_an_error():
    training = with_backward(CompGraph([{"name": "a", "cost": 1.0}]))
    with pytest.raises(GraphError, match="already has backward nodes \\('a/grad'"):
        with_backward(training)


@pytest.mark.parametrize("factor", [-1.0, float("inf"), float("nan"), "2", True])
def test_bad_backward_factor(factor):
    with pytest.raises(ConfigError, match="backward factor must be a finite number >= 0"):
        with_backward(CompGraph([{"name": "a", "cost": 1.0}]), factor=factor)


# ------------------------------------------------------------------------------ coarsen
def check_coarsening(graph: CompGraph, result: Coarsening, max_nodes: int) -> None:
    coarse = result.graph
    assert coarse.num_nodes <= max(max_nodes, 1)
    assert is_acyclic(coarse)
    assert result.assignment.shape == (graph.num_nodes,)
    assert set(result.assignment.tolist()) == set(range(coarse.num_nodes))
    assert coarse.total_cost == pytest.approx(graph.total_cost)
    assert coarse.arrays.mem_bytes.sum() == pytest.approx(graph.arrays.mem_bytes.sum())
    for kind in graph.device_kinds:
        assert coarse.arrays.kind_costs[kind].sum() == pytest.approx(
            graph.arrays.kind_costs[kind].sum()
        )
    # Each coarse node is exactly its members; a rebuilt map agrees.
    rebuilt = Coarsening.between(graph, coarse)
    assert np.array_equal(rebuilt.assignment, result.assignment)
    # Cut edges keep their bytes: per producer, its widest edge into the consumer.
    expected: dict[tuple[int, int], float] = {}
    widest: dict[tuple[int, int, int], float] = {}
    for e in graph.edges:
        u, v = graph.index(e.src), graph.index(e.dst)
        bu, bv = result.assignment[u], result.assignment[v]
        if bu != bv:
            widest[(bu, bv, u)] = max(widest.get((bu, bv, u), 0.0), e.bytes)
    for (bu, bv, _), nbytes in widest.items():
        expected[(bu, bv)] = expected.get((bu, bv), 0.0) + nbytes
    actual = {(coarse.index(e.src), coarse.index(e.dst)): e.bytes for e in coarse.edges}
    assert actual.keys() == expected.keys()
    for key, nbytes in expected.items():
        assert actual[key] == pytest.approx(nbytes)


@pytest.mark.parametrize("method", METHODS)
@given(graph=dags(max_nodes=14, with_kinds=True), data=st.data())
def test_coarsen_invariants(method, graph, data):
    max_nodes = data.draw(st.integers(1, graph.num_nodes + 1))
    result = coarsen(graph, max_nodes, method)
    check_coarsening(graph, result, max_nodes)


@pytest.mark.parametrize("method", METHODS)
@given(graph=dags(max_nodes=14), data=st.data())
def test_coarse_placements_expand_exactly(method, graph, data):
    result = coarsen(graph, data.draw(st.integers(1, graph.num_nodes)), method)
    k = result.graph.num_nodes
    placement = np.array(data.draw(st.lists(st.integers(0, 3), min_size=k, max_size=k)))
    expanded = result.expand(placement)
    assert expanded.shape == (graph.num_nodes,)
    for v, name in enumerate(graph.names):
        coarse_node = result.graph.nodes[result.assignment[v]]
        assert name in coarse_node.attrs.get("members", [coarse_node.name])
        assert expanded[v] == placement[result.assignment[v]]


@given(dags(max_nodes=10), st.data())
def test_coarsening_a_training_graph_keeps_colocation(graph, data):
    training = with_backward(graph)
    result = coarsen(training, data.draw(st.integers(1, training.num_nodes)), "topo")
    check_coarsening(training, result, result.graph.num_nodes)
    group_of = {}  # original group -> coarse group: one each, so colocation survives
    for v, node in enumerate(training.nodes):
        coarse_group = result.graph.nodes[result.assignment[v]].group
        assert coarse_group is not None
        assert group_of.setdefault(node.group, coarse_group) == coarse_group


def test_merging_two_groups_merges_them():
    graph = grouped(("a", 1.0, "g"), ("b", 1.0, "h"), ("c", 1.0, "h"), edges=[("a", "b")])
    result = contract(graph, ["x", "x", "c"])
    assert [n.group for n in result.graph.nodes] == ["g", "g"]


def test_a_merge_that_would_close_a_cycle_is_split():
    # a -> b -> c and a -> c: merging {a, c} would need b both after and before it.
    graph = CompGraph(
        [{"name": x, "cost": 1.0} for x in "abc"], [("a", "b"), ("b", "c"), ("a", "c")]
    )
    result = contract(graph, ["x", "b", "x"])
    assert result.graph.num_nodes == 3 and is_acyclic(result.graph)
    chain = contract(graph, ["x", "x", "y"])  # a and b merge fine
    assert chain.graph.names == ("a+1", "c")
    assert chain.graph.edges[0].bytes == 0.0


def test_explicit_edge_times_add_up_per_producer():
    graph = CompGraph(
        [{"name": x, "cost": 1.0} for x in "abcd"],
        [
            {"src": "a", "dst": "c", "bytes": 5.0, "time": 2.0},
            {"src": "a", "dst": "d", "bytes": 7.0, "time": 1.0},
            {"src": "b", "dst": "d", "bytes": 1.0, "time": 3.0},
        ],
    )
    (edge,) = contract(graph, [0, 0, 1, 1]).graph.edges
    assert (edge.bytes, edge.time) == (8.0, 5.0)  # a sends its tensor once: max(5, 7) + 1


def test_coarse_nodes_aggregate_attributes():
    nodes = [
        {"name": "a", "cost": 1.0, "op": "conv", "out_bytes": 4.0, "mem_bytes": 1.0},
        {"name": "b", "cost": 2.0, "op": "conv", "out_bytes": 8.0, "mem_bytes": 2.0},
        {"name": "c", "cost": 4.0, "op": "relu", "out_bytes": 16.0},
    ]
    for node, module in zip(nodes, ["x.0.conv", "x.1.conv", "y"], strict=True):
        node["attrs"] = {"flops": 10, "module": module}
    graph = CompGraph(nodes, [("a", "b"), ("b", "c")])
    merged = contract(graph, [0, 0, 1]).graph
    first = merged.nodes[0]
    assert first.name == "x"  # the common module scope
    assert (first.cost, first.mem_bytes, first.op) == (3.0, 3.0, "conv")
    assert first.out_bytes == 8.0  # only b's output leaves the block
    assert first.attrs == {"members": ["a", "b"], "flops": 20, "module": "x"}
    assert contract(graph, [0, 0, 0]).graph.nodes[0].op == "fused"


def test_small_graphs_are_kept(resnet):
    result = coarsen(resnet, resnet.num_nodes)
    assert result.graph is resnet
    assert np.array_equal(result.expand(np.arange(resnet.num_nodes)), np.arange(resnet.num_nodes))


@pytest.mark.parametrize("method", METHODS)
def test_coarsen_an_imported_model(resnet, method):
    result = coarsen(resnet, 12, method)
    check_coarsening(resnet, result, 12)
    assert result.graph.meta["coarsened"] == {"method": method, "original_nodes": 32}


def test_scope_coarsening_names_modules(resnet):
    result = coarsen(resnet, 12, "scope")
    assert "layer1.0" in result.graph.names
    assert result.graph.node("layer1.0").attrs["module"] == "layer1.0"
    assert result.graph.num_nodes <= 12


def test_chain_coarsening_merges_only_chains():
    graph = CompGraph(
        [{"name": x, "cost": 1.0} for x in "abcde"],
        [("a", "b"), ("b", "c"), ("a", "d"), ("d", "e"), ("c", "e")],
    )
    labels = COARSENINGS["chains"](graph, 1)
    assert labels[1] == labels[2] and labels[3] != labels[1] and labels[0] != labels[1]


def test_register_a_coarsening_method():
    with COARSENINGS.scope():

        @register_coarsening("test_pairs")
        def pairs(graph, max_nodes):
            return [v // 2 for v in range(graph.num_nodes)]

        graph = CompGraph([{"name": x, "cost": 1.0} for x in "abcd"], [("a", "b"), ("c", "d")])
        assert coarsen(graph, 2, "test_pairs").graph.num_nodes == 2
    assert "test_pairs" not in COARSENINGS


@pytest.mark.parametrize("max_nodes", [0, -3, 2.5, True, "10"])
def test_bad_max_nodes(resnet, max_nodes):
    with pytest.raises(ConfigError, match="max_nodes must be a positive integer"):
        coarsen(resnet, max_nodes)


def test_unknown_method(resnet):
    with pytest.raises(ConfigError, match="unknown coarsening method 'kmeans'; known: "):
        coarsen(resnet, 10, "kmeans")


def test_expand_checks_the_placement_length(resnet):
    result = coarsen(resnet, 10)
    with pytest.raises(PlacementError, match="expected \\(10,\\): one device per node"):
        result.expand([0, 1])


def test_between_detects_missing_members(resnet):
    with pytest.raises(GraphError, match="is in no coarse node"):
        Coarsening.between(resnet, CompGraph([{"name": "x", "cost": 1.0}]))


def test_contract_needs_one_label_per_node(resnet):
    with pytest.raises(GraphError, match="got 2 labels for the 32 nodes"):
        contract(resnet, [0, 1])
