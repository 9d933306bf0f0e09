"""The msr-fiddle file format (Tarnawski et al., NeurIPS 2020): files, paths and the header.

An msr-fiddle file describes a graph (nodes, edges) and the machine it is partitioned for (its
header: ``maxSizePerFPGA``, ``maxFPGAs``, ``maxCPUs``). Both :mod:`placerl.graph.msr` (the graph)
and :mod:`placerl.cluster` (the devices) read these files; the file handling they share lives
here, below both, so that neither imports the other. Seven files of the public benchmark (MIT
license, see ``data/msr/LICENSE.txt``) ship with placerl and are found by name.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from placerl.errors import PlaceRLError

HEADER_KEYS = ("maxSizePerFPGA", "maxFPGAs", "maxCPUs")


def bundled_msr_dir() -> Path:
    """Folder of the msr-fiddle files shipped inside the package."""
    return Path(str(resources.files("placerl") / "data" / "msr"))


def msr_names() -> tuple[str, ...]:
    """Names of the bundled msr-fiddle graphs (``bert24_training``, ...)."""
    return tuple(sorted(p.stem for p in bundled_msr_dir().glob("*.json")))


def is_msr_document(data: Any) -> bool:
    """Whether parsed JSON looks like an msr-fiddle file (it has the header)."""
    return isinstance(data, dict) and "maxFPGAs" in data


def resolve_msr_path(name_or_path: str | Path, error: type[PlaceRLError]) -> Path:
    """A bundled file by name, or an existing file by path.

    Raises:
        PlaceRLError: ``error``, the subclass the caller gives: neither a bundled name nor
            an existing file (the message lists the bundled names).
    """
    if not isinstance(name_or_path, (str, Path)):
        raise error(f"an msr graph is named by a string or path, got {name_or_path!r}")
    bundled = bundled_msr_dir() / f"{name_or_path}.json"
    if isinstance(name_or_path, str) and "/" not in name_or_path and bundled.is_file():
        return bundled
    path = Path(name_or_path)
    if path.is_file():
        return path
    raise error(
        f"no msr graph {str(name_or_path)!r}: not a file, and not one of the bundled graphs "
        f"({', '.join(msr_names())})"
    )


def read_msr(name_or_path: str | Path, error: type[PlaceRLError]) -> tuple[Path, dict[str, Any]]:
    """The resolved path and the parsed document of an msr-fiddle file.

    Raises:
        PlaceRLError: ``error``, the subclass the caller gives: the file is missing, not
            JSON, or lacks the msr header.
    """
    path = resolve_msr_path(name_or_path, error)
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise error(f"msr file {path} is not valid JSON: {err}") from None
    if not is_msr_document(data):
        raise error(f"msr file {path} lacks the msr-fiddle header ({', '.join(HEADER_KEYS)})")
    return path, data


def read_header(
    data: dict[str, Any], where: str, error: type[PlaceRLError]
) -> tuple[int, int, float]:
    """``(accelerators, cpus, memory per accelerator)`` from an msr document's header.

    Raises:
        PlaceRLError: ``error``, the subclass the caller gives: a missing field, a count that
            is not an integer, a memory that is not a number (strings are refused, not
            converted), or no device at all.
    """
    missing = [key for key in HEADER_KEYS if key not in data]
    if missing:
        raise error(f"msr file {where} has a bad header: missing {', '.join(missing)}")
    k, cpus, memory = data["maxFPGAs"], data["maxCPUs"], data["maxSizePerFPGA"]
    for key, value, kinds in (
        ("maxFPGAs", k, int),
        ("maxCPUs", cpus, int),
        ("maxSizePerFPGA", memory, (int, float)),
    ):
        if isinstance(value, bool) or not isinstance(value, kinds):
            raise error(f"msr file {where} has a bad header: {key} is {value!r}")
    if k < 0 or cpus < 0 or k + cpus == 0:
        raise error(f"msr file {where}: need maxFPGAs + maxCPUs >= 1, got {k} + {cpus}")
    return k, cpus, float(memory)
