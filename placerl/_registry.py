"""A tiny name -> object registry shared by orders, presets, cost models and placers."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Generic, TypeVar

from placerl.errors import ConfigError

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """A read-only mapping of names to entries with a decorator to add entries.

    Args:
        kind: What the entries are, used in error messages ("traversal order", ...).
        plugins: An entry-point group (``[project.entry-points."<group>"]`` in a package's
            ``pyproject.toml``) whose modules register entries when imported. They are imported
            the first time a name is missing, so a registry can offer entries of higher layers
            or other packages (the ``policy`` placer of :mod:`placerl.agents`) without importing
            them up front.
    """

    def __init__(self, kind: str, *, plugins: str | None = None) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._plugins = plugins
        self._from_plugins: dict[str, T] = {}

    def _load_plugins(self) -> bool:
        """Import the plugin modules once; True if that was done now."""
        if self._plugins is None:
            return False
        group, self._plugins = self._plugins, None
        before = set(self._entries)
        for entry_point in importlib.metadata.entry_points(group=group):
            entry_point.load()
        self._from_plugins = {k: v for k, v in self._entries.items() if k not in before}
        return True

    def register(self, name: str, entry: T, *, overwrite: bool = False) -> T:
        """Add ``entry`` under ``name``; refuses to silently replace an existing one."""
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{self.kind} name must be a non-empty string, got {name!r}")
        if name in self._entries and not overwrite:
            raise ConfigError(
                f"{self.kind} {name!r} is already registered; pass overwrite=True to replace it"
            )
        self._entries[name] = entry
        return entry

    def decorator(self, name: str, *, overwrite: bool = False) -> Callable[[T], T]:
        """Return a decorator that registers the decorated object under ``name``."""

        def wrap(entry: T) -> T:
            return self.register(name, entry, overwrite=overwrite)

        return wrap

    @contextmanager
    def scope(self) -> Iterator[Registry[T]]:
        """A block whose registrations (and overwrites) are undone when it exits.

        For tests and notebooks that register entries without leaking them into the rest of
        the process::

            with ORDERS.scope():
                register_order("mine")(fn)
                ...                      # "mine" is known here
            # ... and gone here
        """
        saved = dict(self._entries)
        try:
            yield self
        finally:
            self._entries = {**saved, **self._from_plugins}  # a module is imported only once

    def __getitem__(self, name: str) -> T:
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            if isinstance(name, str) and self._load_plugins():
                return self[name]
            known = ", ".join(sorted(self._entries))
            raise ConfigError(f"unknown {self.kind} {name!r}; known: {known}") from None

    def __contains__(self, name: object) -> bool:
        if name not in self._entries and isinstance(name, str):
            self._load_plugins()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {sorted(self._entries)})"
