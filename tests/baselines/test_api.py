"""The one interface: every placer returns a valid, checked placement; bad input is named."""

import json
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placerl.baselines import (
    PLACERS,
    InfeasiblePlacementWarning,
    PlacementResult,
    place,
    register_placer,
    solve,
)
from placerl.baselines.split_model import ContractionCycleWarning
from placerl.cluster import Cluster, Device
from placerl.errors import ConfigError, PlacementError
from placerl.graph import CompGraph, load_graph
from tests.baselines.helpers import chain
from tests.strategies import dags

OBJECTIVES = ("step_time", "pipeline")
#: Placers that run without options (not ``policy``, which needs a model, whether or not the
#: plugin is loaded when the tests are collected).
STANDALONE = sorted(name for name, p in PLACERS.items() if p.standalone and p.decides == "device")
FAST_OPTIONS = {"local_search": {"time_limit": 2.0}, "tarnawski_dp": {"time_limit": 10.0}}


def run(name, graph, cluster, objective, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContractionCycleWarning)
        return solve(name, graph, cluster, objective, **{**FAST_OPTIONS.get(name, {}), **options})


@pytest.fixture(scope="module")
def small():
    return load_graph("synthetic:fork_join?n=16&seed=1"), Cluster.preset("gpu4_pcie", n_devices=3)


def test_the_registry_holds_every_placer_of_the_issue():
    assert set(PLACERS) >= {
        "single_device",
        "round_robin",
        "random",
        "m_topo",
        "heft",
        "m_etf",
        "m_sct",
        "min_cut",
        "tarnawski_dp",
        "local_search",
        "milp",
    }


@pytest.mark.parametrize("name", sorted(n for n, p in PLACERS.items() if p.standalone))
def test_every_placer_documents_source_and_complexity(name):
    doc = PLACERS[name].fn.__doc__
    assert "Source:" in doc and "Complexity:" in doc


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("name", STANDALONE)
def test_every_placer_returns_a_checked_feasible_placement(name, objective, small):
    graph, cluster = small
    result = run(name, graph, cluster, objective)
    assert isinstance(result, PlacementResult)
    assert result.placement.shape == (graph.num_nodes,)
    assert result.placement.dtype == np.int64
    assert ((result.placement >= 0) & (result.placement < cluster.num_devices)).all()
    assert result.feasible and not result.reasons
    assert result.runtime > 0 and result.solve_time >= 0
    assert result.objective == objective and result.placer == name
    json.dumps(result.to_dict())


@pytest.mark.parametrize("name", STANDALONE)
def test_place_returns_the_placement_of_solve(name, small):
    graph, cluster = small
    expected = run(name, graph, cluster, "pipeline").placement
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContractionCycleWarning)
        got = place(name, graph, cluster, "pipeline", **FAST_OPTIONS.get(name, {}))
    assert np.array_equal(got, expected)


@st.composite
def grouped_dags(draw):
    graph = draw(dags(min_nodes=1, max_nodes=8))
    groups = draw(
        st.lists(
            st.sampled_from([None, "x", "y"]), min_size=graph.num_nodes, max_size=graph.num_nodes
        )
    )
    nodes = [{**n.to_dict(), "group": g} for n, g in zip(graph.nodes, groups, strict=True)]
    return CompGraph(nodes, [e.to_dict() for e in graph.edges], name="grouped")


@settings(max_examples=25)
@given(
    grouped_dags(),
    st.integers(1, 3),
    st.sampled_from(OBJECTIVES),
    st.sampled_from(["links", "placeto", "ideal"]),
)
def test_placers_are_valid_and_feasible_when_every_device_can_hold_everything(
    graph, n_devices, objective, comm_model
):
    everything = graph.arrays.mem_bytes.sum() + graph.arrays.out_bytes.sum()  # + activations
    cluster = Cluster.preset(
        "homogeneous", n_devices=n_devices, comm_model=comm_model, memory=everything + 1
    )
    for name in STANDALONE:
        result = run(name, graph, cluster, objective)
        assert result.placement.shape == (graph.num_nodes,)
        assert result.feasible, (name, result.reasons)


def test_unknown_placer_lists_the_known_ones(small):
    with pytest.raises(ConfigError, match=r"unknown placer 'hefty'; known: .*heft"):
        solve("hefty", *small)


def test_a_graph_spec_is_loaded():
    result = solve("heft", "msr:bert24_inference", Cluster.from_msr("bert24_inference"))
    assert result.placement.shape == (32,)


def test_a_cluster_spec_is_loaded(small):
    by_spec = solve("heft", small[0], "gpu4_pcie?n_devices=3")
    assert np.array_equal(by_spec.placement, solve("heft", *small).placement)
    assert np.array_equal(place("heft", small[0], "gpu4_pcie?n_devices=3"), by_spec.placement)


def test_unknown_objective_is_named(small):
    with pytest.raises(ConfigError, match="unknown objective 'latency'"):
        solve("heft", *small, objective="latency")


def test_unknown_option_is_named_with_the_known_ones(small):
    with pytest.raises(
        ConfigError, match=r"unknown option.* seeds for placer 'random'; known: seed"
    ):
        solve("random", *small, seeds=3)
    with pytest.raises(ConfigError, match="for placer 'heft'; known: none"):
        solve("heft", *small, seed=3)


def test_bad_option_value_is_named(small):
    with pytest.raises(ConfigError, match="random: option 'seed' must be an integer >= 0"):
        solve("random", *small, seed=-2)


def test_graph_memory_beyond_the_cluster_is_a_placement_error():
    graph = chain([1.0, 1.0, 1.0], mem_bytes=6.0)
    cluster = Cluster.preset("homogeneous", n_devices=2, memory=8.0)
    with pytest.raises(
        PlacementError, match="needs 18 bytes of resident memory; the cluster has 16"
    ):
        solve("heft", graph, cluster)


def test_a_node_no_device_can_run_is_named():
    graph = CompGraph([{"name": "gpu_only", "cost": 1.0, "costs": {"cpu": math.inf}}])
    cluster = Cluster((Device("cpu:0", "cpu"),))
    with pytest.raises(PlacementError, match="node 'gpu_only' cannot run on any device"):
        solve("round_robin", graph, cluster)


def test_a_group_no_device_can_hold_is_named():
    graph = CompGraph([{"name": x, "cost": 1.0, "mem_bytes": 5.0, "group": "big"} for x in "ab"])
    cluster = Cluster.preset("homogeneous", n_devices=2, memory=8.0)
    with pytest.raises(PlacementError, match="colocation group 'big' fits on no device"):
        solve("round_robin", graph, cluster)


@pytest.fixture
def splitting_placer():
    with PLACERS.scope():

        @register_placer("test_splits_groups")
        def splits(problem):
            """Puts every node on its own device. Source: a test. Complexity: O(V)."""
            return np.arange(problem.num_nodes) % problem.num_devices

        yield "test_splits_groups"


def test_an_infeasible_placement_is_returned_with_reasons_and_a_warning(splitting_placer):
    graph = CompGraph([{"name": x, "cost": 1.0, "group": "g"} for x in "ab"])
    cluster = Cluster.preset("homogeneous", n_devices=2)
    with pytest.warns(InfeasiblePlacementWarning, match="colocation group 'g' is split"):
        result = solve(splitting_placer, graph, cluster)
    assert not result.feasible
    assert result.reasons == ("colocation group 'g' is split across devices",)


def test_a_placer_returning_a_bad_placement_is_caught(splitting_placer):
    register_placer(splitting_placer, overwrite=True)(lambda problem: [0])
    with pytest.raises(PlacementError, match=r"placement has shape \(1,\); expected \(2,\)"):
        solve(splitting_placer, chain([1.0, 1.0]), Cluster.preset("homogeneous", n_devices=2))


def test_registering_a_name_twice_is_refused():
    with pytest.raises(ConfigError, match="placer 'heft' is already registered"):
        register_placer("heft")(lambda problem: None)
