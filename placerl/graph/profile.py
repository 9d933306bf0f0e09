"""Measure every node of an imported graph on a real torch device.

:func:`profile` re-traces the module the way :func:`~placerl.graph.torch_import.from_module`
did, runs it node by node on the device with real tensors, and times each node: ``warmup``
untimed runs, then the median of ``repeats`` timed runs, the device synchronised around each.
The medians become the node's ``costs[kind]``; with ``backward=True`` the backward of each node
(gradients for its inputs and weights) is timed too and kept in ``attrs["backward_costs"]``,
which :func:`~placerl.graph.passes.with_backward` uses instead of its factor.

Profile the graph :func:`from_module` returned, before :func:`~placerl.graph.passes.coarsen`
or ``with_backward`` (both carry the measured costs along).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import fx, nn

from placerl.errors import ConfigError, GraphError
from placerl.graph.core import CompGraph, check_graph
from placerl.graph.torch_import import import_module, run_program, train_mode

__all__ = ["DEVICE_KINDS", "profile"]

#: Cost-table kind written for each torch device type (others use the type's own name).
DEVICE_KINDS: Mapping[str, str] = {"cuda": "gpu", "cpu": "cpu"}


def profile(
    graph: CompGraph,
    module: nn.Module,
    example_inputs: Any,
    device: str | torch.device = "cpu",
    *,
    kind: str | None = None,
    warmup: int = 2,
    repeats: int = 5,
    backward: bool = False,
) -> CompGraph:
    """``graph`` with each node's measured seconds on ``device`` as its ``costs[kind]``.

    Args:
        graph: A graph :func:`~placerl.graph.torch_import.from_module` made from ``module``
            (its ``meta`` says how: granularity and training mode).
        module: The same module, with real weights.
        example_inputs: The same example inputs.
        device: A torch device that is available here (``"cpu"``, ``"cuda"``, ``"cuda:1"``).
        kind: Cost-table key to write (default: :data:`DEVICE_KINDS` of the device type).
        warmup: Untimed runs of each node first.
        repeats: Timed runs of each node; their median is kept.
        backward: Also time each node's backward into ``attrs["backward_costs"][kind]``.

    Returns:
        A new graph; ``meta["profiled"][kind]`` records the device and settings.

    Raises:
        ConfigError: ``graph`` is not a CompGraph, ``device`` is malformed or not available,
            bad warmup / repeats, ``kind`` not a non-empty string or ``None``, or ``backward``
            not a boolean.
        GraphError: ``graph`` was not imported from ``module`` (names differ, no import
            metadata, backward nodes), or the module's weights are on the meta device.
    """
    check_graph(graph, "profile")
    device = _check_device(device)
    _check_counts(warmup=warmup, repeats=repeats)
    if kind is not None and (not isinstance(kind, str) or not kind):
        raise ConfigError(f"kind must be a non-empty string or None, got {kind!r}")
    if not isinstance(backward, bool):
        raise ConfigError(f"backward must be True or False, got {backward!r}")
    kind = kind or DEVICE_KINDS.get(device.type, device.type)
    granularity, training = _import_options(graph)
    imported = import_module(module, example_inputs, training=training, granularity=granularity)
    _check_same_graph(graph, imported.graph)
    timed = {node: name for node, name in imported.names.items() if node.op != "placeholder"}
    forward: dict[str, float] = {}
    backward_times: dict[str, float] = {}

    def time_node(node: fx.Node, call: Callable[[tuple, dict], Any], args: tuple, kwargs: dict):
        value = call(args, kwargs)
        if node in timed:
            run = lambda: call(args, kwargs)  # noqa: E731
            forward[timed[node]] = _median_seconds(run, device, warmup, repeats)
            if backward:
                seconds = _backward_seconds(call, args, kwargs, device, warmup, repeats)
                if seconds is not None:
                    backward_times[timed[node]] = seconds
        return value

    with train_mode(module, training), torch.no_grad():
        run_program(imported.program, device, time_node)
    settings = {
        "device": str(device),
        "warmup": warmup,
        "repeats": repeats,
        "torch": torch.__version__,
    }
    return _with_costs(graph, kind, forward, backward_times, settings)


def _check_device(device: str | torch.device) -> torch.device:
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ConfigError(f"not a torch device: {device!r} ({err})") from None
    if device.type == "meta":
        raise ConfigError("cannot profile on the meta device: it computes nothing")
    backend = getattr(torch, device.type, None)
    available = device.type == "cpu" or (
        backend is not None and hasattr(backend, "is_available") and backend.is_available()
    )
    if available and device.index is not None and hasattr(backend, "device_count"):
        available = device.index < backend.device_count()
    if not available:
        raise ConfigError(f"device {str(device)!r} is not available on this machine")
    return device


def _check_counts(**counts: Any) -> None:
    for what, value in counts.items():
        minimum = 1 if what == "repeats" else 0
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError(f"{what} must be an integer >= {minimum}, got {value!r}")


def _import_options(graph: CompGraph) -> tuple[str, bool]:
    if "granularity" not in graph.meta:
        raise GraphError(
            f"graph {graph.name!r} was not made by from_module (its meta has no "
            "'granularity'); profile the graph from_module returns"
        )
    if graph.arrays.backward.any():
        raise GraphError(
            f"graph {graph.name!r} has backward nodes; profile the forward graph "
            "(with backward=True), then call with_backward"
        )
    return str(graph.meta["granularity"]), bool(graph.meta.get("training", False))


def _check_same_graph(graph: CompGraph, traced: CompGraph) -> None:
    extra = sorted(set(graph.names) - set(traced.names))
    if extra:
        raise GraphError(
            f"graph {graph.name!r} does not match the module: it has node {extra[0]!r}, which "
            "the module's trace does not (profile before coarsening, with the same inputs)"
        )


def _synchronize(device: torch.device) -> None:
    backend = getattr(torch, device.type, None)
    if backend is not None and hasattr(backend, "synchronize"):
        backend.synchronize()


def _median_seconds(run: Callable[[], Any], device: torch.device, warmup: int, repeats: int):
    for _ in range(warmup):
        run()
    samples = []
    for _ in range(repeats):
        _synchronize(device)
        start = time.perf_counter()
        run()
        _synchronize(device)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _backward_seconds(
    call: Callable[[tuple, dict], Any],
    args: tuple,
    kwargs: dict,
    device: torch.device,
    warmup: int,
    repeats: int,
) -> float | None:
    """Median seconds of the node's backward (``None`` if it cannot be differentiated)."""
    leaves: list[torch.Tensor] = []

    def as_leaf(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            leaf = value.detach().requires_grad_(True)
            leaves.append(leaf)
            return leaf.clone()  # in-place ops may not write to a leaf
        return value

    try:
        with torch.enable_grad():
            grad_args, grad_kwargs = torch.utils._pytree.tree_map(as_leaf, (args, kwargs))
            outputs = [
                t
                for t in torch.utils._pytree.tree_leaves(call(grad_args, grad_kwargs))
                if isinstance(t, torch.Tensor) and t.requires_grad
            ]
            if not outputs:
                return 0.0  # nothing to differentiate: no backward work
            seeds = [torch.ones_like(t) for t in outputs]
            run = lambda: torch.autograd.backward(outputs, seeds, retain_graph=True)  # noqa: E731
            return _median_seconds(run, device, warmup, repeats)
    except RuntimeError:
        return None


def _with_costs(
    graph: CompGraph,
    kind: str,
    forward: Mapping[str, float],
    backward: Mapping[str, float],
    settings: Mapping[str, Any],
) -> CompGraph:
    nodes = []
    for node in graph.nodes:
        data = node.to_dict()
        data["costs"] = {**node.costs, kind: forward.get(node.name, 0.0)}
        if node.name in backward:
            attrs = data.setdefault("attrs", {})
            attrs["backward_costs"] = {**attrs.get("backward_costs", {}), kind: backward[node.name]}
        nodes.append(data)
    profiled = {**graph.meta.get("profiled", {}), kind: dict(settings)}
    return CompGraph(nodes, graph.edges, name=graph.name, meta={**graph.meta, "profiled": profiled})
