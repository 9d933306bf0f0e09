"""Graph traversal orders: the sequence in which an RL placer visits the nodes.

Wang et al. (2022) showed that this order changes the placements an RL agent finds. Every
order is a function ``(graph, rng) -> permutation of node indices`` kept in the :data:`ORDERS`
registry; :func:`traversal_order` looks one up by name and checks its output.

Node indices follow the graph source's own order (definition order for imported models, file
order for msr files, insertion order for networkx). ``topo`` breaks ties by index and
``lexico_topo`` by name, so the two differ exactly as in the traversal-order study. Walks
(``bfs``, ``dfs_*``) start from the sources sorted by name and visit successors in index order.
Nothing depends on hash seeds or set iteration: the same graph, name and seed always give the
same order, and the name-ordered orders (``lexico_topo``, ``alpha``) do not depend on insertion
order at all.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from placerl._options import check_int
from placerl._registry import Registry
from placerl.errors import ConfigError
from placerl.graph.core import CompGraph

OrderFn = Callable[[CompGraph, np.random.Generator], np.ndarray]

#: Values of :attr:`Order.respects`.
RESPECTS_EDGES = "edges"  # every producer comes before its consumers
RESPECTS_REVERSED = "reversed"  # every consumer comes before its producers


@dataclass(frozen=True)
class Order:
    """A registered traversal order.

    Attributes:
        name: Registry name.
        fn: ``(graph, rng) -> np.ndarray`` permutation of node indices.
        respects: ``"edges"`` if the order is topological, ``"reversed"`` if it is reverse
            topological, ``None`` if it ignores dependencies.
        doc: One line that names the order in messages and listings.
    """

    name: str
    fn: OrderFn
    respects: str | None
    doc: str


#: Traversal orders by name (``order.name``; :func:`register_order` adds one).
ORDERS: Registry[Order] = Registry("traversal order")


def register_order(
    name: str, *, respects: str | None = None, overwrite: bool = False
) -> Callable[[OrderFn], OrderFn]:
    """Register a traversal order under ``name``.

    Example:
        >>> @register_order("by_cost", overwrite=True)
        ... def by_cost(graph, rng):
        ...     return np.argsort(-graph.arrays.cost, kind="stable")

    Args:
        name: Name to use in :func:`traversal_order`, env configs and sweeps.
        respects: ``"edges"``, ``"reversed"`` or ``None`` (see :class:`Order`).
        overwrite: Replace an existing order of the same name.
    """
    if respects not in (None, RESPECTS_EDGES, RESPECTS_REVERSED):
        raise ConfigError(f"respects must be None, 'edges' or 'reversed', got {respects!r}")

    def wrap(fn: OrderFn) -> OrderFn:
        doc = (fn.__doc__ or name).strip().splitlines()[0]
        ORDERS.register(name, Order(name, fn, respects, doc), overwrite=overwrite)
        return fn

    return wrap


def traversal_order(graph: CompGraph, name: str | OrderFn, seed: int | None = None) -> np.ndarray:
    """The permutation of node indices that order ``name`` gives on ``graph``.

    Args:
        graph: The graph to traverse.
        name: A registered order name, or a callable ``(graph, rng) -> indices``.
        seed: Seed of the random orders (an integer >= 0); ``None`` means 0, so results are
            always reproducible.

    Returns:
        A fresh ``int64`` array holding every node index exactly once.

    Raises:
        ConfigError: If the name is unknown (the message lists the known ones), the seed is
            not an integer >= 0, the graph is not a CompGraph, or the order does not return a
            permutation.
    """
    if not isinstance(graph, CompGraph):
        raise ConfigError(f"traversal_order needs a CompGraph, got {type(graph).__name__}")
    fn = resolve_order(name)
    rng = np.random.default_rng(0 if seed is None else check_int(seed, "order seed"))
    order = np.asarray(fn(graph, rng), dtype=np.int64)
    n = graph.num_nodes
    if order.shape != (n,) or not np.array_equal(np.sort(order), np.arange(n)):
        label = name if isinstance(name, str) else getattr(name, "__name__", repr(name))
        raise ConfigError(
            f"traversal order {label!r} must return a permutation of the {n} node indices"
        )
    return order.copy()


def resolve_order(name: str | OrderFn) -> OrderFn:
    """The order function of a registered name, or ``name`` itself when it is callable.

    Raises:
        ConfigError: Neither a registered name (the message lists them) nor a callable.
    """
    if callable(name):
        return name
    if not isinstance(name, str):
        raise ConfigError(
            f"a traversal order is a registered name or a callable, got {name!r}; "
            f"known: {', '.join(ORDERS)}"
        )
    return ORDERS[name].fn


# ------------------------------------------------------------------------------- helpers
def _kahn(graph: CompGraph, key: Callable[[int], object]) -> np.ndarray:
    """Kahn's algorithm taking the ready node with the smallest ``key`` first."""
    a = graph.arrays
    indegree = a.in_degree.copy()
    ready = [(key(v), v) for v in range(a.num_nodes) if indegree[v] == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        _, v = heapq.heappop(ready)
        out.append(v)
        for w in a.succ[a.succ_ptr[v] : a.succ_ptr[v + 1]]:
            indegree[w] -= 1
            if indegree[w] == 0:
                heapq.heappush(ready, (key(int(w)), int(w)))
    return np.array(out, dtype=np.int64)


def _sources_by_name(graph: CompGraph) -> list[int]:
    names = graph.names
    sources = np.flatnonzero(graph.arrays.in_degree == 0)
    return sorted((int(v) for v in sources), key=lambda v: names[v])


def _dfs(graph: CompGraph) -> tuple[list[int], list[int]]:
    """Pre- and post-order of a depth-first walk from each source (sorted by name)."""
    a = graph.arrays
    seen = np.zeros(a.num_nodes, dtype=bool)
    pre: list[int] = []
    post: list[int] = []
    for root in _sources_by_name(graph):
        if seen[root]:
            continue
        seen[root] = True
        pre.append(root)
        stack = [(root, int(a.succ_ptr[root]))]  # (node, next successor slot to try)
        while stack:
            v, slot = stack[-1]
            end = a.succ_ptr[v + 1]
            while slot < end and seen[a.succ[slot]]:
                slot += 1
            if slot == end:
                stack.pop()
                post.append(v)
                continue
            stack[-1] = (v, slot + 1)
            w = int(a.succ[slot])
            seen[w] = True
            pre.append(w)
            stack.append((w, int(a.succ_ptr[w])))
    return pre, post


# ------------------------------------------------------------------------ the orders
@register_order("topo", respects=RESPECTS_EDGES)
def topo(graph: CompGraph, rng: np.random.Generator) -> np.ndarray:
    """Kahn's topological order, ties broken by node index."""
    return _kahn(graph, key=lambda v: v)


@register_order("critical_path", respects=RESPECTS_EDGES)
def critical_path(graph: CompGraph, rng: np.random.Generator) -> np.ndarray:
    """Topological, the ready node with the longest path of compute to a sink first."""
    level = bottom_level(graph)
    return _kahn(graph, key=lambda v: (-level[v], v))


def bottom_level(graph: CompGraph) -> np.ndarray:
    """Each node's longest path of ``cost`` to a sink, its own included: the priority of
    critical-path list scheduling (HEFT's upward rank without transfers, on the reference
    device), so that a node always outranks its consumers (a tie keeps them topological)."""
    a = graph.arrays
    level = a.cost.astype(np.float64).copy()
    for v in topo(graph, np.random.default_rng(0))[::-1]:
        successors = a.succ[a.succ_ptr[v] : a.succ_ptr[v + 1]]
        if successors.size:
            level[v] += level[successors].max()
    return level


@register_order("reverse_topo", respects=RESPECTS_REVERSED)
def reverse_topo(graph: CompGraph, rng: np.random.Generator) -> np.ndarray:
    """``topo`` reversed: consumers before producers."""
    return topo(graph, rng)[::-1]


@register_order("lexico_topo", respects=RESPECTS_EDGES)
def lexico_topo(graph: CompGraph, rng: np.random.Generator) -> np.ndarray:
    """Kahn's topological order, ties broken by node name (lexicographically smallest)."""
    names = graph.names
    return _kahn(graph, key=lambda v: names[v])


@register_order("bfs")
def bfs(graph: CompGraph, rng: np.random.Generator) -> np.ndarray:
    """Breadth-first walks along out-edges from each source (sorted by name), concatenated."""
    # One shared visited set gives the same sequence as concatenating independent walks and
    # keeping first occurrences (a node first reached from a later source is reachable only
    # through unvisited nodes), in O(V + E) instead of O(sources * (V + E)).
    a = graph.arrays
    seen = np.zeros(a.num_nodes, dtype=bool)
    out: list[int] = []
    for root in _sources_by_name(graph):
        if seen[root]:
            continue
        seen[root] = True
        queue = deque([root])
        while queue:
            v = queue.popleft()
            out.append(v)
            for w in a.succ[a.succ_ptr[v] : a.succ_ptr[v + 1]]:
                if not seen[w]:
                    seen[w] = True
                    queue.append(int(w))
    return np.array(out, dtype=np.int64)


@register_order("dfs_preorder")
def dfs_preorder(graph: CompGraph, rng: np.random.Generator) -> np.ndarray:
    """Depth-first walks from each source (sorted by name); a node when first reached."""
    return np.array(_dfs(graph)[0], dtype=np.int64)


@register_order("dfs_postorder", respects=RESPECTS_REVERSED)
def dfs_postorder(graph: CompGraph, rng: np.random.Generator) -> np.ndarray:
    """Depth-first walks from each source; a node once all its descendants are done."""
    return np.array(_dfs(graph)[1], dtype=np.int64)


@register_order("reverse_postorder", respects=RESPECTS_EDGES)
def reverse_postorder(graph: CompGraph, rng: np.random.Generator) -> np.ndarray:
    """``dfs_postorder`` reversed: a depth-first topological order."""
    return np.array(_dfs(graph)[1][::-1], dtype=np.int64)


@register_order("alpha")
def alpha(graph: CompGraph, rng: np.random.Generator) -> np.ndarray:
    """Nodes sorted by name."""
    names = graph.names
    return np.array(sorted(range(graph.num_nodes), key=lambda v: names[v]), dtype=np.int64)


@register_order("random")
def random(graph: CompGraph, rng: np.random.Generator) -> np.ndarray:
    """A seeded uniformly random permutation (ignores dependencies)."""
    return rng.permutation(graph.num_nodes)


@register_order("random_topo", respects=RESPECTS_EDGES)
def random_topo(graph: CompGraph, rng: np.random.Generator) -> np.ndarray:
    """A seeded random topological order: Kahn's algorithm picking uniformly among ready nodes."""
    a = graph.arrays
    indegree = a.in_degree.copy()
    ready = [int(v) for v in np.flatnonzero(indegree == 0)]
    out = []
    while ready:
        pick = int(rng.integers(len(ready)))
        ready[pick], ready[-1] = ready[-1], ready[pick]
        v = ready.pop()
        out.append(v)
        for w in a.succ[a.succ_ptr[v] : a.succ_ptr[v + 1]]:
            indegree[w] -= 1
            if indegree[w] == 0:
                ready.append(int(w))
    return np.array(out, dtype=np.int64)
