"""URI-like specs: ``<scheme>:<body>?<key>=<value>&...`` (CompilerGym's benchmark-URI style).

Graph specs (``synthetic:layered?n=200&seed=0``), cluster specs (``placeto?n_devices=4``) and
placer specs (``local_search?time_limit=2``) share this parser, so every spec language types its
values the same way and rejects the same mistakes.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

from placerl.errors import ConfigError


def parse_value(text: str) -> Any:
    """A query value as bool (``true`` / ``false``), int, float or str, in that order."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def parse_query(query: str, *, what: str) -> dict[str, Any]:
    """``k=v&...`` as a dict of typed values.

    Raises:
        ConfigError: A malformed query, or a key given twice (which value was meant?).
    """
    if not query:
        return {}
    try:  # a literal '+' stays (1e+10 as Python writes it); spaces come as %20
        pairs = parse_qsl(query.replace("+", "%2B"), keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise ConfigError(f"{what} has a malformed query {query!r}; expected k=v&k2=v2") from None
    params: dict[str, Any] = {}
    for key, value in pairs:
        if key in params:
            raise ConfigError(f"{what} gives option {key!r} more than once")
        params[key] = parse_value(value)
    return params


def split_spec(spec: str, *, what: str) -> tuple[str, str, dict[str, Any]]:
    """Split ``scheme:body?k=v&...`` into (scheme, body, typed options).

    Args:
        spec: The spec text.
        what: What the spec names ("graph spec", ...), for error messages.

    Raises:
        ConfigError: No scheme, a malformed query or a repeated option.
    """
    scheme, sep, rest = spec.partition(":")
    if not sep or not scheme:
        raise ConfigError(f"{what} {spec!r} has no scheme; expected <scheme>:<body>")
    body, _, query = rest.partition("?")
    return scheme, body, parse_query(query, what=f"{what} {spec!r}")


def split_named(spec: str, *, what: str) -> tuple[str, dict[str, Any]]:
    """Split ``name?k=v&...`` (no scheme) into (name, typed options)."""
    name, _, query = spec.partition("?")
    if not name:
        raise ConfigError(f"{what} {spec!r} has no name before '?'")
    return name, parse_query(query, what=f"{what} {spec!r}")
