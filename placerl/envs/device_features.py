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
4. ``start``: earliest start on ``d`` in HEFT's schedule of the placed groups (the schedule of
   :class:`~placerl.baselines.list_scheduling.ListSchedule`): once its placed producers'
   outputs have arrived, in the first idle gap of ``d`` that holds it (insertion), with the
   cluster's ``op_gap`` after each op and its transfer contention (``placeto``: one outgoing
   channel per device, ``transfer_gap`` after each transfer, one transfer per producer that
   serves every device; ``links``: a channel per device pair; ``ideal``: none). Unplaced
   producers are ignored. A policy that picks the device of smallest ``finish`` in HEFT's
   order therefore places as HEFT does (for groups of one node, where memory does not bind:
   HEFT also reserves outputs' bytes). A group visited again (construct mode visits every
   member) is taken off its device and booked anew; the transfers its first booking sent
   stay sent. While refining, the arrivals
   use the last simulation's finish times and the devices count as free; under ``pipeline``,
   where there is no schedule, this is 0.
5. ``finish``: ``start + duration``.
6. ``finish_gap``: ``finish`` minus the smallest ``finish`` over the allowed devices (0 on
   the device HEFT would pick).
7. ``allowed``: 1 where the action mask allows ``d``.
8. ``finish_rank``: ``finish_gap`` over the largest ``finish_gap`` of the allowed devices: 0 on
   the earliest finish, 1 on the latest and on the devices the mask rules out (0 on every
   allowed device when they all tie). On the whole graph's scale one node's times are a few
   thousandths, too little for a network to tell devices apart: this column is scale-free.
9. ``earliest``: 1 on the allowed devices of smallest ``finish`` (HEFT's choice), else 0.

Columns 8 and 9 are HEFT's choice while constructing; while refining (no list schedule: the
devices count as free, so the earliest finish is nearly always the node's own device, and a
refining policy that learned to follow it stopped moving nodes) they are 0.

Columns 4, 5, 6, 8 and 9 (:data:`HEFT_SCHEDULE_COLUMNS`) are HEFT's list schedule; the envs'
``features="plain"`` zeroes them (:mod:`placerl.envs.feature_sets`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from placerl.cluster import Cluster
from placerl.graph import CompGraph
from placerl.sim.kernels import COMM_MODEL_CODES, IDEAL, PLACETO

DEVICE_FEATURES = (
    "duration",
    "load",
    "memory",
    "transfer",
    "start",
    "finish",
    "finish_gap",
    "allowed",
    "finish_rank",
    "earliest",
)
NUM_DEVICE_FEATURES = len(DEVICE_FEATURES)
CLIP = 10.0
(DURATION, LOAD, MEMORY, TRANSFER, START, FINISH, FINISH_GAP, ALLOWED, FINISH_RANK, EARLIEST) = (
    range(NUM_DEVICE_FEATURES)
)
#: The columns of HEFT's list schedule: where it would start and finish the node, and its pick.
HEFT_SCHEDULE_COLUMNS = (START, FINISH, FINISH_GAP, FINISH_RANK, EARLIEST)
#: The columns that name HEFT's pick: 0 while refining (see the module).
CHOICE_COLUMNS = (FINISH_RANK, EARLIEST)


@dataclass(frozen=True, eq=False)
class DeviceTables:
    """Static arrays of one (graph, cluster) pair that the per-step features read.

    Attributes:
        time_scale: Seconds that times are divided by.
        durations: ``(n, D)`` compute seconds (``inf`` where a device cannot run the node).
        in_ptr, in_src, in_edge: CSR of the edges entering each node's group from outside it.
        out_ptr, out_dst, out_edge: CSR of the edges leaving each node's group.
        comm_model: The cluster's comm model code (:data:`placerl.sim.kernels.COMM_MODEL_CODES`).
        transfer_gap, op_gap: The cluster's idle seconds after a transfer and after an op.
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
    comm_model: int
    transfer_gap: float
    op_gap: float

    @classmethod
    def build(
        cls, graph: CompGraph, cluster: Cluster, durations: np.ndarray, members: list[np.ndarray]
    ) -> DeviceTables:
        """Index every group's external edges; ``members[v]`` is ``v``'s colocation group."""
        a = graph.arrays
        group = np.empty(graph.num_nodes, dtype=np.int64)
        for v, m in enumerate(members):
            group[v] = m.min()
        external = group[a.src] != group[a.dst]
        edges = np.flatnonzero(external)
        # Inputs in ListSchedule's order (by producer, then edge): under contention the order
        # of the sends decides when each arrives.
        inputs = edges[np.lexsort((edges, a.src[edges]))]
        in_ptr, in_edge = _csr(group[a.dst[inputs]], inputs, group)
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
            comm_model=COMM_MODEL_CODES[cluster.comm_model],
            transfer_gap=float(cluster.transfer_gap),
            op_gap=float(cluster.op_gap),
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
    """The episode state behind the ``devices`` observation: loads and HEFT's list schedule
    of the placed groups (busy intervals per device, channel times, sent outputs).

    Args:
        tables: The graph's :class:`DeviceTables`.
        capacity: Memory bytes per device.
        constructing: Whether the episode builds a placement (``finish_rank`` and
            ``earliest`` are 0 when it refines one).
        zeroed: Further columns that are always 0 (a feature set's,
            :mod:`placerl.envs.feature_sets`).
    """

    def __init__(
        self,
        tables: DeviceTables,
        capacity: np.ndarray,
        constructing: bool = True,
        zeroed: tuple[int, ...] = (),
    ) -> None:
        self.tables = tables
        self.capacity = capacity
        self.constructing = constructing
        hidden = set(zeroed) | (set() if constructing else set(CHOICE_COLUMNS))
        self.zeroed = sorted(hidden)
        n, d = tables.durations.shape
        self.load = np.zeros(d)
        self.finish = np.full(n, np.nan)
        self.busy = np.zeros((d, n, 2))  # per device, (start, end) of its ops in start order
        self.busy_count = np.zeros(d, dtype=np.int64)
        self.channel_free = np.zeros((d, d))  # placeto: [source, 0]; links: [source, target]
        self.arrival = np.full((n, d), np.nan)  # sent outputs; placeto: [producer, 0]
        self.booked = np.full(n, -1, dtype=np.int64)  # per group's first member: its device
        self.booked_interval = np.zeros((n, 2))  # and its (start, end) there

    def moved(self, node: int, old: int, new: int) -> None:
        """Account ``node`` leaving device ``old`` (-1 when unplaced) for ``new``."""
        durations = self.tables.durations[node]
        if old >= 0:
            self.load[old] -= durations[old]
        self.load[new] += durations[new]

    def schedule(self, members: np.ndarray, device: int, placement: np.ndarray) -> None:
        """Add a just-placed group to the list schedule (construction only): it takes its
        earliest start on ``device`` (computed before its inputs are sent, as HEFT does), then
        sends its inputs. A group booked before is taken off its old device first."""
        t = self.tables
        duration = t.durations[members, device].sum()  # numpy's sum: the same bits as before
        _unbook(members[0], self.booked, self.booked_interval, self.busy, self.busy_count)
        self.booked_interval[members[0]] = _schedule(
            members,
            device,
            duration,
            placement,
            self.finish,
            self.busy,
            self.busy_count,
            self.channel_free,
            self.arrival,
            t.in_ptr,
            t.in_src,
            t.in_edge,
            t.edge_bytes,
            t.edge_time,
            t.bandwidth,
            t.latency,
            t.comm_model,
            t.transfer_gap,
            t.op_gap,
        )
        self.booked[members[0]] = device

    def block(
        self,
        members: np.ndarray,
        placement: np.ndarray,
        resident: np.ndarray,
        mem_bytes: np.ndarray,
        mask: np.ndarray,
    ) -> np.ndarray:
        """The ``(D, NUM_DEVICE_FEATURES)`` float32 features of the group ``members``.

        ``placement`` holds -1 for unplaced nodes; ``resident`` is the bytes on each device and
        ``mem_bytes`` every node's bytes. The group's own load and memory are left out.
        """
        t = self.tables
        out = np.empty((len(self.load), NUM_DEVICE_FEATURES), dtype=np.float32)
        _block(
            members,
            placement,
            resident,
            mem_bytes,
            mask,
            self.load,
            self.finish,
            self.busy,
            self.busy_count,
            self.channel_free,
            self.arrival,
            self.capacity,
            t.durations,
            t.in_ptr,
            t.in_src,
            t.in_edge,
            t.out_ptr,
            t.out_dst,
            t.out_edge,
            t.edge_bytes,
            t.edge_time,
            t.bandwidth,
            t.latency,
            t.comm_model,
            t.op_gap,
            t.time_scale,
            out,
        )
        if self.zeroed:
            out[:, self.zeroed] = 0.0
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
def _channel(comm_model, d):
    """The ``channel_free`` column of a transfer to ``d``; also the ``arrival``
    column of its output (under ``placeto`` one transfer serves every device)."""
    return 0 if comm_model == PLACETO else d


@njit(cache=True)
def _send_time(
    k,
    d,
    placement,
    finish,
    channel_free,
    arrival,
    in_src,
    in_edge,
    edge_bytes,
    edge_time,
    bandwidth,
    latency,
    comm_model,
):
    """When the output of in-edge ``k``'s producer reaches ``d``: its arrival if sent already,
    else if sent now (once its channel is free)."""
    src = in_src[k]
    a = placement[src]
    column = _channel(comm_model, d)
    if not np.isnan(arrival[src, column]):
        return arrival[src, column]
    begin = finish[src]
    if comm_model != IDEAL:
        begin = max(begin, channel_free[a, column])
    return begin + _edge_time(in_edge[k], a, d, edge_bytes, edge_time, bandwidth, latency)


@njit(cache=True)
def _data_ready(
    node,
    d,
    placement,
    finish,
    channel_free,
    arrival,
    in_ptr,
    in_src,
    in_edge,
    edge_bytes,
    edge_time,
    bandwidth,
    latency,
    comm_model,
):
    """When every placed producer's output could be on ``d`` (HEFT's data-ready time)."""
    ready = 0.0
    for k in range(in_ptr[node], in_ptr[node + 1]):
        src = in_src[k]
        a = placement[src]
        if a < 0 or np.isnan(finish[src]):
            continue
        if a == d:
            ready = max(ready, finish[src])
        else:
            ready = max(
                ready,
                _send_time(
                    k,
                    d,
                    placement,
                    finish,
                    channel_free,
                    arrival,
                    in_src,
                    in_edge,
                    edge_bytes,
                    edge_time,
                    bandwidth,
                    latency,
                    comm_model,
                ),
            )
    return ready


@njit(cache=True)
def _earliest_start(ready, length, busy, count):
    """The first time from ``ready`` with ``length`` idle seconds on a device whose ops are
    ``busy[:count]`` (insertion: an idle gap before a later op counts)."""
    previous_end = 0.0
    for i in range(count):
        if max(ready, previous_end) + length <= busy[i, 0]:
            break
        previous_end = max(previous_end, busy[i, 1])
    return max(ready, previous_end)


@njit(cache=True)
def _unbook(leader, booked, booked_interval, busy, busy_count):
    """Remove the busy interval of the group led by ``leader`` from the device it was booked
    on."""
    device = booked[leader]
    if device < 0:
        return
    count = busy_count[device]
    for i in range(count):
        if (
            busy[device, i, 0] == booked_interval[leader, 0]
            and busy[device, i, 1] == booked_interval[leader, 1]
        ):
            for j in range(i, count - 1):
                busy[device, j] = busy[device, j + 1]
            busy_count[device] = count - 1
            return


@njit(cache=True)
def _schedule(
    members,
    device,
    duration,
    placement,
    finish,
    busy,
    busy_count,
    channel_free,
    arrival,
    in_ptr,
    in_src,
    in_edge,
    edge_bytes,
    edge_time,
    bandwidth,
    latency,
    comm_model,
    transfer_gap,
    op_gap,
):
    """:meth:`DeviceFeatureState.schedule` compiled (it runs on every construction step), in
    the order of ``ListSchedule``'s ``earliest_start`` then ``commit``; returns the busy
    interval it booked."""
    node = members[0]
    ready = _data_ready(
        node,
        device,
        placement,
        finish,
        channel_free,
        arrival,
        in_ptr,
        in_src,
        in_edge,
        edge_bytes,
        edge_time,
        bandwidth,
        latency,
        comm_model,
    )
    count = busy_count[device]
    start = _earliest_start(ready, duration + op_gap, busy[device], count)
    for k in range(in_ptr[node], in_ptr[node + 1]):  # send the inputs from other devices
        src = in_src[k]
        a = placement[src]
        if a < 0 or a == device or np.isnan(finish[src]):
            continue
        column = _channel(comm_model, device)
        if np.isnan(arrival[src, column]):
            sent = _send_time(
                k,
                device,
                placement,
                finish,
                channel_free,
                arrival,
                in_src,
                in_edge,
                edge_bytes,
                edge_time,
                bandwidth,
                latency,
                comm_model,
            )
            arrival[src, column] = sent
            if comm_model != IDEAL:
                channel_free[a, column] = sent + transfer_gap
    end = start + duration
    for m in members:
        finish[m] = end
    if duration > 0:
        end += op_gap
    i = count  # keep the intervals sorted by (start, end), as bisect.insort does
    while i > 0 and (
        busy[device, i - 1, 0] > start
        or (busy[device, i - 1, 0] == start and busy[device, i - 1, 1] > end)
    ):
        busy[device, i] = busy[device, i - 1]
        i -= 1
    busy[device, i, 0], busy[device, i, 1] = start, end
    busy_count[device] = count + 1
    return start, end


@njit(cache=True)
def _block(
    members,
    placement,
    resident,
    mem_bytes,
    mask,
    load,
    finish,
    busy,
    busy_count,
    channel_free,
    arrival,
    capacity,
    durations,
    in_ptr,
    in_src,
    in_edge,
    out_ptr,
    out_dst,
    out_edge,
    edge_bytes,
    edge_time,
    bandwidth,
    latency,
    comm_model,
    op_gap,
    scale,
    out,
):
    """:meth:`DeviceFeatureState.block` in one compiled pass (it runs on every env step)."""
    n_dev = load.shape[0]
    duration, own_load, own_mem = np.zeros(n_dev), np.zeros(n_dev), np.zeros(n_dev)
    transfer, starts = np.zeros(n_dev), np.zeros(n_dev)
    for m in members:
        for d in range(n_dev):
            duration[d] += durations[m, d]
        p = placement[m]
        if p >= 0:
            own_load[p] += durations[m, p]
            own_mem[p] += mem_bytes[m]
    node = members[0]
    for k in range(in_ptr[node], in_ptr[node + 1]):  # producers' outputs arriving on d
        a = placement[in_src[k]]
        if a >= 0:
            for d in range(n_dev):
                transfer[d] += _edge_time(
                    in_edge[k], a, d, edge_bytes, edge_time, bandwidth, latency
                )
    for k in range(out_ptr[node], out_ptr[node + 1]):  # outputs leaving d for consumers
        b = placement[out_dst[k]]
        if b >= 0:
            for d in range(n_dev):
                transfer[d] += _edge_time(
                    out_edge[k], d, b, edge_bytes, edge_time, bandwidth, latency
                )
    any_allowed = False
    for d in range(n_dev):
        any_allowed |= bool(mask[d])
    best, worst = np.inf, -np.inf
    for d in range(n_dev):
        ready = _data_ready(
            node,
            d,
            placement,
            finish,
            channel_free,
            arrival,
            in_ptr,
            in_src,
            in_edge,
            edge_bytes,
            edge_time,
            bandwidth,
            latency,
            comm_model,
        )
        starts[d] = _earliest_start(ready, duration[d] + op_gap, busy[d], busy_count[d])
        finished = starts[d] + duration[d]
        if mask[d] or not any_allowed:
            best, worst = min(best, finished), max(worst, finished)
    for d in range(n_dev):
        allowed = mask[d] or not any_allowed
        finished = starts[d] + duration[d]
        spread = worst - best
        rank = 1.0  # the devices the mask rules out, and any that cannot run the group
        if allowed and finished < np.inf:
            rank = (finished - best) / spread if spread > 0 and spread < np.inf else 0.0
        row = (
            duration[d] / scale,
            (load[d] - own_load[d]) / scale,
            (resident[d] - own_mem[d]) / capacity[d],
            transfer[d] / scale,
            starts[d] / scale,
            finished / scale,
            (finished - best) / scale,
            1.0 if mask[d] else 0.0,
            rank,
            1.0 if allowed and finished == best else 0.0,
        )
        for j in range(NUM_DEVICE_FEATURES):
            x = row[j]
            if np.isnan(x) or x > CLIP:  # NaN and too large (inf included) read as CLIP
                x = CLIP
            elif x < 0.0:
                x = 0.0
            out[d, j] = x
