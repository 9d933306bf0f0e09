"""``Measurer``: run placements of one graph for real and time them."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from placerl._options import check_int
from placerl._registry import Registry
from placerl.cluster import Cluster, load_cluster
from placerl.errors import ConfigError, PlacementError
from placerl.graph import CompGraph, load_graph
from placerl.measure.layout import Layout
from placerl.measure.plan import WorkerPlan, make_plans
from placerl.measure.program import load_program, reference_run
from placerl.measure.runner import Repetition
from placerl.measure.source import bind, source_of
from placerl.measure.threads import ThreadPool, thread_devices
from placerl.measure.workers import WorkerPool, worker_devices
from placerl.sim import CostModel
from placerl.sim.model import check_placement

__all__ = ["Measurement", "Measurer"]

#: How devices run: ``name -> (devices(kinds) -> torch device of each leading device this
#: machine has, pool(source, layout, devices, timeout))``.
EXECUTORS: Registry[tuple[Callable[..., list[str]], Callable[..., Any]]] = Registry("executor")
EXECUTORS.register("processes", (worker_devices, WorkerPool))
EXECUTORS.register("threads", (thread_devices, ThreadPool))


@dataclass(frozen=True, eq=False)
class Measurement:
    """What running one placement for real says about it (seconds; arrays per node or device).

    Attributes:
        runtime: Median over the timed repetitions (the upper one of the two middle ones for an
            even count) of the time from the common start until the last device finished.
        samples: Every timed repetition's runtime.
        start: Per graph node, its step's start in the median repetition (from the common start).
        finish: Per graph node, its step's end in the median repetition.
        busy: Per device, the seconds its steps took in the median repetition. On GPUs (the
            thread executor) step times are when the host launched them; only ``runtime``
            and :meth:`Measurer.profile` wait for the device.
        durations: Per graph node, the median over the timed repetitions of its step's
            seconds (waiting for inputs excluded): profiled op times where they run.
        outputs: The program's outputs by fx name (only when asked for).
        grads: Training graphs, when outputs are asked for: each trainable parameter's
            gradient of the sum of the outputs, summed over the devices that used it.
    """

    runtime: float
    samples: tuple[float, ...]
    start: np.ndarray
    finish: np.ndarray
    busy: np.ndarray
    durations: np.ndarray
    outputs: dict[str, Any] | None = None
    grads: dict[str, Any] | None = None


class Measurer:
    """Runs placements of one imported graph on this machine's devices and times them.

    CPU devices are worker processes pinned to their own cores
    (:mod:`placerl.measure.workers`); GPUs, with the host CPU beside them, are threads of this
    process driving CUDA streams (:mod:`placerl.measure.threads`). Workers start on the first
    measurement and stay up until :meth:`close`.

    Args:
        graph: A graph of a real module: a zoo graph or spec, or a ``from_module`` graph
            (with ``module`` and ``example_inputs``, or bound with
            :func:`~placerl.measure.bind`). Coarsened and training graphs are fine.
        cluster: Devices of this machine (default ``local``: two CPU workers).
        module: The module ``graph`` was imported from, with real weights.
        example_inputs: Its example inputs.
        warmup: Untimed runs before the timed ones.
        repeats: Timed runs; their median is the runtime.
        timeout: Seconds one measurement may take before it fails (a hung worker).
        executor: ``processes`` (CPU devices as pinned worker processes), ``threads`` (one
            process, a thread per device: GPUs, and the host CPU beside them) or ``auto``
            (threads when the cluster has GPU devices and CUDA is available).

    Raises:
        GraphError: The graph has no module to run, does not match it, or cannot be split
            (a node's output cannot move between devices; the message names it).
        ConfigError: Bad ``warmup``, ``repeats`` or ``timeout``.
        ClusterError: A bad cluster spec.
    """

    def __init__(
        self,
        graph: CompGraph | str,
        cluster: Cluster | str = "local",
        *,
        module: Any = None,
        example_inputs: Any = None,
        warmup: int = 2,
        repeats: int = 5,
        timeout: float = 60.0,
        executor: str = "auto",
    ) -> None:
        graph = load_graph(graph)
        if module is not None:
            graph = bind(graph, module, example_inputs)
        self.graph, self.cluster = graph, load_cluster(cluster)
        self.warmup = check_int(warmup, "warmup", minimum=0)
        self.repeats = check_int(repeats, "repeats", minimum=1)
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not 0 < timeout < math.inf
        ):
            raise ConfigError(f"timeout must be a finite number of seconds > 0, got {timeout!r}")
        kinds = list(self.cluster.kinds)
        if executor == "auto":
            executor = "threads" if "gpu" in kinds and torch.cuda.is_available() else "processes"
        self.executor = executor
        devices, pool = EXECUTORS[executor]
        self.devices = devices(kinds)
        source = source_of(graph)
        loaded = load_program(source)
        self.layout = Layout.build(graph, loaded, reference_run(loaded), loaded.names)
        self.model = CostModel(graph, self.cluster, "step_time")
        self.pool = pool(source, self.layout, self.devices, float(timeout))

    def measure(self, placement: Any, *, outputs: bool = False) -> Measurement:
        """Run ``placement`` ``warmup + repeats`` times; the timed runs' median.

        Args:
            placement: A device index per graph node.
            outputs: Also return the program's outputs (to check them against the module).

        Raises:
            PlacementError: A bad placement, a device this machine lacks (the message lists
                the available ones), or a backward node away from its forward node.
            MeasurementError: A worker failed, crashed or hung (the workers are restarted on
                the next call).
        """
        placement = self.check(placement)
        start = self.model.evaluate(placement, check=False, times=True).start
        plans, arena = make_plans(self.graph, self.layout, placement, start, len(self.devices))
        runs = self.pool.call(
            "run", [(p, self.warmup + self.repeats, outputs, False) for p in plans], arena=arena
        )
        return self._summarize([r[self.warmup :] for r in runs], outputs)

    def profile(self, devices: Sequence[int]) -> np.ndarray:
        """Every device of ``devices`` runs the whole graph at once, on its own: the median
        seconds of each node's step, per device (rows in ``devices`` order).

        Devices running together share the machine (caches, memory bandwidth, the host's
        scheduling of its virtual CPUs), so these are the op times a placement that keeps
        them all busy sees; one device alone gives the op times of an idle machine.

        Raises:
            PlacementError: A device this machine lacks.
            MeasurementError: A worker failed or hung.
        """
        devices = list(devices)
        plans = {}
        for d in devices:
            placement = self.check(np.full(self.graph.num_nodes, d, dtype=np.int64))
            start = self.model.evaluate(placement, check=False, times=True).start
            plans[d] = make_plans(self.graph, self.layout, placement, start, d + 1)[0][d]
        idle = WorkerPlan(steps=())
        runs = self.pool.call(
            "run",
            [
                (plans.get(d, idle), self.warmup + self.repeats, False, True)
                for d in range(len(self.devices))
            ],
        )
        return np.stack([self._durations(runs[d][self.warmup :]) for d in devices])

    def check(self, placement: Any) -> np.ndarray:
        """``placement`` as an array, if this machine can run it.

        Raises:
            PlacementError: See :meth:`measure`.
        """
        placement = check_placement(placement, self.graph, self.cluster.num_devices)
        missing = np.flatnonzero(placement >= len(self.devices))
        if missing.size:
            v = missing[0]
            d = int(placement[v])
            here = (
                ", ".join(f"{i} ({self.cluster.devices[i].name})" for i in range(len(self.devices)))
                or "none"
            )
            raise PlacementError(
                f"placement puts node {self.graph.names[v]!r} on device {d} "
                f"({self.cluster.devices[d].name}, kind {self.cluster.devices[d].kind}), which "
                f"this machine lacks; available here: {here}"
            )
        backward = self.layout.backward
        has = backward >= 0
        split = np.flatnonzero(placement[self.layout.forward[has]] != placement[backward[has]])
        if split.size:
            v = int(self.layout.forward[has][split[0]])
            raise PlacementError(
                f"node {self.graph.names[v]!r} and its backward node are on different devices; "
                "a measured backward step runs where its forward step kept its tensors"
            )
        return placement

    def transfer_times(
        self, src: int, dst: int, sizes: Sequence[int], repeats: int = 5
    ) -> np.ndarray:
        """Round-trip seconds of a message of each size from device ``src`` to ``dst`` and one
        byte back, ``repeats`` times each: an array of shape ``(len(sizes), repeats)``.

        Raises:
            PlacementError: ``src`` or ``dst`` is not a device this machine has, or they are equal.
            MeasurementError: A worker failed or hung.
        """
        here = len(self.devices)
        if not (0 <= src < here and 0 <= dst < here) or src == dst:
            raise PlacementError(
                f"transfer_times needs two different devices among 0..{here - 1}, got {src}, {dst}"
            )
        sizes = [check_int(s, "message size", minimum=1) for s in sizes]
        repeats = check_int(repeats, "repeats", minimum=1)
        if not sizes:
            raise ConfigError("transfer_times needs at least one message size")
        replies = self.pool.call("ping", [(src, dst, sizes, repeats)] * here, arena=max(sizes) + 1)
        return np.array(replies[src]).reshape(len(sizes), repeats)

    @property
    def available(self) -> list[int]:
        """Indices of the cluster devices this machine has (the leading ones)."""
        return list(range(len(self.devices)))

    def close(self) -> None:
        """Stop the worker processes."""
        self.pool.stop()

    def __enter__(self) -> Measurer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _durations(self, run: list[Repetition]) -> np.ndarray:
        """Median seconds of each node's step over one device's repetitions (0 if absent)."""
        seconds = np.zeros((len(run), self.graph.num_nodes))
        for i, repetition in enumerate(run):
            for node, backward, began, ended in repetition.steps:
                v = self.layout.backward[node] if backward else self.layout.forward[node]
                seconds[i, v] = ended - began
        return np.median(seconds, axis=0)

    def _summarize(self, runs: list[list[Repetition]], outputs: bool) -> Measurement:
        repeats = len(runs[0])
        samples = [
            max(r[i].end for r in runs) - min(r[i].start for r in runs) for i in range(repeats)
        ]
        median = sorted(range(repeats), key=samples.__getitem__)[repeats // 2]
        origin = min(r[median].start for r in runs)
        n = self.graph.num_nodes
        start, finish = np.zeros(n), np.zeros(n)
        busy = np.zeros(self.cluster.num_devices)
        kept: dict[str, Any] = {}
        grads: dict[str, Any] = {}
        for device, run in enumerate(runs):
            for node, backward, began, ended in run[median].steps:
                v = self.layout.backward[node] if backward else self.layout.forward[node]
                start[v], finish[v] = began - origin, ended - origin
                busy[device] += ended - began
            kept.update(run[median].outputs)
            for name, grad in run[median].grads.items():
                grads[name] = grads[name] + grad if name in grads else grad
        return Measurement(
            runtime=float(statistics.median_high(samples)),  # the timeline's repetition
            samples=tuple(samples),
            start=start,
            finish=finish,
            busy=busy,
            durations=sum(self._durations(run) for run in runs),
            outputs=kept if outputs else None,
            grads=grads if outputs and self.layout.training else None,
        )
