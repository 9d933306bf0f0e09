"""Placements changed one colocation group at a time, with the objective kept up to date.

Refine-mode envs and local search move one group per step, then ask for the runtime. Under
``pipeline`` a move changes only the moved nodes' loads and the transfer charges of the
moved nodes and their producers, so :class:`PipelineState` updates the per-device loads in
time proportional to the group's in- and out-degrees, its producers' out-degrees and the
devices (see :func:`placerl.sim.kernels.pipeline_move`) instead of a pass over the graph.

``step_time`` has no such state: moving one op can reorder every device's queue from that op
on (list scheduling is greedy, and a changed arrival time changes which ready op each device
picks next, which changes later arrivals), so the step time needs a full re-simulation;
:meth:`CostModel.incremental` returns ``None`` for it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from placerl.errors import PlacementError
from placerl.sim import kernels
from placerl.sim.model import CostModel, check_placement, register_incremental
from placerl.sim.result import SimResult


@register_incremental("pipeline")
class PipelineState:
    """Per-device pipeline loads of one placement, updated move by move.

    Args:
        model: A cost model with the ``pipeline`` objective.
        placement: The starting placement (copied).

    Example:
        >>> model = CostModel("msr:bert24_inference", "msr:bert24_inference", "pipeline")
        >>> state = model.incremental(np.zeros(32, dtype=int))
        >>> state.try_move(5, 1)  # (feasible, max load) if node 5's group moved  # doctest: +SKIP
        >>> state.move(5, 1)  # apply it; returns the new max load  # doctest: +SKIP
    """

    def __init__(self, model: CostModel, placement: Any) -> None:
        if model.objective != "pipeline":
            raise PlacementError(f"PipelineState needs a pipeline cost model, got {model!r}")
        self.model = model
        self._placement = check_placement(placement, model.graph, model.num_devices).copy()
        n = model.graph.num_nodes
        self._mark, self._touched = np.zeros(n, dtype=np.bool_), np.empty(n, dtype=np.int64)
        self._remote = np.empty(model.num_devices)
        self._members = model.colocation_members()
        self._sync()

    def _sync(self) -> None:
        """Recompute every load from scratch (a full evaluation)."""
        model, n = self.model, self.model.graph.num_nodes
        self._busy = np.zeros(model.num_devices)
        self._unsupported = np.zeros(model.num_devices, dtype=np.int64)
        durations = model.durations[np.arange(n), self._placement]
        finite = np.isfinite(durations)
        np.add.at(self._busy, self._placement[finite], durations[finite])
        np.add.at(self._unsupported, self._placement[~finite], 1)
        full = model.evaluate(self._placement, check=False, times=False)
        self._comm = full.comm.copy()
        self._memory = full.memory.copy()
        self._split = set(full.split_groups)
        self._runtime = full.runtime
        self._moves = 0

    @property
    def placement(self) -> np.ndarray:
        """The current placement (read-only view)."""
        view = self._placement.view()
        view.flags.writeable = False
        return view

    @property
    def runtime(self) -> float:
        """The current max load (``inf`` if a node sits on a kind it cannot run on)."""
        return self._runtime

    def move(self, node: int, device: int) -> float:
        """Move ``node``'s colocation group to ``device``; returns the new max load."""
        members = self._check_move(node, device)
        self._split.discard(self.model.graph.nodes[int(node)].group)
        self._runtime = self._apply(
            members, device, self._busy, self._unsupported, self._comm, self._memory
        )
        self._moves += 1
        if self._moves >= self.model.graph.num_nodes:  # amortized O(1): rounding cannot pile up
            self._sync()
        return self._runtime

    def try_move(self, node: int, device: int) -> tuple[bool, float]:
        """``(feasible, max load)`` if ``node``'s group moved to ``device``; nothing changes."""
        members = self._check_move(node, device)
        old = self._placement[members].copy()
        busy, unsupported = self._busy.copy(), self._unsupported.copy()
        comm, memory = self._comm.copy(), self._memory.copy()
        runtime = self._apply(members, device, busy, unsupported, comm, memory)
        self._placement[members] = old
        group = self.model.graph.nodes[int(node)].group
        feasible = (
            not (memory > self.model.capacity).any()
            and not (self._split - {group})
            and not unsupported.any()
        )
        return feasible, runtime

    def result(self) -> SimResult:
        """The :class:`SimResult` of the current placement: ``evaluate``'s, up to rounding.

        Loads are updated by removing and adding terms, so they may differ from a fresh
        evaluation in the last bits (about 1e-15 relative); a full re-evaluation every N moves
        keeps the error from growing.
        """
        unsupported = self.model.unsupported(self._placement) if self._unsupported.any() else ()
        busy = (
            np.where(self._unsupported > 0, np.inf, self._busy)
            if unsupported
            else self._busy.copy()
        )
        excess = np.maximum(self._memory - self.model.capacity, 0.0)
        split = tuple(sorted(self._split, key=self.model.arrays.group_names.index))
        return SimResult(
            objective="pipeline",
            runtime=self.runtime,
            feasible=not (excess.any() or split or unsupported),
            busy=busy,
            comm=self._comm.copy(),
            memory=self._memory.copy(),
            peak_memory=self._memory.copy(),
            memory_excess=excess,
            split_groups=split,
            unsupported_nodes=unsupported,
        )

    # ------------------------------------------------------------------------ helpers
    def _check_move(self, node: Any, device: Any) -> np.ndarray:
        n, n_dev = self.model.graph.num_nodes, self.model.num_devices
        for what, value, size in (("node", node, n), ("device", device, n_dev)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise PlacementError(f"a move's {what} must be an integer, got {value!r}")
            if not 0 <= value < size:
                raise PlacementError(f"a move's {what} {value} is not in 0..{size - 1}")
        return self._members[int(node)]

    def _apply(self, members, device, busy, unsupported, comm, memory) -> float:
        m, a, c = self.model, self.model.arrays, self.model.cluster
        return kernels.pipeline_move(
            members,
            int(device),
            self._placement,
            m.durations,
            a.succ_ptr,
            a.succ,
            a.succ_edge,
            a.pred_ptr,
            a.pred,
            m.edge_time,
            a.edge_bytes,
            c.bandwidth,
            c.latency,
            m.is_cpu,
            a.mem_bytes,
            busy,
            unsupported,
            comm,
            memory,
            self._mark,
            self._touched,
            self._remote,
        )
