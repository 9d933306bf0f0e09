"""The strategy cost: seconds per step of a parallelization strategy on a cluster.

Layer by layer, every op runs on all ``p`` devices: a configuration with ``m`` parts (the
product of its split factors) splits the op into ``m`` pieces, each computed by ``p / m``
devices (unsplit ops run redundantly everywhere). The step time is a sum over nodes and
edges, the cost PaSE's dynamic program minimises:

* **node**: its compute divided over the parts, except the kernel launch every part pays
  (:data:`~placerl.devices.LAUNCH_OVERHEAD`; backward nodes' time counted with their forward
  node), plus the communication inside it: an all-reduce of the output's partial sums over the
  reduction parts (``k``: a row-parallel linear); in training graphs also, in the backward
  pass, an all-reduce of the input gradient's partial sums over the output-feature parts
  (``n``: a column-parallel linear) and a ring all-reduce of the parameters' gradients over
  the parts that replicate them;
* **edge**: redistribution when the consumer needs the tensor split differently than its
  producer left it. A consumer device needs its block, ``bytes / parts``, and already holds
  the fraction ``prod(min(1, need_r / have_r))`` of it over the roles ``r`` (aligned blocks);
  the rest moves at the slowest link's bandwidth after its latency, in parallel on every
  device. Training graphs pay each edge twice (activations forward, gradients backward).

A ring all-reduce of ``V`` bytes over ``m`` devices takes ``2 (m - 1) / m * V / bandwidth +
2 (m - 1) * latency``. Memory per device: each node's parameter state (``params`` times the
parameter size, times :data:`STATE_COPIES` in training) divided by the parts that shard the
parameters, plus the rest of its ``mem_bytes`` (activations saved for backward) divided by the
parts that split its output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from placerl.cluster import Cluster
from placerl.devices import LAUNCH_OVERHEAD
from placerl.errors import ConfigError
from placerl.graph import CompGraph
from placerl.sim.result import SimResult
from placerl.sim.strategy.rules import ROLES, OpRule, split_of
from placerl.sim.strategy.space import StrategySpace

#: Copies of each trainable parameter a training graph keeps (weights, gradients, Adam's two
#: moments), as the PyTorch importer counts them (``2 + torch_import.OPTIMIZER_STATES``).
STATE_COPIES = 4
#: Bytes per element of the dtypes the importer records (others: 4).
ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4}


@dataclass(frozen=True)
class Network:
    """The links every collective crosses: the slowest bandwidth and the largest latency."""

    bandwidth: float
    latency: float

    @classmethod
    def of(cls, cluster: Cluster) -> Network:
        """The network of ``cluster``'s off-diagonal links (free for one device)."""
        off = ~np.eye(cluster.num_devices, dtype=bool)
        if not off.any():
            return cls(math.inf, 0.0)
        return cls(float(cluster.bandwidth[off].min()), float(cluster.latency[off].max()))

    def all_reduce(self, m: int, nbytes: float) -> float:
        """Seconds of a ring all-reduce of ``nbytes`` over ``m`` devices."""
        if m <= 1 or nbytes <= 0:
            return 0.0
        return 2 * (m - 1) / m * nbytes / self.bandwidth + 2 * (m - 1) * self.latency

    def transfer(self, nbytes: np.ndarray) -> np.ndarray:
        """Seconds to receive ``nbytes`` on every device at once (0 where nothing moves)."""
        return np.where(nbytes > 0, self.latency + nbytes / self.bandwidth, 0.0)


def check_identical(cluster: Cluster) -> None:
    """The strategy cost assumes ``p`` identical devices.

    Raises:
        ConfigError: Devices differ in kind or speed.
    """
    kinds = {(d.kind, d.speed) for d in cluster.devices}
    if len(kinds) > 1:
        raise ConfigError(
            f"the strategy objective needs identical devices; cluster {cluster.name!r} mixes "
            f"{sorted(kinds)} (kind, speed)"
        )


class StrategyCost:
    """Cost tables of every variable and variable pair, and the evaluation of strategies.

    Args:
        graph: A graph with op shapes (from the PyTorch importer), forward or training.
        cluster: ``p`` identical devices.
        durations: Seconds of each node on one device.

    Attributes:
        space: The :class:`StrategySpace` (variables and configurations).
        compute: Per variable, compute seconds of each configuration.
        comm: Per variable, communication seconds inside it (its ops' collectives and the
            edges between its own nodes) of each configuration.
        memory: Per variable, bytes per device of each configuration.
        pairs: ``(i, j) -> matrix[c_i, c_j]``: seconds of the edges between variables
            ``i < j``.
    """

    def __init__(self, graph: CompGraph, cluster: Cluster, durations: np.ndarray) -> None:
        check_identical(cluster)
        self.space = space = StrategySpace(graph, cluster.num_devices)
        self.cluster = cluster
        self.network = Network.of(cluster)
        self.training = bool(graph.arrays.backward.any())
        self._durations = durations
        self.compute = [np.zeros(len(c)) for c in space.configs]
        self.comm = [np.zeros(len(c)) for c in space.configs]
        self.memory = [np.zeros(len(c)) for c in space.configs]
        self.pairs: dict[tuple[int, int], np.ndarray] = {}
        self._part_cache: dict[tuple[int, tuple[str, ...] | None], np.ndarray] = {}
        self._fill_nodes()
        self._fill_edges()
        self._flatten()

    # --------------------------------------------------------------------- building
    def _parts(self, i: int, dims: tuple[str, ...] | None = None) -> np.ndarray:
        """Per configuration of variable ``i``: the product of its factors over ``dims``
        (computed once per variable and dims: every node of a variable asks)."""
        key = (i, dims)
        if key not in self._part_cache:
            self._part_cache[key] = np.array(
                [
                    math.prod(f for d, f in c.items() if dims is None or d in dims)
                    for c in self.space.configs[i]
                ],
                dtype=np.float64,
            )
        return self._part_cache[key]

    def _fill_nodes(self) -> None:
        space, a = self.space, self.space.graph.arrays
        for v in range(a.num_nodes):
            i = space.variable_of[v]
            rule = space.rules[i]
            parts = self._parts(i)
            launch = min(self._durations[v], LAUNCH_OVERHEAD)
            self.compute[i] += launch + (self._durations[v] - launch) / parts
            self.memory[i] += self._memory_of(v, i, rule)
            if rule is not None and v == space.variables[i]:
                self.comm[i] += self._collectives(i, v)

    def _memory_of(self, v: int, i: int, rule: OpRule | None) -> np.ndarray:
        """Bytes node ``v`` keeps per device under each configuration of its variable ``i``."""
        node = self.space.graph.nodes[v]
        copies = STATE_COPIES if self.training else 1
        state = min(node.attrs.get("params", 0) * _itemsize(node.attrs) * copies, node.mem_bytes)
        if rule is None:
            return np.full(len(self.space.configs[i]), node.mem_bytes)
        shards = self._parts(i, rule.weight)
        split = self._parts(i, tuple(d for dims in rule.output.values() for d in dims))
        return state / shards + (node.mem_bytes - state) / split

    def _collectives(self, i: int, v: int) -> np.ndarray:
        """Seconds of the collectives inside leader node ``v`` per configuration."""
        space, net = self.space, self.network
        rule = space.rules[i]
        node = space.graph.nodes[v]
        weight_bytes = node.attrs.get("params", 0) * _itemsize(node.attrs)
        a = space.graph.arrays
        in_bytes = float(a.edge_bytes[a.pred_edge[a.pred_ptr[v] : a.pred_ptr[v + 1]]].sum())
        out = np.zeros(len(space.configs[i]))
        for c, config in enumerate(space.configs[i]):
            parts = math.prod(config.values())
            partial = math.prod(config.get(d, 1) for d in rule.reduce)
            out[c] = net.all_reduce(partial, node.out_bytes * partial / parts)
            if self.training:
                partial = math.prod(config.get(d, 1) for d in rule.grad_reduce)
                out[c] += net.all_reduce(partial, in_bytes * partial / parts)
            if self.training and weight_bytes:
                replicas = math.prod(config.get(d, 1) for d in rule.data_dims)
                shards = math.prod(config.get(d, 1) for d in rule.weight)
                out[c] += net.all_reduce(replicas, weight_bytes / shards)
        return out

    def _layouts(self, i: int) -> np.ndarray:
        """Output layout of variable ``i`` per configuration, shape ``(configs, roles)``."""
        rule = self.space.rules[i]
        if rule is None:
            return np.ones((len(self.space.configs[i]), len(ROLES)))
        return np.array([split_of(rule.output, c) for c in self.space.configs[i]], dtype=float)

    def _needs(self, j: int, v: int, position: int) -> np.ndarray:
        """Layout node ``v`` (of variable ``j``) needs of its operand ``position``."""
        rule = self.space.rules[j]
        if rule is None or v != self.space.variables[j]:
            return self._layouts(j)  # followers keep their variable's layout
        mapping = rule.operand(position)
        return np.array([split_of(mapping, c) for c in self.space.configs[j]], dtype=float)

    def _fill_edges(self) -> None:
        space, a = self.space, self.space.graph.arrays
        passes = 2 if self.training else 1
        layouts = [self._layouts(i) for i in range(space.num_variables)]
        for e in range(a.num_edges):
            u, v = int(a.src[e]), int(a.dst[e])
            if not (space.forward[u] and space.forward[v]):
                continue  # backward edges: counted twice on the forward ones
            i, j = space.variable_of[u], space.variable_of[v]
            have = layouts[i][:, None, :]
            moved = np.zeros((len(space.configs[i]), len(space.configs[j])))
            for position in self._positions(j, v, u):
                need = self._needs(j, v, position)[None, :, :]
                held = np.minimum(1.0, need / have).prod(axis=-1)
                moved = np.maximum(moved, a.edge_bytes[e] / need.prod(axis=-1) * (1.0 - held))
            seconds = passes * self.network.transfer(moved)
            if i == j:
                self.comm[i] += np.diagonal(seconds)
            elif i < j:
                self._add_pair(i, j, seconds)
            else:
                self._add_pair(j, i, seconds.T)

    def _positions(self, j: int, v: int, u: int) -> list[int]:
        """Operand positions producer ``u`` feeds in node ``v``: its own, or every one when
        ``v`` has fewer producers than operands (one producer feeding two: ``x @ x``; the graph
        keeps one edge per producer, so the largest movement is charged)."""
        operands = self.space.operands[v]
        rule = self.space.rules[j]
        if rule is not None and v == self.space.variables[j] and len(operands) < len(rule.inputs):
            return list(range(len(rule.inputs)))
        return [operands.index(u)]

    def _add_pair(self, i: int, j: int, seconds: np.ndarray) -> None:
        if (i, j) in self.pairs:
            self.pairs[(i, j)] = self.pairs[(i, j)] + seconds
        else:
            self.pairs[(i, j)] = seconds

    def _flatten(self) -> None:
        """Flat arrays for evaluating a strategy with a few gathers."""
        counts = [len(c) for c in self.space.configs]
        self._offset = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        self._flat = {k: np.concatenate(getattr(self, k)) for k in ("compute", "comm", "memory")}
        keys = list(self.pairs)
        self._pair_i = np.array([k[0] for k in keys], dtype=np.int64)
        self._pair_j = np.array([k[1] for k in keys], dtype=np.int64)
        self._pair_cols = np.array([self.pairs[k].shape[1] for k in keys], dtype=np.int64)
        sizes = [self.pairs[k].size for k in keys]
        self._pair_offset = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self._pair_flat = np.concatenate([self.pairs[k].ravel() for k in keys] or [np.zeros(0)])

    # --------------------------------------------------------------------- evaluation
    @property
    def choices(self) -> np.ndarray:
        """Number of configurations of each node."""
        return self.space.choices

    def check(self, strategy: object) -> np.ndarray:
        """See :meth:`StrategySpace.check`."""
        return self.space.check(strategy)

    def unary(self, i: int) -> np.ndarray:
        """Seconds of variable ``i`` alone per configuration (compute and its own comm)."""
        return self.compute[i] + self.comm[i]

    def totals(self, per_variable: np.ndarray) -> tuple[float, float, float]:
        """``(compute, comm, memory)`` of one configuration index per variable."""
        at = self._offset + per_variable
        pair = self._pair_offset + per_variable[self._pair_i] * self._pair_cols
        pair += per_variable[self._pair_j]
        comm = self._flat["comm"][at].sum() + self._pair_flat[pair].sum()
        return (
            float(self._flat["compute"][at].sum()),
            float(comm),
            float(self._flat["memory"][at].sum()),
        )

    def evaluate(self, strategy: np.ndarray, objective: str = "strategy") -> SimResult:
        """The :class:`SimResult` of a checked strategy: every device has the same compute,
        communication and memory; the runtime is their sum of compute and communication."""
        compute, comm, memory = self.totals(strategy[self.space.variables])
        p = self.space.p
        mem = np.full(p, memory)
        excess = np.maximum(mem - self.cluster.memory, 0.0)
        return SimResult(
            objective=objective,
            runtime=compute + comm,
            feasible=not excess.any(),
            busy=np.full(p, compute),
            comm=np.full(p, comm),
            memory=mem,
            peak_memory=mem.copy(),
            memory_excess=excess,
        )


def _itemsize(attrs: dict) -> int:
    """Bytes per parameter: the node's output dtype's (4 for ``float32``)."""
    dtypes = attrs.get("dtypes") or ["float32"]
    return ITEMSIZE.get(dtypes[0], 4)
