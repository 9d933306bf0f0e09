"""Every benchmark script imports and answers ``--help`` (they are run by hand, rarely)."""

import sys

import pytest

from tests.bench_modules import BENCHMARKS, benchmark_module

SCRIPTS = sorted(p.stem for p in BENCHMARKS.glob("*.py") if not p.stem.startswith("_"))


def test_the_scripts_are_found():
    assert {"bench_sim", "bench_env", "bench_recipes", "zoo_table"} <= set(SCRIPTS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_script_prints_its_help(name, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [f"{name}.py", "--help"])
    try:
        with benchmark_module(name) as module, pytest.raises(SystemExit) as done:
            module.main()
    except ModuleNotFoundError as missing:
        if (missing.name or "").partition(".")[0] in ("placerl", "_common"):
            raise  # a module of placerl's own: the script is broken
        pytest.skip(f"{name} needs {missing.name} (an optional extra)")
    assert done.value.code == 0
    assert "usage:" in capsys.readouterr().out
