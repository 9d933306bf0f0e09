"""PaSE's dynamic program (Elango 2021): the exact cheapest strategy, vertex by vertex.

The strategy cost is a sum of one term per variable and one per pair of connected
variables (:class:`~placerl.sim.strategy.StrategyCost`), so it is minimised exactly by
eliminating the variables one after another in any order. Visiting vertex ``v`` builds a
table over its *dependent set*, the visited variables that still have unvisited neighbours
plus ``v`` itself: the cheapest cost of everything visited so far for each of their
configurations. A variable whose neighbours are all visited is then minimised out of the
table (its best configuration kept for each configuration of the rest). The table has one
axis per dependent variable, so the order decides the time and memory: PaSE's order visits
next the vertex that leaves the fewest variables dependent, while a breadth-first order
keeps whole layers of a wide network dependent at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from placerl.errors import ConfigError, PlacementError
from placerl.graph.folding import Folding, fold_repeats
from placerl.graph.orders import ORDERS, traversal_order
from placerl.sim.strategy import StrategyCost

from .api import Solution, register_placer
from .problem import Problem

#: Table entries (float64) a solve may hold at once by default: 400 MB.
MAX_TABLE = 50_000_000


@dataclass(frozen=True, eq=False)
class Tables:
    """What the dynamic program minimises: a term per variable and per connected pair.

    Attributes:
        unary: Per variable, seconds of each of its configurations.
        pairs: ``(i, j) -> matrix[c_i, c_j]`` for connected variables ``i < j``.
    """

    unary: list[np.ndarray]
    pairs: dict[tuple[int, int], np.ndarray]

    @property
    def counts(self) -> list[int]:
        """Configurations per variable."""
        return [len(u) for u in self.unary]

    @classmethod
    def of(cls, cost: StrategyCost) -> Tables:
        """The terms of a strategy cost model."""
        return cls([cost.unary(i) for i in range(cost.space.num_variables)], dict(cost.pairs))

    def folded(self, into: np.ndarray) -> Tables:
        """The terms with variable ``i`` tied to variable ``into[i]`` (same configuration):
        each tied variable's terms move onto its representative, renumbered in order."""
        reps, index = np.unique(into, return_inverse=True)
        unary = [np.zeros(self.counts[r]) for r in reps]
        pairs: dict[tuple[int, int], np.ndarray] = {}
        for i, u in enumerate(self.unary):
            unary[index[i]] = unary[index[i]] + u
        for (i, j), matrix in self.pairs.items():
            a, b = int(index[i]), int(index[j])
            if a == b:
                unary[a] = unary[a] + np.diagonal(matrix)
                continue
            key, m = ((a, b), matrix) if a < b else ((b, a), matrix.T)
            pairs[key] = pairs[key] + m if key in pairs else m
        return Tables(unary, pairs)


@dataclass(frozen=True, eq=False)
class EliminationPlan:
    """What an order costs the dynamic program, known before solving.

    Attributes:
        order: Variables in visiting order.
        dependent: Per step, the variables its table spans (the dependent set).
        table_sizes: Per step, the table's entries (floats: a wide order's overflow int64).
    """

    order: np.ndarray
    dependent: list[tuple[int, ...]] = field(repr=False)
    table_sizes: np.ndarray = field(repr=False)

    @property
    def largest_dependent_set(self) -> int:
        """Size of the largest dependent set."""
        return max((len(d) for d in self.dependent), default=0)

    @property
    def max_table(self) -> int:
        """Entries of the largest table."""
        return int(self.table_sizes.max(initial=0))

    @property
    def total_table(self) -> int:
        """Entries of all tables together."""
        return int(self.table_sizes.sum())


def neighbours_of(tables: Tables) -> list[set[int]]:
    """Each variable's neighbours: the variables it shares an edge term with."""
    out: list[set[int]] = [set() for _ in tables.unary]
    for i, j in tables.pairs:
        out[i].add(j)
        out[j].add(i)
    return out


def pase_order(neighbours: list[set[int]], counts: np.ndarray) -> np.ndarray:
    """PaSE's order: repeatedly visit the vertex that leaves the smallest dependent set,
    measured in table entries (ties: the lower index)."""
    n = len(neighbours)
    remaining = np.array([len(x) for x in neighbours])  # unvisited neighbours
    visited = np.zeros(n, dtype=bool)
    frontier: set[int] = set()
    order = []
    for _ in range(n):
        candidates = {w for u in frontier for w in neighbours[u] if not visited[w]}
        pool = candidates or np.flatnonzero(~visited).tolist()
        v = min(pool, key=lambda w: (_entries_after(w, frontier, neighbours, remaining, counts), w))
        order.append(v)
        visited[v] = True
        for u in neighbours[v]:
            remaining[u] -= 1
        frontier = {u for u in frontier | {v} if remaining[u] > 0}
    return np.array(order, dtype=np.int64)


def _entries_after(
    v: int,
    frontier: set[int],
    neighbours: list[set[int]],
    remaining: np.ndarray,
    counts: np.ndarray,
) -> int:
    """Table entries of the dependent set left after visiting ``v``."""
    left = [u for u in frontier if remaining[u] > (u in neighbours[v])]
    if remaining[v] > 0:
        left.append(v)
    return math.prod(int(counts[u]) for u in left)


def variable_order(cost: StrategyCost, order: str, seed: int = 0) -> np.ndarray:
    """The variables in ``order``: ``"pase"`` or a registered traversal order of the graph
    (each variable where its first node comes)."""
    if order == "pase":
        tables = Tables.of(cost)
        return pase_order(neighbours_of(tables), np.array(tables.counts))
    if order not in ORDERS:
        raise ConfigError(f"unknown order {order!r}; known: pase, {', '.join(ORDERS)}")
    nodes = traversal_order(cost.space.graph, order, seed=seed)
    return np.array(list(dict.fromkeys(cost.space.variable_of[nodes].tolist())), dtype=np.int64)


def elimination_plan(tables: Tables, order: np.ndarray) -> EliminationPlan:
    """Dependent sets and table sizes of eliminating in ``order`` (nothing is solved)."""
    neighbours = neighbours_of(tables)
    counts = tables.counts
    remaining = np.array([len(x) for x in neighbours])
    frontier: list[int] = []
    dependent, sizes = [], []
    for v in order:
        span = (*frontier, int(v))
        dependent.append(span)
        sizes.append(math.prod(counts[u] for u in span))
        for u in neighbours[v]:
            remaining[u] -= 1
        frontier = [u for u in span if remaining[u] > 0]
    return EliminationPlan(np.asarray(order), dependent, np.array(sizes, dtype=np.float64))


def _check_order(order: np.ndarray, n: int) -> None:
    if sorted(order.tolist()) != list(range(n)):
        raise ConfigError(f"an elimination order must visit each of the {n} variables once")


def solve_strategy(
    tables: Tables, order: np.ndarray, *, max_table: int = MAX_TABLE
) -> tuple[np.ndarray, float]:
    """The exact cheapest configuration per variable, eliminating in ``order``.

    Returns:
        ``(configuration index per variable, its cost in seconds)``.

    Raises:
        PlacementError: A table would exceed ``max_table`` entries (names the step, its
            dependent set and the size): the order is too wide for this graph.
    """
    order = np.asarray(order, dtype=np.int64)
    _check_order(order, len(tables.unary))
    plan = elimination_plan(tables, order)
    if plan.max_table > max_table:
        step = int(np.argmax(plan.table_sizes))
        raise PlacementError(
            f"the dynamic program needs a table of {plan.max_table:.3g} entries at step {step} "
            f"(a dependent set of {len(plan.dependent[step])} variables), over max_table="
            f"{max_table:.3g}: use a narrower order (order='pase') or fold repeats"
        )
    neighbours = neighbours_of(tables)
    remaining = np.array([len(x) for x in neighbours])
    table, axes = np.zeros(()), []
    eliminated: list[tuple[int, list[int], np.ndarray]] = []
    for v in order.tolist():
        table, axes = table[..., None] + tables.unary[v], [*axes, v]
        for u in neighbours[v]:
            if u in axes[:-1]:
                table = table + _pair_on(tables, u, v, axes)
            remaining[u] -= 1
        for w in [u for u in axes if remaining[u] == 0]:
            at = axes.index(w)
            best = np.argmin(table, axis=at)
            table = np.take_along_axis(table, np.expand_dims(best, at), at).squeeze(at)
            axes = axes[:at] + axes[at + 1 :]
            eliminated.append((w, list(axes), best))
    per_variable = np.zeros(len(tables.unary), dtype=np.int64)
    for w, rest, best in reversed(eliminated):
        per_variable[w] = best[tuple(per_variable[u] for u in rest)]
    return per_variable, float(table)


def _pair_on(tables: Tables, u: int, v: int, axes: list[int]) -> np.ndarray:
    """The edge term of ``u`` and ``v`` shaped to broadcast over ``axes``."""
    matrix = tables.pairs[(u, v)] if u < v else tables.pairs[(v, u)].T
    shape = [1] * len(axes)
    shape[axes.index(u)], shape[axes.index(v)] = matrix.shape
    if axes.index(u) > axes.index(v):
        matrix = matrix.T
    return matrix.reshape(shape)


def _strategy_cost(problem: Problem) -> StrategyCost:
    prepared = problem.model.prepared
    if not isinstance(prepared, StrategyCost):
        raise ConfigError(f"this placer needs objective='strategy', got {problem.objective!r}")
    return prepared


@register_placer("pase_dp", optimizes="strategy", needs_solvable=False, decides="configuration")
def pase_dp(
    problem: Problem, *, order: str = "pase", max_table: int = MAX_TABLE, fold: bool = False
) -> Solution:
    """PaSE's dynamic program: the exact cheapest parallelization strategy.

    Source: V. Elango, "Pase: Parallelization Strategies for Efficient DNN Training", IPDPS
    2021 (the dynamic program over vertex configurations and its vertex order), solved here
    as variable elimination over the strategy cost's node and edge terms; ``fold``: TAP (Shi
    et al. 2023), one decision per repeated block.

    Complexity: O(sum over steps of prod(configurations of the dependent set)) time and the
    largest such table in memory (:class:`EliminationPlan` computes both before solving).

    Options:
        order: ``pase`` (PaSE's vertex order) or any registered traversal order.
        max_table: Most table entries held at once; wider orders raise instead.
        fold: Decide each repeated block (:func:`~placerl.graph.passes.fold_repeats`) once
            and give its copies the same configurations: exact among such strategies.

    The DP minimises time and ignores memory: a strategy over some device's memory is
    returned infeasible (with a warning from :func:`solve`) and not claimed optimal; its
    value stays a lower bound.
    """
    cost = _strategy_cost(problem)
    if isinstance(max_table, bool) or not isinstance(max_table, int) or max_table < 1:
        raise ConfigError(f"max_table must be a positive integer, got {max_table!r}")
    if not isinstance(fold, bool):
        raise ConfigError(f"fold must be True or False, got {fold!r}")
    if fold and order != "pase":
        raise ConfigError("fold=True solves in PaSE's order (order='pase')")
    tables, into = Tables.of(cost), np.arange(cost.space.num_variables)
    if fold:
        into = tied_variables(cost, fold_repeats(cost.space.graph))
        tables = tables.folded(into)
    if order == "pase":
        variables = pase_order(neighbours_of(tables), np.array(tables.counts))
    else:
        variables = variable_order(cost, order)
    plan = elimination_plan(tables, variables)
    solved, value = solve_strategy(tables, variables, max_table=max_table)
    per_variable = solved[np.unique(into, return_inverse=True)[1]]
    strategy = cost.space.expand(per_variable)
    # The DP minimises time and ignores memory: a strategy over memory is not claimed optimal.
    feasible = problem.model.evaluate(strategy, check=False).feasible
    info = {
        "order": order,
        "largest_dependent_set": plan.largest_dependent_set,
        "max_table": plan.max_table,
        "total_table": plan.total_table,
        "variables": len(tables.unary),
    }
    return Solution(
        strategy, lower_bound=None if fold else value, optimal=feasible and not fold, info=info
    )


def tied_variables(cost: StrategyCost, folding: Folding) -> np.ndarray:
    """For each variable, the variable it takes its configuration from under ``folding``
    (itself unless its leader sits in a later copy of a block with the same choices)."""
    space = cost.space
    rep_node = folding.representative[space.variables]
    into = space.variable_of[rep_node]
    same = np.array([len(space.configs[i]) == len(space.configs[j]) for i, j in enumerate(into)])
    return np.where(same, into, np.arange(space.num_variables))
