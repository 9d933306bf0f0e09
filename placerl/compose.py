"""Compose ``configs/`` into a run config without running it (Hydra's compose API).

``placerl-train`` and ``placerl-eval`` compose the same tree on the command line;
:func:`compose_run` gives notebooks, benchmarks and tests the run an override list makes, and
:func:`main_job` the run of no overrides, which :class:`~placerl.run_config.RunConfig`'s
defaults are.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: Where Hydra finds the config tree: the ``configs/`` folder, mapped into the package by an
#: install (wheel or editable); a bare checkout on ``sys.path`` reads the folder itself.
CONFIG_MODULE = "placerl.configs"


def schema_of(config_name: str) -> type:
    """The dataclass a config name composes on (``train``, ``eval``, ``bench``).

    Raises:
        ConfigError: An unknown config name.
    """
    from placerl.errors import ConfigError
    from placerl.run_config import BenchRunConfig, EvalRunConfig, RunConfig

    schemas = {"train": RunConfig, "eval": EvalRunConfig, "bench": BenchRunConfig}
    if config_name not in schemas:
        raise ConfigError(f"unknown config {config_name!r}; known: {', '.join(schemas)}")
    return schemas[config_name]


#: The apps: ``(name, config name)``; each config composes on :func:`schema_of` its name.
APP_CONFIGS = (("placerl-train", "train"), ("placerl-eval", "eval"), ("placerl-bench", "bench"))


def config_path() -> str:
    """The config tree as Hydra's ``config_path``."""
    if importlib.util.find_spec(CONFIG_MODULE) is not None:
        return f"pkg://{CONFIG_MODULE}"
    return str(Path(__file__).resolve().parent.parent / "configs")


@functools.cache
def register_help() -> None:
    """Store the apps' ``--help`` in Hydra's ConfigStore: every field with its meaning and
    the value the app runs with (its run of no overrides, composed first with a help of the
    schema's defaults). The apps call it as they start, not at import: it composes."""
    register_schemas()
    _store_help(main_job)


@functools.cache
def register_schemas() -> None:
    """Store the schemas ``train.yaml``, ``eval.yaml`` and ``bench.yaml`` compose on in Hydra's
    ConfigStore, and a help of their defaults (the YAML files name one)."""
    from hydra.core.config_store import ConfigStore

    from placerl.run_config import BenchRunConfig, EvalRunConfig, RunConfig

    ConfigStore.instance().store(name="run_schema", node=RunConfig.schema())
    ConfigStore.instance().store(name="eval_schema", node=EvalRunConfig.schema())
    ConfigStore.instance().store(name="bench_schema", node=BenchRunConfig.schema())
    _store_help(None)


def _store_help(values: Callable[[str], Any] | None) -> None:
    from hydra.core.config_store import ConfigStore

    from placerl.config_help import help_template

    for app, config_name in APP_CONFIGS:
        template = help_template(
            app, schema_of(config_name), values(config_name) if values else None
        )
        ConfigStore.instance().store(
            group="hydra/help",
            name=app.replace("-", "_"),
            node={"app_name": app, "header": "", "footer": "", "template": template},
        )


def compose_run(*overrides: str, config_name: str = "train") -> Any:
    """The run that ``placerl-train`` (``config_name="eval"``: ``placerl-eval``, ``"bench"``:
    ``placerl-bench``) composes from these command-line overrides, without running it.

    Example: ``train(compose_run("experiment=doppler", "total_steps=4000"))``.

    Raises:
        ConfigError: An override names a key the schema lacks.
    """
    from placerl._extras import require

    require("hydra", "placerl.compose (RunConfig's defaults)")
    from hydra import compose, initialize_config_dir, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    register_schemas()
    check_arguments(overrides, config_name)
    path = config_path()
    # A running Hydra app (placerl-train building a RunConfig, or a user's own) holds the
    # global instance: compose beside it and hand it back.
    active, GlobalHydra.instance().hydra = GlobalHydra.instance().hydra, None
    try:
        if path.startswith("pkg://"):
            context = initialize_config_module(config_module=CONFIG_MODULE, version_base=None)
        else:
            context = initialize_config_dir(config_dir=path, version_base=None)
        with context:
            return to_run(compose(config_name=config_name, overrides=list(overrides)))
    finally:
        GlobalHydra.instance().hydra = active


def _config_root() -> Any:
    from importlib import resources

    return (
        resources.files(CONFIG_MODULE)
        if config_path().startswith("pkg://")
        else Path(config_path())
    )


def config_groups() -> list[str]:
    """The config groups of the tree (``graph``, ``experiment``, ...), Hydra's own aside."""
    return sorted(
        p.name
        for p in _config_root().iterdir()
        if p.is_dir() and p.name not in ("hydra", "__pycache__")
    )


def group_options(group: str) -> list[str]:
    """The options of a config group (``experiment``: the recipes), by name."""
    folder = _config_root() / group
    return sorted(
        p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml")
    )


def check_arguments(args: Sequence[str], config_name: str = "train") -> None:
    """Refuse, before Hydra parses them, overrides it would fail on without a useful word: a
    value with an unquoted ``=`` (with the quoted form to type) and an unknown key (with the
    closest known one).

    Raises:
        ConfigError: Naming the override and the fix.
    """
    from placerl.overrides import check_override_keys, check_overrides

    check_overrides(args)
    check_override_keys(args, schema_of(config_name), config_groups(), app=f"placerl-{config_name}")


def to_run(cfg: Any) -> Any:
    """A composed config as its dataclass, refusing keys the schema lacks (``+typo=1``)."""
    from omegaconf import OmegaConf

    from placerl.run_config import check_known_keys

    # keys that tell the schemas apart: ``suite`` only placerl-bench's has, ``placer`` only
    # placerl-eval's and placerl-bench's
    schema = schema_of("bench" if "suite" in cfg else "eval" if "placer" in cfg else "train")
    check_known_keys(OmegaConf.to_container(cfg, resolve=False), schema)
    return OmegaConf.to_object(cfg)


@functools.cache
def _main_job(config_name: str) -> Any:
    return compose_run(config_name=config_name)


def main_job(config_name: str = "train") -> Any:
    """The run of ``config_name`` with no overrides (composed once; a copy each call)."""
    return copy.deepcopy(_main_job(config_name))
