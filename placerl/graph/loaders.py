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

import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from placerl._registry import Registry
from placerl._spec import split_spec
from placerl.errors import ConfigError, GraphError
from placerl.graph.core import CompGraph, read_json_file

SourceFn = Callable[..., CompGraph]
#: Graph sources by prefix (``synthetic:``, ``zoo:``, ``msr:``, ...; :func:`load_graph`).
GRAPH_SOURCES: Registry[SourceFn] = Registry("graph source")


def register_graph_source(
    scheme: str, *, overwrite: bool = False
) -> Callable[[SourceFn], SourceFn]:
    """Register ``fn(body, **params) -> CompGraph`` for specs ``<scheme>:<body>?<params>``.

    ``load_graph`` refuses options ``fn`` does not name (unless it takes ``**params``, and
    then checks them itself).

    Raises:
        ConfigError: ``scheme`` is empty or holds ``:``, ``?`` or ``/`` (no spec could reach it).
    """
    if not isinstance(scheme, str) or not scheme or any(c in scheme for c in ":?/"):
        raise ConfigError(
            f"a graph source scheme must be a non-empty string without ':', '?' or '/', "
            f"got {scheme!r}"
        )
    return GRAPH_SOURCES.decorator(scheme, overwrite=overwrite)


def parse_spec(spec: str) -> tuple[str, str, dict[str, Any]]:
    """Split ``scheme:body?k=v&...`` into (scheme, body, params with parsed values)."""
    return split_spec(spec, what="graph spec")


def load_graph(spec: str | os.PathLike[str] | CompGraph) -> CompGraph:
    """Resolve a graph spec (see module docstring) to a :class:`CompGraph`.

    Args:
        spec: A spec string, a path to a ``.json`` file, or a ``CompGraph`` (returned as is).

    Raises:
        ConfigError: Malformed spec, unknown scheme (the message lists the known ones), no
            body after the scheme, or an option the source does not take.
        GraphError: The graph itself is missing or invalid.
    """
    if isinstance(spec, CompGraph):
        return spec
    if isinstance(spec, os.PathLike):
        return _load_json_file(Path(spec))
    if not isinstance(spec, str):
        raise ConfigError(
            f"a graph spec must be a string, Path or CompGraph, got {type(spec).__name__} "
            f"{spec!r:.60}"
        )
    if spec.partition(":")[0] not in GRAPH_SOURCES and spec.endswith(".json"):
        return _load_json_file(Path(spec))
    scheme, body, params = parse_spec(spec)
    source = GRAPH_SOURCES[scheme]
    if not body:
        raise ConfigError(f"graph spec {spec!r} names nothing after {scheme + ':'!r}")
    _check_source_options(source, scheme, spec, params)
    return source(body, **params)


def _check_source_options(source: SourceFn, scheme: str, spec: str, params: dict[str, Any]) -> None:
    """Refuse options ``source`` does not name; a ``**params`` source checks its own."""
    parameters = list(inspect.signature(source).parameters.values())[1:]  # after the body
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return
    known = [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = [key for key in params if key not in known]
    if unknown:
        raise ConfigError(
            f"bad options in graph spec {spec!r}: graph source {scheme!r} takes no option(s) "
            f"{', '.join(map(repr, unknown))}; known: {', '.join(known) or 'none'}"
        )


def _load_json_file(path: Path) -> CompGraph:
    from placerl.graph.msr import parse_msr
    from placerl.msr_format import is_msr_document

    data = read_json_file(path)
    try:
        if is_msr_document(data):
            return parse_msr(data, name=path.stem)
        return CompGraph.from_dict(data)
    except GraphError as error:  # a folder of graphs names the file that is not one
        raise GraphError(f"{path}: {error}") from None


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
