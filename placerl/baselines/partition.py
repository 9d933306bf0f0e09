"""``min_cut``: a balanced minimum cut into one part per device, by recursive bisection.

The graph of colocation units (undirected; an edge weighs its mean transfer time, a unit its
mean duration) is bisected recursively over halves of the device list. Each bisection starts
from a topological split at the target share of work, is refined by Kernighan-Lin (networkx),
then rebalanced: units with the best cut gain move off the heavier side until each side is
within ``imbalance`` of its share, and off a side whose devices cannot hold its memory. A last
pass moves any unit its device cannot run or hold to the least loaded device that can.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from . import _checks
from .api import register_placer
from .problem import Problem


@register_placer("min_cut")
def min_cut(
    problem: Problem, *, imbalance: float = 0.05, max_iter: int = 10, seed: int = 0
) -> np.ndarray:
    """Balanced minimum-cut partition into one part per device (recursive Kernighan-Lin).

    Devices get shares of the work proportional to their throughput (``1 / W_d``, ``W_d`` the
    graph's total time on device ``d``) under their memory limits.

    Source: B. W. Kernighan, S. Lin, "An Efficient Heuristic Procedure for Partitioning
    Graphs", Bell System Technical Journal 49(2), 1970 (networkx's implementation), applied
    by recursive bisection.
    Complexity: O(log D * max_iter * V^2 log V) for the KL passes (networkx), O(V^2) for the
    rebalancing.

    Args:
        problem: The problem.
        imbalance: Allowed relative excess of a side's work over its share.
        max_iter: Kernighan-Lin passes per bisection.
        seed: Seed of networkx's Kernighan-Lin.
    """
    imbalance = _checks.positive_float("min_cut", "imbalance", imbalance, allow_inf=False)
    max_iter = _checks.positive_int("min_cut", "max_iter", max_iter)
    seed = _checks.seed("min_cut", seed)
    graph = _unit_graph(problem)
    order = _unit_topological_order(problem)
    device_of_unit = np.zeros(len(problem.units), dtype=np.int64)
    bisector = _Bisector(problem, graph, imbalance, max_iter, seed)
    bisector.split(order, np.arange(problem.num_devices), device_of_unit)
    _repair(problem, device_of_unit)
    return device_of_unit[problem.units.of_node]


def _unit_graph(problem: Problem) -> nx.Graph:
    units, a = problem.units, problem.graph.arrays
    g = nx.Graph()
    work = np.bincount(units.of_node, weights=problem.mean_duration, minlength=len(units))
    for u in range(len(units)):
        g.add_node(u, work=float(work[u]), memory=float(units.memory[u]))
    su, du = units.of_node[a.src], units.of_node[a.dst]
    for u, v, t in zip(su.tolist(), du.tolist(), problem.mean_edge_time.tolist(), strict=True):
        if u != v:
            previous = g.get_edge_data(u, v, {"weight": 0.0})["weight"]
            g.add_edge(u, v, weight=previous + t)
    return g


def _unit_topological_order(problem: Problem) -> list[int]:
    seen: dict[int, None] = {}
    for v in problem.topo_order:
        seen.setdefault(int(problem.units.of_node[v]), None)
    return list(seen)


def _throughput(problem: Problem) -> np.ndarray:
    """Each device's share weight: 1 / (time of the whole graph there), counting nodes it
    cannot run at their mean duration."""
    durations = np.where(
        np.isfinite(problem.durations), problem.durations, problem.mean_duration[:, None]
    )
    return 1.0 / np.maximum(durations.sum(axis=0), 1e-300)


class _Bisector:
    """Recursive bisection of the unit graph over halves of the device list."""

    def __init__(
        self, problem: Problem, graph: nx.Graph, imbalance: float, max_iter: int, seed: int
    ) -> None:
        self.problem, self.graph = problem, graph
        self.imbalance, self.max_iter, self.seed = imbalance, max_iter, seed
        self.throughput = _throughput(problem)

    def split(self, units: list[int], devices: np.ndarray, out: np.ndarray) -> None:
        """Assign ``units`` (in topological order) to ``devices`` by recursive bisection."""
        if len(devices) == 1 or not units:
            out[units] = devices[0]
            return
        left, right = devices[: len(devices) // 2], devices[len(devices) // 2 :]
        share = self.throughput[left].sum() / self.throughput[devices].sum()
        side_a, side_b = self._bisect(units, share, left, right)
        self.split([u for u in units if u in side_a], left, out)
        self.split([u for u in units if u in side_b], right, out)

    def _bisect(self, units, share, left, right):
        """Topological split at ``share`` of the work, KL refinement, then rebalancing."""
        work = {u: self.graph.nodes[u]["work"] for u in units}
        total = sum(work.values())
        side_a, acc = set(), 0.0
        for u in units:  # a topological prefix at the target share
            if acc >= share * total:
                break
            side_a.add(u)
            acc += work[u]
        side_b = set(units) - side_a
        sub = self.graph.subgraph(units)
        if side_a and side_b and sub.number_of_edges():
            side_a, side_b = nx.community.kernighan_lin_bisection(
                sub, (side_a, side_b), max_iter=self.max_iter, weight="weight", seed=self.seed
            )
            side_a, side_b = set(side_a), set(side_b)
        targets = (share * total, (1 - share) * total)
        memory = (self.problem.capacity[left].sum(), self.problem.capacity[right].sum())
        self._rebalance(sub, [side_a, side_b], targets, memory)
        return side_a, side_b

    def _rebalance(self, sub, sides, targets, memory):
        """Move units by best cut gain off a side over its work share or its memory."""
        g = self.graph
        for _ in range(len(sub)):
            load = [sum(g.nodes[u]["work"] for u in s) for s in sides]
            used = [sum(g.nodes[u]["memory"] for u in s) for s in sides]
            heavy = next((i for i in (0, 1) if used[i] > memory[i]), None)
            key = "memory" if heavy is not None else "work"
            if heavy is None:
                over = [load[i] - targets[i] * (1 + self.imbalance) for i in (0, 1)]
                heavy = int(np.argmax(over)) if max(over) > 0 else None
            if heavy is None:
                return
            excess = (used if key == "memory" else load)[heavy] - (
                memory[heavy] if key == "memory" else targets[heavy]
            )
            limit = np.inf if key == "memory" else 2 * excess  # never overshoot the work share
            movable = [u for u in sides[heavy] if 0 < g.nodes[u][key] <= limit]
            if not movable:
                return
            best = max(movable, key=lambda u: (_gain(sub, u, sides[heavy]), -u))
            sides[heavy].discard(best)
            sides[1 - heavy].add(best)


def _gain(graph: nx.Graph, u: int, own_side: set[int]) -> float:
    """Cut weight saved by moving ``u`` out of ``own_side``."""
    total = 0.0
    for v, data in graph[u].items():
        total += -data["weight"] if v in own_side else data["weight"]
    return total


def _repair(problem: Problem, device_of_unit: np.ndarray) -> None:
    """Move units their device cannot run or hold to the least loaded device that can."""
    units, capacity = problem.units, problem.capacity
    used = np.bincount(device_of_unit, weights=units.memory, minlength=problem.num_devices)
    work = np.where(np.isfinite(units.durations), units.durations, 0.0)
    load = np.zeros(problem.num_devices)
    np.add.at(load, device_of_unit, work[np.arange(len(units)), device_of_unit])
    for u in np.argsort(-units.memory, kind="stable"):
        d = device_of_unit[u]
        if np.isfinite(units.durations[u, d]) and used[d] <= capacity[d]:
            continue
        fits = np.isfinite(units.durations[u]) & (used + units.memory[u] <= capacity)
        fits[d] = False
        if not fits.any():
            continue  # reported infeasible by the simulator
        target = int(np.flatnonzero(fits)[np.argmin(load[fits])])
        used[d] -= units.memory[u]
        used[target] += units.memory[u]
        load[d] -= work[u, d]
        load[target] += work[u, target]
        device_of_unit[u] = target
