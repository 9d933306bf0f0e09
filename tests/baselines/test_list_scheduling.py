"""HEFT, m-ETF, m-SCT: schedules on the cluster's comm model, memory admission."""

import numpy as np
import pytest

from placerl.baselines import solve
from placerl.baselines.list_scheduling import (
    ListSchedule,
    favourite_parents,
    heft,
    heft_reference,
    m_etf,
    m_sct,
    upward_rank,
)
from placerl.baselines.problem import Problem
from placerl.cluster import Cluster, load_cluster
from placerl.graph import CompGraph, load_graph
from tests.baselines.helpers import chain

LIST_SCHEDULERS = ("heft", "m_etf", "m_sct")


def fork_join(branch_cost=1.0, time=0.0):
    nodes = [{"name": "fork", "cost": 0.1}, {"name": "join", "cost": 0.1}]
    nodes += [{"name": f"b{i}", "cost": branch_cost} for i in range(4)]
    edges = [("fork", f"b{i}", {"time": time}) for i in range(4)]
    edges += [(f"b{i}", "join", {"time": time}) for i in range(4)]
    return CompGraph(nodes, edges)


def test_upward_rank_is_duration_plus_the_longest_path_to_a_sink():
    rank = upward_rank(
        Problem(chain([1.0, 2.0, 3.0], time=0.5), Cluster.preset("homogeneous", n_devices=2))
    )
    assert rank == pytest.approx([1 + 0.5 + 2 + 0.5 + 3, 2 + 0.5 + 3, 3])


@pytest.mark.parametrize("name", LIST_SCHEDULERS)
def test_cheap_transfers_spread_parallel_branches(name):
    cluster = Cluster.preset("homogeneous", n_devices=4)
    result = solve(name, fork_join(time=0.0), cluster)
    assert len(set(result.placement[2:])) == 4
    assert result.runtime == pytest.approx(0.1 + 1.0 + 0.1)


@pytest.mark.parametrize("name", ("heft", "m_sct"))
def test_costly_transfers_keep_a_chain_on_one_device(name):
    result = solve(name, chain([1.0] * 5, time=10.0), Cluster.preset("homogeneous", n_devices=3))
    assert len(set(result.placement)) == 1


@pytest.mark.parametrize("name", LIST_SCHEDULERS)
def test_memory_admission_spreads_what_one_device_cannot_hold(name):
    graph = chain([1.0] * 6, mem_bytes=1.0, time=10.0)
    cluster = Cluster.preset("homogeneous", n_devices=3, memory=2.0)
    result = solve(name, graph, cluster)
    assert result.feasible
    assert np.bincount(result.placement).max() == 2


@pytest.mark.parametrize("name", LIST_SCHEDULERS)
def test_colocated_nodes_share_a_device(name):
    nodes = [
        {"name": f"b{i}", "cost": 1.0, "group": "g" if i in (0, 3) else None} for i in range(4)
    ]
    result = solve(name, CompGraph(nodes), Cluster.preset("homogeneous", n_devices=4))
    assert result.placement[0] == result.placement[3] and result.feasible


@pytest.mark.parametrize("comm_model", ["placeto", "links", "ideal"])
@pytest.mark.parametrize("name", LIST_SCHEDULERS)
def test_every_comm_model_gives_a_feasible_schedule(name, comm_model):
    graph = load_graph("synthetic:cifar10?n=60&seed=2")
    result = solve(name, graph, Cluster.preset("gpu4_pcie", comm_model=comm_model))
    assert result.feasible


def naive_earliest_task_first(problem, favourite_parent=None):
    """m-ETF (m-SCT with ``favourite_parent``) as its definition reads: every step scores
    every ready op on every device it may go to, data-ready times recomputed each time."""
    schedule, rank = ListSchedule(problem), upward_rank(problem)
    a, assignment = problem.graph.arrays, schedule.assignment
    waiting = a.in_degree.copy()
    ready = set(np.flatnonzero(waiting == 0).tolist())
    child = {
        int(p): v
        for v, p in enumerate(favourite_parent if favourite_parent is not None else [])
        if p >= 0
    }
    last_on = {}

    def devices(v):
        if favourite_parent is not None and favourite_parent[v] >= 0:
            d = assignment.device_of(int(favourite_parent[v]))
            if assignment.fits(v, d):
                return [d]
        return [int(d) for d in assignment.candidates(v)]

    while ready:
        kept = {
            d: child[u]
            for d, u in last_on.items()
            if child.get(u) in ready and assignment.fits(child[u], d)
        }
        start, _, v, d = min(
            (schedule.earliest_start(v, d, insertion=False), -rank[v], v, d)
            for v in ready
            for d in devices(v)
            if kept.get(d, v) == v
        )
        schedule.commit(v, d, start)
        last_on[d] = v
        ready.discard(v)
        for w in a.succ[a.succ_ptr[v] : a.succ_ptr[v + 1]]:
            waiting[w] -= 1
            if waiting[w] == 0:
                ready.add(int(w))
    return assignment.placement()


#: Graphs and clusters the compiled schedulers are checked on against the naive ones: every
#: comm model, a heterogeneous cluster, colocation groups with tight memory (msr).
PARITY_CASES = [
    ("synthetic:layered?n=120&seed=3", "gpu4_pcie?comm_model=links"),
    ("synthetic:layered?n=120&seed=3", "gpu4_pcie?comm_model=placeto"),
    ("synthetic:layered?n=120&seed=3", "gpu4_pcie?comm_model=ideal"),
    ("synthetic:ptb?seed=1", "placeto?n_devices=4"),
    ("synthetic:cifar10?n=60&seed=2", "cpu_gpu?n_gpus=2"),
    ("synthetic:fork_join?n=60&seed=0", "homogeneous?n_devices=3&memory=3e8"),
    ("msr:bert24_training", "msr:bert24_training"),
    # more resident memory than the devices hold: admission runs out, then falls back
    ("synthetic:layered?n=300&seed=5", "homogeneous?n_devices=3&memory=4e8"),
]


def random_dag(seed, n=80, comm_model="links"):
    """A random DAG whose edges carry bytes of their own (a producer's consumers differ), on
    three devices of unequal links: the case where a sent output's arrival, fixed by one
    consumer's edge, differs from what another consumer assumed."""
    rng = np.random.default_rng(seed)
    nodes = [{"name": f"v{i}", "cost": float(rng.uniform(0.1, 2.0))} for i in range(n)]
    edges = [
        {"src": f"v{u}", "dst": f"v{v}", "bytes": float(rng.uniform(1e6, 4e9))}
        for v in range(1, n)
        for u in rng.choice(v, size=min(v, 3), replace=False)
    ]
    bandwidth = np.array([[np.inf, 8e9, 2e9], [8e9, np.inf, 4e9], [2e9, 4e9, np.inf]])
    cluster = Cluster.preset("homogeneous", n_devices=3, comm_model=comm_model)
    cluster = Cluster(cluster.devices, bandwidth=bandwidth, comm_model=comm_model)
    return CompGraph(nodes, edges, name=f"random{seed}"), cluster


@pytest.mark.parametrize("comm_model", ["placeto", "links", "ideal"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compiled_schedulers_follow_per_edge_transfer_times(seed, comm_model):
    graph, cluster = random_dag(seed, comm_model=comm_model)
    problem = Problem(graph, cluster, "step_time")
    assert np.array_equal(heft(problem), heft_reference(problem))
    assert np.array_equal(m_etf(problem), naive_earliest_task_first(problem))
    expected = naive_earliest_task_first(problem, favourite_parents(problem))
    assert np.array_equal(m_sct(problem), expected)


@pytest.mark.parametrize(("graph", "cluster"), PARITY_CASES)
@pytest.mark.parametrize("objective", ["step_time", "pipeline"])
def test_compiled_heft_places_as_the_python_schedule(graph, cluster, objective):
    problem = Problem(load_graph(graph), load_cluster(cluster), objective)
    assert np.array_equal(heft(problem), heft_reference(problem))


@pytest.mark.parametrize(("graph", "cluster"), PARITY_CASES)
def test_compiled_m_etf_places_as_the_python_schedule(graph, cluster):
    problem = Problem(load_graph(graph), load_cluster(cluster), "step_time")
    assert np.array_equal(m_etf(problem), naive_earliest_task_first(problem))


@pytest.mark.parametrize(("graph", "cluster"), PARITY_CASES)
def test_compiled_m_sct_places_as_the_python_schedule(graph, cluster):
    problem = Problem(load_graph(graph), load_cluster(cluster), "step_time")
    expected = naive_earliest_task_first(problem, favourite_parents(problem))
    assert np.array_equal(m_sct(problem), expected)


def test_heft_is_no_slower_than_one_device_on_a_parallel_graph():
    graph, cluster = load_graph("synthetic:fork_join?n=60&seed=0"), Cluster.preset("gpu8_nvlink")
    one = solve("single_device", graph, cluster).runtime
    assert solve("heft", graph, cluster).runtime <= one


def test_favourite_parents_follow_the_chain():
    problem = Problem(chain([1.0] * 4, time=1.0), Cluster.preset("homogeneous", n_devices=2))
    assert favourite_parents(problem).tolist() == [-1, 0, 1, 2]


def test_each_op_is_the_favourite_child_of_at_most_one_parent():
    problem = Problem(load_graph("synthetic:layered?n=60&seed=3"), Cluster.preset("gpu4_pcie"))
    favourite = favourite_parents(problem)
    parents = favourite[favourite >= 0]
    assert len(parents) == len(set(parents.tolist()))
    a = problem.graph.arrays
    edges = set(zip(a.src.tolist(), a.dst.tolist(), strict=True))
    assert all((int(p), v) in edges for v, p in enumerate(favourite) if p >= 0)


@pytest.mark.parametrize(
    "cluster", ["cpu_gpu?n_gpus=3", "msr:bert24_training", "placeto?n_devices=4"]
)
def test_mean_edge_time_is_the_mean_over_device_pairs_bit_for_bit(cluster):
    """Summed pair by pair (no ``pairs x edges`` stack): the very bits of ``np.mean`` over
    the stack, so that HEFT's ranks, and every committed classic row, stay as they were."""
    graph = load_graph("synthetic:layered?n=60&seed=3")
    if cluster.startswith("msr:"):
        graph = load_graph(cluster)
    problem = Problem(graph, load_cluster(cluster))
    d = problem.num_devices
    stacked = np.mean(
        [problem.edge_times(s, t) for s in range(d) for t in range(d) if s != t], axis=0
    )
    assert problem.mean_edge_time.tobytes() == stacked.tobytes()
