"""The fast simulator against the reference, hand-computed cases, invariants, bad input."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from placerl.cluster import Cluster, Device
from placerl.errors import ConfigError, PlacementError
from placerl.graph import CompGraph, load_graph
from placerl.sim import CostModel, reference, simulate
from tests.strategies import dags

COMM_MODELS = ("placeto", "links", "ideal")


def cluster(n=2, comm_model="placeto", bandwidth=1.0, transfer_gap=0.0, op_gap=0.0, **device):
    devices = tuple(Device(f"d{i}", **device) for i in range(n))
    return Cluster(
        devices,
        bandwidth=bandwidth,
        comm_model=comm_model,
        transfer_gap=transfer_gap,
        op_gap=op_gap,
    )


def graph(costs, edges=(), out_bytes=None, **extra):
    out_bytes = out_bytes or {}
    nodes = [
        {"name": k, "cost": c, "out_bytes": out_bytes.get(k, 0.0), **extra.get(k, {})}
        for k, c in costs.items()
    ]
    return CompGraph(nodes, edges)


@st.composite
def clusters(draw, max_devices=4):
    n = draw(st.integers(1, max_devices))
    kinds = draw(st.lists(st.sampled_from(["gpu", "cpu"]), min_size=n, max_size=n))
    devices = tuple(
        Device(
            f"d{i}",
            kind,
            speed=draw(st.sampled_from([0.5, 1.0, 2.0])),
            memory=draw(st.sampled_from([math.inf, 1e6])),
        )
        for i, kind in enumerate(kinds)
    )
    bandwidth = draw(st.lists(st.floats(1e5, 1e9), min_size=n * n, max_size=n * n))
    latency = draw(st.lists(st.sampled_from([0.0, 1e-5, 1e-3]), min_size=n * n, max_size=n * n))
    return Cluster(
        devices,
        bandwidth=np.reshape(bandwidth, (n, n)),
        latency=np.reshape(latency, (n, n)),
        comm_model=draw(st.sampled_from(COMM_MODELS)),
        transfer_gap=draw(st.sampled_from([0.0, 25e-6])),
        op_gap=draw(st.sampled_from([0.0, 5.7e-6])),
    )


def assert_same(fast, slow):
    assert fast.feasible == slow.feasible
    assert (
        fast.split_groups == slow.split_groups and fast.unsupported_nodes == slow.unsupported_nodes
    )
    for field in ("busy", "comm", "memory", "peak_memory", "memory_excess", "start", "finish"):
        a, b = getattr(fast, field), getattr(slow, field)
        if a is None:
            assert b is None
        else:
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=0, err_msg=field)
    assert fast.runtime == pytest.approx(slow.runtime, rel=1e-9, abs=0)


# ------------------------------------------------------------ fast == reference
@pytest.mark.parametrize("objective", ["step_time", "pipeline"])
@given(g=dags(max_nodes=14, with_kinds=True), c=clusters(), data=st.data())
def test_fast_matches_reference(objective, g, c, data):
    placement = data.draw(
        st.lists(st.integers(0, c.num_devices - 1), min_size=g.num_nodes, max_size=g.num_nodes)
    )
    assert_same(
        simulate(g, placement, c, objective), reference.simulate(g, placement, c, objective)
    )


@given(g=dags(max_nodes=10), data=st.data())
def test_fast_matches_reference_with_ties_and_zero_costs(g, data):
    """Integer costs and zero-time transfers make many events simultaneous."""
    costs = data.draw(
        st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=g.num_nodes, max_size=g.num_nodes)
    )
    times = data.draw(
        st.lists(st.sampled_from([None, 0.0, 1.0]), min_size=g.num_edges, max_size=g.num_edges)
    )
    groups = data.draw(
        st.lists(st.sampled_from([None, "x", "y"]), min_size=g.num_nodes, max_size=g.num_nodes)
    )
    nodes = [
        {**n.to_dict(), "cost": c, "group": grp}
        for n, c, grp in zip(g.nodes, costs, groups, strict=True)
    ]
    nodes = [{k: v for k, v in n.items() if v is not None} for n in nodes]
    edges = [{**e.to_dict(), "time": t} for e, t in zip(g.edges, times, strict=True)]
    tied = CompGraph(nodes, [{k: v for k, v in e.items() if v is not None} for e in edges])
    for comm_model in COMM_MODELS:
        c = cluster(
            3,
            comm_model,
            bandwidth=1e3,
            transfer_gap=data.draw(st.sampled_from([0.0, 1.0])),
            op_gap=1.0,
        )
        placement = data.draw(
            st.lists(st.integers(0, 2), min_size=g.num_nodes, max_size=g.num_nodes)
        )
        for objective in ("step_time", "pipeline"):
            assert_same(
                simulate(tied, placement, c, objective),
                reference.simulate(tied, placement, c, objective),
            )


@pytest.mark.parametrize("name", ["bert24_training", "gnmt_inference", "resnet50_inference"])
@pytest.mark.parametrize("objective", ["step_time", "pipeline"])
def test_fast_matches_reference_on_msr_graphs(name, objective):
    g, c = load_graph(f"msr:{name}"), Cluster.from_msr(name)
    rng = np.random.default_rng(0)
    for _ in range(3):
        p = rng.integers(0, c.num_devices, g.num_nodes)
        assert_same(simulate(g, p, c, objective), reference.simulate(g, p, c, objective))


# ------------------------------------------------------------- hand-computed cases
def test_chain_on_one_device_is_sum_of_costs_plus_op_gaps():
    c = Cluster.preset("placeto", n_devices=2)
    g = graph({"a": 1e-3, "b": 2e-3, "c": 3e-3}, [("a", "b"), ("b", "c")], {"a": 1e6, "b": 1e6})
    r = simulate(g, [1, 1, 1], c)
    assert r.runtime == pytest.approx(6e-3 + 2 * 5.7e-6)
    np.testing.assert_allclose(r.start, [0, 1e-3 + 5.7e-6, 3e-3 + 2 * 5.7e-6])
    np.testing.assert_allclose(r.busy, [0, 6e-3])
    assert r.comm.sum() == 0


def test_independent_branches_run_in_parallel_on_two_devices():
    g = graph({"x": 1.0, "y": 2.0})
    assert simulate(g, [0, 1], cluster(op_gap=0.5)).runtime == 2.0
    assert simulate(g, [0, 0], cluster(op_gap=0.5)).runtime == 3.5  # x, gap, then y


def test_two_transfers_contend_for_one_channel():
    g = graph(
        {"a": 1.0, "b": 1.0, "a2": 0.0, "b2": 0.0}, [("a", "a2"), ("b", "b2")], {"a": 3.0, "b": 3.0}
    )
    p = [0, 0, 1, 1]
    # a: [0, 1]; its transfer [1, 4] + gap 0.5; b: [1, 2]; its transfer waits until 4.5 -> 7.5.
    r = simulate(g, p, cluster(comm_model="placeto", transfer_gap=0.5))
    assert r.runtime == 7.5
    np.testing.assert_allclose(r.start, [0, 1, 4, 7.5])
    assert r.comm[0] == 6.0
    assert simulate(g, p, cluster(comm_model="links", transfer_gap=0.5)).runtime == 7.5
    assert simulate(g, p, cluster(comm_model="ideal")).runtime == 5.0


def test_placeto_sends_one_transfer_for_all_remote_consumers():
    g = graph({"a": 1.0, "x": 0.0, "y": 0.0}, [("a", "x"), ("a", "y")], {"a": 3.0})
    placeto = simulate(g, [0, 1, 2], cluster(3, "placeto"))
    assert placeto.comm.tolist() == [3.0, 0, 0] and placeto.runtime == 4.0
    links = simulate(g, [0, 1, 2], cluster(3, "links"))
    assert links.comm.tolist() == [6.0, 0, 0] and links.runtime == 4.0
    # two consumers on one device share one transfer under every model
    assert simulate(g, [0, 1, 1], cluster(3, "links")).comm[0] == 3.0


def test_links_are_independent_per_device_pair():
    g = graph(
        {"a": 1.0, "b": 1.0, "a2": 0.0, "b2": 0.0}, [("a", "a2"), ("b", "b2")], {"a": 3.0, "b": 3.0}
    )
    # a -> device 1 and b -> device 2 use different links: no contention under `links`.
    assert simulate(g, [0, 0, 1, 2], cluster(3, "links")).runtime == 5.0
    assert simulate(g, [0, 0, 1, 2], cluster(3, "placeto")).runtime == 7.0


def test_explicit_edge_time_and_latency():
    g = CompGraph(
        [{"name": "a", "cost": 1.0, "out_bytes": 100.0}, {"name": "b", "cost": 1.0}],
        [("a", "b", {"time": 0.25})],
    )
    assert simulate(g, [0, 1], cluster(comm_model="ideal")).runtime == 2.25
    g2 = graph({"a": 1.0, "b": 1.0}, [("a", "b")], {"a": 4.0})
    c = Cluster((Device("x"), Device("y")), bandwidth=2.0, latency=0.5, comm_model="ideal")
    assert simulate(g2, [0, 1], c).runtime == 1.0 + 0.5 + 2.0 + 1.0


def test_device_picks_the_op_that_became_ready_first():
    # z (index 1) becomes ready at 1 on device 0; w (index 3) at 0.5; w runs first.
    g = graph({"p": 1.0, "z": 1.0, "q": 0.5, "w": 1.0}, [("p", "z"), ("q", "w")])
    r = simulate(g, [1, 0, 2, 0], cluster(3))
    assert r.start[3] == 0.5 and r.start[1] == 1.5
    # same ready time: the lower index wins
    g = graph({"p": 1.0, "q": 1.0, "z": 1.0, "w": 1.0}, [("p", "w"), ("q", "z")])
    r = simulate(g, [1, 2, 0, 0], cluster(3, "ideal", bandwidth=math.inf))
    assert r.start[2] == 1.0 and r.start[3] == 2.0


def test_kind_costs_and_speed():
    g = CompGraph([{"name": "a", "cost": 1.0, "costs": {"cpu": 10.0}}, {"name": "b", "cost": 1.0}])
    c = Cluster((Device("cpu", "cpu", speed=0.5), Device("gpu", "gpu", speed=2.0)))
    assert simulate(g, [0, 0], c).busy[0] == 10.0 + 2.0  # a: its cpu cost; b: 1 / 0.5
    assert simulate(g, [1, 1], c).busy[1] == 0.5 + 0.5


def test_unsupported_kind_is_infeasible_with_infinite_runtime():
    g = CompGraph([{"name": "a", "cost": 1.0, "costs": {"cpu": math.inf}}])
    c = Cluster((Device("cpu", "cpu"), Device("gpu", "gpu")))
    for objective in ("step_time", "pipeline"):
        r = simulate(g, [0], c, objective)
        assert math.isinf(r.runtime) and not r.feasible and r.unsupported_nodes == (0,)
        assert "node 0 cannot run on its device's kind" in r.reasons
        assert simulate(g, [1], c, objective).feasible


# ---------------------------------------------------------------- pipeline objective
def test_pipeline_hand_computed_loads():
    g = CompGraph(
        [
            {"name": "a", "cost": 1.0, "costs": {"cpu": 5.0}},
            {"name": "b", "cost": 2.0},
            {"name": "c", "cost": 3.0, "costs": {"cpu": 7.0}},
        ],
        [("a", "b", {"time": 0.25}), ("b", "c", {"time": 0.5}), ("a", "c", {"time": 0.25})],
    )
    c = Cluster(
        (Device("a0", "accelerator"), Device("a1", "accelerator"), Device("c0", "cpu")),
        comm_model="ideal",
    )
    r = simulate(g, [0, 0, 1], c, "pipeline")
    # a -> c and b -> c cross: a charges 0.25 and b 0.5 to device 0 and to device 1
    np.testing.assert_allclose(r.busy, [3.0, 3.0, 0.0])
    np.testing.assert_allclose(r.comm, [0.75, 0.75, 0.0])
    assert r.runtime == 3.75
    r = simulate(g, [0, 0, 2], c, "pipeline")  # c on the CPU: the CPU pays no communication
    np.testing.assert_allclose(r.load, [3.75, 0.0, 7.0])
    r = simulate(
        g, [0, 1, 1], c, "pipeline"
    )  # a has two consumers on device 1: charged once each side
    np.testing.assert_allclose(r.comm, [0.25, 0.25, 0.0])


@pytest.mark.parametrize(
    ("name", "total"),
    [
        ("bert24_inference", 92.41),
        ("bert24_training", 217.81),
        ("gnmt_inference", 182.56),
        ("resnet50_inference", 201.45),
        ("resnet50_training", 462.38),
        ("bert_l-3_inference", 49.35),
        ("bert_l-3_training", 122.99),
    ],
)
def test_msr_graphs_on_one_accelerator_sum_their_latencies(name, total):
    g, c = load_graph(f"msr:{name}"), Cluster.from_msr(name)
    r = simulate(g, np.zeros(g.num_nodes, dtype=int), c, "pipeline")
    assert round(r.runtime, 2) == total
    # the README's sums ignore memory; feasibility reports it
    assert r.feasible == (g.arrays.mem_bytes.sum() <= c.devices[0].memory)


# ------------------------------------------------------------------------- memory
def test_resident_memory_and_excess():
    g = CompGraph(
        [
            {"name": "a", "cost": 1.0, "mem_bytes": 60.0},
            {"name": "b", "cost": 1.0, "mem_bytes": 50.0},
        ]
    )
    c = cluster(2, memory=100.0)
    r = simulate(g, [0, 0], c, "pipeline")
    assert (
        not r.feasible
        and r.memory.tolist() == [110.0, 0.0]
        and r.memory_excess.tolist() == [10.0, 0.0]
    )
    assert r.reasons == ("device 0 is 10 bytes over its memory",)
    assert simulate(g, [0, 1], c, "pipeline").feasible


def test_peak_activations_follow_tensor_lifetimes():
    g = graph(
        {"a": 1.0, "b": 1.0, "c": 1.0}, [("a", "b"), ("b", "c")], {"a": 10.0, "b": 5.0, "c": 1.0}
    )
    r = simulate(g, [0, 0, 0], cluster(1))
    # a lives [0, 2], b [1, 3], c [2, 3]: the peak is 10 + 5 + 1 at t = 2 (allocations first)
    assert r.peak_memory[0] == 16.0
    # split: a's copy lives on device 1 from its arrival (1 + 10 / 1) until b ends
    r = simulate(g, [0, 1, 1], cluster(2, "ideal"))
    assert r.peak_memory.tolist() == [10.0, 16.0]
    assert r.finish.tolist() == [1.0, 12.0, 13.0]


def test_split_colocation_group_is_infeasible():
    g = CompGraph(
        [
            {"name": "f", "cost": 1.0, "group": "g1"},
            {"name": "b", "cost": 1.0, "group": "g1"},
            {"name": "x", "cost": 1.0},
        ]
    )
    r = simulate(g, [0, 1, 1], cluster(2))
    assert not r.feasible and r.split_groups == ("g1",)
    assert "colocation group 'g1' is split across devices" in r.reasons
    assert simulate(g, [1, 1, 0], cluster(2)).feasible


# ----------------------------------------------------------------------- invariants
def critical_path(g: CompGraph, durations: np.ndarray) -> float:
    best = durations.min(axis=1)
    longest = np.zeros(g.num_nodes)
    from placerl.graph.orders import traversal_order

    for v in traversal_order(g, "topo"):
        preds = g.predecessors(v)
        longest[v] = best[v] + (longest[preds].max() if preds.size else 0.0)
    return float(longest.max())


@given(g=dags(with_kinds=True), c=clusters(), data=st.data())
def test_runtime_at_least_critical_path_on_fastest_device(g, c, data):
    model = CostModel(g, c)
    p = data.draw(
        st.lists(st.integers(0, c.num_devices - 1), min_size=g.num_nodes, max_size=g.num_nodes)
    )
    assert model.runtime(p) >= critical_path(g, model.durations) * (1 - 1e-12)


def device_orders(result, placement):
    return [
        tuple(np.argsort(result.start[placement == d], kind="stable"))
        for d in range(placement.max() + 1)
    ]


@given(g=dags(), data=st.data(), factor=st.sampled_from([1.5, 2.0, 10.0]))
def test_more_bandwidth_never_slows_down_under_ideal(g, data, factor):
    """Exact when every device keeps its op order; greedy list scheduling can reorder ops
    (Graham's anomalies), which `test_list_scheduling_anomaly_is_possible` pins down."""
    p = np.array(data.draw(st.lists(st.integers(0, 2), min_size=g.num_nodes, max_size=g.num_nodes)))
    slow = simulate(g, p, cluster(3, "ideal", bandwidth=1e6))
    fast = simulate(g, p, cluster(3, "ideal", bandwidth=1e6 * factor))
    if device_orders(slow, p) == device_orders(fast, p):
        assert fast.runtime <= slow.runtime * (1 + 1e-12)
    # with a single device there is no communication at all
    one = np.zeros(g.num_nodes, dtype=int)
    assert (
        simulate(g, one, cluster(3, "ideal", bandwidth=1.0)).runtime
        == simulate(g, one, cluster(3, "ideal")).runtime
    )


def test_more_bandwidth_on_chains_is_monotone():
    g = graph(
        {f"n{i}": 1.0 for i in range(6)},
        [(f"n{i}", f"n{i + 1}") for i in range(5)],
        {f"n{i}": 8.0 for i in range(6)},
    )
    p = [0, 1, 0, 1, 0, 1]
    runtimes = [simulate(g, p, cluster(2, "ideal", bandwidth=bw)).runtime for bw in (1, 2, 4, 8)]
    assert runtimes == sorted(runtimes, reverse=True) and runtimes[0] > runtimes[-1]


def test_list_scheduling_anomaly_is_possible():
    """Earlier arrivals can make a device pick a different op first and finish later."""
    g = graph(
        {"a": 0.0, "b": 1.0, "x": 5.0, "y": 1.0, "z": 10.0},
        [("a", "x"), ("b", "y"), ("y", "z")],
        {"a": 2.0},
    )
    p = [1, 0, 0, 0, 1]
    slow = simulate(g, p, cluster(2, "ideal", bandwidth=1.0))  # x ready at 2: y runs first
    fast = simulate(g, p, cluster(2, "ideal", bandwidth=4.0))  # x ready at 0.5: x runs first
    assert slow.start[3] < slow.start[2] and fast.start[2] < fast.start[3]
    assert fast.runtime > slow.runtime


# ------------------------------------------------------------------ batch and model
def test_cost_model_batch_matches_single_evaluations():
    g, c = load_graph("msr:bert24_inference"), Cluster.preset("placeto", n_devices=3)
    model = CostModel(g, c)
    batch = np.random.default_rng(1).integers(0, 3, (5, g.num_nodes))
    runtimes, feasible = model.evaluate_batch(batch)
    assert runtimes.shape == (5,) and feasible.dtype == bool
    assert runtimes.tolist() == [model.runtime(p) for p in batch]


def test_durations_are_precomputed_once_and_read_only():
    model = CostModel(
        load_graph("msr:bert24_inference"), Cluster.from_msr("bert24_inference"), "pipeline"
    )
    assert model.durations.shape == (32, 7)
    with pytest.raises(ValueError):
        model.durations[0, 0] = 1.0
    assert model.evaluate([0] * 32).to_dict()["runtime"] == pytest.approx(92.406)


# ----------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("placement", "message"),
    [
        ([0, 1], r"placement has shape \(2,\); expected \(3,\)"),
        ([[0, 1, 1]], r"shape \(1, 3\)"),
        ([0, 1, 2], "placement puts node 'c' on device 2; the cluster has devices 0..1"),
        ([0, -1, 0], "placement puts node 'b' on device -1"),
        ([0, 1.5, 0], "non-integer device 1.5 at node 'b'"),
        ([0, float("nan"), 0], "placement is NaN at node 'b'"),
        (["a", "b", "c"], "must hold integer device indices, got dtype <U1"),
        ([True, False, True], "must hold integer device indices, got dtype bool"),
    ],
)
def test_bad_placements_raise_named_errors(placement, message):
    g = graph({"a": 1.0, "b": 1.0, "c": 1.0})
    with pytest.raises(PlacementError, match=message):
        simulate(g, placement, cluster(2))
    with pytest.raises(PlacementError, match=message):
        reference.simulate(g, placement, cluster(2))


def test_integral_floats_are_accepted():
    g = graph({"a": 1.0, "b": 1.0})
    assert simulate(g, np.array([0.0, 1.0]), cluster(2)).runtime == 1.0


def test_bad_batch_and_objective():
    model = CostModel(graph({"a": 1.0}), cluster(2))
    with pytest.raises(PlacementError, match="must be 2-D"):
        model.evaluate_batch([0])
    with pytest.raises(PlacementError, match="device 5"):
        model.evaluate_batch([[5]])
    known = "known: measured, pipeline, step_time"
    with pytest.raises(ConfigError, match=f"unknown objective 'energy'; {known}"):
        simulate(graph({"a": 1.0}), [0], cluster(2), "energy")
