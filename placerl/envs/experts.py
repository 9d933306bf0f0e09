"""State experts: behaviour-cloning experts that act on an env's state.

A placer expert replays one placement fixed in advance
(:meth:`~placerl.envs.base.PlacementEnvBase.expert_action`); a state expert decides from the
episode as it stands, so a clone can learn decisions that depend on it. Each is an env method
of the same name; :mod:`placerl.agents.imitation` calls it at every step.
"""

from __future__ import annotations

from typing import Any

from placerl.errors import ConfigError

#: The state experts, each the name of the env method that gives its action:
#: ``best_move`` (:meth:`~placerl.envs.refine.PlacementRefineEnv.best_move`, refine only).
STATE_EXPERTS = ("best_move",)


def is_state_expert(expert: Any) -> bool:
    """Whether ``expert`` names a state expert rather than a placer."""
    return isinstance(expert, str) and expert in STATE_EXPERTS


def check_expert(env_class: type, expert: Any) -> None:
    """Refuse a state expert that envs of ``env_class`` cannot answer.

    Raises:
        ConfigError: ``best_move`` for an env that does not refine.
    """
    if is_state_expert(expert) and not hasattr(env_class, expert):
        raise ConfigError(
            f"warm_start {expert!r} needs the refine env (env=refine), not {env_class.__name__}"
        )
