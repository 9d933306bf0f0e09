"""Parallelization strategies (PaSE): each op splits its iteration space over the devices.

Objective ``strategy``: a "placement" holds one *configuration index* per node instead of a
device (see :class:`StrategySpace`); its runtime is the step time of
:mod:`placerl.sim.strategy.cost`. ``CostModel(graph, cluster, "strategy")`` prepares the cost
tables once; ``model.evaluate(strategy)`` sums them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from placerl.sim.model import CostModel, register_objective
from placerl.sim.result import SimResult
from placerl.sim.strategy.cost import Network, StrategyCost
from placerl.sim.strategy.rules import DIMS, OP_FAMILIES, OP_RULES, ROLES, OpRule, register_op_rule
from placerl.sim.strategy.space import StrategySpace, configurations

__all__ = [
    "DIMS",
    "OP_FAMILIES",
    "OP_RULES",
    "ROLES",
    "Network",
    "OpRule",
    "StrategyCost",
    "StrategySpace",
    "configurations",
    "register_op_rule",
]


def _prepare(model: CostModel) -> StrategyCost:
    return StrategyCost(model.graph, model.cluster, model.durations[:, 0])


@register_objective("strategy", prepare=_prepare, decides="configuration")
def _strategy(model: CostModel, placement: np.ndarray, times: bool) -> SimResult:
    cost: Any = model.prepared
    return cost.evaluate(placement, model.objective)
