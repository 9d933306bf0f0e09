"""The split, enforced: what selects or tunes a placer may not read a test case.

The graphs that choose a policy's weights (``validation_graphs``) and the graphs of a
hyperparameter search (every trial of an Optuna sweep) may be no suite's test case:
:func:`check_reads` refuses them by name before any work. Training on a case is not refused:
a per-graph search (the main job's excursions, a search at inference) trains on the graph it
places, as any search reads it. Graphs are matched by their spec in canonical form
(:func:`~placerl.bench.case.canonical_spec`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from placerl.bench.case import Case, canonical_spec
from placerl.bench.suite import SUITES
from placerl.errors import ConfigError

#: Which splits each use may not read.
FORBIDDEN = {"selection": ("test",), "tuning": ("test",)}


@functools.cache
def _held_out() -> dict[str, tuple[str, Case]]:
    """Every registered suite's held-out (validation and test) cases by graph key."""
    cases: dict[str, tuple[str, Case]] = {}
    for suite_id in SUITES:
        for case in SUITES[suite_id]().cases:
            if case.split != "train":
                cases.setdefault(case.key, (suite_id, case))
    return cases


def check_reads(specs: Iterable[str], use: str) -> None:
    """Refuse graph specs that ``use`` (``selection`` or ``tuning``) may not read.

    Raises:
        ConfigError: Naming the suite, the case and its split.
    """
    held_out = _held_out()
    for spec in specs:
        found = held_out.get(canonical_spec(spec)) if isinstance(spec, str) else None
        if found and found[1].split in FORBIDDEN[use]:
            suite_id, case = found
            raise ConfigError(
                f"{spec!r} is {suite_id}'s {case.split} case {case.name!r}: {use} may not read "
                "it (training reads train cases, selection and tuning validation ones, only "
                "the final score test ones)"
            )
