"""placerl.bench.run: one record per case, simulator calls counted, resumable, failures kept."""

from __future__ import annotations

import json

import numpy as np
import pytest

from placerl.bench import load_suite
from placerl.bench.case import Case
from placerl.bench.run import (
    RECORD_FIELDS,
    count_evaluations,
    record_path,
    run_case,
    run_cases,
)
from placerl.errors import ConfigError
from placerl.graph import load_graph
from placerl.sim import CostModel

STEP = Case(
    "mine/layered-n20",
    "mine",
    "test",
    "synthetic:layered?n=20&seed=1",
    "placeto?n_devices=3",
    "step_time",
)


def test_a_record_holds_every_field_and_is_written_under_the_case_name(tmp_path):
    case = load_suite("placebench-v1").select("tiny", "test")[0]
    record = run_case(case, "heft", tmp_path)
    assert set(RECORD_FIELDS) <= set(record) and record["error"] is None
    assert (record["suite"], record["case"], record["placer"]) == (
        "placebench-v1",
        case.name,
        "heft",
    )
    assert record["feasible"] and record["score"] > 0 and record["optimum_gap"] is not None
    assert record["reference"]["placer"] in ("heft", "m_etf", "m_sct")
    assert {"command", "machine", "date", "git_revision"} <= set(record["provenance"])
    path = tmp_path / f"{case.name.replace('/', '__')}.json"
    assert path == record_path(tmp_path, case) and json.loads(path.read_text()) == record


PIPE = Case(
    "mine/chain-n24",
    "mine",
    "test",
    "synthetic:chain?n=24&seed=8",
    "homogeneous?n_devices=3",
    "pipeline",
)


@pytest.mark.parametrize("case", [STEP, PIPE], ids=["step_time", "pipeline"])
def test_simulator_calls_are_what_the_placer_spent_its_start_included(case):
    """Counted at the source (the cost model, pipeline's incremental moves), whatever the
    reference cache holds: the same placer gives the same count, cold or warm."""
    from placerl.baselines import solve

    assert run_case(case, "heft")["simulator_calls"] == 0
    search = solve(
        "local_search", case.graph, case.cluster, case.objective, init="heft", max_evaluations=50
    )
    calls = run_case(case, "local_search?init=heft&max_evaluations=50")["simulator_calls"]
    assert 0 < calls == search.info["evaluations"] <= 50  # what it reports, at most its budget
    started = run_case(case, "local_search?init=m_etf&max_evaluations=50")["simulator_calls"]
    assert started == calls  # another start placer: the same climb here, the same count


def test_count_evaluations_counts_single_and_batched_evaluations():
    model = CostModel(load_graph(STEP.graph), STEP.cluster)
    zeros = np.zeros(model.graph.num_nodes, dtype=int)
    with count_evaluations() as counted:
        model.evaluate(zeros)
        model.evaluate_batch(np.stack([zeros, zeros, zeros]))
    assert counted.calls == 4
    model.evaluate(zeros)
    assert counted.calls == 4  # the count stops with the block


def test_run_cases_resumes_from_the_records_there(tmp_path, monkeypatch):
    first = run_cases("placebench-v1", "tiny", "test", "heft", tmp_path, progress=False)
    assert len(first) == 16 and len(list(tmp_path.glob("tiny__*.json"))) == 16

    def fail(*args, **kwargs):
        raise AssertionError("a finished case ran again")

    monkeypatch.setattr("placerl.bench.run.run_case", fail)
    assert run_cases("placebench-v1", "tiny", "test", "heft", tmp_path, progress=False) == first
    with pytest.raises(ConfigError, match=r"placer .heft.*its own folder"):
        run_cases("placebench-v1", "tiny", "test", "random", tmp_path, progress=False)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("placebench-v9", "tiny", "test", "heft"), "known: placebench-v1"),
        (("placebench-v1", "huge", "test", "heft"), "no tier 'huge'; known: tiny"),
        (("placebench-v1", "tiny", "exam", "heft"), "unknown split 'exam'; known: train"),
        (("placebench-v1", "tiny", "test", "hefty"), "hefty"),
        (("placebench-v1", "tiny", "test", "local_search?budget=3"), "budget"),
    ],
)
def test_bad_input_fails_before_any_work_listing_the_known_values(tmp_path, args, message):
    with pytest.raises(ConfigError, match=message):
        run_cases(*args, tmp_path, progress=False)
    assert not list(tmp_path.iterdir())


def test_a_dataset_file_that_is_not_a_graph_fails_alone(tmp_path):
    from placerl.bench import folder_suite

    data = tmp_path / "data"
    data.mkdir()
    load_graph("synthetic:layered?n=12&seed=1").save(data / "good.json")
    (data / "bad.json").write_text('{"x": 1}')
    suite = folder_suite(data, "homogeneous?n_devices=3")
    records = {
        r["case"]: r
        for r in run_cases(suite, None, "test", "heft", tmp_path / "out", progress=False)
    }
    assert records["data/good"]["error"] is None and records["data/good"]["score"] == 1.0
    bad = records["data/bad"]
    assert "GraphError" in bad["error"] and "bad.json" in bad["error"]
    assert bad["score"] is None and set(RECORD_FIELDS) <= set(bad)


def test_the_trace_is_the_anytime_curve_ending_at_the_placement_scored():
    case = load_suite("placebench-v1").case("tiny/chain-n24-s9")
    record = run_case(case, "local_search?init=heft&max_evaluations=300")
    calls, seconds, best = zip(*record["trace"], strict=True)
    assert list(calls) == sorted(calls) and calls[-1] <= record["simulator_calls"]
    assert list(seconds) == sorted(seconds) and seconds[-1] <= record["wall_s"]
    assert list(best) == sorted(best, reverse=True) and len(set(best)) == len(best)
    assert best[-1] == record["runtime"]
    heft = run_case(case, "heft")  # places without a simulation: one point, at 0 calls
    assert [point[0] for point in heft["trace"]] == [0]
    assert heft["trace"][0][2] == heft["runtime"]


def test_a_training_that_searched_the_case_starts_the_trace_with_its_improvements():
    case = load_suite("placebench-v1").case("tiny/chain-n24-s9")
    heft = run_case(case, "heft")["runtime"]
    training = {"seed": 0, "simulator_calls": 100, "wall_s": 2.0}
    worse = [[10, 0.5, 3 * heft], [20, 0.7, 3 * heft], [40, 1.0, 2 * heft]]
    record = run_case(case, "heft", training={**training, "trace": worse})
    assert record["trace"][:2] == [[10, 0.5, 3 * heft], [40, 1.0, 2 * heft]]  # improvements
    assert record["trace"][2] == [100, pytest.approx(2.0 + record["wall_s"]), heft]  # placer's
    better = [*worse, [60, 1.5, heft / 2]]  # the training found better: the placer adds none
    record = run_case(case, "heft", training={**training, "trace": better})
    assert [p[0] for p in record["trace"]] == [10, 40, 60]
    assert [p[0] for p in run_case(case, "heft", training=training)["trace"]] == [100]
