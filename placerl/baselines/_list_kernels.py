"""numba kernels of the list schedulers: HEFT and ETF (m-ETF, m-SCT) compiled.

Why compiled: the schedulers visit every (op, device) pair, ETF every (ready op, device) pair
at every step; in Python a 10k-node graph took 12 s (HEFT) and 45 s (m-SCT), and 100k nodes
did not finish in minutes. These kernels follow
:class:`~placerl.baselines.list_scheduling.ListSchedule` step for step (the tests compare their
placements with the Python schedule's), with arrays in place of its dicts:

* ``arrival[u, c]``: when ``u``'s output reaches device ``c`` (NaN: not sent); under
  ``placeto`` one transfer serves every device and column 0 holds it.
* ``channel_free[s, c]``: when device ``s``'s channel to ``c`` frees (``placeto``: column 0).
* HEFT's busy intervals per device, sorted by ``(start, end)`` as ``bisect.insort`` keeps them,
  with the running maximum of their ends: the insertion search jumps to the first interval
  starting at or after the op's ready time (none before it can hold the op) instead of
  scanning the device's whole history, which made HEFT quadratic.

The helpers are inlined: numba passes arrays to a call it does not inline with reference
counting, which cost more than their work (m-ETF ran 15 times slower).

Colocation units and memory admission are :class:`~placerl.baselines.problem.Assignment`'s:
``unit_device`` (-1 unplaced), ``free_memory`` and each unit's ``need``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from placerl.sim.kernels import IDEAL, PLACETO


# ------------------------------------------------------------------------------- assignment
@njit(cache=True, inline="always")
def _fits(v, d, of_node, unit_device, unit_durations, need, free_memory):
    """Whether node ``v``'s unit is on ``d`` or could still be placed there."""
    u = of_node[v]
    if unit_device[u] >= 0:
        return unit_device[u] == d
    return np.isfinite(unit_durations[u, d]) and need[u] <= free_memory[d]


@njit(cache=True, inline="always")
def _candidates(v, of_node, unit_device, unit_durations, need, free_memory, out):
    """Write the devices ``v`` may go to into ``out`` (increasing); returns their count.

    Its unit's device once placed; else the devices that run the unit and hold its memory; if
    none holds it, the devices that run it.
    """
    u = of_node[v]
    if unit_device[u] >= 0:
        out[0] = unit_device[u]
        return 1
    count = 0
    for d in range(free_memory.shape[0]):
        if np.isfinite(unit_durations[u, d]) and need[u] <= free_memory[d]:
            out[count] = d
            count += 1
    if count > 0:
        return count
    for d in range(free_memory.shape[0]):
        if np.isfinite(unit_durations[u, d]):
            out[count] = d
            count += 1
    return count


@njit(cache=True, inline="always")
def _place(v, d, of_node, unit_device, need, free_memory):
    u = of_node[v]
    if unit_device[u] < 0:
        unit_device[u] = d
        free_memory[d] -= need[u]


# -------------------------------------------------------------------------------- transfers
@njit(cache=True, inline="always")
def _edge_time(e, s, d, edge_time, edge_bytes, bandwidth, latency):
    """Seconds of edge ``e`` from device ``s`` to ``d`` (``Problem.edge_times``, one edge)."""
    if s == d:
        return 0.0
    t = edge_time[e]
    if np.isnan(t):
        return latency[s, d] + edge_bytes[e] / bandwidth[s, d]
    return t


@njit(cache=True, inline="always")
def _column(comm_model, d):
    """The ``arrival`` and ``channel_free`` column of a transfer to ``d``."""
    return 0 if comm_model == PLACETO else d


@njit(cache=True, inline="always")
def _send_time(
    u, e, s, d, finish, channel_free, comm_model, edge_time, edge_bytes, bandwidth, latency
):
    """When ``u``'s output (edge ``e``, from ``s``) would reach ``d`` if sent now."""
    begin = finish[u]
    if comm_model != IDEAL:
        begin = max(begin, channel_free[s, _column(comm_model, d)])
    return begin + _edge_time(e, s, d, edge_time, edge_bytes, bandwidth, latency)


@njit(cache=True, inline="always")
def _data_ready(
    v,
    d,
    pred_ptr,
    pred,
    pred_edge,
    of_node,
    unit_device,
    finish,
    arrival,
    channel_free,
    comm_model,
    edge_time,
    edge_bytes,
    bandwidth,
    latency,
):
    """When all of ``v``'s inputs could be on ``d`` (``ListSchedule.data_ready``)."""
    ready = 0.0
    for k in range(pred_ptr[v], pred_ptr[v + 1]):
        u = pred[k]
        s = unit_device[of_node[u]]
        if s == d:
            ready = max(ready, finish[u])
            continue
        sent = arrival[u, _column(comm_model, d)]
        if np.isnan(sent):
            sent = _send_time(
                u,
                pred_edge[k],
                s,
                d,
                finish,
                channel_free,
                comm_model,
                edge_time,
                edge_bytes,
                bandwidth,
                latency,
            )
        ready = max(ready, sent)
    return ready


@njit(cache=True, inline="always")
def _send_inputs(
    v,
    d,
    pred_ptr,
    pred,
    pred_edge,
    of_node,
    unit_device,
    finish,
    arrival,
    channel_free,
    comm_model,
    transfer_gap,
    edge_time,
    edge_bytes,
    bandwidth,
    latency,
    sent_flag,
    sent_list,
):
    """Send ``v``'s inputs from other devices to ``d`` (the first half of
    ``ListSchedule.commit``); lists the producers sent in ``sent_list`` (flagged in
    ``sent_flag``) and returns their count."""
    count = 0
    for k in range(pred_ptr[v], pred_ptr[v + 1]):
        u = pred[k]
        s = unit_device[of_node[u]]
        if s == d:
            continue
        column = _column(comm_model, d)
        if np.isnan(arrival[u, column]):
            time = _send_time(
                u,
                pred_edge[k],
                s,
                d,
                finish,
                channel_free,
                comm_model,
                edge_time,
                edge_bytes,
                bandwidth,
                latency,
            )
            arrival[u, column] = time
            if not sent_flag[u]:
                sent_flag[u] = True
                sent_list[count] = u
                count += 1
            if comm_model != IDEAL:
                channel_free[s, column] = time + transfer_gap
    return count


# ----------------------------------------------------------------------- HEFT's busy lists
@njit(cache=True, inline="always")
def _slot_start(ready, length, begins, ends, top, count):
    """Earliest start from ``ready`` with ``length`` idle seconds among the ``count`` intervals
    ``(begins, ends)`` of a device, ``top`` the running maximum of their ends.

    The scan of ``ListSchedule.earliest_start`` from its first interval that could matter:
    before the first interval starting at or after ``ready``, no gap can hold the op (it would
    have to end by that interval's start, before ``ready``), and the scan only carries the
    largest end seen, which ``top`` holds.
    """
    lo, hi = 0, count
    while lo < hi:  # first interval starting at or after ready
        mid = (lo + hi) >> 1
        if begins[mid] < ready:
            lo = mid + 1
        else:
            hi = mid
    previous_end = top[lo - 1] if lo > 0 else 0.0
    for i in range(lo, count):
        if max(ready, previous_end) + length <= begins[i]:
            break
        previous_end = max(previous_end, ends[i])
    return max(ready, previous_end)


@njit(cache=True, inline="always")
def _insert_interval(start, end, begins, ends, top, count):
    """Insert ``(start, end)`` after every interval ``<=`` it (``bisect.insort``) and update
    the running maxima from there; returns the new count."""
    lo, hi = 0, count
    while lo < hi:
        mid = (lo + hi) >> 1
        if start < begins[mid] or (start == begins[mid] and end < ends[mid]):
            hi = mid
        else:
            lo = mid + 1
    for i in range(count, lo, -1):
        begins[i] = begins[i - 1]
        ends[i] = ends[i - 1]
    begins[lo], ends[lo] = start, end
    running = top[lo - 1] if lo > 0 else 0.0
    for i in range(lo, count + 1):
        running = max(running, ends[i])
        top[i] = running
    return count + 1


# ------------------------------------------------------------------------------------ HEFT
@njit(cache=True)
def heft(
    order,
    durations,
    pred_ptr,
    pred,
    pred_edge,
    of_node,
    unit_durations,
    need,
    capacity,
    comm_model,
    op_gap,
    transfer_gap,
    edge_time,
    edge_bytes,
    bandwidth,
    latency,
):
    """HEFT's schedule of the ops in ``order`` (decreasing upward rank): each on the candidate
    device of earliest finish (ties: the lowest device), insertion-based.

    Returns:
        Each unit's device.
    """
    n, n_dev = durations.shape
    unit_device = np.full(unit_durations.shape[0], -1, dtype=np.int64)
    free_memory = capacity.astype(np.float64).copy()
    finish = np.zeros(n)
    arrival = np.full((n, n_dev), np.nan)
    channel_free = np.zeros((n_dev, n_dev))
    begins, ends, top = np.empty((n_dev, n)), np.empty((n_dev, n)), np.empty((n_dev, n))
    count = np.zeros(n_dev, dtype=np.int64)
    cand = np.empty(n_dev, dtype=np.int64)
    sent_flag = np.zeros(n, dtype=np.bool_)
    sent_list = np.empty(n, dtype=np.int64)
    for v in order:
        best, d_best, start_best = np.inf, -1, 0.0
        for j in range(
            _candidates(v, of_node, unit_device, unit_durations, need, free_memory, cand)
        ):
            d = cand[j]
            ready = _data_ready(
                v,
                d,
                pred_ptr,
                pred,
                pred_edge,
                of_node,
                unit_device,
                finish,
                arrival,
                channel_free,
                comm_model,
                edge_time,
                edge_bytes,
                bandwidth,
                latency,
            )
            length = durations[v, d] + op_gap
            start = _slot_start(ready, length, begins[d], ends[d], top[d], count[d])
            if start + durations[v, d] < best:
                best, d_best, start_best = start + durations[v, d], d, start
        _place(v, d_best, of_node, unit_device, need, free_memory)
        sent = _send_inputs(
            v,
            d_best,
            pred_ptr,
            pred,
            pred_edge,
            of_node,
            unit_device,
            finish,
            arrival,
            channel_free,
            comm_model,
            transfer_gap,
            edge_time,
            edge_bytes,
            bandwidth,
            latency,
            sent_flag,
            sent_list,
        )
        for i in range(sent):
            sent_flag[sent_list[i]] = False
        duration = durations[v, d_best]
        finish[v] = start_best + duration
        end = finish[v] + (op_gap if duration > 0 else 0.0)
        count[d_best] = _insert_interval(
            start_best, end, begins[d_best], ends[d_best], top[d_best], count[d_best]
        )
    return unit_device


# ----------------------------------------------------------------- ETF's indexed heaps
# Each device keeps its ready ops in two heaps of node ids, with each op's position in
# ``pos[v, d]`` (-1: absent): ``released`` holds the ops whose inputs are there by the time the
# device frees (all would start then: ordered by higher rank, then lower id); ``waiting`` the
# others, ordered by their ``stored`` data-ready time (then rank, id). A heap is the tuple
# ``(heap, size, pos)``: ``heap[d, :size[d]]`` is device d's.
@njit(cache=True, inline="always")
def _before(a, b, d, released, stored, rank):
    """Whether op ``a`` comes before ``b`` in device ``d``'s heap."""
    if not released and stored[a, d] != stored[b, d]:
        return stored[a, d] < stored[b, d]
    if rank[a] != rank[b]:
        return rank[a] > rank[b]
    return a < b


@njit(cache=True, inline="always")
def _sift(h, d, i, released, stored, rank):
    """Move the op at ``heap[d, i]`` up or down to its place."""
    heap, size, pos = h
    v = heap[d, i]
    moved = False
    while i > 0:
        parent = (i - 1) >> 1
        w = heap[d, parent]
        if not _before(v, w, d, released, stored, rank):
            break
        heap[d, i], pos[w, d] = w, i
        i, moved = parent, True
    while not moved:
        child = 2 * i + 1
        if child >= size[d]:
            break
        if child + 1 < size[d] and _before(
            heap[d, child + 1], heap[d, child], d, released, stored, rank
        ):
            child += 1
        w = heap[d, child]
        if not _before(w, v, d, released, stored, rank):
            break
        heap[d, i], pos[w, d] = w, i
        i = child
    heap[d, i], pos[v, d] = v, i


@njit(cache=True, inline="always")
def _push(h, d, v, released, stored, rank):
    heap, size, pos = h
    heap[d, size[d]], pos[v, d] = v, size[d]
    size[d] += 1
    _sift(h, d, size[d] - 1, released, stored, rank)


@njit(cache=True, inline="always")
def _remove(h, d, v, released, stored, rank):
    heap, size, pos = h
    i = pos[v, d]
    pos[v, d] = -1
    size[d] -= 1
    if i != size[d]:
        w = heap[d, size[d]]
        heap[d, i], pos[w, d] = w, i
        _sift(h, d, i, released, stored, rank)


# ------------------------------------------------------------------------------------- ETF
@njit(cache=True, inline="always")
def _better(start, rank, v, d, b_start, b_rank, b_v, b_d):
    """``(start, -rank, v, d) < (b_start, -b_rank, b_v, b_d)``: ETF's choice key."""
    if start != b_start:
        return start < b_start
    if rank != b_rank:
        return rank > b_rank
    if v != b_v:
        return v < b_v
    return d < b_d


@njit(cache=True, inline="always")
def _devices_for(v, favourite_parent, of_node, unit_device, unit_durations, need, free_memory, out):
    """m-SCT: the favourite parent's device when ``v`` fits there; else the candidates."""
    p = favourite_parent[v]
    if p >= 0:
        d = unit_device[of_node[p]]
        if _fits(v, d, of_node, unit_device, unit_durations, need, free_memory):
            out[0] = d
            return 1
    return _candidates(v, of_node, unit_device, unit_durations, need, free_memory, out)


@njit(cache=True, inline="always")
def _ready_on(v, d, net):
    """:func:`_data_ready` with the schedule's arrays bundled in ``net``."""
    (
        pred_ptr,
        pred,
        pred_edge,
        of_node,
        unit_device,
        finish,
        arrival,
        channel_free,
        comm_model,
        edge_time,
        edge_bytes,
        bandwidth,
        latency,
    ) = net
    return _data_ready(
        v,
        d,
        pred_ptr,
        pred,
        pred_edge,
        of_node,
        unit_device,
        finish,
        arrival,
        channel_free,
        comm_model,
        edge_time,
        edge_bytes,
        bandwidth,
        latency,
    )


@njit(cache=True, inline="always")
def _may_go(v, favourite_parent, placing, out):
    """:func:`_devices_for` with the assignment's arrays bundled in ``placing``."""
    of_node, unit_device, unit_durations, need, free_memory = placing
    return _devices_for(
        v, favourite_parent, of_node, unit_device, unit_durations, need, free_memory, out
    )


@njit(cache=True, inline="always")
def _sync(w, favourite_parent, placing, net, stored, waiting, released, rank, allowed, cand):
    """Give ready op ``w`` an entry on exactly the devices it may go to now."""
    allowed[:] = False
    for j in range(_may_go(w, favourite_parent, placing, cand)):
        allowed[cand[j]] = True
    for d in range(allowed.shape[0]):
        if waiting[2][w, d] >= 0:
            if not allowed[d]:
                _remove(waiting, d, w, False, stored, rank)
        elif released[2][w, d] >= 0:
            if not allowed[d]:
                _remove(released, d, w, True, stored, rank)
        elif allowed[d]:
            stored[w, d] = _ready_on(w, d, net)
            _push(waiting, d, w, False, stored, rank)


@njit(cache=True, inline="always")
def _best_on(d, free_at, net, stored, waiting, released, rank):
    """``(start, op)`` of the op device ``d`` would start first, ties to higher rank, then lower
    id (``(inf, -1)`` when none may go there).

    Data-ready times only grow between a commit's eager updates (channels fill), so a waiting
    op's stored time is at most its true one: the top of ``waiting`` is right once its time is
    recomputed and unchanged, and an op released earlier is checked again at the top (its
    inputs may now arrive after ``free_at``).
    """
    while True:
        while waiting[1][d] > 0 and stored[waiting[0][d, 0], d] <= free_at:
            v = waiting[0][d, 0]
            _remove(waiting, d, v, False, stored, rank)
            stored[v, d] = _ready_on(v, d, net)
            if stored[v, d] <= free_at:
                _push(released, d, v, True, stored, rank)
            else:
                _push(waiting, d, v, False, stored, rank)
        if released[1][d] > 0:
            v = released[0][d, 0]
            ready = _ready_on(v, d, net)
            if ready <= free_at:
                return free_at, v
            _remove(released, d, v, True, stored, rank)
            stored[v, d] = ready
            _push(waiting, d, v, False, stored, rank)
            continue
        if waiting[1][d] == 0:
            return np.inf, -1
        v = waiting[0][d, 0]
        ready = _ready_on(v, d, net)
        if ready == stored[v, d]:
            return ready, v
        stored[v, d] = ready
        _sift(waiting, d, waiting[2][v, d], False, stored, rank)


@njit(cache=True)
def earliest_task_first(
    rank,
    favourite_parent,
    favourite_child,
    unit_ptr,
    unit_nodes,
    durations,
    succ_ptr,
    succ,
    pred_ptr,
    pred,
    pred_edge,
    of_node,
    unit_durations,
    need,
    capacity,
    comm_model,
    op_gap,
    transfer_gap,
    edge_time,
    edge_bytes,
    bandwidth,
    latency,
):
    """ETF: repeatedly start the (ready op, device) pair that can start first (ties: higher
    upward rank, then lower op, then lower device).

    With favourite parents (m-SCT; all -1 for m-ETF), an op whose favourite parent is placed
    goes to that parent's device when it fits there, and a device whose last op's favourite
    child is ready and fits is kept for that child. Each device's candidates sit in indexed
    heaps (see :func:`_best_on`), so a step costs the devices and the entries a commit
    changed, not every ready op on every device. ``unit_ptr``/``unit_nodes``: each unit's
    nodes (CSR).

    Returns:
        Each unit's device.
    """
    n, n_dev = durations.shape
    unit_device = np.full(unit_durations.shape[0], -1, dtype=np.int64)
    free_memory = capacity.astype(np.float64).copy()
    finish, device_free = np.zeros(n), np.zeros(n_dev)
    arrival = np.full((n, n_dev), np.nan)
    channel_free = np.zeros((n_dev, n_dev))
    placing = (of_node, unit_device, unit_durations, need, free_memory)
    net = (
        pred_ptr,
        pred,
        pred_edge,
        of_node,
        unit_device,
        finish,
        arrival,
        channel_free,
        comm_model,
        edge_time,
        edge_bytes,
        bandwidth,
        latency,
    )
    stored = np.zeros((n, n_dev))
    waiting = (
        np.empty((n_dev, n), dtype=np.int64),
        np.zeros(n_dev, dtype=np.int64),
        np.full((n, n_dev), -1, dtype=np.int64),
    )
    released = (
        np.empty((n_dev, n), dtype=np.int64),
        np.zeros(n_dev, dtype=np.int64),
        np.full((n, n_dev), -1, dtype=np.int64),
    )
    allowed, cand = np.zeros(n_dev, dtype=np.bool_), np.empty(n_dev, dtype=np.int64)
    # Memory admission changes which devices a ready op may go to only when a device's free
    # memory drops past some unit's need: until then no ready op needs a second look.
    needs = np.sort(need)
    sent_flag = np.zeros(n, dtype=np.bool_)
    sent_list = np.empty(n, dtype=np.int64)
    missing = np.diff(pred_ptr)
    ready = np.empty(n, dtype=np.int64)  # the ready ops, in no order, and each one's slot
    slot = np.full(n, -1, dtype=np.int64)
    n_ready = 0
    for v in range(n):
        if missing[v] == 0:
            ready[n_ready], slot[v] = v, n_ready
            n_ready += 1
            _sync(v, favourite_parent, placing, net, stored, waiting, released, rank, allowed, cand)
    last_on = np.full(n_dev, -1, dtype=np.int64)
    while n_ready > 0:
        b_start, b_rank, b_v, b_d = np.inf, -np.inf, -1, -1
        for d in range(n_dev):
            kept = -1  # m-SCT: a device waits for its last op's ready favourite child
            if last_on[d] >= 0:
                c = favourite_child[last_on[d]]
                if (
                    c >= 0
                    and slot[c] >= 0
                    and _fits(c, d, of_node, unit_device, unit_durations, need, free_memory)
                ):
                    kept = c
            if kept >= 0:
                v, start = kept, max(_ready_on(kept, d, net), device_free[d])
            else:
                start, v = _best_on(d, device_free[d], net, stored, waiting, released, rank)
                if v < 0:
                    continue
            if b_v < 0 or _better(start, rank[v], v, d, b_start, b_rank, b_v, b_d):
                b_start, b_rank, b_v, b_d = start, rank[v], v, d
        v, d = b_v, b_d
        newly_placed = unit_device[of_node[v]] < 0
        free_before = free_memory[d]
        _place(v, d, of_node, unit_device, need, free_memory)
        n_sent = _send_inputs(
            v,
            d,
            pred_ptr,
            pred,
            pred_edge,
            of_node,
            unit_device,
            finish,
            arrival,
            channel_free,
            comm_model,
            transfer_gap,
            edge_time,
            edge_bytes,
            bandwidth,
            latency,
            sent_flag,
            sent_list,
        )
        duration = durations[v, d]
        finish[v] = b_start + duration
        device_free[d] = max(device_free[d], finish[v] + (op_gap if duration > 0 else 0.0))
        last_on[d] = v
        n_ready -= 1  # take v out of the ready ops: the last one takes its slot
        moved = ready[n_ready]
        ready[slot[v]], slot[moved] = moved, slot[v]
        slot[v] = -1
        for e in range(n_dev):  # v's entries go
            if waiting[2][v, e] >= 0:
                _remove(waiting, e, v, False, stored, rank)
            if released[2][v, e] >= 0:
                _remove(released, e, v, True, stored, rank)
        # An output sent now may arrive earlier than its consumers' stored times assumed (it
        # went with another edge's time): those entries are recomputed now.
        for i in range(n_sent):
            u = sent_list[i]
            sent_flag[u] = False
            for k in range(succ_ptr[u], succ_ptr[u + 1]):
                w = succ[k]
                if slot[w] < 0:
                    continue
                for e in range(n_dev):
                    if (comm_model == PLACETO or e == d) and waiting[2][w, e] >= 0:
                        stored[w, e] = _ready_on(w, e, net)
                        _sift(waiting, e, waiting[2][w, e], False, stored, rank)
        if newly_placed:  # v's unit is on d now, and d's memory shrank
            u = of_node[v]
            for k in range(unit_ptr[u], unit_ptr[u + 1]):
                w = unit_nodes[k]
                if slot[w] >= 0:
                    _sync(
                        w,
                        favourite_parent,
                        placing,
                        net,
                        stored,
                        waiting,
                        released,
                        rank,
                        allowed,
                        cand,
                    )
            first_above = np.searchsorted(needs, free_memory[d], side="right")
            if first_above < needs.shape[0] and needs[first_above] <= free_before:
                for i in range(n_ready):
                    _sync(
                        ready[i],
                        favourite_parent,
                        placing,
                        net,
                        stored,
                        waiting,
                        released,
                        rank,
                        allowed,
                        cand,
                    )
        for k in range(succ_ptr[v], succ_ptr[v + 1]):
            w = succ[k]
            missing[w] -= 1
            if missing[w] == 0:
                ready[n_ready], slot[w] = w, n_ready
                n_ready += 1
                _sync(
                    w,
                    favourite_parent,
                    placing,
                    net,
                    stored,
                    waiting,
                    released,
                    rank,
                    allowed,
                    cand,
                )
    return unit_device


@njit(cache=True)
def upward_rank(topo_order, weight, comm, succ_ptr, succ, succ_edge):
    """HEFT's upward rank (``list_scheduling.upward_rank``), in the same order of operations."""
    rank = np.zeros(weight.shape[0])
    for i in range(topo_order.shape[0] - 1, -1, -1):
        v = topo_order[i]
        tail = 0.0
        for k in range(succ_ptr[v], succ_ptr[v + 1]):
            tail = max(tail, comm[succ_edge[k]] + rank[succ[k]])
        rank[v] = weight[v] + tail
    return rank
