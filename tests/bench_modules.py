"""Benchmarks are scripts, not a package: their tests import them by path."""

import contextlib
import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@contextlib.contextmanager
def benchmark_module(name: str) -> Iterator[ModuleType]:
    """``benchmarks/<name>.py`` imported as module ``name`` while the block runs."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[name]


def module_fixture(name: str) -> Callable[[], Iterator[ModuleType]]:
    """A module-scoped fixture giving ``benchmarks/<name>.py`` to a test file's tests
    (``bench = module_fixture("bench_recipes")``)."""

    @pytest.fixture(scope="module")
    def module() -> Iterator[ModuleType]:
        with benchmark_module(name) as loaded:
            yield loaded

    return module
