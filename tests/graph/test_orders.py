from collections import deque

import networkx as nx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from placerl.errors import ConfigError
from placerl.graph import CompGraph
from placerl.graph.orders import ORDERS, bottom_level, register_order, traversal_order
from tests.strategies import dags

ALL_ORDERS = sorted(ORDERS)


def positions(order: np.ndarray) -> np.ndarray:
    pos = np.empty_like(order)
    pos[order] = np.arange(len(order))
    return pos


def example() -> CompGraph:
    # Index order differs from name order, so topo and lexico_topo disagree.
    nodes = [{"name": x, "cost": 1.0} for x in ["src", "z_heavy", "a_light", "mid", "sink"]]
    edges = [
        ("src", "z_heavy"),
        ("src", "a_light"),
        ("z_heavy", "mid"),
        ("a_light", "sink"),
        ("mid", "sink"),
    ]
    return CompGraph(nodes, edges)


def named(g: CompGraph, order: str) -> list[str]:
    return [g.names[v] for v in traversal_order(g, order)]


def test_required_orders_are_registered():
    required = {
        "topo",
        "reverse_topo",
        "lexico_topo",
        "bfs",
        "dfs_preorder",
        "dfs_postorder",
        "reverse_postorder",
        "alpha",
        "random",
        "random_topo",
        "critical_path",
    }
    assert required <= set(ORDERS)


def test_critical_path_takes_the_longest_path_to_a_sink_first():
    nodes = [{"name": x, "cost": 1.0} for x in ["src", "short", "long1", "long2", "sink"]]
    nodes[1]["cost"] = 2.5  # the short branch's one op outweighs the long branch's two
    edges = [
        ("src", "short"),
        ("short", "sink"),
        ("src", "long1"),
        ("long1", "long2"),
        ("long2", "sink"),
    ]
    g = CompGraph(nodes, edges)
    assert bottom_level(g).tolist() == [4.5, 3.5, 3.0, 2.0, 1.0]
    assert named(g, "critical_path") == ["src", "short", "long1", "long2", "sink"]
    nodes[1]["cost"] = 1.0
    assert named(CompGraph(nodes, edges), "critical_path") == [
        "src",
        "long1",
        "short",
        "long2",
        "sink",
    ]  # a tie goes to the lower index


def test_hand_computed_orders():
    g = example()
    assert named(g, "topo") == ["src", "z_heavy", "a_light", "mid", "sink"]
    assert named(g, "lexico_topo") == ["src", "a_light", "z_heavy", "mid", "sink"]
    assert named(g, "reverse_topo") == ["sink", "mid", "a_light", "z_heavy", "src"]
    assert named(g, "bfs") == ["src", "z_heavy", "a_light", "mid", "sink"]
    assert named(g, "dfs_preorder") == ["src", "z_heavy", "mid", "sink", "a_light"]
    assert named(g, "dfs_postorder") == ["sink", "mid", "z_heavy", "a_light", "src"]
    assert named(g, "reverse_postorder") == ["src", "a_light", "z_heavy", "mid", "sink"]
    assert named(g, "alpha") == ["a_light", "mid", "sink", "src", "z_heavy"]


def test_bfs_starts_from_sources_sorted_by_name():
    nodes = [{"name": x, "cost": 1.0} for x in ["s_b", "s_a", "x", "y"]]
    g = CompGraph(nodes, [("s_b", "x"), ("s_a", "y"), ("s_b", "y")])
    assert named(g, "bfs") == ["s_a", "y", "s_b", "x"]
    assert named(g, "dfs_preorder") == ["s_a", "y", "s_b", "x"]


@pytest.mark.parametrize("name", ALL_ORDERS)
@given(g=dags(), seed=st.integers(0, 2**32 - 1))
def test_every_order_is_a_deterministic_permutation(name, g, seed):
    order = traversal_order(g, name, seed=seed)
    assert order.dtype == np.int64
    assert sorted(order.tolist()) == list(range(g.num_nodes))
    np.testing.assert_array_equal(order, traversal_order(g, name, seed=seed))


@pytest.mark.parametrize("name", [n for n in ALL_ORDERS if ORDERS[n].respects])
@given(g=dags(), seed=st.integers(0, 1000))
def test_dependency_orders_respect_edges(name, g, seed):
    pos = positions(traversal_order(g, name, seed=seed))
    a = g.arrays
    if ORDERS[name].respects == "edges":
        assert np.all(pos[a.src] < pos[a.dst])
    else:
        assert np.all(pos[a.src] > pos[a.dst])


@given(dags(min_nodes=2))
def test_reverse_orders_reverse_their_forward_order(g):
    np.testing.assert_array_equal(
        traversal_order(g, "reverse_topo"), traversal_order(g, "topo")[::-1]
    )
    np.testing.assert_array_equal(
        traversal_order(g, "reverse_postorder"), traversal_order(g, "dfs_postorder")[::-1]
    )


@given(dags())
def test_topo_is_kahn_with_smallest_index_first(g):
    nxg = nx.DiGraph()
    nxg.add_nodes_from(range(g.num_nodes))
    nxg.add_edges_from(zip(g.arrays.src.tolist(), g.arrays.dst.tolist(), strict=True))
    expected = list(nx.lexicographical_topological_sort(nxg))
    assert traversal_order(g, "topo").tolist() == expected
    by_name = list(nx.lexicographical_topological_sort(nxg, key=lambda v: g.names[v]))
    assert traversal_order(g, "lexico_topo").tolist() == by_name


@given(dags())
def test_bfs_matches_its_literal_definition(g):
    """Concatenate a full breadth-first walk per source (sorted by name), keep first occurrences."""
    a = g.arrays
    walks = []
    for root in sorted(np.flatnonzero(a.in_degree == 0), key=lambda v: g.names[v]):
        seen, queue = {root}, deque([root])
        while queue:
            v = queue.popleft()
            walks.append(int(v))
            for w in g.successors(v):
                if w not in seen:
                    seen.add(w)
                    queue.append(w)
    assert traversal_order(g, "bfs").tolist() == list(dict.fromkeys(walks))


@pytest.mark.parametrize("name", ["lexico_topo", "alpha"])
@given(g=dags(), data=st.data())
def test_name_orders_ignore_insertion_order(name, g, data):
    nxg = g.to_networkx()
    shuffled = nx.DiGraph()
    shuffled.add_nodes_from(data.draw(st.permutations(list(nxg.nodes(data=True)))))
    shuffled.add_edges_from(nxg.edges(data=True))
    other = CompGraph.from_networkx(shuffled)
    assert named(g, name) == named(other, name)


def test_random_orders_depend_on_seed_only():
    g = CompGraph([{"name": f"n{i}", "cost": 1.0} for i in range(30)])
    for name in ("random", "random_topo"):
        assert not np.array_equal(
            traversal_order(g, name, seed=1), traversal_order(g, name, seed=2)
        )
        np.testing.assert_array_equal(traversal_order(g, name), traversal_order(g, name, seed=0))


def test_traversal_order_returns_fresh_arrays():
    g = example()
    first = traversal_order(g, "topo")
    first[0] = 99
    assert traversal_order(g, "topo")[0] == 0


def test_unknown_order_lists_known_ones():
    with pytest.raises(ConfigError, match=r"unknown traversal order 'zigzag'; known: alpha, bfs"):
        traversal_order(example(), "zigzag")


def test_register_custom_order_and_callables():
    with ORDERS.scope():

        @register_order("test_by_cost_desc")
        def by_cost_desc(graph, rng):
            """Most expensive node first."""
            return np.argsort(-graph.arrays.cost, kind="stable")

        g = CompGraph([{"name": "a", "cost": 1.0}, {"name": "b", "cost": 3.0}])
        assert traversal_order(g, "test_by_cost_desc").tolist() == [1, 0]
        assert ORDERS["test_by_cost_desc"].doc == "Most expensive node first."
        assert traversal_order(g, lambda graph, rng: [1, 0]).tolist() == [1, 0]
    assert "test_by_cost_desc" not in ORDERS


def test_bad_custom_orders_are_rejected():
    g = example()
    with pytest.raises(ConfigError, match="'bad' must return a permutation of the 5 node indices"):
        traversal_order(g, _named(lambda graph, rng: [0, 0, 1, 2, 3], "bad"))
    with pytest.raises(ConfigError, match="already registered"):
        register_order("topo")(lambda graph, rng: [])
    with pytest.raises(ConfigError, match="respects must be None, 'edges' or 'reversed'"):
        register_order("x", respects="sideways")


def _named(fn, name):
    fn.__name__ = name
    return fn
