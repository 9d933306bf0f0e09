"""Fit the simulator to this machine: per-op costs and link latency and bandwidth, measured.

:func:`calibrate` runs the whole graph on one device of each kind and keeps every node's
median step time as its ``costs[kind]`` (so the executor's own overhead per node is in the
cost, and ``op_gap`` becomes 0), then times messages of a few sizes between every pair of
devices (round trips, one clock) and fits ``time = 2 latency + bytes / bandwidth`` with the
Theil-Sen estimator (the
median of pairwise slopes: on a shared machine a few transfers take several times longer,
and a least-squares fit follows them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.stats import theilslopes

from placerl.cluster import Cluster
from placerl.graph import CompGraph
from placerl.measure.measurer import Measurer

__all__ = ["TRANSFER_SIZES", "calibrate"]

#: Message sizes (bytes) timed on every link: from latency-bound to bandwidth-bound.
TRANSFER_SIZES = (1 << 10, 1 << 14, 1 << 17, 1 << 19, 1 << 20, 1 << 21, 1 << 22)


def calibrate(
    graph: CompGraph | str,
    module: Any = None,
    example_inputs: Any = None,
    cluster: Cluster | str = "local",
    *,
    repeats: int = 5,
    sizes: Sequence[int] = TRANSFER_SIZES,
    measurer: Measurer | None = None,
) -> tuple[CompGraph, Cluster]:
    """A graph and cluster whose simulated runtimes follow this machine's measured ones.

    Args:
        graph: A graph of a real module (see :class:`~placerl.measure.Measurer`).
        module: The module ``graph`` was imported from (not needed for zoo graphs).
        example_inputs: Its example inputs.
        cluster: This machine's devices (default ``local``).
        repeats: Timed runs per measurement (medians are kept).
        sizes: Message sizes timed on every link.
        measurer: An open measurer of ``graph`` on ``cluster`` to reuse (its workers stay up).

    Returns:
        ``(graph, cluster)``: each node's ``costs[kind]`` measured on a device of that kind
        (``meta["calibrated"]`` says how); latency and bandwidth fitted per link among the
        devices this machine has, ``op_gap`` and ``transfer_gap`` 0.

    Raises:
        GraphError: The graph has no module to run or does not match it.
        MeasurementError: A worker failed or hung.
    """
    own = measurer is None
    if measurer is None:
        measurer = Measurer(graph, cluster, module=module, example_inputs=example_inputs,
                            repeats=repeats)  # fmt: skip
    try:
        costs = _node_costs(measurer)
        bandwidth, latency, fits = _links(measurer, list(sizes), repeats)
    finally:
        if own:
            measurer.close()
    base = measurer.cluster
    calibrated_cluster = Cluster(
        base.devices, bandwidth=bandwidth, latency=latency, comm_model=base.comm_model,
        name=f"{base.name}+calibrated",
    )  # fmt: skip
    g = measurer.graph
    nodes = [{**node.to_dict(), "costs": {**node.costs, **{k: float(c[v]) for k, c in costs.items()}}}
             for v, node in enumerate(g.nodes)]  # fmt: skip
    meta = {**g.meta, "calibrated": {"cluster": base.name, "kinds": sorted(costs),
                                     "repeats": repeats, "links": fits}}  # fmt: skip
    return CompGraph(nodes, g.edges, name=g.name, meta=meta), calibrated_cluster


def _node_costs(measurer: Measurer) -> dict[str, np.ndarray]:
    """Median step seconds of every node on the first available device of each kind."""
    costs: dict[str, np.ndarray] = {}
    for d in measurer.available:
        kind = measurer.cluster.devices[d].kind
        if kind not in costs:
            placement = np.full(measurer.graph.num_nodes, d, dtype=np.int64)
            costs[kind] = measurer.measure(placement).durations
    return costs


def _links(measurer: Measurer, sizes: list[int],
           repeats: int) -> tuple[np.ndarray, np.ndarray, list[dict[str, float]]]:  # fmt: skip
    """Fitted bandwidth and latency matrices (other entries as in the cluster), and the fits."""
    base = measurer.cluster
    bandwidth, latency = base.bandwidth.copy(), base.latency.copy()
    fits = []
    for src in measurer.available:
        for dst in measurer.available:
            if src == dst:
                continue
            seconds = measurer.transfer_times(src, dst, sizes, repeats)
            nbytes = np.repeat(np.asarray(sizes, dtype=float), seconds.shape[1])
            slope, intercept, *_ = theilslopes(seconds.ravel(), nbytes)
            bandwidth[src, dst] = 1.0 / slope if slope > 0 else np.inf
            latency[src, dst] = max(float(intercept) / 2, 0.0)  # there and back
            fits.append({"src": src, "dst": dst, "bandwidth": float(bandwidth[src, dst]),
                         "latency": float(latency[src, dst])})  # fmt: skip
    return bandwidth, latency, fits
