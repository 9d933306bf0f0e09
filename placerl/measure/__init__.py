"""Measured runtimes: run placements of real PyTorch models and keep the simulator honest."""

from placerl.measure.measurer import Measurement, Measurer
from placerl.measure.source import ModelSource, bind, source_of

__all__ = ["Measurement", "Measurer", "ModelSource", "bind", "source_of"]
