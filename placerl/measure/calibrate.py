"""Fit the simulator to this machine: per-op costs and link latency and bandwidth, measured.

:func:`calibrate` does three things:

1. It runs the whole graph on every device at once (or on one device of each kind alone) and
   keeps every node's median step time as its ``costs[kind]``: the executor's own overhead per
   node is in the cost, so ``op_gap`` becomes 0. Profiling synchronizes a GPU after every
   step, while a run queues its launches ahead of the GPU; so a kind whose steps run
   asynchronously (:data:`ASYNCHRONOUS`) has its costs scaled by one factor, that which makes
   the whole graph's simulated runtime on one such device, running alone, its measured one
   (with ``together`` the factor so also takes out what the other devices cost its steps
   while they were profiled). CPU workers' steps are timed as they run and are not scaled:
   their factor would only add noise (0.98-0.99 on an idle 2-core machine, 1.2 to 2.3 with
   other work on it).
2. It times round trips of a few message sizes between every pair of devices (one clock, so no
   skew between processes) and fits ``time = 2 latency + bytes / bandwidth`` to every sample
   with the Theil-Sen estimator (the median of pairwise slopes): a transfer stalled by a busy
   machine does not move the fit, as it would a least-squares one.
3. It measures a few random placements whole and adds to every link the latency that makes
   their simulated runtimes closest to the measured ones (see :func:`_in_run_latency`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from placerl.cluster import Cluster
from placerl.errors import ConfigError
from placerl.graph import CompGraph, load_graph
from placerl.measure.measurer import Measurer
from placerl.sim import CostModel

__all__ = ["TRANSFER_SIZES", "calibrate"]

#: Torch device types whose steps a run launches asynchronously: their profiled step times
#: (each one synchronized) add up to more than a whole run, and :func:`calibrate` scales them.
ASYNCHRONOUS = ("cuda",)

#: Whole runs measured for a run scale (the median is kept): on a lent H200 one GPU-alone
#: run of a small transformer took 4.6 ms in some measurements and 8.7 ms in others.
RUN_SCALE_MEASUREMENTS = 5

#: Message sizes (bytes) timed on every link: from latency-bound to bandwidth-bound.
TRANSFER_SIZES = (1 << 10, 1 << 14, 1 << 17, 1 << 19, 1 << 20, 1 << 21, 1 << 22)


def calibrate(
    graph: CompGraph | str,
    module: Any = None,
    example_inputs: Any = None,
    cluster: Cluster | str = "local",
    *,
    repeats: int = 5,
    together: bool = True,
    sizes: Sequence[int] = TRANSFER_SIZES,
    runs: int = 8,
    seed: int = 0,
    measurer: Measurer | None = None,
) -> tuple[CompGraph, Cluster]:
    """A graph and cluster whose simulated runtimes follow this machine's measured ones.

    Args:
        graph: A graph of a real module (see :class:`~placerl.measure.Measurer`).
        module: The module ``graph`` was imported from (not needed for zoo graphs).
        example_inputs: Its example inputs.
        cluster: This machine's devices (default ``local``).
        repeats: Timed runs per measurement (medians are kept).
        together: Time the ops with every device running the graph at once (the op times a
            placement that keeps every device busy sees; on a machine whose cores share
            caches and memory bandwidth they are longer than on an idle one), else on one
            device of each kind alone.
        sizes: Message sizes timed on every link.
        runs: Random placements measured whole to fit the latency a message has inside a
            run (0: keep the pinged latency).
        seed: Seed of those placements.
        measurer: An open measurer of ``graph`` to reuse (its workers stay up; its cluster
            and repeats are used).

    Returns:
        ``(graph, cluster)``: each node's ``costs[kind]`` measured on a device of that kind
        (``meta["calibrated"]`` says how, ``run_scales`` the factor of each asynchronous
        kind); latency and bandwidth fitted per link among the devices this machine has,
        ``op_gap`` and ``transfer_gap`` 0.

    Raises:
        GraphError: The graph has no module to run or does not match it.
        MeasurementError: A worker failed or hung.
    """
    own = measurer is None
    if measurer is None:
        measurer = Measurer(
            graph, cluster, module=module, example_inputs=example_inputs, repeats=repeats
        )
    elif load_graph(graph).fingerprint() != measurer.graph.fingerprint():
        raise ConfigError("calibrate got a measurer of another graph")
    repeats = measurer.repeats
    try:
        costs = _node_costs(measurer, together)
        bandwidth, latency, fits = _links(measurer, list(sizes), repeats)
        g = measurer.graph
        base = measurer.cluster
        cluster = Cluster(
            base.devices,
            bandwidth=bandwidth,
            latency=latency,
            comm_model=base.comm_model,
            name=f"{base.name}+calibrated",
        )
        scales = _run_scales(measurer, _with_costs(g, costs), cluster)
        costs = {kind: c * scales.get(kind, 1.0) for kind, c in costs.items()}
        graph = _with_costs(g, costs)
        extra = _in_run_latency(measurer, graph, cluster, runs, seed)
    finally:
        if own:
            measurer.close()
    cluster = _with_latency(cluster, measurer.available, extra)
    meta = {
        **g.meta,
        "calibrated": {
            "cluster": base.name,
            "kinds": sorted(costs),
            "repeats": repeats,
            "together": together,
            "links": fits,
            "run_scales": scales,
            "in_run_latency": extra,
            "runs": runs,
        },
    }
    return _with_costs(g, costs, meta), cluster


def _with_costs(
    graph: CompGraph, costs: dict[str, np.ndarray], meta: dict | None = None
) -> CompGraph:
    """``graph`` with each node's ``costs[kind]`` replaced by ``costs[kind][node]``."""
    nodes = [
        {**node.to_dict(), "costs": {**node.costs, **{k: float(c[v]) for k, c in costs.items()}}}
        for v, node in enumerate(graph.nodes)
    ]
    return CompGraph(nodes, graph.edges, name=graph.name, meta=graph.meta if meta is None else meta)


def _kinds(measurer: Measurer) -> dict[str, list[int]]:
    """The devices this machine has, by kind."""
    kinds: dict[str, list[int]] = {}
    for d in measurer.available:
        kinds.setdefault(measurer.cluster.devices[d].kind, []).append(d)
    return kinds


def _run_scales(measurer: Measurer, graph: CompGraph, cluster: Cluster) -> dict[str, float]:
    """Per asynchronous kind: the whole graph's measured runtime on its first device (the
    median of :data:`RUN_SCALE_MEASUREMENTS`) over the runtime ``graph``'s profiled costs
    simulate (on a GPU alone 10.5 ms measured against 16.0 ms simulated for a small
    Inception-v3, ``benchmarks/results/archive/measured_cpu_gpu.md``)."""
    scales = {}
    for kind, devices in _kinds(measurer).items():
        d = devices[0]
        if not measurer.devices[d].startswith(ASYNCHRONOUS):
            continue
        placement = np.full(graph.num_nodes, d, dtype=np.int64)
        simulated = CostModel(graph, cluster).runtime(placement, check=False)
        runs = [measurer.measure(placement).runtime for _ in range(RUN_SCALE_MEASUREMENTS)]
        scales[kind] = float(np.median(runs) / simulated)
    return scales


def _node_costs(measurer: Measurer, together: bool) -> dict[str, np.ndarray]:
    """Step seconds of every node per device kind: the median over the kind's devices, all
    running at once (``together``), or the first device of the kind alone."""
    kinds = _kinds(measurer)
    if not together:
        return {kind: measurer.profile(ds[:1])[0] for kind, ds in kinds.items()}
    everyone = [d for ds in kinds.values() for d in ds]
    seconds = dict(zip(everyone, measurer.profile(everyone), strict=True))
    return {kind: np.median([seconds[d] for d in ds], axis=0) for kind, ds in kinds.items()}


#: Extra per-message latencies tried by the in-run fit (seconds).
IN_RUN_LATENCIES = np.concatenate([[0.0], np.geomspace(1e-6, 1e-2, 81)])


def _in_run_latency(
    measurer: Measurer, graph: CompGraph, cluster: Cluster, runs: int, seed: int
) -> float:
    """The latency to add to every pinged link so that simulated runs of ``runs`` random
    placements best match measured ones (least mean absolute log error).

    An idle round trip misses what a message costs inside a run (waking a waiting worker,
    reading data another core wrote); random placements cut many edges, so they expose it.
    """
    if runs == 0:
        return 0.0
    rng = np.random.default_rng(seed)
    here = measurer.available
    placements = [rng.choice(here, graph.num_nodes) for _ in range(runs)]
    placements = [measurer.check(_colocated(measurer, p)) for p in placements]
    measured = np.array([measurer.measure(p).runtime for p in placements])
    errors = []
    for extra in IN_RUN_LATENCIES:
        model = CostModel(graph, _with_latency(cluster, here, extra))
        simulated = np.array([model.runtime(p, check=False) for p in placements])
        errors.append(np.mean(np.abs(np.log(simulated / measured))))
    return float(IN_RUN_LATENCIES[int(np.argmin(errors))])


def _colocated(measurer: Measurer, placement: np.ndarray) -> np.ndarray:
    """Backward nodes moved to their forward node's device."""
    layout = measurer.layout
    has = layout.backward >= 0
    placement[layout.backward[has]] = placement[layout.forward[has]]
    return placement


def _with_latency(cluster: Cluster, devices: list[int], extra: float) -> Cluster:
    latency = cluster.latency.copy()
    pairs = np.ix_(devices, devices)
    latency[pairs] += extra
    return Cluster(
        cluster.devices,
        bandwidth=cluster.bandwidth,
        latency=latency,
        comm_model=cluster.comm_model,
        name=cluster.name,
    )


def _links(
    measurer: Measurer, sizes: list[int], repeats: int
) -> tuple[np.ndarray, np.ndarray, list[dict[str, float]]]:
    """Fitted bandwidth and latency matrices (other entries as in the cluster), and the fits."""
    from scipy.stats import theilslopes  # here: scipy.stats costs every worker 0.6 s to import

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
            fits.append(
                {
                    "src": src,
                    "dst": dst,
                    "bandwidth": float(bandwidth[src, dst]),
                    "latency": float(latency[src, dst]),
                }
            )
    return bandwidth, latency, fits
