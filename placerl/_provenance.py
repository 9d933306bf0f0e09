"""Where a result came from: package versions and the git revision of the checkout."""

from __future__ import annotations

import functools
import importlib.metadata
import platform
import subprocess
from pathlib import Path

#: Distributions whose versions a result records (those not installed are left out).
DISTRIBUTIONS = (
    "placerl", "torch", "numpy", "numba", "networkx", "gymnasium", "stable-baselines3",
    "sb3-contrib", "torch-geometric", "hydra-core", "wandb",
)  # fmt: skip


@functools.cache
def provenance() -> dict[str, str | None]:
    """Python and package versions, and ``git_revision`` (``None`` outside a git checkout;
    ``+dirty`` when the checkout has uncommitted changes)."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in DISTRIBUTIONS:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    versions["git_revision"] = _git_revision(Path(__file__).resolve().parent.parent)
    return versions


def _git_revision(folder: Path) -> str | None:
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True,
                              timeout=10, check=True)  # fmt: skip
        return done.stdout.strip()

    try:
        revision = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return revision + ("+dirty" if dirty else "")
