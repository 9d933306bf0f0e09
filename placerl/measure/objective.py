"""The ``measured`` objective: a placement's runtime is the median of real runs.

``CostModel(graph, "local", "measured?repeats=3&budget=500")``, and through it both envs,
every placer and :func:`placerl.evaluate.evaluate`, run placements for real on this machine's
devices (:class:`~placerl.measure.Measurer`). One session per (graph, cluster, options) and
process keeps the workers up and caches results by placement, so a placement is measured once.

* Failures never stop the caller: a crash, an out-of-memory or a hang gives an infeasible
  result whose ``errors`` say what happened, and the workers restart on the next placement.
* Placements that are infeasible anyway (a split colocation group, memory over capacity) are
  not run.
* After ``budget`` measured placements, or ``time_budget`` seconds of measuring, new
  placements are simulated (``step_time`` on the same cluster; their result's ``objective``
  says ``step_time``), with a warning the first time.
* Processes on one machine take turns (a file lock), so vector-env workers do not measure on
  each other's cores; their sessions are separate, so each measures its own placements.
"""

from __future__ import annotations

import atexit
import dataclasses
import math
import time
import warnings
from dataclasses import dataclass

import numpy as np

from placerl._io import cache_root, file_lock
from placerl.errors import ConfigError, MeasurementError
from placerl.measure.measurer import Measurer
from placerl.sim import CostModel, SimResult
from placerl.sim.model import register_objective

__all__ = ["MeasureOptions", "MeasuredSession", "session"]


@dataclass(frozen=True)
class MeasureOptions:
    """Options of the ``measured`` objective (``measured?repeats=5&budget=200``).

    Attributes:
        warmup: Untimed runs before the timed ones.
        repeats: Timed runs; their median is the runtime.
        budget: Distinct placements measured before new ones are simulated (``None``: no limit).
        time_budget: Seconds of measuring before new placements are simulated (``None``: no
            limit).
        timeout: Seconds one measurement may take before it counts as failed.
    """

    warmup: int = 2
    repeats: int = 3
    budget: int | None = None
    time_budget: float | None = None
    timeout: float = 60.0

    def __post_init__(self) -> None:
        for name, minimum in (("warmup", 0), ("repeats", 1), ("budget", 0)):
            value = getattr(self, name)
            if value is not None and value < minimum:
                raise ConfigError(f"measured option {name!r} must be >= {minimum}, got {value}")
        for name in ("time_budget", "timeout"):
            value = getattr(self, name)
            if value is not None and not 0 < value < math.inf:
                raise ConfigError(f"measured option {name!r} must be finite and > 0, got {value}")


class MeasuredSession:
    """Measurements of one graph on one cluster with one set of options, in this process.

    Attributes:
        measured: Placements run for real.
        failed: Of those, how many failed.
        simulated: Placements simulated because the budget was spent.
        hits: Evaluations answered from the cache.
        seconds: Wall-clock seconds spent measuring.
    """

    def __init__(self, model: CostModel) -> None:
        self.options: MeasureOptions = model.objective_options
        self.simulator = CostModel(model.graph, model.cluster, "step_time")
        self.cache: dict[bytes, SimResult] = {}
        self.measured = self.failed = self.simulated = self.hits = 0
        self.seconds = 0.0
        self._measurer: Measurer | None = None
        self._warned = False

    @property
    def measurer(self) -> Measurer:
        """The measurer (its program is loaded on first use)."""
        if self._measurer is None:
            o = self.options
            graph, cluster = self.simulator.graph, self.simulator.cluster
            self._measurer = Measurer(
                graph, cluster, warmup=o.warmup, repeats=o.repeats, timeout=o.timeout
            )
        return self._measurer

    def evaluate(self, objective: str, placement: np.ndarray, times: bool) -> SimResult:
        """The measured result of ``placement`` (cached), or a simulated one past the budget."""
        key = placement.tobytes()
        if key in self.cache:
            self.hits += 1
            return self.cache[key]
        simulated = self.simulator.evaluate(placement, check=False, times=times)
        if not simulated.feasible:
            return dataclasses.replace(simulated, objective=objective)
        if self._spent():
            self.simulated += 1
            return simulated
        self.measurer.check(placement)  # a device this machine lacks is the caller's error
        began = time.perf_counter()
        try:
            with file_lock(cache_root() / "measure.lock"):
                measurement = self.measurer.measure(placement)
        except MeasurementError as err:
            self.failed += 1
            result = dataclasses.replace(
                simulated,
                objective=objective,
                runtime=math.inf,
                feasible=False,
                errors=(str(err),),
                start=None,
                finish=None,
            )
        else:
            result = dataclasses.replace(
                simulated,
                objective=objective,
                runtime=measurement.runtime,
                busy=measurement.busy,
                comm=np.zeros_like(measurement.busy),
                start=measurement.start,
                finish=measurement.finish,
            )
        self.measured += 1
        self.seconds += time.perf_counter() - began
        self.cache[key] = result
        return result

    def _spent(self) -> bool:
        o = self.options
        spent = (o.budget is not None and self.measured >= o.budget) or (
            o.time_budget is not None and self.seconds >= o.time_budget
        )
        if spent and not self._warned:
            self._warned = True
            warnings.warn(
                f"measurement budget spent ({self.measured} placements, {self.seconds:.0f} s): "
                "new placements of this graph are simulated from now on",
                stacklevel=4,
            )
        return spent

    def close(self) -> None:
        """Stop the workers."""
        if self._measurer is not None:
            self._measurer.close()


_sessions: dict[tuple[str, str, str], MeasuredSession] = {}


def session(model: CostModel) -> MeasuredSession:
    """The session of ``model``'s graph, cluster and objective options in this process."""
    key = (model.graph.fingerprint(), model.cluster.fingerprint(), model.objective)
    if key not in _sessions:
        _sessions[key] = MeasuredSession(model)
    return _sessions[key]


@atexit.register
def _close_sessions() -> None:
    for s in _sessions.values():
        s.close()


@register_objective("measured", options=MeasureOptions)
def _measured(model: CostModel, placement: np.ndarray, times: bool) -> SimResult:
    result = session(model).evaluate(model.objective, placement, times)
    if not times and result.start is not None:
        return dataclasses.replace(result, start=None, finish=None)
    return result
