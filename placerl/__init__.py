"""placerl: reinforcement-learning device placement over graph traversal orders.

Importing the package registers the Gymnasium ids (``placerl/Placement-v1``, ...) by string
entry point and stays light: the simulator, numba, torch and the envs load on first use.
"""

from placerl._env_ids import register_envs
from placerl._version import __version__
from placerl.cluster import Cluster, Device, load_cluster
from placerl.errors import ClusterError, ConfigError, GraphError, PlacementError, PlaceRLError
from placerl.graph import CompGraph, load_graph
from placerl.graph.orders import ORDERS, register_order, traversal_order

register_envs()

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
    "load_cluster",
    "load_graph",
    "register_order",
    "traversal_order",
]
