"""The measured objective: a cost model like the others, cached, budgeted, failure-proof."""

import math

import numpy as np
import pytest
import torch

from placerl.errors import ConfigError, MeasurementError
from placerl.graph.torch_import import from_module
from placerl.measure import bind
from placerl.measure.objective import MeasureOptions, session
from placerl.sim import OBJECTIVES, CostModel, parse_objective, penalized_runtime
from tests.measure.conftest import RESNET
from tests.measure.models import FAULT_ENV, Faulty


def test_measured_is_a_registered_objective():
    assert "measured" in OBJECTIVES
    name, options = parse_objective("measured?repeats=2&budget=5")
    assert name == "measured" and options == MeasureOptions(repeats=2, budget=5)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("measured?repeats=0", "'repeats' must be >= 1"),
        ("measured?time_budget=0", "'time_budget' must be finite and > 0"),
        ("measured?timeout=inf", "'timeout' must be finite and > 0"),
        ("measured?speed=2", r"unknown option\(s\) speed for objective 'measured'"),
        ("measured?repeats=two", "repeats"),
        ("step_time?repeats=2", "objective 'step_time' takes no options"),
        ("wallclock", "unknown objective 'wallclock'"),
    ],
)
def test_bad_objective_specs(spec, message):
    with pytest.raises(ConfigError, match=message):
        parse_objective(spec)
    with pytest.raises(ConfigError, match=message):
        CostModel(RESNET, "local", spec)


def test_results_are_measured_once_per_placement():
    spec = "measured?warmup=0&repeats=1&timeout=59"  # a session of its own in this process
    model = CostModel(RESNET, "local", spec)
    placement = np.arange(model.graph.num_nodes) % 2
    first = model.evaluate(placement)
    again = model.evaluate(placement)
    state = session(model)
    assert again is first and (state.measured, state.hits) == (1, 1)
    assert first.objective == spec and first.feasible
    assert first.runtime > 0 and first.start is not None
    assert model.evaluate(np.zeros(model.graph.num_nodes, dtype=int), times=False).start is None


def test_past_the_budget_placements_are_simulated():
    model = CostModel(RESNET, "local", "measured?warmup=0&repeats=1&budget=1")
    rng = np.random.default_rng(0)
    model.evaluate(rng.integers(0, 2, model.graph.num_nodes))
    with pytest.warns(UserWarning, match="measurement budget spent"):
        later = model.evaluate(rng.integers(0, 2, model.graph.num_nodes))
    assert later.objective == "step_time" and session(model).simulated == 1


def test_infeasible_placements_are_not_run():
    model = CostModel(RESNET, "local?workers=2", "measured?warmup=0&repeats=1")
    tiny = model.graph.arrays.mem_bytes.sum() / 4
    from placerl.cluster import Cluster, Device

    cluster = Cluster(tuple(Device(f"cpu:{i}", "cpu", memory=tiny) for i in range(2)))
    model = CostModel(RESNET, cluster, "measured?warmup=0&repeats=1")
    result = model.evaluate(np.zeros(model.graph.num_nodes, dtype=int))
    assert not result.feasible and session(model).measured == 0


@pytest.fixture()
def faulty(tmp_path, monkeypatch):
    """A bound module that fails inside workers when ``fault.write_text(kind)`` says so."""
    fault = tmp_path / "fault"
    monkeypatch.setenv(FAULT_ENV, str(fault))
    torch.manual_seed(0)
    module, x = Faulty(), torch.randn(2, 8)
    graph = bind(from_module(module, (x,), granularity="module"), module, (x,))
    return graph, fault


@pytest.mark.parametrize("kind", ["crash", "oom"])
def test_failures_are_infeasible_and_the_workers_restart(faulty, kind):
    graph, fault = faulty
    model = CostModel(graph, "local", "measured?warmup=0&repeats=1&timeout=3")
    fault.write_text(kind)
    failed = model.evaluate(np.array([0, 0, 1, 1]))
    assert not failed.feasible and math.isinf(failed.runtime)
    expected = {"crash": "died", "oom": "not enough memory"}[kind]
    assert expected in failed.errors[0] and expected in failed.reasons[0]
    assert penalized_runtime(failed, 1.0) > 1.0
    fault.write_text("")
    recovered = model.evaluate(np.array([0, 1, 1, 1]))
    assert recovered.feasible and math.isfinite(recovered.runtime)
    assert session(model).failed == 1


def test_a_hung_worker_ends_the_measurement_with_an_error(faulty):
    from placerl.measure import Measurer

    graph, fault = faulty
    with Measurer(graph, "local", warmup=0, repeats=1, timeout=2) as measurer:
        fault.write_text("hang")
        with pytest.raises(MeasurementError, match=r"worker \d did not finish run within 2 s"):
            measurer.measure([0, 0, 0, 0])
        fault.write_text("")
        assert measurer.measure([0, 1, 0, 1]).runtime > 0
