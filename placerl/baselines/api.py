"""The placer registry and the one entry point: ``solve`` / ``place``.

A placer is a function ``fn(problem, *, option=default, ...) -> placement | Solution`` kept in
the :data:`PLACERS` registry. :func:`solve` validates the inputs, runs the placer, checks the
placement it returns on the simulator (feasibility: memory, colocation, device kinds) and
returns a :class:`PlacementResult`; :func:`place` returns only the placement.
"""

from __future__ import annotations

import inspect
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from placerl._options import check_options
from placerl._registry import Registry
from placerl.cluster import Cluster, load_cluster
from placerl.errors import ConfigError
from placerl.graph import CompGraph, load_graph
from placerl.sim import SimResult, parse_objective

from .problem import Problem, check_solvable


class InfeasiblePlacementWarning(UserWarning):
    """A placer returned a placement the simulator reports infeasible."""


class SearchLimitWarning(UserWarning):
    """An exact placer hit its time or size limit and returned its best placement so far."""


@dataclass(frozen=True)
class Solution:
    """What a placer may return instead of a bare placement.

    Attributes:
        placement: One device index per node.
        lower_bound: A proven lower bound on the optimum of the objective the placer
            optimizes, within the placer's model (``None`` if it proves none). Tarnawski's DP
            bounds contiguous splits only: non-contiguous placements can do better.
        optimal: The placement is proven optimal for that objective within the placer's model.
        info: Placer-specific figures (solver status, ideals enumerated, ...).
    """

    placement: np.ndarray
    lower_bound: float | None = None
    optimal: bool = False
    info: Mapping[str, Any] = field(default_factory=dict)


PlacerFn = Callable[..., "np.ndarray | Solution"]


@dataclass(frozen=True)
class Placer:
    """A registered placer.

    Attributes:
        name: Registry name.
        fn: ``fn(problem, **options) -> placement | Solution``.
        optimizes: The objective the placer targets (``"step_time"``, ``"pipeline"``), ``"any"``
            when it optimizes whatever objective it is given, ``None`` when it ignores costs.
        options: Option names and their defaults (from ``fn``'s keyword-only parameters).
        doc: One line shown in tables and ``PLACERS`` listings.
        needs_solvable: :func:`solve` rejects problems that no placement can solve before
            running it (``False`` for placers defined on every problem, like ``single_device``,
            which then return their least infeasible placement).
        decides: What the placer chooses per node: a ``"device"``, or a ``"configuration"``
            (parallelization strategies, for the ``strategy`` objective).
        one_of: Options of which the placer needs one, each with a default of ``None``
            (``policy``: a model ``path`` or a ``pretrained`` name); empty: none.
    """

    name: str
    fn: PlacerFn
    optimizes: str | None
    options: Mapping[str, Any]
    doc: str
    needs_solvable: bool = True
    decides: str = "device"
    one_of: tuple[str, ...] = ()

    @property
    def standalone(self) -> bool:
        """Every option has a default and none of :attr:`one_of` is needed, so the placer
        runs on any problem as it is (``policy`` needs a trained model: a ``path`` or a
        ``pretrained`` name)."""
        return not self.one_of and all(
            default is not inspect.Parameter.empty for default in self.options.values()
        )


#: Placers by name; the ``placerl.placers`` entry-point group adds placers of higher layers and
#: other packages (``policy``, a trained policy, from :mod:`placerl.agents.placer`).
PLACERS: Registry[Placer] = Registry("placer", plugins="placerl.placers")


def register_placer(
    name: str,
    *,
    optimizes: str | None = None,
    needs_solvable: bool = True,
    decides: str = "device",
    one_of: tuple[str, ...] = (),
    overwrite: bool = False,
) -> Callable[[PlacerFn], PlacerFn]:
    """Register ``fn(problem, *, options...)`` as placer ``name``.

    Args:
        name: Name to use in :func:`solve`, :func:`place` and benchmark configs.
        optimizes: See :attr:`Placer.optimizes`.
        needs_solvable: See :attr:`Placer.needs_solvable`.
        decides: See :attr:`Placer.decides`.
        one_of: See :attr:`Placer.one_of`.
        overwrite: Replace an existing placer of the same name.
    """

    def wrap(fn: PlacerFn) -> PlacerFn:
        params = inspect.signature(fn).parameters.values()
        options = {p.name: p.default for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}
        doc = (fn.__doc__ or name).strip().splitlines()[0]
        placer = Placer(name, fn, optimizes, options, doc, needs_solvable, decides, one_of)
        PLACERS.register(name, placer, overwrite=overwrite)
        return fn

    return wrap


@dataclass(frozen=True, eq=False)
class PlacementResult:
    """A placer's placement with its simulated score and the placer's own figures.

    Attributes:
        placer: The placer's name.
        objective: The objective the placement was scored with.
        placement: One device index per node.
        runtime: Simulated objective value (seconds; the max load under ``pipeline``).
        feasible: Memory fits, no colocation group is split, every node can run where placed.
        reasons: Why the placement is infeasible (empty when feasible).
        solve_time: Wall-clock seconds the placer took.
        lower_bound: A proven lower bound on the optimum of ``objective`` within the placer's
            model (``None`` if none; see :class:`Solution`).
        optimal: ``runtime`` is proven optimal for ``objective`` within the placer's model
            (e.g. among contiguous splits for ``tarnawski_dp``).
        info: Placer-specific figures.
        simulation: The simulator's full result for the placement (per-device loads, memory).
    """

    placer: str
    objective: str
    placement: np.ndarray
    runtime: float
    feasible: bool
    reasons: tuple[str, ...]
    solve_time: float
    lower_bound: float | None = None
    optimal: bool = False
    info: Mapping[str, Any] = field(default_factory=dict)
    simulation: SimResult | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary."""
        return {
            "placer": self.placer,
            "objective": self.objective,
            "runtime": self.runtime,
            "feasible": self.feasible,
            "reasons": list(self.reasons),
            "solve_time": self.solve_time,
            "lower_bound": self.lower_bound,
            "optimal": self.optimal,
            "info": dict(self.info),
            "placement": self.placement.tolist(),
        }


def solve(
    name: str,
    graph: CompGraph | str,
    cluster: Cluster | str,
    objective: str = "step_time",
    **options: Any,
) -> PlacementResult:
    """Run placer ``name`` and score its placement on the simulator.

    Args:
        name: A registered placer (see :data:`PLACERS`).
        graph: The computation graph, or a spec for :func:`placerl.graph.load_graph`.
        cluster: The devices, or a spec for :func:`placerl.cluster.load_cluster`.
        objective: ``step_time`` or ``pipeline`` (any registered objective).
        **options: The placer's options (see its docstring).

    Returns:
        The placement with its simulated runtime, feasibility and the placer's figures. An
        infeasible placement is returned (with ``reasons``) and warned about.

    Raises:
        ConfigError: Unknown placer, objective or option, or a bad option value.
        ClusterError: A bad cluster spec.
        PlacementError: No placement can fit (a node runs nowhere, memory is short) or the
            placer proves there is none in its model.
    """
    placer = PLACERS[name]
    graph = load_graph(graph)
    cluster = load_cluster(cluster)
    parse_objective(objective)
    check_options(placer.fn, options, what=f"placer {name!r}", error=ConfigError, keyword_only=True)
    problem = Problem(graph, cluster, objective)
    _check_decision(placer, problem)
    if placer.needs_solvable:
        check_solvable(problem)
    start = time.perf_counter()
    out = placer.fn(problem, **options)
    solve_time = time.perf_counter() - start
    solution = out if isinstance(out, Solution) else Solution(np.asarray(out))
    placement = problem.model.check(solution.placement)
    sim = problem.model.evaluate(placement, check=False, times=False)
    if not sim.feasible:
        reasons = "; ".join(sim.reasons)
        warnings.warn(
            f"placer {name!r} returned an infeasible placement: {reasons}",
            InfeasiblePlacementWarning,
            stacklevel=2,
        )
    own_objective = placer.optimizes in (objective, "any")
    return PlacementResult(
        placer=name,
        objective=objective,
        placement=placement,
        runtime=sim.runtime,
        feasible=sim.feasible,
        reasons=sim.reasons,
        solve_time=solve_time,
        lower_bound=solution.lower_bound if own_objective else None,
        optimal=solution.optimal and own_objective,
        info=dict(solution.info),
        simulation=sim,
    )


def _check_decision(placer: Placer, problem: Problem) -> None:
    """Placers of devices and placers of configurations (``strategy``) do not mix."""
    if placer.decides != problem.model.decision:
        fitting = [p.name for p in PLACERS.values() if p.decides == problem.model.decision]
        raise ConfigError(
            f"placer {placer.name!r} chooses a {placer.decides} per node, objective "
            f"{problem.objective!r} takes a {problem.model.decision} per node; placers that "
            f"fit: {', '.join(fitting)}"
        )


def place(
    name: str,
    graph: CompGraph | str,
    cluster: Cluster | str,
    objective: str = "step_time",
    **options: Any,
) -> np.ndarray:
    """The placement of :func:`solve` (same arguments and errors): one device per node."""
    return solve(name, graph, cluster, objective, **options).placement
