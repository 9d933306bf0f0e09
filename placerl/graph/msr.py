"""Importer for the msr-fiddle profiled-graph format (Tarnawski et al., NeurIPS 2020).

The public dnn-partitioning benchmark (MIT license, see ``placerl/data/msr/LICENSE.txt``)
describes each graph as JSON: a header (``maxSizePerFPGA``, ``maxFPGAs``, ``maxCPUs``), nodes
(``id``, ``supportedOnFpga``, ``cpuLatency``, ``fpgaLatency``, ``isBackwardNode``, optional
``colorClass``, ``size``) and edges (``sourceId``, ``destId``, ``cost``). Seven files ship with
placerl and load by name: ``load_graph("msr:bert24_training")``; any other file of the format
loads by path. File handling shared with the cluster side is in :mod:`placerl.msr_format`.

Mapping to :class:`~placerl.graph.CompGraph` (node order = file order):

* ``fpgaLatency`` -> ``cost`` (the accelerator is the reference device) and
  ``costs["accelerator"]`` (``inf`` when ``supportedOnFpga`` is false); ``cpuLatency`` ->
  ``costs["cpu"]``. Times are kept in the file's own unit, so the published optima of the
  benchmark are reproduced exactly; ``meta["time_unit"]`` records that they are not seconds.
* ``size`` -> ``mem_bytes``; ``colorClass`` -> colocation ``group``; ``isBackwardNode`` ->
  ``backward``.
* edge ``cost`` -> the edge's explicit transfer ``time``; edge ``size`` -> ``bytes``, and a
  node's ``out_bytes`` is the largest size among its out-edges.
* node names are the file's ``name`` fields when present and unique, else ``n<id>``; the
  original id is kept in ``attrs["msr_id"]``. The header goes to ``meta``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from placerl.errors import GraphError
from placerl.graph.core import CompGraph
from placerl.msr_format import HEADER_KEYS, read_msr

#: The msr files' times are in the benchmark's own unit (not seconds); ``meta["time_unit"]``
#: says so, and reports print it instead of "s".
MSR_TIME_UNIT = "msr time units"

_NODE_KEYS = ("id", "supportedOnFpga", "cpuLatency", "fpgaLatency", "isBackwardNode", "size")
_EDGE_KEYS = ("sourceId", "destId", "cost")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_flag(value: Any) -> bool:
    return isinstance(value, bool) or (_is_int(value) and value in (0, 1))


def _is_class(value: Any) -> bool:
    return value is None or _is_int(value) or isinstance(value, str)


#: What each field must hold, checked as read (never coerced: ``bool("false")`` is True and
#: ``float("10")`` is 10): ``(test, in words)``. The benchmark's files write flags as 0 / 1.
_FIELD_TYPES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "maxSizePerFPGA": (_is_number, "a number"),
    "maxFPGAs": (_is_int, "an integer"),
    "maxCPUs": (_is_int, "an integer"),
    "nodes": (lambda v: isinstance(v, list), "a list"),
    "edges": (lambda v: isinstance(v, list), "a list"),
    "id": (_is_int, "an integer"),
    "supportedOnFpga": (_is_flag, "true, false, 0 or 1"),
    "isBackwardNode": (_is_flag, "true, false, 0 or 1"),
    "cpuLatency": (_is_number, "a number"),
    "fpgaLatency": (_is_number, "a number"),
    "size": (_is_number, "a number"),
    "colorClass": (_is_class, "an integer, a string or null"),
    "sourceId": (_is_int, "an integer"),
    "destId": (_is_int, "an integer"),
    "cost": (_is_number, "a number"),
}


def _require(record: Any, keys: tuple[str, ...], what: str) -> None:
    """``record`` is an object with ``keys``; every field it has is of its type."""
    if not isinstance(record, dict):
        raise GraphError(f"{what} must be a JSON object, got {type(record).__name__}")
    missing = [k for k in keys if k not in record]
    if missing:
        raise GraphError(f"{what} is missing required field(s): {', '.join(missing)}")
    for key, value in record.items():
        test, expected = _FIELD_TYPES.get(key, (lambda v: True, ""))
        if not test(value):
            raise GraphError(f"{what} field {key!r} must be {expected}, got {value!r:.60}")


def parse_msr(data: dict[str, Any], *, name: str = "msr") -> CompGraph:
    """Build a :class:`CompGraph` from a parsed msr-fiddle JSON document.

    Raises:
        GraphError: For a missing field, a field of the wrong type (a flag other than
            true / false / 0 / 1, a number given as a string, ...), an unknown node id in an
            edge, a duplicate id, or any error :class:`CompGraph` itself detects (cycles,
            negative latencies, ...).
    """
    _require(data, (*HEADER_KEYS, "nodes", "edges"), f"msr graph {name!r}")
    records = data["nodes"]
    for i, record in enumerate(records):
        _require(record, _NODE_KEYS, f"msr graph {name!r} node #{i}")
    ids = [record["id"] for record in records]
    if len(set(ids)) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        raise GraphError(f"msr graph {name!r} has duplicate node ids: {dupes}")
    file_names = [record.get("name") for record in records]
    use_file_names = all(isinstance(x, str) and x for x in file_names) and len(
        set(file_names)
    ) == len(file_names)
    node_name = {
        record["id"]: (record["name"] if use_file_names else f"n{record['id']}")
        for record in records
    }

    out_bytes = dict.fromkeys(ids, 0.0)
    edges = []
    for i, edge in enumerate(data["edges"]):
        _require(edge, _EDGE_KEYS, f"msr graph {name!r} edge #{i}")
        src, dst = edge["sourceId"], edge["destId"]
        for end in (src, dst):
            if end not in node_name:
                raise GraphError(
                    f"msr graph {name!r} edge {src} -> {dst} names unknown node id {end}"
                )
        nbytes = float(edge.get("size", 0.0))  # a number: _require checked it
        out_bytes[src] = max(out_bytes[src], nbytes)
        edges.append(
            {"src": node_name[src], "dst": node_name[dst], "bytes": nbytes, "time": edge["cost"]}
        )

    nodes = []
    for record in records:
        supported = bool(record["supportedOnFpga"])
        node = {
            "name": node_name[record["id"]],
            "op": "backward" if record["isBackwardNode"] else "forward",
            "cost": record["fpgaLatency"],
            "costs": {
                "accelerator": record["fpgaLatency"] if supported else float("inf"),
                "cpu": record["cpuLatency"],
            },
            "out_bytes": out_bytes[record["id"]],
            "mem_bytes": record["size"],
            "backward": bool(record["isBackwardNode"]),
            "attrs": {"msr_id": record["id"]},
        }
        if record.get("colorClass") is not None:
            node["group"] = f"color{record['colorClass']}"
        nodes.append(node)
    meta = {"source": "msr", "time_unit": MSR_TIME_UNIT, **{key: data[key] for key in HEADER_KEYS}}
    return CompGraph(nodes, edges, name=name, meta=meta)


def load_msr(name_or_path: str | Path) -> CompGraph:
    """Load a bundled msr-fiddle graph by name (``"bert24_training"``) or any file by path."""
    path, data = read_msr(name_or_path, GraphError)
    return parse_msr(data, name=path.stem)
