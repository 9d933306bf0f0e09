"""Feature sets: whether the observation holds HEFT's figures (the envs' ``features``).

placerl's observation carries two kinds of figures of HEFT's (Topcuoglu et al. 2002), which
the learned placers it re-implements never had:

* its priority, the upward rank of every node (the ``nodes`` column ``RANK``, a global
  quantity a few rounds of message passing cannot compute);
* its list schedule of the placed nodes on each device (the ``devices`` columns ``start``,
  ``finish``, ``finish_gap``, ``finish_rank`` and ``earliest``: where HEFT would start and
  finish the node, and which device it would pick; :mod:`placerl.envs.device_features`).

``heft`` (the default) shows them; ``plain`` zeroes them, for a faithful re-implementation of
Placeto, DOPPLER or GDP (``experiment=placeto_faithful``). The columns are zeroed, not
dropped: the observation keeps its shape, so one network reads either set and two runs can
differ in this option alone (the ablation ladder's ``+heft_features`` rung). The ``devices``
columns that are no one's schedule (``duration``, ``load``, ``memory``, ``transfer``,
``allowed``) stay in both.
"""

from __future__ import annotations

from dataclasses import dataclass

from placerl._registry import Registry
from placerl.envs.case import RANK
from placerl.envs.device_features import HEFT_SCHEDULE_COLUMNS
from placerl.errors import ConfigError

#: The feature set every env and run uses unless told otherwise.
DEFAULT_FEATURES = "heft"


@dataclass(frozen=True)
class FeatureSet:
    """Which observation columns a feature set zeroes.

    Attributes:
        nodes: Columns of ``nodes`` that are 0 on every row.
        devices: Columns of ``devices`` that are 0 on every device.
        meaning: One line for messages and docs.
    """

    nodes: tuple[int, ...]
    devices: tuple[int, ...]
    meaning: str


FEATURE_SETS: Registry[FeatureSet] = Registry("feature set")
FEATURE_SETS.register("heft", FeatureSet((), (), "HEFT's upward rank and list schedule shown"))
FEATURE_SETS.register(
    "plain",
    FeatureSet((RANK,), HEFT_SCHEDULE_COLUMNS, "HEFT's upward rank and list schedule zeroed"),
)


def feature_set(name: str) -> FeatureSet:
    """The registered feature set ``name``.

    Raises:
        ConfigError: An unknown name, with the known ones and what each shows.
    """
    if not isinstance(name, str) or name not in FEATURE_SETS:
        known = "; ".join(f"{key} ({entry.meaning})" for key, entry in FEATURE_SETS.items())
        raise ConfigError(f"features must be one of the feature sets {known}; got {name!r}")
    return FEATURE_SETS[name]
