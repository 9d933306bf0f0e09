"""What every placer reads: the graph, the cluster, the objective and what follows from them.

:class:`Problem` bundles a graph, a cluster and an objective with the derived arrays placers
share (durations per device, colocation units, a topological order, transfer times).
:class:`Assignment` is a placement under construction for the greedy placers: colocated nodes
move together and memory is reserved per unit. :func:`check_solvable` rejects problems no
placement can solve, before any placer runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from placerl.cluster import Cluster
from placerl.errors import PlacementError
from placerl.graph import CompGraph
from placerl.graph.orders import traversal_order
from placerl.sim import CostModel


@dataclass(frozen=True, eq=False)
class Units:
    """Colocation units: each group is one unit, each ungrouped node its own.

    Attributes:
        of_node: Unit index of each node; units are numbered by their first node.
        members: Node indices of each unit, increasing.
        memory: Resident bytes of each unit.
        durations: Seconds of each unit on each device, shape ``(units, devices)``.
    """

    of_node: np.ndarray
    members: tuple[np.ndarray, ...]
    memory: np.ndarray
    durations: np.ndarray

    def __len__(self) -> int:
        return len(self.members)

    @classmethod
    def of(cls, graph: CompGraph, durations: np.ndarray) -> Units:
        """The units of ``graph`` given its ``(nodes, devices)`` duration matrix."""
        a = graph.arrays
        key = np.where(a.group >= 0, a.group, -1 - np.arange(a.num_nodes))
        _, first, of_node = np.unique(key, return_index=True, return_inverse=True)
        rank = np.argsort(np.argsort(first))  # number units by their first node
        of_node = rank[of_node]
        count = len(first)
        # One stable sort, not a scan of every node per unit (quadratic on 100k nodes).
        by_unit = np.argsort(of_node, kind="stable")
        bounds = np.cumsum(np.bincount(of_node, minlength=count))[:-1]
        members = tuple(np.split(by_unit, bounds))
        unit_durations = np.zeros((count, durations.shape[1]))
        np.add.at(unit_durations, of_node, durations)
        memory = np.bincount(of_node, weights=a.mem_bytes, minlength=count)
        return cls(of_node, members, memory, unit_durations)


@dataclass(frozen=True, eq=False)
class Problem:
    """A graph to place on a cluster under an objective, with shared derived data.

    Args:
        graph: The computation graph.
        cluster: The devices.
        objective: A registered objective of :mod:`placerl.sim` (``step_time``, ``pipeline``).
    """

    graph: CompGraph
    cluster: Cluster
    objective: str = "step_time"

    @cached_property
    def model(self) -> CostModel:
        """The cost model that scores placements."""
        return CostModel(self.graph, self.cluster, self.objective)

    @property
    def num_nodes(self) -> int:
        """Number of nodes."""
        return self.graph.num_nodes

    @property
    def num_devices(self) -> int:
        """Number of devices."""
        return self.cluster.num_devices

    @property
    def durations(self) -> np.ndarray:
        """Seconds of each node on each device, shape ``(nodes, devices)``; ``inf`` = cannot run."""
        return self.model.durations

    @cached_property
    def capacity(self) -> np.ndarray:
        """Memory bytes of each device."""
        return self.cluster.memory

    @cached_property
    def units(self) -> Units:
        """Colocation units (groups and single nodes)."""
        return Units.of(self.graph, self.durations)

    @cached_property
    def topo_order(self) -> np.ndarray:
        """Kahn's topological order, ties broken by node index."""
        return traversal_order(self.graph, "topo")

    @cached_property
    def mean_duration(self) -> np.ndarray:
        """Mean duration of each node over the devices it can run on."""
        finite = np.isfinite(self.durations)
        total = np.where(finite, self.durations, 0.0).sum(axis=1)
        return total / np.maximum(finite.sum(axis=1), 1)

    def edge_times(self, src: int, dst: int) -> np.ndarray:
        """Seconds to move each edge's data from device ``src`` to ``dst`` (0 when equal)."""
        a = self.graph.arrays
        if src == dst:
            return np.zeros(a.num_edges)
        c = self.cluster
        derived = c.latency[src, dst] + a.edge_bytes / c.bandwidth[src, dst]
        return np.where(np.isnan(a.edge_time), derived, a.edge_time)

    @cached_property
    def mean_edge_time(self) -> np.ndarray:
        """Transfer time of each edge averaged over ordered pairs of distinct devices."""
        d = self.num_devices
        if d == 1:
            return np.zeros(self.graph.num_edges)
        pairs = [(s, t) for s in range(d) for t in range(d) if s != t]
        # summed pair by pair, in the order np.mean over a (pairs, edges) stack adds them
        # (the same bits), without the stack: it was d * (d - 1) * edges floats, 1.6 GB on 32
        # devices and 200k edges, twice (the list and the array np.mean makes of it)
        total = self.edge_times(*pairs[0]).astype(np.float64)
        for s, t in pairs[1:]:
            total += self.edge_times(s, t)
        return total / len(pairs)


def check_solvable(problem: Problem) -> None:
    """Reject a problem that no placement can solve, naming the reason.

    Raises:
        PlacementError: A node runs on no device, a colocation unit fits on no device (kind or
            memory), or the graph's resident memory exceeds the whole cluster's.
    """
    graph, units, capacity = problem.graph, problem.units, problem.capacity
    runnable = np.isfinite(problem.durations).any(axis=1)
    if not runnable.all():
        name = graph.names[int(np.flatnonzero(~runnable)[0])]
        raise PlacementError(f"node {name!r} cannot run on any device of the cluster")
    for u, members in enumerate(units.members):
        where = np.isfinite(units.durations[u]) & (units.memory[u] <= capacity)
        if not where.any():
            what = _describe_unit(graph, members)
            raise PlacementError(
                f"{what} fits on no device: it needs {units.memory[u]:.6g} bytes on a device "
                "kind that can run all its nodes"
            )
    total, available = float(units.memory.sum()), float(capacity.sum())
    if total > available:
        raise PlacementError(
            f"graph {graph.name!r} needs {total:.6g} bytes of resident memory; the cluster has "
            f"{available:.6g} in all"
        )


def _describe_unit(graph: CompGraph, members: np.ndarray) -> str:
    first = int(members[0])
    group = graph.nodes[first].group
    return f"node {graph.names[first]!r}" if group is None else f"colocation group {group!r}"


class Assignment:
    """A placement under construction: colocation units move together, memory is reserved.

    Placing a node places its whole unit and reserves the unit's memory on that device: its
    resident bytes, plus under ``step_time`` its nodes' output bytes (live activations count
    there; Baechi's memory model likewise adds each op's output to its persistent memory).

    Args:
        problem: The problem being solved.
    """

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.units = problem.units
        self.device_of_unit = np.full(len(self.units), -1, dtype=np.int64)
        self.free_memory = problem.capacity.astype(np.float64).copy()
        self.need = self.units.memory.copy()
        if problem.objective == "step_time":
            outputs = problem.graph.arrays.out_bytes
            self.need += np.bincount(self.units.of_node, weights=outputs, minlength=len(self.units))

    def device_of(self, v: int) -> int:
        """Device of node ``v``'s unit, or -1 while unplaced."""
        return int(self.device_of_unit[self.units.of_node[v]])

    def candidates(self, v: int) -> np.ndarray:
        """Devices node ``v`` may go to.

        Its unit's device once placed; else the devices that can run the whole unit and still
        hold its memory; if none holds it, the devices that can run it (the result will then be
        reported infeasible).
        """
        u = self.units.of_node[v]
        if self.device_of_unit[u] >= 0:
            return self.device_of_unit[u : u + 1]
        runnable = np.isfinite(self.units.durations[u])
        fits = runnable & (self.need[u] <= self.free_memory)
        return np.flatnonzero(fits if fits.any() else runnable)

    def fits(self, v: int, d: int) -> bool:
        """Whether node ``v``'s unit is on ``d`` already or could still be placed there."""
        u = self.units.of_node[v]
        if self.device_of_unit[u] >= 0:
            return bool(self.device_of_unit[u] == d)
        return bool(np.isfinite(self.units.durations[u, d]) and self.need[u] <= self.free_memory[d])

    def place(self, v: int, d: int) -> None:
        """Put node ``v``'s unit on device ``d`` (a no-op when it is already placed)."""
        u = self.units.of_node[v]
        if self.device_of_unit[u] < 0:
            self.device_of_unit[u] = d
            self.free_memory[d] -= self.need[u]

    def placement(self) -> np.ndarray:
        """The device of every node (all units must be placed)."""
        if (self.device_of_unit < 0).any():
            raise AssertionError("every unit must be placed before reading the placement")
        return self.device_of_unit[self.units.of_node]
