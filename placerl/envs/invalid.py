"""What an env does with an action its mask rules out: the ``invalid_action`` argument.

Every env of placerl masks its actions (``action_masks()``, ``info["action_mask"]``). A masked
algorithm (sb3-contrib's MaskablePPO) never takes a masked-out action; code that ignores the
masks (SB3's PPO and A2C, RecurrentPPO, Gymnasium's and SB3's ``check_env``, which step with
``action_space.sample()``) does. ``invalid_action`` says what happens then:

* ``"nearest"`` (default): the action is replaced by the nearest allowed one and the step
  goes on with it. *Nearest* is the allowed index ``i`` with the smallest cyclic distance
  ``min(|a - i|, n - |a - i|)`` to the action ``a``, over the ``n`` choices of the action
  (a ``Discrete(n)`` space, or one row of a ``MultiDiscrete`` one); ties go to the lower index.
  In a ``MultiDiscrete`` action only the rows the mask rules out are replaced. The step's
  ``info`` then holds ``"invalid_action"`` (the action as given) and ``"action_taken"`` (the
  action applied); a step whose action is allowed adds neither key.
* ``"penalize"``: the same replacement, and :data:`INVALID_ACTION_PENALTY` is subtracted from
  the step's reward (once per step, however many rows were replaced).
* ``"raise"``: :class:`~placerl.errors.PlacementError` naming the node (by index and name)
  and why the action is not allowed; the env's state is left as it was.

An allowed action gives the same step under all three, so a masked algorithm sees the same
MDP whatever the option. An action outside the action space (not an integer, a wrong shape,
an index past the space) always raises :class:`~placerl.errors.PlacementError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from placerl.errors import ConfigError, PlacementError

#: What an env may do with a masked-out action (its ``invalid_action``).
INVALID_ACTIONS = ("raise", "penalize", "nearest")
#: ``nearest``: check_env and mask-unaware learners run, and an allowed action is never changed.
DEFAULT_INVALID_ACTION = "nearest"
#: Subtracted from the reward of a step whose action was replaced under ``"penalize"``: under
#: the default ``log_speedup`` reward, what a placement ``e`` (2.7) times slower than the
#: reference earns.
INVALID_ACTION_PENALTY = 1.0


def check_invalid_action(value: Any) -> str:
    """``value`` if it is one of :data:`INVALID_ACTIONS`.

    Raises:
        ConfigError: Any other value, listing the allowed ones.
    """
    if not isinstance(value, str) or value not in INVALID_ACTIONS:
        raise ConfigError(
            f"invalid_action must be one of {', '.join(INVALID_ACTIONS)}, got {value!r}"
        )
    return value


def nearest_allowed(action: int, mask: np.ndarray) -> int:
    """The allowed index nearest ``action``: smallest cyclic distance over ``len(mask)``
    choices, ties to the lower index (``mask`` has at least one allowed entry)."""
    allowed = np.flatnonzero(mask)
    gap = np.abs(allowed - action)
    # argmin returns the first minimum, and ``allowed`` is sorted: ties go to the lower index
    return int(allowed[np.argmin(np.minimum(gap, len(mask) - gap))])


class InvalidActions:
    """Mixin of every placerl env: :meth:`step` wraps the env's ``_step`` and applies the
    ``invalid_action`` option's reward and info; ``_step`` passes each action through
    :meth:`_allowed` (``Discrete``) or :meth:`_allowed_rows` (``MultiDiscrete``)."""

    invalid_action: str = DEFAULT_INVALID_ACTION
    _replaced: tuple[Any, Any] | None = None

    def _step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        raise NotImplementedError

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Gymnasium's ``step``; see the env's docstring and :mod:`placerl.envs.invalid`."""
        self._replaced = None
        obs, reward, terminated, truncated, info = self._step(action)
        if self._replaced is not None:
            info["invalid_action"], info["action_taken"] = self._replaced
            if self.invalid_action == "penalize":
                reward -= INVALID_ACTION_PENALTY
        return obs, reward, terminated, truncated, info

    def _allowed(self, action: int, mask: np.ndarray, why: Callable[[], str]) -> int:
        """``action`` if ``mask`` allows it, else what ``invalid_action`` makes of it.

        Args:
            action: An index in ``0..len(mask) - 1``.
            mask: The allowed indices.
            why: The refusal's message (built only when refusing: it costs a lookup).
        """
        if mask[action]:
            return action
        if self.invalid_action == "raise" or not mask.any():
            raise PlacementError(why())
        taken = nearest_allowed(action, mask)
        self._replaced = (action, taken)
        return taken

    def _allowed_rows(
        self, values: np.ndarray, masks: np.ndarray, rows: np.ndarray, why: Callable[[int], str]
    ) -> np.ndarray:
        """``values`` (one choice per row, in range) with each of ``rows`` whose choice
        ``masks[row]`` rules out handled as :meth:`_allowed` does; other rows are kept."""
        bad = rows[~masks[rows, values[rows]]]
        if not len(bad):
            return values
        if self.invalid_action == "raise" or not masks[bad].any(axis=1).all():
            raise PlacementError(why(int(bad[0])))
        taken = values.copy()
        for row in bad:
            taken[row] = nearest_allowed(int(values[row]), masks[row])
        self._replaced = (values.copy(), taken.copy())
        return taken
