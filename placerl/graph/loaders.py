"""``load_graph``: one entry point resolving URI-like graph specs.

Specs are ``<scheme>:<body>?<key>=<value>&...`` (the style of CompilerGym's benchmark URIs):

* ``synthetic:<family>?n=200&seed=0&...`` - a seeded synthetic graph (:mod:`.synthetic`);
* ``msr:<name or path>`` - an msr-fiddle profiled graph (:mod:`.msr`);
* ``zoo:<model>?batch=32&...`` - a real PyTorch model from the model zoo;
* a path ending in ``.json`` - a placerl graph file, or an msr-fiddle file (detected by its
  header).

Schemes live in the :data:`GRAPH_SOURCES` registry; ``register_graph_source`` adds one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from placerl._registry import Registry
from placerl._spec import split_spec
from placerl.errors import ConfigError, GraphError
from placerl.graph.core import CompGraph

SourceFn = Callable[..., CompGraph]
GRAPH_SOURCES: Registry[SourceFn] = Registry("graph source")


def register_graph_source(
    scheme: str, *, overwrite: bool = False
) -> Callable[[SourceFn], SourceFn]:
    """Register ``fn(body, **params) -> CompGraph`` for specs ``<scheme>:<body>?<params>``."""
    return GRAPH_SOURCES.decorator(scheme, overwrite=overwrite)


def parse_spec(spec: str) -> tuple[str, str, dict[str, Any]]:
    """Split ``scheme:body?k=v&...`` into (scheme, body, params with parsed values)."""
    return split_spec(spec, what="graph spec")


def load_graph(spec: str | Path | CompGraph) -> CompGraph:
    """Resolve a graph spec (see module docstring) to a :class:`CompGraph`.

    Args:
        spec: A spec string, a path to a ``.json`` file, or a ``CompGraph`` (returned as is).

    Raises:
        ConfigError: Malformed spec or unknown scheme (the message lists the known ones).
        GraphError: The graph itself is missing or invalid.
    """
    if isinstance(spec, CompGraph):
        return spec
    if not isinstance(spec, (str, Path)):
        raise ConfigError(
            f"a graph spec must be a string, Path or CompGraph, got {type(spec).__name__}"
        )
    if isinstance(spec, Path) or (
        spec.partition(":")[0] not in GRAPH_SOURCES and spec.endswith(".json")
    ):
        return _load_json_file(Path(spec))
    scheme, body, params = parse_spec(spec)
    source = GRAPH_SOURCES[scheme]
    try:
        return source(body, **params)
    except TypeError as err:
        raise ConfigError(f"bad options in graph spec {spec!r}: {err}") from None


def _load_json_file(path: Path) -> CompGraph:
    from placerl.graph.msr import parse_msr
    from placerl.msr_format import is_msr_document

    if not path.is_file():
        raise GraphError(f"graph file not found: {path}")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise GraphError(f"graph file {path} is not valid JSON: {err}") from None
    if is_msr_document(data):
        return parse_msr(data, name=path.stem)
    return CompGraph.from_dict(data)


@register_graph_source("msr")
def _msr_source(body: str) -> CompGraph:
    from placerl.graph.msr import load_msr

    return load_msr(body)


@register_graph_source("synthetic")
def _synthetic_source(body: str, **params: Any) -> CompGraph:
    from placerl.graph.synthetic import generate

    return generate(body, **params)


@register_graph_source("zoo")
def _zoo_source(body: str, **params: Any) -> CompGraph:
    from placerl.graph.zoo import load_zoo

    return load_zoo(body, **params)
