"""``local_search``: hill climbing over single-group moves, scored by the simulator."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from placerl.errors import ConfigError
from placerl.sim.model import check_placement

from . import _checks
from .api import PLACERS, Solution, register_placer
from .problem import Problem

_NAME = "local_search"


@register_placer(_NAME, optimizes="any")
def local_search(
    problem: Problem,
    *,
    init: Any = "m_topo",
    max_rounds: int = 50,
    time_limit: float = 10.0,
    seed: int = 0,
) -> Solution:
    """Hill climbing: move one colocation unit at a time to the device that scores best.

    Each round visits the units in a seeded random order; for each it tries every other device
    that can run it and keeps the best move if it improves the score (feasible first, then the
    simulated runtime under the problem's objective). Stops at a local optimum, after
    ``max_rounds`` rounds or ``time_limit`` seconds. Parts need not be contiguous.

    Source: the local-search baseline of Tarnawski et al., NeurIPS 2020 (single-node moves,
    best improvement), here on any objective of the simulator.
    Complexity: O(rounds * U * D) simulations of O(V + E) each, U colocation units.

    Args:
        problem: The problem.
        init: A placer name whose placement to start from, or a placement.
        max_rounds: Rounds over all units at most.
        time_limit: Seconds at most (the round in progress finishes its current unit).
        seed: Seed of the visiting order.
    """
    max_rounds = _checks.positive_int(_NAME, "max_rounds", max_rounds)
    time_limit = _checks.positive_float(_NAME, "time_limit", time_limit)
    rng = np.random.default_rng(_checks.seed(_NAME, seed))
    deadline = time.perf_counter() + time_limit
    units = problem.units
    device_of_unit = _initial(problem, init)[[int(m[0]) for m in units.members]]
    score = _score(problem, device_of_unit)
    evaluations, rounds = 1, 0
    while rounds < max_rounds and time.perf_counter() < deadline:
        rounds += 1
        improved = False
        for u in rng.permutation(len(units)):
            if time.perf_counter() > deadline:
                break
            current = device_of_unit[u]
            for d in np.flatnonzero(np.isfinite(units.durations[u])):
                if d == current:
                    continue
                device_of_unit[u] = d
                candidate = _score(problem, device_of_unit)
                evaluations += 1
                if candidate < score:
                    score, current, improved = candidate, d, True
            device_of_unit[u] = current
        if not improved:
            break
    info = {"rounds": rounds, "evaluations": evaluations}
    return Solution(device_of_unit[units.of_node], info=info)


def _initial(problem: Problem, init: Any) -> np.ndarray:
    """The starting placement: another placer's, or the one given."""
    if isinstance(init, str):
        if init == _NAME:
            raise ConfigError(f"{_NAME}: option 'init' cannot be {_NAME!r} itself")
        out = PLACERS[init].fn(problem)
        return np.asarray(out.placement if isinstance(out, Solution) else out, dtype=np.int64)
    try:
        return check_placement(init, problem.graph, problem.num_devices)
    except ValueError as err:
        raise ConfigError(
            f"{_NAME}: option 'init' is not a placer name or placement: {err}"
        ) from None


def _score(problem: Problem, device_of_unit: np.ndarray) -> tuple[bool, float]:
    result = problem.model.evaluate(device_of_unit[problem.units.of_node], check=False)
    return (not result.feasible, result.runtime)
