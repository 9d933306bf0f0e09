"""Shared machinery of the placement envs: arguments, observations, masks, info, render.

Dynamics stay pure (``CostModel.evaluate``); the env object only holds episode state. Everything
that depends on the graph alone (order, static features, edge index, reference runtimes) is
computed once per graph in a :class:`~placerl.envs.case.GraphCase` and reused across episodes.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from placerl._options import check_int
from placerl.baselines.references import Reference, parse_placer
from placerl.cluster import Cluster, load_cluster
from placerl.envs.case import CURRENT, NUM_BASE_FEATURES, OBSERVATION_VERSION, PLACED, GraphCase
from placerl.envs.device_features import CLIP, NUM_DEVICE_FEATURES, DeviceFeatureState
from placerl.envs.feature_sets import DEFAULT_FEATURES, feature_set
from placerl.envs.invalid import DEFAULT_INVALID_ACTION, InvalidActions, check_invalid_action
from placerl.envs.rewards import INFEASIBLE_FACTOR, REWARDS
from placerl.errors import ConfigError, EpisodeError, PlacementError
from placerl.graph import CompGraph, load_graph
from placerl.graph.orders import resolve_order
from placerl.sim import SimResult, penalized_runtime
from placerl.sim.model import objective_decides

MEMORY_MODES = ("mask", "penalty")

#: ``graph``: ``edge_index`` holds integer node rows, for graph extractors (GNN, LSTM).
#: ``flat``: ``edge_index`` holds rows / (max_nodes - 1) as float32 in [0, 1], for learners that
#: feed every observation entry to an MLP (SB3's default ``MultiInputPolicy``): raw indices up
#: to N - 1 saturate its first tanh layer at initialisation and it learns nothing.
OBSERVATION_MODES = ("graph", "flat")

GraphSpec = str | os.PathLike | CompGraph

#: Arguments (and reset options) renamed since an earlier version: old name -> new name.
RENAMED_ARGUMENTS = {"initial": "init"}


class PlacementEnvBase(InvalidActions, gym.Env):
    """Common constructor, spaces, masks, info and render of the placement envs.

    Every argument is checked here, at construction, with an error naming it (an unknown or
    renamed one too); an action outside the action space or a step outside an episode raises
    at once (see :meth:`_device`, :meth:`_check_running`), and a masked-out action is handled
    as ``invalid_action`` says (:mod:`placerl.envs.invalid`).
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    #: The MDP's name in :meth:`settings` (a kind of :data:`placerl._env_ids.ENV_KINDS`).
    kind: ClassVar[str] = ""
    #: Whether episodes build a placement node by node, HEFT's list schedule beside it (the
    #: ``devices`` features' ``finish_rank`` and ``earliest`` are HEFT's choice there; while
    #: refining, where devices count as free, they would nearly always name a node's own
    #: device, and a policy that follows them never moves: 0 then).
    constructs: ClassVar[bool] = True
    #: Constructor arguments of this kind beyond the common ones, kept in :meth:`settings` so
    #: that a saved policy's env can be rebuilt.
    extra_arguments: ClassVar[tuple[str, ...]] = ()
    #: Those of :attr:`extra_arguments` that shape training episodes only: evaluations and a
    #: saved policy's env leave them at their defaults.
    training_arguments: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        graph: GraphSpec | Sequence[GraphSpec] = "synthetic:cifar10?seed=0",
        cluster: str | Cluster = "placeto",
        order: str | Callable = "topo",
        objective: str = "step_time",
        reward: str = "log_speedup",
        memory: str = "mask",
        reference: str | Reference | Sequence[Reference] = "single_device",
        max_nodes: int | None = None,
        max_edges: int | None = None,
        order_seed: int = 0,
        observation: str = "graph",
        fold: bool = False,
        render_mode: str | None = None,
        invalid_action: str = DEFAULT_INVALID_ACTION,
        features: str = DEFAULT_FEATURES,
        **unknown: Any,
    ) -> None:
        refuse_unknown(type(self), unknown)
        self.invalid_action = check_invalid_action(invalid_action)
        self._feature_set = feature_set(features)
        self.features = features
        if memory not in MEMORY_MODES:
            raise ConfigError(f"memory must be one of {', '.join(MEMORY_MODES)}, got {memory!r}")
        if observation not in OBSERVATION_MODES:
            raise ConfigError(
                f"observation must be one of {', '.join(OBSERVATION_MODES)}, got {observation!r}"
            )
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(
                f"render_mode must be 'ansi', 'rgb_array' or None, got {render_mode!r}"
            )
        if not isinstance(fold, bool):
            raise ConfigError(f"fold must be True or False, got {fold!r}")
        self.fold = fold
        if objective_decides(objective) != "device":
            raise ConfigError(
                f"objective {objective!r} chooses a {objective_decides(objective)} per node, not "
                "a device: use placerl/Parallelize-v1 for parallelization strategies"
            )
        resolve_order(order)  # ... and order
        self.order_seed = check_int(order_seed, "order_seed")
        self.reward_fn = REWARDS[reward]
        self.cluster = load_cluster(cluster)
        self.graphs = [load_graph(spec) for spec in _graph_list(graph)]
        self.references = _reference_list(reference, len(self.graphs))
        for g, ref in zip(self.graphs, self.references, strict=True):
            if isinstance(ref, Reference):
                ref.check_matches(g, self.cluster, objective)
        self.order, self.objective = order, objective
        self.memory, self.reference = memory, reference
        self.observation = observation
        self.render_mode = render_mode
        self.num_devices = self.cluster.num_devices
        self.max_nodes = _padding(max_nodes, [g.num_nodes for g in self.graphs], "max_nodes")
        self.max_edges = _padding(max_edges, [g.num_edges for g in self.graphs], "max_edges")
        self.num_features = NUM_BASE_FEATURES + self.num_devices
        self._cases: dict[int, GraphCase] = {}
        self._unit_rows: dict[int, np.ndarray] = {}  # per graph, see _start_unit_episode
        self.action_space = spaces.Discrete(self.num_devices)
        if observation == "graph":
            edges = spaces.Box(0, max(self.max_nodes - 1, 0), (2, self.max_edges), np.int64)
        else:
            edges = spaces.Box(0.0, 1.0, (2, self.max_edges), np.float32)
        self.observation_space = spaces.Dict(
            {
                "nodes": spaces.Box(-1.0, 1.0, (self.max_nodes, self.num_features), np.float32),
                "edge_index": edges,
                "edge_mask": spaces.Box(0.0, 1.0, (self.max_edges,), np.float32),
                "node_mask": spaces.Box(0.0, 1.0, (self.max_nodes,), np.float32),
                "current": spaces.Box(0.0, 1.0, (self.max_nodes,), np.float32),
                "devices": spaces.Box(
                    0.0, CLIP, (self.num_devices, NUM_DEVICE_FEATURES), np.float32
                ),
            }
        )
        self.case: GraphCase | None = None
        self.graph_index = 0
        #: Simulator evaluations this env has made, over all its episodes: the unit in which
        #: search at inference and ``local_search`` are compared at equal budget.
        self.simulations = 0
        self._running = False

    def settings(self) -> dict[str, Any]:
        """Plain values that rebuild this env's MDP on other graphs (saved with a policy).

        The graphs and references are left out; ``order`` is ``None`` for a callable order.
        """
        return {
            "env": self.kind,
            "num_devices": self.num_devices,
            "order": self.order if isinstance(self.order, str) else None,
            "order_seed": self.order_seed,
            "objective": self.objective,
            "reward": self.reward_fn.name,
            "memory": self.memory,
            "observation": self.observation,
            "fold": self.fold,
            "invalid_action": self.invalid_action,
            "features": self.features,
            "max_nodes": self.max_nodes,
            "max_edges": self.max_edges,
            "observation_version": OBSERVATION_VERSION,
            **self._extra_settings(),
        }

    def _extra_settings(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.extra_arguments}

    def expert_action(self, expert: np.ndarray) -> int:
        """The action of an expert whose placement is ``expert`` (behaviour cloning): its
        device for the current node."""
        return int(expert[int(self.case.order[self._row])])

    def keeps_placement(self, action: Any) -> bool:
        """Whether ``action`` would leave the placement as it is (never while constructing:
        every step places a node; behaviour cloning balances such actions against the others)."""
        return False

    # ------------------------------------------------------------------ episode setup
    def graph_case(self, index: int) -> GraphCase:
        """Graph ``index``'s case (its order, reference, simulator), built once."""
        if index not in self._cases:
            self._cases[index] = GraphCase.build(
                self.graphs[index],
                self.cluster,
                self.objective,
                self.order,
                self.order_seed,
                self.references[index],
                self.fold,
            )
        return self._cases[index]

    def _start_unit_episode(self, seed: int | None, options: Mapping[str, Any] | None) -> GraphCase:
        """Start an episode whose actions decide every unit at once (the one-shot and
        hierarchical envs): nothing placed, no current node, ``self.rows`` the units' rows."""
        case = self._start_episode(seed, options)
        if self.graph_index not in self._unit_rows:
            self._unit_rows[self.graph_index] = case.unit_rows()
        self.rows = self._unit_rows[self.graph_index]
        self.placement = np.full(case.graph.num_nodes, -1, dtype=np.int64)
        self._row = None
        self._devices = np.zeros((self.num_devices, NUM_DEVICE_FEATURES), dtype=np.float32)
        return case

    def _start_episode(
        self, seed: int | None, options: Mapping[str, Any] | None, allowed: tuple[str, ...] = ()
    ) -> GraphCase:
        """Seed, pick the episode's graph, clear the episode state; returns the graph's case.

        Everything random in an episode is drawn from ``self.np_random`` after this reseeding,
        so ``reset(seed=s)`` gives the same episode whatever happened before.
        """
        if seed is not None:
            seed = check_int(seed, "reset seed")  # a plain int: Gymnasium refuses numpy ints
        options = _check_reset_options(options, allowed)
        super().reset(seed=seed)
        if "graph" in options:
            index = check_int(options["graph"], "reset option 'graph'")
            if index >= len(self.graphs):
                raise ConfigError(
                    f"reset option 'graph' is {index}; the env has graphs 0..{len(self.graphs) - 1}"
                )
        elif len(self.graphs) > 1:
            index = int(self.np_random.integers(len(self.graphs)))
        else:
            index = 0
        self.graph_index = index
        case = self.case = self.graph_case(index)
        n = case.graph.num_nodes
        self._nodes = np.zeros((self.max_nodes, self.num_features), dtype=np.float32)
        self._nodes[:n, :NUM_BASE_FEATURES] = case.static
        self._nodes[:n, list(self._feature_set.nodes)] = 0.0  # the feature set's hidden columns
        self._edges = np.zeros((2, self.max_edges), dtype=np.int64)
        self._edges[:, : case.graph.num_edges] = case.edge_rows
        self._edge_mask = np.zeros(self.max_edges, dtype=np.float32)
        self._edge_mask[: case.graph.num_edges] = 1.0
        self._node_mask = np.zeros(self.max_nodes, dtype=np.float32)
        self._node_mask[:n] = 1.0
        self._current = np.zeros(self.max_nodes, dtype=np.float32)
        if self.observation == "flat":
            self._edges = (self._edges / max(self.max_nodes - 1, 1)).astype(np.float32)
        self._resident = np.zeros(self.num_devices)
        self._device_state = DeviceFeatureState(
            case.device_tables, self.cluster.memory, self.constructs, self._feature_set.devices
        )
        self._running = True
        return case

    # ---------------------------------------------------------------- shared updates
    def _check_running(self) -> None:
        """Refuse a step before ``reset`` or after the episode ended."""
        if not self._running:
            when = "before reset()" if self.case is None else "after the episode ended"
            raise EpisodeError(f"step() called {when}; call reset() to start an episode")

    def _device(self, action: Any) -> int:
        """The action as a device index, masked or not.

        Raises:
            PlacementError: Not an integer (Python or numpy int, or a 0-d integer array; bools,
                floats, strings and None are refused), or not a device index.
        """
        return self._index(action, self.num_devices, "device")

    def _chosen_device(self, action: Any, v: int) -> int:
        """The device a step puts node ``v``'s group on: the action's, or, where the mask
        rules it out, what ``invalid_action`` makes of it (:mod:`placerl.envs.invalid`)."""
        device = self._device(action)
        mask = self._mask
        return self._allowed(device, mask, lambda: self._device_refusal(v, device, mask))

    def _device_refusal(self, v: int, device: int, mask: np.ndarray) -> str:
        """Why ``mask`` rules out ``device`` for node ``v``'s group, naming the node."""
        case = self.case
        node = self._node_name(v)
        allowed = np.flatnonzero(mask[: self.num_devices]).tolist()
        if device >= self.num_devices:  # the dual env's place step: a row index
            return (
                f"{node}: action {device} is not a device (the cluster has devices "
                f"0..{self.num_devices - 1}); allowed: {allowed}"
            )
        members = case.members[v]
        label = f"device {device} ({self.cluster.devices[device].name})"
        runs = np.isfinite(case.model.durations[members, device])
        if not runs.all():
            u = int(members[np.argmin(runs)])
            what = "it" if u == v else f"{self._node_name(u)} of its group"
            return f"{node}: {label} cannot run {what}; allowed: {allowed}"
        free = self.cluster.memory[device] - self._resident_without(members)[device]
        return (
            f"{node}: {label} cannot hold its group ({case.group_mem[v]:.4g} bytes, "
            f"{free:.4g} free); allowed: {allowed}"
        )

    def _node_name(self, v: int) -> str:
        return f"node {v} ({self.case.graph.names[v]!r})"

    def _row_name(self, row: int) -> str:
        """Row ``row`` of the observation, with its node (by index and name) or as padding."""
        if row >= self.case.graph.num_nodes:
            return f"row {row} (padding)"
        return f"row {row}, {self._node_name(int(self.case.order[row]))}"

    def _row_values(
        self, action: Any, choices: int, what: str, label: Callable[[int], str] | None = None
    ) -> np.ndarray:
        """A ``MultiDiscrete`` action as one choice per row, checked against the space only
        (``label`` names a row in messages; default :meth:`_row_name`).

        Raises:
            PlacementError: Not ``max_nodes`` integers, or a choice outside ``0..choices - 1``.
        """
        values = np.asarray(action)
        if values.shape != (self.max_nodes,) or not np.issubdtype(values.dtype, np.integer):
            raise PlacementError(
                f"action must be {self.max_nodes} integers (one {what} per row), got an array "
                f"of shape {values.shape} and dtype {values.dtype}"
            )
        outside = np.flatnonzero((values < 0) | (values >= choices))
        if len(outside):
            row = int(outside[0])
            name = (label or self._row_name)(row)
            raise PlacementError(
                f"{name}: {int(values[row])} is not a {what} index in 0..{choices - 1}"
            )
        return values

    @staticmethod
    def _index(action: Any, size: int, what: str) -> int:
        """The action as an index in ``0..size - 1`` of ``what`` (a device, a row)."""
        value = action
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value[()]
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise PlacementError(
                f"action must be an integer {what} index in 0..{size - 1}, "
                f"got {action!r} ({type(action).__name__})"
            )
        if not 0 <= value < size:
            raise PlacementError(f"action {int(value)} is not a {what} index in 0..{size - 1}")
        return int(value)

    def _move_group(self, v: int, device: int) -> np.ndarray:
        """Put ``v``'s whole colocation group on ``device``; returns the group's nodes."""
        case = self.case
        members = case.members[v]
        mem = case.model.arrays.mem_bytes
        for u in members:
            old = self.placement[u]
            self._device_state.moved(u, old, device)
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

    def _set_mask(self, v: int, mask: np.ndarray) -> None:
        """Make ``mask`` the action mask of node ``v`` and refresh the ``devices`` features."""
        self._mask = mask
        self._devices = self._device_state.block(
            self.case.members[v],
            self.placement,
            self._resident,
            self.case.model.arrays.mem_bytes,
            mask,
        )

    def _mask_for(self, v: int) -> np.ndarray:
        """Devices that can take ``v``'s group: kind supported and, if masking, memory fits."""
        case = self.case
        members = case.members[v]
        durations = case.model.durations[members]
        ok = np.isfinite(durations).all(axis=0)
        if self.memory == "mask":
            ok &= self._resident_without(members) + case.group_mem[v] <= self.cluster.memory
        return ok

    def _resident_without(self, members: np.ndarray) -> np.ndarray:
        """Bytes resident on each device, leaving out ``members`` (placed ones, refining)."""
        resident = self._resident.copy()
        placed = self.placement[members]
        mem = self.case.model.arrays.mem_bytes[members]
        np.subtract.at(resident, placed[placed >= 0], mem[placed >= 0])
        return resident

    def _mask_or_runnable(self, v: int) -> np.ndarray:
        """The mask of ``v`` at reset; if no device can hold it, every device that can run it.

        A reset cannot end the episode, and an all-false mask leaves a masked policy without a
        move, so the first node may then go anywhere it runs (the penalty scores the result).
        """
        mask = self._mask_for(v)
        if mask.any():
            return mask
        return np.isfinite(self.case.model.durations[self.case.members[v]]).all(axis=0)

    def action_masks(self) -> np.ndarray:
        """Boolean mask of the valid devices for the current node (sb3-contrib's MaskablePPO)."""
        return self._mask.copy()

    def _observation(self) -> dict[str, np.ndarray]:
        return observation_of(self)

    def _stuck_runtime(self) -> float:
        """The runtime of an episode no device can continue (see the envs' Episode end)."""
        self._feasible = False
        return (INFEASIBLE_FACTOR + 1) * self.case.reference_runtime

    def _score(self, result: SimResult) -> float:
        """The runtime rewards see (penalized when infeasible); remembers the feasibility and
        counts the simulation."""
        self.simulations += 1
        self._feasible = result.feasible
        return penalized_runtime(result, self.case.reference_runtime)

    def _info(self, runtime: float | None, done: bool, **extra: Any) -> dict[str, Any]:
        case = self.case
        info: dict[str, Any] = {
            "graph": case.graph.name,
            "graph_index": self.graph_index,
            "action_mask": self._mask.astype(np.int8),
            "reference_runtime": case.reference_runtime,
            "single_device_runtime": case.single_device.score,
            **extra,
        }
        if runtime is not None:
            info["runtime"] = runtime
            info["feasible"] = self._feasible
        if done:
            info["placement"] = self.placement.copy()
            self._running = False
        return info

    # ------------------------------------------------------------------------- render
    def render(self) -> str | np.ndarray | None:
        """``ansi``: a per-device summary; ``rgb_array``: the graph coloured by device."""
        if self.render_mode is None or self.case is None:
            return None
        from placerl.envs.render import render_ansi, render_rgb

        renderer = render_ansi if self.render_mode == "ansi" else render_rgb
        return renderer(self.case, self.placement, self.cluster)


def observation_of(env: Any) -> dict[str, np.ndarray]:
    """Fresh copies of an env's observation arrays (``_nodes``, ``_edges``, ``_edge_mask``,
    ``_node_mask``, ``_current``, ``_devices``), keyed as the observation space."""
    return {
        "nodes": env._nodes.copy(),
        "edge_index": env._edges.copy(),
        "edge_mask": env._edge_mask.copy(),
        "node_mask": env._node_mask.copy(),
        "current": env._current.copy(),
        "devices": env._devices.copy(),
    }


# ------------------------------------------------------------------ argument checks
def refuse_unknown(cls: type, unknown: Mapping[str, Any]) -> None:
    """Refuse keyword arguments ``cls`` does not take, naming a renamed one's new name.

    Raises:
        ConfigError: Any argument in ``unknown``.
    """
    if not unknown:
        return
    name = sorted(unknown)[0]
    known = _arguments(cls)
    if name in RENAMED_ARGUMENTS:
        new = RENAMED_ARGUMENTS[name]
        takes = "" if new in known else f" ({cls.__name__} takes no {new!r} either)"
        raise ConfigError(f"argument {name!r} of {cls.__name__} is now {new!r}{takes}")
    raise ConfigError(f"{cls.__name__} has no argument {name!r}; known: {', '.join(known)}")


def _arguments(cls: type) -> list[str]:
    """The keyword arguments of ``cls``'s constructor and its bases', the bases' first."""
    names: dict[str, None] = {}
    for klass in reversed(cls.__mro__):
        if "__init__" in vars(klass) and klass.__module__.startswith("placerl."):
            for p in inspect.signature(klass.__init__).parameters.values():
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self":
                    names[p.name] = None
    return list(names)


def _graph_list(graph: Any) -> list[Any]:
    """The graph argument as a non-empty list of graph specs."""
    if isinstance(graph, (str, os.PathLike, CompGraph)):
        return [graph]
    if not isinstance(graph, Sequence) or not graph:
        raise ConfigError(
            f"graph must be a graph spec, a CompGraph, or a non-empty list of them, got {graph!r}"
        )
    return list(graph)


def _reference_list(reference: Any, count: int) -> list[str | Reference]:
    """One reference per graph: a placer spec (checked now) or precomputed references."""
    if isinstance(reference, str):
        parse_placer(reference)
        return [reference] * count
    if isinstance(reference, Reference):
        return [reference] * count
    if isinstance(reference, Sequence) and all(isinstance(r, Reference) for r in reference):
        if len(reference) != count:
            raise ConfigError(f"got {len(reference)} references for {count} graphs")
        return list(reference)
    raise ConfigError(
        "reference must be a placer spec ('single_device', 'heft', ...), a Reference, or one "
        f"Reference per graph, got {reference!r}"
    )


def _padding(requested: Any, sizes: list[int], what: str) -> int:
    needed = max(max(sizes), 1)
    if requested is None:
        return needed
    requested = check_int(requested, what, minimum=1)
    if requested < needed:
        raise ConfigError(f"{what}={requested} is smaller than the largest graph ({needed})")
    return requested


def _check_reset_options(options: Any, allowed: tuple[str, ...]) -> Mapping[str, Any]:
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ConfigError(f"reset options must be a dict, got {options!r}")
    known = ("graph", *allowed)
    unknown = sorted(set(options) - set(known))
    renamed = [name for name in unknown if RENAMED_ARGUMENTS.get(name) in known]
    if renamed:
        name = renamed[0]
        raise ConfigError(f"reset option {name!r} is now {RENAMED_ARGUMENTS[name]!r}")
    if unknown:
        raise ConfigError(
            f"unknown reset option(s) {', '.join(unknown)}; known: {', '.join(known)}"
        )
    return options
