"""numba-compiled simulation kernels (semantics in :mod:`placerl.sim`).

These are the inner loop of every RL experiment (one call per env step), so they work on flat
arrays and scratch buffers the :class:`~placerl.sim.CostModel` preallocates, with small binary
heaps instead of Python objects; the step-time kernel's body is written out in one function
because numba passes arrays to a non-inlined call with reference counting, which cost more
than the work; :mod:`placerl.sim.reference`
is the slow, readable twin they are tested against. Kernels take the placement and the
precomputed arrays of a :class:`~placerl.sim.CostModel` and fill caller-provided output arrays.

Measured side by side at 10k nodes and not kept, each within noise of this version (so the
next attempt can start elsewhere): 4-ary heaps; per-channel FIFO lists instead of the copy
heap; a sorted ready queue instead of its heap; branch-free heap comparisons; starting an op
at the end of its gap within the round that frees its device (it halves the rounds under
``placeto`` and saves no time); numpy's error model (no division checks). A perf profile spreads
the time over heap comparisons (~16%), the transfer-time loop (~20%) and memory bookkeeping
(22% of the kernel under ``placeto``, 45% under ``links``), with no single hot spot.
"""

from __future__ import annotations

import numpy as np
from numba import njit

PLACETO, LINKS, IDEAL = 0, 1, 2
#: The kernels' code of each communication model.
COMM_MODEL_CODES = {"placeto": PLACETO, "links": LINKS, "ideal": IDEAL}


# ------------------------------------------------------------------------- binary heaps
@njit(cache=True, inline="always")
def _less(t_a: float, k_a: int, t_b: float, k_b: int) -> bool:
    return t_a < t_b or (t_a == t_b and k_a < k_b)


@njit(cache=True, inline="always")
def _heap_push(times: np.ndarray, keys: np.ndarray, base: int, size: int, t: float, k: int) -> int:
    """Push (t, k) on the min-heap ``times/keys[base:base + size]`` ordered by (time, key).

    Returns the new size. Heaps live at an offset of shared flat arrays (one per device) so
    the kernel never creates array views in its inner loop.
    """
    i = size
    while i > 0:  # sift the hole up, then drop (t, k) into it
        parent = (i - 1) >> 1
        if not _less(t, k, times[base + parent], keys[base + parent]):
            break
        times[base + i] = times[base + parent]
        keys[base + i] = keys[base + parent]
        i = parent
    times[base + i] = t
    keys[base + i] = k
    return size + 1


@njit(cache=True, inline="always")
def _heap_pop(times: np.ndarray, keys: np.ndarray, base: int, size: int) -> int:
    """Remove the minimum (read it at ``base`` first); returns the new size."""
    size -= 1
    t = times[base + size]
    k = keys[base + size]
    i = 0
    while True:  # sift the hole down, then drop the former last item into it
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and _less(
            times[base + child + 1], keys[base + child + 1], times[base + child], keys[base + child]
        ):
            child += 1
        if not _less(times[base + child], keys[base + child], t, k):
            break
        times[base + i] = times[base + child]
        keys[base + i] = keys[base + child]
        i = child
    times[base + i] = t
    keys[base + i] = k
    return size


# -------------------------------------------------------------------------- transfers
@njit(cache=True, inline="always")
def _remote_edge_times(
    u, placement, succ_ptr, succ, succ_edge, edge_time, edge_bytes, bandwidth, latency, remote
):
    """Longest edge time from ``u`` to each other device (-1 where none); any remote?"""
    s = placement[u]
    remote[:] = -1.0
    found = False
    for k in range(succ_ptr[u], succ_ptr[u + 1]):
        d = placement[succ[k]]
        if d != s:
            e = succ_edge[k]
            te = edge_time[e]
            if np.isnan(te):
                te = latency[s, d] + edge_bytes[e] / bandwidth[s, d]
            if te > remote[d]:
                remote[d] = te
            found = True
    return found


# -------------------------------------------------------------------------- step time
@njit(cache=True, inline="always")
def _carve(buffer, at, size):
    """``buffer[at:at + size]`` and the offset after it."""
    return buffer[at : at + size], at + size


@njit(cache=True)
def step_time(
    placement,
    durations,
    in_degree,
    succ_ptr,
    succ,
    succ_edge,
    pred_ptr,
    pred,
    edge_time,
    edge_bytes,
    out_bytes,
    bandwidth,
    latency,
    comm_model,
    transfer_gap,
    op_gap,
    mem_bytes,
    capacity,
    scratch_f,
    scratch_i,
    start,
    finish,
    busy,
    comm,
    memory,
    peak,
    excess,
):
    """Event-driven step time with the activation peak counted online.

    Fills start/finish/busy/comm and the memory arrays (see :func:`_memory`) and returns the
    runtime. Each device runs one op at a time, so the next event is a minimum over devices
    (the running op's finish, or an idle device's next possible start): no event heap and no
    wake-up events. Transfers get their arrival times when their producer completes. Memory:
    each device keeps a live-bytes counter. Frees known at the current round go to a queue
    (rounds advance in time, so it stays ordered); frees that must wait for a copy to leave,
    and allocations of remote copies (at their arrival), go to two per-device heaps. All are
    applied in time order, frees strictly before later allocations, whenever the device
    allocates. Byte counts are assumed whole numbers: fractional ones may sum in another order
    than the reference's and differ in the last bit. ``scratch_f`` and ``scratch_i`` are
    preallocated work arrays (see :func:`scratch_sizes`).
    """
    n = placement.shape[0]
    n_dev = bandwidth.shape[0]
    cap_al, cap_fr, cap_fq = _capacities(n, succ.shape[0])
    # Work arrays carved out of the caller's scratch buffers (no allocation per call).
    ready, f0 = _carve(scratch_f, 0, n)
    rq_time, f0 = _carve(scratch_f, f0, n_dev * n)  # device d's ready heap at offset d * n
    al_time, f0 = _carve(scratch_f, f0, n_dev * cap_al)  # remote copies before they arrive
    fr_time, f0 = _carve(scratch_f, f0, n_dev * cap_fr)  # frees after the current time
    fq_time, f0 = _carve(scratch_f, f0, n_dev * cap_fq)  # frees at their own round, in order
    fq_bytes, f0 = _carve(scratch_f, f0, n_dev * cap_fq)
    buf_end, f0 = _carve(scratch_f, f0, n)
    busy_until, f0 = _carve(scratch_f, f0, n_dev)
    chan_free, f0 = _carve(scratch_f, f0, n_dev)
    link_free, f0 = _carve(scratch_f, f0, n_dev * n_dev)
    remote, f0 = _carve(scratch_f, f0, n_dev)
    arrival, f0 = _carve(scratch_f, f0, n_dev)
    live, _ = _carve(scratch_f, f0, n_dev)
    pending, i0 = _carve(scratch_i, 0, n)
    rq_node, i0 = _carve(scratch_i, i0, n_dev * n)
    al_key, i0 = _carve(scratch_i, i0, n_dev * cap_al)
    fr_key, i0 = _carve(scratch_i, i0, n_dev * cap_fr)
    buf_left, i0 = _carve(scratch_i, i0, n)
    copy_left, i0 = _carve(scratch_i, i0, n * n_dev)
    rq_size, i0 = _carve(scratch_i, i0, n_dev)
    al_size, i0 = _carve(scratch_i, i0, n_dev)
    fr_size, i0 = _carve(scratch_i, i0, n_dev)
    running, i0 = _carve(scratch_i, i0, n_dev)
    fq_head, i0 = _carve(scratch_i, i0, n_dev)
    fq_tail, i0 = _carve(scratch_i, i0, n_dev)
    done, _ = _carve(scratch_i, i0, n_dev)

    pending[:] = in_degree
    ready[:] = 0.0
    rq_size[:] = 0
    al_size[:] = 0
    fr_size[:] = 0
    fq_head[:] = 0
    fq_tail[:] = 0
    running[:] = -1
    busy_until[:] = 0.0
    chan_free[:] = 0.0
    link_free[:] = 0.0
    live[:] = 0.0
    busy[:] = 0.0
    comm[:] = 0.0
    peak[:] = 0.0
    copy_left[:] = 0
    for v in range(n):
        if pending[v] == 0:
            d = placement[v]
            rq_size[d] = _heap_push(rq_time, rq_node, d * n, rq_size[d], 0.0, v)

    while True:
        # The next event: a running op's finish, or an idle device's next possible start.
        t = np.inf
        for d in range(n_dev):
            if running[d] >= 0:
                cand = finish[running[d]]
            elif rq_size[d] > 0:
                cand = max(busy_until[d], rq_time[d * n])
            else:
                continue
            if cand < t:
                t = cand
        if t == np.inf:
            break
        # Round 1: apply every completion at t, in node order (it decides channel order).
        m = 0
        for d in range(n_dev):
            u = running[d]
            if u >= 0 and finish[u] == t:
                j = m
                while j > 0 and done[j - 1] > u:
                    done[j] = done[j - 1]
                    j -= 1
                done[j] = u
                m += 1
                running[d] = -1
        for j in range(m):  # each completion: send outputs, wake consumers, settle lifetimes
            u = done[j]
            s = placement[u]
            if _remote_edge_times(
                u,
                placement,
                succ_ptr,
                succ,
                succ_edge,
                edge_time,
                edge_bytes,
                bandwidth,
                latency,
                remote,
            ):
                if comm_model == PLACETO:
                    longest = remote.max()
                    begin = max(t, chan_free[s])
                    chan_free[s] = begin + longest + transfer_gap
                    comm[s] += longest
                    for d in range(n_dev):
                        arrival[d] = begin + longest
                elif comm_model == LINKS:
                    for d in range(n_dev):
                        if remote[d] >= 0.0:
                            begin = max(t, link_free[s * n_dev + d])
                            arrival[d] = begin + remote[d]
                            link_free[s * n_dev + d] = arrival[d] + transfer_gap
                            comm[s] += remote[d]
                else:
                    for d in range(n_dev):
                        if remote[d] >= 0.0:
                            arrival[d] = t + remote[d]
                            comm[s] += remote[d]
            # u's output: freed on s once its local consumers finish and its copies have left;
            # a copy on each consumer device from its arrival until the consumers there finish.
            size = out_bytes[u]
            end = t
            local = 0
            for k in range(succ_ptr[u], succ_ptr[u + 1]):
                v = succ[k]
                d = placement[v]
                a = t if d == s else arrival[d]
                if a > ready[v]:
                    ready[v] = a
                pending[v] -= 1
                if pending[v] == 0:
                    rq_size[d] = _heap_push(rq_time, rq_node, d * n, rq_size[d], ready[v], v)
                if size > 0.0:
                    if d == s:
                        local += 1
                    else:
                        if a > end:
                            end = a
                        slot = u * n_dev + d
                        if copy_left[slot] == 0:
                            al_size[d] = _heap_push(al_time, al_key, d * cap_al, al_size[d], a, u)
                        copy_left[slot] += 1
            if size > 0.0:
                buf_left[u] = local
                buf_end[u] = end
                if local == 0:
                    if end > t:  # waits for a copy to leave: a later free, out of order
                        fr_size[s] = _heap_push(fr_time, fr_key, s * cap_fr, fr_size[s], end, u)
                    else:
                        _free_now(s, t, size, cap_fq, fq_time, fq_bytes, fq_head, fq_tail)
            # u was a consumer: the last one of a tensor frees it.
            for k in range(pred_ptr[u], pred_ptr[u + 1]):
                w = pred[k]
                if out_bytes[w] <= 0.0:
                    continue
                if placement[w] == s:
                    buf_left[w] -= 1
                    if t > buf_end[w]:
                        buf_end[w] = t
                    if buf_left[w] == 0:
                        if buf_end[w] > t:
                            fr_size[s] = _heap_push(
                                fr_time, fr_key, s * cap_fr, fr_size[s], buf_end[w], w
                            )
                        else:
                            _free_now(
                                s, t, out_bytes[w], cap_fq, fq_time, fq_bytes, fq_head, fq_tail
                            )
                else:
                    slot = w * n_dev + s
                    copy_left[slot] -= 1
                    if copy_left[slot] == 0:  # its last consumer finishes now
                        _free_now(s, t, out_bytes[w], cap_fq, fq_time, fq_bytes, fq_head, fq_tail)
        # Round 2: every free device starts its earliest-ready op, if one is ready by t.
        for d in range(n_dev):
            if running[d] < 0 and busy_until[d] <= t and rq_size[d] > 0 and rq_time[d * n] <= t:
                v = rq_node[d * n]
                rq_size[d] = _heap_pop(rq_time, rq_node, d * n, rq_size[d])
                duration = durations[v, d]
                start[v] = t
                finish[v] = t + duration
                busy[d] += duration
                busy_until[d] = finish[v] + (op_gap if duration > 0.0 else 0.0)
                running[d] = v
                if out_bytes[v] > 0.0:
                    _memory_until(
                        d,
                        t,
                        cap_al,
                        cap_fr,
                        cap_fq,
                        out_bytes,
                        live,
                        peak,
                        al_time,
                        al_key,
                        al_size,
                        fr_time,
                        fr_key,
                        fr_size,
                        fq_time,
                        fq_bytes,
                        fq_head,
                        fq_tail,
                    )
                    live[d] += out_bytes[v]
                    if live[d] > peak[d]:
                        peak[d] = live[d]
    for d in range(n_dev):  # copies still to arrive may raise a peak
        _memory_until(
            d,
            np.inf,
            cap_al,
            cap_fr,
            cap_fq,
            out_bytes,
            live,
            peak,
            al_time,
            al_key,
            al_size,
            fr_time,
            fr_key,
            fr_size,
            fq_time,
            fq_bytes,
            fq_head,
            fq_tail,
        )
    _memory(placement, mem_bytes, capacity, memory, peak, excess)
    runtime = 0.0
    for v in range(n):
        if finish[v] > runtime:
            runtime = finish[v]
    return runtime


@njit(cache=True, inline="always")
def _memory(placement, mem_bytes, capacity, memory, peak, excess):
    """Resident bytes per device into ``memory``; ``peak`` (live activations on entry) gets
    the resident bytes added; ``excess`` is what exceeds each device's ``capacity``."""
    memory[:] = 0.0
    for v in range(placement.shape[0]):
        memory[placement[v]] += mem_bytes[v]
    for d in range(memory.shape[0]):
        peak[d] += memory[d]
        excess[d] = max(peak[d] - capacity[d], 0.0)


@njit(cache=True, inline="always")
def _free_now(d, t, size, cap, fq_time, fq_bytes, fq_head, fq_tail):
    """Queue a free of ``size`` bytes at the current time ``t`` on device ``d``.

    Rounds advance in time, so these frees arrive in time order: a queue (merging frees of
    one instant) replaces a heap.
    """
    tail = d * cap + fq_tail[d]
    if fq_tail[d] > fq_head[d] and fq_time[tail - 1] == t:
        fq_bytes[tail - 1] += size
    else:
        fq_time[tail] = t
        fq_bytes[tail] = size
        fq_tail[d] += 1


@njit(cache=True, inline="always")
def _memory_until(
    d,
    t,
    cap_al,
    cap_fr,
    cap_fq,
    out_bytes,
    live,
    peak,
    al_time,
    al_key,
    al_size,
    fr_time,
    fr_key,
    fr_size,
    fq_time,
    fq_bytes,
    fq_head,
    fq_tail,
):
    """Apply device ``d``'s pending allocations at times <= ``t`` in time order, each after the
    frees strictly before it (allocations count before frees at equal times); then the frees
    before ``t``."""
    al, fr, fq = d * cap_al, d * cap_fr, d * cap_fq
    while True:
        alloc = al_size[d] > 0 and al_time[al] <= t
        bound = al_time[al] if alloc else t
        while fq_head[d] < fq_tail[d] and fq_time[fq + fq_head[d]] < bound:
            live[d] -= fq_bytes[fq + fq_head[d]]
            fq_head[d] += 1
        while fr_size[d] > 0 and fr_time[fr] < bound:
            live[d] -= out_bytes[fr_key[fr]]
            fr_size[d] = _heap_pop(fr_time, fr_key, fr, fr_size[d])
        if not alloc:
            return
        live[d] += out_bytes[al_key[al]]
        if live[d] > peak[d]:
            peak[d] = live[d]
        al_size[d] = _heap_pop(al_time, al_key, al, al_size[d])


@njit(cache=True, inline="always")
def _capacities(n: int, n_edges: int) -> tuple[int, int, int]:
    """Per-device capacities of the remote-copy heap (one copy per producer and edge at most),
    the later-free heap (local tensors only) and the current-round free queue (both)."""
    copies = min(n, n_edges)
    return max(copies, 1), n, n + copies


def scratch_sizes(num_nodes: int, num_edges: int, num_devices: int) -> tuple[int, int]:
    """Lengths of the float and int scratch arrays :func:`step_time` needs."""
    n, d = num_nodes, num_devices
    cap_al, cap_fr, cap_fq = _capacities.py_func(n, num_edges)
    floats = 2 * n + d * n + d * (cap_al + cap_fr + 2 * cap_fq) + 5 * d + d * d
    ints = 2 * n + d * n + d * (cap_al + cap_fr) + n * d + 7 * d
    return floats, ints


# --------------------------------------------------------------------------- pipeline
@njit(cache=True)
def pipeline(
    placement,
    durations,
    succ_ptr,
    succ,
    succ_edge,
    edge_time,
    edge_bytes,
    bandwidth,
    latency,
    is_cpu,
    mem_bytes,
    capacity,
    busy,
    comm,
    memory,
    peak,
    excess,
):
    """Tarnawski et al.'s max load; fills busy/comm and the memory arrays (the peak is the
    resident memory), returns the largest load."""
    n = placement.shape[0]
    n_dev = bandwidth.shape[0]
    remote = np.empty(n_dev)
    busy[:] = 0.0
    comm[:] = 0.0
    peak[:] = 0.0
    _memory(placement, mem_bytes, capacity, memory, peak, excess)
    for u in range(n):
        s = placement[u]
        busy[s] += durations[u, s]
        if not _remote_edge_times(
            u,
            placement,
            succ_ptr,
            succ,
            succ_edge,
            edge_time,
            edge_bytes,
            bandwidth,
            latency,
            remote,
        ):
            continue
        for d in range(n_dev):
            if remote[d] >= 0.0 and not is_cpu[d]:
                comm[d] += remote[d]
        if not is_cpu[s]:
            comm[s] += remote.max()
    return (busy + comm).max()


@njit(cache=True, inline="always")
def _charge_transfers(
    u,
    sign,
    placement,
    succ_ptr,
    succ,
    succ_edge,
    edge_time,
    edge_bytes,
    bandwidth,
    latency,
    is_cpu,
    remote,
    comm,
):
    """Add (``sign`` = 1) or remove (-1) producer ``u``'s transfer charges to ``comm``."""
    if not _remote_edge_times(
        u, placement, succ_ptr, succ, succ_edge, edge_time, edge_bytes, bandwidth, latency, remote
    ):
        return
    for d in range(remote.shape[0]):
        if remote[d] >= 0.0 and not is_cpu[d]:
            comm[d] += sign * remote[d]
    s = placement[u]
    if not is_cpu[s]:
        comm[s] += sign * remote.max()


@njit(cache=True)
def pipeline_move(
    members,
    device,
    placement,
    durations,
    succ_ptr,
    succ,
    succ_edge,
    pred_ptr,
    pred,
    edge_time,
    edge_bytes,
    bandwidth,
    latency,
    is_cpu,
    mem_bytes,
    busy,
    unsupported,
    comm,
    memory,
    mark,
    touched,
    remote,
):
    """Move ``members`` (one colocation group) to ``device``, updating the pipeline loads and
    the resident memory; returns the new max load.

    Only the members' durations and the transfer charges of the members and of their
    producers change, so a move costs the group's in- and out-degrees, its producers'
    out-degrees and the devices, not the graph. ``busy`` holds finite durations and
    ``unsupported`` counts, per device, the nodes it cannot run (whose time is infinite).
    ``mark`` (all false) and ``touched`` are scratch arrays of one entry per node.
    """
    count = 0
    moving = False
    for m in members:
        moving = moving or placement[m] != device
    for m in members:  # every producer whose charges may change, once (none for a no-op)
        if not moving:
            break
        if not mark[m]:
            mark[m] = True
            touched[count] = m
            count += 1
        for k in range(pred_ptr[m], pred_ptr[m + 1]):
            p = pred[k]
            if not mark[p]:
                mark[p] = True
                touched[count] = p
                count += 1
    for i in range(count):
        _charge_transfers(
            touched[i],
            -1.0,
            placement,
            succ_ptr,
            succ,
            succ_edge,
            edge_time,
            edge_bytes,
            bandwidth,
            latency,
            is_cpu,
            remote,
            comm,
        )
    for m in members:
        for sign, d in ((-1.0, placement[m]), (1.0, device)):
            duration = durations[m, d]
            if np.isinf(duration):
                unsupported[d] += int(sign)
            else:
                busy[d] += sign * duration
            memory[d] += sign * mem_bytes[m]
        placement[m] = device
    for i in range(count):
        _charge_transfers(
            touched[i],
            1.0,
            placement,
            succ_ptr,
            succ,
            succ_edge,
            edge_time,
            edge_bytes,
            bandwidth,
            latency,
            is_cpu,
            remote,
            comm,
        )
        mark[touched[i]] = False
    top = 0.0
    for d in range(busy.shape[0]):
        load = np.inf if unsupported[d] > 0 else busy[d] + comm[d]
        if load > top:
            top = load
    return top


@njit(cache=True)
def all_below(values, bound):
    """Whether every entry of ``values`` lies in ``[0, bound)`` (placement checks: one compiled
    pass instead of two numpy reductions)."""
    for x in values:  # noqa: SIM110  (a loop numba compiles; no generator)
        if x < 0 or x >= bound:
            return False
    return True


@njit(cache=True)
def resident_memory(placement, mem_bytes, capacity, memory, peak, excess):
    """:func:`_memory` on its own, for placements no kernel simulates (unsupported kinds)."""
    _memory(placement, mem_bytes, capacity, memory, peak, excess)
