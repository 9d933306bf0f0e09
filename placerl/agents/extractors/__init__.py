"""SB3 feature extractors over the placement envs' ``Dict`` observation, chosen by name.

* ``gnn`` - :class:`GnnExtractor`: two-way message passing with PyG layers (Placeto).
* ``lstm`` - :class:`LstmExtractor`: a bidirectional LSTM over the nodes in traversal order.
* ``mlp`` - :class:`MlpExtractor`: no structure, the baseline.
"""

from placerl._registry import Registry
from placerl.agents.extractors.base import PlacementExtractor
from placerl.agents.extractors.gnn import GNN_LAYERS, GnnExtractor
from placerl.agents.extractors.lstm import LstmExtractor
from placerl.agents.extractors.mlp import MlpExtractor

#: Feature extractors by name (``agent.extractor``: ``gnn``, ``lstm``, ``mlp``).
EXTRACTORS: Registry[type[PlacementExtractor]] = Registry("feature extractor")
EXTRACTORS.register("gnn", GnnExtractor)
EXTRACTORS.register("lstm", LstmExtractor)
EXTRACTORS.register("mlp", MlpExtractor)

__all__ = [
    "EXTRACTORS",
    "GNN_LAYERS",
    "GnnExtractor",
    "LstmExtractor",
    "MlpExtractor",
    "PlacementExtractor",
]
