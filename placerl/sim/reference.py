"""A slow, obviously correct pure-Python simulator with the semantics of :mod:`placerl.sim`.

It exists to be read and to test the numba kernels against: plain dicts and lists, one step per
rule of the module docstring, no precomputation. Never use it in a training loop.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from placerl.cluster import Cluster
from placerl.graph import CompGraph
from placerl.sim.model import check_placement
from placerl.sim.result import SimResult


def duration(graph: CompGraph, cluster: Cluster, v: int, d: int) -> float:
    """Seconds of node ``v`` on device ``d``."""
    node, device = graph.nodes[v], cluster.devices[d]
    if device.kind in node.costs:
        return node.costs[device.kind]
    return node.cost / device.speed


def edge_seconds(graph: CompGraph, cluster: Cluster, edge_index: int, s: int, d: int) -> float:
    """Uncontended seconds of one edge from device ``s`` to device ``d``."""
    edge = graph.edges[edge_index]
    if edge.time is not None:
        return edge.time
    return float(cluster.latency[s, d] + edge.bytes / cluster.bandwidth[s, d])


def _out_edges(graph: CompGraph) -> dict[int, list[tuple[int, int]]]:
    """Per producer: (consumer, edge index) pairs sorted by consumer index."""
    out: dict[int, list[tuple[int, int]]] = {v: [] for v in range(graph.num_nodes)}
    for i, edge in enumerate(graph.edges):
        out[graph.index(edge.src)].append((graph.index(edge.dst), i))
    return {v: sorted(pairs) for v, pairs in out.items()}


def _remote_times(graph, cluster, placement, u, out_edges) -> dict[int, float]:
    """Longest edge time from ``u`` to each other device holding a consumer."""
    s = placement[u]
    times: dict[int, float] = {}
    for v, e in out_edges[u]:
        d = placement[v]
        if d != s:
            times[d] = max(times.get(d, -1.0), edge_seconds(graph, cluster, e, s, d))
    return times


def simulate_step_time(graph: CompGraph, placement: list[int], cluster: Cluster) -> dict[str, Any]:
    """Event-driven step time; returns runtime, start, finish, arrivals, busy and comm."""
    n, n_dev = graph.num_nodes, cluster.num_devices
    out_edges = _out_edges(graph)
    waiting_inputs = [0] * n
    for edge in graph.edges:
        waiting_inputs[graph.index(edge.dst)] += 1
    ready_time = [0.0] * n
    queue: list[list[tuple[float, int]]] = [[] for _ in range(n_dev)]  # unstarted, ready ops
    free_at = [0.0] * n_dev
    channel_free = [0.0] * n_dev
    link_free = {(s, d): 0.0 for s in range(n_dev) for d in range(n_dev)}
    start, finish, arrival_of_edge = [0.0] * n, [0.0] * n, [0.0] * graph.num_edges
    busy, comm = [0.0] * n_dev, [0.0] * n_dev
    events: list[tuple[float, int]] = [(0.0, -1)]  # (time, finished node or -1 to wake up)
    for v in range(n):
        if waiting_inputs[v] == 0:
            queue[placement[v]].append((0.0, v))

    while events:
        now = min(t for t, _ in events)
        finished = sorted(v for t, v in events if t == now and v >= 0)
        events = [(t, v) for t, v in events if t != now]
        for u in finished:
            s = placement[u]
            remote = _remote_times(graph, cluster, placement, u, out_edges)
            arrival = {}
            if remote and cluster.comm_model == "placeto":
                begin = max(now, channel_free[s])
                longest = max(remote.values())
                channel_free[s] = begin + longest + cluster.transfer_gap
                comm[s] += longest
                arrival = dict.fromkeys(remote, begin + longest)
            elif cluster.comm_model == "links":
                for d in sorted(remote):
                    begin = max(now, link_free[s, d])
                    arrival[d] = begin + remote[d]
                    link_free[s, d] = arrival[d] + cluster.transfer_gap
                    comm[s] += remote[d]
            else:
                for d in sorted(remote):
                    arrival[d] = now + remote[d]
                    comm[s] += remote[d]
            for v, e in out_edges[u]:
                here = now if placement[v] == s else arrival[placement[v]]
                arrival_of_edge[e] = here
                ready_time[v] = max(ready_time[v], here)
                waiting_inputs[v] -= 1
                if waiting_inputs[v] == 0:
                    queue[placement[v]].append((ready_time[v], v))
                    events.append((ready_time[v], -1))
        for d in range(n_dev):
            candidates = [item for item in queue[d] if item[0] <= now]
            if free_at[d] > now or not candidates:
                continue
            chosen = min(candidates)  # earliest ready time, then lowest index
            queue[d].remove(chosen)
            v = chosen[1]
            took = duration(graph, cluster, v, d)
            start[v], finish[v] = now, now + took
            busy[d] += took
            free_at[d] = finish[v] + (cluster.op_gap if took > 0 else 0.0)
            events.append((finish[v], v))
            if free_at[d] > finish[v]:
                events.append((free_at[d], -1))
    return {
        "runtime": max(finish),
        "start": start,
        "finish": finish,
        "arrival_of_edge": arrival_of_edge,
        "busy": busy,
        "comm": comm,
    }


def peak_activations(graph, placement, start, finish, arrival_of_edge, n_dev) -> list[float]:
    """Peak live activation bytes per device, by listing every tensor's lifetime."""
    out_edges = _out_edges(graph)
    lifetimes: list[tuple[int, float, float, float]] = []  # (device, born, freed, bytes)
    for u, node in enumerate(graph.nodes):
        if node.out_bytes <= 0:
            continue
        s = placement[u]
        freed = finish[u]
        copies: dict[int, list[float]] = {}
        for v, e in out_edges[u]:
            d = placement[v]
            if d == s:
                freed = max(freed, finish[v])
            else:
                freed = max(freed, arrival_of_edge[e])
                born, until = copies.get(d, [math.inf, -math.inf])
                copies[d] = [min(born, arrival_of_edge[e]), max(until, finish[v])]
        lifetimes.append((s, start[u], freed, node.out_bytes))
        lifetimes += [
            (d, born, until, node.out_bytes) for d, (born, until) in sorted(copies.items())
        ]
    peaks = []
    for d in range(n_dev):
        mine = [x for x in lifetimes if x[0] == d]
        # At equal times allocations (flag 0) come before frees (flag 1).
        changes = sorted(
            [(b, 0, size) for _, b, _, size in mine] + [(f, 1, -size) for _, _, f, size in mine]
        )
        level, peak = 0.0, 0.0
        for _, _, delta in changes:
            level += delta
            peak = max(peak, level)
        peaks.append(peak)
    return peaks


def max_load(graph: CompGraph, placement: list[int], cluster: Cluster) -> dict[str, Any]:
    """Tarnawski et al.'s max load: per device compute plus charged communication."""
    n_dev = cluster.num_devices
    out_edges = _out_edges(graph)
    busy, comm = [0.0] * n_dev, [0.0] * n_dev
    for u in range(graph.num_nodes):
        s = placement[u]
        busy[s] += duration(graph, cluster, u, s)
        remote = _remote_times(graph, cluster, placement, u, out_edges)
        if not remote:
            continue
        if not cluster.devices[s].is_cpu:
            comm[s] += max(remote.values())
        for d, seconds in remote.items():
            if not cluster.devices[d].is_cpu:
                comm[d] += seconds
    return {
        "runtime": max(b + c for b, c in zip(busy, comm, strict=True)),
        "busy": busy,
        "comm": comm,
    }


def simulate(
    graph: CompGraph, placement: Any, cluster: Cluster, objective: str = "step_time"
) -> SimResult:
    """Reference twin of :func:`placerl.sim.simulate` (``step_time`` and ``pipeline``)."""
    p = [int(x) for x in check_placement(placement, graph, cluster.num_devices)]
    n_dev = cluster.num_devices
    memory = [0.0] * n_dev
    for v, node in enumerate(graph.nodes):
        memory[p[v]] += node.mem_bytes
    unsupported = tuple(
        v for v in range(graph.num_nodes) if math.isinf(duration(graph, cluster, v, p[v]))
    )
    groups: dict[str, set[int]] = {}
    for v, node in enumerate(graph.nodes):
        if node.group is not None:
            groups.setdefault(node.group, set()).add(p[v])
    split = tuple(
        g for g in dict.fromkeys(n.group for n in graph.nodes if n.group) if len(groups[g]) > 1
    )
    times: dict[str, Any] = {}
    peak = list(memory)
    if objective == "pipeline":
        out = max_load(graph, p, cluster)
    elif unsupported:
        inf = [math.inf] * graph.num_nodes
        out = {"runtime": math.inf, "busy": [0.0] * n_dev, "comm": [0.0] * n_dev}
        times = {"start": np.array(inf), "finish": np.array(inf)}
    else:
        out = simulate_step_time(graph, p, cluster)
        live = peak_activations(
            graph, p, out["start"], out["finish"], out["arrival_of_edge"], n_dev
        )
        peak = [m + x for m, x in zip(memory, live, strict=True)]
        times = {"start": np.array(out["start"]), "finish": np.array(out["finish"])}
    excess = [max(pk - cap, 0.0) for pk, cap in zip(peak, cluster.memory, strict=True)]
    return SimResult(
        objective=objective,
        runtime=out["runtime"],
        feasible=not (any(x > 0 for x in excess) or split or unsupported),
        busy=np.array(out["busy"]),
        comm=np.array(out["comm"]),
        memory=np.array(memory),
        peak_memory=np.array(peak),
        memory_excess=np.array(excess),
        split_groups=split,
        unsupported_nodes=unsupported,
        **times,
    )
