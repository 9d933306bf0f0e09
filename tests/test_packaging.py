"""Packaging: every package is listed, and a built wheel carries the configs and policies."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The experiment group as the apps' --help lists it.
EXPERIMENTS = (
    "experiment: doppler, doppler_faithful, excursions, gdp, gdp_faithful, "
    "generalization, hierarchical, improve, measured, order_sweep, pipeline_msr, "
    "placeto, placeto_faithful, quickstart"
)
tomllib = pytest.importorskip("tomllib", reason="Python 3.11+ reads pyproject.toml")


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_package_is_listed():
    found = {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "placerl").rglob("__init__.py")
    }
    listed = set(_setuptools()["packages"])
    assert found | {"placerl.configs"} == listed, "update [tool.setuptools] packages"
    assert _setuptools()["package-dir"]["placerl.configs"] == "configs"


def test_wheel_in_a_fresh_venv_runs_the_apps_from_another_folder(tmp_path):
    pytest.importorskip("hydra", reason="the experiments extra is not installed")
    import site

    wheels, venv, source = tmp_path / "wheels", tmp_path / "venv", tmp_path / "source"
    # Built from a copy: setuptools writes build/ and *.egg-info/ beside the sources.
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for part in ("placerl", "configs"):
        shutil.copytree(ROOT / part, source / part, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    build = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--quiet",
        "--no-deps",
        "--no-build-isolation",
        "-w",
        str(wheels),
        str(source),
    ]
    subprocess.run(build, check=True, capture_output=True, cwd=tmp_path)
    (wheel,) = wheels.glob("placerl-*.whl")
    shipped = {
        f"placerl/data/pretrained/{p.name}"
        for p in (ROOT / "placerl" / "data" / "pretrained").iterdir()
        if p.suffix in (".zip", ".json")
    }
    assert shipped and shipped <= set(zipfile.ZipFile(wheel).namelist())  # policies and cards
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    where = [python, "-c", "import site; print(site.getsitepackages()[0])"]
    fresh_site = subprocess.run(where, check=True, capture_output=True, text=True).stdout.strip()
    # The dependencies come from this environment's site-packages as a plain path: its .pth
    # files (the editable install of this checkout among them) are not read from there.
    Path(fresh_site, "dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    install = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-deps",
        "--target",
        fresh_site,
        str(wheel),
    ]
    subprocess.run(install, check=True, capture_output=True, cwd=tmp_path)
    script = (
        "import placerl, placerl.apps\n"
        "from hydra import compose, initialize_config_module\n"
        "with initialize_config_module(config_module='placerl.configs', version_base=None):\n"
        "    cfg = compose(config_name='train', overrides=['experiment=order_sweep'])\n"
        "print(placerl.__file__)\n"
        "print(cfg.graph.spec)\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(
        [python, "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    location, graph = done.stdout.split()
    assert Path(location).is_relative_to(fresh_site)  # the wheel's copy, not the checkout
    assert graph == "synthetic:layered?n=100&seed=0"
    help_text = subprocess.run(
        [python, "-c", "from placerl.apps import train_app; train_app()", "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert EXPERIMENTS in help_text.stdout


def test_a_bare_checkout_on_the_path_finds_the_config_folder(tmp_path):
    pytest.importorskip("hydra", reason="the experiments extra is not installed")
    import site

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    where = [python, "-c", "import site; print(site.getsitepackages()[0])"]
    fresh_site = subprocess.run(where, check=True, capture_output=True, text=True).stdout.strip()
    Path(fresh_site, "dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    script = "from placerl.apps import CONFIG_PATH, train_app; print(CONFIG_PATH); train_app()"
    done = subprocess.run(
        [python, "-c", script, "--help"], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[0] == str(ROOT / "configs")  # no install: the folder
    assert EXPERIMENTS in done.stdout


def test_package_data_lists_the_shipped_policies_and_their_cards():
    """The pretrained policies (placerl/data/pretrained) travel in the wheel."""
    import fnmatch

    globs = _setuptools()["package-data"]["placerl"]
    folder = ROOT / "placerl" / "data" / "pretrained"
    files = [
        p.relative_to(ROOT / "placerl").as_posix()
        for p in folder.iterdir()
        if p.suffix in (".zip", ".json", ".md")
    ]
    assert any(f.endswith(".zip") for f in files) and any(f.endswith(".json") for f in files)
    unlisted = [f for f in files if not any(fnmatch.fnmatch(f, g) for g in globs)]
    assert not unlisted, f"add {unlisted} to [tool.setuptools.package-data] placerl"
