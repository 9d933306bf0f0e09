"""calibrate(): measured op costs and fitted links, in a graph and cluster the simulator reads."""

import numpy as np
import pytest

from placerl.errors import GraphError
from placerl.measure import calibrate
from placerl.measure.calibrate import IN_RUN_LATENCIES
from placerl.sim import CostModel


def test_calibration_writes_measured_costs_and_fitted_links(resnet_measurer, resnet):
    graph, cluster = calibrate(resnet, measurer=resnet_measurer, repeats=2, runs=2,
                               sizes=(1 << 10, 1 << 16, 1 << 20))  # fmt: skip
    assert graph.names == resnet.names and graph.num_edges == resnet.num_edges
    costs = np.array([node.costs["cpu"] for node in graph.nodes])
    compute = resnet.arrays.cost > 0
    assert np.all(costs[compute] > 0)
    assert not np.allclose(costs, [n.costs["cpu"] for n in resnet.nodes])
    info = graph.meta["calibrated"]
    assert info["kinds"] == ["cpu"] and info["together"]
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
