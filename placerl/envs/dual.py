"""``placerl/PlacementDual-v1``: DOPPLER's MDP, pick the next ready node, then its device."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from placerl.envs.case import GraphCase
from placerl.envs.device_features import NUM_DEVICE_FEATURES
from placerl.envs.placement import PlacementEnv
from placerl.errors import PlacementError
from placerl.graph.orders import traversal_order


@dataclass(frozen=True, eq=False)
class ReadyTables:
    """What tracking the ready units of one graph needs, built once per graph.

    A unit (a colocation group, with its copies when folding) is *ready* when every producer of
    its anchor, the member earliest in a topological order, is placed. The earliest unplaced
    anchor always has its producers placed (each sits in a unit whose anchor is earlier still),
    so some unit is ready until all are.

    Attributes:
        rows: The observation row that stands for each unit (its first row in the order).
        unit_of_row: Each row's unit, or -1 for a row that moves with another's.
        waiting: Unplaced producers of each unit's anchor at the start of an episode.
        releases: Per unit, the units (with multiplicity) whose anchors it feeds.
        priority: Per unit, the highest upward rank (HEFT's order) among its members.
    """

    rows: np.ndarray
    unit_of_row: np.ndarray
    waiting: np.ndarray
    releases: list[np.ndarray]
    priority: np.ndarray

    @classmethod
    def build(cls, case: GraphCase) -> ReadyTables:
        """The tables of ``case``'s graph."""
        graph = case.graph
        a = graph.arrays
        position = np.empty(graph.num_nodes, dtype=np.int64)
        position[traversal_order(graph, "topo")] = np.arange(graph.num_nodes)
        rows = case.unit_rows()
        units = [case.members[int(case.order[row])] for row in rows]
        unit_of_row = np.full(graph.num_nodes, -1, dtype=np.int64)
        unit_of_row[rows] = np.arange(len(rows))
        anchors = np.array([m[np.argmin(position[m])] for m in units], dtype=np.int64)
        unit_of_anchor = np.full(graph.num_nodes, -1, dtype=np.int64)
        unit_of_anchor[anchors] = np.arange(len(units))
        waiting = np.bincount(a.dst, minlength=graph.num_nodes)[anchors]
        releases = []
        for members in units:
            fed = unit_of_anchor[a.dst[np.isin(a.src, members)]]
            releases.append(fed[fed >= 0])
        priority = np.array([case.rank[m].max() for m in units])
        return cls(
            rows=rows,
            unit_of_row=unit_of_row,
            waiting=waiting,
            releases=releases,
            priority=priority,
        )


class PlacementDualEnv(PlacementEnv):
    """Place a computation graph in an order the agent chooses (DOPPLER, ICLR 2026).

    ## Description
    Each node takes two steps. In the *select* step (DOPPLER's SEL policy) the agent picks the
    next node among the ready ones: the order becomes part of what is learned instead of a
    fixed traversal. In the *place* step (PLC) it picks that node's device, as in
    ``placerl/Placement-v1``; placing a node places its colocation group. A node is ready when
    the producers of its group's first member (in topological order) are placed. The
    ``order`` argument only sets the rows of the observation and the tie-break of the expert.

    ## Observation space
    That of ``placerl/Placement-v1`` plus ``ready`` ``(max_nodes,)``: in a select step, 1 on
    the rows of the ready nodes a device can still take (the rows the action may name); all 0
    in a place step. ``current`` is the selected node's row in a place step and all 0 in a
    select step (so ``current.sum()`` tells the phase), when ``devices`` is all 0 too.

    ## Action space
    ``Discrete(max(max_nodes, D))``: a row in a select step, a device in a place step.
    :meth:`action_masks` (and ``info["action_mask"]``) allow the ready rows, then the devices
    the node's group can use. An action the mask rules out (a row that is not a ready node
    that fits; in a place step a device the node cannot use, or an index past the devices) is
    handled as ``invalid_action`` says (:mod:`placerl.envs.invalid`): by default it is
    replaced by the nearest allowed one (smallest cyclic index distance over the ``n``
    actions, ties to the lower index; ``info["invalid_action"]`` and ``info["action_taken"]``
    record it), ``penalize`` also subtracts ``INVALID_ACTION_PENALTY`` from the step's reward,
    and ``raise`` raises :class:`~placerl.errors.PlacementError` naming the node and why.
    An action outside ``0..n-1``, or not an integer, always raises. Train with a masked
    algorithm (``maskable_ppo``) and the ``nodes`` head (:mod:`placerl.agents.node_heads`).

    ## Reward
    As ``placerl/Placement-v1`` (default ``log_speedup``), paid on the place steps; a select
    step earns 0 (``-INVALID_ACTION_PENALTY`` for a replaced action under ``penalize``).

    ## Episode end
    Terminates after the last node's place step (two steps per colocation group); with
    ``memory="mask"`` it ends early, as construct mode does, when no ready node fits on any
    device.

    ## Arguments
    Those of ``placerl/Placement-v1``, ``invalid_action`` and ``features`` included.

    ## Version history
    * v1: ``invalid_action``, ``nearest`` by default (v0 raised on every masked-out action:
      Gymnasium's and SB3's ``check_env`` failed); observations of version 2.
    * v0: initial version.
    """

    kind = "dual"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.action_space = spaces.Discrete(max(self.max_nodes, self.num_devices))
        self.observation_space = spaces.Dict(
            {
                **self.observation_space.spaces,
                "ready": spaces.Box(0.0, 1.0, (self.max_nodes,), np.float32),
            }
        )
        self._tables: dict[int, ReadyTables] = {}

    # ------------------------------------------------------------------------ episode
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        case = self._start_episode(seed, options)
        if self.graph_index not in self._tables:
            self._tables[self.graph_index] = ReadyTables.build(case)
        self.ready_tables = self._tables[self.graph_index]
        self.placement = np.full(case.graph.num_nodes, -1, dtype=np.int64)
        self._waiting = self.ready_tables.waiting.copy()
        self._unplaced = np.ones(len(self.ready_tables.rows), dtype=bool)
        self._t, self._row, self._unit = 0, None, None
        self._before = case.reference_runtime
        self._ready = np.zeros(self.max_nodes, dtype=np.float32)
        if not self._select_phase(first=True):
            raise PlacementError(f"no node of {case.graph.name!r} fits on any device")
        return self._observation(), self._info(None, False)

    def _step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        self._check_running()
        if self._unit is None:
            return self._select(action)
        return self._place(action)

    def _select(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        row = self._index(action, self.action_space.n, "row")
        row = self._allowed(
            row, self._mask, lambda: f"row {row} is not a ready node that fits: {self._why(row)}"
        )
        case = self.case
        self._unit = int(self.ready_tables.unit_of_row[row])
        self._ready[:] = 0.0
        self._set_current(row)
        v = int(case.order[row])
        self._set_mask(v, self._fits[row])  # also the ``devices`` features of v's group
        self._mask = _padded(self._mask, self.action_space.n)
        return self._observation(), 0.0, False, False, self._info(None, False)

    def _place(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        case = self.case
        v = int(case.order[self._row])
        device = self._index(action, self.action_space.n, "row or device")  # the step's space
        mask = self._mask
        device = self._allowed(device, mask, lambda: self._device_refusal(v, device, mask))
        members = self._move_group(v, device)
        self._device_state.schedule(members, device, self.placement)
        self._unplaced[self._unit] = False
        np.subtract.at(self._waiting, self.ready_tables.releases[self._unit], 1)
        self._t += 1
        self._unit = None
        self._set_current(None)
        done = self._t == len(self.ready_tables.rows)
        if not done and not self._select_phase():
            return self._stuck()
        if done:
            self._ready[:] = 0.0
        return self._placed(done)

    # ------------------------------------------------------------------------ helpers
    def _select_phase(self, first: bool = False) -> bool:
        """Mask the ready rows that some device can take; ``False`` if there are none."""
        case = self.case
        fit = self._mask_or_runnable if first else self._mask_for
        candidates = self.ready_tables.rows[self._unplaced & (self._waiting == 0)]
        self._fits = {int(row): fit(int(case.order[row])) for row in candidates}
        rows = [row for row, devices in self._fits.items() if devices.any()]
        self._ready[:] = 0.0
        self._ready[rows] = 1.0
        self._mask = np.zeros(self.action_space.n, dtype=bool)
        self._mask[rows] = True
        self._devices = np.zeros((self.num_devices, NUM_DEVICE_FEATURES), dtype=np.float32)
        return bool(rows)

    def _why(self, row: int) -> str:
        case = self.case
        if row >= case.graph.num_nodes:
            return f"the graph has {case.graph.num_nodes} rows, {row} is padding"
        v = int(case.order[row])
        name = case.graph.names[v]
        unit = int(self.ready_tables.unit_of_row[row])
        if unit < 0:
            return f"node {v} ({name!r}) moves with another node of its group (or block)"
        if not self._unplaced[unit]:
            return f"node {v} ({name!r}) is placed already"
        if self._waiting[unit] > 0:
            return f"node {v} ({name!r}) waits for {int(self._waiting[unit])} unplaced producer(s)"
        return f"no device can take node {v} ({name!r})"

    def expert_action(self, expert: np.ndarray) -> int:
        """The action of an expert with placement ``expert``: in a select step the ready node
        of highest upward rank (HEFT's order), in a place step the expert's device."""
        if self._unit is not None:
            return int(expert[int(self.case.order[self._row])])
        rows = np.flatnonzero(self._mask)
        units = self.ready_tables.unit_of_row[rows]
        return int(rows[np.argmax(self.ready_tables.priority[units])])

    def _observation(self) -> dict[str, np.ndarray]:
        obs = super()._observation()
        obs["ready"] = self._ready.copy()
        return obs


def _padded(mask: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(size, dtype=bool)
    out[: len(mask)] = mask
    return out
