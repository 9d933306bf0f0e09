"""Hypothesis strategies shared by the test suite: random DAGs, placements, clusters."""

from __future__ import annotations

import networkx as nx
from hypothesis import strategies as st

from placerl.graph import CompGraph


@st.composite
def dags(draw, min_nodes: int = 1, max_nodes: int = 12, with_kinds: bool = False) -> CompGraph:
    """Random DAGs: edges only go from a lower to a higher position of a hidden random order,
    and nodes are inserted in a shuffled order so index order is not always topological."""
    n = draw(st.integers(min_nodes, max_nodes))
    rank = draw(st.permutations(range(n)))
    pairs = [(u, v) for u in range(n) for v in range(n) if rank[u] < rank[v]]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=3 * n)) if pairs else []
    names = draw(
        st.lists(st.text("abcdefgh", min_size=1, max_size=4), min_size=n, max_size=n, unique=True)
    )
    size = st.floats(0, 1e6, allow_nan=False, allow_infinity=False)
    g = nx.DiGraph()
    for u in range(n):
        attrs = {"cost": draw(st.floats(0, 1e-2)), "out_bytes": draw(size), "mem_bytes": draw(size)}
        if with_kinds:
            attrs["costs"] = {"cpu": draw(st.floats(0, 1e-1))}
        g.add_node(names[u], **attrs)
    g.add_edges_from((names[u], names[v]) for u, v in chosen)
    return CompGraph.from_networkx(g, name="hypothesis")
