"""``milp``: the exact max-load split as a mixed-integer program (scipy.optimize.milp, HiGHS).

For small graphs: it cross-checks ``tarnawski_dp`` on contiguous splits and gives the true
optimum without contiguity. Variables (per block ``g`` and device ``i``): ``y[g, i]`` binary,
block ``g`` on device ``i``; per node ``w`` and accelerator ``i``: ``out[w, i]``, ``in[w, i]``
>= 0, the transfer time ``w`` costs device ``i``; per device: a potential ``pi[i]``; and the
max-load ``T``.

* every block on one device that can run it; memory per device;
* ``out[w, i] >= t_e (y[g(w), i] - y[g(z), i])`` and ``in[w, i] >= t_e (y[g(z), i] - y[g(w), i])``
  for every edge ``e = (w, z)``: the longest transfer across the border, as in the simulator;
* ``sum_g dur[g, i] y[g, i] + sum_w (out[w, i] + in[w, i]) <= T`` (CPUs: no transfer terms);
* contiguous: for every ordering edge ``X -> Y`` of the split model and devices ``i != j``,
  ``pi[j] - pi[i] >= 1 - D (2 - y[X, i] - y[Y, j])``: the devices can be ordered along the
  edges, which is exactly a chain of ideals (:mod:`placerl.baselines.split_model`).

Times enter the program in a unit of the order of the optimum (a lower bound on the max-load,
:func:`_time_unit`), not in seconds: HiGHS's tolerances are absolute (primal feasibility 1e-7,
MIP gap 1e-6, and it prunes a node whose bound is within the gap of the incumbent). In seconds,
with loads of ~6e-5 and edges of ~3e-6, that is percents of both, and HiGHS once called a split
optimal 0.36% above a placement local search found (``tiny/chain-n24-s9``).
:func:`milp_objective` evaluates the rows on a fixed placement.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.optimize import Bounds, LinearConstraint
from scipy.optimize import milp as scipy_milp
from scipy.sparse import coo_matrix

from placerl.errors import ConfigError, PlacementError

from . import _checks
from .api import SearchLimitWarning, Solution, register_placer
from .problem import Problem
from .split_model import build_split_model, pair_independent_edge_times

_NAME = "milp"
#: HiGHS's relative MIP gap (its default, 1e-4, would let it stop 0.01% above the optimum).
_MIP_REL_GAP = 1e-9


@register_placer(_NAME, optimizes="pipeline")
def milp(
    problem: Problem,
    *,
    contiguous: bool = True,
    time_limit: float = 60.0,
    max_nodes: int = 60,
) -> Solution:
    """Exact max-load (pipeline) split by mixed-integer programming, for small graphs.

    Source: the IP of Tarnawski et al., NeurIPS 2020 (contiguity as orderable devices), solved
    with scipy.optimize.milp (HiGHS).
    Complexity: exponential in the worst case (branch and bound over B D binaries, B blocks,
    D devices); O(E D^2) constraints with contiguity.

    Args:
        problem: The problem.
        contiguous: Restrict to contiguous splits (as ``tarnawski_dp``); else any placement.
        time_limit: Seconds for HiGHS; at the limit it warns and returns its incumbent.
        max_nodes: Refuse larger graphs (the MILP grows as nodes x devices^2).
    """
    time_limit = _checks.positive_float(_NAME, "time_limit", time_limit, allow_inf=False)
    max_nodes = _checks.positive_int(_NAME, "max_nodes", max_nodes)
    if problem.num_nodes > max_nodes:
        raise ConfigError(
            f"{_NAME} is for small graphs: {problem.graph.name!r} has {problem.num_nodes} nodes, "
            f"max_nodes is {max_nodes}"
        )
    program = _program(problem, contiguous)
    result = program.solve(time_limit)
    if result.x is None:
        raise PlacementError(f"{_NAME}: {result.message.strip()} for {problem.graph.name!r}")
    placement = program.placement(result.x)
    optimal = result.status == 0
    value = float(result.fun) * program.unit
    bound = min(float(result.mip_dual_bound) * program.unit, value)
    if not optimal:
        warnings.warn(
            f"{_NAME}: stopped at the time limit ({result.message.strip()}); returning the "
            f"incumbent (max-load {value:.6g}, lower bound {bound:.6g})",
            SearchLimitWarning,
            stacklevel=3,
        )
    info = {"value": value, "status": result.message.strip(), "contiguous": contiguous}
    return Solution(placement, bound, optimal, info)


def milp_objective(problem: Problem, placement: np.ndarray, *, contiguous: bool = False) -> float:
    """The max-load the MILP's rows give ``placement`` (seconds; tests compare it with the
    simulator's ``pipeline`` runtime).

    Raises:
        PlacementError: ``placement`` splits a block or puts a block where it cannot run.
    """
    return _program(problem, contiguous).objective_at(placement)


def _program(problem: Problem, contiguous: bool) -> _Program:
    """The program over the split model's blocks (contiguous) or the colocation units."""
    if not contiguous:  # no split model: its contraction cycles do not matter here
        edge_time = pair_independent_edge_times(problem)
        return _Program(problem, problem.units.of_node, edge_time)
    model = build_split_model(problem, merge_free=False)
    program = _Program(problem, model.block_of, model.edge_time)
    program.add_contiguity(model.order_edges)
    return program


def _time_unit(block_durations: np.ndarray, edge_time: np.ndarray, n_dev: int) -> float:
    """Seconds per unit of time in the program: a lower bound on the max-load (the largest
    block, or the total work spread evenly, at its fastest), but at least a millionth of the
    longest edge (work of 1e-141 s beside microsecond transfers would put coefficients past
    HiGHS's largest, 1e15: a "model error"), else 1."""
    fastest = np.where(np.isfinite(block_durations), block_durations, np.inf).min(axis=1)
    fastest = fastest[np.isfinite(fastest)]
    work = max(float(fastest.max(initial=0.0)), float(fastest.sum()) / n_dev)
    unit = max(work, float(edge_time.max(initial=0.0)) * 1e-6)
    return unit if unit > 0.0 else 1.0


class _Program:
    """Columns and rows of the MILP, built incrementally."""

    def __init__(self, problem: Problem, block_of: np.ndarray, edge_time: np.ndarray) -> None:
        self.problem, self.block_of = problem, block_of
        n_blocks, n_dev, n = int(block_of.max()) + 1, problem.num_devices, problem.num_nodes
        self.n_blocks, self.n_dev = n_blocks, n_dev
        self.accelerators = np.flatnonzero(~problem.cluster.is_cpu)
        n_acc = len(self.accelerators)
        self.y = np.arange(n_blocks * n_dev).reshape(n_blocks, n_dev)
        self.out = self.y.size + np.arange(n * n_acc).reshape(n, n_acc)
        self.inc = self.out.size + self.y.size + np.arange(n * n_acc).reshape(n, n_acc)
        self.pi = self.y.size + 2 * self.out.size + np.arange(n_dev)
        self.t = self.pi[-1] + 1
        self.n_vars = self.t + 1
        self.block_durations = np.zeros((n_blocks, n_dev))
        np.add.at(self.block_durations, block_of, problem.durations)
        self.runnable = np.isfinite(self.block_durations)
        self.unit = _time_unit(self.block_durations, edge_time, n_dev)
        self.rows: list[tuple[list[int], list[float], float, float]] = []
        self.transfer_rows: list[int] = []
        self.load_rows: list[int] = []
        self._assignment_rows()
        self._load_rows(edge_time / self.unit)

    def row(self, cols, coefs, low=-np.inf, high=np.inf) -> None:
        self.rows.append((list(cols), list(coefs), low, high))

    def _assignment_rows(self) -> None:
        p = self.problem
        memory = np.bincount(
            self.block_of, weights=p.graph.arrays.mem_bytes, minlength=self.n_blocks
        )
        for g in range(self.n_blocks):
            self.row(self.y[g], np.ones(self.n_dev), 1.0, 1.0)
        for i in range(self.n_dev):
            if np.isfinite(p.capacity[i]):
                self.row(self.y[:, i], memory, high=float(p.capacity[i]))

    def _load_rows(self, edge_time: np.ndarray) -> None:
        a, b_of = self.problem.graph.arrays, self.block_of
        work = np.where(self.runnable, self.block_durations, 0.0) / self.unit
        for k, i in enumerate(self.accelerators):
            for e in np.flatnonzero((b_of[a.src] != b_of[a.dst]) & (edge_time > 0)):
                w, t = int(a.src[e]), float(edge_time[e])
                gw, gz = self.y[b_of[w], i], self.y[b_of[a.dst[e]], i]
                self.transfer_rows += [len(self.rows), len(self.rows) + 1]
                self.row([gw, gz, self.out[w, k]], [t, -t, -1.0], high=0.0)
                self.row([gz, gw, self.inc[w, k]], [t, -t, -1.0], high=0.0)
        for i in range(self.n_dev):
            cols, coefs = [*self.y[:, i], self.t], [*work[:, i], -1.0]
            if i in self.accelerators:
                k = int(np.flatnonzero(self.accelerators == i)[0])
                cols += list(self.out[:, k]) + list(self.inc[:, k])
                coefs += [1.0] * (2 * self.problem.num_nodes)
            self.load_rows.append(len(self.rows))
            self.row(cols, coefs, high=0.0)

    def objective_at(self, placement: np.ndarray) -> float:
        """Smallest ``T`` (seconds) the rows allow with ``y`` fixed to ``placement``: each
        transfer variable at the largest value its rows force, then the largest load row."""
        placement = np.asarray(placement, dtype=np.int64)
        device_of_block = np.full(self.n_blocks, -1)
        device_of_block[self.block_of] = placement
        if np.any(device_of_block[self.block_of] != placement):
            raise PlacementError(f"{_NAME}: the placement splits a block")
        if not self.runnable[np.arange(self.n_blocks), device_of_block].all():
            raise PlacementError(f"{_NAME}: the placement puts a block where it cannot run")
        x = np.zeros(self.n_vars)
        x[self.y[np.arange(self.n_blocks), device_of_block]] = 1.0
        for r in self.transfer_rows:  # sum(coefs[:-1] x) - var <= 0, var last
            cols, coefs, _, _ = self.rows[r]
            x[cols[-1]] = max(x[cols[-1]], float(np.dot(coefs[:-1], x[cols[:-1]])))
        loads = []
        for r in self.load_rows:  # load - T <= 0
            cols, coefs, _, _ = self.rows[r]
            loads.append(float(np.dot(coefs, x[cols])))  # x[T] is 0
        return max(loads) * self.unit

    def add_contiguity(self, order_edges: np.ndarray) -> None:
        """Devices ordered along the ordering edges (potentials ``pi``)."""
        d = self.n_dev
        for x, z in order_edges.tolist():
            for i in range(d):
                for j in range(d):
                    if i != j:  # pi_j - pi_i - D y_xi - D y_zj >= 1 - 2D
                        cols = [self.pi[j], self.pi[i], self.y[x, i], self.y[z, j]]
                        self.row(cols, [1.0, -1.0, -d, -d], low=1.0 - 2 * d)

    def solve(self, time_limit: float):
        rows, cols, vals, low, high = [], [], [], [], []
        for r, (c, v, lo, hi) in enumerate(self.rows):
            rows += [r] * len(c)
            cols += c
            vals += v
            low.append(lo)
            high.append(hi)
        matrix = coo_matrix((vals, (rows, cols)), shape=(len(self.rows), self.n_vars)).tocsr()
        lower, upper = np.zeros(self.n_vars), np.full(self.n_vars, np.inf)
        upper[self.y] = np.where(self.runnable, 1.0, 0.0)
        upper[self.pi] = self.n_dev - 1
        integrality = np.zeros(self.n_vars)
        integrality[self.y] = 1
        cost = np.zeros(self.n_vars)
        cost[self.t] = 1.0
        return scipy_milp(
            cost,
            constraints=LinearConstraint(matrix, low, high),
            integrality=integrality,
            bounds=Bounds(lower, upper),
            options={"time_limit": time_limit, "mip_rel_gap": _MIP_REL_GAP},
        )

    def placement(self, x: np.ndarray) -> np.ndarray:
        device_of_block = np.argmax(x[self.y], axis=1)
        return device_of_block[self.block_of].astype(np.int64)
