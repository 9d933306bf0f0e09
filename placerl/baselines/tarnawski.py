"""``tarnawski_dp``: the optimal contiguous split for the max-load (pipeline) objective.

The DP of Tarnawski et al. (NeurIPS 2020): ``dp[J][s]`` is the least max-load of a contiguous
split of ideal ``J`` using at most ``s[t]`` devices of each type ``t``;
``dp[J][s + e_t] = min over ideals I' < J of max(dp[I'][s], load_t(J - I'))``. The model (blocks,
ordering edges, device types) is :mod:`placerl.baselines.split_model`; the kernels are in
:mod:`placerl.baselines._ideals`.

What keeps it fast on wide graphs (the C++ of the paper stops at 60,000 ideals and does not
finish InceptionV3's 36,600 in 10 minutes with 14 GB):

* an upper bound first: the same DP restricted to the prefixes of a few topological orders (a
  chain of ideals, O(B^2) pairs) gives a good split in milliseconds;
* a *sweep* with budget ``T`` only walks parts whose duration and memory fit ``T`` (by reverse
  search, so pairs of ideals that cannot matter are never generated) and skips states whose
  remaining devices cannot take the rest of the work within ``T``. It returns the optimum if it
  is ``<= T`` and otherwise proves it is ``> T``; cheap sweeps below the upper bound therefore
  binary-search the answer when the first sweep at the upper bound is slow;
* memory stays O(ideals x states): no table of ideal pairs is kept;
* a graph with more than ``log2(max_ideals)`` blocks at one depth has too many ideals for sure
  (every subset of an antichain is the top of its own ideal): it gives up before enumerating
  them (a 300-node layered graph: 0.24 s to 0.07 s, beside two training jobs).

When the ideals outnumber ``max_ideals``, or the sweeps visit ``max_pairs`` pairs of ideals
(the default stop: deterministic) or outlast an optional ``time_limit``, it warns and returns
the best split found with the best lower bound proven.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass

import numpy as np

from placerl.errors import PlacementError

from . import _checks, _ideals
from .api import SearchLimitWarning, Solution, register_placer
from .problem import Problem
from .split_model import DeviceTypes, SplitModel, build_split_model

_NAME = "tarnawski_dp"
#: Relative slack on the upper bound, so that float rounding never prunes the bound's own split.
_SLACK = 1e-9
#: Pairs of ideals the sweeps may visit by default: a few minutes of sweeping on one core at
#: about 9 million pairs a second (the msr graphs are proven optimal in under 10 million,
#: Inception-v3 on 4 GPUs in 0.4 million, a 40-node layered graph on 4 devices in 250 million).
DEFAULT_MAX_PAIRS = 2_000_000_000
#: Sources per kernel call between two checks of the clock and the pair count.
_CHUNK = 64
#: Share of the time limit the first sweep (at the upper bound) may take.
_FIRST_TRY = 0.25
#: Fractions of the way from the lower to the upper bound probed after that.
_PROBES = (1 / 16, 1 / 4, 1 / 2, 3 / 4, 7 / 8)
#: Most cells (ideals x device-count states) of the DP table: 13 bytes each, about 2.6 GB.
_MAX_CELLS = 200_000_000


@register_placer(_NAME, optimizes="pipeline")
def tarnawski_dp(
    problem: Problem,
    *,
    max_ideals: int = 2_000_000,
    max_pairs: int = DEFAULT_MAX_PAIRS,
    time_limit: float = math.inf,
    merge_free: bool = True,
    orders: int = 6,
    seed: int = 0,
) -> Solution:
    """Optimal contiguous split for the max-load (pipeline) objective, by DP over ideals.

    Source: J. Tarnawski, A. Phanishayee, N. Devanur, D. Mahajan, F. Nina Paravecino,
    "Efficient Algorithms for Device Placement of DNN Graph Operators", NeurIPS 2020 (the
    max-load DP; accelerators and CPUs generalized to device types, per-type memory,
    colocation, forward-only contiguity for training graphs).

    Complexity: O(I (B + E) + P (A + S T)) time and O(I S) memory, for I ideals of B blocks,
    P visited ideal pairs (at most I^2, far fewer once pruned by the bound), A the nodes a
    block's move re-prices, S = prod(count_t + 1) device-count states and T device types.

    Whatever objective it is scored with, it minimizes the pipeline max-load; the result is
    optimal among contiguous splits (``optimal``) unless a limit was hit.

    Args:
        problem: The problem (see :func:`placerl.baselines.solve`).
        max_ideals: Give up (warn, return the best split and a lower bound) beyond this many.
        max_pairs: Give up the same way once the sweeps have visited this many pairs of
            ideals (checked every few dozen source ideals): a stop that, unlike a clock,
            gives the same split on a busy machine as on a quiet one.
        time_limit: Seconds before giving up the same way (default: no clock).
        merge_free: Merge free blocks into their neighbour (exact; see ``split_model``).
        orders: Topological orders whose prefix-splits give the first upper bound.
        seed: Seed of the random topological orders.
    """
    max_ideals = _checks.positive_int(_NAME, "max_ideals", max_ideals)
    max_pairs = _checks.positive_int(_NAME, "max_pairs", max_pairs)
    time_limit = _checks.positive_float(_NAME, "time_limit", time_limit)
    orders = _checks.positive_int(_NAME, "orders", orders)
    seed = _checks.seed(_NAME, seed)
    deadline = time.perf_counter() + time_limit
    model = build_split_model(problem, merge_free=bool(merge_free))
    lower = _lower_bound(model)
    best = _best_chain_split(model, orders, seed)
    info = {
        "blocks": model.num_blocks,
        "free_merged": model.free_merged,
        "fused_cycles": len(model.fused_groups),
    }
    lattice = _Lattice.of(model)
    width = int(_ideals.level_width(lattice.succ_ptr, lattice.succ, model.num_blocks))
    if width >= max_ideals.bit_length():  # 2**width ideals or more: no need to count them
        reason = f"more than {max_ideals} ideals (an antichain of {width} blocks)"
        return _give_up(model, best, lower, reason, info)
    ideals = _Ideals.of(lattice, model.types, max_ideals)
    if ideals is None:
        return _give_up(model, best, lower, f"more than {max_ideals} ideals", info)
    info["ideals"] = ideals.count
    cells = ideals.count * int(np.prod(model.types.counts + 1))
    if cells > _MAX_CELLS:
        return _give_up(model, best, lower, f"a DP table of {cells} cells", info)
    info["pairs"] = 0
    for budget, until, first in _attempts(lower, best, time.perf_counter(), deadline):
        if budget <= lower:
            continue  # already known infeasible
        left = max_pairs - info["pairs"]
        pair_limit = min(left, int(_FIRST_TRY * max_pairs)) if first else left
        outcome = _sweep(model, lattice, ideals, budget, until, pair_limit)
        info["pairs"] += outcome.pairs
        if outcome.stopped and first:
            continue  # the quick first try ran out: probe from below
        if outcome.stopped:
            limit = "the time limit" if time.perf_counter() > deadline else f"{max_pairs} pairs"
            return _give_up(model, best, lower, f"{limit} (max-load budget {budget:.6g})", info)
        if np.isfinite(outcome.value):  # the optimum: every better split is within budget
            best = outcome
            break
        lower = max(lower, budget)  # no split has all its loads within the budget
    if best is None:
        raise PlacementError(
            f"{_NAME}: no contiguous split of {problem.graph.name!r} fits the cluster's memory"
        )
    info["value"] = best.value
    return Solution(_placement(model, best.parts), best.value, True, info)


def _attempts(
    lower: float, best: _Outcome | None, now: float, deadline: float
) -> list[tuple[float, float, bool]]:
    """(budget, deadline, is the quick first try) of each sweep to try, in order.

    A sweep with budget ``T`` either finds the optimum (if it is ``<= T``) or proves it is
    ``> T``, and costs more the larger ``T``. First the upper bound with a quarter of the time
    and of the pairs (enough when the chain split is near-optimal, as on the msr graphs); then
    probes from just above the lower bound upwards (cheap, each raises the lower bound or ends
    the search); then the upper bound again with all that is left.
    """
    if best is None:
        return [(np.inf, deadline, False)]
    upper = best.value * (1 + _SLACK)
    if upper <= lower * (1 + _SLACK):
        return []  # the upper bound meets the lower bound: it is optimal
    first = now + _FIRST_TRY * (deadline - now) if np.isfinite(deadline) else deadline
    probes = [(lower + (upper - lower) * f, deadline, False) for f in _PROBES]
    return [(upper, first, True), *probes, (upper, deadline, False)]


# --------------------------------------------------------------------------- lattice input
@dataclass(frozen=True, eq=False)
class _Lattice:
    """The arrays the kernels read: blocks under some ordering edges, and the node graph."""

    succ_ptr: np.ndarray
    succ: np.ndarray
    indegree: np.ndarray
    zobrist: np.ndarray
    block_dur: np.ndarray
    block_mem: np.ndarray
    block_of: np.ndarray
    aff_ptr: np.ndarray
    aff: np.ndarray
    labels: np.ndarray  # lattice block i is model block labels[i]

    @classmethod
    def of(cls, model: SplitModel, chain: np.ndarray | None = None) -> _Lattice:
        """The model's own ordering edges, or the chain of blocks ``chain[0] -> chain[1] ...``."""
        n = model.num_blocks
        labels = np.arange(n) if chain is None else np.asarray(chain)
        position = np.empty(n, dtype=np.int64)
        position[labels] = np.arange(n)
        edges = (
            model.order_edges if chain is None else np.stack([np.arange(n - 1), np.arange(1, n)], 1)
        )
        succ_ptr = np.zeros(n + 1, dtype=np.int64)
        np.add.at(succ_ptr, edges[:, 0] + 1, 1)
        block_of = position[model.block_of]
        return cls(
            succ_ptr=np.cumsum(succ_ptr),
            succ=np.ascontiguousarray(edges[:, 1], dtype=np.int64),
            indegree=np.bincount(edges[:, 1], minlength=n).astype(np.int64),
            zobrist=np.frombuffer(np.random.default_rng(n).bytes(8 * n), dtype=np.uint64),
            block_dur=np.ascontiguousarray(model.block_durations[labels]),
            block_mem=np.ascontiguousarray(model.block_memory[labels]),
            block_of=block_of,
            labels=labels,
            **_affected(model, block_of, n),
        )


def _affected(model: SplitModel, block_of: np.ndarray, n_blocks: int) -> dict[str, np.ndarray]:
    """Per block, the nodes whose transfer charge may change when the block changes sides:
    its own nodes and their producers (CSR ``aff_ptr``/``aff``)."""
    a = model.problem.graph.arrays
    pairs = np.concatenate(
        [np.stack([block_of, np.arange(a.num_nodes)], 1), np.stack([block_of[a.dst], a.src], 1)]
    )
    pairs = np.unique(pairs, axis=0)
    ptr = np.zeros(n_blocks + 1, dtype=np.int64)
    np.add.at(ptr, pairs[:, 0] + 1, 1)
    return {"aff_ptr": np.cumsum(ptr), "aff": np.ascontiguousarray(pairs[:, 1], dtype=np.int64)}


@dataclass(frozen=True)
class _States:
    """Device-count states in mixed radix: ``digit[s, t]`` devices of type ``t`` used."""

    digit: np.ndarray
    stride: np.ndarray
    remaining: np.ndarray  # devices still unused, per state

    @classmethod
    def of(cls, counts: np.ndarray) -> _States:
        radix = counts + 1
        stride = np.concatenate([[1], np.cumprod(radix)[:-1]]).astype(np.int64)
        index = np.arange(int(np.prod(radix)))
        digit = np.ascontiguousarray((index[:, None] // stride[None, :]) % radix[None, :])
        return cls(digit.astype(np.int64), stride, (counts - digit).sum(axis=1).astype(np.int64))


# ------------------------------------------------------------------------------ the DP
@dataclass(frozen=True)
class _Outcome:
    value: float  # inf when no split has all its loads within the budget
    parts: list[tuple[np.ndarray, int]]  # (model blocks, device type) per part
    pairs: int
    stopped: bool = False  # a limit ended the sweep before it finished


@dataclass(frozen=True, eq=False)
class _Ideals:
    """All ideals of a lattice, with what every sweep needs."""

    count: int
    parent: np.ndarray
    added: np.ndarray
    key: np.ndarray
    table_keys: np.ndarray
    table_ids: np.ndarray
    rest: np.ndarray  # least work outside each ideal
    full_id: int
    order: np.ndarray  # by size: every ideal after its sub-ideals

    @classmethod
    def of(cls, lattice: _Lattice, types: DeviceTypes, max_ideals: int) -> _Ideals | None:
        """Enumerate; ``None`` when there are more than ``max_ideals``."""
        count, parent, added, key, size = _ideals.enumerate_ideals(
            lattice.succ_ptr, lattice.succ, lattice.indegree, lattice.zobrist, max_ideals
        )
        if count < 0:
            return None
        table_keys, table_ids, unique = _ideals.build_table(key, count)
        if not unique:  # two ideals share a 64-bit key: odds ~ count^2 / 2^65
            raise AssertionError("Zobrist key collision between two ideals")
        work = _fastest(lattice.block_dur, lattice.block_mem, types)
        return cls(
            count=int(count),
            parent=parent,
            added=added,
            key=key,
            table_keys=table_keys,
            table_ids=table_ids,
            rest=_ideals.ideal_rest(parent, added, work, count),
            full_id=int(np.argmax(size[:count])),
            order=np.argsort(size[:count], kind="stable"),
        )


def _sweep(
    model: SplitModel,
    lattice: _Lattice,
    ideals: _Ideals,
    budget: float,
    deadline: float,
    max_pairs: float = math.inf,
) -> _Outcome:
    """The DP over all ideals with parts pruned to ``budget``; ``stopped`` past the deadline
    or ``max_pairs`` visited pairs."""
    types, graph = model.types, model.problem.graph.arrays
    states = _States.of(types.counts)
    dp = np.full((ideals.count, len(states.digit)), np.inf)
    dp[0] = 0.0
    back_ideal = np.full(dp.shape, -1, dtype=np.int32)
    back_type = np.full(dp.shape, -1, dtype=np.int8)
    pairs = 0
    for start in range(0, ideals.count, _CHUNK):
        if time.perf_counter() > deadline or pairs >= max_pairs:
            return _Outcome(np.inf, [], int(pairs), stopped=True)
        pairs += _ideals.dp_sweep(
            ideals.order[start : start + _CHUNK],
            ideals.parent,
            ideals.added,
            ideals.table_keys,
            ideals.table_ids,
            ideals.key,
            lattice.succ_ptr,
            lattice.succ,
            lattice.indegree,
            lattice.zobrist,
            lattice.block_dur,
            lattice.block_mem,
            types.counts,
            types.is_cpu,
            types.capacity,
            states.digit,
            states.stride,
            states.remaining,
            ideals.rest,
            lattice.block_of,
            graph.succ_ptr,
            graph.succ,
            graph.succ_edge,
            model.edge_time,
            lattice.aff_ptr,
            lattice.aff,
            budget,
            ideals.full_id,
            dp,
            back_ideal,
            back_type,
        )
    value = float(dp[ideals.full_id, -1])
    parts = _backtrack(lattice, ideals, states, back_ideal, back_type) if value < np.inf else []
    return _Outcome(value, parts, int(pairs))


def _backtrack(
    lattice: _Lattice,
    ideals: _Ideals,
    states: _States,
    back_ideal: np.ndarray,
    back_type: np.ndarray,
) -> list[tuple[np.ndarray, int]]:
    """The parts of the best split, in chain order."""
    parts: list[tuple[np.ndarray, int]] = []
    j, s = ideals.full_id, len(states.digit) - 1
    while j != 0:
        i, t = int(back_ideal[j, s]), int(back_type[j, s])
        blocks = _members(ideals.parent, ideals.added, j)
        inside = np.setdiff1d(blocks, _members(ideals.parent, ideals.added, i))
        parts.append((lattice.labels[inside], t))
        j, s = i, s - int(states.stride[t])
    return parts[::-1]


def _members(parent: np.ndarray, added: np.ndarray, ideal: int) -> np.ndarray:
    out = []
    while ideal > 0:
        out.append(added[ideal])
        ideal = parent[ideal]
    return np.array(out, dtype=np.int64)


def _placement(model: SplitModel, parts: list[tuple[np.ndarray, int]]) -> np.ndarray:
    """Parts -> devices: the i-th part of type t goes on the i-th device of type t."""
    device_of_block = np.empty(model.num_blocks, dtype=np.int64)
    used = np.zeros(len(model.types), dtype=np.int64)
    for blocks, t in parts:
        device_of_block[blocks] = model.types.devices[t][used[t]]
        used[t] += 1
    return device_of_block[model.block_of]


# ------------------------------------------------------------------------ bounds
def _best_chain_split(model: SplitModel, orders: int, seed: int) -> _Outcome | None:
    """The best split into intervals of a few topological orders of the blocks (an upper
    bound; each is the DP on a chain, exact for that order)."""
    best = None
    for chain in _topological_orders(model, orders, seed):
        lattice = _Lattice.of(model, chain)
        ideals = _Ideals.of(lattice, model.types, chain.size + 1)
        budget = np.inf if best is None else best.value
        outcome = _sweep(model, lattice, ideals, budget, np.inf)
        if outcome.value < (np.inf if best is None else best.value):
            best = outcome
    return best


def _topological_orders(model: SplitModel, count: int, seed: int) -> list[np.ndarray]:
    """Block numbering order, its latest-first twin, then seeded random topological orders."""
    n, edges = model.num_blocks, model.order_edges
    succ: list[list[int]] = [[] for _ in range(n)]
    indegree = np.zeros(n, dtype=np.int64)
    for u, v in edges.tolist():
        succ[u].append(v)
        indegree[v] += 1
    rng = np.random.default_rng(seed)
    pickers = [lambda ready: min(ready), lambda ready: max(ready)]
    pickers += [lambda ready: ready[int(rng.integers(len(ready)))]] * max(count - 2, 0)
    out: list[np.ndarray] = []
    for pick in pickers[:count]:
        left, ready, order = indegree.copy(), [b for b in range(n) if indegree[b] == 0], []
        while ready:
            b = pick(ready)
            ready.remove(b)
            order.append(b)
            for w in succ[b]:
                left[w] -= 1
                if left[w] == 0:
                    ready.append(w)
        if not any(np.array_equal(order, seen) for seen in out):
            out.append(np.array(order, dtype=np.int64))
    return out


def _fastest(block_dur: np.ndarray, block_mem: np.ndarray, types: DeviceTypes) -> np.ndarray:
    """Each block's least duration over the device types that exist and can hold it."""
    fits = (block_mem[:, None] <= types.capacity[None, :]) & (types.counts > 0)[None, :]
    return np.where(fits, block_dur, np.inf).min(axis=1)


def _lower_bound(model: SplitModel) -> float:
    """Each block needs its fastest fitting type; all the work shares all the devices."""
    fastest = _fastest(model.block_durations, model.block_memory, model.types)
    if np.isinf(fastest).any():
        b = int(np.flatnonzero(np.isinf(fastest))[0])
        names = sorted({_group_name(model, v) for v in np.flatnonzero(model.block_of == b)})
        raise PlacementError(
            f"{_NAME}: the colocated nodes {', '.join(names[:5])} of "
            f"{model.problem.graph.name!r} must share a device but fit on none"
        )
    return float(max(fastest.max(), fastest.sum() / model.types.counts.sum()))


def _group_name(model: SplitModel, v: int) -> str:
    node = model.problem.graph.nodes[int(v)]
    return node.group or node.name


def _give_up(
    model: SplitModel, best: _Outcome | None, lower: float, reason: str, info: dict
) -> Solution:
    if best is None:
        raise PlacementError(f"{_NAME}: stopped at {reason} before finding any split that fits")
    warnings.warn(
        f"{_NAME}: stopped at {reason}; returning the best split found (max-load "
        f"{best.value:.6g}, lower bound {lower:.6g})",
        SearchLimitWarning,
        stacklevel=4,  # the caller of solve()
    )
    info |= {"value": best.value, "gave_up": reason}
    return Solution(_placement(model, best.parts), lower, False, info)
