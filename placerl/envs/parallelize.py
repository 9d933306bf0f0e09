"""``placerl/Parallelize-v1``: choose each op's parallelization configuration, in an order."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from placerl._options import check_int
from placerl.baselines import PLACERS, solve
from placerl.baselines.list_scheduling import upward_rank
from placerl.baselines.pase import tied_variables
from placerl.baselines.problem import Problem
from placerl.cluster import Cluster, load_cluster
from placerl.envs.base import _check_reset_options, _padding, observation_of
from placerl.envs.case import (
    CURRENT,
    NUM_BASE_FEATURES,
    OBSERVATION_VERSION,
    PLACED,
    static_features,
)
from placerl.envs.device_features import CLIP
from placerl.envs.invalid import DEFAULT_INVALID_ACTION, InvalidActions, check_invalid_action
from placerl.envs.rewards import REWARDS
from placerl.errors import ConfigError, EpisodeError, PlacementError
from placerl.graph import CompGraph, load_graph
from placerl.graph.folding import fold_repeats
from placerl.graph.orders import resolve_order, traversal_order
from placerl.sim import CostModel
from placerl.sim.strategy import DIMS

#: Columns of a configuration slot's row in the ``devices`` observation.
SLOT_FEATURES = (*(f"log_{d}" for d in DIMS), "log_parts", "compute", "comm", "valid")


class ParallelizeEnv(InvalidActions, gym.Env):
    """Choose a parallelization strategy, one variable per step (PaSE's problem as an MDP).

    ## Description
    The cost model is the ``strategy`` objective (:mod:`placerl.sim.strategy`): every op splits
    its iteration space over the ``p`` devices. An episode visits the graph's *variables* (ops
    with a split rule; views, constants and backward nodes follow them) in the chosen traversal
    order, each where its node comes, and the agent picks the configuration of variable
    ``t``. With ``fold=True`` only the first copy of each repeated block
    (:func:`~placerl.graph.passes.fold_repeats`) is visited; the other copies take the same
    configurations.

    ## Observation space
    The placement envs' ``Dict`` (so the GNN, LSTM and MLP extractors read it unchanged), with
    configuration *slots* in place of devices:

    * ``nodes`` ``(max_nodes, 10 + S)``: rows in traversal order; columns 0-5 as in
      ``Placement-v1`` (cost, out_bytes, mem_bytes, degrees, position), 6 decided flag, 7
      current flag (the current variable's own node), 8 zero, 9 upward rank as in
      ``Placement-v1`` (on the cluster's devices under ``step_time``), then a one-hot of the
      node's chosen slot.
    * ``edge_index``, ``edge_mask``, ``node_mask``, ``current``: as in ``Placement-v1``.
    * ``devices`` ``(S, 9)``: one row per slot of the current variable: the log of each dim's
      factor (``b n k s h``) and of the number of parts over log p, the configuration's compute
      and its own communication over its unsplit compute (clipped to ``[0, 10]``), and 1 for a
      valid slot (zeros for slots past the variable's configurations).

    ## Action space
    ``Discrete(S)``: a slot, ``S`` the most configurations of any variable (or ``slots``).
    :meth:`action_masks` and ``info["action_mask"]`` mark the current variable's valid
    configurations. A masked slot (past the variable's ``C`` configurations) is handled as
    ``invalid_action`` says (:mod:`placerl.envs.invalid`), as in the placement envs: by
    default it is replaced by the nearest valid slot (smallest cyclic index distance over the
    ``S`` slots, ties to the lower index: ``C - 1`` or ``0``; ``info["invalid_action"]`` and
    ``info["action_taken"]`` record it), ``penalize`` also subtracts
    ``INVALID_ACTION_PENALTY`` from the reward, and ``raise`` raises
    :class:`~placerl.errors.PlacementError` naming the variable's node. An action outside
    ``0..S-1`` or not an integer always raises.

    ## Reward
    A name of :mod:`placerl.envs.rewards` (default ``log_speedup``: 0, then log(reference /
    final step time)). The reference is a configuration placer's strategy (``data_parallel``
    by default); dense rewards count undecided variables at the reference's configurations.

    ## Episode end
    Terminates after the last variable; ``info["placement"]`` is then the strategy, one
    configuration index per node (``CostModel(graph, cluster, "strategy").evaluate`` scores it).

    ## Arguments
    ``graph`` (a spec or CompGraph with op shapes: zoo or ``from_module`` graphs), ``cluster``
    (identical devices), ``order``, ``reward``, ``reference`` (``data_parallel``, ``megatron``,
    ``pase_dp``), ``fold``, ``slots``, ``max_nodes``, ``max_edges``, ``order_seed``,
    ``invalid_action`` (``nearest``, ``penalize`` or ``raise``; see Action space).

    ## Version history
    * v1: ``invalid_action``; a masked slot goes to the nearest valid one by default (v0 took
      it modulo the variable's configurations); observations of version 2.
    * v0: initial version.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}
    kind: ClassVar[str] = "parallelize"

    def __init__(
        self,
        graph: str | CompGraph = "zoo:transformer?variant=bert_tiny&training=true",
        cluster: str | Cluster = "gpu4_pcie",
        order: str | Callable = "topo",
        reward: str = "log_speedup",
        reference: str = "data_parallel",
        fold: bool = False,
        slots: int | None = None,
        max_nodes: int | None = None,
        max_edges: int | None = None,
        order_seed: int = 0,
        invalid_action: str = DEFAULT_INVALID_ACTION,
    ) -> None:
        self.invalid_action = check_invalid_action(invalid_action)
        resolve_order(order)
        if reference not in PLACERS or PLACERS[reference].decides != "configuration":
            fitting = [n for n, p in PLACERS.items() if p.decides == "configuration"]
            raise ConfigError(f"reference must be one of {', '.join(fitting)}, got {reference!r}")
        if not isinstance(fold, bool):
            raise ConfigError(f"fold must be True or False, got {fold!r}")
        self.graph = load_graph(graph)
        self.cluster = load_cluster(cluster)
        self.model = CostModel(self.graph, self.cluster, "strategy")
        self.cost = self.model.prepared
        self.order, self.reward_fn, self.reference, self.fold = (
            order,
            REWARDS[reward],
            reference,
            fold,
        )
        self.order_seed = check_int(order_seed, "order_seed")
        space = self.cost.space
        counts = np.array([len(c) for c in space.configs])
        self.num_slots = check_int(slots, "slots", minimum=1) if slots is not None else 0
        if self.num_slots < counts.max():
            if slots is not None:
                raise ConfigError(
                    f"slots={slots} is fewer than the most configurations of a variable "
                    f"({counts.max()})"
                )
            self.num_slots = int(counts.max())
        self.max_nodes = _padding(max_nodes, [self.graph.num_nodes], "max_nodes")
        self.max_edges = _padding(max_edges, [self.graph.num_edges], "max_edges")
        self._counts = counts
        self._into = (
            tied_variables(self.cost, fold_repeats(self.graph))
            if fold
            else np.arange(space.num_variables)
        )
        self._build_static()
        ref = solve(reference, self.graph, self.cluster, "strategy")
        self.reference_strategy, self.reference_runtime = ref.placement, ref.runtime
        self.action_space = spaces.Discrete(self.num_slots)
        self.observation_space = spaces.Dict(
            {
                "nodes": spaces.Box(
                    -1.0, 1.0, (self.max_nodes, NUM_BASE_FEATURES + self.num_slots), np.float32
                ),
                "edge_index": spaces.Box(
                    0, max(self.max_nodes - 1, 0), (2, self.max_edges), np.int64
                ),
                "edge_mask": spaces.Box(0.0, 1.0, (self.max_edges,), np.float32),
                "node_mask": spaces.Box(0.0, 1.0, (self.max_nodes,), np.float32),
                "current": spaces.Box(0.0, 1.0, (self.max_nodes,), np.float32),
                "devices": spaces.Box(0.0, CLIP, (self.num_slots, len(SLOT_FEATURES)), np.float32),
            }
        )
        self._running = False
        self._t = 0

    # ------------------------------------------------------------------------- setup
    def _build_static(self) -> None:
        """Order, decision sequence, node features and slot features: once per env."""
        g, space = self.graph, self.cost.space
        a = g.arrays
        order = traversal_order(g, self.order, seed=self.order_seed)
        self._row_of = np.empty_like(order)
        self._row_of[order] = np.arange(g.num_nodes)
        decides = self._into == np.arange(space.num_variables)
        firsts = dict.fromkeys(space.variable_of[order].tolist())
        #: The variables to decide, in visiting order.
        self.sequence = np.array([i for i in firsts if decides[i]], dtype=np.int64)
        self._static = static_features(g, order, upward_rank(Problem(g, self.cluster, "step_time")))
        self._edge_rows = np.stack([self._row_of[a.src], self._row_of[a.dst]])
        # Each node's decided variable: its own, or the first copy's under folding.
        self._decider = self._into[space.variable_of]
        self._slots = [self._slot_rows(i) for i in range(space.num_variables)]

    def _slot_rows(self, i: int) -> np.ndarray:
        """The ``devices`` rows of variable ``i``'s configurations."""
        p, cost = self.cost.space.p, self.cost
        rows = np.zeros((self.num_slots, len(SLOT_FEATURES)), dtype=np.float32)
        scale = math.log(p) if p > 1 else 1.0
        serial = max(cost.compute[i][0], 1e-12)
        for c, config in enumerate(cost.space.configs[i]):
            rows[c, : len(DIMS)] = [math.log(config.get(d, 1)) / scale for d in DIMS]
            rows[c, len(DIMS)] = math.log(math.prod(config.values())) / scale
            rows[c, len(DIMS) + 1] = cost.compute[i][c] / serial
            rows[c, len(DIMS) + 2] = cost.comm[i][c] / serial
            rows[c, -1] = 1.0
        return np.clip(rows, 0.0, CLIP)

    def settings(self) -> dict[str, Any]:
        """Plain values describing this MDP (kept with a trained policy)."""
        return {
            "env": self.kind,
            "num_devices": self.num_slots,
            "order": self.order if isinstance(self.order, str) else None,
            "order_seed": self.order_seed,
            "objective": "strategy",
            "reward": self.reward_fn.name,
            "observation": "graph",
            "fold": self.fold,
            "invalid_action": self.invalid_action,
            "max_nodes": self.max_nodes,
            "max_edges": self.max_edges,
            "observation_version": OBSERVATION_VERSION,
        }

    # ---------------------------------------------------------------------- episodes
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        if seed is not None:
            seed = check_int(seed, "reset seed")
        if options and "graph" in options:
            raise ConfigError("Parallelize-v1 holds one graph: reset option 'graph' is not taken")
        _check_reset_options(options, ())
        super().reset(seed=seed)
        g = self.graph
        self.chosen = np.full(self.cost.space.num_variables, -1, dtype=np.int64)
        self._nodes = np.zeros((self.max_nodes, NUM_BASE_FEATURES + self.num_slots), np.float32)
        self._nodes[: g.num_nodes, :NUM_BASE_FEATURES] = self._static
        self._edges = np.zeros((2, self.max_edges), dtype=np.int64)
        self._edges[:, : g.num_edges] = self._edge_rows
        self._edge_mask = np.zeros(self.max_edges, dtype=np.float32)
        self._edge_mask[: g.num_edges] = 1.0
        self._node_mask = np.zeros(self.max_nodes, dtype=np.float32)
        self._node_mask[: g.num_nodes] = 1.0
        self._t, self._before, self._running = 0, self.reference_runtime, True
        self._point_at(0)
        return self._observation(), self._info(None, False)

    def _step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        if not self._running:
            raise EpisodeError("step() called outside an episode; call reset() to start one")
        i = int(self.sequence[self._t])
        slot = self._slot(action, i)
        self.chosen[i] = slot
        rows = self._row_of[np.flatnonzero(self._decider == i)]
        self._nodes[rows, PLACED] = 1.0
        self._nodes[rows, NUM_BASE_FEATURES + slot] = 1.0
        self._t += 1
        done = self._t == len(self.sequence)
        after = None
        if done or self.reward_fn.dense:
            after = self.model.evaluate(self.strategy(), check=False).runtime
        reward = self.reward_fn(self.reference_runtime, self._before, after, done)
        if after is not None:
            self._before = after
        self._point_at(None if done else self._t)
        return self._observation(), reward, done, False, self._info(after, done)

    def strategy(self) -> np.ndarray:
        """The strategy so far: one configuration index per node (undecided variables at the
        reference strategy's)."""
        per_variable = self.chosen[self._into]
        reference = self.reference_strategy[self.cost.space.variables]
        per_variable = np.where(per_variable >= 0, per_variable, reference)
        return per_variable[self.cost.space.variable_of]

    def _slot(self, action: Any, i: int) -> int:
        """The configuration index ``action`` picks for variable ``i`` (a masked slot: as
        ``invalid_action`` says)."""
        value = action[()] if isinstance(action, np.ndarray) and action.ndim == 0 else action
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise PlacementError(
                f"action must be an integer slot index in 0..{self.num_slots - 1}, "
                f"got {action!r} ({type(action).__name__})"
            )
        if not 0 <= value < self.num_slots:
            raise PlacementError(f"action {int(value)} is not a slot in 0..{self.num_slots - 1}")
        return self._allowed(int(value), self._mask, lambda: self._refusal(i, int(value)))

    def _refusal(self, i: int, slot: int) -> str:
        v = int(self.cost.space.variables[i])
        count = int(self._counts[i])
        return (
            f"variable {i} (node {v} ({self.graph.names[v]!r})): slot {slot} is past its "
            f"{count} configurations; allowed: 0..{count - 1}"
        )

    def _point_at(self, t: int | None) -> None:
        """Make variable ``sequence[t]`` the current one (``None``: the episode is over)."""
        self._nodes[:, CURRENT] = 0.0
        self._current = np.zeros(self.max_nodes, dtype=np.float32)
        self._mask = np.zeros(self.num_slots, dtype=bool)
        self._devices = np.zeros((self.num_slots, len(SLOT_FEATURES)), dtype=np.float32)
        if t is None:
            return
        i = int(self.sequence[t])
        row = self._row_of[self.cost.space.variables[i]]
        self._nodes[row, CURRENT] = 1.0
        self._current[row] = 1.0
        self._mask[: self._counts[i]] = True
        self._devices = self._slots[i]

    def action_masks(self) -> np.ndarray:
        """Boolean mask of the current variable's valid slots (sb3-contrib's MaskablePPO)."""
        return self._mask.copy()

    def _observation(self) -> dict[str, np.ndarray]:
        return observation_of(self)

    def _info(self, runtime: float | None, done: bool) -> dict[str, Any]:
        info: dict[str, Any] = {
            "graph": self.graph.name,
            "action_mask": self._mask.astype(np.int8),
            "reference_runtime": self.reference_runtime,
        }
        if runtime is not None:
            info["runtime"] = runtime
        if done:
            info["placement"] = self.strategy()
            self._running = False
        return info
