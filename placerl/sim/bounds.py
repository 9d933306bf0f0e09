"""Lower bounds on the runtime any placement can reach, per objective.

A bound tells how much room a graph leaves for a placer: when HEFT's runtime is the bound, no
placer, learned or not, can beat it. The bounds relax the objective (no communication, every
node on its fastest device, no memory limits or colocation), so they hold for every placement
and are cheap: one pass over the graph.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit

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
    a = model.graph.arrays
    finish = _longest_paths(traversal_order(model.graph, "topo"), fastest, a.pred_ptr, a.pred)
    return float(max(finish.max(initial=0.0), fastest.sum() / model.num_devices))


@njit(cache=True)
def _longest_paths(order, weight, pred_ptr, pred):
    """Each node's longest path from a source, its own ``weight`` included, visiting the nodes
    in topological ``order`` (compiled: a Python loop took seconds at 100k nodes)."""
    finish = np.zeros(weight.shape[0])
    for v in order:
        longest = 0.0
        for k in range(pred_ptr[v], pred_ptr[v + 1]):
            longest = max(longest, finish[pred[k]])
        finish[v] = weight[v] + longest
    return finish


@LOWER_BOUNDS.decorator("pipeline")
def load_bound(model: CostModel) -> float:
    """The larger of the even split of all work over the devices and the slowest single node:
    the loads sum to at least the total work, and one device holds each node."""
    fastest = _fastest(model)
    return float(max(fastest.max(initial=0.0), fastest.sum() / model.num_devices))
