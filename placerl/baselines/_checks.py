"""Option checks shared by the placers: each raises ``ConfigError`` naming placer and option."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from placerl._options import check_int
from placerl.errors import ConfigError


def positive_int(placer: str, option: str, value: Any) -> int:
    """``value`` as an int >= 1."""
    return check_int(value, f"{placer}: option {option!r}", minimum=1)


def non_negative_int(placer: str, option: str, value: Any) -> int:
    """``value`` as an int >= 0."""
    return check_int(value, f"{placer}: option {option!r}", minimum=0)


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
