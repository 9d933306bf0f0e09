"""placerl's HEFT against an independent implementation: SAGA's (PyPI ``anrg-saga``).

On homogeneous devices with ``comm_model=ideal`` and no latency the two schedule models are the
same (durations ``cost / speed``, arrival ``finish + bytes / bandwidth``, insertion into the
first idle gap that holds the op, earliest finish time). They differ in two choices:

* The upward rank: SAGA averages an edge's transfer time over every ordered device pair,
  the D same-device pairs (time 0) included, which scales communication by (D - 1) / D;
  placerl averages over pairs of distinct devices, as Topcuoglu et al. define the mean
  transfer cost (over links between processors).
* Device ties: SAGA tries devices in the iteration order of a frozenset of names (which moves
  with Python's string hashing), placerl the lowest index first.

So the tests check (1) that placerl's list schedule, given SAGA's op order and device order,
places exactly as SAGA does (the insertion and data-ready models agree), (2) that placerl's
own HEFT schedule is as short as SAGA's within 1%, and (3) that placerl's placement, simulated,
is about as fast as SAGA's: within 15% per graph and 5% in geometric mean. The simulator runs a
placement with its own dispatch order (the earliest-ready op first), not HEFT's schedule, so a
small change of the schedule moves the simulated runtime by up to about 10% either way (layered
graphs of 300 nodes, seeds 0-11: placerl over SAGA 0.96 to 1.11, geometric mean 1.016, while
the schedules' makespans agree within 0.6%).
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

saga = pytest.importorskip("saga", reason="SAGA (pip install anrg-saga==2.0.2) is not installed")
from saga.schedulers.heft import HeftScheduler, heft_rank_sort  # noqa: E402

from placerl.baselines.list_scheduling import ListSchedule, heft, upward_rank  # noqa: E402
from placerl.baselines.problem import Problem  # noqa: E402
from placerl.cluster import load_cluster  # noqa: E402
from placerl.graph import load_graph  # noqa: E402
from placerl.sim import CostModel  # noqa: E402

CLUSTER = "homogeneous?n_devices=4&bandwidth=1e10&comm_model=ideal"
GRAPHS = [f"synthetic:layered?n={n}&seed={seed}" for n, seed in ((80, 0), (100, 3), (120, 7))]


def to_saga(graph, cluster):
    """SAGA's network and task graph of a placerl graph and cluster (ideal links)."""
    a, names = graph.arrays, graph.names
    tasks = [(names[v], float(a.cost[v])) for v in range(graph.num_nodes)]
    deps = [
        (names[int(a.src[e])], names[int(a.dst[e])], float(a.edge_bytes[e]))
        for e in range(a.num_edges)
    ]
    devices = cluster.devices
    links = [
        (devices[i].name, devices[j].name, float(cluster.bandwidth[i, j]))
        for i in range(len(devices))
        for j in range(len(devices))
        if i != j
    ]
    nodes = [(d.name, float(d.speed)) for d in devices]
    logging.disable(logging.WARNING)  # SAGA warns that it adds a super source and sink
    try:
        return saga.Network.create(nodes, links), saga.TaskGraph.create(tasks, deps)
    finally:
        logging.disable(logging.NOTSET)


def saga_heft(graph, cluster):
    """SAGA's HEFT placement (device index per node) and its schedule's makespan."""
    network, tasks = to_saga(graph, cluster)
    schedule = HeftScheduler().schedule(network, tasks)
    index = {d.name: i for i, d in enumerate(cluster.devices)}
    where = {t.name: index[node] for node, placed in schedule.items() for t in placed}
    return np.array([where[name] for name in graph.names]), schedule.makespan


def list_schedule(problem, order, devices):
    """placerl's ListSchedule driven by ``order`` (node indices), trying ``devices`` in that
    order, earliest finish first: the placement and the schedule's makespan."""
    schedule = ListSchedule(problem)
    for v in order:
        finish, best, begin = np.inf, -1, 0.0
        for d in devices:
            start = schedule.earliest_start(v, d, insertion=True)
            if start + problem.durations[v, d] < finish:
                finish, best, begin = start + problem.durations[v, d], d, start
        schedule.commit(v, best, begin)
    return schedule.assignment.placement(), float(schedule.finish.max())


def placerl_order(problem):
    """HEFT's op order in placerl: decreasing upward rank, ties in topological order."""
    position = np.empty(problem.num_nodes, dtype=np.int64)
    position[problem.topo_order] = np.arange(problem.num_nodes)
    return [int(v) for v in np.lexsort((position, -upward_rank(problem)))]


@pytest.mark.parametrize("spec", GRAPHS)
def test_list_schedule_in_saga_order_places_as_saga(spec):
    graph, cluster = load_graph(spec), load_cluster(CLUSTER)
    network, tasks = to_saga(graph, cluster)
    index = {name: v for v, name in enumerate(graph.names)}
    order = [index[name] for name in heft_rank_sort(network, tasks) if name in index]
    devices = [int(node.name.split(":")[1]) for node in network.nodes]  # "gpu:2" -> 2
    placement, makespan = list_schedule(Problem(graph, cluster), order, devices)
    expected, expected_makespan = saga_heft(graph, cluster)
    assert np.array_equal(placement, expected)
    assert makespan == pytest.approx(expected_makespan, rel=1e-9)


@pytest.mark.parametrize("spec", GRAPHS)
def test_heft_schedule_is_as_short_as_saga(spec):
    graph, cluster = load_graph(spec), load_cluster(CLUSTER)
    problem = Problem(graph, cluster)
    placement, makespan = list_schedule(problem, placerl_order(problem), range(4))
    assert np.array_equal(placement, heft(problem))
    _, saga_makespan = saga_heft(graph, cluster)
    assert makespan <= 1.01 * saga_makespan


def test_heft_simulates_about_as_fast_as_saga():
    cluster = load_cluster(CLUSTER)
    ratios = []
    for spec in GRAPHS:
        graph = load_graph(spec)
        model = CostModel(graph, cluster)
        ours = model.runtime(heft(Problem(graph, cluster)))
        ratios.append(ours / model.runtime(saga_heft(graph, cluster)[0]))
    assert max(ratios) <= 1.15
    assert np.exp(np.mean(np.log(ratios))) <= 1.05
