"""SB3's private members that placerl uses: all listed in ``placerl.agents.sb3_private``, all
still there in the installed SB3 and sb3-contrib, within the versions pyproject.toml allows."""

import importlib
import importlib.metadata
import inspect
import pkgutil
import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from placerl.agents.sb3_private import (
    PACKAGES,
    PRIVATE_MEMBERS,
    WRITTEN_AGAINST,
    WRITTEN_FOR,
    Private,
    problems,
)

ROOT = Path(__file__).resolve().parents[2]
#: Underscore names in placerl/ that SB3 also has, but that are not SB3's where placerl uses them.
NOT_SB3 = {
    "_options": "placerl._options, placerl's own module",
    "_validate_args": "torch.distributions.Distribution's default (placerl/agents/unchecked.py)",
}


@pytest.mark.parametrize("private", PRIVATE_MEMBERS, ids=lambda p: p.name)
def test_every_listed_member_still_holds(private):
    assert problems(private) == []


@pytest.mark.parametrize("private", PRIVATE_MEMBERS, ids=lambda p: p.name)
def test_every_listed_file_uses_its_member(private):
    for path in private.used_in:
        assert private.member in (ROOT / path).read_text(), f"{path} does not use {private.name}"


def _sb3_underscore_names() -> set[str]:
    """Underscore names of SB3's and sb3-contrib's modules, classes and instance attributes."""
    names = set()
    for package in PACKAGES:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, f"{package}."):
            try:
                module = importlib.import_module(info.name)
            except ImportError:  # an optional dependency (atari, ...) that is not installed
                continue
            names |= set(vars(module))
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if cls.__module__ == info.name:
                    names |= set(vars(cls))
                    names |= set(re.findall(r"self\.(_\w+)", inspect.getsource(cls)))
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def test_every_sb3_private_member_placerl_uses_is_listed():
    used: dict[str, set[str]] = {}
    for path in (ROOT / "placerl").rglob("*.py"):
        if path.name != "sb3_private.py":
            text = path.read_text()  # attributes, and names given as strings (getattr)
            for name in set(re.findall(r"(?:def |\.|[\"'])(_[a-z]\w*)", text)):
                used.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    listed = {(p.member, f) for p in PRIVATE_MEMBERS for f in p.used_in}
    unlisted = sorted(
        f"{name} in {path}"
        for name in used.keys() & _sb3_underscore_names()
        if name not in NOT_SB3
        for path in used[name]
        if (name, path) not in listed
    )
    assert unlisted == [], f"list these in placerl/agents/sb3_private.py: {unlisted}"


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_the_installed_packages_are_in_the_range_written_against(package):
    version = Version(importlib.metadata.version(PACKAGES[package]))
    assert version in SpecifierSet(WRITTEN_AGAINST)
    for private in PRIVATE_MEMBERS:
        if private.owner.startswith(package):
            assert version in SpecifierSet(private.written_against), private.name


def _rl_requirements() -> dict[str, Requirement]:
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11's toml reader")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {r.name: r for r in map(Requirement, project["optional-dependencies"]["rl"])}


def test_pyproject_caps_sb3_at_the_range_written_against():
    requirements = _rl_requirements()
    for distribution in PACKAGES.values():
        assert requirements[distribution].specifier == SpecifierSet(WRITTEN_AGAINST)


def test_pyproject_caps_torch_geometric_at_the_next_major():
    specifier = _rl_requirements()["torch-geometric"].specifier
    installed = Version(importlib.metadata.version("torch-geometric"))
    assert installed in specifier
    assert Version(f"{installed.major + 1}") not in specifier


def test_problems_name_what_no_longer_holds():
    vec_env = "stable_baselines3.common.vec_env:DummyVecEnv"
    renamed = Private(vec_env, "buf_info", "attribute", (), "")
    assert problems(renamed) == ["no class of DummyVecEnv's bases assigns self.buf_info"]
    gone = Private(
        f"{vec_env}",
        "_step_wait",
        "method",
        (),
        "",
        relies_on=(("step_wait", "copy.deepcopy(self.buf_infos)"),),
    )
    assert problems(gone) == [
        "DummyVecEnv._step_wait is no method of DummyVecEnv",
        "DummyVecEnv.step_wait no longer holds 'copy.deepcopy(self.buf_infos)'",
    ]
    no_method = Private(vec_env, "buf_infos", "attribute", (), "", relies_on=(("_wait", "x"),))
    assert problems(no_method) == ["DummyVecEnv._wait no longer holds 'x'"]


def test_the_update_counter_is_listed_for_every_registered_algorithm():
    from placerl.agents.factory import ALGORITHMS

    listed = {p.owner for p in PRIVATE_MEMBERS if p.member == "_n_updates"}
    assert {f"{a.module}:{a.cls_name}" for a in ALGORITHMS.values()} <= listed


def test_the_range_allows_the_release_written_for_up_to_its_next_major():
    version = Version(WRITTEN_FOR)
    assert version in SpecifierSet(WRITTEN_AGAINST)
    assert Version(f"{version.major + 1}.0") not in SpecifierSet(WRITTEN_AGAINST)
