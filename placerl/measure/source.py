"""What rebuilds a graph's PyTorch module, in this process and in worker processes.

A measured runtime needs the real module behind a graph. Zoo graphs carry it in their meta
(model, variant and config: the zoo rebuilds the module with seeded weights). Graphs from
:func:`~placerl.graph.torch_import.from_module` get it from :func:`bind`, which keeps the
module and its example inputs (pickled, so that worker processes get the same weights) for
the rest of this process.
"""

from __future__ import annotations

import functools
import pickle
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from placerl.errors import GraphError
from placerl.graph import CompGraph

__all__ = ["ModelSource", "bind", "source_of"]

#: ``graph.meta`` key naming a module bound with :func:`bind`.
BOUND_KEY = "measure_module"
#: Seed of the weights and inputs of rebuilt zoo models (every worker builds the same ones).
ZOO_SEED = 0

_bound: dict[str, bytes] = {}


@dataclass(frozen=True)
class ModelSource:
    """A picklable recipe for a graph's module and example inputs, and how it was traced.

    Attributes:
        build: ``() -> (module, example_inputs)``, on the CPU with real weights.
        granularity: The trace granularity the graph was imported at.
        training: Whether the graph is a training graph (backward nodes, train-mode trace).
    """

    build: Callable[[], tuple[nn.Module, tuple[Any, ...]]]
    granularity: str
    training: bool

    def load(self) -> tuple[nn.Module, tuple[Any, ...]]:
        """A fresh module and example inputs."""
        module, inputs = self.build()
        return module, inputs if isinstance(inputs, tuple) else (inputs,)


def bind(graph: CompGraph, module: nn.Module, example_inputs: Any) -> CompGraph:
    """``graph`` with ``module`` and ``example_inputs`` attached for measurement.

    The binding lives in this process (worker processes receive a pickled copy); a graph saved
    to disk and loaded elsewhere has to be bound again.

    Args:
        graph: A graph :func:`~placerl.graph.torch_import.from_module` made from ``module``
            (coarsened or with backward nodes added is fine).
        module: The module, with real weights on the CPU.
        example_inputs: The inputs it was imported with (a tensor or a tuple).

    Raises:
        GraphError: ``graph`` was not imported from a module, or the module or its inputs
            cannot be pickled.
    """
    _trace_options(graph)
    inputs = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    try:
        blob = pickle.dumps((module, inputs))
    except Exception as err:  # pickling raises many types
        raise GraphError(
            f"cannot bind {type(module).__name__} to {graph.name!r}: it must pickle to reach "
            f"worker processes ({type(err).__name__}: {err}); define the module's class at "
            "module level in an importable file"
        ) from None
    key = uuid.uuid4().hex
    _bound[key] = blob
    return CompGraph(graph.nodes, graph.edges, name=graph.name, meta={**graph.meta, BOUND_KEY: key})


def source_of(graph: CompGraph) -> ModelSource:
    """The recipe that rebuilds ``graph``'s module.

    Raises:
        GraphError: ``graph`` neither comes from the zoo nor was bound with :func:`bind`.
    """
    granularity, training = _trace_options(graph)
    key = graph.meta.get(BOUND_KEY)
    if key is not None:
        if key not in _bound:
            raise GraphError(
                f"graph {graph.name!r} was bound to a module in another process; call "
                "placerl.measure.bind(graph, module, example_inputs) in this one"
            )
        build = functools.partial(pickle.loads, _bound[key])
    elif graph.meta.get("source") == "zoo":
        meta = graph.meta
        build = functools.partial(_zoo_model, meta["model"], meta["variant"], meta["config"])
    else:
        raise GraphError(
            f"graph {graph.name!r} has no module to run: measure zoo graphs, or attach the "
            "module with placerl.measure.bind(graph, module, example_inputs)"
        )
    return ModelSource(build, granularity, training)


def _trace_options(graph: CompGraph) -> tuple[str, bool]:
    if not isinstance(graph, CompGraph):
        raise GraphError(f"expected a CompGraph, got {type(graph).__name__}")
    if "granularity" not in graph.meta:
        raise GraphError(
            f"graph {graph.name!r} was not imported from a PyTorch module (its meta has no "
            "'granularity'); only graphs of real modules can be measured"
        )
    return str(graph.meta["granularity"]), bool(graph.meta.get("training", False))


def _zoo_model(model: str, variant: str, config: dict[str, Any]) -> tuple[nn.Module, tuple]:
    from placerl.graph.zoo import build_model  # torch-heavy: only where a module is built

    torch.manual_seed(ZOO_SEED)
    return build_model(model, variant, device="cpu", **_tuples(config))


def _tuples(value: Any) -> Any:
    """JSON lists back to the tuples zoo configs hold."""
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value
