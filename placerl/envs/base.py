"""Shared machinery of the placement envs: graph cases, observations, masks, info, render.

Dynamics stay pure (``CostModel.evaluate``); the env object only holds episode state. Everything
that depends on the graph alone (order, static features, edge index, reference runtimes) is
computed once per graph in a :class:`GraphCase` and reused across episodes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from placerl.cluster import Cluster
from placerl.envs.rewards import REWARDS, penalized_runtime
from placerl.errors import ConfigError
from placerl.graph import CompGraph, load_graph
from placerl.graph.orders import traversal_order
from placerl.sim import OBJECTIVES, CostModel, SimResult

MEMORY_MODES = ("mask", "penalty")

# Column layout of the "nodes" observation (documented in the env docstrings).
COST, OUT_BYTES, MEM_BYTES, IN_DEGREE, OUT_DEGREE, POSITION, PLACED, CURRENT, START = range(9)
NUM_BASE_FEATURES = 9


def resolve_cluster(cluster: str | Cluster) -> Cluster:
    """A Cluster from itself, a preset name, or ``msr:<name>`` (the msr file's header)."""
    if isinstance(cluster, Cluster):
        return cluster
    if isinstance(cluster, str):
        if cluster.startswith("msr:"):
            return Cluster.from_msr(cluster[4:])
        return Cluster.preset(cluster)
    raise ConfigError(f"cluster must be a Cluster or a preset name, got {type(cluster).__name__}")


def check_placer_name(name: str, what: str) -> None:
    """Fail fast unless ``name`` is a registered baseline placer."""
    try:
        from placerl.baselines import PLACERS
    except ImportError:
        raise ConfigError(
            f"{what}={name!r} needs the baseline placers (placerl.baselines), not installed"
        ) from None
    PLACERS[name]


def _scaled(values: np.ndarray) -> np.ndarray:
    top = values.max()
    return values / top if top > 0 else np.zeros_like(values)


def best_single_device(model: CostModel) -> tuple[np.ndarray, float]:
    """The single-device placement with the lowest penalized runtime, and that runtime."""
    n = model.graph.num_nodes
    best: tuple[np.ndarray, float] | None = None
    for d in range(model.num_devices):
        placement = np.full(n, d, dtype=np.int64)
        result = model.evaluate(placement, check=False)
        runtime = penalized_runtime(
            result, result.runtime if math.isfinite(result.runtime) else 1.0
        )
        if best is None or runtime < best[1]:
            best = (placement, runtime)
    return best


@dataclass
class GraphCase:
    """Everything about one graph that episodes reuse (built once per graph).

    Rows of the observation follow the traversal order: row ``i`` is node ``order[i]``.
    """

    graph: CompGraph
    model: CostModel
    order: np.ndarray
    row_of: np.ndarray
    static: np.ndarray
    edge_rows: np.ndarray
    members: list[np.ndarray]
    group_mem: np.ndarray
    single_device_runtime: float
    reference_placement: np.ndarray
    reference_runtime: float
    best_runtime: float = math.inf
    best_placement: np.ndarray | None = field(default=None)

    @classmethod
    def build(cls, graph: CompGraph, cluster: Cluster, objective: str, order: Any,
              order_seed: int, reference: str) -> GraphCase:  # fmt: skip
        model = CostModel(graph, cluster, objective)
        a = graph.arrays
        order_idx = traversal_order(graph, order, seed=order_seed)
        row_of = np.empty_like(order_idx)
        row_of[order_idx] = np.arange(graph.num_nodes)
        degree = np.maximum(a.in_degree, a.out_degree).max()
        static = np.zeros((graph.num_nodes, NUM_BASE_FEATURES), dtype=np.float32)
        static[:, COST] = _scaled(a.cost)[order_idx]
        static[:, OUT_BYTES] = _scaled(a.out_bytes)[order_idx]
        static[:, MEM_BYTES] = _scaled(a.mem_bytes)[order_idx]
        static[:, IN_DEGREE] = (a.in_degree / max(degree, 1))[order_idx]
        static[:, OUT_DEGREE] = (a.out_degree / max(degree, 1))[order_idx]
        static[:, POSITION] = np.arange(graph.num_nodes) / max(graph.num_nodes - 1, 1)
        members = _colocation_members(graph)
        group_mem = np.array([a.mem_bytes[m].sum() for m in members])
        single_placement, single_runtime = best_single_device(model)
        if reference == "single_device":
            ref_placement, ref_runtime = single_placement, single_runtime
        else:
            from placerl.baselines import place  # envs use baselines only for references

            ref_placement = np.asarray(place(reference, graph, cluster, objective=objective))
            ref_result = model.evaluate(ref_placement)
            ref_runtime = penalized_runtime(ref_result, single_runtime)
        return cls(
            graph=graph,
            model=model,
            order=order_idx,
            row_of=row_of,
            static=static,
            edge_rows=np.stack([row_of[a.src], row_of[a.dst]]),
            members=members,
            group_mem=group_mem,
            single_device_runtime=single_runtime,
            reference_placement=ref_placement,
            reference_runtime=ref_runtime,
        )


def _colocation_members(graph: CompGraph) -> list[np.ndarray]:
    """For each node, the nodes that must share its device (itself included)."""
    group = graph.arrays.group
    by_group: dict[int, np.ndarray] = {
        int(g): np.flatnonzero(group == g) for g in np.unique(group[group >= 0])
    }
    return [by_group[int(g)] if g >= 0 else np.array([v]) for v, g in enumerate(group)]


class PlacementEnvBase(gym.Env):
    """Common constructor, spaces, masks, info and render of the two placement envs."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        graph: str | CompGraph | Sequence[str | CompGraph] = "synthetic:cifar10?seed=0",
        cluster: str | Cluster = "placeto",
        order: str | Callable = "topo",
        objective: str = "step_time",
        reward: str = "log_speedup",
        memory: str = "mask",
        reference: str = "single_device",
        max_nodes: int | None = None,
        max_edges: int | None = None,
        order_seed: int = 0,
        render_mode: str | None = None,
    ) -> None:
        if memory not in MEMORY_MODES:
            raise ConfigError(f"memory must be one of {', '.join(MEMORY_MODES)}, got {memory!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(
                f"render_mode must be 'ansi', 'rgb_array' or None, got {render_mode!r}"
            )
        OBJECTIVES[objective]  # fail fast on an unknown objective
        if reference != "single_device":
            check_placer_name(reference, "reference")
        self.reward_fn = REWARDS[reward]
        self.cluster = resolve_cluster(cluster)
        specs = [graph] if isinstance(graph, (str, CompGraph)) else list(graph)
        if not specs:
            raise ConfigError("graph must name at least one graph")
        self.graphs = [load_graph(spec) for spec in specs]
        self.order, self.order_seed, self.objective = order, order_seed, objective
        self.memory, self.reference = memory, reference
        self.render_mode = render_mode
        self.num_devices = self.cluster.num_devices
        self.max_nodes = self._padding(max_nodes, [g.num_nodes for g in self.graphs], "max_nodes")
        self.max_edges = self._padding(max_edges, [g.num_edges for g in self.graphs], "max_edges")
        self.num_features = NUM_BASE_FEATURES + self.num_devices
        self._cases: dict[int, GraphCase] = {}
        self.action_space = spaces.Discrete(self.num_devices)
        self.observation_space = spaces.Dict(
            {
                "nodes": spaces.Box(-1.0, 1.0, (self.max_nodes, self.num_features), np.float32),
                "edge_index": spaces.Box(
                    0, max(self.max_nodes - 1, 0), (2, self.max_edges), np.int64
                ),
                "edge_mask": spaces.Box(0.0, 1.0, (self.max_edges,), np.float32),
                "node_mask": spaces.Box(0.0, 1.0, (self.max_nodes,), np.float32),
                "current": spaces.Box(0.0, 1.0, (self.max_nodes,), np.float32),
            }
        )
        self.case: GraphCase | None = None

    @staticmethod
    def _padding(requested: int | None, sizes: list[int], what: str) -> int:
        needed = max(max(sizes), 1)
        if requested is None:
            return needed
        if requested < needed:
            raise ConfigError(f"{what}={requested} is smaller than the largest graph ({needed})")
        return int(requested)

    # ------------------------------------------------------------------ episode setup
    def _case(self, index: int) -> GraphCase:
        if index not in self._cases:
            self._cases[index] = GraphCase.build(
                self.graphs[index], self.cluster, self.objective, self.order, self.order_seed,
                self.reference,
            )  # fmt: skip
        return self._cases[index]

    def _start_episode(self, seed: int | None) -> GraphCase:
        super().reset(seed=seed)
        index = int(self.np_random.integers(len(self.graphs))) if len(self.graphs) > 1 else 0
        case = self.case = self._case(index)
        n = case.graph.num_nodes
        self._nodes = np.zeros((self.max_nodes, self.num_features), dtype=np.float32)
        self._nodes[:n, :NUM_BASE_FEATURES] = case.static
        self._edges = np.zeros((2, self.max_edges), dtype=np.int64)
        self._edges[:, : case.graph.num_edges] = case.edge_rows
        self._edge_mask = np.zeros(self.max_edges, dtype=np.float32)
        self._edge_mask[: case.graph.num_edges] = 1.0
        self._node_mask = np.zeros(self.max_nodes, dtype=np.float32)
        self._node_mask[:n] = 1.0
        self._current = np.zeros(self.max_nodes, dtype=np.float32)
        self._resident = np.zeros(self.num_devices)
        return case

    # ---------------------------------------------------------------- shared updates
    def _device(self, action: Any) -> int:
        """The action as a device index (a masked device is allowed; see the docstrings)."""
        device = int(action)
        if not 0 <= device < self.num_devices:
            raise ValueError(
                f"action {action!r} is not a device index in 0..{self.num_devices - 1}"
            )
        return device

    def _move_group(self, v: int, device: int) -> np.ndarray:
        """Put ``v``'s whole colocation group on ``device``; returns the group's nodes."""
        case = self.case
        members = case.members[v]
        mem = case.model.arrays.mem_bytes
        for u in members:
            old = self.placement[u]
            if old >= 0:
                self._resident[old] -= mem[u]
                self._nodes[case.row_of[u], NUM_BASE_FEATURES + old] = 0.0
            self._resident[device] += mem[u]
            self.placement[u] = device
            row = case.row_of[u]
            self._nodes[row, NUM_BASE_FEATURES + device] = 1.0
            self._nodes[row, PLACED] = 1.0
        return members

    def _set_current(self, row: int | None) -> None:
        if self._row is not None:
            self._nodes[self._row, CURRENT] = 0.0
            self._current[self._row] = 0.0
        self._row = row
        if row is not None:
            self._nodes[row, CURRENT] = 1.0
            self._current[row] = 1.0

    def _mask_for(self, v: int) -> np.ndarray:
        """Devices that can take ``v``'s group: kind supported and, if masking, memory fits."""
        case = self.case
        members = case.members[v]
        durations = case.model.durations[members]
        ok = np.isfinite(durations).all(axis=0)
        if self.memory == "mask":
            resident = self._resident.copy()
            placed = self.placement[members]
            np.subtract.at(
                resident, placed[placed >= 0], case.model.arrays.mem_bytes[members][placed >= 0]
            )
            ok &= resident + case.group_mem[v] <= self.cluster.memory
        return ok

    def action_masks(self) -> np.ndarray:
        """Boolean mask of the valid devices for the current node (sb3-contrib's MaskablePPO)."""
        return self._mask.copy()

    def _observation(self) -> dict[str, np.ndarray]:
        return {
            "nodes": self._nodes.copy(),
            "edge_index": self._edges.copy(),
            "edge_mask": self._edge_mask.copy(),
            "node_mask": self._node_mask.copy(),
            "current": self._current.copy(),
        }

    def _score(self, result: SimResult) -> float:
        """The runtime rewards see (penalized when infeasible)."""
        return penalized_runtime(result, self.case.reference_runtime)

    def _record_best(self, runtime: float, placement: np.ndarray) -> None:
        case = self.case
        if runtime < case.best_runtime:
            case.best_runtime = runtime
            case.best_placement = placement.copy()

    def _info(self, runtime: float | None, done: bool, **extra: Any) -> dict[str, Any]:
        case = self.case
        info: dict[str, Any] = {
            "graph": case.graph.name,
            "action_mask": self._mask.astype(np.int8),
            "reference_runtime": case.reference_runtime,
            "single_device_runtime": case.single_device_runtime,
            "best_runtime": case.best_runtime,
            **extra,
        }
        if runtime is not None:
            info["runtime"] = runtime
        if done:
            info["placement"] = self.placement.copy()
        return info

    # ------------------------------------------------------------------------- render
    def render(self) -> str | np.ndarray | None:
        """``ansi``: a per-device summary; ``rgb_array``: the graph coloured by device."""
        if self.render_mode is None or self.case is None:
            return None
        from placerl.envs.render import render_ansi, render_rgb

        renderer = render_ansi if self.render_mode == "ansi" else render_rgb
        return renderer(self.case, self.placement, self.cluster)
