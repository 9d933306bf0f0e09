"""The contiguous-split model of Tarnawski et al. (NeurIPS 2020), shared by the DP and the MILP.

A *split* gives each device at most one part. It is *contiguous* when its parts can be ordered so
that every ordering edge goes forward or stays inside a part; each part is then contiguous (no
path leaves it and comes back) and is the difference of two ideals (down-closed sets) of a chain
``{} = I0 <= I1 <= ... <= Im = V``. This is the model of the paper's max-load DP and of the
``pipeline`` objective of :mod:`placerl.sim`.

Which edges order the parts (:func:`build_split_model`):

* Colocation units (groups) are contracted; a part holds whole units.
* In a training graph (nodes flagged ``backward``) only forward edges order the parts and each
  backward node follows its colocation group, as in the paper; a group with backward nodes only
  is ordered by its backward edges, mirrored.
* Where contraction closes a cycle, the units on it are fused into one *block* (with a warning):
  in any contiguous split they share a part.
* Optionally, a *free* block (zero duration everywhere, no memory or memory that cannot bind,
  at most one neighbouring block) is merged into its neighbour. Moving it there never raises a
  load, so the optimum is unchanged, and the number of ideals can fall by orders of magnitude
  (gnmt: 3.3 million -> 17,914).

Blocks are numbered in a topological order of the ordering edges. Devices are grouped into
*types* (same kind, speed, memory, CPU flag); a split uses at most ``counts[t]`` parts of type
``t``. Transfer times must not depend on the device pair (explicit edge times, or one bandwidth
and latency for every pair): the load of a part then depends on the part alone.
"""

from __future__ import annotations

import heapq
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from placerl.errors import ConfigError

from .problem import Problem


class ContractionCycleWarning(UserWarning):
    """Contracting colocation groups closed a cycle; the groups on it were fused."""


@dataclass(frozen=True, eq=False)
class DeviceTypes:
    """Devices grouped into interchangeable types.

    Attributes:
        of_device: Type of each device.
        devices: Device indices of each type, increasing.
        counts: Number of devices of each type.
        is_cpu: Whether each type is a host CPU (no communication charge).
        capacity: Memory bytes of one device of each type.
        durations: Seconds of each node on each type, shape ``(nodes, types)``.
    """

    of_device: np.ndarray
    devices: tuple[np.ndarray, ...]
    counts: np.ndarray
    is_cpu: np.ndarray
    capacity: np.ndarray
    durations: np.ndarray

    @classmethod
    def of(cls, problem: Problem) -> DeviceTypes:
        """Group the cluster's devices by (kind, speed, memory, CPU flag)."""
        keys = [(d.kind, d.speed, d.memory, d.is_cpu) for d in problem.cluster.devices]
        first = list(dict.fromkeys(keys))
        of_device = np.array([first.index(k) for k in keys], dtype=np.int64)
        devices = tuple(np.flatnonzero(of_device == t) for t in range(len(first)))
        leaders = [int(ds[0]) for ds in devices]
        return cls(
            of_device=of_device,
            devices=devices,
            counts=np.array([len(ds) for ds in devices], dtype=np.int64),
            is_cpu=problem.cluster.is_cpu[leaders],
            capacity=problem.capacity[leaders].astype(np.float64),
            durations=np.ascontiguousarray(problem.durations[:, leaders]),
        )

    def __len__(self) -> int:
        return len(self.devices)


@dataclass(frozen=True, eq=False)
class SplitModel:
    """A (graph, cluster) pair as the contiguous-split solvers see it.

    Attributes:
        problem: The problem it was built from.
        types: The device types.
        edge_time: Transfer seconds of each edge (the same for every device pair).
        block_of: Block of each node; blocks are numbered in a topological order.
        order_edges: Unique ``(from_block, to_block)`` ordering edges, ``from < to``.
        block_durations: Seconds of each block on each type, shape ``(blocks, types)``.
        block_memory: Resident bytes of each block.
        fused_groups: Names of the units fused into one block because of a cycle, per block.
        free_merged: Number of free blocks merged into a neighbour.
    """

    problem: Problem
    types: DeviceTypes
    edge_time: np.ndarray
    block_of: np.ndarray
    order_edges: np.ndarray
    block_durations: np.ndarray
    block_memory: np.ndarray
    fused_groups: tuple[tuple[str, ...], ...]
    free_merged: int

    @property
    def num_blocks(self) -> int:
        """Number of blocks."""
        return self.block_durations.shape[0]

    def load(self, blocks: np.ndarray, type_index: int) -> float:
        """Max-load of a part made of ``blocks`` on a device of type ``type_index``.

        The slow, obvious formula (tests and reconstruction use it): durations plus, unless the
        type is a CPU, each node's longest transfer across the part's border.
        """
        inside = np.isin(self.block_of, blocks)
        total = float(self.types.durations[inside, type_index].sum())
        if self.types.is_cpu[type_index]:
            return total
        a = self.problem.graph.arrays
        crossing = inside[a.src] != inside[a.dst]
        charge = np.zeros(a.num_nodes)
        np.maximum.at(charge, a.src[crossing], self.edge_time[crossing])
        return total + float(charge.sum())


def build_split_model(problem: Problem, *, merge_free: bool = True) -> SplitModel:
    """The contiguous-split view of ``problem`` (see the module docstring).

    Raises:
        ConfigError: Transfer times depend on the device pair.
    """
    types = DeviceTypes.of(problem)
    edge_time = pair_independent_edge_times(problem)
    units = problem.units.of_node
    unit_edges = _unit_order_edges(problem, units)
    block_of_unit, fused = _fuse_cycles(problem, units, unit_edges)
    merged = 0
    if merge_free:
        into, merged = _merge_free_blocks(problem, block_of_unit[units], types)
        block_of_unit = into[block_of_unit]
    block_of, order_edges = _number_topologically(block_of_unit[units], block_of_unit[unit_edges])
    return SplitModel(
        problem=problem,
        types=types,
        edge_time=edge_time,
        block_of=block_of,
        order_edges=order_edges,
        block_durations=_sum_rows(block_of, types.durations),
        block_memory=np.bincount(block_of, weights=problem.graph.arrays.mem_bytes),
        fused_groups=fused,
        free_merged=merged,
    )


def pair_independent_edge_times(problem: Problem) -> np.ndarray:
    """Each edge's transfer time, which must be the same for every pair of devices.

    Raises:
        ConfigError: Some edge has no explicit time and the cluster's bandwidth or latency
            differs between device pairs.
    """
    a, c = problem.graph.arrays, problem.cluster
    explicit = ~np.isnan(a.edge_time)
    if c.num_devices == 1 or explicit.all():
        return np.where(explicit, a.edge_time, 0.0)
    off = ~np.eye(c.num_devices, dtype=bool)
    for what, matrix in (("bandwidth", c.bandwidth), ("latency", c.latency)):
        values = matrix[off]
        if not np.all(values == values[0]):
            raise ConfigError(
                f"contiguous-split solvers need transfer times that do not depend on the device "
                f"pair, but cluster {c.name!r} has {what} from {values.min():.6g} to "
                f"{values.max():.6g}; use local_search or a list scheduler instead"
            )
    s, d = np.argwhere(off)[0]
    return problem.edge_times(int(s), int(d))


def _sum_rows(labels: np.ndarray, values: np.ndarray) -> np.ndarray:
    out = np.zeros((labels.max() + 1, values.shape[1]))
    np.add.at(out, labels, values)
    return out


def _unit_order_edges(problem: Problem, units: np.ndarray) -> np.ndarray:
    """Ordering edges between units: forward edges, and mirrored backward edges of units that
    hold no forward node."""
    a = problem.graph.arrays
    forward = ~a.backward
    has_forward = np.zeros(units.max() + 1, dtype=bool)
    has_forward[units[forward]] = True
    su, du = units[a.src], units[a.dst]
    both_forward = forward[a.src] & forward[a.dst]
    orphan = ~(forward[a.src] | forward[a.dst]) & ~(has_forward[su] & has_forward[du])
    edges = np.concatenate(
        [np.stack([su[both_forward], du[both_forward]], 1), np.stack([du[orphan], su[orphan]], 1)]
    )
    edges = edges[edges[:, 0] != edges[:, 1]]
    return np.unique(edges, axis=0) if len(edges) else edges.reshape(0, 2)


def _fuse_cycles(
    problem: Problem, units: np.ndarray, unit_edges: np.ndarray
) -> tuple[np.ndarray, tuple[tuple[str, ...], ...]]:
    """Label units by strongly connected component of the ordering edges; warn on fusions."""
    n_units = int(units.max()) + 1
    adjacency = coo_matrix(
        (np.ones(len(unit_edges)), (unit_edges[:, 0], unit_edges[:, 1])), shape=(n_units,) * 2
    )
    _, label = connected_components(adjacency, directed=True, connection="strong")
    sizes = np.bincount(label)
    fused = []
    for comp in np.flatnonzero(sizes > 1):
        members = np.flatnonzero(label == comp)
        fused.append(tuple(_unit_name(problem, units, u) for u in members))
    if fused:
        example = ", ".join(fused[0][:4]) + (", ..." if len(fused[0]) > 4 else "")
        warnings.warn(
            f"contracting the colocation groups of {problem.graph.name!r} closes "
            f"{len(fused)} cycle(s); their groups must share a device in a contiguous split and "
            f"were fused (e.g. {example})",
            ContractionCycleWarning,
            stacklevel=5,  # the caller of solve()
        )
    return label, tuple(fused)


def _unit_name(problem: Problem, units: np.ndarray, unit: int) -> str:
    first = int(np.flatnonzero(units == unit)[0])
    node = problem.graph.nodes[first]
    return node.group if node.group is not None else node.name


def _merge_free_blocks(
    problem: Problem, block_of: np.ndarray, types: DeviceTypes
) -> tuple[np.ndarray, int]:
    """Merge free blocks (zero duration, no binding memory, <= 1 neighbour) into a neighbour.

    Returns:
        The block each block ends up in, and the number of blocks merged away.
    """
    a = problem.graph.arrays
    durations = _sum_rows(block_of, types.durations)
    memory = np.bincount(block_of, weights=a.mem_bytes)
    memory_binds = memory.sum() > types.capacity[types.counts > 0].min()
    free = (durations == 0).all(axis=1) & ((memory == 0) | ~memory_binds)
    n_blocks = len(durations)
    target = np.arange(n_blocks)
    if n_blocks == 1 or not free.any():
        return target, 0
    neighbours: list[set[int]] = [set() for _ in range(n_blocks)]
    for u, v in zip(block_of[a.src].tolist(), block_of[a.dst].tolist(), strict=True):
        if u != v:
            neighbours[u].add(v)
            neighbours[v].add(u)
    alive = set(range(n_blocks))
    todo = sorted(np.flatnonzero(free).tolist(), reverse=True)
    merged = 0
    while todo:
        b = todo.pop()
        if b not in alive or not free[b] or len(neighbours[b]) > 1 or len(alive) == 1:
            continue
        into = next(iter(neighbours[b])) if neighbours[b] else min(alive - {b})
        neighbours[into].discard(b)
        alive.discard(b)
        target[b] = into
        merged += 1
        if free[into]:
            todo.append(into)
    for b in range(n_blocks):  # follow merge chains to the surviving block
        while target[target[b]] != target[b]:
            target[b] = target[target[b]]
    return target, merged


def _number_topologically(block_of: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Renumber blocks 0..B-1 in Kahn's order (ties: lowest first node) and map the edges."""
    first_node = {}
    for v, b in enumerate(block_of.tolist()):
        first_node.setdefault(b, v)
    labels = sorted(first_node, key=first_node.__getitem__)
    compact = {b: i for i, b in enumerate(labels)}
    block_of = np.array([compact[b] for b in block_of.tolist()], dtype=np.int64)
    edges = np.array([(compact[int(u)], compact[int(v)]) for u, v in edges], dtype=np.int64)
    edges = edges.reshape(-1, 2)
    edges = np.unique(edges[edges[:, 0] != edges[:, 1]], axis=0)
    n = len(labels)
    succ: list[list[int]] = [[] for _ in range(n)]
    indegree = np.zeros(n, dtype=np.int64)
    for u, v in edges.tolist():
        succ[u].append(v)
        indegree[v] += 1
    ready = [b for b in range(n) if indegree[b] == 0]
    heapq.heapify(ready)
    rank = np.empty(n, dtype=np.int64)
    for position in range(n):
        b = heapq.heappop(ready)
        rank[b] = position
        for w in succ[b]:
            indegree[w] -= 1
            if indegree[w] == 0:
                heapq.heappush(ready, w)
    edges = rank[edges] if len(edges) else edges
    order = np.lexsort((edges[:, 1], edges[:, 0])) if len(edges) else []
    return rank[block_of], edges[order]
