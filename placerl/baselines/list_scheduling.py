"""List schedulers with the cluster's communication model: HEFT, m-ETF and m-SCT.

Each builds a schedule op by op and keeps the devices it chose. The schedule follows the
cluster: durations per device, transfer times from its latency and bandwidth (or the edges'
explicit times), an idle ``op_gap`` after each op, and transfer contention as in the simulator's
comm model (``placeto``: one outgoing channel per device, one transfer per producer serving all
devices; ``links``: one channel per device pair, one transfer per producer and destination;
``ideal``: none). Memory is admitted per colocation group (a group's memory is reserved when its
first op is placed, and its other ops follow it).

The schedulers run as numba kernels (:mod:`placerl.baselines._list_kernels`): in Python HEFT
took 12 s on a 10k-node graph and did not finish 100k nodes in minutes.
"""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

from placerl.sim.kernels import COMM_MODEL_CODES as _COMM_MODELS

from . import _list_kernels
from .api import register_placer
from .problem import Assignment, Problem


class ListSchedule:
    """HEFT's model of a schedule under construction: where and when each op runs, and when
    each output reaches each device.

    The readable model: the list schedulers here run it compiled
    (:mod:`placerl.baselines._list_kernels`, step for step, which the tests check against
    schedules built with this class), and the envs' ``devices`` features
    (:mod:`placerl.envs.device_features`) compile it too, so that a policy reading them sees
    the start and finish times HEFT decides with.

    Args:
        problem: The problem being scheduled.
    """

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.assignment = Assignment(problem)
        self.arrays = problem.graph.arrays
        self.finish = np.zeros(problem.num_nodes)
        self.device_free = np.zeros(problem.num_devices)
        self.busy: list[list[tuple[float, float]]] = [[] for _ in range(problem.num_devices)]
        self.channel_free: dict[tuple[int, int], float] = {}
        self.arrival: dict[tuple[int, int], float] = {}
        self._times: dict[tuple[int, int], np.ndarray] = {}
        self.comm_model = problem.cluster.comm_model

    def _edge_time(self, e: int, s: int, d: int) -> float:
        if (s, d) not in self._times:
            self._times[s, d] = self.problem.edge_times(s, d)
        return float(self._times[s, d][e])

    def _transfer(
        self, u: int, e: int, d: int
    ) -> tuple[tuple[int, int], tuple[int, int] | None, float]:
        """(arrival key, channel, arrival time if sent now) of ``u``'s output to device ``d``."""
        s = self.assignment.device_of(u)
        key = (u, -1) if self.comm_model == "placeto" else (u, d)
        channel = {"placeto": (s, -1), "links": (s, d)}.get(self.comm_model)
        begin = self.finish[u]
        if channel is not None:
            begin = max(begin, self.channel_free.get(channel, 0.0))
        return key, channel, begin + self._edge_time(e, s, d)

    def data_ready(self, v: int, d: int) -> float:
        """When all of ``v``'s inputs could be on device ``d``."""
        a, ready = self.arrays, 0.0
        for k in range(a.pred_ptr[v], a.pred_ptr[v + 1]):
            u, e = int(a.pred[k]), int(a.pred_edge[k])
            if self.assignment.device_of(u) == d:
                ready = max(ready, self.finish[u])
                continue
            key, _, time = self._transfer(u, e, d)
            ready = max(ready, self.arrival.get(key, time))
        return ready

    def earliest_start(
        self, v: int, d: int, *, insertion: bool, ready: float | None = None
    ) -> float:
        """Earliest start of ``v`` on ``d``: after the device frees (or in an idle gap long
        enough, with ``insertion``) and after its inputs arrive (at ``ready`` when the caller
        knows it already)."""
        ready = self.data_ready(v, d) if ready is None else ready
        if not insertion:
            return max(ready, self.device_free[d])
        length = self.problem.durations[v, d] + self.problem.cluster.op_gap
        previous_end = 0.0
        for begin, end in self.busy[d]:
            if max(ready, previous_end) + length <= begin:
                break
            previous_end = max(previous_end, end)
        return max(ready, previous_end)

    def commit(self, v: int, d: int, start: float) -> set[int]:
        """Run ``v`` on ``d`` from ``start``, sending its inputs' transfers first.

        Returns:
            The producers whose outputs it sent.
        """
        a = self.arrays
        self.assignment.place(v, d)
        gap = self.problem.cluster.transfer_gap
        sent = set()
        for k in range(a.pred_ptr[v], a.pred_ptr[v + 1]):
            u, e = int(a.pred[k]), int(a.pred_edge[k])
            if self.assignment.device_of(u) == d:
                continue
            key, channel, time = self._transfer(u, e, d)
            if key not in self.arrival:
                self.arrival[key] = time
                sent.add(u)
                if channel is not None:
                    self.channel_free[channel] = time + gap
        duration = self.problem.durations[v, d]
        self.finish[v] = start + duration
        end = self.finish[v] + (self.problem.cluster.op_gap if duration > 0 else 0.0)
        self.device_free[d] = max(self.device_free[d], end)
        bisect.insort(self.busy[d], (start, end))
        return sent


def upward_rank(problem: Problem) -> np.ndarray:
    """HEFT's upward rank: mean duration plus the longest mean (transfer + rank) to a sink."""
    a = problem.graph.arrays
    return _list_kernels.upward_rank(
        problem.topo_order,
        problem.mean_duration,
        problem.mean_edge_time,
        a.succ_ptr,
        a.succ,
        a.succ_edge,
    )


def _schedule_args(problem: Problem) -> tuple[Any, ...]:
    """What the compiled schedulers share: durations, inputs, units, memory, comm model."""
    a, c = problem.graph.arrays, problem.cluster
    units = problem.units
    return (
        problem.durations,
        a.pred_ptr,
        a.pred,
        a.pred_edge,
        units.of_node,
        units.durations,
        Assignment(problem).need,
        problem.capacity.astype(np.float64),
        _COMM_MODELS[c.comm_model],
        float(c.op_gap),
        float(c.transfer_gap),
        a.edge_time,
        a.edge_bytes,
        c.bandwidth,
        c.latency,
    )


@register_placer("heft", optimizes="step_time")
def heft(problem: Problem) -> np.ndarray:
    """HEFT: ops by decreasing upward rank, each on the device of earliest finish time.

    Insertion-based: an op may fill an idle gap of a device. Transfers follow the cluster's comm
    model; devices that cannot hold the op's group are skipped. Ties: equal ranks go in
    topological order, equal finish times to the lower device. The rank averages an edge's
    transfer time over ordered pairs of distinct devices, as the paper's mean link cost does
    (SAGA's HEFT also counts the same-device pairs, at zero cost: with that rank and its device
    order this schedule places as SAGA's, ``tests/baselines/test_heft_saga.py``). Compiled
    (:func:`placerl.baselines._list_kernels.heft`), step for step :class:`ListSchedule`'s.

    Source: H. Topcuoglu, S. Hariri, M.-Y. Wu, "Performance-Effective and Low-Complexity Task
    Scheduling for Heterogeneous Computing", IEEE TPDS 13(3), 2002.
    Complexity: O((E + V) D) plus the gap searches, each O(log V) plus the intervals from the
    op's ready time to the gap it takes (O(V^2 D) at worst).
    """
    unit_device = _list_kernels.heft(_heft_order(problem), *_schedule_args(problem))
    return unit_device[problem.units.of_node]


def _heft_order(problem: Problem) -> np.ndarray:
    """Ops by decreasing upward rank, equal ranks in topological order."""
    rank = upward_rank(problem)
    position = np.empty(problem.num_nodes, dtype=np.int64)
    position[problem.topo_order] = np.arange(problem.num_nodes)
    return np.lexsort((position, -rank)).astype(np.int64)


def heft_reference(problem: Problem) -> np.ndarray:
    """HEFT as its definition reads, step by step on the readable :class:`ListSchedule`: each
    op in :func:`heft`'s order on the candidate of earliest finish (ties: the lower device).
    The compiled :func:`heft` must place as it does (tests); ``bench_scale.py`` times both."""
    schedule = ListSchedule(problem)
    for v in map(int, _heft_order(problem)):
        finish, d_best, start_best = np.inf, -1, 0.0
        for d in schedule.assignment.candidates(v):
            start = schedule.earliest_start(v, int(d), insertion=True)
            if start + problem.durations[v, d] < finish:
                finish, d_best, start_best = start + problem.durations[v, d], int(d), start
        schedule.commit(v, d_best, start_best)
    return schedule.assignment.placement()


def _earliest_task_first(problem: Problem, favourite_parent: np.ndarray | None) -> np.ndarray:
    """ETF list scheduling: repeatedly start the (ready op, device) pair that can start first.

    With ``favourite_parent`` (m-SCT), an op whose favourite parent is placed goes to that
    parent's device when it fits there, and that device is kept for it while it is ready.
    Compiled (:func:`placerl.baselines._list_kernels.earliest_task_first`).
    """
    a = problem.graph.arrays
    n = problem.num_nodes
    parent = np.full(n, -1, dtype=np.int64) if favourite_parent is None else favourite_parent
    args = _schedule_args(problem)
    of_node = problem.units.of_node
    unit_nodes = np.argsort(of_node, kind="stable")
    unit_ptr = np.concatenate([[0], np.cumsum(np.bincount(of_node, minlength=len(problem.units)))])
    unit_device = _list_kernels.earliest_task_first(
        upward_rank(problem),
        parent.astype(np.int64),
        _inverse(favourite_parent, n),
        unit_ptr.astype(np.int64),
        unit_nodes.astype(np.int64),
        args[0],
        a.succ_ptr,
        a.succ,
        *args[1:],
    )
    return unit_device[problem.units.of_node]


def _inverse(favourite_parent: np.ndarray | None, n: int) -> np.ndarray:
    """Each op's favourite child (-1 where none, and everywhere without favourites)."""
    child = np.full(n, -1, dtype=np.int64)
    if favourite_parent is not None:
        has = favourite_parent >= 0
        child[favourite_parent[has]] = np.flatnonzero(has)
    return child


@register_placer("m_etf", optimizes="step_time")
def m_etf(problem: Problem) -> np.ndarray:
    """Baechi's m-ETF: earliest-task-first list scheduling with memory admission.

    At each step the ready op and device that can start earliest are chosen (ties: higher
    upward rank); a device is admitted only if it can hold the op's colocation group. Built
    for identical devices: on a heterogeneous cluster the earliest *start* often lands on an
    idle slow device (a CPU), where HEFT's earliest *finish* would not.

    Source: J.-J. Hwang, Y.-C. Chow, F. D. Anger, C.-Y. Lee, "Scheduling Precedence Graphs in
    Systems with Interprocessor Communication Times", SIAM J. Comput. 18(2), 1989; memory
    admission from Baechi (Jeon et al., ACM SoCC 2020).
    Complexity: O(V R D), R the most ops ready at once (each step scans the ready ops on
    every device).
    """
    return _earliest_task_first(problem, None)


@register_placer("m_sct", optimizes="step_time")
def m_sct(problem: Problem) -> np.ndarray:
    """Baechi's m-SCT: favourite children from an LP relaxation, then ETF list scheduling.

    The LP of Hanen and Munier (minimize the makespan ``w`` subject to
    ``s_v >= s_u + p_u + c_uv x_uv`` on every edge, ``sum_v x_uv >= outdeg(u) - 1``,
    ``sum_u x_uv >= indeg(v) - 1``, ``w >= s_v + p_v``, ``0 <= x <= 1``, with mean durations
    ``p`` and mean transfer times ``c``) is solved with scipy (HiGHS); edges with
    ``x_uv < 1/2`` make ``v`` the favourite child of ``u`` (at most one per op each way). The
    ETF scheduler then keeps each favourite child on its parent's device when it fits.

    Source: C. Hanen, A. Munier, "An Approximation Algorithm for Scheduling Dependent Tasks on m
    Processors with Small Communication Delays", ETFA 1995; m-SCT from Baechi (Jeon et al.,
    ACM SoCC 2020).
    Complexity: one LP with V + E + 1 variables and 3V + E constraints, then O(V^2 D).
    """
    return _earliest_task_first(problem, favourite_parents(problem))


def favourite_parents(problem: Problem) -> np.ndarray:
    """Each op's favourite parent from the rounded SCT LP relaxation (-1 where none)."""
    a = problem.graph.arrays
    n, m = a.num_nodes, a.num_edges
    favourite = np.full(n, -1, dtype=np.int64)
    if m == 0:
        return favourite
    matrix, rhs = _sct_constraints(problem)
    cost = np.zeros(n + m + 1)
    cost[n + m] = 1.0
    bounds = [(0, None)] * n + [(0, 1)] * m + [(0, None)]
    result = linprog(cost, A_ub=matrix, b_ub=rhs, bounds=bounds, method="highs")
    if not result.success:  # pragma: no cover - the LP is always feasible and bounded
        return favourite
    chosen = np.flatnonzero(result.x[n : n + m] < 0.5)
    favourite[a.dst[chosen]] = a.src[chosen]
    return favourite


def _sct_constraints(problem: Problem) -> tuple[Any, np.ndarray]:
    """The SCT LP's ``A_ub`` (CSR) and ``b_ub`` over the variables ``s`` (one per op), ``x``
    (one per edge) and ``w``, row by row: each edge's precedence, each op's at most one
    favourite child, then parent (ops of two or more), then the makespan over each op.

    Built with array operations, not a Python call per row (seconds at 100k nodes).
    """
    a = problem.graph.arrays
    n, m = a.num_nodes, a.num_edges
    p, c = problem.mean_duration, problem.mean_edge_time
    # s_u + p_u + c_e x_e <= s_v
    rows = [np.repeat(np.arange(m), 3)]
    cols = [np.stack([a.src, a.dst, n + np.arange(m)], axis=1).ravel()]
    vals = [np.stack([np.ones(m), -np.ones(m), c], axis=1).ravel()]
    rhs = [-p[a.src]]
    for ptr, edges in ((a.succ_ptr, a.succ_edge), (a.pred_ptr, a.pred_edge)):
        degree = np.diff(ptr)  # sum of x over an op's out- (in-) edges >= degree - 1
        several = degree > 1
        row_of = np.cumsum(several) - 1 + sum(len(r) for r in rhs)
        owner = np.repeat(np.arange(n), degree)
        kept = several[owner]
        rows.append(row_of[owner[kept]])
        cols.append(n + edges[kept])
        vals.append(-np.ones(int(kept.sum())))
        rhs.append(-(degree[several] - 1.0))
    first = sum(len(r) for r in rhs)  # s_v + p_v <= w
    rows.append(np.repeat(first + np.arange(n), 2))
    cols.append(np.stack([np.arange(n), np.full(n, n + m)], axis=1).ravel())
    vals.append(np.tile([1.0, -1.0], n))
    rhs.append(-p)
    bound = np.concatenate(rhs)
    matrix = coo_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(len(bound), n + m + 1),
    ).tocsr()
    return matrix, bound
