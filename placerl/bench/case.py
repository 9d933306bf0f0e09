"""A benchmark case: one graph to place on one cluster under one objective, in one split.

The split says what may read the case: ``train`` (a learned placer's training graphs),
``validation`` (model selection and hyperparameter tuning) and ``test`` (only the final
score). :mod:`placerl.bench.guard` enforces it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from placerl._spec import parse_query
from placerl.errors import ConfigError

#: The splits of a suite's cases, in order.
SPLITS = ("train", "validation", "test")
OBJECTIVES = ("step_time", "pipeline")


@dataclass(frozen=True)
class Case:
    """One benchmark case.

    Attributes:
        name: Unique in its suite: ``<tier>/<graph name>`` (``families/layered-n80-s24``).
        tier: The tier it belongs to (``tiny``, ``families``, ...), or a folder dataset's name.
        split: One of :data:`SPLITS`.
        graph: A graph spec (:func:`placerl.graph.load_graph`).
        cluster: A cluster spec (:func:`placerl.cluster.load_cluster`).
        objective: ``step_time`` or ``pipeline``.
        family: The graphs one policy learns together (a recipe trains on the ``train``
            cases of a family and selects on its ``validation`` ones); ``""``: the name
            without its seed and cluster suffixes (``families/layered-n80-s24@pcie-d4`` is
            ``families/layered-n80``).
    """

    name: str
    tier: str
    split: str
    graph: str
    cluster: str
    objective: str = "step_time"
    family: str = ""

    def __post_init__(self) -> None:
        if not self.family:
            object.__setattr__(self, "family", re.sub(r"(-s\d+)?(@.*)?$", "", self.name))
        if self.split not in SPLITS:
            raise ConfigError(
                f"case {self.name!r}: split must be one of {', '.join(SPLITS)}, got {self.split!r}"
            )
        if self.objective not in OBJECTIVES:
            raise ConfigError(
                f"case {self.name!r}: objective must be one of "
                f"{', '.join(OBJECTIVES)}, got {self.objective!r}"
            )

    @property
    def key(self) -> str:
        """The graph spec in a canonical form (options sorted), so that the same graph
        written with its options in another order is recognised (:func:`canonical_spec`)."""
        return canonical_spec(self.graph)


def canonical_spec(spec: str) -> str:
    """``scheme:body?options`` with the options sorted by name and their values as parsed
    (``n=080`` and ``n=80`` are one graph); a spec that does not parse stays as it is."""
    base, _, query = spec.partition("?")
    try:
        options = parse_query(query, what=f"spec {spec!r}")
    except ConfigError:
        return spec
    if not options:
        return base
    return base + "?" + "&".join(f"{k}={options[k]}" for k in sorted(options))
