"""Where a result came from: the code, the command, the machine and the date.

Every result placerl writes records :func:`provenance`, so that a figure names what made it:
the git revision of the checkout (``+dirty`` with uncommitted changes outside its results
folders), the command line, the package versions, the machine (CPU model, cores, GPUs) and
the UTC date. The resolved configuration and the seeds are in the result's own ``config``.
"""

from __future__ import annotations

import datetime
import functools
import importlib.metadata
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: Distributions whose versions a result records (those not installed are left out).
DISTRIBUTIONS = (
    "placerl",
    "torch",
    "numpy",
    "numba",
    "networkx",
    "gymnasium",
    "stable-baselines3",
    "sb3-contrib",
    "torch-geometric",
    "hydra-core",
    "wandb",
)


#: The environment variable that carries the command a user typed to the processes that run
#: its jobs (a launcher's workers, whose own ``sys.argv`` is the worker's).
COMMAND_VARIABLE = "PLACERL_COMMAND"


def provenance() -> dict[str, Any]:
    """The versions and git revision (:func:`versions`), the command line (the one the
    launching process recorded with :func:`record_command`, else this process's), the machine
    (:func:`machine`) and the UTC date and time of this call."""
    now = datetime.datetime.now(datetime.timezone.utc)
    command = os.environ.get(COMMAND_VARIABLE) or _this_command()
    return {
        **versions(),
        "command": command,
        "machine": machine(),
        "date": now.isoformat(timespec="seconds"),
    }


def record_command() -> None:
    """Record this process's command line for the processes it starts (the apps call it
    before Hydra's launchers start their workers); an outer record is kept."""
    os.environ.setdefault(COMMAND_VARIABLE, _this_command())


def _this_command() -> str:
    return shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]])


@functools.cache
def versions() -> dict[str, str | None]:
    """Python and package versions, and ``git_revision`` (``None`` outside a git checkout;
    ``+dirty`` when the checkout has uncommitted changes outside its results folders)."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in DISTRIBUTIONS:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    found["git_revision"] = _git_revision(Path(__file__).resolve().parent.parent)
    return found


@functools.cache
def machine() -> dict[str, Any]:
    """The CPU model, the cores this process may use, the host's system, and the CUDA GPUs
    (``None`` where torch is not imported: provenance never imports it)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": _cpu_model(),
        "cores": cores,
        "system": platform.platform(terse=True),
        "gpus": _gpus(),
    }


def machine_label(machine: Any) -> str:
    """A :func:`machine` record in a few words (``not recorded`` for anything else), as
    reports and the docs show it: ``CPU model (N cores, GPUs or "no GPU")``."""
    if not isinstance(machine, Mapping):
        return "not recorded"
    gpus = ", ".join(machine.get("gpus") or []) or "no GPU"
    return f"{machine.get('cpu', '?')} ({machine.get('cores', '?')} cores, {gpus})"


def _cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux; the platform's word elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _gpus() -> list[str] | None:
    """The CUDA GPUs' names; ``None`` (not known) where torch is not imported."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    if not torch.cuda.is_available():
        return []
    return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]


#: Changed files that leave a checkout clean, anywhere in it: results (``benchmarks/results``,
#: an experiment's ``results``), which a run reading committed results back rewrites as it goes.
RESULTS_PATHS = ":(top,exclude,glob)**/results/**"


def _git_revision(folder: Path) -> str | None:
    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=folder, capture_output=True, text=True, timeout=10, check=True
        )
        return done.stdout.strip()

    try:
        revision = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ":/", RESULTS_PATHS)
    except (OSError, subprocess.SubprocessError):
        return None
    return revision + ("+dirty" if dirty else "")
