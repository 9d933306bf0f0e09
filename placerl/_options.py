"""Keyword options checked against a factory's signature before it runs.

Presets and other factories chosen by name get their options from spec strings and configs,
where a typo or a quoted number is easy to make. :func:`check_options` rejects unknown names
(listing the known ones) and values of the wrong type (naming the option) instead of letting
them fail deep inside numpy.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from placerl.errors import ConfigError, PlaceRLError

_NUMBER = (int, float, np.integer, np.floating)


def _matches(value: Any, annotation: Any) -> bool:
    """Whether ``value`` fits a simple annotation (unknown annotations accept anything)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, arg) for arg in typing.get_args(annotation))
    if annotation is type(None):
        return value is None
    if annotation is bool:
        return isinstance(value, (bool, np.bool_))
    if isinstance(value, (bool, np.bool_)):
        return False  # True is not the number 1 here
    if annotation is int:
        return isinstance(value, (int, np.integer))
    if annotation is float:
        return isinstance(value, _NUMBER)
    if annotation is str:
        return isinstance(value, str)
    if origin in (Sequence, list, tuple) or annotation in (Sequence, list, tuple):
        args = typing.get_args(annotation)
        if isinstance(value, str) or not isinstance(value, (Sequence, np.ndarray)):
            return False
        return not args or all(_matches(x, args[0]) for x in value)
    return True


_WORDS = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


def _describe(annotation: Any) -> str:
    if annotation in _WORDS:
        return _WORDS[annotation]
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if len(args) == 1 and len(typing.get_args(annotation)) == 2:  # Optional[X]
        return f"{_describe(args[0])} or None"
    text = getattr(annotation, "__name__", None) or str(annotation)
    return text.replace("typing.", "").replace("collections.abc.", "")


def check_options(
    fn: Callable[..., Any],
    options: Mapping[str, Any],
    *,
    what: str,
    error: type[PlaceRLError],
    keyword_only: bool = False,
    given: Sequence[str] = (),
) -> None:
    """Check ``options`` against ``fn``'s keyword parameters and their type hints.

    Args:
        fn: The factory the options are for.
        options: Option names and values.
        what: The factory in words ("cluster preset 'placeto'"), for messages.
        error: The error type to raise.
        keyword_only: Only ``fn``'s keyword-only parameters are options (placers take the
            problem positionally, then their options).
        given: Parameters the caller fills itself (``self``, the env, ...): not options.

    Raises:
        error: An unknown option (the message lists the known ones), a missing required one,
            or a value whose type does not match the parameter's annotation.
    """
    kinds = (
        (inspect.Parameter.KEYWORD_ONLY,)
        if keyword_only
        else (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    )
    params = {
        n: p
        for n, p in inspect.signature(fn).parameters.items()
        if p.kind in kinds and n not in given
    }
    unknown = sorted(set(options) - set(params))
    if unknown:
        known = ", ".join(params) or "none"
        raise error(f"unknown option(s) {', '.join(unknown)} for {what}; known: {known}")
    missing = [n for n, p in params.items() if p.default is p.empty and n not in options]
    if missing:
        raise error(f"{what} needs option(s) {', '.join(missing)}")
    hints = _type_hints(fn)
    for name, value in options.items():
        annotation = hints.get(name)
        if annotation is not None and not _matches(value, annotation):
            raise error(f"option {name!r} of {what} must be {_describe(annotation)}, got {value!r}")


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """``fn``'s resolved annotations; those naming types it imports only for type checkers are
    left out (SB3's constructors), so their options are not type-checked."""
    try:
        return typing.get_type_hints(fn)
    except NameError:
        namespace = getattr(fn, "__globals__", {})
        hints = {}
        for name, annotation in getattr(fn, "__annotations__", {}).items():
            try:
                hints[name] = (
                    eval(annotation, namespace) if isinstance(annotation, str) else annotation
                )
            except NameError:
                continue
        return hints


def check_int(
    value: Any, what: str, *, minimum: int = 0, error: type[PlaceRLError] = ConfigError
) -> int:
    """``value`` as an ``int`` of at least ``minimum``: Python and numpy integers only.

    ``True`` is refused (it is not the number 1 in a config), and so are floats, strings and
    ``None``.

    Raises:
        error: Naming ``what`` and the value.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise error(f"{what} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise error(f"{what} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_spec_list(value: Any, what: str, *, empty: bool = True) -> list[Any]:
    """``value`` as a list of specs: a list or tuple (a lone string would be read letter by
    letter, so it is refused).

    Raises:
        ConfigError: Naming ``what`` and the value; also an empty list unless ``empty``.
    """
    if isinstance(value, str) or not isinstance(value, Sequence) or (not empty and not value):
        kind = "list" if empty else "non-empty list"
        raise ConfigError(f"{what} must be a {kind} of specs, got {value!r}")
    return list(value)


def check_out_dir(out_dir: Any) -> None:
    """Refuse an ``out_dir`` that is an existing file (it would fail after the work)."""
    from pathlib import Path

    if out_dir is not None and Path(out_dir).is_file():
        raise ConfigError(f"out_dir {str(out_dir)!r} is a file; give a folder")
