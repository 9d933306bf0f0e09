"""The docs' build helpers are scripts beside ``docs/conf.py``, not a package: imported by path."""

import importlib.util
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


def docs_module(name: str):
    """``docs/<name>.py`` as a module."""
    spec = importlib.util.spec_from_file_location(f"placerl_docs_{name}", DOCS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def generate():
    return docs_module("generate")


@pytest.fixture(scope="session")
def docstrings():
    return docs_module("docstrings")
