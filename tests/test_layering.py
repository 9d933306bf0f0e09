"""One-way layering: lower layers never import higher ones, and light imports stay light."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "placerl"

#: Layers from the bottom up; a module may import from its own layer and the ones below.
LAYERS = [
    {
        "errors",
        "_registry",
        "_version",
        "_io",
        "_spec",
        "_options",
        "_extras",
        "_env_ids",
        "_provenance",
        "_processes",
        "devices",
        "msr_format",
    },
    {"graph"},
    {"cluster"},
    {"sim"},
    {"measure"},
    {"baselines"},
    {"envs"},
    {"agents"},
    {"results", "overrides", "config_help", "comparison"},
    {"bench"},
    {"run_config", "compose"},
    {"train"},
    # PlaceBench's learned rows and the ablation ladder: cases and scores below, training above
    {"bench.recipe", "bench.ablation"},
    {"figures", "evaluate", "summary", "report_figures", "report", "dashboard"},
    {"tracking"},
    {"apps"},
    {"cli", "__main__", "__init__"},
]
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def _unit(module: str) -> str:
    """``placerl.graph.core`` -> ``graph``; ``placerl`` itself -> ``__init__``; a module
    with a layer of its own (``bench.recipe``) -> itself."""
    parts = module.split(".")
    if ".".join(parts[1:3]) in RANK:
        return ".".join(parts[1:3])
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> set[str]:
    """Every placerl module a file imports, at module level or inside functions."""
    found = set()
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("placerl"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the file's package
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                found.add(f"{base}.{node.module}" if node.module else base)
            elif node.module and node.module.startswith("placerl"):
                found.add(node.module)
    return found


def _sources():
    return sorted(p for p in PACKAGE.rglob("*.py"))


def test_every_package_unit_has_a_layer():
    units = {
        _unit(".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts)) for p in _sources()
    }
    assert units <= set(RANK), f"add {sorted(units - set(RANK))} to LAYERS"


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_a_higher_layer(path):
    unit = _unit(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
    higher = sorted(m for m in _imports(path) if RANK[_unit(m)] > RANK[unit])
    assert not higher, f"{path.relative_to(PACKAGE)} ({unit}) imports higher layers: {higher}"


def test_graph_imports_nothing_from_cluster_sim_envs_or_baselines():
    for path in (PACKAGE / "graph").rglob("*.py"):
        bad = [m for m in _imports(path) if _unit(m) in ("cluster", "sim", "envs", "baselines")]
        assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"


HEAVY = ("torch", "numba", "placerl.envs", "placerl.sim", "placerl.baselines")


LIGHT = [
    "import placerl",
    "import placerl.graph",
    "import placerl.cluster",
    "from placerl.graph import load_graph; load_graph('synthetic:chain?n=3')",
]


@pytest.mark.parametrize("statement", LIGHT)
def test_light_imports_load_no_heavy_module(statement):
    code = f"import sys, json; {statement}; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stdout))
    assert not [m for m in HEAVY if m in loaded]


def test_importing_placerl_registers_the_env_ids_without_building_them():
    code = (
        "import sys, gymnasium as gym, placerl; "
        "assert 'placerl/Placement-v1' in gym.registry; "
        "assert 'placerl.envs' not in sys.modules; "
        "gym.make('placerl/SanityChain-v1'); assert 'placerl.envs' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
