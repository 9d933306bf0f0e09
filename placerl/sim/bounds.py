"""Lower bounds on the runtime any placement can reach, per objective.

A bound tells how much room a graph leaves for a placer: when HEFT's runtime is the bound, no
placer, learned or not, can beat it. The bounds relax the objective (no communication, every
node on its fastest device, no memory limits or colocation), so they hold for every placement
and are cheap: one pass over the graph.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from placerl._registry import Registry
from placerl.graph.orders import traversal_order
from placerl.sim.model import CostModel, parse_objective

#: ``fn(model) -> seconds`` by objective name.
LOWER_BOUNDS: Registry[Callable[[CostModel], float]] = Registry("lower bound")


def lower_bound(model: CostModel) -> float | None:
    """A proven lower bound on ``model``'s objective over all placements.

    Args:
        model: The cost model of (graph, cluster, objective).

    Returns:
        Seconds, or ``None`` for an objective without a registered bound (``measured``).
    """
    name, _ = parse_objective(model.objective)
    return LOWER_BOUNDS[name](model) if name in LOWER_BOUNDS else None


def _fastest(model: CostModel) -> np.ndarray:
    return model.durations.min(axis=1)


@LOWER_BOUNDS.decorator("step_time")
def critical_path_bound(model: CostModel) -> float:
    """The longer of the critical path and the even split of all work over the devices.

    Every path of the graph runs in order, each node for at least its fastest duration; each
    device runs one op at a time, so some device runs at least ``1/D`` of the total work.
    """
    fastest = _fastest(model)
    graph = model.graph
    finish = np.zeros(graph.num_nodes)
    for v in traversal_order(graph, "topo"):
        producers = graph.predecessors(v)
        finish[v] = fastest[v] + (finish[producers].max() if producers.size else 0.0)
    return float(max(finish.max(initial=0.0), fastest.sum() / model.num_devices))


@LOWER_BOUNDS.decorator("pipeline")
def load_bound(model: CostModel) -> float:
    """The larger of the even split of all work over the devices and the slowest single node:
    the loads sum to at least the total work, and one device holds each node."""
    fastest = _fastest(model)
    return float(max(fastest.max(initial=0.0), fastest.sum() / model.num_devices))
