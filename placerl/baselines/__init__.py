"""Non-learned placers, scored on the same simulator as the RL placers.

One interface for all of them::

    from placerl.baselines import place, solve, PLACERS
    placement = place("heft", graph, cluster, objective="step_time")
    result = solve("tarnawski_dp", graph, cluster, objective="pipeline")
    result.runtime, result.feasible, result.optimal, result.lower_bound, result.solve_time

| placer | what | optimizes |
|---|---|---|
| ``single_device`` | everything on the fastest device that fits | - |
| ``round_robin`` | topological order, devices in turn | - |
| ``random`` | each colocation group on a random device that fits | - |
| ``m_topo`` | Baechi's m-TOPO: balanced topological fill under memory | - |
| ``heft`` | HEFT: upward rank, earliest finish time with transfers | step_time |
| ``m_etf`` | Baechi's m-ETF: earliest task first with memory admission | step_time |
| ``m_sct`` | Baechi's m-SCT: LP favourite children, then ETF | step_time |
| ``min_cut`` | balanced minimum cut, recursive Kernighan-Lin | - |
| ``tarnawski_dp`` | optimal contiguous split (Tarnawski et al. 2020) | pipeline |
| ``milp`` | exact MILP (scipy/HiGHS), small graphs | pipeline |
| ``local_search`` | single-group moves on the simulator | any |
| ``best_of`` | the best of several placers (default: the constructive ones and the DP) | any |
| ``pase_dp`` | PaSE's exact dynamic program over parallelization configurations | strategy |
| ``file`` | a placement made elsewhere, read from JSON (``path=``) | - |
| ``data_parallel`` | every op split by batch, parameters replicated | - |
| ``megatron`` | Megatron-LM tensor parallelism, data-parallel across the rest | - |

Every result is checked on the simulator (memory, colocation, device kinds); infeasible
placements are returned with their reasons and a warning. Register your own placer with
:func:`register_placer`.
"""

from placerl.baselines import (  # noqa: F401  (each module registers its placers)
    best_of,
    from_file,
    list_scheduling,
    local_search,
    milp,
    partition,
    pase,
    strategies,
    tarnawski,
    trivial,
)
from placerl.baselines.api import (
    PLACERS,
    InfeasiblePlacementWarning,
    PlacementResult,
    Placer,
    SearchLimitWarning,
    Solution,
    place,
    register_placer,
    solve,
)
from placerl.baselines.problem import Problem
from placerl.baselines.references import placer_spec

__all__ = [
    "PLACERS",
    "InfeasiblePlacementWarning",
    "PlacementResult",
    "Placer",
    "Problem",
    "SearchLimitWarning",
    "Solution",
    "place",
    "placer_spec",
    "register_placer",
    "solve",
]
