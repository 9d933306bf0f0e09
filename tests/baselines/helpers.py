"""Shared by the baseline tests: tiny problems, a brute-force oracle, small graph builders."""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
from hypothesis import strategies as st

from placerl.cluster import Cluster, Device
from placerl.graph import CompGraph
from placerl.sim import CostModel

MSR_OPTIMA = {
    "bert24_inference": 17.78990625,
    "bert24_training": 41.7458125,
    "gnmt_inference": 32.910658203125,
    "resnet50_inference": 33.774666015625,
    "resnet50_training": 78.6318125,
    "bert_l-3_inference": 27.9185676799125,
    "bert_l-3_training": 65.30314912208605,
}


def msr_like_cluster(accelerators: int, cpus: int, memory: float = math.inf) -> Cluster:
    """k accelerators with ``memory`` bytes each, then l CPUs, as ``Cluster.from_msr`` builds."""
    devices = [Device(f"acc:{i}", "accelerator", memory=memory) for i in range(accelerators)]
    devices += [Device(f"cpu:{i}", "cpu") for i in range(cpus)]
    return Cluster(tuple(devices), comm_model="ideal", name="msr_like")


def chain(costs, *, time=None, name="chain", **node_attrs) -> CompGraph:
    """A chain ``n0 -> n1 -> ...`` with the given reference costs (and explicit edge times)."""
    nodes = [{"name": f"n{i}", "cost": c, **node_attrs} for i, c in enumerate(costs)]
    extra = {} if time is None else {"time": time}
    edges = [{"src": f"n{i}", "dst": f"n{i + 1}", **extra} for i in range(len(costs) - 1)]
    return CompGraph(nodes, edges, name=name)


@st.composite
def pipeline_problems(draw, max_nodes: int = 6, max_devices: int = 3, training: bool = False):
    """A tiny msr-style problem: integer costs and times (sums compare exactly), random memory,
    colocation groups, unsupported nodes; ``training`` adds a mirrored backward pass with each
    backward node grouped with its forward node."""
    n = draw(st.integers(1, max_nodes // 2 if training else max_nodes))
    rank = draw(st.permutations(range(n)))
    pairs = [(u, v) for u in range(n) for v in range(n) if rank[u] < rank[v]]
    edges = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=2 * n)) if pairs else []
    ints = st.integers(0, 9)
    maybe_zero = st.one_of(st.just(0), st.integers(0, 30))  # free nodes are common
    group = st.none() if training else st.one_of(st.none(), st.sampled_from("ab"))
    nodes = []
    for v in range(n):
        acc, cpu = draw(maybe_zero) % 10, draw(maybe_zero)
        supported = draw(st.booleans()) or draw(st.booleans())
        node = {
            "name": f"f{v}",
            "cost": acc,
            "costs": {"accelerator": acc if supported else math.inf, "cpu": cpu},
            "mem_bytes": draw(ints),
            "group": f"g{v}" if training else draw(group),
        }
        nodes.append(node)
    times = [draw(ints) for _ in range(n)]
    edge_specs = [
        {"src": f"f{u}", "dst": f"f{v}", "time": times[u] + draw(st.sampled_from([0, 0, 1]))}
        for u, v in edges
    ]
    if training:
        for v in range(n):
            nodes.append({**nodes[v], "name": f"b{v}", "cost": draw(ints), "backward": True})
            nodes[-1]["costs"] = {**nodes[v]["costs"], "cpu": draw(st.integers(0, 30))}
            edge_specs.append({"src": f"f{v}", "dst": f"b{v}", "time": draw(ints)})
        edge_specs += [{"src": f"b{v}", "dst": f"b{u}", "time": draw(ints)} for u, v in edges]
    graph = CompGraph(nodes, edge_specs, name="tiny")
    k = draw(st.integers(1, max_devices))
    cpus = draw(st.integers(0, max_devices - k))
    memory = draw(st.sampled_from([math.inf, 12.0, 20.0]))
    return graph, msr_like_cluster(k, cpus, memory)


def brute_force_pipeline(graph: CompGraph, cluster: Cluster, *, contiguous: bool = True) -> float:
    """Least simulated max-load over every feasible placement (colocation groups together);
    ``contiguous`` keeps those whose devices can be ordered along the forward edges."""
    a = graph.arrays
    model = CostModel(graph, cluster, "pipeline")
    key = [g if g >= 0 else -1 - v for v, g in enumerate(a.group.tolist())]
    _, unit_of = np.unique(key, return_inverse=True)
    forward = ~a.backward[a.src] & ~a.backward[a.dst]
    best = math.inf
    for choice in itertools.product(range(cluster.num_devices), repeat=int(unit_of.max()) + 1):
        placement = np.asarray(choice)[unit_of]
        if contiguous and not _orderable(placement, a.src[forward], a.dst[forward]):
            continue
        result = model.evaluate(placement)
        if result.feasible:
            best = min(best, result.runtime)
    return best


def _orderable(placement: np.ndarray, src: np.ndarray, dst: np.ndarray) -> bool:
    g = nx.DiGraph()
    g.add_edges_from(
        (int(placement[u]), int(placement[v]))
        for u, v in zip(src, dst, strict=True)
        if placement[u] != placement[v]
    )
    return nx.is_directed_acyclic_graph(g)
