"""Schedules written as strings, as RL Zoo users write them: ``lin_3e-4``.

A config file cannot hold a Python function, so a scheduled hyperparameter (the learning rate,
PPO's clip ranges) is given as ``lin_<start>``: it decays linearly from ``<start>`` at the
first update to 0 at the last (SB3 passes the remaining share of training, 1 -> 0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from placerl.errors import ConfigError

#: The hyperparameters SB3 accepts a schedule for.
SCHEDULED = ("learning_rate", "clip_range", "clip_range_vf")


@dataclass(frozen=True)
class LinearSchedule:
    """``start * progress_remaining``: a picklable callable SB3 saves with the model.

    Attributes:
        start: The value at the start of training.
    """

    start: float

    def __call__(self, progress_remaining: float) -> float:
        return self.start * progress_remaining


def parse_schedules(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with every ``lin_<start>`` string of :data:`SCHEDULED` as a schedule.

    Raises:
        ConfigError: A string that is not ``lin_`` followed by a number > 0, naming the option.
    """
    out = dict(options)
    for name in SCHEDULED:
        value = out.get(name)
        if isinstance(value, str):
            out[name] = LinearSchedule(_start(name, value))
    return out


def _start(name: str, text: str) -> float:
    prefix, _, number = text.partition("_")
    try:
        start = float(number) if prefix == "lin" else None
    except ValueError:
        start = None
    if start is None or not 0 < start < math.inf:
        raise ConfigError(
            f"{name} must be a number or a schedule 'lin_<start>' (linear decay to 0, start > 0, "
            f"e.g. lin_3e-4), got {text!r}"
        )
    return start
