"""The table the apps print: words for rows, footnotes for specs, infeasible marked."""

import pytest

pytest.importorskip("rich", reason="the rl extra is not installed")

from placerl.results import EvalResult, GraphOutcome, TrainResult
from placerl.summary import LOWER_BOUND_ROW, summary_table

ILS = "local_search?init=best_of&restarts=1000000&max_evaluations={steps}&time_limit=600"


def _outcome(**changes) -> GraphOutcome:
    values = {
        "graph": "g",
        "final_runtime": 1e-3,
        "sampled_runtime": 1e-3,
        "best_runtime": 0.9e-3,
        "best_placement": [0],
        "baselines": {"heft": 1.1e-3},
    }
    return GraphOutcome(**{**values, **changes})


def _rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("│ g")]


def test_the_table_names_the_weights_it_shows_and_the_last_ones_beside_them():
    curve = [
        {"step": 0, "runtimes": [1.2e-3]},
        {"step": 2000, "runtimes": [1e-3]},
        {"step": 4096, "runtimes": [1.5e-3]},
    ]
    kept = TrainResult({}, [_outcome()], curve, 4096, {"train": 3.0}, policy_step=2000)
    text = summary_table(kept)
    assert "policy (greedy, weights of step 2,000)" in text
    assert "policy (last weights, step 4,096)" in text and "1.500" in text
    heft = next(line for line in _rows(text) if "│ heft" in line)
    assert "1.222x" in heft  # over the best placement found (0.9), not the greedy pass (1.0)
    last = TrainResult({}, [_outcome()], curve, 4096, {"train": 3.0}, policy_step=4096)
    assert "last weights" not in summary_table(last)
    assert "lower bound" not in text  # none given
    assert "4,096 steps, 3 s of training" in text and "warm start" not in text
    cloned = TrainResult(
        {}, [_outcome()], curve, 4096, {"train": 3.0, "warm_start": 108.4}, policy_step=4096
    )
    assert "3 s of training after 108 s of warm start" in summary_table(cloned)


def test_the_table_shows_the_lower_bound_first():
    result = TrainResult({}, [_outcome(lower_bound=0.8e-3)], [], 64, {"train": 1.0}, policy_step=64)
    rows = _rows(summary_table(result))
    assert LOWER_BOUND_ROW in rows[0] and "0.800" in rows[0] and "0.889x" in rows[0]


def test_rows_are_words_and_specs_go_to_footnotes():
    baselines = {"single_device": 3e-3, "local_search?init=best_of": 0.95e-3, ILS: 0.92e-3}
    result = TrainResult(
        {}, [_outcome(baselines=baselines)], [], 20480, {"train": 1.0}, policy_step=20480
    )
    text = summary_table(result)
    labels = [row.split("│")[2].strip() for row in _rows(text)]
    assert "single device" in labels and "local search [1]" in labels
    assert "local search, equal budget [2]" in labels
    assert "{steps}" not in "".join(labels) and "?" not in "".join(labels)
    assert "[1] local_search?init=best_of" in text and f"[2] {ILS}" in text
    assert "{steps}: the 20,480 env steps the run trained" in text


def test_an_infeasible_baseline_is_marked_not_given_a_penalty_runtime():
    outcome = _outcome(
        baselines={"heft": 1.1e-3, "single_device": 1664.708e-3},
        infeasible={"single_device": "memory"},
    )
    text = summary_table(TrainResult({}, [outcome], [], 64, {"train": 1.0}, policy_step=64))
    row = next(line for line in _rows(text) if "single device" in line)
    assert "infeasible (memory)" in row and "1664" not in row and "x" not in row.split("│")[4]
    assert "single device" in _rows(text)[-1]  # after every placement that fits


def test_an_evaluation_names_its_placer_in_words():
    result = EvalResult({"placer": "local_search?init=heft"}, [_outcome()], {"evaluate": 1.0})
    text = summary_table(result)
    assert "placerl-eval: local search [1]" in text and "[1] local_search?init=heft" in text
    assert "1.100x" in next(line for line in _rows(text) if "heft" in line)


def test_no_speedup_is_given_over_a_placement_that_does_not_fit():
    outcome = _outcome(final_infeasible="memory", lower_bound=0.5e-3)
    text = summary_table(EvalResult({"placer": "heft"}, [outcome], {"evaluate": 1.0}))
    rows = _rows(text)
    assert any("heft (evaluated)" in r and "infeasible (memory)" in r for r in rows)
    assert all(r.rstrip(" │").endswith("-") for r in rows)  # nothing to divide by
