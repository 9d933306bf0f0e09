"""A placement made elsewhere, read from a JSON file: ``place("file", g, cluster, path=...)``.

The way a placer that is not part of placerl gets scored by placerl's simulator and
PlaceBench: write its placement to a file, then run the ``file`` placer on the case
(``placerl-bench placer='file?path=mine.json'``). It is also how a recipe trained on one case
hands its best placement to the benchmark (:mod:`placerl.bench.recipe`).

Accepted contents (the first that matches):

* a list of device indices, one per node in the graph's node order;
* ``{op name: device}``, the device a name of the cluster (``"gpu:1"``) or an index;
* ``placerl.train``'s ``best_placement.json``: ``{graph name: {"placement": [...], ...}}``,
  the entry of the graph placed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from placerl.errors import PlacementError

from .api import register_placer
from .problem import Problem


@register_placer("file", one_of=("path",))
def from_file(problem: Problem, *, path: str | None = None) -> np.ndarray:
    """A placement read from a JSON file (see the module for the formats).

    Source: none; it places nothing itself. Complexity: O(V).

    Args:
        problem: The problem.
        path: The JSON file.

    Raises:
        PlacementError: No such file, not JSON, a format above not matched, or a placement
            that names an unknown op or device or misses a node (naming which).
    """
    content = _read(Path(str(path)))
    graph = problem.graph
    if isinstance(content, dict) and isinstance(content.get(graph.name), dict):
        content = content[graph.name].get("placement")
    elif (
        isinstance(content, dict) and content and all(isinstance(v, dict) for v in content.values())
    ):
        raise PlacementError(
            f"{path} holds placements of graphs {', '.join(content)}, not of graph {graph.name!r}"
        )
    if isinstance(content, list):
        return _from_list(problem, content, path)
    if isinstance(content, dict):
        return _from_names(problem, content, path)
    raise PlacementError(
        f"{path} holds no placement of graph {graph.name!r}: give a list of "
        "device indices, {op name: device} or a best_placement.json entry "
        "named after the graph"
    )


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as error:
        raise PlacementError(f"placer 'file': cannot read {path}: {error.strerror}") from None
    except ValueError as error:
        raise PlacementError(f"placer 'file': {path} is not JSON: {error}") from None


def _from_list(problem: Problem, devices: list[Any], path: Any) -> np.ndarray:
    if len(devices) != problem.num_nodes:
        raise PlacementError(
            f"{path} places {len(devices)} nodes; graph "
            f"{problem.graph.name!r} has {problem.num_nodes}"
        )
    return np.array([_device(problem, d, path) for d in devices], dtype=np.int64)


def _from_names(problem: Problem, by_op: dict[str, Any], path: Any) -> np.ndarray:
    names = problem.graph.names
    unknown = sorted(set(by_op) - set(names))
    if unknown:
        raise PlacementError(
            f"{path} places op {unknown[0]!r}, which graph {problem.graph.name!r} does not have"
        )
    missing = [name for name in names if name not in by_op]
    if missing:
        raise PlacementError(
            f"{path} does not place op {missing[0]!r} ({len(missing)} ops unplaced)"
        )
    return np.array([_device(problem, by_op[name], path) for name in names], dtype=np.int64)


def _device(problem: Problem, device: Any, path: Any) -> int:
    """A device index from an index or a cluster device name."""
    names = [d.name for d in problem.cluster.devices]
    if isinstance(device, str) and device in names:
        return names.index(device)
    if isinstance(device, int) and not isinstance(device, bool) and 0 <= device < len(names):
        return device
    raise PlacementError(
        f"{path} names device {device!r}; the cluster has "
        f"{', '.join(names)} (or indices 0-{len(names) - 1})"
    )
