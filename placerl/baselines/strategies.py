"""Expert parallelization strategies for the ``strategy`` objective: data parallelism and
Megatron-LM's tensor parallelism."""

from __future__ import annotations

import numpy as np

from placerl.errors import ConfigError
from placerl.graph.orders import traversal_order
from placerl.sim.strategy import StrategyCost
from placerl.sim.strategy.space import divisors

from .api import register_placer
from .pase import _strategy_cost
from .problem import Problem


def config_index(configs: list[dict[str, int]], wanted: dict[str, int]) -> int | None:
    """Index of the configuration with exactly the factors ``wanted`` (others 1), if valid."""
    for index, config in enumerate(configs):
        if all(config.get(d, 1) == wanted.get(d, 1) for d in {*config, *wanted}):
            return index
    return None


def _batch_degree(cost: StrategyCost, p: int) -> int:
    """The largest divisor of ``p`` that divides the batch of every model input (ops whose
    first axis is not the batch, like position embeddings, then stay whole)."""
    space = cost.space
    inputs = [
        d
        for d, rule in zip(space.dims, space.rules, strict=True)
        if rule is not None and rule.name == "input"
    ]
    sizes = [d["b"] for d in inputs or space.dims if d.get("b", 1) > 1]
    return max(f for f in divisors(p) if all(s % f == 0 for s in sizes))


def _pick(cost: StrategyCost, i: int, wanted: dict[str, int], fallback: dict[str, int]) -> int:
    configs = cost.space.configs[i]
    found = config_index(configs, wanted)
    if found is None:
        found = config_index(configs, fallback)
    return 0 if found is None else found


@register_placer("data_parallel", needs_solvable=False, decides="configuration")
def data_parallel(problem: Problem) -> np.ndarray:
    """Data parallelism: every op splits its batch over the devices (the largest degree that
    divides every batch), parameters replicated.

    Source: the standard baseline of PaSE and TAP (Krizhevsky's "one weird trick", 2014).

    Complexity: O(V C) for V variables of at most C configurations.
    """
    cost = _strategy_cost(problem)
    degree = _batch_degree(cost, cost.space.p)
    per_variable = [_pick(cost, i, {"b": degree}, {}) for i in range(cost.space.num_variables)]
    return cost.space.expand(per_variable)


@register_placer("megatron", needs_solvable=False, decides="configuration")
def megatron(problem: Problem, *, tensor: int = 0) -> np.ndarray:
    """Megatron-LM: column- then row-parallel linears (MLP and attention), heads split,
    ``tensor``-way; the remaining devices data-parallel.

    Source: M. Shoeybi et al., "Megatron-LM: Training Multi-Billion Parameter Language Models
    Using Model Parallelism", 2019 (section 3: the MLP's first linear split by columns, the
    second by rows; attention split by heads).

    Complexity: O(V C + N log N) for V variables of at most C configurations and N nodes.

    Options:
        tensor: Tensor-parallel degree (a divisor of the device count); 0 picks the largest
            that divides every attention's heads (1 when there are none).
    """
    cost = _strategy_cost(problem)
    p = cost.space.p
    if tensor == 0:
        heads = [d["h"] for d in cost.space.dims if d.get("h", 1) > 1]
        tensor = max(f for f in divisors(p) if all(h % f == 0 for h in heads)) if heads else 1
    if isinstance(tensor, bool) or not isinstance(tensor, int) or tensor < 1 or p % tensor:
        raise ConfigError(f"tensor must divide the {p} devices, got {tensor!r}")
    data = max(
        f
        for f in divisors(p // tensor)
        if f <= _batch_degree(cost, p) and _batch_degree(cost, p) % f == 0
    )
    return cost.space.expand(_tensor_parallel(cost, tensor, data))


def _tensor_parallel(cost: StrategyCost, t: int, d: int) -> np.ndarray:
    """Walk the variables producers first: a linear reading a sharded feature is row-parallel
    (its output all-reduced, whole), any other linear column-parallel (its output sharded);
    matmuls, elementwise ops and softmaxes on sharded features stay sharded."""
    space = cost.space
    sharded = np.zeros(space.num_variables, dtype=bool)
    per_variable = np.zeros(space.num_variables, dtype=np.int64)
    for i in _producers_first(cost):
        v = space.variables[i]
        rule = space.rules[i]
        operands = space.operands[v]
        first = bool(operands) and sharded[space.variable_of[operands[0]]]
        family = None if rule is None else rule.name
        wanted: dict[str, int] = {"b": d}
        if family == "linear":
            wanted["k" if first else "n"] = t
        elif first and family in ("matmul", "softmax"):
            wanted["h"] = t
        elif first and family == "elementwise":
            wanted["n"] = t
        per_variable[i] = _pick(cost, i, wanted, {"b": d})
        chosen = space.configs[i][per_variable[i]]
        sharded[i] = any(chosen.get(x, 1) == t > 1 for x in ("n", "h"))
    return per_variable


def _producers_first(cost: StrategyCost) -> list[int]:
    """Variables ordered by their leader node's position in a forward topological order."""
    rank = np.empty(cost.space.graph.num_nodes, dtype=np.int64)
    rank[traversal_order(cost.space.graph, "topo")] = np.arange(cost.space.graph.num_nodes)
    return sorted(range(cost.space.num_variables), key=lambda i: rank[cost.space.variables[i]])
