"""Every public entry point of placerl.graph refuses bad input at the boundary.

One table: each row is ``(id, call, error type, a substring of the message)``. The messages
name the argument (node, attribute, option, field) and the value, so the substrings check that
too. Nothing here imports a real model: zoo and torch rows fail on their options before any
tracing, so the module runs in about a second.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest
import torch

from placerl.errors import ConfigError, GraphError, PlacementError
from placerl.graph import GRAPH_SOURCES, CompGraph, load_graph, register_graph_source
from placerl.graph.msr import load_msr, parse_msr
from placerl.graph.orders import traversal_order
from placerl.graph.passes import Coarsening, coarsen, contract, with_backward
from placerl.graph.profile import profile
from placerl.graph.synthetic import GraphBuilder, family, generate, register_family
from placerl.graph.torch_import import from_module, model_flops
from placerl.graph.zoo import build_model


# ------------------------------------------------------------------------------ builders
def node(name: str = "a", **fields: Any) -> dict[str, Any]:
    return {"name": name, "cost": 1.0, **fields}


def one(**fields: Any) -> Callable[[], CompGraph]:
    """A one-node graph whose node has ``fields``."""
    return lambda: CompGraph([node(**fields)])


def pair(*edges: Any, **kwargs: Any) -> Callable[[], CompGraph]:
    """Nodes ``a`` and ``b`` with ``edges``."""
    return lambda: CompGraph([node("a"), node("b")], edges, **kwargs)


def edge_with(**attrs: Any) -> Callable[[], CompGraph]:
    """Edge ``a -> b`` with ``attrs``."""
    return pair(("a", "b", attrs))


G = CompGraph([node("a"), node("b")], [("a", "b")], name="g")
G3 = CompGraph([node("x"), node("y"), node("z")], name="g3")


def document(**changes: Any) -> dict[str, Any]:
    """The JSON document of ``G`` with top-level ``changes``."""
    return {**G.to_dict(), **changes}


def from_file(content: Any, load: Callable[[Path], Any], name: str = "g.json") -> Callable:
    """Write ``content`` (JSON unless a string) to a fresh file and ``load`` it."""

    def call() -> Any:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / name
            path.write_text(content if isinstance(content, str) else json.dumps(content))
            return load(path)

    return call


def in_a_directory(call: Callable[[Path], Any]) -> Callable[[], Any]:
    def run() -> Any:
        with tempfile.TemporaryDirectory() as tmp:
            return call(Path(tmp))

    return run


def msr(node_changes: dict[str, Any] | None = None, **changes: Any) -> dict[str, Any]:
    """A two-node msr-fiddle document with ``changes`` to the header and to node #0."""
    base = {"supportedOnFpga": 1, "cpuLatency": 2.0, "fpgaLatency": 1.0, "isBackwardNode": 0}
    nodes = [{**base, "id": 7, "size": 10, **(node_changes or {})}, {**base, "id": 9, "size": 1}]
    doc = {"maxSizePerFPGA": 100.0, "maxFPGAs": 2, "maxCPUs": 1, "nodes": nodes}
    return {**doc, "edges": [{"sourceId": 7, "destId": 9, "cost": 0.5, "size": 4}], **changes}


def msr_edge(**changes: Any) -> dict[str, Any]:
    doc = msr()
    doc["edges"][0].update(changes)
    return doc


def networkx_graph(**node_attrs: Any) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_node("a", cost=1.0, **node_attrs)
    return g


def family_fn(rng: Any, n: int, *, width: int = 8) -> Any:
    return GraphBuilder().parts()


def min_n_reading_depth(*, depth: int) -> int:
    return depth


def coarse_with_members(members: Any) -> CompGraph:
    return CompGraph([node("ab", attrs={"members": members})])


LINEAR, X = torch.nn.Linear(4, 2), torch.randn(1, 4)
ZOO = "zoo:resnet50?variant=small&"

# ------------------------------------------------------------------------------- the table
# fmt: off
CASES: list[tuple[str, Callable[[], Any], type[Exception], str]] = [
    # --- CompGraph: nodes. Values are never coerced.
    ("node-backward-string", one(backward="false"), GraphError,
     "node 'a' attribute 'backward' must be true or false (a boolean), got 'false'"),
    ("node-backward-int", one(backward=1), GraphError,
     "node 'a' attribute 'backward' must be true or false (a boolean), got 1"),
    ("node-backward-none", one(backward=None), GraphError,
     "node 'a' attribute 'backward' must be true or false (a boolean), got None"),
    ("node-backward-json",
     from_file(document(nodes=[node(backward="false")]), CompGraph.load),
     GraphError, "node 'a' attribute 'backward' must be true or false (a boolean), got 'false'"),
    ("node-backward-networkx",
     lambda: CompGraph.from_networkx(networkx_graph(backward="no")),
     GraphError, "node 'a' attribute 'backward' must be true or false (a boolean), got 'no'"),
    ("node-op-int", one(op=3), GraphError,
     "node 'a' attribute 'op' must be a non-empty string, got 3"),
    ("node-op-empty", one(op=""), GraphError,
     "node 'a' attribute 'op' must be a non-empty string, got ''"),
    ("node-group-int", one(group=3), GraphError,
     "node 'a' attribute 'group' must be a non-empty string, got 3"),
    ("node-name-int", lambda: CompGraph([{"name": 7, "cost": 1}]), GraphError,
     "node #0 needs a non-empty string 'name', got 7"),
    ("node-attrs-list", one(attrs=[1]), GraphError,
     "node 'a' attribute 'attrs' must be a mapping, got [1]"),
    ("node-costs-list", one(costs=[1]), GraphError,
     "node 'a' attribute 'costs' must map device kind -> seconds, got [1]"),
    ("node-costs-kind-int", one(costs={1: 2.0}), GraphError,
     "a device kind in node 'a' attribute 'costs' must be a non-empty string, got 1"),
    ("node-costs-value-string", one(costs={"cpu": "2"}), GraphError,
     "node 'a' cost for kind 'cpu' must be a number, got '2'"),
    ("node-cost-string", lambda: CompGraph([{"name": "a", "cost": "1.5"}]), GraphError,
     "node 'a' attribute 'cost' must be a number, got '1.5'"),
    ("node-cost-bool", lambda: CompGraph([{"name": "a", "cost": True}]), GraphError,
     "node 'a' attribute 'cost' must be a number, got True"),
    ("node-cost-huge-int", lambda: CompGraph([{"name": "a", "cost": 10**400}]), GraphError,
     "node 'a' attribute 'cost' is an integer of 401 digits, beyond a float's range"),
    ("node-out-bytes-string", one(out_bytes="10"), GraphError,
     "node 'a' attribute 'out_bytes' must be a number, got '10'"),
    ("node-mem-bytes-negative", one(mem_bytes=-1), GraphError,
     "node 'a' attribute 'mem_bytes' is -1.0"),
    ("node-not-a-mapping", lambda: CompGraph([5]), GraphError,
     "node #0 must be a mapping or Node, got int"),
    # --- CompGraph: edges
    ("edge-bytes-string", edge_with(bytes="10"), GraphError,
     "edge a -> b attribute 'bytes' must be a number, got '10'"),
    ("edge-time-string", edge_with(time="0.5"), GraphError,
     "edge a -> b attribute 'time' must be a number, got '0.5'"),
    ("edge-bytes-bool", edge_with(bytes=True), GraphError,
     "edge a -> b attribute 'bytes' must be a number, got True"),
    ("edge-time-nan", edge_with(time=math.nan), GraphError, "edge a -> b attribute 'time' is nan"),
    ("edge-src-int", lambda: CompGraph([node("1"), node("2")], [(1, 2)]), GraphError,
     "edge #0 'src' (a node name) must be a non-empty string, got 1"),
    ("edge-dst-none", pair({"src": "a", "dst": None}), GraphError,
     "edge #0 'dst' (a node name) must be a non-empty string, got None"),
    ("edge-attrs-not-mapping", pair(("a", "b", 5)), GraphError,
     "edge #0 attrs must be a mapping, got 5"),
    ("edge-list", pair(["a", "b"]), GraphError,
     "edge #0 must be an Edge, a mapping or (src, dst[, attrs]), got ['a', 'b']"),
    ("edge-unknown-node", pair(("a", "zz")), GraphError,
     "edge a -> zz refers to unknown node 'zz'"),
    # --- CompGraph: the graph
    ("graph-name-int", lambda: CompGraph([node()], name=5), GraphError,
     "graph name must be a non-empty string, got 5"),
    ("graph-name-none", lambda: CompGraph([node()], name=None), GraphError,
     "graph name must be a non-empty string, got None"),
    ("graph-meta-list", lambda: CompGraph([node()], meta=[1]), GraphError,
     "graph 'graph' meta must be a mapping, got [1]"),
    ("graph-nodes-none", lambda: CompGraph(None), GraphError,
     "graph 'graph' nodes must be a list, got None"),
    ("graph-nodes-mapping", lambda: CompGraph(node()), GraphError,
     "graph 'graph' nodes must be a list, got {'name': 'a'"),
    ("graph-edges-none", lambda: CompGraph([node()], None), GraphError,
     "graph 'graph' edges must be a list, got None"),
    ("graph-empty", lambda: CompGraph([]), GraphError, "graph 'graph' has no nodes"),
    ("graph-cycle", pair(("a", "b"), ("b", "a")), GraphError, "has a cycle: "),
    # --- CompGraph: documents, files, networkx
    ("doc-version-bool", lambda: CompGraph.from_dict(document(version=True)), GraphError,
     "unsupported graph schema version True"),
    ("doc-nodes-not-list", lambda: CompGraph.from_dict(document(nodes=5)), GraphError,
     "graph document needs a list under 'nodes', got 5"),
    ("doc-name-int", lambda: CompGraph.from_dict(document(name=3)), GraphError,
     "graph name must be a non-empty string, got 3"),
    ("doc-meta-string", lambda: CompGraph.from_dict(document(meta="x")), GraphError,
     "graph 'g' meta must be a mapping, got 'x'"),
    ("doc-not-a-document", lambda: CompGraph.from_dict([1]), GraphError,
     "not a placerl graph document"),
    ("load-path-int", lambda: CompGraph.load(5), ConfigError,
     "a graph file path must be a str or os.PathLike, got 5"),
    ("load-directory", in_a_directory(CompGraph.load), GraphError, "(a directory)"),
    ("load-not-json", from_file("{not json", CompGraph.load), GraphError, "is not valid JSON"),
    ("save-path-none", lambda: G.save(None), ConfigError,
     "a graph file path must be a str or os.PathLike, got None"),
    ("save-to-directory", in_a_directory(G.save), ConfigError, "cannot save graph 'g' to"),
    ("networkx-undirected", lambda: CompGraph.from_networkx(nx.Graph()), GraphError,
     "from_networkx needs a networkx.DiGraph, got Graph"),
    ("networkx-multigraph", lambda: CompGraph.from_networkx(nx.MultiDiGraph()), GraphError,
     "from_networkx needs a networkx.DiGraph, got MultiDiGraph"),
    ("networkx-dict", lambda: CompGraph.from_networkx({}), GraphError,
     "from_networkx needs a networkx.DiGraph, got dict"),
    ("networkx-name-attr-int", lambda: CompGraph.from_networkx(networkx_graph(name=5)), GraphError,
     "node #0 needs a non-empty string 'name', got 5"),
    ("networkx-name-arg-int", lambda: CompGraph.from_networkx(G.to_networkx(), name=5), GraphError,
     "graph name must be a non-empty string, got 5"),
    # --- CompGraph: lookups. Indices do not wrap around and are never floats or bools.
    ("node-index-too-big", lambda: G.node(99), GraphError,
     "graph 'g' has no node index 99 (indices are integers 0..1)"),
    ("node-index-negative", lambda: G.node(-1), GraphError, "graph 'g' has no node index -1"),
    ("node-index-bool", lambda: G.node(True), GraphError, "graph 'g' has no node index True"),
    ("node-index-float", lambda: G.node(1.0), GraphError, "graph 'g' has no node index 1.0"),
    ("successors-negative", lambda: G.successors(-1), GraphError, "graph 'g' has no node index -1"),
    ("predecessors-name", lambda: G.predecessors("a"), GraphError,
     "graph 'g' has no node index 'a'"),
    ("index-unknown-name", lambda: G.index("zz"), GraphError, "graph 'g' has no node 'zz'"),
    # --- load_graph and graph sources
    ("spec-none", lambda: load_graph(None), ConfigError,
     "a graph spec must be a string, Path or CompGraph, got NoneType"),
    ("spec-int", lambda: load_graph(42), ConfigError,
     "a graph spec must be a string, Path or CompGraph, got int"),
    ("spec-bytes", lambda: load_graph(b"synthetic:chain"), ConfigError,
     "got bytes b'synthetic:chain'"),
    ("spec-no-scheme", lambda: load_graph("layered"), ConfigError,
     "graph spec 'layered' has no scheme"),
    ("spec-unknown-scheme", lambda: load_graph("nope:thing"), ConfigError,
     "unknown graph source 'nope'; known: msr, synthetic, "),
    ("spec-no-body", lambda: load_graph("synthetic:"), ConfigError,
     "graph spec 'synthetic:' names nothing after 'synthetic:'"),
    ("spec-msr-no-body", lambda: load_graph("msr:?x=1"), ConfigError,
     "graph spec 'msr:?x=1' names nothing after 'msr:'"),
    ("spec-malformed-query", lambda: load_graph("synthetic:layered?n"), ConfigError,
     "has a malformed query 'n'"),
    ("spec-repeated-option", lambda: load_graph("synthetic:layered?n=5&n=7"), ConfigError,
     "gives option 'n' more than once"),
    ("spec-msr-takes-no-options", lambda: load_graph("msr:bert24_training?n=3"), ConfigError,
     "graph source 'msr' takes no option(s) 'n'; known: none"),
    ("spec-user-source-unknown-option",
     lambda: load_graph("test_bad_inputs:op?speed=2"),
     ConfigError, "graph source 'test_bad_inputs' takes no option(s) 'speed'; known: cost"),
    ("spec-family-as-option", lambda: load_graph("synthetic:chain?family=x"), ConfigError,
     "unknown option(s) 'family' for graph family 'chain'"),
    ("spec-seed-string", lambda: load_graph("synthetic:chain?seed=abc"), ConfigError,
     "seed must be a non-negative integer, got 'abc'"),
    ("spec-n-float", lambda: load_graph("synthetic:chain?n=1.5"), ConfigError,
     "graph family 'chain' needs an integer n >= 2, got 1.5"),
    ("spec-n-bool", lambda: load_graph("synthetic:chain?n=true"), ConfigError,
     "needs an integer n >= 2, got True"),
    ("spec-option-string", lambda: load_graph("synthetic:chain?batch=x"), ConfigError,
     "option 'batch' of graph family 'chain' must be an integer, got 'x'"),
    ("spec-missing-file", lambda: load_graph("missing/graph.json"), GraphError,
     "graph file not found: missing/graph.json"),
    ("spec-directory", in_a_directory(load_graph), GraphError, "(a directory)"),
    ("spec-file-not-json", from_file("[1, 2", load_graph), GraphError, "is not valid JSON"),
    ("spec-file-backward-string",
     from_file(document(nodes=[node(backward="false")]), load_graph),
     GraphError, "node 'a' attribute 'backward' must be true or false (a boolean), got 'false'"),
    ("register-source-colon", lambda: register_graph_source("a:b"), ConfigError,
     "a graph source scheme must be a non-empty string without ':', '?' or '/', got 'a:b'"),
    ("register-source-empty", lambda: register_graph_source(""), ConfigError, "got ''"),
    # --- msr-fiddle files: flags are true / false / 0 / 1, numbers are numbers
    ("msr-backward-string",
     lambda: parse_msr(msr({"isBackwardNode": "false"}), name="m"),
     GraphError,
     "msr graph 'm' node #0 field 'isBackwardNode' must be true, false, 0 or 1, got 'false'"),
    ("msr-supported-two", lambda: parse_msr(msr({"supportedOnFpga": 2})), GraphError,
     "node #0 field 'supportedOnFpga' must be true, false, 0 or 1, got 2"),
    ("msr-latency-string", lambda: parse_msr(msr({"cpuLatency": "1"})), GraphError,
     "node #0 field 'cpuLatency' must be a number, got '1'"),
    ("msr-size-none", lambda: parse_msr(msr({"size": None})), GraphError,
     "node #0 field 'size' must be a number, got None"),
    ("msr-id-float", lambda: parse_msr(msr({"id": 0.5})), GraphError,
     "node #0 field 'id' must be an integer, got 0.5"),
    ("msr-color-list", lambda: parse_msr(msr({"colorClass": [1]})), GraphError,
     "node #0 field 'colorClass' must be an integer, a string or null, got [1]"),
    ("msr-edge-size-string", lambda: parse_msr(msr_edge(size="abc")), GraphError,
     "edge #0 field 'size' must be a number, got 'abc'"),
    ("msr-edge-size-none", lambda: parse_msr(msr_edge(size=None)), GraphError,
     "edge #0 field 'size' must be a number, got None"),
    ("msr-edge-cost-string", lambda: parse_msr(msr_edge(cost="1")), GraphError,
     "edge #0 field 'cost' must be a number, got '1'"),
    ("msr-edge-unknown-id", lambda: parse_msr(msr_edge(destId=99)), GraphError,
     "edge 7 -> 99 names unknown node id 99"),
    ("msr-nodes-not-list", lambda: parse_msr(msr(nodes=5)), GraphError,
     "msr graph 'msr' field 'nodes' must be a list, got 5"),
    ("msr-header-string", lambda: parse_msr(msr(maxFPGAs="2")), GraphError,
     "field 'maxFPGAs' must be an integer, got '2'"),
    ("msr-header-missing", lambda: parse_msr({"nodes": [], "edges": []}), GraphError,
     "missing required field(s): maxSizePerFPGA, maxFPGAs, maxCPUs"),
    ("msr-not-an-object", lambda: parse_msr([]), GraphError,
     "msr graph 'msr' must be a JSON object, got list"),
    ("msr-file-backward-string", from_file(msr({"isBackwardNode": "true"}), load_graph), GraphError,
     "msr graph 'g' node #0 field 'isBackwardNode' must be true, false, 0 or 1, got 'true'"),
    ("msr-unknown-name", lambda: load_graph("msr:nope"), GraphError,
     "no msr graph 'nope': not a file, and not one of"),
    ("msr-name-int", lambda: load_msr(5), GraphError,
     "an msr graph is named by a string or path, got 5"),
    # --- synthetic families
    ("family-unknown", lambda: generate("nope"), ConfigError,
     "unknown graph family 'nope'; known: chain"),
    ("family-n-below-min", lambda: generate("chain", n=1), ConfigError,
     "graph family 'chain' needs an integer n >= 2, got 1"),
    ("family-n-below-min-cifar10", lambda: generate("cifar10", n=22), ConfigError,
     "graph family 'cifar10' needs an integer n >= 23 with blocks=5, got 22"),
    ("family-n-below-min-ptb", lambda: generate("ptb", n=24), ConfigError,
     "needs an integer n >= 25 with cell_nodes=8, got 24"),
    ("family-n-below-min-nmt", lambda: generate("nmt", n=25), ConfigError,
     "needs an integer n >= 26 with layers=2, got 25"),
    ("family-n-below-min-options", lambda: generate("fork_join", n=20, stages=4), ConfigError,
     "graph family 'fork_join' needs an integer n >= 21 with branches=4, stages=4, got 20"),
    ("family-default-n-below-min", lambda: generate("fork_join", stages=30), ConfigError,
     "needs an integer n >= 151 with branches=4, stages=30, got 100 (its default n)"),
    ("family-n-bool", lambda: generate("chain", n=True), ConfigError,
     "needs an integer n >= 2, got True"),
    ("family-n-string", lambda: generate("chain", n="5"), ConfigError,
     "needs an integer n >= 2, got '5'"),
    ("family-seed-bool", lambda: generate("chain", seed=True), ConfigError,
     "seed must be a non-negative integer, got True"),
    ("family-seed-negative", lambda: generate("chain", seed=-1), ConfigError,
     "seed must be a non-negative integer, got -1"),
    ("family-option-bool", lambda: generate("fork_join", branches=True), ConfigError,
     "option 'branches' of graph family 'fork_join' must be an integer, got True"),
    ("family-option-float", lambda: generate("chain", batch=2.5), ConfigError,
     "option 'batch' of graph family 'chain' must be an integer, got 2.5"),
    ("family-option-string-number",
     lambda: generate("series_parallel", parallel_prob="0.5"),
     ConfigError,
     "option 'parallel_prob' of graph family 'series_parallel' must be a finite number, got '0.5'"),
    ("family-option-zero", lambda: generate("ptb", vocab=0), ConfigError,
     "option 'vocab' of graph family 'ptb' must be >= 1, got 0"),
    ("family-option-unknown", lambda: generate("chain", widht=3), ConfigError,
     "unknown option(s) 'widht' for graph family 'chain'; known: n, seed, batch"),
    ("family-count-bool", lambda: family("chain", count=True), ConfigError,
     "count must be a positive integer, got True"),
    ("register-family-default-n-string", lambda: register_family("x", default_n="5"), ConfigError,
     "graph family 'x': default_n must be an integer, got '5'"),
    ("register-family-min-n-string",
     lambda: register_family("x", default_n=5, min_n="2"),
     ConfigError, "graph family 'x': min_n must be an integer or a rule, got '2'"),
    ("register-family-min-above-default",
     lambda: register_family("x", default_n=4, min_n=5)(family_fn),
     ConfigError, "graph family 'x' needs 1 <= min_n <= default_n, got min_n=5, default_n=4"),
    ("register-family-rule-unknown-option",
     lambda: register_family("x", default_n=4, min_n=min_n_reading_depth)(family_fn),
     ConfigError,
     "the min_n rule of graph family 'x' reads unknown option(s) 'depth'; known: width"),
    # --- traversal orders
    ("order-seed-bool", lambda: traversal_order(G, "bfs", seed=True), ConfigError,
     "order seed must be an integer >= 0, got True"),
    ("order-seed-negative", lambda: traversal_order(G, "bfs", seed=-1), ConfigError,
     "order seed must be an integer >= 0, got -1"),
    ("order-seed-string", lambda: traversal_order(G, "bfs", seed="abc"), ConfigError,
     "order seed must be an integer >= 0, got 'abc'"),
    ("order-unknown", lambda: traversal_order(G, "nope"), ConfigError,
     "unknown traversal order 'nope'; known: alpha, bfs, "),
    ("order-not-a-graph", lambda: traversal_order(None, "bfs"), ConfigError,
     "traversal_order needs a CompGraph, got NoneType"),
    # --- passes: coarsen, contract, Coarsening, with_backward
    ("coarsen-max-nodes-bool", lambda: coarsen(G, True), ConfigError,
     "max_nodes must be a positive integer, got True"),
    ("coarsen-max-nodes-zero", lambda: coarsen(G, 0), ConfigError,
     "max_nodes must be a positive integer, got 0"),
    ("coarsen-max-nodes-string", lambda: coarsen(G, "abc"), ConfigError,
     "max_nodes must be a positive integer, got 'abc'"),
    ("coarsen-max-nodes-float", lambda: coarsen(G, 2.0), ConfigError,
     "max_nodes must be a positive integer, got 2.0"),
    ("coarsen-unknown-method", lambda: coarsen(G, 1, "nope"), ConfigError,
     "unknown coarsening method 'nope'; known: chains, groups, scope, topo"),
    ("coarsen-not-a-graph", lambda: coarsen(None, 1), ConfigError,
     "coarsen needs a CompGraph, got NoneType"),
    ("contract-labels-none", lambda: contract(G, None), GraphError,
     "labels must be a sequence of one label per node, got None"),
    ("contract-labels-string", lambda: contract(G, "ab"), GraphError,
     "labels must be a sequence of one label per node, got 'ab'"),
    ("contract-labels-length", lambda: contract(G, [0]), GraphError,
     "got 1 labels for the 2 nodes of 'g'"),
    ("contract-labels-unhashable", lambda: contract(G, [[1], [2]]), GraphError,
     "labels must be hashable, got [1]"),
    ("contract-not-a-graph", lambda: contract(None, [0]), ConfigError,
     "contract needs a CompGraph, got NoneType"),
    ("expand-floats", lambda: Coarsening.identity(G).expand([0.5, 1.5]), PlacementError,
     "placement must hold integer device indices, got dtype float64: [0.5, 1.5]"),
    ("expand-bools", lambda: Coarsening.identity(G).expand([True, False]), PlacementError,
     "placement must hold integer device indices, got dtype bool"),
    ("expand-wrong-length", lambda: Coarsening.identity(G).expand([0]), PlacementError,
     "placement has shape (1,); expected (2,)"),
    ("then-not-a-coarsening", lambda: Coarsening.identity(G).then(5), ConfigError,
     "then needs a Coarsening, got int"),
    ("then-wrong-size", lambda: Coarsening.identity(G).then(Coarsening.identity(G3)), GraphError,
     "cannot chain coarsenings: the second maps 3 nodes, but 'g' has 2"),
    ("identity-not-a-graph", lambda: Coarsening.identity(None), ConfigError,
     "Coarsening.identity needs a CompGraph, got NoneType"),
    ("between-members-string", lambda: Coarsening.between(G, coarse_with_members("ab")), GraphError,
     "coarse node 'ab' attrs['members'] must be a list of node names, got 'ab'"),
    ("between-not-a-graph", lambda: Coarsening.between(None, G), ConfigError,
     "Coarsening.between (original) needs a CompGraph, got NoneType"),
    ("backward-not-a-graph", lambda: with_backward(None), ConfigError,
     "with_backward needs a CompGraph, got NoneType"),
    ("backward-factor-bool", lambda: with_backward(G, factor=True), ConfigError,
     "backward factor must be a finite number >= 0, got True"),
    ("backward-factor-string", lambda: with_backward(G, factor="2"), ConfigError,
     "backward factor must be a finite number >= 0, got '2'"),
    ("backward-factor-negative", lambda: with_backward(G, factor=-1), ConfigError,
     "backward factor must be a finite number >= 0, got -1"),
    ("backward-factor-inf", lambda: with_backward(G, factor=math.inf), ConfigError,
     "backward factor must be a finite number >= 0, got inf"),
    ("backward-factor-numpy-nan", lambda: with_backward(G, factor=np.float64("nan")), ConfigError,
     "backward factor must be a finite number >= 0, got "),
    ("backward-twice", lambda: with_backward(with_backward(G)), GraphError,
     "graph 'g_training' already has backward nodes ('b/grad', ...)"),
    # --- zoo specs: refused on their options, before any import
    ("zoo-unknown-model", lambda: load_graph("zoo:alexnet"), ConfigError,
     "unknown zoo model 'alexnet'; known: "),
    ("zoo-unknown-variant", lambda: load_graph("zoo:resnet50?variant=nope"), ConfigError,
     "zoo model 'resnet50' has no variant 'nope'; known: resnet50, small"),
    ("zoo-unknown-field", lambda: load_graph(ZOO + "model=x"), ConfigError,
     "zoo model 'resnet50' has no option 'model'"),
    ("zoo-field-string", lambda: load_graph(ZOO + "batch=abc"), ConfigError,
     "zoo model 'resnet50' option 'batch' must be int, got 'abc'"),
    ("zoo-field-float", lambda: load_graph(ZOO + "batch=2.5"), ConfigError,
     "zoo model 'resnet50' option 'batch' must be int, got 2.5"),
    ("zoo-field-zero", lambda: load_graph(ZOO + "batch=0"), ConfigError,
     "zoo model 'resnet50' option 'batch' must be > 0, got 0"),
    ("zoo-training-int", lambda: load_graph(ZOO + "training=1"), ConfigError,
     "zoo option 'training' must be true or false, got 1"),
    ("zoo-cache-string", lambda: load_graph(ZOO + "cache=yes"), ConfigError,
     "zoo option 'cache' must be true or false, got 'yes'"),
    ("zoo-max-nodes-zero", lambda: load_graph(ZOO + "max_nodes=0"), ConfigError,
     "zoo option 'max_nodes' must be an integer >= 1, got 0"),
    ("zoo-max-nodes-bool", lambda: load_graph(ZOO + "max_nodes=true"), ConfigError,
     "zoo option 'max_nodes' must be an integer >= 1, got True"),
    ("zoo-max-nodes-training", lambda: load_graph(ZOO + "max_nodes=1&training=true"), ConfigError,
     "zoo option 'max_nodes' must be an integer >= 2, got 1"),
    ("zoo-unknown-coarsening", lambda: load_graph(ZOO + "coarsen=nope"), ConfigError,
     "zoo option 'coarsen': unknown coarsening method 'nope'"),
    ("zoo-unknown-granularity", lambda: load_graph(ZOO + "granularity=layer"), ConfigError,
     "zoo option 'granularity': unknown granularity 'layer'"),
    ("zoo-build-bad-device", lambda: build_model("resnet50", "small", device="nope"), ConfigError,
     "device must be a torch device, got 'nope'"),
    # --- torch import and profiling: refused before tracing
    ("torch-training-string", lambda: from_module(LINEAR, (X,), training="false"), ConfigError,
     "training must be True or False, got 'false'"),
    ("torch-name-int", lambda: from_module(LINEAR, (X,), name=3), ConfigError,
     "name must be a non-empty string or None, got 3"),
    ("torch-unknown-granularity",
     lambda: from_module(LINEAR, (X,), granularity="layer"),
     ConfigError, "unknown granularity 'layer'; known: module, op"),
    ("torch-not-a-module", lambda: from_module(len, (X,)), GraphError,
     "expected a torch.nn.Module, got builtin_function_or_method"),
    ("torch-inputs-dict", lambda: from_module(LINEAR, {"x": X}), GraphError,
     "example_inputs must be a tensor or a tuple of forward()'s positional arguments, got dict"),
    ("torch-flops-training-string", lambda: model_flops(LINEAR, (X,), training="yes"), ConfigError,
     "training must be True or False, got 'yes'"),
    ("profile-not-a-graph", lambda: profile(None, LINEAR, (X,)), ConfigError,
     "profile needs a CompGraph, got NoneType"),
    ("profile-kind-int", lambda: profile(G, LINEAR, (X,), kind=3), ConfigError,
     "kind must be a non-empty string or None, got 3"),
    ("profile-backward-string", lambda: profile(G, LINEAR, (X,), backward="no"), ConfigError,
     "backward must be True or False, got 'no'"),
    ("profile-repeats-zero", lambda: profile(G, LINEAR, (X,), repeats=0), ConfigError,
     "repeats must be an integer >= 1, got 0"),
    ("profile-warmup-float", lambda: profile(G, LINEAR, (X,), warmup=1.5), ConfigError,
     "warmup must be an integer >= 0, got 1.5"),
    ("profile-meta-device", lambda: profile(G, LINEAR, (X,), device="meta"), ConfigError,
     "cannot profile on the meta device"),
    ("profile-bad-device", lambda: profile(G, LINEAR, (X,), device="nope"), ConfigError,
     "not a torch device: 'nope'"),
]
# fmt: on


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """A private zoo cache, and a user graph source taking one option (``cost``)."""
    monkeypatch.setenv("PLACERL_CACHE", str(tmp_path))
    with GRAPH_SOURCES.scope():

        @register_graph_source("test_bad_inputs")
        def single(body: str, cost: float = 1.0) -> CompGraph:
            return CompGraph([{"name": body, "cost": cost}])

        yield


def test_case_ids_are_unique():
    ids = [case[0] for case in CASES]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize(
    ("call", "error", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_raises_a_named_error(call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call()
