"""The decision space of a parallelization strategy: which nodes decide, and their choices.

Every forward node with an :class:`~placerl.sim.strategy.rules.OpRule` is a *variable*: it
picks one configuration, a split factor per iteration dim. Nodes without a rule follow their
first producer (transitively), backward nodes follow their forward node, and followers
without any producer (constants) are variables of one configuration: unsplit. A strategy is
one configuration index per node, equal within each variable.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from placerl.errors import ConfigError, GraphError, PlacementError
from placerl.graph import CompGraph
from placerl.graph.orders import traversal_order
from placerl.sim.strategy.rules import DIMS, OpRule, rule_of


def divisors(p: int) -> list[int]:
    """The divisors of ``p``, increasing."""
    return [d for d in range(1, p + 1) if p % d == 0]


def configurations(dims: dict[str, int], p: int) -> list[dict[str, int]]:
    """Every split of ``dims`` over ``p`` devices: one factor per dim dividing both the dim's
    size and ``p``, whose product divides ``p``; by number of parts, then lexicographically
    (index 0 is the unsplit configuration)."""
    names = [d for d in DIMS if d in dims]
    options = [[f for f in divisors(p) if dims[d] % f == 0] for d in names]
    found = [c for c in itertools.product(*options) if p % math.prod(c) == 0]
    found.sort(key=lambda c: (math.prod(c), c))
    return [dict(zip(names, c, strict=True)) for c in found]


def _shapes(graph: CompGraph, v: int) -> list[list[int]]:
    shapes = graph.nodes[v].attrs.get("shapes")
    if not shapes:
        raise GraphError(
            f"node {graph.names[v]!r} has no recorded shape (attrs['shapes']); the strategy "
            "objective needs the op shapes the PyTorch importer records (zoo graphs or "
            "from_module, not coarsened: merged nodes have no single shape)"
        )
    return shapes


@dataclass(frozen=True, eq=False)
class StrategySpace:
    """Variables, their configurations and every node's variable, for a graph and ``p``.

    Args:
        graph: A graph from the PyTorch importer (op shapes in ``attrs['shapes']``), forward
            or training (backward nodes follow their forward node).
        p: Number of devices.

    Raises:
        ConfigError: ``p`` is not a positive integer.
        GraphError: A node has no recorded shape, or an op's shapes do not fit its family.
    """

    graph: CompGraph
    p: int

    def __post_init__(self) -> None:
        p = self.p
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 1:
            raise ConfigError(f"the number of devices p must be a positive integer, got {p!r}")
        for v in np.flatnonzero(self.forward):
            _shapes(self.graph, int(v))
        self.leader  # noqa: B018  (analyse now: bad graphs fail at construction)
        self._check_coverage()

    @cached_property
    def forward(self) -> np.ndarray:
        """Whether each node is a forward node."""
        return ~self.graph.arrays.backward

    @cached_property
    def operands(self) -> list[list[int]]:
        """Each node's producers in operand order: the order of its incoming edges, which the
        PyTorch importer writes in argument order."""
        a = self.graph.arrays
        edges = [
            np.sort(a.pred_edge[a.pred_ptr[v] : a.pred_ptr[v + 1]]) for v in range(a.num_nodes)
        ]
        return [a.src[e].tolist() for e in edges]

    @cached_property
    def leader(self) -> np.ndarray:
        """The variable (a node index) each node belongs to."""
        g = self.graph
        leader = np.full(g.num_nodes, -1, dtype=np.int64)
        twin = {}
        for v in range(g.num_nodes):
            if not self.forward[v]:
                forward = g.nodes[v].attrs.get("forward")
                if forward not in g.names:
                    raise GraphError(
                        f"backward node {g.names[v]!r} names no forward node of the graph "
                        f"(attrs['forward'] = {forward!r}); build training graphs with "
                        "with_backward"
                    )
                twin[v] = g.index(forward)
        topo = traversal_order(g, "topo")
        for v in topo[self.forward[topo]]:  # producers before consumers
            rule = rule_of(g.nodes[v].op)
            producers = self.operands[v]
            if rule is None and producers:
                leader[v] = leader[producers[0]]
            else:
                leader[v] = v
        for v, f in twin.items():
            leader[v] = leader[f]
        return leader

    def _check_coverage(self) -> None:
        """Refuse graphs whose FLOPs mostly sit in ops without a rule (module-granularity
        graphs name ops by class: ``Linear``, ``Conv2d``)."""
        g = self.graph
        flops = np.array([float(n.attrs.get("flops", 0) or 0) for n in g.nodes]) * self.forward
        ruled = np.array([rule_of(n.op) is not None for n in g.nodes])
        if flops.sum() > 0 and flops[ruled].sum() < 0.5 * flops.sum():
            ops = sorted({g.nodes[v].op for v in np.flatnonzero(~ruled & (flops > 0))})
            raise GraphError(
                f"the strategy objective has split rules for ops holding only "
                f"{flops[ruled].sum() / flops.sum():.0%} of {g.name!r}'s FLOPs; ops without a "
                f"rule: {', '.join(ops[:8])} (import with granularity='op', or register_op_rule)"
            )

    @cached_property
    def variables(self) -> np.ndarray:
        """The variables' node indices, increasing."""
        return np.unique(self.leader)

    @cached_property
    def variable_of(self) -> np.ndarray:
        """Position in :attr:`variables` of each node's variable."""
        return np.searchsorted(self.variables, self.leader)

    @cached_property
    def rules(self) -> list[OpRule | None]:
        """Each variable's rule (``None``: a constant, unsplit)."""
        return [rule_of(self.graph.nodes[v].op) for v in self.variables]

    @cached_property
    def dims(self) -> list[dict[str, int]]:
        """Each variable's iteration dims and their sizes."""
        out = []
        for v, rule in zip(self.variables, self.rules, strict=True):
            if rule is None:
                out.append({})
                continue
            shapes = _shapes(self.graph, v)
            operands = [_shapes(self.graph, u)[0] for u in self.operands[v]]
            try:
                out.append(rule.dims(shapes[0], operands))
            except (ValueError, IndexError) as err:
                raise GraphError(
                    f"node {self.graph.names[v]!r} ({rule.name}): its shapes {shapes} do not "
                    f"fit the family: {err}"
                ) from None
        return out

    @cached_property
    def configs(self) -> list[list[dict[str, int]]]:
        """Each variable's configurations (index 0: unsplit)."""
        return [configurations(d, self.p) for d in self.dims]

    @cached_property
    def choices(self) -> np.ndarray:
        """Number of configurations of each node (its variable's)."""
        counts = np.array([len(c) for c in self.configs], dtype=np.int64)
        return counts[self.variable_of]

    @property
    def num_variables(self) -> int:
        """Number of variables."""
        return len(self.variables)

    def check(self, strategy: object) -> np.ndarray:
        """Validate a strategy (a configuration index per node) and return it as ``int64``.

        Raises:
            PlacementError: Wrong length, a non-integer entry, an index outside the node's
                configurations, or a follower whose index differs from its variable's.
        """
        arr = np.asarray(strategy)
        n = self.graph.num_nodes
        if arr.ndim != 1 or arr.shape[0] != n:
            raise PlacementError(
                f"strategy has shape {arr.shape}; expected ({n},): one configuration index per "
                f"node of {self.graph.name!r}"
            )
        if arr.dtype.kind not in "iu" and not (
            arr.dtype.kind == "f" and np.all(arr == np.round(arr))
        ):
            raise PlacementError(f"a strategy holds integer configuration indices, got {arr.dtype}")
        arr = arr.astype(np.int64)
        bad = np.flatnonzero((arr < 0) | (arr >= self.choices))
        if bad.size:
            v = int(bad[0])
            raise PlacementError(
                f"configuration {arr[v]} is outside node {self.graph.names[v]!r}'s valid set "
                f"0..{self.choices[v] - 1} ({self.describe(v)})"
            )
        bad = np.flatnonzero(arr != arr[self.leader])
        if bad.size:
            v = int(bad[0])
            raise PlacementError(
                f"node {self.graph.names[v]!r} follows {self.graph.names[self.leader[v]]!r} and "
                f"must take its configuration {arr[self.leader[v]]}, got {arr[v]}"
            )
        return arr

    def expand(self, per_variable: object) -> np.ndarray:
        """A strategy from one configuration index per variable (in :attr:`variables` order)."""
        arr = np.asarray(per_variable, dtype=np.int64)
        if arr.shape != (self.num_variables,):
            raise PlacementError(
                f"expected {self.num_variables} configuration indices, one per variable, got "
                f"shape {arr.shape}"
            )
        return self.check(arr[self.variable_of])

    def config(self, v: int, index: int) -> dict[str, int]:
        """The configuration ``index`` of node ``v`` as ``{dim: factor}``."""
        return self.configs[self.variable_of[v]][index]

    def describe(self, v: int) -> str:
        """Node ``v``'s family and dims, for messages."""
        i = self.variable_of[v]
        rule = self.rules[i]
        family = "constant" if rule is None else rule.name
        return f"{family} over {self.dims[i] or 'nothing'} with p={self.p}"
