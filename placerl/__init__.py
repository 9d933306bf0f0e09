"""placerl: reinforcement-learning device placement over graph traversal orders."""

import placerl.envs  # noqa: F401  (registers the gymnasium ids)
from placerl.cluster import Cluster, Device
from placerl.errors import ClusterError, ConfigError, GraphError, PlacementError, PlaceRLError
from placerl.graph import CompGraph, load_graph
from placerl.graph.orders import ORDERS, register_order, traversal_order

__version__ = "0.1.0"

__all__ = [
    "ORDERS",
    "Cluster",
    "ClusterError",
    "CompGraph",
    "ConfigError",
    "Device",
    "GraphError",
    "PlaceRLError",
    "PlacementError",
    "__version__",
    "load_graph",
    "register_order",
    "traversal_order",
]
