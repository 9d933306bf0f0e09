"""Graph passes: the training graph (:func:`with_backward`), coarsening (:func:`coarsen`) and
folding of repeated blocks (:func:`fold_repeats`, in :mod:`placerl.graph.folding`).

:func:`with_backward` adds the backward pass the placement literature places together with the
forward one (Placeto, Tarnawski et al.): one backward node per forward node, colocated with it.

:func:`coarsen` merges nodes until at most ``max_nodes`` remain, so that graphs of thousands of
ops become placeable. A method from :data:`COARSENINGS` proposes which nodes to merge; merging
keeps totals (costs add up, the bytes of cut edges are kept) and keeps the graph acyclic. The
returned :class:`Coarsening` maps every original node to its coarse node, so a coarse placement
expands to every original op (:meth:`Coarsening.expand`).
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from placerl._registry import Registry
from placerl.errors import ConfigError, GraphError, PlacementError
from placerl.graph.core import CompGraph, Node, check_graph
from placerl.graph.folding import Folding, fold_repeats

__all__ = [
    "BACKWARD_FACTOR",
    "COARSENINGS",
    "GRAD_SUFFIX",
    "Coarsening",
    "Folding",
    "coarsen",
    "contract",
    "fold_repeats",
    "register_coarsening",
    "with_backward",
]

#: Backward time / forward time when no profiled backward time is known: the usual estimate
#: (gradients with respect to the inputs and to the weights each cost about one forward).
BACKWARD_FACTOR = 2.0
#: Suffix of a backward node's name (``layer1.0.conv1/conv2d/grad``).
GRAD_SUFFIX = "/grad"


# ------------------------------------------------------------------------- with_backward
def with_backward(graph: CompGraph, *, factor: float = BACKWARD_FACTOR) -> CompGraph:
    """The training graph: ``graph`` plus one backward node per forward node.

    Each backward node ``v/grad`` costs ``factor`` times its forward node on every device kind,
    except where profiling measured it (``attrs["backward_costs"][kind]``, written by
    :func:`placerl.graph.profile.profile`). It shares a colocation group with its forward
    node (the forward node's own group, or a new one named after it). Edges:

    * every forward edge ``u -> v`` is mirrored as ``v/grad -> u/grad``, carrying the gradient
      of ``u``'s output (the same bytes as the forward edge);
    * ``v -> v/grad`` carries ``v``'s output, the activation its backward needs (free, since
      the two are colocated).

    Backward nodes keep no memory of their own: weights, gradients, optimizer state and saved
    activations are the forward node's ``mem_bytes`` (see ``from_module(training=True)``).
    Forward nodes come first in their order, then backward nodes in reverse order.

    Args:
        graph: A forward graph (no backward nodes).
        factor: Backward / forward time where no profiled time is known.

    Raises:
        GraphError: ``graph`` already has backward nodes.
        ConfigError: ``graph`` is not a CompGraph, or ``factor`` is not a finite number >= 0.
    """
    check_graph(graph, "with_backward")
    already = [n.name for n in graph.nodes if n.backward]
    if already:
        raise GraphError(
            f"graph {graph.name!r} already has backward nodes ({already[0]!r}, ...); "
            "with_backward takes a forward graph"
        )
    if isinstance(factor, (bool, np.bool_)) or not (
        isinstance(factor, (int, float, np.integer, np.floating))
        and math.isfinite(factor)
        and factor >= 0
    ):
        raise ConfigError(f"backward factor must be a finite number >= 0, got {factor!r}")
    factor = float(factor)  # a numpy scalar would set the precision of every cost
    names = set(graph.names)
    groups = {n.group for n in graph.nodes if n.group is not None}
    forward, backward, grad_of = [], [], {}
    for node in graph.nodes:
        group = node.group if node.group is not None else _unique(node.name, groups)
        forward.append({**node.to_dict(), "group": group})
        grad_of[node.name] = _unique(node.name + GRAD_SUFFIX, names)
        backward.append(_backward_node(graph, node, grad_of[node.name], group, factor))
    edges = [edge.to_dict() for edge in graph.edges]
    edges += [{"src": n.name, "dst": grad_of[n.name], "bytes": n.out_bytes} for n in graph.nodes]
    edges += [{"src": grad_of[e.dst], "dst": grad_of[e.src], "bytes": e.bytes} for e in graph.edges]
    meta = {**graph.meta, "backward": True, "backward_factor": factor}
    return CompGraph(forward + backward[::-1], edges, name=f"{graph.name}_training", meta=meta)


def _backward_node(
    graph: CompGraph, node: Node, name: str, group: str, factor: float
) -> dict[str, Any]:
    measured = node.attrs.get("backward_costs") or {}
    costs = {kind: measured.get(kind, factor * t) for kind, t in node.costs.items()}
    costs.update({kind: t for kind, t in measured.items() if kind not in costs})
    in_bytes = graph.arrays.edge_bytes[graph.arrays.pred_edge[_pred_slice(graph, node)]]
    attrs: dict[str, Any] = {"forward": node.name}
    for key in ("module", "flops"):
        if key in node.attrs:
            attrs[key] = node.attrs[key] * (BACKWARD_FACTOR if key == "flops" else 1)
    return {
        "name": name,
        "op": f"{node.op}_grad",
        "cost": factor * node.cost,
        "costs": costs,
        "out_bytes": float(in_bytes.sum()),  # the gradients of its inputs
        "mem_bytes": 0.0,
        "group": group,
        "backward": True,
        "attrs": attrs,
    }


def _pred_slice(graph: CompGraph, node: Node) -> slice:
    v = graph.index(node.name)
    return slice(graph.arrays.pred_ptr[v], graph.arrays.pred_ptr[v + 1])


def _unique(base: str, taken: set[str]) -> str:
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


# ------------------------------------------------------------------------------ coarsen
@dataclass(frozen=True, eq=False)
class Coarsening:
    """A coarse graph and where each original node went.

    Attributes:
        graph: The coarse graph. Multi-node coarse nodes list their original nodes' names in
            ``attrs["members"]``.
        assignment: Read-only ``int64`` array: the coarse node index of each original node.
    """

    graph: CompGraph
    assignment: np.ndarray

    @property
    def num_original(self) -> int:
        """Number of original nodes."""
        return int(self.assignment.shape[0])

    def members(self, coarse: int) -> np.ndarray:
        """Indices of the original nodes merged into coarse node ``coarse``."""
        return np.flatnonzero(self.assignment == coarse)

    def expand(self, placement: Sequence[int] | np.ndarray) -> np.ndarray:
        """A placement of the coarse graph as a placement of every original node.

        Raises:
            PlacementError: ``placement`` does not have one entry per coarse node, or holds
                something other than integer device indices.
        """
        arr = np.asarray(placement)
        if arr.ndim != 1 or arr.shape[0] != self.graph.num_nodes:
            raise PlacementError(
                f"placement has shape {arr.shape}; expected ({self.graph.num_nodes},): "
                f"one device per node of the coarse graph {self.graph.name!r}"
            )
        if not np.issubdtype(arr.dtype, np.integer):
            raise PlacementError(
                f"placement must hold integer device indices, got dtype {arr.dtype}: "
                f"{arr[:8].tolist()}"
            )
        return arr[self.assignment]

    def then(self, other: Coarsening) -> Coarsening:
        """This coarsening followed by ``other`` (which coarsens ``self.graph``).

        Raises:
            ConfigError: ``other`` is not a Coarsening.
            GraphError: ``other`` does not coarsen a graph of ``self.graph``'s size.
        """
        if not isinstance(other, Coarsening):
            raise ConfigError(f"then needs a Coarsening, got {type(other).__name__}")
        if other.num_original != self.graph.num_nodes:
            raise GraphError(
                f"cannot chain coarsenings: the second maps {other.num_original} nodes, but "
                f"{self.graph.name!r} has {self.graph.num_nodes}"
            )
        return Coarsening(other.graph, _readonly(other.assignment[self.assignment]))

    @classmethod
    def identity(cls, graph: CompGraph) -> Coarsening:
        """The coarsening that merges nothing."""
        check_graph(graph, "Coarsening.identity")
        return cls(graph, _readonly(np.arange(graph.num_nodes)))

    @classmethod
    def between(cls, original: CompGraph, coarse: CompGraph) -> Coarsening:
        """Rebuild the map from ``attrs["members"]`` (e.g. for a coarse graph loaded from disk).

        Raises:
            ConfigError: ``original`` or ``coarse`` is not a CompGraph.
            GraphError: Some original node is in no coarse node, or in several, or a node's
                ``members`` is not a list of names.
        """
        check_graph(original, "Coarsening.between (original)")
        check_graph(coarse, "Coarsening.between (coarse)")
        assignment = np.full(original.num_nodes, -1, dtype=np.int64)
        for c, node in enumerate(coarse.nodes):
            for name in _members(node):
                v = original.index(name)
                if assignment[v] >= 0:
                    raise GraphError(f"node {name!r} is a member of two coarse nodes")
                assignment[v] = c
        missing = np.flatnonzero(assignment < 0)
        if missing.size:
            raise GraphError(
                f"node {original.names[missing[0]]!r} of {original.name!r} is in no coarse "
                f"node of {coarse.name!r}"
            )
        return cls(coarse, _readonly(assignment))


def _members(node: Node) -> list[str]:
    """The original names of a coarse node (its own name if it merged nothing)."""
    members = node.attrs.get("members", [node.name])
    if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
        raise GraphError(
            f"coarse node {node.name!r} attrs['members'] must be a list of node names, "
            f"got {members!r:.60}"
        )
    return members


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    arr.flags.writeable = False
    return arr


#: ``fn(graph, max_nodes) -> one label per node``: nodes with equal labels should merge.
CoarseningFn = Callable[[CompGraph, int], Sequence[Hashable]]
#: Coarsening methods by name (:func:`coarsen`'s ``method``).
COARSENINGS: Registry[CoarseningFn] = Registry("coarsening method")


def register_coarsening(
    name: str, *, overwrite: bool = False
) -> Callable[[CoarseningFn], CoarseningFn]:
    """Register ``fn(graph, max_nodes) -> labels`` as coarsening method ``name``."""
    return COARSENINGS.decorator(name, overwrite=overwrite)


def coarsen(graph: CompGraph, max_nodes: int, method: str = "scope") -> Coarsening:
    """Merge nodes of ``graph`` until at most ``max_nodes`` remain.

    The method proposes merges (see :data:`COARSENINGS`: ``scope``, ``chains``, ``groups``,
    ``topo``); :func:`contract` applies them. If the graph is still larger than ``max_nodes``,
    consecutive runs of a topological order are merged (the ``topo`` method) to reach it.

    Args:
        graph: The graph to coarsen.
        max_nodes: Largest number of nodes of the result (a graph that small is kept as is).
        method: A :data:`COARSENINGS` name.

    Raises:
        ConfigError: ``graph`` is not a CompGraph, ``max_nodes`` is not a positive integer, or
            the method is unknown (the message lists the known ones).
    """
    check_graph(graph, "coarsen")
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, (int, np.integer)) or max_nodes < 1:
        raise ConfigError(f"max_nodes must be a positive integer, got {max_nodes!r}")
    propose = COARSENINGS[method]
    if graph.num_nodes <= max_nodes:
        return Coarsening.identity(graph)
    result = contract(graph, propose(graph, int(max_nodes)))
    if result.graph.num_nodes > max_nodes:
        result = result.then(contract(result.graph, topo_runs(result.graph, int(max_nodes))))
        result = contract(graph, result.assignment.tolist())  # names and members from graph
    meta = {**graph.meta, "coarsened": {"method": method, "original_nodes": graph.num_nodes}}
    coarse = CompGraph(result.graph.nodes, result.graph.edges, name=graph.name, meta=meta)
    return Coarsening(coarse, result.assignment)


def contract(graph: CompGraph, labels: Sequence[Hashable]) -> Coarsening:
    """Merge the nodes that share a label, keeping the graph acyclic.

    A set of equal labels whose merge would close a cycle (some path leaves the set and comes
    back) is split into the runs it forms in a topological order that keeps equal labels
    together where it can. Coarse nodes are ordered by their first original node.

    Totals are kept: ``cost``, each ``costs[kind]`` (kept where every member has one),
    ``mem_bytes`` and ``attrs["flops"]`` add up. A coarse node's ``out_bytes`` is the output of
    the members read outside it (or by nobody); an edge between two coarse nodes carries, for
    each producer, the largest of its edges into the consumer (a tensor crosses once). Merging
    nodes of two colocation groups merges the groups.

    Raises:
        ConfigError: ``graph`` is not a CompGraph.
        GraphError: ``labels`` is not a sequence of one hashable label per node.
    """
    check_graph(graph, "contract")
    if isinstance(labels, (str, bytes)) or not isinstance(labels, (Sequence, np.ndarray)):
        raise GraphError(f"labels must be a sequence of one label per node, got {labels!r:.60}")
    if len(labels) != graph.num_nodes:
        raise GraphError(
            f"got {len(labels)} labels for the {graph.num_nodes} nodes of {graph.name!r}"
        )
    unhashable = [x for x in labels if not isinstance(x, Hashable)]
    if unhashable:
        raise GraphError(f"labels must be hashable, got {unhashable[0]!r:.60}")
    blocks = _acyclic_blocks(graph, _dense(labels))
    return Coarsening(_merged_graph(graph, blocks), _readonly(blocks))


def _dense(labels: Sequence[Hashable]) -> np.ndarray:
    """Labels as block ids 0, 1, ... in order of first appearance."""
    ids: dict[Hashable, int] = {}
    return np.array([ids.setdefault(label, len(ids)) for label in labels], dtype=np.int64)


def _acyclic_blocks(graph: CompGraph, blocks: np.ndarray) -> np.ndarray:
    """Split the blocks that lie on a cycle of the quotient graph into topological runs."""
    a = graph.arrays
    quotient = nx.DiGraph()
    quotient.add_nodes_from(range(int(blocks.max()) + 1))
    quotient.add_edges_from(zip(blocks[a.src].tolist(), blocks[a.dst].tolist(), strict=True))
    quotient.remove_edges_from(nx.selfloop_edges(quotient))
    bad = {b for scc in nx.strongly_connected_components(quotient) if len(scc) > 1 for b in scc}
    if not bad:
        return _renumber(blocks)
    runs = blocks.copy()
    previous = -1
    fresh = int(blocks.max()) + 1
    for v in _label_preferring_topo_order(graph, blocks):
        if blocks[v] in bad and (previous < 0 or blocks[previous] != blocks[v]):
            fresh += 1  # a new run of this block starts here
        if blocks[v] in bad:
            runs[v] = fresh
        previous = v
    return _renumber(runs)


def _renumber(blocks: np.ndarray) -> np.ndarray:
    """Block ids 0, 1, ... ordered by each block's first node."""
    return _dense(blocks.tolist())


def _label_preferring_topo_order(graph: CompGraph, labels: np.ndarray) -> list[int]:
    """Kahn's topological order that continues the current label whenever it can."""
    a = graph.arrays
    in_degree = a.in_degree.copy()
    anywhere: list[int] = []
    by_label: dict[int, list[int]] = defaultdict(list)
    for v in np.flatnonzero(in_degree == 0).tolist():
        heapq.heappush(anywhere, v)
        heapq.heappush(by_label[labels[v]], v)
    done = np.zeros(a.num_nodes, dtype=bool)
    order: list[int] = []
    current = -1
    while len(order) < a.num_nodes:
        v = _pop_ready(by_label.get(current, []), done)
        if v is None:
            v = _pop_ready(anywhere, done)
        done[v] = True
        order.append(v)
        current = int(labels[v])
        for w in graph.successors(v).tolist():
            in_degree[w] -= 1
            if in_degree[w] == 0:
                heapq.heappush(anywhere, w)
                heapq.heappush(by_label[labels[w]], w)
    return order


def _pop_ready(heap: list[int], done: np.ndarray) -> int | None:
    while heap:
        v = heapq.heappop(heap)
        if not done[v]:
            return v
    return None


# ---------------------------------------------------------------------- merged graph
def _merged_graph(graph: CompGraph, blocks: np.ndarray) -> CompGraph:
    members: list[list[int]] = [[] for _ in range(int(blocks.max()) + 1)]
    for v, b in enumerate(blocks.tolist()):
        members[b].append(v)
    group_of = _merged_groups(graph, members)
    taken: set[str] = set()
    names = [_block_name(graph, m, taken) for m in members]
    nodes = [
        _merged_node(graph, m, blocks, name, group_of.get(i))
        for i, (m, name) in enumerate(zip(members, names, strict=True))
    ]
    return CompGraph(nodes, _merged_edges(graph, blocks, names), name=graph.name, meta=graph.meta)


def _merged_node(
    graph: CompGraph, members: list[int], blocks: np.ndarray, name: str, group: str | None
) -> dict[str, Any]:
    nodes = [graph.nodes[v] for v in members]
    if len(nodes) == 1:
        return {**nodes[0].to_dict(), "name": name, "group": group}
    kinds = set.intersection(*(set(n.costs) for n in nodes))
    ops = {n.op for n in nodes}
    attrs: dict[str, Any] = {"members": [n.name for n in nodes]}
    for key in ("flops", "params"):
        if all(key in n.attrs for n in nodes):
            attrs[key] = sum(n.attrs[key] for n in nodes)
    scope = _common_scope([n.attrs.get("module", "") for n in nodes])
    if scope:
        attrs["module"] = scope
    backward_kinds = set.intersection(*(set(n.attrs.get("backward_costs") or {}) for n in nodes))
    if backward_kinds:
        attrs["backward_costs"] = {
            k: sum(n.attrs["backward_costs"][k] for n in nodes) for k in backward_kinds
        }
    return {
        "name": name,
        "op": ops.pop() if len(ops) == 1 else "fused",
        "cost": sum(n.cost for n in nodes),
        "costs": {kind: sum(n.costs[kind] for n in nodes) for kind in sorted(kinds)},
        "out_bytes": sum(graph.nodes[v].out_bytes for v in members if _exits(graph, v, blocks)),
        "mem_bytes": sum(n.mem_bytes for n in nodes),
        "group": group,
        "backward": all(n.backward for n in nodes),
        "attrs": attrs,
    }


def _exits(graph: CompGraph, v: int, blocks: np.ndarray) -> bool:
    """True if ``v``'s output is read outside its block, or by nobody (a graph output)."""
    succ = graph.successors(v)
    return succ.size == 0 or bool(np.any(blocks[succ] != blocks[v]))


def _merged_edges(graph: CompGraph, blocks: np.ndarray, names: list[str]) -> list[dict[str, Any]]:
    """One edge per pair of coarse nodes: per producer, its largest edge into the consumer."""
    a = graph.arrays
    widest: dict[tuple[int, int, int], tuple[float, float]] = {}
    for e in range(a.num_edges):
        u, v = int(a.src[e]), int(a.dst[e])
        bu, bv = int(blocks[u]), int(blocks[v])
        if bu == bv:
            continue
        nbytes, time = widest.get((bu, bv, u), (0.0, -math.inf))
        widest[(bu, bv, u)] = (max(nbytes, a.edge_bytes[e]), _max_or_nan(time, a.edge_time[e]))
    totals: dict[tuple[int, int], list[float]] = {}
    for (bu, bv, _), (nbytes, time) in widest.items():
        total = totals.setdefault((bu, bv), [0.0, 0.0])
        total[0] += nbytes
        total[1] += time  # NaN (no explicit time) stays NaN
    return [
        {"src": names[bu], "dst": names[bv], "bytes": nbytes}
        | ({} if math.isnan(time) else {"time": time})
        for (bu, bv), (nbytes, time) in totals.items()
    ]


def _max_or_nan(x: float, y: float) -> float:
    return math.nan if math.isnan(x) or math.isnan(y) else max(x, y)


def _merged_groups(graph: CompGraph, members: list[list[int]]) -> dict[int, str]:
    """Colocation group of each coarse node; groups that share a coarse node become one,
    named after whichever of them comes first in node order."""
    union = nx.utils.UnionFind()
    first_group: dict[int, str] = {}
    for i, m in enumerate(members):
        groups = [graph.nodes[v].group for v in m if graph.nodes[v].group is not None]
        if groups:
            union.union(*groups)
            first_group[i] = groups[0]
    label: dict[str, str] = {}
    for node in graph.nodes:
        if node.group is not None:
            label.setdefault(union[node.group], node.group)
    return {i: label[union[group]] for i, group in first_group.items()}


def _common_scope(scopes: list[str]) -> str:
    """The longest dotted module path that contains every scope (``layer1`` for
    ``layer1.0.conv1`` and ``layer1.1``)."""
    parts = [s.split(".") if s else [] for s in scopes]
    common = []
    for level in zip(*parts, strict=False):
        if len(set(level)) > 1:
            break
        common.append(level[0])
    return ".".join(common)


def _block_name(graph: CompGraph, members: list[int], taken: set[str]) -> str:
    nodes = [graph.nodes[v] for v in members]
    if len(nodes) == 1:
        base = nodes[0].name
    else:
        scope = _common_scope([n.attrs.get("module", "") for n in nodes])
        base = scope or f"{nodes[0].name}+{len(nodes) - 1}"
        if scope and all(n.backward for n in nodes):
            base += GRAD_SUFFIX
    return _unique(base, taken)


# ---------------------------------------------------------------------- methods
@register_coarsening("scope")
def scope_runs(graph: CompGraph, max_nodes: int) -> list[Hashable]:
    """Module scopes: start from the top-level modules (``attrs["module"]`` cut to its first
    component, every node under one merging), then split the most expensive scope into its
    children, again and again, while the graph still fits ``max_nodes``. Forward and backward
    nodes never share a scope; nodes without a module stay alone."""
    paths = [tuple(m.split(".")) if (m := n.attrs.get("module")) else () for n in graph.nodes]
    depth = np.ones(graph.num_nodes, dtype=np.int64)  # path components each label keeps

    def labels() -> list[Hashable]:
        return [
            (path[: depth[v]], graph.nodes[v].backward) if path else ("node", v)
            for v, path in enumerate(paths)
        ]

    def fits(candidate: list[Hashable]) -> bool:
        return int(_acyclic_blocks(graph, _dense(candidate)).max()) < max_nodes

    current = labels()
    if not fits(current):
        return current  # coarsen finishes with topological runs
    cost = graph.arrays.cost
    queue = [(-float(cost[v]), k, v) for k, v in enumerate(_firsts(current))]
    heapq.heapify(queue)
    tiebreak = len(queue)
    while queue:
        _, _, first = heapq.heappop(queue)
        block = [v for v, label in enumerate(current) if label == current[first]]
        deeper = [v for v in block if len(paths[v]) > depth[v]]
        if not deeper:
            continue
        depth[deeper] += 1
        candidate = labels()
        if not fits(candidate):
            depth[deeper] -= 1
            continue
        current = candidate
        children: dict[Hashable, float] = defaultdict(float)
        for v in block:
            children[current[v]] += float(cost[v])
        for v in block:
            if current[v] in children:
                heapq.heappush(queue, (-children.pop(current[v]), tiebreak, v))
                tiebreak += 1
    return current


def _firsts(labels: list[Hashable]) -> list[int]:
    """The first node of each label."""
    first: dict[Hashable, int] = {}
    for v, label in enumerate(labels):
        first.setdefault(label, v)
    return list(first.values())


@register_coarsening("chains")
def chain_links(graph: CompGraph, max_nodes: int) -> list[Hashable]:
    """Linear chains: an edge ``u -> v`` where ``u`` has one consumer and ``v`` one producer
    merges, cheapest pairs first, until ``max_nodes`` remain or no such edge is left."""
    a = graph.arrays
    links = [
        (float(a.cost[u] + a.cost[v]), int(u), int(v))
        for u, v in zip(a.src, a.dst, strict=True)
        if a.out_degree[u] == 1 and a.in_degree[v] == 1
    ]
    union = nx.utils.UnionFind(range(a.num_nodes))
    remaining = a.num_nodes
    for _, u, v in sorted(links):
        if remaining <= max_nodes:
            break
        union.union(u, v)
        remaining -= 1
    return [union[v] for v in range(a.num_nodes)]


@register_coarsening("groups")
def colocation_groups(graph: CompGraph, max_nodes: int) -> list[Hashable]:
    """Colocation groups: the nodes of a group merge (ungrouped nodes stay alone)."""
    return [
        ("group", n.group) if n.group is not None else ("node", i)
        for i, n in enumerate(graph.nodes)
    ]


@register_coarsening("topo")
def topo_runs(graph: CompGraph, max_nodes: int) -> list[Hashable]:
    """Consecutive runs of a topological order, at most ``max_nodes``, balanced by a weight
    that mixes cost share and node share (half each)."""
    from placerl.graph.orders import traversal_order

    order = traversal_order(graph, "topo")
    n = graph.num_nodes
    cost = graph.arrays.cost[order]
    total = float(cost.sum())
    weight = np.full(n, 1.0 / n) if total <= 0 else 0.5 * cost / total + 0.5 / n
    start = np.concatenate([[0.0], np.cumsum(weight)[:-1]])  # weight before each node
    run = np.minimum((start * max_nodes).astype(np.int64), max_nodes - 1)
    labels = np.empty(n, dtype=np.int64)
    labels[order] = run
    return labels.tolist()
