"""The numba step-time kernel equals the reference simulator on 1,000 adversarial cases.

The cases are drawn to break an event-driven simulator: zero-cost ops and zero-time transfers
(many events at one instant), integer costs (ties everywhere), zero gaps, zero-byte outputs,
colocation groups, every comm model, and 1 to 4 devices. Runtime, per-node start and finish,
per-device busy, comm and peak memory must agree to 1e-9 relative.
"""

import pickle

import numpy as np
import pytest

from placerl.cluster import Cluster, Device
from placerl.graph import CompGraph
from placerl.sim import CostModel, reference, simulate
from tests.sim.test_simulate import assert_same

CASES = 1000


def random_case(rng: np.random.Generator) -> tuple[CompGraph, list[int], Cluster]:
    n = int(rng.integers(1, 26))
    rank = rng.permutation(n)  # edges go up a hidden order; node order is not topological
    nodes = []
    for v in range(n):
        node = {
            "name": f"n{v}",
            "cost": float(rng.choice([0.0, 1.0, 2.0, rng.uniform(0, 3)])),
            "out_bytes": float(rng.choice([0.0, 0.0, 1e3, rng.uniform(0, 5e3)])),
            "mem_bytes": float(rng.choice([0.0, 1e3])),
        }
        if rng.random() < 0.15:
            node["group"] = f"g{rng.integers(2)}"
        nodes.append(node)
    edges = []
    for u in range(n):
        for v in range(n):
            if rank[u] < rank[v] and rng.random() < 3.0 / n:
                edge = {"src": f"n{u}", "dst": f"n{v}"}
                if rng.random() < 0.3:
                    edge["time"] = float(rng.choice([0.0, 1.0]))
                edges.append(edge)
    n_dev = int(rng.integers(1, 5))
    devices = tuple(Device(f"d{i}", memory=float(rng.choice([np.inf, 4e3]))) for i in range(n_dev))
    cluster = Cluster(
        devices,
        bandwidth=float(rng.choice([1e3, 1e9])),
        latency=float(rng.choice([0.0, 0.5])),
        comm_model=str(rng.choice(["placeto", "links", "ideal"])),
        transfer_gap=float(rng.choice([0.0, 0.0, 1.0])),
        op_gap=float(rng.choice([0.0, 0.0, 0.5])),
    )
    placement = rng.integers(0, n_dev, n).tolist()
    return CompGraph(nodes, edges, name="case"), placement, cluster


@pytest.mark.parametrize("block", range(10))
def test_kernel_equals_reference_on_random_cases(block):
    rng = np.random.default_rng(block)
    for _ in range(CASES // 10):
        graph, placement, cluster = random_case(rng)
        assert_same(
            simulate(graph, placement, cluster), reference.simulate(graph, placement, cluster)
        )


def test_one_model_gives_the_same_result_whatever_it_evaluated_before():
    """Scratch buffers are reused: nothing may leak from one evaluation into the next."""
    rng = np.random.default_rng(42)
    graph, _, cluster = random_case(rng)
    while graph.num_nodes < 10:
        graph, _, cluster = random_case(rng)
    shared = CostModel(graph, cluster)
    placements = [rng.integers(0, cluster.num_devices, graph.num_nodes) for _ in range(20)]
    for placement in placements:
        assert_same(shared.evaluate(placement), CostModel(graph, cluster).evaluate(placement))
    clone = pickle.loads(pickle.dumps(shared))
    assert "_scratch" not in shared.__getstate__()
    assert not clone.durations.flags.writeable and not clone.cluster.bandwidth.flags.writeable
    assert_same(clone.evaluate(placements[0]), shared.evaluate(placements[0]))
