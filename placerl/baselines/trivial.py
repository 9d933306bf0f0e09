"""Trivial placers: one device, round robin, random, and Baechi's m-TOPO.

All of them keep colocation groups together and reserve memory per group (see
:class:`~placerl.baselines.problem.Assignment`).
"""

from __future__ import annotations

import numpy as np

from placerl.errors import PlacementError
from placerl.sim import penalized_runtime

from . import _checks
from .api import register_placer
from .problem import Assignment, Problem


@register_placer("single_device", needs_solvable=False)
def single_device(problem: Problem) -> np.ndarray:
    """Everything on one device: the fastest feasible one, else the least infeasible one.

    Each device that can run every node is simulated with the whole graph on it. The fastest
    feasible one wins (memory checked by the simulator, activations included under
    ``step_time``); when none is feasible, the one with the lowest penalized runtime
    (:func:`placerl.sim.penalized_runtime`: the least memory overflow) is returned, and
    :func:`~placerl.baselines.solve` warns that it is infeasible. This is the one meaning of
    "single device" in placerl: the envs' default reference and initial placement use it too.

    Source: the usual single-device baseline (e.g. Mirhoseini et al., ICML 2017).
    Complexity: O(D (V + E)): one simulation per device.

    Raises:
        PlacementError: No single device can run every node.
    """
    runnable = np.flatnonzero(np.isfinite(problem.durations).all(axis=0))
    if runnable.size == 0:
        raise PlacementError(
            f"single_device: no device can run every node of {problem.graph.name!r}"
        )
    n = problem.num_nodes
    ranked = []
    for d in runnable:
        result = problem.model.evaluate(np.full(n, d, dtype=np.int64), check=False, times=False)
        ranked.append((not result.feasible, penalized_runtime(result, result.runtime), int(d)))
    return np.full(n, min(ranked)[2], dtype=np.int64)


@register_placer("round_robin")
def round_robin(problem: Problem) -> np.ndarray:
    """Nodes in topological order to devices 0, 1, 2, ... in turn.

    Skips devices that cannot run the node or hold it; colocated nodes follow their group.
    Source: the classic round-robin baseline. Complexity: O(V D).
    """
    assignment = Assignment(problem)
    turn = 0
    for v in problem.topo_order:
        options = assignment.candidates(v)
        if assignment.device_of(v) < 0:
            later = options[options >= turn]
            d = int(later[0] if later.size else options[0])
            turn = (d + 1) % problem.num_devices
            assignment.place(v, d)
    return assignment.placement()


@register_placer("random")
def random(problem: Problem, *, seed: int = 0) -> np.ndarray:
    """Each colocation unit on a uniformly random device that can run and hold it.

    Source: the random baseline of RL placement papers. Complexity: O(V D).

    Args:
        problem: The problem.
        seed: Seed of the draws.
    """
    rng = np.random.default_rng(_checks.seed("random", seed))
    assignment = Assignment(problem)
    for first_node in rng.permutation([int(m[0]) for m in problem.units.members]):
        options = assignment.candidates(int(first_node))
        assignment.place(int(first_node), int(rng.choice(options)))
    return assignment.placement()


@register_placer("m_topo")
def m_topo(problem: Problem) -> np.ndarray:
    """Baechi's m-TOPO: fill devices in topological order up to a balanced share of the work.

    Devices are filled one after another; a device takes nodes until its busy time reaches
    the balanced time ``T = 1 / sum_d (1 / W_d)`` (``W_d``: the whole graph's time on device
    ``d``, so ``T`` is the makespan of a perfectly divisible load), or until the next node does
    not fit its memory; the last device takes the rest.

    Source: B. Jeon, L. Cai, P. Srivastava, J. Jiang, X. Ke, Y. Meng, C. Xie, I. Gupta,
    "Baechi: Fast Device Placement of Machine Learning Graphs", ACM SoCC 2020.
    Complexity: O(V D).
    """
    assignment = Assignment(problem)
    whole = problem.durations.sum(axis=0)
    with np.errstate(divide="ignore", over="ignore"):  # zero or subnormal work: inf, share 0
        share = 1.0 / np.sum(1.0 / whole)
    busy = np.zeros(problem.num_devices)
    current = 0
    for v in problem.topo_order:
        d = assignment.device_of(v)
        if d < 0:
            d = _next_fitting(assignment, v, current)
            current = max(current, d)
            assignment.place(v, d)
        busy[d] += problem.durations[v, d]
        full = busy[d] >= share * (1 - 1e-9)  # tolerate rounding in the running sum
        if d == current and full and current < problem.num_devices - 1:
            current += 1
    return assignment.placement()


def _next_fitting(assignment: Assignment, v: int, current: int) -> int:
    """The first device from ``current`` on that can take node ``v`` (else any candidate)."""
    for d in range(current, assignment.problem.num_devices):
        if assignment.fits(v, d):
            return d
    return int(assignment.candidates(v)[0])
