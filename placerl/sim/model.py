"""``CostModel``: precompute once per (graph, cluster, objective), evaluate placements fast."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from placerl._options import check_options
from placerl._registry import Registry
from placerl._spec import split_named
from placerl.cluster import Cluster, load_cluster
from placerl.errors import ConfigError, PlacementError
from placerl.graph import CompGraph, load_graph
from placerl.sim import kernels
from placerl.sim.result import SimResult


class Objective(Protocol):
    """How a :class:`CostModel` turns a checked placement into a :class:`SimResult`."""

    def __call__(self, model: CostModel, placement: np.ndarray, times: bool) -> SimResult: ...


#: Objectives by name; other packages add theirs through the ``placerl.objectives`` entry
#: point group (``measured`` comes from :mod:`placerl.measure` that way).
OBJECTIVES: Registry[Objective] = Registry("objective", plugins="placerl.objectives")


def register_objective(
    name: str,
    *,
    options: Callable[..., Any] | None = None,
    prepare: Callable[[CostModel], Any] | None = None,
    decides: str = "device",
    overwrite: bool = False,
) -> Callable[[Objective], Objective]:
    """Register ``fn(model, placement, times) -> SimResult`` as objective ``name``.

    ``times``: whether the result should carry per-node start and finish times (when the
    objective has them); callers that only read runtimes and feasibility pass ``False``.
    ``options``: a factory whose keyword parameters are the objective's options
    (``measured?repeats=3``); :class:`CostModel` builds ``model.objective_options`` with it.
    Objectives without it take no options.
    ``prepare``: ``fn(model) -> state`` run once per :class:`CostModel` (``model.prepared``).
    ``decides``: what a placement holds per node, ``"device"`` or another choice
    (``"configuration"`` for ``strategy``), whose prepared state then has ``choices`` and
    ``check`` (see :meth:`CostModel.check`).
    """

    def wrap(fn: Objective) -> Objective:
        fn.options = options  # type: ignore[attr-defined]
        fn.prepare = prepare  # type: ignore[attr-defined]
        fn.decides = decides  # type: ignore[attr-defined]
        return OBJECTIVES.register(name, fn, overwrite=overwrite)

    return wrap


def parse_objective(spec: str) -> tuple[str, Any]:
    """``name?k=v&...`` as ``(name, options)``: options built by the objective's factory.

    Raises:
        ConfigError: Not a string, an unknown objective (lists the known ones), or an unknown
            option or a value of the wrong type (names it).
    """
    if not isinstance(spec, str):
        OBJECTIVES[spec]  # raises: unknown objective 3; known: ...
    name, options = split_named(spec, what="objective")
    factory = getattr(OBJECTIVES[name], "options", None)
    if factory is None:
        if options:
            raise ConfigError(f"objective {name!r} takes no options, got {', '.join(options)}")
        return name, None
    check_options(factory, options, what=f"objective {name!r}", error=ConfigError)
    return name, factory(**options)


def objective_decides(spec: str) -> str:
    """What objective ``spec`` takes per node: ``"device"`` or its own choice (see
    :func:`register_objective`)."""
    name, _ = parse_objective(spec)
    return getattr(OBJECTIVES[name], "decides", "device")


#: Objectives whose value can be updated move by move: name -> ``cls(model, placement)``.
INCREMENTAL: Registry[Callable[..., Any]] = Registry("incremental objective")


def register_incremental(objective: str) -> Callable[[type], type]:
    """Register a state class updating ``objective`` one group move at a time."""
    return INCREMENTAL.decorator(objective)


def duration_matrix(graph: CompGraph, cluster: Cluster) -> np.ndarray:
    """Seconds of each node on each device: ``costs[kind]`` if given, else ``cost / speed``."""
    a = graph.arrays
    out = np.empty((a.num_nodes, cluster.num_devices))
    for d, device in enumerate(cluster.devices):
        scaled = a.cost / device.speed
        explicit = a.kind_costs.get(device.kind)
        out[:, d] = scaled if explicit is None else np.where(np.isnan(explicit), scaled, explicit)
    out.flags.writeable = False
    return out


def check_placement(placement: Any, graph: CompGraph, num_devices: int) -> np.ndarray:
    """Validate a placement and return it as a contiguous ``int64`` array.

    Raises:
        PlacementError: Wrong shape or length, a non-numeric / non-integer / NaN entry, or a
            device index out of range; the message names the first offending node.
    """
    arr = np.asarray(placement)
    n = graph.num_nodes
    # The common case (envs, placers): one compiled pass instead of the full diagnosis.
    fast = arr.dtype == np.int64 and arr.shape == (n,) and arr.flags.c_contiguous and n > 0
    if fast and kernels.all_below(arr, num_devices):
        return arr
    if arr.ndim != 1 or arr.shape[0] != n:
        raise PlacementError(
            f"placement has shape {arr.shape}; expected ({n},): "
            f"one device per node of {graph.name!r}"
        )
    if arr.dtype.kind == "f":
        bad = np.flatnonzero(np.isnan(arr))
        if bad.size:
            raise PlacementError(f"placement is NaN at node {graph.names[bad[0]]!r}")
        bad = np.flatnonzero(arr != np.round(arr))
        if bad.size:
            v = bad[0]
            raise PlacementError(
                f"placement has non-integer device {arr[v].item()!r} at node {graph.names[v]!r}"
            )
    elif arr.dtype.kind not in "iu":
        raise PlacementError(f"placement must hold integer device indices, got dtype {arr.dtype}")
    bad = np.flatnonzero((arr < 0) | (arr >= num_devices))
    if bad.size:
        v = bad[0]
        raise PlacementError(
            f"placement puts node {graph.names[v]!r} on device {arr[v].item()!r}; "
            f"the cluster has devices 0..{num_devices - 1}"
        )
    return np.ascontiguousarray(arr, dtype=np.int64)


class CostModel:
    """Everything about (graph, cluster, objective) that does not depend on the placement.

    Args:
        graph: The computation graph, or a spec for :func:`placerl.graph.load_graph`.
        cluster: The devices and links, or a spec for :func:`placerl.cluster.load_cluster`.
        objective: A registered objective (``step_time``, ``pipeline``, ``measured``), with
            options where it has them (``measured?repeats=3``).

    Raises:
        ConfigError: Unknown objective or option, or a malformed graph spec.
        ClusterError: A bad cluster spec.

    Example:
        >>> g, c = load_graph("msr:bert24_inference"), Cluster.from_msr("bert24_inference")
        >>> model = CostModel(g, c, objective="pipeline")
        >>> model.evaluate(np.zeros(32, dtype=int)).runtime   # doctest: +SKIP
    """

    def __init__(
        self,
        graph: CompGraph | str,
        cluster: Cluster | str,
        objective: str = "step_time",
    ) -> None:
        name, self.objective_options = parse_objective(objective)
        self._objective_fn = OBJECTIVES[name]
        self.graph = graph = load_graph(graph)
        self.cluster = cluster = load_cluster(cluster)
        self.objective = objective
        self.arrays = graph.arrays
        self.durations = duration_matrix(graph, cluster)
        self.capacity = cluster.memory
        self.is_cpu = cluster.is_cpu
        self.comm_model = kernels.COMM_MODEL_CODES[cluster.comm_model]
        self.edge_time = np.ascontiguousarray(self.arrays.edge_time)
        self.in_degree = self.arrays.in_degree
        self._has_unsupported = bool(np.isinf(self.durations).any())
        prepare = getattr(self._objective_fn, "prepare", None)
        self.prepared = None if prepare is None else prepare(self)
        self._members: list[np.ndarray] | None = None
        self._scratch_ready = False  # step_time's work arrays, made on first use
        grouped = self.arrays.group >= 0
        self._grouped_nodes = np.flatnonzero(grouped)
        first_of_group = {}
        for v in self._grouped_nodes:
            first_of_group.setdefault(int(self.arrays.group[v]), int(v))
        self._group_leader = np.array(
            [first_of_group[int(self.arrays.group[v])] for v in self._grouped_nodes], dtype=np.int64
        )

    @property
    def num_devices(self) -> int:
        """Number of devices of the cluster."""
        return self.cluster.num_devices

    @property
    def decision(self) -> str:
        """What a placement holds per node: ``"device"`` indices, or ``"configuration"``
        indices under ``strategy``."""
        return objective_decides(self.objective)

    @property
    def choices(self) -> np.ndarray:
        """Number of valid choices of each node (devices, or its configurations)."""
        own = getattr(self.prepared, "choices", None)
        return np.full(self.graph.num_nodes, self.num_devices) if own is None else own

    def check(self, placement: Any) -> np.ndarray:
        """Validate a placement (one choice per node) and return it as ``int64``.

        Raises:
            PlacementError: See :func:`check_placement`, or the objective's own check.
        """
        own = getattr(self.prepared, "check", None)
        if own is not None:
            return own(placement)
        return check_placement(placement, self.graph, self.cluster.num_devices)

    def evaluate(self, placement: Any, *, check: bool = True, times: bool = True) -> SimResult:
        """Evaluate one placement (a device index per node, in node-index order).

        Args:
            placement: Array-like of device indices.
            check: Validate the placement first; envs that build placements themselves may skip.
            times: Return per-node ``start``/``finish`` (``step_time``); without them the
                kernel writes its times into this model's scratch and nothing per node is kept.
        """
        if check is not False:
            if check is not True:
                raise ConfigError(f"check must be True or False, got {check!r}")
            placement = self.check(placement)
        if times is not True and times is not False:
            raise ConfigError(f"times must be True or False, got {times!r}")
        return self._objective_fn(self, placement, times)

    def incremental(self, placement: Any) -> Any | None:
        """A state that updates this objective one colocation-group move at a time, or
        ``None`` when the objective needs a full evaluation per move (``step_time``: see
        :mod:`placerl.sim.incremental`)."""
        if self.objective not in INCREMENTAL:
            return None
        return INCREMENTAL[self.objective](self, placement)

    def colocation_members(self) -> list[np.ndarray]:
        """For each node, the nodes that must share its device (itself included)."""
        if self._members is None:
            group = self.arrays.group
            by_group = {int(g): np.flatnonzero(group == g) for g in np.unique(group[group >= 0])}
            self._members = [
                by_group[int(g)] if g >= 0 else np.array([v]) for v, g in enumerate(group)
            ]
        return self._members

    def runtime(self, placement: Any, *, check: bool = True) -> float:
        """Only the runtime of :meth:`evaluate`."""
        return self.evaluate(placement, check=check, times=False).runtime

    def evaluate_batch(self, placements: Any) -> tuple[np.ndarray, np.ndarray]:
        """Evaluate many placements at once.

        Args:
            placements: Array of shape ``(batch, num_nodes)``.

        Returns:
            ``(runtimes, feasible)``: float and bool arrays of shape ``(batch,)``.
        """
        try:
            batch = np.asarray(placements)
        except ValueError:  # rows of different lengths
            raise PlacementError(
                "a batch of placements must be 2-D (batch, nodes): its rows differ in length"
            ) from None
        if batch.ndim != 2:
            raise PlacementError(
                f"a batch of placements must be 2-D (batch, nodes), got shape {batch.shape}"
            )
        checked = [self.check(row) for row in batch]
        results = [self._objective_fn(self, row, False) for row in checked]
        return (
            np.array([r.runtime for r in results], dtype=np.float64),
            np.array([r.feasible for r in results], dtype=bool),
        )

    # ---------------------------------------------------------- shared result assembly
    def unsupported(self, placement: np.ndarray) -> tuple[int, ...]:
        """Nodes placed on a device kind they cannot run on (never any on most graphs)."""
        if not self._has_unsupported:
            return ()
        return tuple(int(v) for v in np.flatnonzero(np.isinf(self.node_durations(placement))))

    def node_durations(self, placement: np.ndarray) -> np.ndarray:
        """Duration of each node on its assigned device."""
        return self.durations[np.arange(placement.shape[0]), placement]

    def split_groups(self, placement: np.ndarray) -> tuple[str, ...]:
        """Colocation groups whose nodes are not all on one device."""
        if self._grouped_nodes.size == 0:
            return ()
        broken = placement[self._grouped_nodes] != placement[self._group_leader]
        ids = np.unique(self.arrays.group[self._grouped_nodes[broken]])
        return tuple(self.arrays.group_names[i] for i in ids)

    def result(
        self,
        placement: np.ndarray,
        runtime: float,
        arrays: tuple[np.ndarray, ...],
        **times: np.ndarray,
    ) -> SimResult:
        """Assemble a :class:`SimResult` from a kernel's outputs and the feasibility checks.

        Args:
            placement: The checked placement.
            runtime: The objective value.
            arrays: ``(busy, comm, memory, peak, excess)`` per device, as the kernels fill them.
            **times: ``start`` and ``finish`` per node, when the objective has them.
        """
        busy, comm, memory, peak, excess = arrays
        split = self.split_groups(placement)
        unsupported = self.unsupported(placement)
        return SimResult.of(
            objective=self.objective,
            runtime=float(runtime),
            # count_nonzero: a fifth of ndarray.any()'s overhead on a few devices (hot path)
            feasible=not (split or unsupported or np.count_nonzero(excess)),
            busy=busy,
            comm=comm,
            memory=memory,
            peak_memory=peak,
            memory_excess=excess,
            split_groups=split,
            unsupported_nodes=unsupported,
            **times,
        )

    def _device_arrays(self) -> tuple[np.ndarray, ...]:
        """Fresh ``(busy, comm, memory, peak, excess)`` arrays for one evaluation."""
        d = self.cluster.num_devices
        return np.empty(d), np.empty(d), np.empty(d), np.empty(d), np.empty(d)

    def scratch(self) -> tuple[np.ndarray, ...]:
        """``(floats, ints, start, finish)``: the step-time kernel's work arrays, made once.

        Reused by every evaluation and never part of a result. Kernels hold the GIL (no
        ``nogil``), so one model is safe to share between threads; pickles leave the arrays
        out and make them again on first use.
        """
        if not self._scratch_ready:
            g, n_dev = self.graph, self.cluster.num_devices
            floats, ints = kernels.scratch_sizes(g.num_nodes, g.num_edges, n_dev)
            self._scratch = (
                np.empty(floats),
                np.empty(ints, dtype=np.int64),
                np.empty(g.num_nodes),
                np.empty(g.num_nodes),
            )
            self._scratch_ready = True
        return self._scratch

    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k != "_scratch"}
        state["_scratch_ready"] = False
        # Pickles drop the read-only flag; numba would compile a second kernel version.
        state["_readonly"] = [
            k for k, v in state.items() if isinstance(v, np.ndarray) and not v.flags.writeable
        ]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        readonly = state.pop("_readonly", [])
        self.__dict__.update(state)
        for name in readonly:
            getattr(self, name).flags.writeable = False

    def __repr__(self) -> str:
        return f"CostModel({self.graph!r}, {self.cluster!r}, objective={self.objective!r})"


@register_objective("step_time")
def _step_time(model: CostModel, placement: np.ndarray, times: bool) -> SimResult:
    a, c = model.arrays, model.cluster
    n = a.num_nodes
    out = busy, comm, memory, peak, excess = model._device_arrays()
    if model.unsupported(placement):
        busy[:] = comm[:] = peak[:] = 0.0
        kernels.resident_memory(placement, a.mem_bytes, model.capacity, memory, peak, excess)
        if not times:
            return model.result(placement, np.inf, out)
        inf = np.full(n, np.inf)
        return model.result(placement, np.inf, out, start=inf, finish=inf)
    floats, ints, start, finish = model.scratch()
    if times:
        start, finish = np.empty(n), np.empty(n)
    runtime = kernels.step_time(
        placement,
        model.durations,
        model.in_degree,
        a.succ_ptr,
        a.succ,
        a.succ_edge,
        a.pred_ptr,
        a.pred,
        model.edge_time,
        a.edge_bytes,
        a.out_bytes,
        c.bandwidth,
        c.latency,
        model.comm_model,
        c.transfer_gap,
        c.op_gap,
        a.mem_bytes,
        model.capacity,
        floats,
        ints,
        start,
        finish,
        busy,
        comm,
        memory,
        peak,
        excess,
    )
    if not times:
        return model.result(placement, runtime, out)
    return model.result(placement, runtime, out, start=start, finish=finish)


@register_objective("pipeline")
def _pipeline(model: CostModel, placement: np.ndarray, times: bool) -> SimResult:
    a, c = model.arrays, model.cluster
    out = model._device_arrays()
    runtime = kernels.pipeline(
        placement,
        model.durations,
        a.succ_ptr,
        a.succ,
        a.succ_edge,
        model.edge_time,
        a.edge_bytes,
        c.bandwidth,
        c.latency,
        model.is_cpu,
        a.mem_bytes,
        model.capacity,
        *out,
    )
    return model.result(placement, runtime, out)


def simulate(
    graph: CompGraph | str,
    placement: Any,
    cluster: Cluster | str,
    objective: str = "step_time",
) -> SimResult:
    """Evaluate one placement: a pure function of graph, placement, cluster and objective.

    For many evaluations of one graph and cluster build a :class:`CostModel` once instead.
    ``graph`` and ``cluster`` may be specs (``"msr:bert24_inference"``, ``"placeto?n_devices=4"``).

    Raises:
        PlacementError: The placement does not fit the graph or cluster.
        ConfigError: Unknown objective.
        ClusterError: A bad cluster spec.
    """
    return CostModel(graph, cluster, objective).evaluate(placement)
