"""Benchmarks are scripts, not a package: their tests import them by path."""

import contextlib
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

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
