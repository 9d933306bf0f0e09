"""The zoo's registry: a model family, its named variants and its example inputs.

A family is a frozen config dataclass (every field an architecture or input-shape choice,
``batch`` included), a builder ``config -> nn.Module`` and a function ``config -> example
inputs``. Variants are named configs; ``load_graph`` query options override single fields of
the chosen variant (``zoo:transformer?variant=gpt2_small&seq_len=256``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from placerl._registry import Registry
from placerl.errors import ConfigError

__all__ = ["ZOO", "ZooModel", "register_model"]


@dataclass(frozen=True)
class ZooModel:
    """A registered model family.

    Attributes:
        name: Registry name (``resnet50``), the body of ``zoo:<name>`` specs.
        build: ``config -> nn.Module``, randomly initialised (call it under
            ``torch.device("meta")`` to skip the initialisation).
        inputs: ``(config, device) -> tuple`` of example inputs of ``config.batch`` samples.
        variants: Named configs; the first one is the default.
        published_params: Parameter counts of the published models that variants follow, by
            variant name (empty where no single number is published).
        doc: One line that names the model in messages and listings.
    """

    name: str
    build: Callable[[Any], nn.Module]
    inputs: Callable[[Any, torch.device | str], tuple[Any, ...]]
    variants: Mapping[str, Any]
    published_params: Mapping[str, int]
    doc: str

    @property
    def default_variant(self) -> str:
        """Name of the first variant."""
        return next(iter(self.variants))

    def config(self, variant: str | None = None, **overrides: Any) -> Any:
        """The config of ``variant`` (default: the first) with ``overrides`` applied.

        Raises:
            ConfigError: Unknown variant, unknown field, or a value of the wrong type.
        """
        name = self.default_variant if variant is None else variant
        if name not in self.variants:
            known = ", ".join(self.variants)
            raise ConfigError(f"zoo model {self.name!r} has no variant {name!r}; known: {known}")
        base = self.variants[name]
        fields = {f.name: type(getattr(base, f.name)) for f in dataclasses.fields(base)}
        for key, value in overrides.items():
            if key not in fields:
                known = ", ".join(sorted(fields))
                raise ConfigError(f"zoo model {self.name!r} has no option {key!r}; known: {known}")
            _check_type(self.name, key, value, fields[key])
        return dataclasses.replace(base, **overrides)


def _check_type(model: str, key: str, value: Any, expected: type) -> None:
    ok = isinstance(value, expected) and not (isinstance(value, bool) and expected is not bool)
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        ok = True
    if not ok:
        raise ConfigError(
            f"zoo model {model!r} option {key!r} must be {expected.__name__}, got {value!r}"
        )
    if expected in (int, float) and value <= 0:
        raise ConfigError(f"zoo model {model!r} option {key!r} must be > 0, got {value!r}")


#: The zoo's models by name (``zoo:<name>`` graph specs).
ZOO: Registry[ZooModel] = Registry("zoo model")


def register_model(model: ZooModel, *, overwrite: bool = False) -> ZooModel:
    """Add a model family to :data:`ZOO` (usable as ``load_graph("zoo:<name>")``)."""
    return ZOO.register(model.name, model, overwrite=overwrite)
