"""What HEFT sees for the node to place: one row of features per device.

The ``devices`` observation gives, for the current node's colocation group and each device
``d``, the figures a list scheduler (HEFT, m-ETF) decides with. A device-equivariant policy
head scores every device from its own row with one shared network, so the policy is not tied
to a device count.

Columns of ``devices`` (times divided by the graph's ``time_scale``, the sum over nodes of their
fastest duration; every value clipped to ``[0, CLIP]``):

0. ``duration``: the group's compute time on ``d`` (``CLIP`` where ``d`` cannot run it).
1. ``load``: compute time of the other nodes placed on ``d``.
2. ``memory``: bytes resident on ``d`` from the other nodes / ``d``'s memory.
3. ``transfer``: seconds of the transfers the group would cause on ``d``: its edges to and
   from placed nodes on other devices, uncontended (latency + bytes / bandwidth, or the edge's
   explicit time).
4. ``start``: earliest start on ``d``: the latest arrival of its placed producers' outputs,
   and, while constructing, when ``d`` is free in the list schedule of the placed nodes
   (HEFT without insertion, in placement order; unplaced producers are ignored). While
   refining under ``step_time`` the arrivals use the last simulation's finish times; under
   ``pipeline`` there is no schedule and this is 0.
5. ``finish``: ``start + duration``.
6. ``finish_gap``: ``finish`` minus the smallest ``finish`` over the allowed devices (0 on
   the device HEFT would pick).
7. ``allowed``: 1 where the action mask allows ``d``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from placerl.cluster import Cluster
from placerl.graph import CompGraph

DEVICE_FEATURES = (
    "duration", "load", "memory", "transfer", "start", "finish", "finish_gap", "allowed",
)  # fmt: skip
NUM_DEVICE_FEATURES = len(DEVICE_FEATURES)
CLIP = 10.0
DURATION, LOAD, MEMORY, TRANSFER, START, FINISH, FINISH_GAP, ALLOWED = range(NUM_DEVICE_FEATURES)


@dataclass(frozen=True, eq=False)
class DeviceTables:
    """Static arrays of one (graph, cluster) pair that the per-step features read.

    Attributes:
        time_scale: Seconds that times are divided by.
        durations: ``(n, D)`` compute seconds (``inf`` where a device cannot run the node).
        in_ptr, in_src, in_edge: CSR of the edges entering each node's group from outside it.
        out_ptr, out_dst, out_edge: CSR of the edges leaving each node's group.
    """

    time_scale: float
    durations: np.ndarray
    in_ptr: np.ndarray
    in_src: np.ndarray
    in_edge: np.ndarray
    out_ptr: np.ndarray
    out_dst: np.ndarray
    out_edge: np.ndarray
    edge_bytes: np.ndarray
    edge_time: np.ndarray
    bandwidth: np.ndarray
    latency: np.ndarray

    @classmethod
    def build(cls, graph: CompGraph, cluster: Cluster, durations: np.ndarray,
              members: list[np.ndarray]) -> DeviceTables:  # fmt: skip
        """Index every group's external edges; ``members[v]`` is ``v``'s colocation group."""
        a = graph.arrays
        group = np.empty(graph.num_nodes, dtype=np.int64)
        for v, m in enumerate(members):
            group[v] = m.min()
        external = group[a.src] != group[a.dst]
        edges = np.flatnonzero(external)
        in_ptr, in_edge = _csr(group[a.dst[edges]], edges, group)
        out_ptr, out_edge = _csr(group[a.src[edges]], edges, group)
        fastest = np.where(np.isfinite(durations), durations, np.inf).min(axis=1)
        scale = float(fastest[np.isfinite(fastest)].sum())
        return cls(
            time_scale=scale if scale > 0 else 1.0,
            durations=durations,
            in_ptr=in_ptr,
            in_src=a.src[in_edge],
            in_edge=in_edge,
            out_ptr=out_ptr,
            out_dst=a.dst[out_edge],
            out_edge=out_edge,
            edge_bytes=a.edge_bytes,
            edge_time=a.edge_time,
            bandwidth=cluster.bandwidth,
            latency=cluster.latency,
        )


def _csr(keys: np.ndarray, values: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR of ``values`` by group, indexed by node (every member of a group shares its row)."""
    n = len(group)
    order = np.argsort(keys, kind="stable")
    counts = np.bincount(keys, minlength=n)
    leader_ptr = np.concatenate([[0], np.cumsum(counts)])
    sorted_values = values[order]
    rows = [sorted_values[leader_ptr[g] : leader_ptr[g + 1]] for g in group]
    ptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    flat = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    return ptr, flat.astype(np.int64)


class DeviceFeatureState:
    """The episode state behind the ``devices`` observation.

    Args:
        tables: The graph's :class:`DeviceTables`.
        capacity: Memory bytes per device.
    """

    def __init__(self, tables: DeviceTables, capacity: np.ndarray) -> None:
        self.tables = tables
        self.capacity = capacity
        n, d = tables.durations.shape
        self.load = np.zeros(d)
        self.free_at = np.zeros(d)
        self.finish = np.full(n, np.nan)

    def moved(self, node: int, old: int, new: int) -> None:
        """Account ``node`` leaving device ``old`` (-1 when unplaced) for ``new``."""
        durations = self.tables.durations[node]
        if old >= 0:
            self.load[old] -= durations[old]
        self.load[new] += durations[new]

    def schedule(self, members: np.ndarray, device: int, placement: np.ndarray) -> None:
        """Append a just-placed group to the list schedule (construction only)."""
        t = self.tables
        duration = t.durations[members, device].sum()  # numpy's sum: the same bits as before
        _schedule(members, device, duration, placement, self.finish, self.free_at, t.in_ptr,
                  t.in_src, t.in_edge, t.edge_bytes, t.edge_time, t.bandwidth, t.latency)

    def block(self, members: np.ndarray, placement: np.ndarray, resident: np.ndarray,
              mem_bytes: np.ndarray, mask: np.ndarray) -> np.ndarray:  # fmt: skip
        """The ``(D, NUM_DEVICE_FEATURES)`` float32 features of the group ``members``.

        ``placement`` holds -1 for unplaced nodes; ``resident`` is the bytes on each device and
        ``mem_bytes`` every node's bytes. The group's own load and memory are left out.
        """
        t = self.tables
        out = np.empty((len(self.load), NUM_DEVICE_FEATURES), dtype=np.float32)
        _block(members, placement, resident, mem_bytes, mask, self.load, self.free_at,
               self.finish, self.capacity, t.durations, t.in_ptr, t.in_src, t.in_edge,
               t.out_ptr, t.out_dst, t.out_edge, t.edge_bytes, t.edge_time, t.bandwidth,
               t.latency, t.time_scale, out)  # fmt: skip
        return out


@njit(cache=True)
def _edge_time(e, a, b, edge_bytes, edge_time, bandwidth, latency):
    """Uncontended seconds of edge ``e`` from device ``a`` to ``b`` (0 on one device)."""
    if a == b:
        return 0.0
    if not np.isnan(edge_time[e]):
        return edge_time[e]
    return latency[a, b] + edge_bytes[e] / bandwidth[a, b]


@njit(cache=True)
def _schedule(members, device, duration, placement, finish, free_at, in_ptr, in_src, in_edge,
              edge_bytes, edge_time, bandwidth, latency):  # fmt: skip
    """:meth:`DeviceFeatureState.schedule` compiled (it runs on every construction step): the
    group starts on ``device`` when its placed inputs have arrived and the device is free."""
    start = free_at[device]
    node = members[0]
    for k in range(in_ptr[node], in_ptr[node + 1]):
        src = in_src[k]
        a = placement[src]
        if a < 0 or np.isnan(finish[src]):
            continue
        seconds = _edge_time(in_edge[k], a, device, edge_bytes, edge_time, bandwidth, latency)
        start = max(start, finish[src] + seconds)
    end = start + duration
    for m in members:
        finish[m] = end
    free_at[device] = max(free_at[device], end)


@njit(cache=True)
def _block(members, placement, resident, mem_bytes, mask, load, free_at, finish, capacity,
           durations, in_ptr, in_src, in_edge, out_ptr, out_dst, out_edge, edge_bytes,
           edge_time, bandwidth, latency, scale, out):  # fmt: skip
    """:meth:`DeviceFeatureState.block` in one compiled pass (it runs on every env step)."""
    n_dev = load.shape[0]
    duration, own_load, own_mem = np.zeros(n_dev), np.zeros(n_dev), np.zeros(n_dev)
    arrival, transfer = np.zeros(n_dev), np.zeros(n_dev)
    for m in members:
        for d in range(n_dev):
            duration[d] += durations[m, d]
        p = placement[m]
        if p >= 0:
            own_load[p] += durations[m, p]
            own_mem[p] += mem_bytes[m]
    node = members[0]
    for k in range(in_ptr[node], in_ptr[node + 1]):  # producers' outputs arriving on d
        src = in_src[k]
        a = placement[src]
        if a < 0:
            continue
        for d in range(n_dev):
            seconds = _edge_time(in_edge[k], a, d, edge_bytes, edge_time, bandwidth, latency)
            transfer[d] += seconds
            if not np.isnan(finish[src]) and finish[src] + seconds > arrival[d]:
                arrival[d] = finish[src] + seconds
    for k in range(out_ptr[node], out_ptr[node + 1]):  # outputs leaving d for consumers
        b = placement[out_dst[k]]
        if b < 0:
            continue
        for d in range(n_dev):
            transfer[d] += _edge_time(out_edge[k], d, b, edge_bytes, edge_time, bandwidth, latency)
    best, any_allowed = np.inf, False
    for d in range(n_dev):
        any_allowed |= bool(mask[d])
    for d in range(n_dev):
        finished = max(arrival[d], free_at[d]) + duration[d]
        if (mask[d] or not any_allowed) and finished < best:
            best = finished
    for d in range(n_dev):
        start = max(arrival[d], free_at[d])
        finished = start + duration[d]
        row = (duration[d] / scale, (load[d] - own_load[d]) / scale,
               (resident[d] - own_mem[d]) / capacity[d], transfer[d] / scale, start / scale,
               finished / scale, (finished - best) / scale, 1.0 if mask[d] else 0.0)  # fmt: skip
        for j in range(NUM_DEVICE_FEATURES):
            x = row[j]
            if np.isnan(x) or x > CLIP:  # NaN and too large (inf included) read as CLIP
                x = CLIP
            elif x < 0.0:
                x = 0.0
            out[d, j] = x
