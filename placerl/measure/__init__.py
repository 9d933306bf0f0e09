"""Measured runtimes: run placements of real PyTorch models and keep the simulator honest."""

from placerl.measure.calibrate import calibrate
from placerl.measure.measurer import Measurement, Measurer
from placerl.measure.objective import MeasureOptions
from placerl.measure.source import ModelSource, bind, source_of

__all__ = [
    "MeasureOptions",
    "Measurement",
    "Measurer",
    "ModelSource",
    "bind",
    "calibrate",
    "source_of",
]
