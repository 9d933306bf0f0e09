"""Command line: ``python -m placerl describe <graph spec>`` and friends.

The experiment commands (train, evaluate, report) are Hydra task functions added on top of this.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from placerl.cluster import PRESETS, load_cluster
from placerl.errors import PlaceRLError
from placerl.graph import load_graph
from placerl.graph.orders import ORDERS, traversal_order


def describe(spec: str, order: str, seed: int, cluster: str | None) -> str:
    """A text summary of a graph, the first nodes of an order, and optionally a cluster.

    Times print in the graph's unit: seconds, or the msr files' own unit (``meta["time_unit"]``).
    """
    g = load_graph(spec)
    a = g.arrays
    unit = g.meta.get("time_unit", "s")
    lines = [
        f"graph      {g.name}: {g.num_nodes} nodes, {g.num_edges} edges",
        f"cost       total {g.total_cost:.6g} {unit}, max {a.cost.max():.6g} {unit}",
        f"memory     {a.mem_bytes.sum():.6g} B resident, {a.out_bytes.sum():.6g} B of outputs",
        f"kinds      explicit costs for: {', '.join(g.device_kinds) or '-'}",
        f"groups     {len(a.group_names)} colocation groups, {int(a.backward.sum())} backward",
    ]
    names = [g.names[v] for v in traversal_order(g, order, seed=seed)]
    shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    lines.append(f"order      {order}: {shown}")
    if cluster:
        c = load_cluster(cluster)
        lines.append(f"cluster    {c!r}")
        lines.extend(
            f"  {d.name:<8} kind={d.kind} speed={d.speed:.3g} memory={d.memory:.4g}"
            for d in c.devices
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m placerl``."""
    parser = argparse.ArgumentParser(prog="placerl", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("describe", help="summarise a graph (and a cluster)")
    p.add_argument("graph", help="graph spec, e.g. msr:bert24_training or synthetic:layered?n=100")
    p.add_argument("--order", default="topo", choices=sorted(ORDERS))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--cluster",
        help=f"cluster spec: a preset with options ({', '.join(sorted(PRESETS))}; "
        "e.g. 'homogeneous?n_devices=4'), msr:<name>, or a cluster .json file",
    )
    args = parser.parse_args(argv)
    try:
        print(describe(args.graph, args.order, args.seed, args.cluster))
    except PlaceRLError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0
