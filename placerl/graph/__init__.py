"""Computation graphs: the model, loaders, traversal orders, synthetic families, msr import."""

from placerl.graph.core import CompGraph, Edge, GraphArrays, Node
from placerl.graph.loaders import GRAPH_SOURCES, load_graph, register_graph_source

__all__ = [
    "GRAPH_SOURCES",
    "CompGraph",
    "Edge",
    "GraphArrays",
    "Node",
    "load_graph",
    "register_graph_source",
]
