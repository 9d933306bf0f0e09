"""PlaceBench's scoring rule: the one function every placer's result goes through.

As OGB's ``Evaluator``, :func:`score_placement` is what a paper calls to score a placement of a
case, so that numbers from different papers compare. A placement is scored on the simulator:

* ``runtime``: its simulated runtime, as it is (never penalized);
* ``score``: the best constructive placer's runtime over this runtime (as CompilerGym
  normalizes to ``-Oz``): above 1 beats every constructive placer (:data:`CONSTRUCTIVE`);
  ``None`` when the placement does not fit, never a penalty number;
* ``gap``: the distance to :func:`placerl.sim.lower_bound`, a bound no placement beats;
* ``optimum_gap``: under ``pipeline``, the distance to the proven optimum (:data:`OPTIMUM`):
  the MILP's over every placement on graphs of up to 60 nodes (the tiny tier), Tarnawski's
  DP's among contiguous splits on larger ones (a non-contiguous placement may beat that one:
  the gap is then negative).

The constructive placers and the optima run through the shared reference cache
(:func:`placerl.baselines.references.reference`), so a suite scores each case's baselines once.

:func:`geometric_mean_score` summarizes a suite: the geometric mean of the scores of the
placements that fit, its bootstrap interval, and the number that do not fit, counted apart, so
that a leaderboard shows "1.12 (2 infeasible)" rather than folding a penalty into the mean.

Example:
    >>> from placerl.baselines import place
    >>> from placerl.bench.case import Case
    >>> from placerl.bench.scores import score_placement
    >>> case = Case("tiny/layered", "tiny", "test", "synthetic:layered?n=20&seed=1",
    ...             "placeto?n_devices=3", "step_time")
    >>> s = score_placement(case, place("heft", case.graph, case.cluster))
    >>> s.score, s.reference.placer                              # doctest: +SKIP
    (1.0, 'heft')
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from placerl.baselines.api import SearchLimitWarning
from placerl.baselines.references import reference
from placerl.cluster import Cluster, load_cluster
from placerl.comparison import compare_pairs
from placerl.errors import ConfigError, PlacementError, PlaceRLError
from placerl.graph import CompGraph, load_graph
from placerl.results import why_infeasible
from placerl.sim import CostModel, lower_bound

if TYPE_CHECKING:
    from placerl.bench.case import Case

#: The constructive placers a score is normalized to: the best of them scores 1.
CONSTRUCTIVE = ("heft", "m_etf", "m_sct")
#: The placers whose proven runtime is a ``pipeline`` case's optimum, the first that proves
#: one: the MILP over every placement (graphs of up to 60 nodes: the tiny tier), then
#: Tarnawski's DP over contiguous splits (larger graphs: an optimum among those only).
OPTIMUM = ("milp?contiguous=false&time_limit=120", "tarnawski_dp")


@dataclass(frozen=True)
class Baseline:
    """The constructive placer a case's score is normalized to.

    Attributes:
        placer: Its name (one of :data:`CONSTRUCTIVE`).
        runtime: Its simulated runtime (seconds).
        feasible: Its placement fits. ``False`` only when no constructive placer's placement
            fits: the fastest of them then stands in, unpenalized.
    """

    placer: str
    runtime: float
    feasible: bool = True

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values."""
        return {"placer": self.placer, "runtime": self.runtime, "feasible": self.feasible}


@dataclass(frozen=True)
class CaseScore:
    """The score of one placement of one case (seconds; ratios are unitless).

    Attributes:
        case: The case's name.
        runtime: The placement's simulated runtime, not penalized (``inf`` when a node sits
            on a device kind it cannot run on).
        feasible: The placement fits (memory, colocation, device kinds).
        why: What keeps it from fitting (:func:`placerl.results.why_infeasible`: ``memory``,
            ``colocation``, ...); empty when it fits.
        score: ``reference.runtime / runtime``: above 1 beats the best constructive placer.
            ``None`` when the placement does not fit (or no constructive placer placed the
            graph at all, or the runtime is 0).
        reference: The best constructive placer, or ``None`` when none could place the graph.
        lower_bound: :func:`placerl.sim.lower_bound` of the case's cost model, or ``None``.
        gap: ``runtime / lower_bound - 1`` (0 or more, up to float rounding), or ``None``
            (no bound, or the placement does not fit).
        optimum: Under ``pipeline``, the proven optimum of :data:`OPTIMUM`; ``None``
            otherwise or when none was proven.
        optimum_gap: ``runtime / optimum - 1`` (0 or more over every placement; negative
            only where the optimum is the DP's among contiguous splits and the placement is
            not contiguous), or ``None`` as ``optimum``, or when the placement does not fit.
    """

    case: str
    runtime: float
    feasible: bool
    why: str
    score: float | None
    reference: Baseline | None
    lower_bound: float | None
    gap: float | None
    optimum: float | None = None
    optimum_gap: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values: a runtime that is not finite is written ``None`` (JSON has no
        infinity); :meth:`from_dict` reads it back."""
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        out["runtime"] = _finite(self.runtime)
        out["reference"] = None if self.reference is None else self.reference.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CaseScore:
        """Inverse of :meth:`to_dict` (a leaderboard reads scores back from result files).

        Raises:
            ConfigError: A field is missing.
        """
        try:
            fields = {name: data[name] for name in cls.__dataclass_fields__}
        except KeyError as err:
            raise ConfigError(f"not a case score: missing {err}") from None
        fields["runtime"] = math.inf if fields["runtime"] is None else fields["runtime"]
        if fields["reference"] is not None:
            fields["reference"] = Baseline(**fields["reference"])
        return cls(**fields)


def score_placement(case: Case, placement: Any) -> CaseScore:
    """Score ``placement`` on ``case``: the one scoring rule of PlaceBench.

    Args:
        case: The case (its graph, cluster and objective).
        placement: One device index per node, in the graph's node order.

    Returns:
        The runtime, feasibility and the normalized score with its gaps.

    Raises:
        PlacementError: The placement has the wrong length or a device index out of range;
            the message names the case.
        GraphError, ClusterError, ConfigError: The case's specs do not load (named too).
    """
    with _about(case):
        graph, cluster = load_graph(case.graph), load_cluster(case.cluster)
        model = CostModel(graph, cluster, case.objective)
        placement = model.check(placement)
    sim = model.evaluate(placement, check=False, times=False)
    runtime, feasible = float(sim.runtime), bool(sim.feasible)
    best = best_constructive(graph, cluster, case.objective)
    bound = lower_bound(model)
    optimum = pipeline_optimum(graph, cluster) if case.objective == "pipeline" else None
    # Ratios exist only for a placement that fits: a number for one that does not would
    # read as a result on a leaderboard.
    return CaseScore(
        case=case.name,
        runtime=runtime,
        feasible=feasible,
        why=why_infeasible(sim),
        score=_ratio(best.runtime, runtime) if feasible and best else None,
        reference=best,
        lower_bound=bound,
        gap=_gap(runtime, bound) if feasible else None,
        optimum=optimum,
        optimum_gap=_gap(runtime, optimum) if feasible else None,
    )


def best_constructive(graph: CompGraph, cluster: Cluster, objective: str) -> Baseline | None:
    """The fastest placement of the :data:`CONSTRUCTIVE` placers that fits (ties: the first
    in that order); when none fits, the fastest of them flagged infeasible; ``None`` when none
    can place the graph at all (no placement fits its memory)."""
    runs = []
    for placer in CONSTRUCTIVE:
        try:
            ref = reference(graph, cluster, objective, placer)
        except PlacementError:  # this placer cannot place the graph (no placement fits)
            continue
        runs.append(Baseline(placer, float(ref.runtime), bool(ref.feasible)))
    fitting = [run for run in runs if run.feasible] or runs
    return min(fitting, key=lambda run: run.runtime, default=None)


def pipeline_optimum(graph: CompGraph, cluster: Cluster) -> float | None:
    """The ``pipeline`` runtime the first placer of :data:`OPTIMUM` proves optimal (cached):
    the MILP's on a graph within its size, else the DP's; ``None`` when no placement fits
    or a limit stopped both before a proof."""
    for placer in OPTIMUM:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SearchLimitWarning)  # unproven: the next one
                ref = reference(graph, cluster, "pipeline", placer)
        except (PlacementError, ConfigError):  # no split fits, or too large for the MILP
            continue
        if ref.feasible and ref.optimal:
            return float(ref.runtime)
    return None


@dataclass(frozen=True)
class MeanScore:
    """A suite's score: the geometric mean over the cases whose placement fits, and how many
    do not fit, counted apart (a leaderboard shows "k infeasible", not a penalty).

    Attributes:
        value: Geometric mean of the scores that exist; ``None`` when no placement fits.
        cases: Cases scored.
        infeasible: Cases without a score (their placement does not fit).
        ci_low, ci_high: Bootstrap 95% interval of ``value`` over the cases
            (:func:`placerl.comparison.compare_pairs`); ``None`` under two scored cases.
        wins, losses, ties: Scored cases above, below and at 1 (against the best
            constructive placer).
        note: Why there is no interval (empty when there is one).
    """

    value: float | None
    cases: int
    infeasible: int
    ci_low: float | None = None
    ci_high: float | None = None
    wins: int = 0
    losses: int = 0
    ties: int = 0
    note: str = ""

    def label(self) -> str:
        """One leaderboard cell: ``1.120 [1.050, 1.190] (2 infeasible)``."""
        if self.value is None:
            return f"all {self.cases} infeasible"
        text = f"{self.value:.3f}"
        if self.ci_low is not None and self.ci_high is not None:
            text += f" [{self.ci_low:.3f}, {self.ci_high:.3f}]"
        return text + (f" ({self.infeasible} infeasible)" if self.infeasible else "")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values, with the :meth:`label`."""
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        return {**out, "label": self.label()}


def geometric_mean_score(scores: Sequence[CaseScore]) -> MeanScore:
    """The geometric mean of the cases' scores, infeasible cases counted apart.

    A placement that does not fit has no score: averaging in a penalty would make the mean
    depend on an arbitrary factor, so it is left out of the mean and counted in
    ``infeasible`` instead; a leaderboard shows both.

    Args:
        scores: One :class:`CaseScore` per case.

    Raises:
        ConfigError: ``scores`` is empty or holds something else than a :class:`CaseScore`.
    """
    scores = list(scores)
    if not scores:
        raise ConfigError("geometric_mean_score needs at least one case score, got none")
    for item in scores:
        if not isinstance(item, CaseScore):
            raise ConfigError(
                f"geometric_mean_score takes CaseScore values (from "
                f"score_placement), got {type(item).__name__}"
            )
    values = np.array([s.score for s in scores if s.score is not None], dtype=float)
    infeasible = len(scores) - len(values)
    if not len(values):
        return MeanScore(None, len(scores), infeasible, note="no placement fits")
    # compare_pairs compares runtimes: each case's runtime relative to its reference's
    # (1 / score) against 1, so its wins are the cases that beat the reference.
    paired = compare_pairs(1.0 / values, np.ones_like(values))
    return MeanScore(
        value=1.0 / paired.ratio,
        cases=len(scores),
        infeasible=infeasible,
        ci_low=_finite(1.0 / paired.ci_high),
        ci_high=_finite(1.0 / paired.ci_low),
        wins=paired.wins,
        losses=paired.losses,
        ties=paired.ties,
        note=paired.ci_note,
    )


@contextmanager
def _about(case: Case) -> Iterator[None]:
    """Prefix the case's name to a placerl error raised inside, keeping its type."""
    try:
        yield
    except PlaceRLError as err:
        raise type(err)(f"case {case.name!r}: {err}") from err


def _ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator > 0 else None


def _gap(runtime: float, bound: float | None) -> float | None:
    if bound is None or bound <= 0:
        return None
    return runtime / bound - 1.0


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None
