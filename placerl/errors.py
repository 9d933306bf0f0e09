"""Errors raised at placerl's boundaries.

Every error names the offending thing (node, device, option) so a user can fix the input
without reading a traceback from deep inside numpy or networkx. All subclass ``ValueError``
so generic input-checking code keeps working.
"""

from __future__ import annotations


class PlaceRLError(ValueError):
    """Base class of every error placerl raises on bad input."""


class GraphError(PlaceRLError):
    """A computation graph is malformed (cycle, bad attribute, unknown node, ...)."""


class ClusterError(PlaceRLError):
    """A cluster description is malformed (bad bandwidth, memory, preset name, ...)."""


class PlacementError(PlaceRLError):
    """A placement does not fit its graph or cluster (length, device index, dtype, ...)."""


class ConfigError(PlaceRLError):
    """An option or registry name is unknown or out of range."""


class EpisodeError(PlaceRLError):
    """An env was used out of order: ``step()`` before ``reset()`` or after the episode ended."""


class MeasurementError(RuntimeError):
    """Running a placement for real failed: a worker crashed, ran out of memory or hung.

    Not an input error: the same placement may run on a retry. The measured objective turns
    it into an infeasible result; :class:`placerl.measure.Measurer` raises it.
    """
