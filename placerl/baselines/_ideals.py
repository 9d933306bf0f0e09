"""numba kernels of the Tarnawski DP: enumerate ideals, then push the DP over ideal pairs.

Why compiled: the DP visits every pair of ideals ``I' < J`` whose difference could be a part,
tens of millions on wide graphs, and updates a load incrementally at each step; in Python that
is minutes per million pairs, here it is a fraction of a second.

Ideals are sets of blocks closed under predecessors of the ordering edges; blocks are numbered
in a topological order. Both kernels walk the ideals above a start ideal with *reverse search*
(Avis and Fukuda): the children of ``J`` are ``J + {b}`` for the addable blocks ``b`` numbered
above every block added since the start, so each ideal is reached exactly once, with no hash
set, and a monotone bound (duration, memory) prunes whole subtrees. Each ideal is stored as
(parent ideal, added block); its Zobrist key (the XOR of one random 64-bit word per block)
finds its index in an open-addressing table.
"""

from __future__ import annotations

import numpy as np
from numba import njit

INF = np.inf


# ----------------------------------------------------------------------- walking helpers
@njit(cache=True)
def _ensure(buf: np.ndarray, needed: int) -> np.ndarray:
    """``buf``, grown (doubled) to hold at least ``needed`` entries."""
    if needed <= buf.shape[0]:
        return buf
    out = np.empty(max(2 * buf.shape[0], needed), dtype=buf.dtype)
    out[: buf.shape[0]] = buf
    return out


@njit(cache=True)
def _add_block(v, succ_ptr, succ, missing):
    """Block ``v`` joins the ideal: its successors miss one predecessor less."""
    for k in range(succ_ptr[v], succ_ptr[v + 1]):
        missing[succ[k]] -= 1


@njit(cache=True)
def _remove_block(v, succ_ptr, succ, missing):
    for k in range(succ_ptr[v], succ_ptr[v + 1]):
        missing[succ[k]] += 1


@njit(cache=True)
def _child_candidates(buf, top, rest, rest_end, v, succ_ptr, succ, missing):
    """Write the child's addable blocks at ``buf[top:]``: the parent's remaining candidates
    (all numbered above ``v``) merged with ``v``'s successors that became addable; both runs are
    increasing, so the result is too. Returns (buf, new top)."""
    buf = _ensure(buf, top + (rest_end - rest) + (succ_ptr[v + 1] - succ_ptr[v]))
    k, k_end = succ_ptr[v], succ_ptr[v + 1]
    while rest < rest_end or k < k_end:
        if k < k_end and missing[succ[k]] != 0:
            k += 1
        elif k < k_end and (rest == rest_end or succ[k] < buf[rest]):
            buf[top] = succ[k]
            top += 1
            k += 1
        else:
            buf[top] = buf[rest]
            top += 1
            rest += 1
    return buf, top


@njit(cache=True)
def _root_candidates(buf, missing, in_start):
    """Addable blocks of the start ideal, increasing, at ``buf[0:]``; returns (buf, count)."""
    count = 0
    for b in range(missing.shape[0]):
        if missing[b] == 0 and not in_start[b]:
            buf[count] = b
            count += 1
    return buf, count


# ----------------------------------------------------------------------------- ideals
@njit(cache=True)
def level_width(succ_ptr, succ, n):
    """The most blocks at one depth (longest path from a source). Blocks at one depth form
    an antichain, whose subsets have distinct down-sets: there are at least ``2**width``
    ideals, a bound that costs one pass over the edges instead of enumerating them."""
    depth = np.zeros(n, dtype=np.int64)
    for v in range(n):  # blocks are numbered topologically: v's depth is final here
        for k in range(succ_ptr[v], succ_ptr[v + 1]):
            depth[succ[k]] = max(depth[succ[k]], depth[v] + 1)
    return np.bincount(depth).max() if n else 0


@njit(cache=True)
def enumerate_ideals(succ_ptr, succ, indegree, zobrist, max_ideals):
    """All ideals, as a tree rooted at the empty ideal (index 0).

    Returns:
        ``(count, parent, added, key, size)``: ideal ``i`` is ideal ``parent[i]`` plus block
        ``added[i]``, with Zobrist key ``key[i]`` and ``size[i]`` blocks. ``count`` is -1 when
        there are more than ``max_ideals`` ideals.
    """
    n_blocks = indegree.shape[0]
    parent = np.empty(max_ideals, dtype=np.int64)
    added = np.empty(max_ideals, dtype=np.int64)
    key = np.empty(max_ideals, dtype=np.uint64)
    size = np.empty(max_ideals, dtype=np.int64)
    parent[0], added[0], key[0], size[0] = -1, -1, 0, 0
    count = 1
    missing = indegree.copy()
    buf = np.empty(4 * n_blocks + 16, dtype=np.int64)
    buf, top = _root_candidates(buf, missing, np.zeros(n_blocks, dtype=np.bool_))
    f_block = np.empty(n_blocks + 1, dtype=np.int64)
    f_start = np.empty(n_blocks + 1, dtype=np.int64)
    f_next = np.empty(n_blocks + 1, dtype=np.int64)
    f_end = np.empty(n_blocks + 1, dtype=np.int64)
    f_id = np.empty(n_blocks + 1, dtype=np.int64)
    depth = 0
    f_block[0], f_start[0], f_next[0], f_end[0], f_id[0] = -1, 0, 0, top, 0
    while depth >= 0:
        if f_next[depth] == f_end[depth]:
            if f_block[depth] >= 0:
                _remove_block(f_block[depth], succ_ptr, succ, missing)
            top = f_start[depth]
            depth -= 1
            continue
        v = buf[f_next[depth]]
        f_next[depth] += 1
        if count == max_ideals:
            return -1, parent, added, key, size
        me = f_id[depth]
        parent[count], added[count] = me, v
        key[count], size[count] = key[me] ^ zobrist[v], depth + 1
        _add_block(v, succ_ptr, succ, missing)
        start = top
        buf, top = _child_candidates(
            buf, top, f_next[depth], f_end[depth], v, succ_ptr, succ, missing
        )
        depth += 1
        f_block[depth], f_start[depth], f_next[depth], f_end[depth] = v, start, start, top
        f_id[depth] = count
        count += 1
    return count, parent, added, key, size


@njit(cache=True)
def ideal_rest(parent, added, block_work, count):
    """Work outside each ideal: the total ``block_work`` minus the ideal's blocks' work."""
    inside = np.zeros(count)
    for i in range(1, count):  # a parent always precedes its children
        inside[i] = inside[parent[i]] + block_work[added[i]]
    return block_work.sum() - inside


@njit(cache=True)
def build_table(key, count):
    """Open-addressing table Zobrist key -> ideal index; ``ok`` is False on a key collision."""
    capacity = 1
    while capacity < 2 * count:
        capacity *= 2
    keys = np.zeros(capacity, dtype=np.uint64)
    ids = np.full(capacity, -1, dtype=np.int64)
    mask = capacity - 1
    for i in range(count):
        slot = np.int64(key[i] & np.uint64(mask))
        while ids[slot] >= 0:
            if keys[slot] == key[i]:
                return keys, ids, False
            slot = (slot + 1) & mask
        keys[slot], ids[slot] = key[i], i
    return keys, ids, True


@njit(cache=True)
def _lookup(keys, ids, h):
    mask = keys.shape[0] - 1
    slot = np.int64(h & np.uint64(mask))
    while ids[slot] >= 0:
        if keys[slot] == h:
            return ids[slot]
        slot = (slot + 1) & mask
    return -1


# --------------------------------------------------------------------------------- loads
@njit(cache=True)
def _charge(u, in_part, block_of, g_ptr, g_succ, g_edge, edge_time):
    """Transfer seconds node ``u`` costs the part: its longest edge across the part's border."""
    mine = in_part[block_of[u]]
    best = 0.0
    for k in range(g_ptr[u], g_ptr[u + 1]):
        if in_part[block_of[g_succ[k]]] != mine:
            t = edge_time[g_edge[k]]
            if t > best:
                best = t
    return best


@njit(cache=True)
def _update_charges(
    v,
    aff_ptr,
    aff,
    charge,
    log_node,
    log_old,
    n_log,
    in_part,
    block_of,
    g_ptr,
    g_succ,
    g_edge,
    edge_time,
):
    """Recompute the charges block ``v`` joining the part changes; log old values for undo.
    Returns (change of the part's communication seconds, new log length)."""
    delta = 0.0
    for k in range(aff_ptr[v], aff_ptr[v + 1]):
        u = aff[k]
        new = _charge(u, in_part, block_of, g_ptr, g_succ, g_edge, edge_time)
        if new != charge[u]:
            log_node[n_log], log_old[n_log] = u, charge[u]
            n_log += 1
            delta += new - charge[u]
            charge[u] = new
    return delta, n_log


# ------------------------------------------------------------------------------------ DP
@njit(cache=True)
def dp_sweep(
    sources,
    parent,
    added,
    table_keys,
    table_ids,
    key,
    succ_ptr,
    succ,
    indegree,
    zobrist,
    block_dur,
    block_mem,
    type_count,
    type_cpu,
    type_cap,
    digit,
    stride,
    remaining,
    rest,
    block_of,
    g_ptr,
    g_succ,
    g_edge,
    edge_time,
    aff_ptr,
    aff,
    budget,
    full_id,
    dp,
    back_ideal,
    back_type,
):
    """Push ``dp[I']`` to every ideal ``J > I'`` whose part ``J - I'`` fits the budget.

    ``dp[i, s]`` is the least max-load of a split of ideal ``i`` into parts using at most
    ``digit[s, t]`` devices of type ``t``; ``back_*`` record the argmin. Every source must come
    after all its sub-ideals (sources are processed in order). A part is pruned when on every
    type its duration exceeds ``budget`` or its memory the capacity (both only grow with the
    part). A state is skipped when the ``rest`` of the work (a lower bound on the seconds left
    outside the ideal) exceeds what its ``remaining`` devices can do within ``budget``. Returns
    the number of (I', J) pairs visited.
    """
    n_blocks, n_types = block_dur.shape
    n_states = dp.shape[1]
    full_state = n_states - 1
    in_part = np.zeros(n_blocks, dtype=np.bool_)
    in_start = np.zeros(n_blocks, dtype=np.bool_)
    missing = np.empty(n_blocks, dtype=np.int64)
    charge = np.zeros(block_of.shape[0])
    log_node = np.empty(aff.shape[0] + 1, dtype=np.int64)
    log_old = np.empty(aff.shape[0] + 1)
    buf = np.empty(4 * n_blocks + 16, dtype=np.int64)
    f_block = np.empty(n_blocks + 1, dtype=np.int64)
    f_start = np.empty(n_blocks + 1, dtype=np.int64)
    f_next = np.empty(n_blocks + 1, dtype=np.int64)
    f_end = np.empty(n_blocks + 1, dtype=np.int64)
    f_log = np.empty(n_blocks + 1, dtype=np.int64)
    f_hash = np.empty(n_blocks + 1, dtype=np.uint64)
    f_dur = np.zeros((n_blocks + 1, n_types))
    f_mem = np.zeros(n_blocks + 1)
    f_comm = np.zeros(n_blocks + 1)
    durs = np.empty(n_types)
    tolerance = 1e-9 * (rest[0] + (budget if budget < INF else 0.0))
    room = np.empty(n_states)  # work the remaining devices can still take, per state
    for s in range(n_states):
        room[s] = remaining[s] * budget + tolerance if remaining[s] > 0 else tolerance
    relax_from = np.empty((n_types, n_states), dtype=np.int64)
    n_relax = np.zeros(n_types, dtype=np.int64)
    pairs = 0
    for i0 in sources:
        # The states of I' worth extending by one more device of each type.
        n_relax[:] = 0
        for t in range(n_types):
            for s in range(full_state):
                reached = dp[i0, s] < INF and dp[i0, s] <= budget
                if reached and digit[s, t] < type_count[t] and rest[i0] <= room[s]:
                    relax_from[t, n_relax[t]] = s
                    n_relax[t] += 1
        if n_relax.sum() == 0:
            continue
        # The start ideal's blocks and the blocks addable to it.
        in_start[:] = False
        x = i0
        while x > 0:
            in_start[added[x]] = True
            x = parent[x]
        missing[:] = indegree
        for b in range(n_blocks):
            if in_start[b]:
                _add_block(b, succ_ptr, succ, missing)
        buf, top = _root_candidates(buf, missing, in_start)
        depth, n_log = 0, 0
        f_block[0], f_start[0], f_next[0], f_end[0], f_log[0] = -1, 0, 0, top, 0
        f_hash[0], f_mem[0], f_comm[0] = key[i0], 0.0, 0.0
        f_dur[0, :] = 0.0
        while depth >= 0:
            if f_next[depth] == f_end[depth]:
                v = f_block[depth]
                if v >= 0:
                    in_part[v] = False
                    _remove_block(v, succ_ptr, succ, missing)
                    while n_log > f_log[depth]:
                        n_log -= 1
                        charge[log_node[n_log]] = log_old[n_log]
                top = f_start[depth]
                depth -= 1
                continue
            v = buf[f_next[depth]]
            f_next[depth] += 1
            mem = f_mem[depth] + block_mem[v]
            fits_any = False
            for t in range(n_types):
                durs[t] = f_dur[depth, t] + block_dur[v, t]
                if type_count[t] > 0 and durs[t] <= budget and mem <= type_cap[t]:
                    fits_any = True
            if not fits_any:
                continue  # every superset of this part is over budget too
            # Descend: the part gains block v.
            in_part[v] = True
            _add_block(v, succ_ptr, succ, missing)
            log_mark = n_log
            delta, n_log = _update_charges(
                v,
                aff_ptr,
                aff,
                charge,
                log_node,
                log_old,
                n_log,
                in_part,
                block_of,
                g_ptr,
                g_succ,
                g_edge,
                edge_time,
            )
            start = top
            buf, top = _child_candidates(
                buf, top, f_next[depth], f_end[depth], v, succ_ptr, succ, missing
            )
            h = f_hash[depth] ^ zobrist[v]
            comm = f_comm[depth] + delta
            depth += 1
            f_block[depth], f_start[depth], f_next[depth], f_end[depth] = v, start, start, top
            f_log[depth], f_hash[depth], f_mem[depth], f_comm[depth] = log_mark, h, mem, comm
            f_dur[depth, :] = durs
            # Relax dp[J] from dp[I'] with the part J - I' on one more device of each type.
            pairs += 1
            j = _lookup(table_keys, table_ids, h)
            rest_j = rest[j]
            for t in range(n_types):
                load = durs[t] if type_cpu[t] else durs[t] + comm
                if load > budget or mem > type_cap[t]:
                    continue
                for r in range(n_relax[t]):
                    s = relax_from[t, r]
                    s2 = s + stride[t]
                    if rest_j > room[s2] or (s2 == full_state and j != full_id):
                        continue  # the devices left cannot finish the rest
                    cand = max(dp[i0, s], load)
                    if cand < dp[j, s2]:
                        dp[j, s2], back_ideal[j, s2], back_type[j, s2] = cand, i0, t
    return pairs
