"""The computation-graph model: an immutable, validated DAG of ops with costs and sizes.

A :class:`CompGraph` is built once, validated at the boundary, and then only read. Nodes keep
the order they were given in (definition order for imported models, file order for msr files,
insertion order for networkx graphs); that order defines node indices, which placements, the
simulator and the traversal orders all use. :attr:`CompGraph.arrays` is a cached array view
(CSR adjacency, cost and byte arrays) for hot loops.

Units are seconds and bytes everywhere.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from placerl._io import atomic_write_text
from placerl.errors import ConfigError, GraphError

SCHEMA_FORMAT = "placerl.graph"
SCHEMA_VERSION = 1

_NODE_FIELDS = ("name", "op", "cost", "costs", "out_bytes", "mem_bytes", "group", "backward")
_EDGE_FIELDS = ("bytes", "time")


@dataclass(frozen=True)
class Node:
    """One op of a computation graph.

    Attributes:
        name: Unique name (for imported models the module path, e.g. ``layer3.2.conv1``).
        cost: Seconds on the reference device (speed factor 1).
        out_bytes: Bytes of the op's output, sent once to each consumer device.
        mem_bytes: Bytes the op keeps resident on its device (parameters, optimizer state,
            activations saved for backward).
        op: Op type, e.g. ``conv2d`` or ``matmul``.
        costs: Optional seconds per device kind (``{"gpu": 1e-4, "cpu": 2e-3}``) that override
            ``cost`` on devices of that kind; ``math.inf`` marks a kind the op cannot run on.
        group: Optional colocation group: nodes sharing a group must share a device.
        backward: True for nodes of the backward pass of a training graph.
        attrs: Extra, informational attributes (FLOPs, shapes, source ids); kept on round trips.
    """

    name: str
    cost: float
    out_bytes: float = 0.0
    mem_bytes: float = 0.0
    op: str = "op"
    costs: Mapping[str, float] = field(default_factory=dict)
    group: str | None = None
    backward: bool = False
    attrs: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The node as a plain dict (the JSON and networkx attribute form)."""
        out: dict[str, Any] = {
            "name": self.name,
            "op": self.op,
            "cost": self.cost,
            "out_bytes": self.out_bytes,
            "mem_bytes": self.mem_bytes,
        }
        if self.costs:
            out["costs"] = dict(self.costs)
        if self.group is not None:
            out["group"] = self.group
        if self.backward:
            out["backward"] = True
        if self.attrs:
            out["attrs"] = dict(self.attrs)
        return out


@dataclass(frozen=True)
class Edge:
    """A data dependency ``src -> dst``.

    Attributes:
        src: Producer's name.
        dst: Consumer's name.
        bytes: Bytes moved when the two run on different devices (default: ``src.out_bytes``).
        time: Optional explicit transfer time in seconds, used instead of bytes / bandwidth.
    """

    src: str
    dst: str
    bytes: float
    time: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The edge as a plain dict (the JSON form)."""
        out: dict[str, Any] = {"src": self.src, "dst": self.dst, "bytes": self.bytes}
        if self.time is not None:
            out["time"] = self.time
        return out


def _readonly(values: Any, dtype: Any) -> np.ndarray:
    arr = np.ascontiguousarray(np.asarray(values, dtype=dtype))
    arr.flags.writeable = False
    return arr


@dataclass(frozen=True, eq=False)
class GraphArrays:
    """Array view of a :class:`CompGraph` for simulators, envs and orders (all read-only).

    Adjacency is CSR: the successors of node ``v`` are ``succ[succ_ptr[v]:succ_ptr[v + 1]]`` in
    increasing index order, and ``succ_edge`` holds the matching edge indices (likewise
    ``pred``/``pred_ptr``/``pred_edge``). ``kind_costs[kind][v]`` is NaN where node ``v`` has no
    cost for that kind. ``group`` is -1 for ungrouped nodes, else the group's index in
    ``group_names``.
    """

    num_nodes: int
    num_edges: int
    cost: np.ndarray
    out_bytes: np.ndarray
    mem_bytes: np.ndarray
    backward: np.ndarray
    group: np.ndarray
    group_names: tuple[str, ...]
    kind_costs: Mapping[str, np.ndarray]
    src: np.ndarray
    dst: np.ndarray
    edge_bytes: np.ndarray
    edge_time: np.ndarray
    succ_ptr: np.ndarray
    succ: np.ndarray
    succ_edge: np.ndarray
    pred_ptr: np.ndarray
    pred: np.ndarray
    pred_edge: np.ndarray

    @property
    def in_degree(self) -> np.ndarray:
        """Number of predecessors per node."""
        return np.diff(self.pred_ptr)

    @property
    def out_degree(self) -> np.ndarray:
        """Number of successors per node."""
        return np.diff(self.succ_ptr)


def _csr(num_nodes: int, key: np.ndarray, other: np.ndarray) -> tuple[np.ndarray, ...]:
    """CSR rows by ``key``, each row sorted by ``other``: (ptr, neighbours, edge ids)."""
    edge_order = np.lexsort((other, key))
    ptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.add.at(ptr, key + 1, 1)
    return np.cumsum(ptr), other[edge_order], edge_order


def _as_float(value: Any, what: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise GraphError(f"{what} must be a number, got {value!r}")
    try:
        return float(value)
    except OverflowError:  # an int past float's range (about 1.8e308)
        raise GraphError(
            f"{what} is an integer of {len(str(abs(value)))} digits, beyond a "
            "float's range (about 1.8e308)"
        ) from None


def _check_size(value: Any, what: str, *, allow_inf: bool = False) -> float:
    x = _as_float(value, what)
    if math.isnan(x) or x < 0 or (math.isinf(x) and not allow_inf):
        raise GraphError(f"{what} is {x!r}; it must be finite and >= 0")
    return x


def _check_text(value: Any, what: str) -> str:
    """``value`` if it is a non-empty string; names are never made from other types."""
    if not isinstance(value, str) or not value:
        raise GraphError(f"{what} must be a non-empty string, got {value!r}")
    return value


def _check_bool(value: Any, what: str) -> bool:
    """``value`` if it is a real boolean: ``bool("false")`` is True, so strings are refused."""
    if not isinstance(value, (bool, np.bool_)):
        raise GraphError(f"{what} must be true or false (a boolean), got {value!r}")
    return bool(value)


def _check_mapping(value: Any, what: str) -> Mapping[str, Any]:
    """``value`` as a mapping; ``None`` means an empty one (an absent optional field)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise GraphError(f"{what} must be a mapping, got {value!r}")
    return value


def _check_many(values: Any, what: str) -> Iterable[Any]:
    """``values`` if it is a collection of items (a lone string or mapping is not)."""
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        raise GraphError(f"{what} must be a list, got {values!r:.60}")
    return values


def _check_costs(value: Any, node: str) -> dict[str, float]:
    what = f"node {node!r} attribute 'costs'"
    if value is not None and not isinstance(value, Mapping):
        raise GraphError(f"{what} must map device kind -> seconds, got {value!r}")
    costs = value or {}
    for kind in costs:
        _check_text(kind, f"a device kind in {what}")
    return {
        kind: _check_size(t, f"node {node!r} cost for kind {kind!r}", allow_inf=True)
        for kind, t in costs.items()
    }


def _make_node(spec: Node | Mapping[str, Any], position: int) -> Node:
    if isinstance(spec, Node):
        spec = {**spec.to_dict(), "attrs": dict(spec.attrs)}
    if not isinstance(spec, Mapping):
        raise GraphError(f"node #{position} must be a mapping or Node, got {type(spec).__name__}")
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise GraphError(f"node #{position} needs a non-empty string 'name', got {name!r}")
    if "cost" not in spec:
        raise GraphError(f"node {name!r} is missing required attribute 'cost'")
    what = f"node {name!r} attribute"
    costs = _check_costs(spec.get("costs"), name)
    group = spec.get("group")
    attrs = _check_mapping(spec.get("attrs"), f"{what} 'attrs'")
    extra = {k: v for k, v in spec.items() if k not in _NODE_FIELDS and k != "attrs"}
    return Node(
        name=name,
        cost=_check_size(spec["cost"], f"{what} 'cost'"),
        out_bytes=_check_size(spec.get("out_bytes", 0.0), f"{what} 'out_bytes'"),
        mem_bytes=_check_size(spec.get("mem_bytes", 0.0), f"{what} 'mem_bytes'"),
        op=_check_text(spec.get("op", "op"), f"{what} 'op'"),
        costs=costs,
        group=None if group is None else _check_text(group, f"{what} 'group'"),
        backward=_check_bool(spec.get("backward", False), f"{what} 'backward'"),
        attrs={**attrs, **extra},
    )


def _edge_fields(spec: Edge | Mapping[str, Any] | tuple, position: int) -> tuple[Any, ...]:
    if isinstance(spec, Edge):
        return spec.src, spec.dst, spec.bytes, spec.time
    if isinstance(spec, Mapping):
        if "src" not in spec or "dst" not in spec:
            raise GraphError(f"edge #{position} needs 'src' and 'dst', got keys {sorted(spec)}")
        return spec["src"], spec["dst"], spec.get("bytes"), spec.get("time")
    if isinstance(spec, tuple) and len(spec) in (2, 3):
        attrs = _check_mapping(spec[2] if len(spec) == 3 else None, f"edge #{position} attrs")
        return spec[0], spec[1], attrs.get("bytes"), attrs.get("time")
    raise GraphError(
        f"edge #{position} must be an Edge, a mapping or (src, dst[, attrs]), got {spec!r:.60}"
    )


def _check_path(path: Any) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"a graph file path must be a str or os.PathLike, got {path!r}")
    return Path(path)


def read_json_file(path: str | os.PathLike[str]) -> Any:
    """The parsed JSON of a graph file.

    Raises:
        ConfigError: ``path`` is not a string or path.
        GraphError: No such file, unreadable, or not JSON.
    """
    path = _check_path(path)
    if not path.is_file():
        raise GraphError(f"graph file not found: {path}{' (a directory)' if path.is_dir() else ''}")
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as err:
        raise GraphError(f"graph file {path} cannot be read: {err}") from None
    except json.JSONDecodeError as err:
        raise GraphError(f"graph file {path} is not valid JSON: {err}") from None


def check_graph(graph: Any, what: str) -> CompGraph:
    """``graph`` if it is a :class:`CompGraph`, for entry points that take one.

    Raises:
        ConfigError: Naming ``what`` (the function or argument) and the type given.
    """
    if not isinstance(graph, CompGraph):
        raise ConfigError(f"{what} needs a CompGraph, got {type(graph).__name__}")
    return graph


class CompGraph:
    """An immutable, validated DNN computation graph.

    Args:
        nodes: Nodes in index order, as :class:`Node` objects or mappings with the same keys
            (``name`` and ``cost`` required; unknown keys go to ``attrs``).
        edges: Edges as :class:`Edge` objects, mappings with ``src``/``dst`` (and optional
            ``bytes``, ``time``) or ``(src, dst[, attrs])`` tuples, naming nodes.
        name: A label for the graph (shown in logs and results).
        meta: Free-form JSON-serialisable metadata (source file, cluster hints, ...).

    Values are taken as they are, never coerced: numbers must be numbers (not ``"1.5"``),
    ``backward`` a real boolean (``"false"`` is refused, not read as true), and ``name``,
    ``op``, ``group``, device kinds and edge ends non-empty strings. ``None`` counts as absent
    for the optional ``costs``, ``group``, ``attrs`` and ``meta``.

    Raises:
        GraphError: For an empty graph, duplicate names, a missing ``cost``, negative / NaN /
            infinite costs or sizes, a value of the wrong type, an edge to an unknown node, a
            self-loop, a duplicate edge or a cycle. The message names the offending nodes and
            attribute.
    """

    def __init__(
        self,
        nodes: Iterable[Node | Mapping[str, Any]],
        edges: Iterable[Edge | Mapping[str, Any] | tuple] = (),
        *,
        name: str = "graph",
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = _check_text(name, "graph name")
        self.meta: Mapping[str, Any] = dict(_check_mapping(meta, f"graph {name!r} meta"))
        nodes = _check_many(nodes, f"graph {name!r} nodes")
        self._nodes = tuple(_make_node(spec, i) for i, spec in enumerate(nodes))
        if not self._nodes:
            raise GraphError(f"graph {name!r} has no nodes")
        self._index = self._build_index(self._nodes)
        self._edges = self._build_edges(_check_many(edges, f"graph {name!r} edges"))
        self._check_acyclic()

    # ---------------------------------------------------------------- construction helpers
    @staticmethod
    def _build_index(nodes: tuple[Node, ...]) -> dict[str, int]:
        index: dict[str, int] = {}
        duplicates: list[str] = []
        for i, node in enumerate(nodes):
            if node.name in index:
                duplicates.append(node.name)
            index[node.name] = i
        if duplicates:
            raise GraphError(f"duplicate node names: {', '.join(sorted(set(duplicates)))}")
        return index

    def _build_edges(self, specs: Iterable[Any]) -> tuple[Edge, ...]:
        edges: list[Edge] = []
        seen: set[tuple[str, str]] = set()
        for position, spec in enumerate(specs):
            src, dst, nbytes, time = _edge_fields(spec, position)
            src = _check_text(src, f"edge #{position} 'src' (a node name)")
            dst = _check_text(dst, f"edge #{position} 'dst' (a node name)")
            for end in (src, dst):
                if end not in self._index:
                    raise GraphError(f"edge {src} -> {dst} refers to unknown node {end!r}")
            if src == dst:
                raise GraphError(f"self-loop on node {src!r}")
            if (src, dst) in seen:
                raise GraphError(f"duplicate edge {src} -> {dst}")
            seen.add((src, dst))
            what = f"edge {src} -> {dst}"
            producer = self._nodes[self._index[src]]
            edges.append(
                Edge(
                    src=src,
                    dst=dst,
                    bytes=producer.out_bytes
                    if nbytes is None
                    else _check_size(nbytes, f"{what} attribute 'bytes'"),
                    time=None if time is None else _check_size(time, f"{what} attribute 'time'"),
                )
            )
        return tuple(edges)

    def _check_acyclic(self) -> None:
        g = nx.DiGraph()
        g.add_nodes_from(range(len(self._nodes)))
        g.add_edges_from((self._index[e.src], self._index[e.dst]) for e in self._edges)
        if nx.is_directed_acyclic_graph(g):  # fast; find_cycle only to name the culprit
            return
        cycle = nx.find_cycle(g)
        names = [self._nodes[u].name for u, _ in cycle] + [self._nodes[cycle[0][0]].name]
        raise GraphError(f"graph {self.name!r} has a cycle: {' -> '.join(names)}")

    # ------------------------------------------------------------------------- accessors
    @property
    def nodes(self) -> tuple[Node, ...]:
        """Nodes in index order."""
        return self._nodes

    @property
    def edges(self) -> tuple[Edge, ...]:
        """Edges in the order given (bytes resolved)."""
        return self._edges

    @property
    def names(self) -> tuple[str, ...]:
        """Node names in index order."""
        return tuple(node.name for node in self._nodes)

    @property
    def num_nodes(self) -> int:
        """Number of nodes."""
        return len(self._nodes)

    @property
    def num_edges(self) -> int:
        """Number of edges."""
        return len(self._edges)

    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(self._nodes)

    def index(self, name: str) -> int:
        """Index of the node called ``name``."""
        try:
            return self._index[name]
        except KeyError:
            raise GraphError(f"graph {self.name!r} has no node {name!r}") from None

    def node(self, key: int | str) -> Node:
        """The node with index or name ``key``."""
        return self._nodes[self.index(key) if isinstance(key, str) else self._check_index(key)]

    def _check_index(self, v: Any) -> int:
        """``v`` if it is a node index; negative indices do not wrap around."""
        n = len(self._nodes)
        if (
            isinstance(v, (bool, np.bool_))
            or not isinstance(v, (int, np.integer))
            or not (0 <= v < n)
        ):
            raise GraphError(
                f"graph {self.name!r} has no node index {v!r} (indices are integers 0..{n - 1})"
            )
        return int(v)

    @property
    def device_kinds(self) -> tuple[str, ...]:
        """Device kinds some node has an explicit cost for, sorted."""
        return tuple(sorted({kind for node in self._nodes for kind in node.costs}))

    @cached_property
    def arrays(self) -> GraphArrays:
        """The cached, read-only array view (built on first access)."""
        n = len(self._nodes)
        src = np.array([self._index[e.src] for e in self._edges], dtype=np.int64)
        dst = np.array([self._index[e.dst] for e in self._edges], dtype=np.int64)
        succ_ptr, succ, succ_edge = _csr(n, src, dst)
        pred_ptr, pred, pred_edge = _csr(n, dst, src)
        group_names = tuple(dict.fromkeys(x.group for x in self._nodes if x.group is not None))
        group_id = {g: i for i, g in enumerate(group_names)}
        kind_costs = {
            kind: _readonly([x.costs.get(kind, math.nan) for x in self._nodes], np.float64)
            for kind in self.device_kinds
        }
        return GraphArrays(
            num_nodes=n,
            num_edges=len(self._edges),
            cost=_readonly([x.cost for x in self._nodes], np.float64),
            out_bytes=_readonly([x.out_bytes for x in self._nodes], np.float64),
            mem_bytes=_readonly([x.mem_bytes for x in self._nodes], np.float64),
            backward=_readonly([x.backward for x in self._nodes], np.bool_),
            group=_readonly([group_id.get(x.group, -1) for x in self._nodes], np.int64),
            group_names=group_names,
            kind_costs=kind_costs,
            src=_readonly(src, np.int64),
            dst=_readonly(dst, np.int64),
            edge_bytes=_readonly([e.bytes for e in self._edges], np.float64),
            edge_time=_readonly(
                [math.nan if e.time is None else e.time for e in self._edges], np.float64
            ),
            succ_ptr=_readonly(succ_ptr, np.int64),
            succ=_readonly(succ, np.int64),
            succ_edge=_readonly(succ_edge, np.int64),
            pred_ptr=_readonly(pred_ptr, np.int64),
            pred=_readonly(pred, np.int64),
            pred_edge=_readonly(pred_edge, np.int64),
        )

    def successors(self, v: int) -> np.ndarray:
        """Indices of the consumers of node ``v``, increasing."""
        v = self._check_index(v)
        a = self.arrays
        return a.succ[a.succ_ptr[v] : a.succ_ptr[v + 1]]

    def predecessors(self, v: int) -> np.ndarray:
        """Indices of the producers of node ``v``, increasing."""
        v = self._check_index(v)
        a = self.arrays
        return a.pred[a.pred_ptr[v] : a.pred_ptr[v + 1]]

    @property
    def total_cost(self) -> float:
        """Sum of reference-device costs (seconds)."""
        return float(self.arrays.cost.sum())

    # -------------------------------------------------------------------- conversions
    def to_dict(self) -> dict[str, Any]:
        """The versioned JSON form (see :meth:`save`)."""
        return {
            "format": SCHEMA_FORMAT,
            "version": SCHEMA_VERSION,
            "name": self.name,
            "meta": dict(self.meta),
            "nodes": [node.to_dict() for node in self._nodes],
            "edges": [edge.to_dict() for edge in self._edges],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CompGraph:
        """Inverse of :meth:`to_dict`; checks the format tag and schema version."""
        if not isinstance(data, Mapping) or data.get("format") != SCHEMA_FORMAT:
            raise GraphError(f"not a placerl graph document (expected format {SCHEMA_FORMAT!r})")
        version = data.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version != SCHEMA_VERSION:
            raise GraphError(
                f"unsupported graph schema version {version!r}; this placerl reads {SCHEMA_VERSION}"
            )
        for key in ("nodes", "edges"):
            if not isinstance(data.get(key), list):
                raise GraphError(
                    f"graph document needs a list under {key!r}, got {data.get(key)!r:.60}"
                )
        return cls(
            data["nodes"], data["edges"], name=data.get("name", "graph"), meta=data.get("meta")
        )

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the graph as versioned JSON, atomically (write to a temp file, then rename).

        Raises:
            ConfigError: ``path`` is not a string or path, or names a directory.
        """
        path = _check_path(path)
        if path.is_dir():
            raise ConfigError(f"cannot save graph {self.name!r} to {path}: it is a directory")
        return atomic_write_text(path, json.dumps(self.to_dict(), indent=1))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> CompGraph:
        """Read a graph written by :meth:`save`.

        Raises:
            ConfigError: ``path`` is not a string or path.
            GraphError: The file is missing, unreadable, not JSON or not a valid graph.
        """
        return cls.from_dict(read_json_file(path))

    def to_networkx(self) -> nx.DiGraph:
        """A ``networkx.DiGraph`` keyed by node name with the attributes of the design card;
        ``graph["edge_order"]`` keeps this graph's edge order (networkx lists edges by
        source), so that :meth:`from_networkx` gives back an equal graph."""
        g = nx.DiGraph(
            name=self.name,
            meta=dict(self.meta),
            edge_order=[(edge.src, edge.dst) for edge in self._edges],
        )
        for node in self._nodes:
            attrs = node.to_dict()
            del attrs["name"]
            g.add_node(node.name, **attrs)
        for edge in self._edges:
            g.add_edge(
                edge.src, edge.dst, **{k: v for k, v in edge.to_dict().items() if k in _EDGE_FIELDS}
            )
        return g

    @classmethod
    def from_networkx(cls, graph: nx.DiGraph, *, name: str | None = None) -> CompGraph:
        """Build from a ``networkx.DiGraph``; node order is the graph's insertion order, edge
        order that of ``graph.graph["edge_order"]`` where it lists exactly the graph's edges
        (as :meth:`to_networkx` writes it), else networkx's.

        A node's name is its ``name`` attribute if present (it must then be a string), else
        ``str(key)``. Attributes are checked as :class:`CompGraph` checks them.

        Raises:
            GraphError: ``graph`` is not a ``networkx.DiGraph`` (an undirected graph or a
                multigraph is refused), or a node or edge attribute is invalid.
        """
        if not isinstance(graph, nx.DiGraph) or graph.is_multigraph():
            raise GraphError(f"from_networkx needs a networkx.DiGraph, got {type(graph).__name__}")
        names = {key: attrs.get("name", str(key)) for key, attrs in graph.nodes(data=True)}
        nodes = [{**attrs, "name": names[key]} for key, attrs in graph.nodes(data=True)]
        edges = [(names[u], names[v], graph.edges[u, v]) for u, v in _edge_order(graph)]
        label = name if name is not None else graph.graph.get("name") or "graph"
        return cls(nodes, edges, name=label, meta=graph.graph.get("meta"))

    # ---------------------------------------------------------------------- identity
    def fingerprint(self) -> str:
        """A SHA-256 of the canonical JSON form: equal graphs have equal fingerprints.

        Computed once per graph (graphs are immutable): cache keys read it on every lookup.
        """
        return self._fingerprint

    @cached_property
    def _fingerprint(self) -> str:
        blob = json.dumps(self.to_dict(), sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()

    def content_fingerprint(self) -> str:
        """A SHA-256 of the ops and edges alone, without the name and meta.

        Two graphs that differ only in what they are called share it: e.g. two seeds of a
        generator that drew the same shapes (``synthetic:nmt``), which a held-out split or a
        study's sample must not count as two graphs.
        """
        data = self.to_dict()
        blob = json.dumps([data["nodes"], data["edges"]], sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CompGraph):
            return NotImplemented
        return (self.name, self._nodes, self._edges, dict(self.meta)) == (
            other.name,
            other._nodes,
            other._edges,
            dict(other.meta),
        )

    def __hash__(self) -> int:
        return hash((self.name, self.num_nodes, self.num_edges))

    def __repr__(self) -> str:
        return f"CompGraph({self.name!r}, nodes={self.num_nodes}, edges={self.num_edges})"

    def __getstate__(self) -> dict[str, Any]:
        # Drop the cached array view: it is rebuilt on demand and pickles are smaller.
        state = dict(self.__dict__)
        state.pop("arrays", None)
        return state


def _edge_order(graph: nx.DiGraph) -> list[tuple[Any, Any]]:
    """``graph.graph["edge_order"]`` (pairs, as lists too after a JSON round trip) where it
    lists each of the graph's edges once, else networkx's order (an edited graph's)."""
    listed = graph.graph.get("edge_order")
    if isinstance(listed, list | tuple):
        pairs = [tuple(pair) for pair in listed if isinstance(pair, list | tuple)]
        try:
            if len(pairs) == len(listed) == graph.number_of_edges() and set(pairs) == set(
                graph.edges
            ):
                return pairs
        except TypeError:  # an unhashable key: not a list to_networkx wrote
            pass
    return list(graph.edges)
