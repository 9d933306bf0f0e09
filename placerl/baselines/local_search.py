"""``local_search``: hill climbing over single-group moves, scored by the simulator."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from placerl.errors import ConfigError
from placerl.sim import SimResult, clearly_faster
from placerl.sim.model import check_placement

from . import _checks
from .api import PLACERS, Solution, register_placer
from .problem import Problem

_NAME = "local_search"
#: Added to every weight a guided kick draws from, so that no unit or device is ruled out.
_FLOOR = 1e-3


@register_placer(_NAME, optimizes="any")
def local_search(
    problem: Problem,
    *,
    init: Any = "m_topo",
    max_rounds: int = 50,
    time_limit: float = 10.0,
    max_evaluations: int = 0,
    seed: int = 0,
    restarts: int = 0,
    kick: int = 4,
) -> Solution:
    """Hill climbing: move one colocation unit at a time to the device that scores best.

    Each round visits the units in a seeded random order; for each it tries every other device
    that can run it and keeps the best move if it improves the score (feasible first, then the
    simulated runtime under the problem's objective). Stops at a local optimum, after
    ``max_rounds`` rounds, ``time_limit`` seconds or ``max_evaluations`` simulator
    evaluations. Parts need not be contiguous. With ``restarts``, iterated local search: from a
    local optimum, ``kick`` random units of the best placement so far move to random devices
    and the climb starts again, up to ``restarts`` times, within the same limits; the best
    placement wins (a single climb stops at its optimum, where more evaluations buy nothing).

    Source: the local-search baseline of Tarnawski et al., NeurIPS 2020 (single-node moves,
    best improvement), here on any objective of the simulator.
    Complexity: O(rounds * U * D) moves, U colocation units; a move costs a full simulation,
    O(V + E), under ``step_time``, and under ``pipeline`` the group's degree, its producers'
    out-degrees and D (the incremental state, :class:`placerl.sim.incremental.PipelineState`).

    Args:
        problem: The problem.
        init: A placer name whose placement to start from, or a placement.
        max_rounds: Rounds over all units at most.
        time_limit: Seconds of search at most, counted once ``init``'s placement is there
            (the round in progress finishes its current unit).
        max_evaluations: Simulator evaluations at most, the start's included (0: no limit):
            the budget at which searches are compared (``policy?search=local&budget=...``).
        seed: Seed of the visiting order (and of the kicks).
        restarts: Kicks after the first local optimum at most (0: plain hill climbing).
        kick: Units each kick moves.
    """
    max_rounds = _checks.positive_int(_NAME, "max_rounds", max_rounds)
    time_limit = _checks.positive_float(_NAME, "time_limit", time_limit)
    max_evaluations = _checks.non_negative_int(_NAME, "max_evaluations", max_evaluations)
    restarts = _checks.non_negative_int(_NAME, "restarts", restarts)
    kick = _checks.positive_int(_NAME, "kick", kick)
    rng = np.random.default_rng(_checks.seed(_NAME, seed))
    start = _initial(problem, init)
    deadline = time.perf_counter() + time_limit  # from here: init's placer is not the search
    first = hill_climb(
        problem,
        start,
        rng=rng,
        max_rounds=max_rounds,
        deadline=deadline,
        max_evaluations=max_evaluations,
    )
    return iterated_climbs(
        problem,
        first,
        rng=rng,
        kick=kick,
        restarts=restarts,
        max_rounds=max_rounds,
        deadline=deadline,
        max_evaluations=max_evaluations,
    )


def iterated_climbs(
    problem: Problem,
    best: Solution,
    *,
    rng: np.random.Generator,
    kick: int = 4,
    restarts: int = 10**9,
    max_rounds: int = 50,
    deadline: float = np.inf,
    max_evaluations: int = 0,
    preferences: np.ndarray | None = None,
) -> Solution:
    """Iterated local search from the local optimum ``best`` (a :func:`hill_climb` result):
    kick ``kick`` units of the best placement so far and climb again, up to ``restarts``
    times, until ``max_evaluations`` (``best``'s own included; 0: no limit) or ``deadline``.

    Args:
        problem: The problem.
        best: The first climb's result; its evaluations count against the budget.
        rng: Draws the kicks (and, without ``preferences``, the climbs' visiting orders).
        kick: Units each kick moves.
        restarts: Kicks at most.
        max_rounds: Rounds of each climb at most.
        deadline: ``time.perf_counter()`` value to stop at.
        max_evaluations: Simulator evaluations at most, ``best``'s included (0: no limit).
        preferences: Probabilities ``(nodes, devices)``, e.g. a policy's: the climbs follow
            them (:func:`hill_climb`) and so do the kicks (:func:`kicked`).

    Returns:
        The best placement, with ``evaluations`` (all climbs') and ``kicks`` in its info.
    """
    spent, kicks = best.info["evaluations"], 0
    limit = max_evaluations or np.inf
    while kicks < restarts and spent < limit and time.perf_counter() < deadline:
        kicks += 1
        climbed = hill_climb(
            problem,
            kicked(problem, best.placement, kick, rng, preferences),
            rng=rng,
            max_rounds=max_rounds,
            deadline=deadline,
            max_evaluations=0 if limit == np.inf else int(limit - spent),
            preferences=preferences,
        )
        spent += climbed.info["evaluations"]
        if _better(_score(climbed), _score(best)):
            best = climbed
    return Solution(best.placement, info={**best.info, "evaluations": spent, "kicks": kicks})


def _score(solution: Solution) -> tuple[bool, float]:
    return not solution.info["feasible"], solution.info["runtime"]


def kicked(
    problem: Problem,
    placement: np.ndarray,
    kick: int,
    rng: np.random.Generator,
    preferences: np.ndarray | None = None,
) -> np.ndarray:
    """``placement`` with ``kick`` units moved to other devices that can run them.

    Without ``preferences`` the units and their devices are uniformly random (iterated local
    search's kick). With them a unit is drawn in proportion to how little it prefers its
    current device and goes to a device drawn in proportion to its preference: the kick moves
    what the policy doubts, to where the policy would put it. (:data:`_FLOOR` is added to
    every weight, so that no unit or device is ruled out.)

    Args:
        problem: The problem.
        placement: One device per node.
        kick: Units to move (all of them, if there are fewer).
        rng: Draws the units and their devices.
        preferences: Probabilities ``(nodes, devices)`` in [0, 1], e.g. a policy's; a unit
            reads its first member's row.

    Returns:
        The kicked placement (a copy).
    """
    units = problem.units
    leaders = np.array([int(m[0]) for m in units.members])
    out = np.array(placement)
    weights = None
    if preferences is not None:
        doubt = 1.0 - np.asarray(preferences)[leaders, out[leaders]] + _FLOOR
        weights = doubt / doubt.sum()
    size = min(kick, len(leaders))
    for u in rng.choice(len(leaders), size=size, replace=False, p=weights):
        runnable = np.flatnonzero(np.isfinite(units.durations[u]))
        others = runnable[runnable != out[leaders[u]]]
        if not len(others):
            continue
        p = None
        if preferences is not None:
            liking = np.asarray(preferences)[leaders[u], others] + _FLOOR
            p = liking / liking.sum()
        out[units.members[u]] = rng.choice(others, p=p)
    return out


def hill_climb(
    problem: Problem,
    start: np.ndarray,
    *,
    rng: np.random.Generator,
    max_rounds: int = 50,
    deadline: float = np.inf,
    max_evaluations: int = 0,
    preferences: np.ndarray | None = None,
) -> Solution:
    """Single-unit moves from ``start`` until a local optimum or a limit (see :func:`local_search`).

    Args:
        problem: The problem.
        start: The placement to start from (units move whole: each takes its first member's
            device).
        rng: Draws the units' visiting order when there are no ``preferences``.
        max_rounds: Rounds over all units at most.
        deadline: ``time.perf_counter()`` value to stop at.
        max_evaluations: Simulator evaluations at most, the start's included (0: no limit).
        preferences: Scores ``(nodes, devices)``, e.g. a policy's probabilities. With them a
            round visits the units least sure of their device first (lowest preference for
            the current one), tries devices in decreasing preference and takes the first
            move that improves (first improvement: the order decides which move is taken).
            Without them: a random unit order and the best move of each unit.

    Returns:
        The final placement, with ``rounds``, ``evaluations`` and its ``runtime`` and
        ``feasible`` in its info.
    """
    units = problem.units
    leaders = np.array([int(m[0]) for m in units.members])
    start = np.asarray(start)[leaders][units.of_node]  # units move whole
    moves = problem.model.incremental(start) or _FullMoves(problem, start)
    result = moves.result()
    score = (not result.feasible, result.runtime)
    evaluations, rounds = 1, 0
    limit = max_evaluations or np.inf
    unit_scores = None if preferences is None else np.asarray(preferences)[leaders]
    while rounds < max_rounds and time.perf_counter() < deadline and evaluations < limit:
        rounds += 1
        improved = False
        for u in _visiting_order(rng, unit_scores, moves.placement[leaders]):
            if time.perf_counter() > deadline or evaluations >= limit:
                break
            leader = int(leaders[u])
            current = best = int(moves.placement[leader])
            runnable = np.flatnonzero(np.isfinite(units.durations[u]))
            if unit_scores is not None:
                runnable = runnable[np.argsort(-unit_scores[u, runnable], kind="stable")]
            for d in runnable:
                if d == current or evaluations >= limit:
                    continue
                feasible, runtime = moves.try_move(leader, int(d))
                evaluations += 1
                if _better((not feasible, runtime), score):
                    score, best, improved = (not feasible, runtime), int(d), True
                    if unit_scores is not None:
                        break
            if best != current:
                moves.move(leader, best)
        if not improved:
            break
    info = {
        "rounds": rounds,
        "evaluations": evaluations,
        "runtime": score[1],
        "feasible": not score[0],
    }
    return Solution(np.array(moves.placement), info=info)


def _visiting_order(
    rng: np.random.Generator, unit_scores: np.ndarray | None, current: np.ndarray
) -> np.ndarray:
    """A seeded random permutation, or the units by their preference for where they are."""
    if unit_scores is None:
        return rng.permutation(len(current))
    return np.argsort(unit_scores[np.arange(len(current)), current], kind="stable")


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


def _better(candidate: tuple[bool, float], score: tuple[bool, float]) -> bool:
    """Feasible first; then a runtime shorter by more than rounding."""
    if candidate[0] != score[0]:
        return candidate[0] < score[0]
    return clearly_faster(candidate[1], score[1])


class _FullMoves:
    """Group moves scored by a full evaluation, for objectives without an incremental state
    (``step_time``); the same interface as :class:`placerl.sim.incremental.PipelineState`."""

    def __init__(self, problem: Problem, placement: np.ndarray) -> None:
        self.model, self.placement = problem.model, placement.copy()
        self._members = problem.model.colocation_members()

    def result(self) -> SimResult:
        return self.model.evaluate(self.placement, check=False, times=False)

    def try_move(self, node: int, device: int) -> tuple[bool, float]:
        members = self._members[node]
        old = self.placement[members].copy()
        self.placement[members] = device
        result = self.result()
        self.placement[members] = old
        return result.feasible, result.runtime

    def move(self, node: int, device: int) -> None:
        self.placement[self._members[node]] = device
