"""TAP-style folding: find the repeated blocks of a model so that a search decides each once.

Deep models repeat one block (transformer layers, ResNet bottlenecks, Inception cells).
:func:`fold_repeats` groups nodes by their outermost numbered module scope (``layers.3``,
``layer2.1``: the names the PyTorch importer keeps in ``attrs['module']``) and keeps the
groups that are isomorphic copies of one another: the same op types, output shapes,
parameter counts and FLOPs, node for node in definition order, wired by the same internal
edges (the edges entering or leaving a copy may differ: the last block's output feeds the
head). A search then decides the
first copy of each block only, and :meth:`Folding.expand` gives every other copy the same
decisions, node for node (TAP, Shi et al. 2023: search once per unique subgraph).
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from placerl.errors import PlacementError
from placerl.graph.core import CompGraph, check_graph

__all__ = ["Folding", "fold_repeats"]

_NUMBERED = re.compile(r"^(.*?)(?:^|\.)(\d+)(?:\.|$)")


@dataclass(frozen=True, eq=False)
class Folding:
    """The repeated blocks of a graph.

    Attributes:
        graph: The folded graph (unchanged: folding only ties decisions).
        blocks: Each unique block's signature -> its copies (two or more), each a list of
            node indices in definition order; node ``j`` of every copy corresponds to node
            ``j`` of the first.
    """

    graph: CompGraph
    blocks: dict[str, list[list[int]]]

    @cached_property
    def representative(self) -> np.ndarray:
        """For each node, the node of a block's first copy whose decision it takes (itself
        outside blocks and in first copies)."""
        out = np.arange(self.graph.num_nodes)
        for copies in self.blocks.values():
            for copy in copies[1:]:
                out[copy] = copies[0]
        out.flags.writeable = False
        return out

    @property
    def num_decisions(self) -> int:
        """Nodes that decide: all but the later copies' nodes."""
        return int((self.representative == np.arange(self.graph.num_nodes)).sum())

    def expand(self, placement: Sequence[int] | np.ndarray) -> np.ndarray:
        """Copy the first copy's decisions onto every other copy (one entry per node; the
        later copies' entries are ignored)."""
        arr = np.asarray(placement)
        if arr.shape != (self.graph.num_nodes,):
            raise PlacementError(
                f"expected one decision per node of {self.graph.name!r} "
                f"({self.graph.num_nodes}), got shape {arr.shape}"
            )
        return arr[self.representative]


def _scope_key(module: str) -> tuple[str, int] | None:
    """``("layers", 3)`` for ``layers.3.attn.qkv``: the outermost numbered scope."""
    match = _NUMBERED.match(module)
    return None if match is None else (match.group(1), int(match.group(2)))


def _signature(graph: CompGraph, copy: list[int]) -> str:
    """Op types, output shapes, parameters, FLOPs and internal wiring of a copy, hashed."""
    position = {v: j for j, v in enumerate(copy)}
    a = graph.arrays
    nodes = [
        (n.op, n.backward, repr(n.attrs.get("shapes")), n.attrs.get("params"), n.attrs.get("flops"))
        for n in (graph.nodes[v] for v in copy)
    ]
    inside = np.isin(a.src, copy) & np.isin(a.dst, copy)
    edges = sorted(
        (position[int(a.src[e])], position[int(a.dst[e])], float(a.edge_bytes[e]))
        for e in np.flatnonzero(inside)
    )
    return hashlib.sha1(repr((nodes, edges)).encode()).hexdigest()[:12]


def fold_repeats(graph: CompGraph) -> Folding:
    """The repeated isomorphic blocks of ``graph``: two or more copies of two or more nodes
    (none when nodes carry no module scope).

    Raises:
        ConfigError: ``graph`` is not a CompGraph.
    """
    check_graph(graph, "fold_repeats")
    scopes: dict[tuple[str, int], list[int]] = defaultdict(list)
    for v, node in enumerate(graph.nodes):
        key = _scope_key(str(node.attrs.get("module", "")))
        if key is not None:
            scopes[key].append(v)
    by_signature: dict[str, list[list[int]]] = defaultdict(list)
    for (family, _), copy in sorted(scopes.items()):
        by_signature[f"{family or '<root>'}.*#{_signature(graph, copy)}"].append(copy)
    blocks = {
        sig: copies
        for sig, copies in by_signature.items()
        if len(copies) >= 2 and len(copies[0]) >= 2
    }
    return Folding(graph, blocks)
