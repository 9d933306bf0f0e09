"""Rewards as small named objects (CompilerGym style), chosen by name.

A reward sees runtimes in seconds: the ``reference`` runtime of the episode's graph (the
reference placer's), the runtime ``before`` and ``after`` the step (``after`` is ``None`` when the
env did not simulate this step) and whether the episode ended. The ladder:

* ``runtime_delta``: ``before - after`` (seconds; positive when the placement got faster).
* ``normalized_delta``: ``(before - after) / reference`` (Placeto's reward).
* ``improvement``: at episode end, ``(reference - final) / reference``; 0 before.
* ``log_speedup``: at episode end, ``log(reference / final)``; 0 before.

Dense rewards (the deltas) make the env simulate after every step; sparse ones only at the end.
Infeasible placements are scored by their penalized runtime
(:func:`placerl.sim.penalized_runtime`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from placerl._registry import Registry
from placerl.sim.penalty import INFEASIBLE_FACTOR, penalized_runtime

__all__ = ["INFEASIBLE_FACTOR", "REWARDS", "Reward", "penalized_runtime", "register_reward"]


@dataclass(frozen=True)
class Reward:
    """A named reward function.

    Attributes:
        name: Registry name.
        dense: The env must simulate after every step to compute it.
        fn: ``(reference, before, after, done) -> float``.
    """

    name: str
    dense: bool
    fn: Callable[[float, float, float | None, bool], float]

    def __call__(self, reference: float, before: float, after: float | None, done: bool) -> float:
        return float(self.fn(reference, before, after, done))


REWARDS: Registry[Reward] = Registry("reward")


def register_reward(name: str, *, dense: bool, overwrite: bool = False) -> Callable:
    """Register ``fn(reference, before, after, done) -> float`` as reward ``name``."""

    def wrap(fn: Callable) -> Callable:
        REWARDS.register(name, Reward(name, dense, fn), overwrite=overwrite)
        return fn

    return wrap


@register_reward("runtime_delta", dense=True)
def runtime_delta(reference: float, before: float, after: float | None, done: bool) -> float:
    """Seconds saved by this step."""
    return before - after


@register_reward("normalized_delta", dense=True)
def normalized_delta(reference: float, before: float, after: float | None, done: bool) -> float:
    """Seconds saved by this step, as a fraction of the reference runtime."""
    return (before - after) / reference


@register_reward("improvement", dense=False)
def improvement(reference: float, before: float, after: float | None, done: bool) -> float:
    """At the end: the fraction of the reference runtime saved."""
    return (reference - after) / reference if done else 0.0


@register_reward("log_speedup", dense=False)
def log_speedup(reference: float, before: float, after: float | None, done: bool) -> float:
    """At the end: log of the speedup over the reference placement."""
    return math.log(reference / after) if done else 0.0
