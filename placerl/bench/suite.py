"""A suite: a versioned, named set of cases in tiers and splits, and the registry of suites.

``load_suite("placebench-v1")`` gives the benchmark (:mod:`placerl.bench.placebench`); a
researcher's own folder of graphs is a suite too (:func:`folder_suite`), scored the same way.
A suite's cases are fixed in code: the same name and version always mean the same cases.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from placerl._registry import Registry
from placerl.bench.case import SPLITS, Case
from placerl.errors import ConfigError


@dataclass(frozen=True)
class Suite:
    """Versioned cases, each in one tier and one split.

    Attributes:
        name: The suite's name (``placebench``).
        version: Its version; a result names both, and results of two versions never pool.
        cases: The cases, in a fixed order.
        trained_on: For a family without training cases of its own, the families whose
            cases a recipe trains and selects on to place it (zero-shot transfer: the
            ``devices`` tier's test graphs on clusters training never saw).
    """

    name: str
    version: int
    cases: tuple[Case, ...]
    trained_on: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for case in self.cases:
            if case.name in seen:
                raise ConfigError(f"suite {self.id}: two cases are named {case.name!r}")
            seen.add(case.name)

    @property
    def id(self) -> str:
        """``<name>-v<version>``, as results and the command line name the suite."""
        return f"{self.name}-v{self.version}"

    @property
    def tiers(self) -> tuple[str, ...]:
        """The tiers, in the order of their first case."""
        return tuple(dict.fromkeys(case.tier for case in self.cases))

    def families(self, split: str | None = None) -> dict[str, tuple[str, ...]]:
        """Each tier's families with a case in ``split`` (``None``: any), both in the order
        of their first case.

        Raises:
            ConfigError: An unknown split, listing the known ones.
        """
        found: dict[str, dict[str, None]] = {}
        for case in self.select(split=split):
            found.setdefault(case.tier, {})[case.family] = None
        return {tier: tuple(families) for tier, families in found.items()}

    def select(
        self, tier: str | None = None, split: str | None = None, family: str | None = None
    ) -> list[Case]:
        """The cases of ``tier`` (``None``: every tier) in ``split`` (``None``: every split)
        of ``family`` (``None``: every family).

        Raises:
            ConfigError: An unknown tier, split or family, listing the known ones.
        """
        if tier is not None and tier not in self.tiers:
            raise ConfigError(
                f"suite {self.id} has no tier {tier!r}; known: {', '.join(self.tiers)}"
            )
        if split is not None and split not in SPLITS:
            raise ConfigError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
        cases = [c for c in self.cases if tier in (None, c.tier) and split in (None, c.split)]
        if family is None:
            return cases
        known = list(dict.fromkeys(c.family for c in cases))
        if family not in known:
            raise ConfigError(
                f"suite {self.id} has no family {family!r} in tier {tier!r}; "
                f"known: {', '.join(known)}"
            )
        return [c for c in cases if c.family == family]

    def training_cases(self, family: str) -> tuple[list[Case], list[Case]]:
        """The ``train`` and ``validation`` cases a policy placing ``family`` learns from:
        the family's own, or those of the families it is :attr:`trained_on`."""
        sources = self.trained_on.get(family, (family,))
        learn = [c for c in self.cases if c.family in sources]
        return (
            [c for c in learn if c.split == "train"],
            [c for c in learn if c.split == "validation"],
        )

    def case(self, name: str) -> Case:
        """The case named ``name``.

        Raises:
            ConfigError: No such case (naming the closest ones of its tier).
        """
        for case in self.cases:
            if case.name == name:
                return case
        tier = name.partition("/")[0]
        near = [c.name for c in self.cases if c.tier == tier][:5]
        raise ConfigError(
            f"suite {self.id} has no case {name!r}"
            + (
                f"; cases of tier {tier!r} include: {', '.join(near)}"
                if near
                else f"; tiers: {', '.join(self.tiers)}"
            )
        )


#: Suites by id (``placebench-v1``); each entry builds its suite.
SUITES: Registry[Callable[[], Suite]] = Registry("suite")


def load_suite(spec: str) -> Suite:
    """The suite ``<name>-v<version>``.

    Raises:
        ConfigError: A malformed id, or an unknown suite or version, listing the known ones.
    """
    if not isinstance(spec, str) or not re.fullmatch(r"[a-z][a-z0-9_]*-v\d+", spec):
        raise ConfigError(
            f"a suite is named <name>-v<version> (placebench-v1), got {spec!r}; "
            f"known: {', '.join(SUITES)}"
        )
    return SUITES[spec]()


def folder_suite(
    folder: str | Path, cluster: str, objective: str = "step_time", split: str = "test"
) -> Suite:
    """A researcher's own dataset: every ``.json`` file (placerl graph JSON or an msr-fiddle
    workload) in ``folder``, each a case in ``split`` on ``cluster`` under ``objective``. A
    file that is not a graph fails when it is scored, naming the file; the others score.

    Raises:
        ConfigError: The folder does not exist or holds no ``.json`` file.
    """
    root = Path(folder)
    if not root.is_dir():
        raise ConfigError(f"dataset folder {str(root)!r} is not a folder")
    files = sorted(root.glob("*.json"))
    if not files:
        raise ConfigError(f"dataset folder {str(root)!r} holds no .json graph file")
    tier = root.name or "dataset"
    cases = tuple(
        Case(f"{tier}/{path.stem}", tier, split, str(path), cluster, objective) for path in files
    )
    return Suite(tier, 1, cases)
