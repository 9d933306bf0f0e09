"""Pretrained policies that ship with placerl: ``place("policy", g, c, pretrained="cifar10")``.

Each shipped policy is two files in ``placerl/data/pretrained/`` (package data, in the wheel):
``<name>.zip``, the model (the policy's weights and placerl's settings, no optimizer state),
and ``<name>.json``, its card (:data:`CARD_FIELDS`): the recipe and overrides it was trained
with, the training budget, the PlaceBench suite, tier, family and cases it trained, selected
and was scored on, the cluster and the observation widths it reads, the leaderboard row it
earned on its family's test cases and, per test case, the runtime of its greedy placement
(the figure ``tests/agents/test_pretrained.py`` checks), with the provenance of the run.
``benchmarks/train_pretrained.py`` writes both.

A shipped policy's network has no per-device parameter (its card's ``reads.any_device_count``):
it places on clusters of any device count, rebuilt for them
(:func:`~placerl.agents.fitting.fit_to_env`). :func:`check_cluster` refuses another device
count before any work for a policy that has one, naming the cluster it was trained for, and
:func:`check_widths` a cluster whose device rows have another width (another feature set)
once the env is built, before the network reads it.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from pathlib import Path
from typing import Any

from placerl.cluster import Cluster
from placerl.errors import ConfigError

#: The version of the card format; a card of another version is refused by name.
CARD_VERSION = 1
#: The fields every card holds (see the module and ``placerl/data/pretrained/README.md``).
CARD_FIELDS = (
    "name",
    "card_version",
    "file",
    "sha256",
    "bytes",
    "recipe",
    "overrides",
    "label",
    "seed",
    "suite",
    "tier",
    "family",
    "cases",
    "cluster",
    "objective",
    "reads",
    "training",
    "leaderboard",
    "test",
    "provenance",
)


def pretrained_dir() -> Path:
    """The folder of the shipped policies (package data: ``placerl/data/pretrained``)."""
    return Path(str(resources.files("placerl") / "data" / "pretrained"))


def shipped() -> tuple[str, ...]:
    """The names of the shipped policies: those with both a model zip and a card."""
    folder = pretrained_dir()
    if not folder.is_dir():
        return ()
    return tuple(sorted(p.stem for p in folder.glob("*.json") if p.with_suffix(".zip").is_file()))


def pretrained_path(name: str) -> Path:
    """The model zip of the shipped policy ``name``.

    Raises:
        ConfigError: No shipped policy of that name (listing the shipped ones).
    """
    _check_name(name)
    return pretrained_dir() / f"{name}.zip"


def load_card(name: str) -> dict[str, Any]:
    """The card of the shipped policy ``name`` (a copy: the caller may change it).

    Raises:
        ConfigError: No shipped policy of that name (listing the shipped ones), or a card
            that does not read or lacks a field of :data:`CARD_FIELDS`.
    """
    _check_name(name)
    return json.loads(json.dumps(_card(str(pretrained_dir() / f"{name}.json"))))


@functools.lru_cache(maxsize=16)
def _card(path: str) -> dict[str, Any]:
    try:
        card = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise ConfigError(f"the card {path} does not read: {error}") from None
    missing = [f for f in CARD_FIELDS if f not in card] if isinstance(card, dict) else ["name"]
    if missing:
        raise ConfigError(f"the card {path} lacks field {missing[0]!r}")
    if card["card_version"] != CARD_VERSION:
        raise ConfigError(
            f"the card {path} is of version {card['card_version']}; this "
            f"placerl reads version {CARD_VERSION}"
        )
    return card


def _check_name(name: str) -> None:
    names = shipped()
    if name not in names:
        raise ConfigError(f"no pretrained policy {name!r}; shipped: {', '.join(names) or 'none'}")


def trained_for(card: dict[str, Any]) -> str:
    """What a card's policy reads, in words: its training cluster, device count and widths."""
    reads = card["reads"]
    return (
        f"pretrained policy {card['name']!r} was trained for cluster {card['cluster']!r} "
        f"({reads['num_devices']} devices; feature widths "
        f"{_widths(reads['feature_width'])})"
    )


def _widths(widths: dict[str, Any]) -> str:
    """``nodes=14, devices=10``."""
    return ", ".join(f"{key}={width}" for key, width in widths.items())


def check_cluster(card: dict[str, Any], cluster: Cluster) -> None:
    """Refuse a cluster of another device count than the card's policy reads, unless its
    network reads any device count (``reads.any_device_count``).

    Raises:
        ConfigError: Saying what the policy was trained for and what the cluster has.
    """
    wanted = card["reads"]["num_devices"]
    if cluster.num_devices != wanted and not card["reads"].get("any_device_count", False):
        raise ConfigError(
            f"{trained_for(card)}; the cluster has {cluster.num_devices} "
            f"devices: place it on {wanted} devices"
        )


def feature_widths(space: Any) -> dict[str, int]:
    """The feature widths of a dict observation space: the last axis of each 2-D entry
    but the edge list (whose last axis is the edge padding), by key (``nodes``, ``devices``).
    A flat observation (one vector) has none."""
    spaces = getattr(space, "spaces", None) or {}
    return {
        key: int(s.shape[-1])
        for key, s in spaces.items()
        if len(s.shape) == 2 and key != "edge_index"
    }


def check_widths(card: dict[str, Any], space: Any) -> None:
    """Refuse observations of other feature widths than the card's policy reads (a cluster
    whose devices give other columns), before the network reads them.

    Raises:
        ConfigError: Saying what the policy was trained for and what the cluster gives.
    """
    given = feature_widths(space)
    wanted = dict(card["reads"]["feature_width"])
    if card["reads"].get("any_device_count", False):  # the nodes width grows with the devices
        wanted.pop("nodes", None)
    if any(given.get(key) != width for key, width in wanted.items()):
        shown = _widths({key: given.get(key) for key in wanted})
        raise ConfigError(f"{trained_for(card)}; this cluster gives feature widths {shown}")
