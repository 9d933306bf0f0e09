"""Objective lower bounds: below every placement's runtime, and tight where they should be."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from placerl.sim import LOWER_BOUNDS, OBJECTIVES, CostModel, lower_bound
from placerl.sim.model import register_objective
from tests.sim.test_simulate import cluster, clusters, critical_path, graph
from tests.strategies import dags


@pytest.mark.parametrize("objective", ["step_time", "pipeline"])
@given(g=dags(with_kinds=True), c=clusters(), data=st.data())
def test_no_placement_runs_below_the_bound(objective, g, c, data):
    model = CostModel(g, c, objective)
    placement = data.draw(
        st.lists(st.integers(0, c.num_devices - 1), min_size=g.num_nodes, max_size=g.num_nodes)
    )
    assert model.runtime(placement) >= lower_bound(model) * (1 - 1e-12)


@given(g=dags(with_kinds=True), c=clusters())
def test_step_time_bound_is_the_critical_path_or_the_even_split(g, c):
    model = CostModel(g, c)
    fastest = model.durations.min(axis=1)
    expected = max(critical_path(g, model.durations), fastest.sum() / c.num_devices)
    assert lower_bound(model) == pytest.approx(expected)


def test_a_chain_on_one_device_reaches_the_step_time_bound():
    chain = graph({"a": 1.0, "b": 2.0, "c": 3.0}, [("a", "b"), ("b", "c")])
    model = CostModel(chain, cluster(2))
    assert lower_bound(model) == 6.0 == model.runtime(np.zeros(3, dtype=int))


def test_wide_work_bounds_step_time_by_the_even_split():
    independent = graph({name: 1.0 for name in "abcd"})
    model = CostModel(independent, cluster(2))
    assert lower_bound(model) == 2.0 == model.runtime(np.array([0, 0, 1, 1]))


def test_the_pipeline_bound_is_the_even_split_or_the_largest_node():
    model = CostModel(graph({"a": 5.0, "b": 1.0, "c": 1.0}), cluster(3), "pipeline")
    assert lower_bound(model) == 5.0 == model.runtime(np.array([0, 1, 2]))
    model = CostModel(graph({"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}), cluster(2), "pipeline")
    assert lower_bound(model) == 2.0


def test_an_objective_without_a_bound_has_none():
    with OBJECTIVES.scope():
        register_objective("constant")(lambda model, placement, times: None)
        model = CostModel(graph({"a": 1.0}), cluster(1), "constant")
        assert "constant" not in LOWER_BOUNDS
        assert lower_bound(model) is None
