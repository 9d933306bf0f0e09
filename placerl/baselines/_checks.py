"""Option checks shared by the placers: each raises ``ConfigError`` naming placer and option."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from placerl.errors import ConfigError


def positive_int(placer: str, option: str, value: Any) -> int:
    """``value`` as an int >= 1."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"{placer}: option {option!r} must be an integer >= 1, got {value!r}")
    return int(value)


def non_negative_int(placer: str, option: str, value: Any) -> int:
    """``value`` as an int >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ConfigError(f"{placer}: option {option!r} must be an integer >= 0, got {value!r}")
    return int(value)


def positive_float(placer: str, option: str, value: Any, *, allow_inf: bool = True) -> float:
    """``value`` as a float > 0 (``inf`` allowed unless ``allow_inf`` is false)."""
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if not ok or not value > 0 or (math.isinf(value) and not allow_inf):
        raise ConfigError(f"{placer}: option {option!r} must be a number > 0, got {value!r}")
    return float(value)


def one_of(placer: str, option: str, value: Any, choices: tuple[Any, ...]) -> Any:
    """``value`` if it is one of ``choices``."""
    if value not in choices:
        known = ", ".join(map(repr, choices))
        raise ConfigError(f"{placer}: option {option!r} must be one of {known}, got {value!r}")
    return value


def seed(placer: str, value: Any) -> int:
    """A seed: an int >= 0."""
    return non_negative_int(placer, "seed", value)
