"""numba-compiled simulation kernels (semantics in :mod:`placerl.sim`).

These are the inner loop of every RL experiment (one call per env step), so they work on flat
arrays with preallocated binary heaps instead of Python objects; :mod:`placerl.sim.reference`
is the slow, readable twin they are tested against. Kernels take the placement and the
precomputed arrays of a :class:`~placerl.sim.CostModel` and fill caller-provided output arrays.
"""

from __future__ import annotations

import numpy as np
from numba import njit

PLACETO, LINKS, IDEAL = 0, 1, 2
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
def _remote_edge_times(u, placement, succ_ptr, succ, succ_edge, edge_time, edge_bytes,
                       bandwidth, latency, remote):  # fmt: skip
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
@njit(cache=True)
def step_time(placement, durations, in_degree, succ_ptr, succ, succ_edge, edge_time, edge_bytes,
              bandwidth, latency, comm_model, transfer_gap, op_gap,
              start, finish, edge_arrival, busy, comm):  # fmt: skip
    """Event-driven step time; fills start/finish/edge_arrival/busy/comm, returns the runtime."""
    n = placement.shape[0]
    n_dev = bandwidth.shape[0]
    pending = in_degree.copy()
    ready = np.zeros(n)
    ev_time = np.empty(3 * n + 2)
    ev_node = np.empty(3 * n + 2, dtype=np.int64)  # node that finishes, or -1 for a wake-up
    n_ev = 0
    rq_time = np.empty(n_dev * n)  # device d's ready heap lives at offset d * n
    rq_node = np.empty(n_dev * n, dtype=np.int64)
    rq_size = np.zeros(n_dev, dtype=np.int64)
    busy_until = np.zeros(n_dev)
    chan_free = np.zeros(n_dev)
    link_free = np.zeros((n_dev, n_dev))
    remote = np.empty(n_dev)
    arrival = np.empty(n_dev)
    busy[:] = 0.0
    comm[:] = 0.0

    for v in range(n):
        if pending[v] == 0:
            d = placement[v]
            rq_size[d] = _heap_push(rq_time, rq_node, d * n, rq_size[d], 0.0, v)
    n_ev = _heap_push(ev_time, ev_node, 0, n_ev, 0.0, -1)

    while n_ev > 0:
        t = ev_time[0]
        # Round 1: apply every completion at time t.
        while n_ev > 0 and ev_time[0] == t:
            u = ev_node[0]
            n_ev = _heap_pop(ev_time, ev_node, 0, n_ev)
            if u < 0:
                continue
            s = placement[u]
            if _remote_edge_times(u, placement, succ_ptr, succ, succ_edge, edge_time, edge_bytes,
                                  bandwidth, latency, remote):  # fmt: skip
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
                            begin = max(t, link_free[s, d])
                            arrival[d] = begin + remote[d]
                            link_free[s, d] = arrival[d] + transfer_gap
                            comm[s] += remote[d]
                else:
                    for d in range(n_dev):
                        if remote[d] >= 0.0:
                            arrival[d] = t + remote[d]
                            comm[s] += remote[d]
            for k in range(succ_ptr[u], succ_ptr[u + 1]):
                v = succ[k]
                d = placement[v]
                a = t if d == s else arrival[d]
                edge_arrival[succ_edge[k]] = a
                if a > ready[v]:
                    ready[v] = a
                pending[v] -= 1
                if pending[v] == 0:
                    rq_size[d] = _heap_push(rq_time, rq_node, d * n, rq_size[d], ready[v], v)
                    if ready[v] > t:  # ready now: this round's dispatch sees it anyway
                        n_ev = _heap_push(ev_time, ev_node, 0, n_ev, ready[v], -1)
        # Round 2: every free device starts its earliest-ready op, if one is ready by t.
        for d in range(n_dev):
            if busy_until[d] <= t and rq_size[d] > 0 and rq_time[d * n] <= t:
                v = rq_node[d * n]
                rq_size[d] = _heap_pop(rq_time, rq_node, d * n, rq_size[d])
                duration = durations[v, d]
                start[v] = t
                finish[v] = t + duration
                busy[d] += duration
                busy_until[d] = finish[v] + (op_gap if duration > 0.0 else 0.0)
                n_ev = _heap_push(ev_time, ev_node, 0, n_ev, finish[v], v)
                if busy_until[d] > finish[v]:
                    n_ev = _heap_push(ev_time, ev_node, 0, n_ev, busy_until[d], -1)
    return finish.max()


@njit(cache=True)
def peak_activations(placement, start, finish, edge_arrival, succ_ptr, succ, succ_edge, out_bytes,
                     n_dev, peak):  # fmt: skip
    """Peak bytes of live activations per device (see :mod:`placerl.sim`), into ``peak``."""
    n = placement.shape[0]
    cap = n + succ.shape[0]
    dev = np.empty(cap, dtype=np.int64)
    lo = np.empty(cap)
    hi = np.empty(cap)
    size = np.empty(cap)
    copy_lo = np.empty(n_dev)
    copy_hi = np.empty(n_dev)
    m = 0
    for u in range(n):
        if out_bytes[u] <= 0.0:
            continue
        s = placement[u]
        end = finish[u]
        copy_lo[:] = np.inf
        copy_hi[:] = -np.inf
        for k in range(succ_ptr[u], succ_ptr[u + 1]):
            v = succ[k]
            d = placement[v]
            if d == s:
                end = max(end, finish[v])
            else:
                a = edge_arrival[succ_edge[k]]
                end = max(end, a)
                copy_lo[d] = min(copy_lo[d], a)
                copy_hi[d] = max(copy_hi[d], finish[v])
        dev[m], lo[m], hi[m], size[m] = s, start[u], end, out_bytes[u]
        m += 1
        for d in range(n_dev):
            if copy_hi[d] > -np.inf:
                dev[m], lo[m], hi[m], size[m] = d, copy_lo[d], copy_hi[d], out_bytes[u]
                m += 1
    # Sweep allocations and frees in time order, allocations first at equal times (so the
    # order among allocations, or among frees, at one instant does not change the peak).
    alloc = np.argsort(lo[:m])
    free = np.argsort(hi[:m])
    current = np.zeros(n_dev)
    peak[:] = 0.0
    j = 0
    for i in alloc:
        while j < m and hi[free[j]] < lo[i]:
            current[dev[free[j]]] -= size[free[j]]
            j += 1
        d = dev[i]
        current[d] += size[i]
        if current[d] > peak[d]:
            peak[d] = current[d]


# --------------------------------------------------------------------------- pipeline
@njit(cache=True)
def pipeline(placement, durations, succ_ptr, succ, succ_edge, edge_time, edge_bytes, bandwidth,
             latency, is_cpu, busy, comm):  # fmt: skip
    """Tarnawski et al.'s max load; fills busy/comm per device, returns the largest load."""
    n = placement.shape[0]
    n_dev = bandwidth.shape[0]
    remote = np.empty(n_dev)
    busy[:] = 0.0
    comm[:] = 0.0
    for u in range(n):
        s = placement[u]
        busy[s] += durations[u, s]
        if not _remote_edge_times(u, placement, succ_ptr, succ, succ_edge, edge_time, edge_bytes,
                                  bandwidth, latency, remote):  # fmt: skip
            continue
        for d in range(n_dev):
            if remote[d] >= 0.0 and not is_cpu[d]:
                comm[d] += remote[d]
        if not is_cpu[s]:
            comm[s] += remote.max()
    return (busy + comm).max()
