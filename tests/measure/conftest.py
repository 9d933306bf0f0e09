"""Shared measurers: worker processes take seconds to start, so each module starts them once."""

import pytest
import torch

from placerl.graph import load_graph
from placerl.graph.torch_import import from_module
from placerl.measure import Measurer
from tests.measure.models import Branches

RESNET = "zoo:resnet50?variant=small"
RESNET_TRAINING = "zoo:resnet50?variant=small&training=true"


@pytest.fixture(scope="module")
def resnet_measurer():
    with Measurer(RESNET, "local", warmup=1, repeats=2) as measurer:
        yield measurer


@pytest.fixture(scope="module")
def branches():
    torch.manual_seed(0)
    module, x = Branches(), torch.randn(4, 32)
    return module, x, from_module(module, (x,))


@pytest.fixture(scope="module")
def resnet():
    return load_graph(RESNET)
