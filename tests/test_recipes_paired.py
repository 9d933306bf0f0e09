"""recipes_paired.py: two bench_recipes runs compared row for row."""

import pytest

from tests.bench_modules import module_fixture

bench = module_fixture("recipes_paired")


def row(seed, graph, method, runtime, recipe="improve"):
    return {"recipe": recipe, "seed": seed, "graph": graph, "method": method, "runtime": runtime}


def test_each_method_pairs_the_rows_both_runs_hold(bench):
    reference = [row(s, g, "zero-shot", 1.0) for s in range(3) for g in ("a", "b")]
    reference += [
        row(0, "a", "training-fit", 2.0),
        row(0, "c", "training-fit", 2.0),
        row(0, "a", "zero-shot", 9.0, recipe="classic"),
    ]
    candidate = [
        row(s, g, "zero-shot", 0.9 if g == "a" else 1.1) for s in range(3) for g in ("a", "b")
    ]
    candidate += [
        row(0, "a", "training-fit", 1.0),
        row(1, "a", "training-fit", 1.0),
        row(5, "z", "validation", 1.0),
    ]
    table = bench.paired(candidate, reference, "improve")
    assert [r["method"] for r in table] == ["zero-shot", "training-fit"]
    zero, fit = table
    assert (zero["pairs"], zero["faster"], zero["slower"], zero["equal"]) == (6, 3, 3, 0)
    assert zero["ratio"] == pytest.approx((0.9 * 1.1) ** 0.5, abs=1e-4)
    assert (fit["pairs"], fit["ratio"], fit["faster"]) == (1, 0.5, 1)  # only seed 0's "a"
    assert fit["ci95"] == "one pair: no interval"  # a missing statistic says why
    assert fit["p"].startswith("1 pairs: the signed-rank test needs")
    assert float(zero["p"]) > 0.05 and "-" in zero["ci95"]


def test_runs_without_common_rows_are_refused(bench):
    with pytest.raises(SystemExit, match=r"share no .* row of recipe 'improve'"):
        bench.paired([row(0, "a", "zero-shot", 1.0)], [row(1, "a", "zero-shot", 1.0)], "improve")


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            [{"seed": 0, "graph": "a", "method": "zero-shot", "runtime": 1.0}],
            "not a bench_recipes.py result: a row lacks recipe",
        ),
        (
            [row(0, "a", "zero-shot", 1.0), row(0, "a", "zero-shot", 2.0)],
            "two rows of recipe 'improve' for seed 0, graph 'a', method 'zero-shot'",
        ),
    ],
)
def test_rows_that_cannot_be_paired_are_refused(bench, rows, message):
    with pytest.raises(SystemExit, match=message):
        bench.paired(rows, [row(0, "a", "zero-shot", 1.0)], "improve")
