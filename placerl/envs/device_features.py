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

    def transfer_times(self, edges: np.ndarray, src_device: np.ndarray, to: bool) -> np.ndarray:
        """``(len(edges), D)`` uncontended seconds of each edge between its placed end's device
        and every device: ``to=True`` for data arriving on ``d``, ``False`` for leaving it."""
        if to:
            lat, bw = self.latency[src_device], self.bandwidth[src_device]
        else:
            lat, bw = self.latency[:, src_device].T, self.bandwidth[:, src_device].T
        times = lat + self.edge_bytes[edges, None] / bw
        explicit = self.edge_time[edges]
        times = np.where(np.isnan(explicit)[:, None], times, explicit[:, None])
        times[src_device[:, None] == np.arange(times.shape[1])] = 0.0
        return times


def _csr(keys: np.ndarray, values: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR of ``values`` by group, indexed by node (every member of a group shares its row)."""
    n = len(group)
    order = np.argsort(keys, kind="stable")
    counts = np.bincount(keys, minlength=n)
    leader_ptr = np.concatenate([[0], np.cumsum(counts)])
    sorted_values = values[order]
    rows = [sorted_values[leader_ptr[g]:leader_ptr[g + 1]] for g in group]
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
        start = self._start(members[0], placement)[device]
        end = start + self.tables.durations[members, device].sum()
        self.finish[members] = end
        self.free_at[device] = max(self.free_at[device], end)

    def _arrivals(self, node: int, placement: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per device: the latest arrival of the group's placed inputs, and the transfer seconds."""
        t = self.tables
        d = len(self.load)
        arrival, transfer = np.zeros(d), np.zeros(d)
        src = t.in_src[t.in_ptr[node]:t.in_ptr[node + 1]]
        if len(src):
            devices = placement[src]
            placed = devices >= 0
            edges = t.in_edge[t.in_ptr[node]:t.in_ptr[node + 1]][placed]
            times = t.transfer_times(edges, devices[placed], to=True)
            transfer += times.sum(axis=0)
            ready = self.finish[src[placed]]
            known = ~np.isnan(ready)
            if known.any():
                arrival = (ready[known, None] + times[known]).max(axis=0)
        dst = t.out_dst[t.out_ptr[node]:t.out_ptr[node + 1]]
        if len(dst):
            devices = placement[dst]
            placed = devices >= 0
            edges = t.out_edge[t.out_ptr[node]:t.out_ptr[node + 1]][placed]
            transfer += t.transfer_times(edges, devices[placed], to=False).sum(axis=0)
        return arrival, transfer

    def _start(self, node: int, placement: np.ndarray) -> np.ndarray:
        return np.maximum(self._arrivals(node, placement)[0], self.free_at)

    def block(self, members: np.ndarray, placement: np.ndarray, resident: np.ndarray,
              mem_bytes: np.ndarray, mask: np.ndarray) -> np.ndarray:  # fmt: skip
        """The ``(D, NUM_DEVICE_FEATURES)`` float32 features of the group ``members``.

        ``placement`` holds -1 for unplaced nodes; ``resident`` is the bytes on each device and
        ``mem_bytes`` every node's bytes. The group's own load and memory are left out.
        """
        t = self.tables
        scale = t.time_scale
        durations = t.durations[members]
        duration = durations.sum(axis=0)
        own_load = np.zeros_like(self.load)
        own_mem = np.zeros_like(self.load)
        placed = placement[members]
        on = placed >= 0
        np.add.at(own_load, placed[on], durations[on, placed[on]])
        np.add.at(own_mem, placed[on], mem_bytes[members][on])
        arrival, transfer = self._arrivals(int(members[0]), placement)
        start = np.maximum(arrival, self.free_at)
        finish = start + duration
        best = finish[mask].min() if mask.any() else finish.min()
        out = np.empty((len(self.load), NUM_DEVICE_FEATURES))
        out[:, DURATION] = duration / scale
        out[:, LOAD] = (self.load - own_load) / scale
        out[:, MEMORY] = (resident - own_mem) / self.capacity  # 0 on unlimited memory
        out[:, TRANSFER] = transfer / scale
        out[:, START] = start / scale
        out[:, FINISH] = finish / scale
        out[:, FINISH_GAP] = (finish - best) / scale
        out[:, ALLOWED] = mask
        np.nan_to_num(out, copy=False, nan=CLIP, posinf=CLIP)
        return np.clip(out, 0.0, CLIP, out=out).astype(np.float32)
