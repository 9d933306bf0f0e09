"""One runtime for every placement, feasible or not: what rewards and references compare.

An infeasible placement (memory overflow, split colocation group, a node on a kind it cannot
run on) still needs a number, so that an RL agent is pushed away from it rather than stopped,
and so that a reference placement that does not fit still normalizes rewards.
"""

from __future__ import annotations

import math

import numpy as np

from placerl.errors import ConfigError
from placerl.sim.result import SimResult

#: An infeasible placement counts as at least this many times slower than the reference.
INFEASIBLE_FACTOR = 2.0
#: Runtimes closer than this share count as equal: incremental loads carry last-bit noise,
#: which must not count as an improvement.
ROUNDING = 1e-12


def clearly_faster(runtime: float, than: float) -> bool:
    """Whether ``runtime`` is shorter than ``than`` by more than rounding (:data:`ROUNDING`)."""
    return runtime < than * (1.0 - ROUNDING)


def penalized_runtime(result: SimResult, reference: float) -> float:
    """The runtime rewards see: the real one if feasible, else a documented penalty.

    Infeasible: ``max(runtime, reference) * (INFEASIBLE_FACTOR + excess)`` where ``excess`` is
    the memory overflow as a fraction of the total capacity of the overflowing devices; a
    placement with an op on a device kind it cannot run on uses ``reference`` as its runtime.

    Raises:
        ConfigError: ``result`` is not a SimResult, or ``reference`` is not a number >= 0.
    """
    if not isinstance(result, SimResult):
        raise ConfigError(f"penalized_runtime needs a SimResult, got {type(result).__name__}")
    if (
        isinstance(reference, bool)
        or not isinstance(reference, (int, float, np.number))
        or not reference >= 0
    ):
        raise ConfigError(f"the reference runtime must be a number >= 0, got {reference!r}")
    if result.feasible:
        return result.runtime
    base = max(result.runtime, reference) if math.isfinite(result.runtime) else reference
    over = result.memory_excess > 0
    capacity = float((result.peak_memory - result.memory_excess)[over].sum())
    excess = float(result.memory_excess.sum()) / capacity if capacity > 0 else float(over.any())
    return base * (INFEASIBLE_FACTOR + excess)
