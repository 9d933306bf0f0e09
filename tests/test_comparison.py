"""Paired comparisons: intervals, tests, verdicts and their reasons."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placerl.comparison import compare_pairs, geometric_interval, geometric_mean, t_interval

REFERENCE = np.array([2.0, 2.2, 1.8, 2.1, 1.9, 2.0, 2.3, 1.7, 2.05, 1.95])


def test_a_clear_difference_is_stated_with_its_interval_and_wins():
    result = compare_pairs(0.9 * REFERENCE * np.linspace(0.99, 1.01, 10), REFERENCE)
    assert result.pairs == 10 and result.wins == 10 and result.significant
    assert result.ci_low < result.ratio < result.ci_high < 1
    assert result.p_value == pytest.approx(2 / 2**10)  # exact test: all ten pairs one way
    verdict = result.verdict("dfs_preorder", "topo")
    assert verdict.startswith("dfs_preorder is 10.0% faster than topo, 95% CI [")
    assert verdict.endswith("faster in 10 of 10 pairs (Wilcoxon p = 0.002)")


def test_a_several_times_slower_candidate_is_given_as_a_factor():
    verdict = compare_pairs(3.0 * REFERENCE, REFERENCE).verdict("alpha", "topo")
    assert verdict.startswith(
        "alpha's placements take 3.00x topo's runtime, 95% CI [3.00x, "
        "3.00x], slower in 10 of 10 pairs"
    )


def test_a_slower_candidate_is_called_slower():
    verdict = compare_pairs(1.2 * REFERENCE, REFERENCE).verdict("bfs", "topo")
    assert verdict.startswith("bfs is 20.0% slower than topo, 95% CI [20.0%, 20.0%]")
    assert "slower in 10 of 10 pairs" in verdict


def test_noise_is_not_called_a_difference_and_the_pairs_needed_are_given():
    noise = np.array([1.02, 0.97, 1.01, 0.99, 1.03, 0.98, 1.0, 1.01, 0.99, 1.0])
    result = compare_pairs(REFERENCE * noise, REFERENCE)
    assert not result.significant and result.ci_low < 1 < result.ci_high
    assert result.pairs_needed is not None and result.pairs_needed > 10
    assert result.verdict("bfs", "topo").startswith(
        "no difference between bfs and topo detectable with 10 pairs (ratio 1.000, 95% CI [0.98"
    )
    assert result.verdict("bfs", "topo").endswith(
        f"; about {result.pairs_needed} pairs would detect a 1% difference"
    )


def test_an_interval_the_test_does_not_confirm_is_named():
    # five large wins, five small losses: the mean moves, the signed ranks barely do
    candidate = REFERENCE * np.exp([-0.08] * 5 + [0.01, 0.011, 0.012, 0.013, 0.014])
    result = compare_pairs(candidate, REFERENCE)
    assert result.ci_high < 1 and result.p_value >= 0.05 and not result.significant
    assert "; the interval excludes 1 but the signed-rank test does not confirm it (p = " in (
        result.verdict("bfs", "topo")
    )


def test_an_interval_alone_does_not_decide_under_six_pairs():
    result = compare_pairs(0.5 * REFERENCE[:5], REFERENCE[:5])
    assert result.ci_high < 1 and math.isnan(result.p_value) and not result.significant
    assert result.p_note == "5 pairs: the signed-rank test needs 6 to reach p < 0.05"
    assert result.verdict("bfs", "topo") == (
        "bfs looks 50.0% faster than topo (95% CI [0.500, "
        "0.500]), but 5 pairs are too few to confirm it "
        "(the signed-rank test needs 6)"
    )


def test_one_pair_has_no_interval_and_says_so():
    result = compare_pairs([1.0], [2.0])
    assert math.isnan(result.ci_low) and result.ci_note == "one pair: no interval"
    assert result.pairs_needed is None
    assert result.verdict("bfs", "topo") == (
        "no difference between bfs and topo detectable "
        "with 1 pair (ratio 0.500); more pairs are needed "
        "to estimate the spread"
    )


def test_ties_and_no_pairs_have_their_own_verdicts():
    ties = compare_pairs(REFERENCE, REFERENCE)
    assert ties.p_note == "every pair ties" and ties.ties == 10
    assert ties.verdict("bfs", "topo") == (
        "bfs and topo give the same runtime in all 10 pairs: the order does not matter here"
    )
    empty = compare_pairs([], [])
    assert empty.pairs == 0 and empty.p_note == "no pairs"
    assert empty.verdict("bfs", "topo") == "bfs and topo never ran on the same graph and seed"


@pytest.mark.parametrize(
    ("candidate", "reference", "message"),
    [
        ([1.0, 2.0], [1.0], r"one length; got shapes \(2,\) and \(1,\)"),
        ([[1.0]], [[1.0]], r"two 1-D arrays"),
        ([1.0, -1.0], [1.0, 1.0], "must be positive and finite"),
        ([1.0, math.nan], [1.0, 1.0], "must be positive and finite"),
    ],
)
def test_bad_runtimes_are_refused(candidate, reference, message):
    with pytest.raises(ValueError, match=message):
        compare_pairs(candidate, reference)


runtimes = st.lists(st.floats(0.01, 100.0), min_size=2, max_size=12)


@settings(max_examples=30)  # drawn ties take scipy's exact permutation test
@given(runtimes, st.data())
def test_swapping_the_sides_inverts_the_ratio_and_its_interval(reference, data):
    candidate = data.draw(
        st.lists(st.floats(0.01, 100.0), min_size=len(reference), max_size=len(reference))
    )
    forward, backward = compare_pairs(candidate, reference), compare_pairs(reference, candidate)
    assert forward.ratio * backward.ratio == pytest.approx(1.0)
    assert forward.ci_low * backward.ci_high == pytest.approx(1.0)
    assert (forward.wins, forward.losses) == (backward.losses, backward.wins)
    assert forward.significant == backward.significant


@settings(max_examples=20)  # tied differences take scipy's exact permutation test (0.3 s)
@given(runtimes, st.floats(0.1, 10.0), st.floats(0.5, 2.0))
def test_the_ratio_is_scale_free_and_inside_its_interval(reference, scale, factor):
    candidate = [factor * r for r in reference]
    base = compare_pairs(candidate, reference)
    scaled = compare_pairs([scale * c for c in candidate], [scale * r for r in reference])
    assert scaled.ratio == pytest.approx(base.ratio)
    assert base.ratio == pytest.approx(factor)
    assert base.ci_low <= base.ratio * (1 + 1e-9) and base.ratio <= base.ci_high * (1 + 1e-9)


def test_the_t_interval_is_the_mean_plus_minus_t_times_the_standard_error():
    low, high = t_interval([1.0, 2.0, 3.0])
    half = 4.3027 * 1.0 / np.sqrt(3)  # t(0.975, 2), sample standard deviation 1
    assert (low, high) == pytest.approx((2.0 - half, 2.0 + half), rel=1e-4)
    assert all(math.isnan(b) for b in t_interval([5.0]))


def test_a_floor_cuts_the_low_end_only():
    """Two seeds' runtimes of 0.7 and 4.0 ms: the plain interval reaches below zero."""
    low, high = t_interval([0.7, 4.0])
    assert low < 0
    assert t_interval([0.7, 4.0], floor=0.0) == (0.0, high)
    assert t_interval([2.0, 3.0, 4.0], floor=0.0) == t_interval([2.0, 3.0, 4.0])  # above 0


def test_the_geometric_mean_averages_on_the_log_scale():
    assert geometric_mean([2.0, 0.5]) == pytest.approx(1.0)
    assert geometric_mean([1.0, 4.0, 16.0]) == pytest.approx(4.0)
    assert math.isnan(geometric_mean([]))


def test_the_geometric_interval_is_the_t_interval_of_the_logs_mapped_back():
    values = [0.9, 1.1, 1.3]
    low, high = geometric_interval(values)
    log_low, log_high = t_interval(np.log(values))
    assert (low, high) == pytest.approx((math.exp(log_low), math.exp(log_high)))
    assert low < geometric_mean(values) < high
    assert all(math.isnan(b) for b in geometric_interval([1.2]))
