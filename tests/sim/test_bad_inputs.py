"""Every bad input of the simulator layer raises a placerl error naming the problem."""

import re

import numpy as np
import pytest

from placerl.cluster import homogeneous
from placerl.errors import ClusterError, ConfigError, PlacementError
from placerl.graph import CompGraph
from placerl.sim import CostModel, penalized_runtime, simulate

GRAPH = CompGraph([{"name": x, "cost": 1.0} for x in "abc"], [("a", "b"), ("b", "c")], name="g")
CLUSTER = homogeneous(2)

BAD = [
    # graphs and clusters are resolved by their loaders
    (
        "graph of the wrong type",
        lambda: simulate(123, [0, 0, 0], CLUSTER),
        ConfigError,
        "a graph spec must be a string, Path or CompGraph, got int",
    ),
    (
        "unknown graph scheme",
        lambda: simulate("nope:x", [0], CLUSTER),
        ConfigError,
        "unknown graph source 'nope'",
    ),
    (
        "cluster of the wrong type",
        lambda: simulate(GRAPH, [0, 0, 0], 3),
        ClusterError,
        "a cluster spec must be a Cluster, a preset spec",
    ),
    (
        "unknown cluster preset",
        lambda: simulate(GRAPH, [0, 0, 0], "tpu"),
        ClusterError,
        "unknown cluster preset 'tpu'",
    ),
    (
        "cluster option as a string",
        lambda: CostModel(GRAPH, "placeto?n_devices=x"),
        ClusterError,
        "option 'n_devices' of cluster preset 'placeto' must be an integer, got 'x'",
    ),
    (
        "unknown objective",
        lambda: simulate(GRAPH, [0, 0, 0], CLUSTER, "energy"),
        ConfigError,
        "unknown objective 'energy'; known: measured, pipeline, step_time",
    ),
    (
        "objective of the wrong type",
        lambda: CostModel(GRAPH, CLUSTER, 3),
        ConfigError,
        "unknown objective 3",
    ),
    # placements
    (
        "too short",
        lambda: simulate(GRAPH, [0, 0], CLUSTER),
        PlacementError,
        "placement has shape (2,); expected (3,): one device per node of 'g'",
    ),
    (
        "2-D",
        lambda: simulate(GRAPH, [[0, 0, 0]], CLUSTER),
        PlacementError,
        "placement has shape (1, 3)",
    ),
    ("scalar", lambda: simulate(GRAPH, 0, CLUSTER), PlacementError, "placement has shape ()"),
    ("None", lambda: simulate(GRAPH, None, CLUSTER), PlacementError, "placement has shape ()"),
    (
        "device out of range",
        lambda: simulate(GRAPH, [0, 2, 0], CLUSTER),
        PlacementError,
        "placement puts node 'b' on device 2; the cluster has devices 0..1",
    ),
    (
        "negative device",
        lambda: simulate(GRAPH, [0, -1, 0], CLUSTER),
        PlacementError,
        "placement puts node 'b' on device -1",
    ),
    (
        "fractional device",
        lambda: simulate(GRAPH, [0, 0.5, 0], CLUSTER),
        PlacementError,
        "placement has non-integer device 0.5 at node 'b'",
    ),
    (
        "NaN device",
        lambda: simulate(GRAPH, [0, 0, np.nan], CLUSTER),
        PlacementError,
        "placement is NaN at node 'c'",
    ),
    (
        "strings",
        lambda: simulate(GRAPH, ["0", "1", "0"], CLUSTER),
        PlacementError,
        "placement must hold integer device indices, got dtype <U1",
    ),
    (
        "booleans",
        lambda: simulate(GRAPH, [True, False, True], CLUSTER),
        PlacementError,
        "placement must hold integer device indices, got dtype bool",
    ),
    (
        "check flag as text",
        lambda: CostModel(GRAPH, CLUSTER).evaluate([0, 0, 0], check="no"),
        ConfigError,
        "check must be True or False, got 'no'",
    ),
    (
        "times flag as text",
        lambda: CostModel(GRAPH, CLUSTER).evaluate([0, 0, 0], times=1),
        ConfigError,
        "times must be True or False, got 1",
    ),
    (
        "penalty of no result",
        lambda: penalized_runtime(None, 1.0),
        ConfigError,
        "penalized_runtime needs a SimResult, got NoneType",
    ),
    (
        "penalty with a text reference",
        lambda: penalized_runtime(simulate(GRAPH, [0, 0, 0], CLUSTER), "x"),
        ConfigError,
        "the reference runtime must be a number >= 0, got 'x'",
    ),
    (
        "penalty with a negative reference",
        lambda: penalized_runtime(simulate(GRAPH, [0, 0, 0], CLUSTER), -1.0),
        ConfigError,
        "the reference runtime must be a number >= 0, got -1.0",
    ),
    (
        "batch of the wrong rank",
        lambda: CostModel(GRAPH, CLUSTER).evaluate_batch([0, 0, 0]),
        PlacementError,
        "a batch of placements must be 2-D (batch, nodes), got shape (3,)",
    ),
    (
        "bad row in a batch",
        lambda: CostModel(GRAPH, CLUSTER).evaluate_batch([[0, 0, 0], [0, 5, 0]]),
        PlacementError,
        "placement puts node 'b' on device 5",
    ),
    (
        "ragged batch",
        lambda: CostModel(GRAPH, CLUSTER).evaluate_batch([[0, 0, 0], [0]]),
        PlacementError,
        "a batch of placements must be 2-D (batch, nodes): its rows differ",
    ),
]


@pytest.mark.parametrize(("case", "call", "error", "message"), BAD, ids=[row[0] for row in BAD])
def test_bad_simulator_input_raises_a_named_error(case, call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call()


def test_specs_are_accepted_wherever_objects_are():
    spec = "msr:bert24_inference"
    by_spec = simulate(spec, np.zeros(32, int), spec, "pipeline")
    model = CostModel("msr:bert24_inference", "msr:bert24_inference", "pipeline")
    assert by_spec.runtime == model.evaluate(np.zeros(32, int)).runtime
    assert simulate(GRAPH, [0, 1, 0], "homogeneous?n_devices=2").feasible
