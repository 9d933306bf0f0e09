"""calibrate(): measured op costs and fitted links, in a graph and cluster the simulator reads."""

import sys

import numpy as np
import pytest
import torch

from placerl.cluster import load_cluster
from placerl.errors import GraphError
from placerl.measure import Measurer, calibrate
from placerl.measure.calibrate import IN_RUN_LATENCIES
from placerl.sim import CostModel
from tests.measure.conftest import RESNET


def test_calibration_writes_measured_costs_and_fitted_links(resnet_measurer, resnet):
    graph, cluster = calibrate(
        resnet, measurer=resnet_measurer, repeats=2, runs=2, sizes=(1 << 10, 1 << 16, 1 << 20)
    )
    assert graph.names == resnet.names and graph.num_edges == resnet.num_edges
    costs = np.array([node.costs["cpu"] for node in graph.nodes])
    compute = resnet.arrays.cost > 0
    assert np.all(costs[compute] > 0)
    assert not np.allclose(costs, [n.costs["cpu"] for n in resnet.nodes])
    info = graph.meta["calibrated"]
    assert info["kinds"] == ["cpu"] and info["together"]
    assert info["run_scales"] == {}  # CPU workers' steps are timed as they run
    assert info["in_run_latency"] in IN_RUN_LATENCIES
    assert {(f["src"], f["dst"]) for f in info["links"]} == {(0, 1), (1, 0)}
    for src, dst in ((0, 1), (1, 0)):
        assert cluster.bandwidth[src, dst] > 0 and 0 <= cluster.latency[src, dst] < 1
    assert cluster.op_gap == 0 and cluster.name == "local+calibrated"
    single = CostModel(graph, cluster).runtime(np.zeros(graph.num_nodes, dtype=int))
    assert single == pytest.approx(costs.sum())  # one device: the sum of its measured steps


def test_calibrating_a_graph_without_a_module_fails_clearly():
    with pytest.raises(GraphError, match="not imported from a PyTorch module"):
        calibrate("synthetic:chain?n=5")


def test_asynchronous_kinds_are_scaled_to_their_measured_whole_run(
    resnet_measurer, resnet, monkeypatch
):
    """As on a GPU, whose profiled steps are each synchronized: the kind's costs are scaled so
    that the whole graph on one device simulates to the runtime measured for it."""
    module = sys.modules["placerl.measure.calibrate"]  # not the function re-exported as its name
    monkeypatch.setattr(module, "ASYNCHRONOUS", ("cpu",))
    measured = []
    measure = resnet_measurer.measure

    def recording(placement, **options):
        result = measure(placement, **options)
        measured.append((np.asarray(placement).copy(), result.runtime))
        return result

    monkeypatch.setattr(resnet_measurer, "measure", recording)
    fitted = []
    in_run_latency = module._in_run_latency
    monkeypatch.setattr(
        module,
        "_in_run_latency",
        lambda measurer, graph, *args: (
            fitted.append(graph) or in_run_latency(measurer, graph, *args)
        ),
    )
    graph, cluster = calibrate(
        resnet, measurer=resnet_measurer, repeats=2, runs=1, sizes=(1 << 10, 1 << 20)
    )
    scale_runs = module.RUN_SCALE_MEASUREMENTS
    single = measured[0][0]  # the first measurements: the whole graph on device 0
    assert all(np.all(placement == 0) for placement, _ in measured[:scale_runs])
    assert len(measured) == scale_runs + 1  # then the latency fit's placement
    assert graph.meta["calibrated"]["run_scales"]["cpu"] > 0
    runtime = np.median([seconds for _, seconds in measured[:scale_runs]])
    assert CostModel(graph, cluster).runtime(single) == pytest.approx(runtime)
    # the latency is fitted to the scaled costs
    assert [n.costs for n in fitted[0].nodes] == [n.costs for n in graph.nodes]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_gpus_calibrated_costs_add_up_to_its_measured_run():
    cluster = load_cluster("cpu_gpu?n_gpus=1")
    with Measurer(RESNET, cluster, warmup=2, repeats=5) as measurer:
        graph, calibrated = calibrate(RESNET, measurer=measurer, runs=2)
        on_gpu = np.ones(graph.num_nodes, dtype=np.int64)
        again = measurer.measure(on_gpu).runtime
    assert set(graph.meta["calibrated"]["run_scales"]) == {"gpu"}
    assert CostModel(graph, calibrated).runtime(on_gpu) == pytest.approx(again, rel=0.25)
