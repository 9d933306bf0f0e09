"""``evaluate``: any placer, a trained policy included, on graphs, in the result schema.

A baseline placer and a trained policy (``placer="policy?path=model.zip"``) end in an
:class:`~placerl.results.EvalResult`, whose per-graph outcomes are those of
:func:`~placerl.train.train`'s result, so that ``result.json`` files from training and
evaluation runs compare side by side. Infeasible
placements are penalized as the envs do with their default reference (single device); an env
trained with another ``reference`` penalizes against that one, so the two can differ there.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from placerl._options import check_out_dir, check_spec_list
from placerl._provenance import provenance
from placerl.baselines import solve
from placerl.baselines.references import parse_placer, reference, resolve_budget
from placerl.cluster import load_cluster
from placerl.graph import load_graph
from placerl.results import (
    EvalResult,
    GraphOutcome,
    placement_by_op,
    why_infeasible,
    write_result,
)
from placerl.run_config import BASE_BASELINES
from placerl.sim import CostModel, lower_bound, penalized_runtime, simulate


def evaluate(
    graphs: str | Sequence[str],
    cluster: str,
    placer: str,
    *,
    objective: str = "step_time",
    baselines: Sequence[str] = BASE_BASELINES,
    out_dir: str | None = None,
) -> EvalResult:
    """Place every graph with ``placer`` and compare with ``baselines``.

    Args:
        graphs: A graph spec or a list of them.
        cluster: A cluster spec.
        placer: A placer spec (``heft``, ``local_search?init=heft&time_limit=5``,
            ``policy?path=runs/x/model.zip&search=sample&budget=2000``).
        objective: ``step_time`` or ``pipeline``.
        baselines: Placer specs to compare with (through the shared reference cache).
        out_dir: Where ``result.json`` goes (``None``: nowhere).

    Raises:
        ConfigError: An unknown placer or option, graph or cluster spec; no graphs; baselines
            that are not a list or hold ``{steps}`` (a training run's); an ``out_dir`` that
            is a file (all before any work).
    """
    name, options = parse_placer(placer)
    specs = [graphs] if isinstance(graphs, str) else check_spec_list(graphs, "graphs", empty=False)
    for spec in resolve_budget(check_spec_list(baselines, "baselines"), None):
        parse_placer(spec)
    check_out_dir(out_dir)
    devices = load_cluster(cluster)
    outcomes, start = [], time.perf_counter()
    for spec in specs:
        graph = load_graph(spec)
        result = solve(name, graph, devices, objective, **options)
        single = reference(graph, devices, objective, "single_device").score
        runtime = penalized_runtime(result.simulation, single)
        why = why_infeasible(result.simulation)
        compared = {b: reference(graph, devices, objective, b) for b in baselines}
        bound = lower_bound(CostModel(graph, devices, objective))
        outcomes.append(
            GraphOutcome(
                graph=graph.name,
                final_runtime=runtime,
                sampled_runtime=runtime,
                best_runtime=runtime,
                best_placement=result.placement.tolist(),
                best_placement_by_op=placement_by_op(graph, devices, result.placement),
                baselines={b: ref.score for b, ref in compared.items()},
                infeasible={
                    b: why_infeasible(simulate(graph, ref.placement, devices, objective))
                    for b, ref in compared.items()
                    if not ref.feasible
                },
                final_infeasible=why,
                best_infeasible=why,
                lower_bound=bound,
            )
        )
    config = {
        "graph": {"spec": graphs if isinstance(graphs, str) else specs},
        "cluster": {"spec": cluster},
        "objective": objective,
        "placer": placer,
        "baselines": list(baselines),
    }
    evaluation = EvalResult(
        config,
        outcomes,
        timings={"evaluate": time.perf_counter() - start},
        out_dir=out_dir,
        provenance=provenance(),
    )
    if out_dir is not None:
        write_result(evaluation, Path(out_dir))
    return evaluation
