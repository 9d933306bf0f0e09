"""The model zoo: classic device-placement benchmarks as plain PyTorch code.

Every model is written here in plain PyTorch (no torchvision, no downloads) and randomly
initialised; parameter counts match the published models. ``load_graph("zoo:<model>?...")``
imports one with :func:`~placerl.graph.torch_import.from_module` and caches the graph on disk.

==================  =========================================================================
model               variants (first = default)
==================  =========================================================================
``inception_v3``    ``inception_v3`` (23.8M parameters, 299x299), ``small``
``resnet50``        ``resnet50`` (25.6M, 224x224), ``small``
``gnmt``            ``gnmt`` (8+8 LSTM layers of 1024, 32k vocabulary), ``small``
``transformer``     ``bert_base`` (110M), ``gpt2_small`` (124M), ``bert_tiny``, ``gpt2_tiny``
``nasnet``          ``mobile`` (NASNet-A 4 @ 1056), ``large`` (6 @ 4032), ``small``
==================  =========================================================================

Options of ``zoo:<model>?...`` (all optional): ``variant``; ``granularity`` (``op`` or
``module``); ``training`` (train-mode trace, gradients and optimizer state in memory, and
backward nodes from :func:`~placerl.graph.passes.with_backward`); ``max_nodes`` (coarsen with
:func:`~placerl.graph.passes.coarsen`; with ``training`` the forward graph is coarsened to half,
so the training graph has at most ``max_nodes``); ``coarsen`` (the coarsening method, default
``scope``); and any field of the variant's config (``batch``, ``image_size``, ``seq_len``, ...).

Graphs are cached under ``$PLACERL_CACHE`` (default ``~/.cache/placerl``) in ``zoo/``, keyed by
a hash of the model, its resolved config, the options and the placerl and torch versions, and
written atomically: the import itself, and the coarsened or training graph made from it (so a
sweep over ``max_nodes`` imports the model once).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from placerl._io import cache_root
from placerl._version import __version__
from placerl.errors import ConfigError, GraphError
from placerl.graph import passes
from placerl.graph.core import CompGraph
from placerl.graph.torch_import import GRANULARITIES, from_module
from placerl.graph.zoo import gnmt, inception, nasnet, resnet, transformer  # noqa: F401 (register)
from placerl.graph.zoo.base import ZOO, ZooModel, register_model

__all__ = [
    "CACHE_ENV",
    "ZOO",
    "ZooModel",
    "build_model",
    "cache_dir",
    "load_zoo",
    "register_model",
]

#: Bump when the import or the cache layout changes, to invalidate old entries.
CACHE_FORMAT = 1


def cache_dir() -> Path:
    """Where zoo imports are cached: ``$PLACERL_CACHE/zoo`` (default ``~/.cache/placerl/zoo``)."""
    return cache_root() / "zoo"


def build_model(
    model: str, /, variant: str | None = None, *, device: str | torch.device = "meta", **config: Any
) -> tuple[nn.Module, tuple[Any, ...]]:
    """A zoo model and example inputs for it, on ``device``.

    On ``meta`` (the default) nothing is allocated or initialised: that is how the zoo imports
    a 110M-parameter model in seconds, and how to count parameters cheaply.

    Args:
        model: A :data:`ZOO` name.
        variant: One of the model's variants (default: its first).
        device: Where weights and inputs live.
        **config: Fields of the variant's config to override (``batch=8``).

    Raises:
        ConfigError: Unknown model, variant or config field, a value of the wrong type, or a
            malformed device.
    """
    entry = ZOO[model]
    resolved = entry.config(variant, **config)
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ConfigError(f"device must be a torch device, got {device!r} ({err})") from None
    with torch.device(device):
        module = entry.build(resolved)
    return module, entry.inputs(resolved, device)


def load_zoo(
    model: str,
    /,
    *,
    variant: str | None = None,
    granularity: str = "op",
    training: bool = False,
    max_nodes: int | None = None,
    coarsen: str = "scope",
    cache: bool = True,
    **config: Any,
) -> CompGraph:
    """The graph of a zoo model (what ``load_graph("zoo:<model>?...")`` returns).

    Args:
        model: A :data:`ZOO` name.
        variant: One of the model's variants (default: its first).
        granularity: ``op`` or ``module`` (see :func:`~placerl.graph.torch_import.from_module`).
        training: Training graph: train-mode trace, training memory, backward nodes.
        max_nodes: Coarsen to at most this many nodes (``None``: keep every op).
        coarsen: Coarsening method (a :data:`~placerl.graph.passes.COARSENINGS` name).
        cache: Read and write the on-disk cache.
        **config: Fields of the variant's config to override (``batch=8``, ``seq_len=256``).

    Raises:
        ConfigError: Unknown model, variant, option or method, or an option of the wrong type.
    """
    entry = ZOO[model]
    resolved = entry.config(variant, **config)
    variant = variant or entry.default_variant
    _check_options(granularity, training, max_nodes, coarsen, cache)
    settings = {"granularity": granularity, "training": training}
    key = _cache_key(model, variant, resolved, **settings)

    def imported() -> CompGraph:
        path = cache_dir() / f"{model}-{variant}-{key[:16]}.json"
        return _cached(path, cache, lambda: _import(entry, variant, resolved, **settings))

    if max_nodes is None and not training:
        return imported()
    final = _cache_key(key, max_nodes=max_nodes, coarsen=coarsen)
    path = cache_dir() / f"{model}-{variant}-{final[:16]}.json"
    return _cached(
        path, cache, lambda: _training_and_coarsened(imported(), training, max_nodes, coarsen)
    )


def _training_and_coarsened(
    graph: CompGraph, training: bool, max_nodes: int | None, method: str
) -> CompGraph:
    """Coarsen (to half of ``max_nodes`` when backward nodes follow), then add backward."""
    if max_nodes is not None:
        graph = passes.coarsen(graph, max_nodes // 2 if training else max_nodes, method).graph
    return passes.with_backward(graph) if training else graph


def _cached(path: Path, use: bool, make: Callable[[], CompGraph]) -> CompGraph:
    """The graph cached at ``path``, else ``make()`` (then cached, atomically)."""
    graph = _read_cache(path) if use else None
    if graph is None:
        graph = make()
        if use:
            graph.save(path)
    return graph


def _read_cache(path: Path) -> CompGraph | None:
    """The cached graph, or ``None`` when absent or unreadable (it is then imported again)."""
    try:
        return CompGraph.load(path)
    except GraphError:
        return None


def _import(
    entry: ZooModel, variant: str, config: Any, *, granularity: str, training: bool
) -> CompGraph:
    with torch.device("meta"):
        module = entry.build(config)
    graph = from_module(
        module,
        entry.inputs(config, "meta"),
        training=training,
        granularity=granularity,
        name=entry.name if variant == entry.default_variant else f"{entry.name}_{variant}",
    )
    published = entry.published_params.get(variant)
    meta = {**graph.meta, "source": "zoo", "model": entry.name, "variant": variant}
    meta.update(config=_jsonable(config), published_params=published)
    return CompGraph(graph.nodes, graph.edges, name=graph.name, meta=meta)


def _check_options(
    granularity: Any, training: Any, max_nodes: Any, method: Any, cache: Any
) -> None:
    for key, registry, name in (
        ("granularity", GRANULARITIES, granularity),
        ("coarsen", passes.COARSENINGS, method),
    ):
        try:
            registry[name]
        except ConfigError as err:  # it names the known ones; say which option was wrong
            raise ConfigError(f"zoo option {key!r}: {err}") from None
    for key, value in (("training", training), ("cache", cache)):
        if not isinstance(value, bool):
            raise ConfigError(f"zoo option {key!r} must be true or false, got {value!r}")
    minimum = 2 if training else 1
    if max_nodes is not None and (
        isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < minimum
    ):
        raise ConfigError(
            f"zoo option 'max_nodes' must be an integer >= {minimum}, got {max_nodes!r}"
        )


def _cache_key(*parts: Any, **settings: Any) -> str:
    """SHA-256 of the parts, the settings, the cache format and the placerl and torch versions."""
    blob = {
        "parts": _jsonable(list(parts)),
        "settings": settings,
        "format": CACHE_FORMAT,
        "placerl": __version__,
        "torch": torch.__version__,
    }
    return hashlib.sha256(json.dumps(blob, sort_keys=True, default=str).encode()).hexdigest()


def _jsonable(value: Any) -> Any:
    """Configs as dicts and tuples as lists, recursively."""
    if is_dataclass(value) and not isinstance(value, type):
        return _jsonable(asdict(value))
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    return value
