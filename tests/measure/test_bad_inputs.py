"""Every public entry point of ``placerl.measure`` refuses bad input with a message naming it.

One table per entry point, as the engine's ``test_bad_inputs`` modules: the measurer's options,
the placements it runs, its link timing, calibration and the ``measured`` objective's spec.
"""

import numpy as np
import pytest

from placerl.errors import ClusterError, ConfigError, GraphError, PlacementError
from placerl.measure import Measurer, calibrate
from placerl.sim import CostModel
from tests.measure.conftest import RESNET

MEASURER = [
    ({"warmup": -1}, ConfigError, "warmup must be an integer >= 0, got -1"),
    ({"warmup": 1.5}, ConfigError, "warmup must be an integer >= 0, got 1.5"),
    ({"repeats": 0}, ConfigError, "repeats must be an integer >= 1, got 0"),
    ({"repeats": "3"}, ConfigError, "repeats must be an integer >= 1, got '3'"),
    ({"timeout": True}, ConfigError, "timeout must be a finite number of seconds > 0, got True"),
    ({"timeout": "60"}, ConfigError, "timeout must be a finite number of seconds > 0, got '60'"),
    ({"timeout": -1.0}, ConfigError, "timeout must be a finite number of seconds > 0, got -1.0"),
    ({"executor": "gpu"}, ConfigError, "unknown executor 'gpu'; known: processes, threads"),
    ({"cluster": "tpu_pod"}, ClusterError, "unknown cluster preset 'tpu_pod'"),
]


@pytest.mark.parametrize(
    ("options", "error", "message"), MEASURER, ids=[m[:32] for _, _, m in MEASURER]
)
def test_the_measurer_refuses_bad_options(resnet, options, error, message):
    with pytest.raises(error, match=message):
        Measurer(resnet, **options)


def test_the_measurer_refuses_a_graph_without_a_module():
    with pytest.raises(GraphError, match="not imported from a PyTorch module"):
        Measurer("synthetic:layered?n=8&seed=0")


def _placements(n):
    return [
        (np.zeros(n + 1, dtype=np.int64), rf"placement has shape \({n + 1},\); expected \({n},\)"),
        (np.full(n, np.nan), "placement is NaN at node"),
        (np.full(n, 0.5), "placement has non-integer device 0.5 at node"),
        (np.full(n, 7), r"puts node 'x' on device 7; the cluster has devices 0\.\.1"),
        (np.full(n, -1), r"puts node 'x' on device -1; the cluster has devices 0\.\.1"),
    ]


@pytest.mark.parametrize("case", range(5), ids=["long", "nan", "fraction", "missing", "neg"])
def test_a_bad_placement_is_refused_before_any_run(resnet_measurer, case):
    placement, message = _placements(resnet_measurer.graph.num_nodes)[case]
    with pytest.raises(PlacementError, match=message):
        resnet_measurer.measure(placement)


TRANSFERS = [
    ((0, 0, [8]), PlacementError, r"two different devices among 0\.\.1, got 0, 0"),
    ((0, 5, [8]), PlacementError, r"two different devices among 0\.\.1, got 0, 5"),
    ((0, 1, []), ConfigError, "transfer_times needs at least one message size"),
    ((0, 1, [0]), ConfigError, "message size must be an integer >= 1, got 0"),
    ((0, 1, [1.5]), ConfigError, "message size must be an integer >= 1, got 1.5"),
]


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    TRANSFERS,
    ids=["same", "missing", "none", "zero", "fraction"],
)
def test_link_timing_refuses_bad_arguments(resnet_measurer, arguments, error, message):
    with pytest.raises(error, match=message):
        resnet_measurer.transfer_times(*arguments)


def test_calibrate_refuses_a_measurer_of_another_graph(resnet_measurer):
    with pytest.raises(ConfigError, match="calibrate got a measurer of another graph"):
        calibrate("zoo:resnet50?variant=small&training=true", measurer=resnet_measurer)


OBJECTIVES = [
    ("measured?warmup=-1", "measured option 'warmup' must be >= 0, got -1"),
    ("measured?budget=-2", "measured option 'budget' must be >= 0, got -2"),
    ("measured?timeout=0", "measured option 'timeout' must be finite and > 0, got 0"),
    ("measured?time_budget=nan", "measured option 'time_budget' must be finite and > 0"),
]


@pytest.mark.parametrize(("spec", "message"), OBJECTIVES, ids=[s for s, _ in OBJECTIVES])
def test_the_measured_objective_refuses_bad_options(spec, message):
    with pytest.raises(ConfigError, match=message):
        CostModel(RESNET, "local", spec)
