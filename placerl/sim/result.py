"""The result of evaluating one placement."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from typing import Any

import numpy as np


@dataclass(frozen=True, eq=False)
class SimResult:
    """What a cost model says about one placement (seconds and bytes; arrays per device).

    Attributes:
        objective: Name of the objective that produced it (``step_time``, ``pipeline``, ...).
        runtime: Seconds: the step time, or the max load for ``pipeline``; ``inf`` when a node
            sits on a device kind it cannot run on.
        feasible: Memory fits, no colocation group is split, every node can run where placed.
        busy: Compute seconds per device.
        comm: Communication seconds per device (see :mod:`placerl.sim`).
        memory: Resident bytes per device (sum of ``mem_bytes``).
        peak_memory: Peak bytes per device (resident plus live activations under ``step_time``).
        memory_excess: Bytes over capacity per device (0 where it fits).
        split_groups: Colocation groups spread over more than one device.
        unsupported_nodes: Indices of nodes placed on a device kind they cannot run on.
        errors: Why a measured run failed (a crash, out of memory, a hang); empty otherwise.
        start: Per-node start times (``step_time`` only).
        finish: Per-node finish times (``step_time`` only).
    """

    objective: str
    runtime: float
    feasible: bool
    busy: np.ndarray
    comm: np.ndarray
    memory: np.ndarray
    peak_memory: np.ndarray
    memory_excess: np.ndarray
    split_groups: tuple[str, ...] = ()
    unsupported_nodes: tuple[int, ...] = ()
    errors: tuple[str, ...] = ()
    start: np.ndarray | None = None
    finish: np.ndarray | None = None

    @classmethod
    def of(cls, **values: Any) -> SimResult:
        """The same result as ``SimResult(**values)``, built without the frozen dataclass's
        per-field ``object.__setattr__``: cost models build one per evaluation, and at 100
        nodes that constructor was a tenth of ``evaluate``."""
        result = object.__new__(cls)
        result.__dict__.update(_DEFAULTS, **values)
        return result

    @property
    def load(self) -> np.ndarray:
        """Compute plus communication seconds per device (the pipeline loads)."""
        return self.busy + self.comm

    @property
    def reasons(self) -> tuple[str, ...]:
        """Human-readable reasons why the placement is infeasible (empty when feasible)."""
        out = [
            f"device {d} is {excess:.6g} bytes over its memory"
            for d, excess in enumerate(self.memory_excess)
            if excess > 0
        ]
        out += [f"colocation group {g!r} is split across devices" for g in self.split_groups]
        out += [f"node {v} cannot run on its device's kind" for v in self.unsupported_nodes]
        out += [f"the measured run failed: {e}" for e in self.errors]
        return tuple(out)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable summary (per-node times omitted)."""
        return {
            "objective": self.objective,
            "runtime": self.runtime,
            "feasible": self.feasible,
            "busy": self.busy.tolist(),
            "comm": self.comm.tolist(),
            "memory": self.memory.tolist(),
            "peak_memory": self.peak_memory.tolist(),
            "memory_excess": self.memory_excess.tolist(),
            "reasons": list(self.reasons),
        }


_DEFAULTS = {f.name: f.default for f in fields(SimResult) if f.default is not MISSING}
