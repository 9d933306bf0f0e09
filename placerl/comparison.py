"""Paired comparison of two settings (e.g. two traversal orders) on the same graphs and seeds.

Runtimes compare as ratios, so everything here works on log ratios: the geometric-mean ratio,
a bootstrap 95% interval over the pairs, wins and losses, and the Wilcoxon signed-rank test.
A difference is claimed only when the interval excludes 1 *and* the test gives p < 0.05, and
where no difference shows, the verdict says how many pairs a difference of the observed size
(at least 1%) would need. Every missing statistic carries its reason.

The summaries of one setting's values live here too, so that the benchmarks and reports
share them: :func:`t_interval` (the mean), :func:`geometric_mean` and
:func:`geometric_interval` (ratios, averaged on the log scale).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Two-sided level of the interval and the test.
ALPHA = 0.05
#: The exact two-sided signed-rank test cannot reach p < 0.05 with fewer pairs (2 / 2**5).
MIN_TEST_PAIRS = 6
#: The smallest difference the "pairs needed" estimate aims at.
SMALLEST_EFFECT = 0.01
#: Power of the "pairs needed" estimate.
POWER = 0.8


@dataclass(frozen=True)
class PairedComparison:
    """A candidate's runtimes against a reference's on the same pairs.

    Attributes:
        pairs: Paired runs.
        ratio: Geometric mean of candidate / reference runtime (below 1: candidate faster).
        ci_low, ci_high: Bootstrap 95% percentile interval of ``ratio`` over the pairs
            (``nan`` under 2 pairs, with ``ci_note`` saying so).
        wins, losses, ties: Pairs where the candidate is faster, slower, equal.
        p_value: Two-sided Wilcoxon signed-rank p-value (``nan`` with ``p_note`` saying why).
        pairs_needed: Pairs that would detect a difference of the observed size (at least
            1%) with 80% power; ``None`` where it cannot be estimated.
    """

    pairs: int
    ratio: float
    ci_low: float
    ci_high: float
    wins: int
    losses: int
    ties: int
    p_value: float
    ci_note: str = ""
    p_note: str = ""
    pairs_needed: int | None = None

    @property
    def excludes_one(self) -> bool:
        """The bootstrap interval lies wholly below or above 1."""
        return bool(self.ci_high < 1 or self.ci_low > 1)

    @property
    def significant(self) -> bool:
        """The interval excludes 1 and the test rejects equality at 5%."""
        return bool(self.excludes_one and self.p_value < ALPHA)

    def verdict(self, candidate: str, reference: str) -> str:
        """One sentence: which is faster by how much, or why no difference can be claimed."""
        if self.pairs == 0:
            return f"{candidate} and {reference} never ran on the same graph and seed"
        if self.ties == self.pairs:
            return (
                f"{candidate} and {reference} give the same runtime in all {self.pairs} "
                "pairs: the order does not matter here"
            )
        interval = f"95% CI [{self.ci_low:.3f}, {self.ci_high:.3f}]"
        if self.significant:
            faster = self.ratio < 1
            wins = self.wins if faster else self.losses
            tail = (
                f"{'faster' if faster else 'slower'} in {wins} of {self.pairs} pairs "
                f"(Wilcoxon p = {self.p_value:.2g})"
            )
            if self.ratio >= 2:  # "250% slower" reads worse than a factor
                return (
                    f"{candidate}'s placements take {self.ratio:.2f}x {reference}'s runtime, "
                    f"95% CI [{self.ci_low:.2f}x, {self.ci_high:.2f}x], {tail}"
                )
            change = abs(1 - self.ratio)
            bounds = sorted(abs(1 - b) for b in (self.ci_low, self.ci_high))
            return (
                f"{candidate} is {change:.1%} {'faster' if faster else 'slower'} than "
                f"{reference}, 95% CI [{bounds[0]:.1%}, {bounds[1]:.1%}], {tail}"
            )
        if self.excludes_one and self.pairs < MIN_TEST_PAIRS:
            direction = "faster" if self.ratio < 1 else "slower"
            return (
                f"{candidate} looks {abs(1 - self.ratio):.1%} {direction} than {reference} "
                f"({interval}), but {self.pairs} pairs are too few to confirm it (the "
                f"signed-rank test needs {MIN_TEST_PAIRS})"
            )
        text = (
            f"no difference between {candidate} and {reference} detectable with "
            f"{self.pairs} pair{'s' * (self.pairs > 1)} (ratio {self.ratio:.3f}"
            + (f", {interval}" if not self.ci_note else "")
            + ")"
        )
        if self.excludes_one:  # the interval alone would call it
            text += (
                f"; the interval excludes 1 but the signed-rank test does not confirm it "
                f"(p = {self.p_value:.2g})"
            )
        if self.pairs_needed is not None:
            small = abs(math.log(self.ratio)) < math.log1p(SMALLEST_EFFECT)
            target = f"a {SMALLEST_EFFECT:.0%} difference" if small else "a ratio this far from 1"
            text += f"; about {self.pairs_needed} pairs would detect {target}"
        else:
            text += "; more pairs are needed to estimate the spread"
        return text


def compare_pairs(
    candidate: np.ndarray, reference: np.ndarray, *, resamples: int = 4000, seed: int = 0
) -> PairedComparison:
    """Compare paired positive runtimes (``candidate[i]`` and ``reference[i]`` share a graph
    and seed).

    Args:
        candidate: Runtimes of the setting under test.
        reference: Runtimes of the reference, in the same order.
        resamples: Bootstrap resamples of the pairs.
        seed: Seed of the bootstrap (the report is reproducible).

    Raises:
        ValueError: The arrays differ in length or hold a runtime that is not positive.
    """
    candidate, reference = np.asarray(candidate, float), np.asarray(reference, float)
    if candidate.shape != reference.shape or candidate.ndim != 1:
        raise ValueError(
            f"paired runtimes must be two 1-D arrays of one length; got shapes "
            f"{candidate.shape} and {reference.shape}"
        )
    if not (np.all(candidate > 0) and np.all(reference > 0)):
        raise ValueError("paired runtimes must be positive and finite numbers")
    logs = np.log(candidate) - np.log(reference)  # exactly antisymmetric, unlike log(c / r)
    n = len(logs)
    counts = {
        "wins": int((logs < 0).sum()),
        "losses": int((logs > 0).sum()),
        "ties": int((logs == 0).sum()),
    }
    if n == 0:
        return PairedComparison(
            0,
            math.nan,
            math.nan,
            math.nan,
            **counts,
            p_value=math.nan,
            ci_note="no pairs",
            p_note="no pairs",
        )
    low, high, ci_note = _bootstrap(logs, resamples, seed)
    p_value, p_note = _signed_rank(logs)
    return PairedComparison(
        n,
        float(np.exp(logs.mean())),
        low,
        high,
        **counts,
        p_value=p_value,
        ci_note=ci_note,
        p_note=p_note,
        pairs_needed=_pairs_needed(logs),
    )


def _bootstrap(logs: np.ndarray, resamples: int, seed: int) -> tuple[float, float, str]:
    if len(logs) < 2:
        return math.nan, math.nan, "one pair: no interval"
    rng = np.random.default_rng(seed)
    means = logs[rng.integers(len(logs), size=(resamples, len(logs)))].mean(axis=1)
    low, high = np.exp(np.quantile(means, [ALPHA / 2, 1 - ALPHA / 2]))
    return float(low), float(high), ""


def _signed_rank(logs: np.ndarray) -> tuple[float, str]:
    from scipy import stats

    nonzero = int((logs != 0).sum())
    if nonzero == 0:
        return math.nan, "every pair ties"
    if len(logs) < MIN_TEST_PAIRS:
        return math.nan, (
            f"{len(logs)} pairs: the signed-rank test needs {MIN_TEST_PAIRS} to reach p < 0.05"
        )
    return float(stats.wilcoxon(logs).pvalue), ""


def _pairs_needed(logs: np.ndarray) -> int | None:
    """Pairs for a paired test of the log ratios to detect the observed effect (at least 1%)
    at 5% with 80% power (normal approximation)."""
    from scipy import stats

    if len(logs) < 2 or logs.std(ddof=1) == 0:
        return None
    effect = max(abs(logs.mean()), math.log1p(SMALLEST_EFFECT))
    z = stats.norm.ppf(1 - ALPHA / 2) + stats.norm.ppf(POWER)
    return max(MIN_TEST_PAIRS, math.ceil((z * logs.std(ddof=1) / effect) ** 2))


def t_interval(values: np.ndarray, floor: float = -math.inf) -> tuple[float, float]:
    """Student-t 95% interval of the mean of ``values`` (``nan`` bounds for fewer than two),
    its low end raised to ``floor`` where the mean cannot lie below it (0 for runtimes: with
    two seeds the plain interval of a positive mean can reach below zero; the part cut off
    holds no possible mean, so the coverage is unchanged)."""
    from scipy import stats

    values = np.asarray(values, float)
    if len(values) < 2:
        return math.nan, math.nan
    mean = float(values.mean())
    half = float(
        stats.t.ppf(1 - ALPHA / 2, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values))
    )
    return max(mean - half, floor), mean + half


def geometric_mean(values: np.ndarray) -> float:
    """The geometric mean of positive ``values`` (ratios and runtimes average on the log
    scale: a 2x and a 0.5x cancel out); ``nan`` for none."""
    values = np.asarray(values, float)
    return float(np.exp(np.log(values).mean())) if len(values) else math.nan


def geometric_interval(values: np.ndarray) -> tuple[float, float]:
    """Student-t 95% interval of the geometric mean of positive ``values``: the
    :func:`t_interval` of their logs, mapped back (``nan`` bounds for fewer than two)."""
    low, high = t_interval(np.log(np.asarray(values, float)))
    return math.exp(low), math.exp(high)
