"""placerl.bench.anytime: the best score within a budget, over a row's cases."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from placerl.bench.anytime import anytime_curve, plot_anytime


def _record(reference, trace):
    return {"reference": {"runtime": reference}, "trace": trace}


RECORDS = [
    _record(2.0, [[0, 0.1, 4.0], [10, 0.5, 2.0], [50, 1.0, 1.0]]),
    _record(1.0, [[5, 0.2, 1.0]]),
]


@pytest.mark.parametrize(
    ("axis", "grid", "expected"),
    [
        (
            "calls",
            [0, 4, 5, 10, 49, 50, 1000],
            [math.nan, math.nan, math.sqrt(0.5), 1.0, 1.0, math.sqrt(2.0), math.sqrt(2.0)],
        ),
        (
            "seconds",
            [0.0, 0.1, 0.2, 0.5, 2.0],
            [math.nan, math.nan, math.sqrt(0.5), 1.0, math.sqrt(2.0)],
        ),
    ],
)
def test_the_curve_is_the_geometric_mean_of_the_best_score_within_each_budget(axis, grid, expected):
    curve = anytime_curve(RECORDS, axis, np.array(grid, dtype=float))
    np.testing.assert_allclose(curve, expected)  # nan until every case has a placement


def test_a_record_without_a_trace_leaves_the_curve_undefined():
    curve = anytime_curve([*RECORDS, _record(1.0, [])], "calls", np.array([100.0]))
    assert np.isnan(curve).all()
    with pytest.raises(KeyError):
        anytime_curve(RECORDS, "episodes", np.array([1.0]))


def test_the_plot_is_a_png(tmp_path):
    path = plot_anytime({"a": RECORDS, "b": RECORDS[:1]}, tmp_path / "a.png", "tiny")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_labels_keep_what_tells_two_specs_of_a_placer_apart():
    from placerl.bench.anytime import short_labels

    specs = [
        "heft",
        "local_search?init=best_of",
        "local_search?init=best_of&max_evaluations=1000",
        "local_search?init=best_of&max_evaluations=10000",
        "recipe:placeto[total_steps=8]",
    ]
    assert list(short_labels(specs).values()) == [
        "heft",
        "local_search",
        "local_search max_evaluations=1000",
        "local_search max_evaluations=10000",
        "recipe:placeto[total_steps=8]",
    ]


def _png_size(path):
    """A PNG's width and height in pixels, from its header."""
    header = path.read_bytes()[16:24]
    return int.from_bytes(header[:4], "big"), int.from_bytes(header[4:], "big")


def test_the_figure_grows_with_its_legend_so_that_its_layout_fits(tmp_path):
    few = plot_anytime({"a": RECORDS, "b": RECORDS[:1]}, tmp_path / "few.png", "tiny")
    many = {f"recipe:x[total_steps={n},{'env.moves=64,' * 8}]": RECORDS for n in range(30)}
    with warnings.catch_warnings():
        # matplotlib's sign that the legend left the panels no room
        warnings.filterwarnings("error", message="Tight layout not applied")
        crowded = plot_anytime(many, tmp_path / "many.png", "tiny")
    (width, short), (same_width, tall) = _png_size(few), _png_size(crowded)
    assert same_width == width and tall > short + 30 * 0.15 * 110  # a line per long label
