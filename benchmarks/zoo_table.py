"""The model zoo at a glance: graph size, cost, parameters and import times per model.

Each model is imported at its default batch into a fresh cache (the first import), then loaded
again from that cache. Costs are the sum of the forward op graph's roofline costs on the
reference V100. Usage: ``python benchmarks/zoo_table.py [--training]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import markdown_table, write_results

from placerl.graph import load_graph
from placerl.graph.zoo import ZOO

MODELS = [
    ("inception_v3", "inception_v3"),
    ("resnet50", "resnet50"),
    ("gnmt", "gnmt"),
    ("transformer", "bert_base"),
    ("transformer", "gpt2_small"),
    ("nasnet", "mobile"),
]


def timed_load(spec: str):
    start = time.perf_counter()
    graph = load_graph(spec)
    return graph, time.perf_counter() - start


def measure(model: str, variant: str, training: bool) -> dict:
    spec = f"zoo:{model}?variant={variant}" + ("&training=true" if training else "")
    graph, first = timed_load(spec)
    _, cached = timed_load(spec)
    published = ZOO[model].published_params.get(variant)
    config = graph.meta["config"]
    return {
        "model": f"`zoo:{model}?variant={variant}`",
        "batch": config["batch"],
        "nodes": graph.num_nodes,
        "edges": graph.num_edges,
        "total cost (ms)": round(graph.total_cost * 1e3, 1),
        "GFLOPs": round(sum(n.attrs.get("flops", 0) for n in graph.nodes) / 1e9, 1),
        "parameters": f"{graph.meta['params']:,}",
        "published": f"{published:,}" if published else "-",
        "first import (s)": round(first, 2),
        "cached load (s)": round(cached, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--training", action="store_true", help="training graphs (backward)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        os.environ["PLACERL_CACHE"] = cache
        rows = [measure(model, variant, args.training) for model, variant in MODELS]
    name = "zoo_table_training" if args.training else "zoo_table"
    table = markdown_table(rows)
    path = write_results(
        name, rows, Path(__file__).parent / "results", config=args, markdown=table + "\n"
    )
    print(table)
    print(f"\nwritten to {path}")


if __name__ == "__main__":
    main()
