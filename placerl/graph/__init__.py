"""Computation graphs: the model, loaders, traversal orders, synthetic families, msr import."""

from placerl.graph.core import CompGraph, Edge, GraphArrays, Node
from placerl.graph.loaders import GRAPH_SOURCES, load_graph, register_graph_source


def __getattr__(name: str):
    # from_module needs torch: import it on first use so `import placerl.graph` stays light.
    if name == "from_module":
        from placerl.graph.torch_import import from_module

        return from_module
    raise AttributeError(f"module 'placerl.graph' has no attribute {name!r}")


__all__ = [
    "GRAPH_SOURCES",
    "CompGraph",
    "Edge",
    "GraphArrays",
    "Node",
    "from_module",
    "load_graph",
    "register_graph_source",
]
