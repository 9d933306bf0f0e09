"""``milp``: the exact max-load split as a mixed-integer program (scipy.optimize.milp, HiGHS).

For small graphs: it cross-checks ``tarnawski_dp`` on contiguous splits and gives the true
optimum without contiguity. Variables (per block ``g`` and device ``i``): ``y[g, i]`` binary,
block ``g`` on device ``i``; per node ``w`` and accelerator ``i``: ``out[w, i]``, ``in[w, i]``
>= 0, the transfer seconds ``w`` costs device ``i``; per device: a potential ``pi[i]``; and the
max-load ``T``.

* every block on one device that can run it; memory per device;
* ``out[w, i] >= t_e (y[g(w), i] - y[g(z), i])`` and ``in[w, i] >= t_e (y[g(z), i] - y[g(w), i])``
  for every edge ``e = (w, z)``: the longest transfer across the border, as in the simulator;
* ``sum_g dur[g, i] y[g, i] + sum_w (out[w, i] + in[w, i]) <= T`` (CPUs: no transfer terms);
* contiguous: for every ordering edge ``X -> Y`` of the split model and devices ``i != j``,
  ``pi[j] - pi[i] >= 1 - D (2 - y[X, i] - y[Y, j])``: the devices can be ordered along the
  edges, which is exactly a chain of ideals (:mod:`placerl.baselines.split_model`).
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
from .split_model import build_split_model

_NAME = "milp"


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
    model = build_split_model(problem, merge_free=False)
    block_of = model.block_of if contiguous else problem.units.of_node
    program = _Program(problem, block_of, model.edge_time)
    if contiguous:
        program.add_contiguity(model.order_edges)
    result = program.solve(time_limit)
    if result.x is None:
        raise PlacementError(f"{_NAME}: {result.message.strip()} for {problem.graph.name!r}")
    placement = program.placement(result.x)
    optimal = result.status == 0
    if not optimal:
        warnings.warn(
            f"{_NAME}: stopped at the time limit ({result.message.strip()}); returning the "
            f"incumbent (max-load {result.fun:.6g}, lower bound {result.mip_dual_bound:.6g})",
            SearchLimitWarning,
            stacklevel=3,
        )
    bound = float(result.fun) if optimal else float(result.mip_dual_bound)
    info = {"value": float(result.fun), "status": result.message.strip(), "contiguous": contiguous}
    return Solution(placement, bound, optimal, info)


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
        self.rows: list[tuple[list[int], list[float], float, float]] = []
        self._assignment_rows()
        self._load_rows(edge_time)

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
        work = np.where(self.runnable, self.block_durations, 0.0)
        for k, i in enumerate(self.accelerators):
            for e in np.flatnonzero((b_of[a.src] != b_of[a.dst]) & (edge_time > 0)):
                w, t = int(a.src[e]), float(edge_time[e])
                gw, gz = self.y[b_of[w], i], self.y[b_of[a.dst[e]], i]
                self.row([gw, gz, self.out[w, k]], [t, -t, -1.0], high=0.0)
                self.row([gz, gw, self.inc[w, k]], [t, -t, -1.0], high=0.0)
        for i in range(self.n_dev):
            cols, coefs = [*self.y[:, i], self.t], [*work[:, i], -1.0]
            if i in self.accelerators:
                k = int(np.flatnonzero(self.accelerators == i)[0])
                cols += list(self.out[:, k]) + list(self.inc[:, k])
                coefs += [1.0] * (2 * self.problem.num_nodes)
            self.row(cols, coefs, high=0.0)

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
            options={"time_limit": time_limit},
        )

    def placement(self, x: np.ndarray) -> np.ndarray:
        device_of_block = np.argmax(x[self.y], axis=1)
        return device_of_block[self.block_of].astype(np.int64)
