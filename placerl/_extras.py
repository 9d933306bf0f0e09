"""Optional dependencies, imported with an error that says which extra installs them.

The core install covers graphs, clusters, simulators, envs and placers; policies and training
need the ``rl`` extra and the experiment apps the ``experiments`` extra. A missing package then
fails with the ``pip install`` line that fixes it, not with a bare ``ModuleNotFoundError``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: Which extra installs each optional module (top-level import names).
EXTRAS: dict[str, str] = {
    "stable_baselines3": "rl",
    "sb3_contrib": "rl",
    "torch_geometric": "rl",
    "hydra": "rl",
    "omegaconf": "rl",
    "wandb": "experiments",
    "wandb_workspaces": "experiments",
    "pandas": "experiments",
    "rich": "experiments",
}


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


def require(module: str, feature: str) -> ModuleType:
    """Import ``module`` or fail with the extra that provides it.

    Args:
        module: The module to import (``"stable_baselines3"``, ``"torch_geometric.nn"``).
        feature: What needs it, for the message (``"placerl.agents"``).

    Raises:
        MissingExtraError: The module is not installed.
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        top = module.partition(".")[0]
        if err.name is not None and err.name.partition(".")[0] != top:
            raise  # the module is there but one of its own imports failed: show that
        extra = EXTRAS.get(top, "all")
        raise MissingExtraError(
            f"{feature} needs {top}, which is not installed: pip install 'placerl[{extra}]'"
        ) from err
