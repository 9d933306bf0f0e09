"""List schedulers with the cluster's communication model: HEFT, m-ETF and m-SCT.

Each builds a schedule op by op and keeps the devices it chose. The schedule follows the
cluster: durations per device, transfer times from its latency and bandwidth (or the edges'
explicit times), an idle ``op_gap`` after each op, and transfer contention as in the simulator's
comm model (``placeto``: one outgoing channel per device, one transfer per producer serving all
devices; ``links``: one channel per device pair, one transfer per producer and destination;
``ideal``: none). Memory is admitted per colocation group (a group's memory is reserved when its
first op is placed, and its other ops follow it).
"""

from __future__ import annotations

import bisect

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

from .api import register_placer
from .problem import Assignment, Problem


class ListSchedule:
    """HEFT's model of a schedule under construction: where and when each op runs, and when
    each output reaches each device.

    The list schedulers here build one; the envs' ``devices`` features
    (:mod:`placerl.envs.device_features`) compile the same model, so that a policy reading them
    sees the start and finish times HEFT decides with.

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

    def earliest_start(self, v: int, d: int, *, insertion: bool,
                       ready: float | None = None) -> float:  # fmt: skip
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

    def stale(self, ready: set[int], producers: list[list[int]], sent: set[int]) -> list[int]:
        """The ready ops whose data-ready times may have changed when a commit sent ``sent``'s
        outputs: one of their producers was sent, or one still waits for a channel that a
        send used (under ``placeto`` an output sent once reaches every device at its time)."""
        if not sent:
            return []
        channels = {self.assignment.device_of(u) for u in sent}

        def changed(u: int) -> bool:
            waits = self.assignment.device_of(u) in channels and (u, -1) not in self.arrival
            return u in sent or waits

        return [w for w in ready if any(changed(u) for u in producers[w])]


def upward_rank(problem: Problem) -> np.ndarray:
    """HEFT's upward rank: mean duration plus the longest mean (transfer + rank) to a sink."""
    a = problem.graph.arrays
    weight, comm = problem.mean_duration, problem.mean_edge_time
    rank = np.zeros(problem.num_nodes)
    for v in problem.topo_order[::-1]:
        tail = 0.0
        for k in range(a.succ_ptr[v], a.succ_ptr[v + 1]):
            tail = max(tail, comm[a.succ_edge[k]] + rank[a.succ[k]])
        rank[v] = weight[v] + tail
    return rank


@register_placer("heft", optimizes="step_time")
def heft(problem: Problem) -> np.ndarray:
    """HEFT: ops by decreasing upward rank, each on the device of earliest finish time.

    Insertion-based: an op may fill an idle gap of a device. Transfers follow the cluster's comm
    model; devices that cannot hold the op's group are skipped.

    Source: H. Topcuoglu, S. Hariri, M.-Y. Wu, "Performance-Effective and Low-Complexity Task
    Scheduling for Heterogeneous Computing", IEEE TPDS 13(3), 2002.
    Complexity: O(V^2 D) (O((E + V) D) plus the gap searches).
    """
    rank = upward_rank(problem)
    position = np.empty(problem.num_nodes, dtype=np.int64)
    position[problem.topo_order] = np.arange(problem.num_nodes)
    schedule = ListSchedule(problem)
    for v in np.lexsort((position, -rank)):
        v = int(v)
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
    """
    a = problem.graph.arrays
    rank = upward_rank(problem)
    schedule = ListSchedule(problem)
    waiting = a.in_degree.copy()
    ready = set(np.flatnonzero(waiting == 0).tolist())
    favourite_child = _inverse(favourite_parent, problem.num_nodes)
    last_on = np.full(problem.num_devices, -1, dtype=np.int64)
    # When each ready op's inputs could be on each device: it changes only when a commit sends
    # one of its producers' outputs or takes a channel one of them waits for, so most steps
    # reuse most of it (m-ETF at 300 nodes spent most of its time recomputing it).
    data_ready: dict[tuple[int, int], float] = {}
    producers = [a.pred[a.pred_ptr[v] : a.pred_ptr[v + 1]].tolist() for v in range(a.num_nodes)]
    while ready:
        # m-SCT: a device waits for the ready favourite child of the op it ran last.
        kept = {d: int(favourite_child[u]) for d, u in enumerate(last_on)
                if u >= 0 and favourite_child[u] in ready
                and schedule.assignment.fits(int(favourite_child[u]), d)}  # fmt: skip
        best = None
        for v in ready:
            for d in _devices_for(schedule, v, favourite_parent):
                if kept.get(d, v) != v:
                    continue
                if (v, d) not in data_ready:
                    data_ready[v, d] = schedule.data_ready(v, d)
                start = schedule.earliest_start(v, d, insertion=False, ready=data_ready[v, d])
                key = (start, -rank[v], v, d)
                if best is None or key < best:
                    best = key
        start, _, v, d = best
        sent = schedule.commit(v, d, start)
        last_on[d] = v
        ready.discard(v)
        for w in schedule.stale(ready, producers, sent):
            for device in range(problem.num_devices):
                data_ready.pop((w, device), None)
        for w in a.succ[a.succ_ptr[v] : a.succ_ptr[v + 1]]:
            waiting[w] -= 1
            if waiting[w] == 0:
                ready.add(int(w))
    return schedule.assignment.placement()


def _devices_for(schedule: ListSchedule, v: int,
                 favourite_parent: np.ndarray | None) -> list[int]:
    if favourite_parent is not None and favourite_parent[v] >= 0:
        d = schedule.assignment.device_of(int(favourite_parent[v]))
        if schedule.assignment.fits(v, d):
            return [d]
    return [int(d) for d in schedule.assignment.candidates(v)]


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
    Complexity: O(V^2 D) (each of V steps scans the ready ops on every device).
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
    p, c = problem.mean_duration, problem.mean_edge_time
    s_var, x_var, w_var = np.arange(n), n + np.arange(m), n + m
    rows, cols, vals, rhs = [], [], [], []

    def constraint(columns, coefficients, bound):
        rows.extend([len(rhs)] * len(columns))
        cols.extend(columns)
        vals.extend(coefficients)
        rhs.append(bound)

    for e in range(m):  # s_u + p_u + c_e x_e <= s_v
        u, v = int(a.src[e]), int(a.dst[e])
        constraint([s_var[u], s_var[v], x_var[e]], [1.0, -1.0, c[e]], -p[u])
    for ptr, edges in ((a.succ_ptr, a.succ_edge), (a.pred_ptr, a.pred_edge)):
        for v in range(n):  # at most one favourite child (parent) per op
            out = edges[ptr[v] : ptr[v + 1]]
            if len(out) > 1:
                constraint(list(x_var[out]), [-1.0] * len(out), -(len(out) - 1.0))
    for v in range(n):  # the makespan covers every op
        constraint([s_var[v], w_var], [1.0, -1.0], -p[v])
    matrix = coo_matrix((vals, (rows, cols)), shape=(len(rhs), n + m + 1)).tocsr()
    cost = np.zeros(n + m + 1)
    cost[w_var] = 1.0
    bounds = [(0, None)] * n + [(0, 1)] * m + [(0, None)]
    result = linprog(cost, A_ub=matrix, b_ub=np.array(rhs), bounds=bounds, method="highs")
    if not result.success:  # pragma: no cover - the LP is always feasible and bounded
        return favourite
    chosen = np.flatnonzero(result.x[x_var] < 0.5)
    favourite[a.dst[chosen]] = a.src[chosen]
    return favourite
