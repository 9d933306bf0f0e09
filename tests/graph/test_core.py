import json
import math
import pickle

import networkx as nx
import numpy as np
import pytest
from hypothesis import given

from placerl.errors import GraphError
from placerl.graph import CompGraph, Edge, Node, load_graph
from placerl.graph.synthetic import generate
from tests.strategies import dags


def diamond() -> CompGraph:
    nodes = [
        {"name": "in", "cost": 1e-3, "out_bytes": 100},
        {"name": "left", "cost": 2e-3, "out_bytes": 40, "mem_bytes": 8, "costs": {"cpu": 1e-2}},
        {"name": "right", "cost": 3e-3, "out_bytes": 60, "group": "g"},
        {"name": "out", "cost": 4e-3, "group": "g", "backward": True, "op": "add"},
    ]
    edges = [
        ("in", "left"),
        ("in", "right", {"bytes": 10}),
        ("left", "out"),
        ("right", "out", {"time": 0.5}),
    ]
    return CompGraph(nodes, edges, name="diamond", meta={"origin": "test"})


def test_nodes_and_defaults():
    g = diamond()
    assert g.names == ("in", "left", "right", "out")
    assert g.num_nodes == 4 and g.num_edges == 4 and len(g) == 4
    assert g.node("left") == Node("left", 2e-3, 40, 8, costs={"cpu": 1e-2})
    assert g.node(3).backward and g.node(3).op == "add"
    assert g.index("right") == 2
    assert g.device_kinds == ("cpu",)
    assert g.total_cost == pytest.approx(1e-2)


def test_edge_bytes_default_to_producer_out_bytes():
    g = diamond()
    assert g.edges[0] == Edge("in", "left", 100.0)
    assert g.edges[1].bytes == 10.0
    assert g.edges[3].time == 0.5 and g.edges[2].time is None


def test_arrays_csr_is_sorted_and_consistent():
    a = diamond().arrays
    assert a.num_nodes == 4 and a.num_edges == 4
    np.testing.assert_array_equal(a.succ_ptr, [0, 2, 3, 4, 4])
    np.testing.assert_array_equal(a.succ, [1, 2, 3, 3])
    np.testing.assert_array_equal(a.pred_ptr, [0, 0, 1, 2, 4])
    np.testing.assert_array_equal(a.pred, [0, 0, 1, 2])
    np.testing.assert_array_equal(a.in_degree, [0, 1, 1, 2])
    np.testing.assert_array_equal(a.out_degree, [2, 1, 1, 0])
    np.testing.assert_array_equal(a.group, [-1, -1, 0, 0])
    assert a.group_names == ("g",)
    assert math.isnan(a.kind_costs["cpu"][0]) and a.kind_costs["cpu"][1] == 1e-2
    assert math.isnan(a.edge_time[0]) and a.edge_time[3] == 0.5
    for v in range(4):
        for slot in range(a.succ_ptr[v], a.succ_ptr[v + 1]):
            e = a.succ_edge[slot]
            assert a.src[e] == v and a.dst[e] == a.succ[slot]


def test_arrays_are_read_only_and_cached():
    g = diamond()
    assert g.arrays is g.arrays
    with pytest.raises(ValueError):
        g.arrays.cost[0] = 5.0
    with pytest.raises(AttributeError):
        g.name_that_does_not_exist  # noqa: B018


@given(dags())
def test_csr_matches_networkx(g):
    nxg = g.to_networkx()
    for v, name in enumerate(g.names):
        expected = sorted(g.index(s) for s in nxg.successors(name))
        assert list(g.successors(v)) == expected
        assert list(g.predecessors(v)) == sorted(g.index(p) for p in nxg.predecessors(name))


@given(dags(with_kinds=True))
def test_networkx_round_trip(g):
    assert CompGraph.from_networkx(g.to_networkx()) == g


def test_networkx_round_trip_keeps_an_edge_order_networkx_would_not():
    g = load_graph("msr:bert24_training")  # the README's example: edges not listed by source
    assert [(e.src, e.dst) for e in g.edges] != list(g.to_networkx().edges)
    back = CompGraph.from_networkx(g.to_networkx())
    assert back == g and back.fingerprint() == g.fingerprint()
    nxg = g.to_networkx()
    nxg.remove_edge(*next(iter(nxg.edges)))  # an edited graph: its own edge order
    assert CompGraph.from_networkx(nxg).num_edges == g.num_edges - 1


def test_the_edge_order_survives_json_and_is_ignored_where_it_does_not_fit():
    g = load_graph("msr:bert24_training")
    data = json.loads(json.dumps(nx.node_link_data(g.to_networkx(), edges="edges")))
    assert CompGraph.from_networkx(nx.node_link_graph(data, edges="edges")) == g  # lists
    mixed = CompGraph(
        [{"name": "a", "cost": 1.0}, {"name": "b", "cost": 1.0}], [("a", "b")]
    ).to_networkx()
    mixed.add_node(3, name="c", cost=1.0)
    mixed.add_edge("b", 3)
    assert CompGraph.from_networkx(mixed).num_edges == 2  # str and int keys: networkx's order


@given(g=dags(with_kinds=True))
def test_json_round_trip(tmp_path_factory, g):
    path = tmp_path_factory.mktemp("g") / "graph.json"
    g.save(path)
    loaded = CompGraph.load(path)
    assert loaded == g
    assert loaded.fingerprint() == g.fingerprint()


def test_round_trip_keeps_groups_meta_and_attrs(tmp_path):
    g = CompGraph(
        [{"name": "a", "cost": 1.0, "flops": 12, "group": "x"}], name="one", meta={"k": 2}
    )
    assert g.node("a").attrs == {"flops": 12}
    path = g.save(tmp_path / "sub" / "one.json")
    assert CompGraph.load(path) == g
    assert CompGraph.from_networkx(g.to_networkx()) == g


def test_from_networkx_uses_insertion_order_and_str_names():
    nxg = nx.DiGraph()
    nxg.add_node(3, cost=1.0)
    nxg.add_node(1, cost=2.0)
    nxg.add_edge(3, 1)
    g = CompGraph.from_networkx(nxg)
    assert g.names == ("3", "1")
    assert list(g.successors(0)) == [1]


def test_pickle_round_trip_drops_cache():
    g = diamond()
    _ = g.arrays
    clone = pickle.loads(pickle.dumps(g))
    assert clone == g
    np.testing.assert_array_equal(clone.arrays.cost, g.arrays.cost)


def test_content_fingerprint_ignores_name_and_meta():
    a, b = generate("nmt", seed=24), generate("nmt", seed=25)  # the same shapes drawn
    assert a.fingerprint() != b.fingerprint()  # the names and meta carry the seeds
    assert a.content_fingerprint() == b.content_fingerprint()
    assert generate("nmt", seed=1).content_fingerprint() != a.content_fingerprint()
    assert (
        generate("ptb", seed=2).content_fingerprint()
        != generate("ptb", seed=26).content_fingerprint()
    )  # the same costs, another wiring


def test_fingerprint_changes_with_content():
    g = diamond()
    other = CompGraph(
        [{**n.to_dict(), "cost": n.cost * 2} for n in g.nodes], g.edges, name="diamond"
    )
    assert other.fingerprint() != g.fingerprint()


# ------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize(
    ("nodes", "edges", "message"),
    [
        ([], [], "has no nodes"),
        ([{"name": "a", "cost": 1}, {"name": "a", "cost": 2}], [], "duplicate node names: a"),
        ([{"name": "a"}], [], "node 'a' is missing required attribute 'cost'"),
        ([{"cost": 1}], [], "node #0 needs a non-empty string 'name'"),
        ([{"name": "a", "cost": -1}], [], "node 'a' attribute 'cost' is -1.0"),
        ([{"name": "a", "cost": float("nan")}], [], "node 'a' attribute 'cost' is nan"),
        ([{"name": "a", "cost": float("inf")}], [], "node 'a' attribute 'cost' is inf"),
        ([{"name": "a", "cost": "fast"}], [], "node 'a' attribute 'cost' must be a number"),
        ([{"name": "a", "cost": 1, "out_bytes": -5}], [], "node 'a' attribute 'out_bytes' is -5.0"),
        ([{"name": "a", "cost": 1, "mem_bytes": float("inf")}], [], "'mem_bytes' is inf"),
        ([{"name": "a", "cost": 1, "costs": {"cpu": -1}}], [], "cost for kind 'cpu' is -1.0"),
        ([{"name": "a", "cost": 1, "costs": [1]}], [], "'costs' must map device kind"),
        ([{"name": "a", "cost": 1}], [("a", "zz")], "edge a -> zz refers to unknown node 'zz'"),
        ([{"name": "a", "cost": 1}], [("a", "a")], "self-loop on node 'a'"),
        (
            [{"name": "a", "cost": 1}, {"name": "b", "cost": 1}],
            [("a", "b"), ("a", "b")],
            "duplicate edge a -> b",
        ),
        (
            [{"name": "a", "cost": 1}, {"name": "b", "cost": 1}],
            [("a", "b", {"bytes": -1})],
            "edge a -> b attribute 'bytes' is -1.0",
        ),
        (
            [{"name": "a", "cost": 1}, {"name": "b", "cost": 1}],
            [{"src": "a", "dst": "b", "time": float("nan")}],
            "edge a -> b attribute 'time' is nan",
        ),
        ([{"name": "a", "cost": 1}], [{"from": "a"}], "edge #0 needs 'src' and 'dst'"),
        ([{"name": "a", "cost": 1}], ["ab"], "edge #0 must be an Edge"),
        ([5], [], "node #0 must be a mapping or Node"),
    ],
)
def test_bad_graphs_raise_named_errors(nodes, edges, message):
    with pytest.raises(GraphError, match=message.replace("(", r"\(")):
        CompGraph(nodes, edges)


def test_cycle_is_printed():
    nodes = [{"name": x, "cost": 1} for x in "abcd"]
    with pytest.raises(
        GraphError, match=r"has a cycle: (b -> c -> d -> b|c -> d -> b -> c|d -> b -> c -> d)"
    ):
        CompGraph(nodes, [("a", "b"), ("b", "c"), ("c", "d"), ("d", "b")])


def test_bad_documents(tmp_path):
    with pytest.raises(GraphError, match="graph file not found"):
        CompGraph.load(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(GraphError, match="is not valid JSON"):
        CompGraph.load(tmp_path / "bad.json")
    with pytest.raises(GraphError, match="not a placerl graph document"):
        CompGraph.from_dict({"nodes": []})
    doc = diamond().to_dict()
    with pytest.raises(GraphError, match="unsupported graph schema version 99"):
        CompGraph.from_dict({**doc, "version": 99})
    with pytest.raises(GraphError, match="needs a list under 'edges'"):
        CompGraph.from_dict({**doc, "edges": None})
    with pytest.raises(GraphError, match=r"needs a networkx\.DiGraph"):
        CompGraph.from_networkx(nx.Graph())
    with pytest.raises(GraphError, match="has no node 'nope'"):
        diamond().index("nope")
