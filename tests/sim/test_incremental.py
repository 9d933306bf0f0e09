"""Incremental pipeline loads equal a full evaluation after every move."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from placerl.cluster import Cluster, Device
from placerl.errors import PlacementError
from placerl.graph import CompGraph
from placerl.sim import CostModel, penalized_runtime, simulate
from placerl.sim.incremental import PipelineState
from tests.sim.test_simulate import assert_same
from tests.strategies import dags


@st.composite
def grouped(draw, graph):
    """``graph`` with some nodes in colocation groups."""
    groups = draw(
        st.lists(
            st.sampled_from([None, "x", "y"]), min_size=graph.num_nodes, max_size=graph.num_nodes
        )
    )
    nodes = [
        {**n.to_dict(), "mem_bytes": float(round(n.mem_bytes)), **({"group": g} if g else {})}
        for n, g in zip(graph.nodes, groups, strict=True)
    ]  # whole bytes: their sums are exact, so memory feasibility is decided exactly
    return CompGraph(nodes, [e.to_dict() for e in graph.edges], name="grouped")


def assert_close(state_result, full):
    """Equal up to rounding: loads are updated by adding and removing terms, so a load that
    should be 0 may be off by an ulp of the terms it had."""
    assert state_result.feasible == full.feasible
    assert state_result.split_groups == full.split_groups
    assert state_result.unsupported_nodes == full.unsupported_nodes
    assert state_result.runtime == pytest.approx(full.runtime, rel=1e-9)
    finite = np.where(np.isinf(full.busy), 0.0, full.busy)
    scale = 1e-12 * max(1.0, float(finite.sum() + full.comm.sum()))
    for field in ("busy", "comm", "memory", "peak_memory", "memory_excess"):
        np.testing.assert_allclose(
            getattr(state_result, field), getattr(full, field), rtol=1e-9, atol=scale, err_msg=field
        )


CLUSTER = Cluster(
    (Device("g0", "gpu", memory=3e6), Device("g1", "gpu", speed=2.0), Device("c", "cpu")),
    bandwidth=np.array([[1, 1e6, 2e6], [1e6, 1, 5e5], [2e6, 5e5, 1]]),
    latency=1e-4,
)


@given(g=dags(max_nodes=14, with_kinds=True), data=st.data())
def test_every_move_matches_a_full_evaluation(g, data):
    graph = data.draw(grouped(g))
    model = CostModel(graph, CLUSTER, "pipeline")
    n = graph.num_nodes
    placement = np.array(data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))
    state = model.incremental(placement)
    assert_close(state.result(), model.evaluate(placement))
    for node, device in data.draw(
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 2)), max_size=20)
    ):
        moved = state.placement.copy()
        moved[model.colocation_members()[node]] = device
        expected = model.evaluate(moved)
        feasible, runtime = state.try_move(node, device)
        assert feasible == expected.feasible
        assert runtime == pytest.approx(expected.runtime, rel=1e-9)
        assert state.move(node, device) == pytest.approx(expected.runtime, rel=1e-9)
        np.testing.assert_array_equal(state.placement, moved)
        assert_close(state.result(), expected)


def test_try_move_changes_nothing():
    model = CostModel("msr:bert24_inference", "msr:bert24_inference", "pipeline")
    state = model.incremental(np.zeros(32, dtype=int))
    before = state.result()
    state.try_move(5, 3)
    assert_same(state.result(), before)
    assert (state.placement == 0).all()
    with pytest.raises(ValueError, match="read-only"):
        state.placement[0] = 1


def test_step_time_has_no_incremental_state():
    assert CostModel("synthetic:chain?n=4", "gpu4_pcie").incremental(np.zeros(4, int)) is None


@pytest.mark.parametrize(
    ("move", "message"),
    [
        ((32, 0), "a move's node 32 is not in 0..31"),
        ((0, 7), "a move's device 7 is not in 0..6"),
        ((True, 0), "a move's node must be an integer, got True"),
        ((0, 1.0), "a move's device must be an integer, got 1.0"),
    ],
)
def test_bad_moves_are_named(move, message):
    state = CostModel("msr:bert24_inference", "msr:bert24_inference", "pipeline").incremental(
        np.zeros(32, dtype=int)
    )
    with pytest.raises(PlacementError, match=message):
        state.move(*move)


def test_only_pipeline_models_make_a_pipeline_state():
    with pytest.raises(PlacementError, match="needs a pipeline cost model"):
        PipelineState(CostModel("synthetic:chain?n=4", "gpu4_pcie"), np.zeros(4, int))


def test_refine_env_with_pipeline_reports_the_full_evaluation():
    from placerl.envs import PlacementRefineEnv

    env = PlacementRefineEnv(
        graph="msr:bert24_training",
        cluster="msr:bert24_training",
        objective="pipeline",
        init="uniform",
        passes=2,
    )
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(100):
        *_, info = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        full = simulate(env.case.graph, env.placement, env.cluster, "pipeline")
        expected = penalized_runtime(full, info["reference_runtime"])
        assert info["runtime"] == pytest.approx(expected, rel=1e-9)
        assert info["feasible"] == full.feasible


def test_no_op_moves_change_nothing_and_long_runs_stay_exact():
    model = CostModel("msr:bert24_training", "msr:bert24_training", "pipeline")
    rng = np.random.default_rng(0)
    state = model.incremental(np.zeros(64, dtype=int))  # groups whole; moves keep them whole
    for _ in range(3000):
        node, device = int(rng.integers(64)), int(rng.integers(7))
        before = state.runtime
        # A no-op changes nothing but the last bits a periodic re-sync may correct.
        assert state.move(node, int(state.placement[node])) == pytest.approx(before, rel=1e-14)
        state.move(node, device)
    assert state.runtime == pytest.approx(model.evaluate(state.placement).runtime, rel=1e-12)
