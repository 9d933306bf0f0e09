"""unchecked_distributions: no argument checks inside the block, the old default after."""

import pytest
import torch

from placerl.agents.unchecked import unchecked_distributions


def test_checks_are_off_inside_and_restored_after():
    bad = torch.tensor([[-0.5, 1.5]])  # a negative probability
    with pytest.raises(ValueError, match="probs"):
        torch.distributions.Categorical(probs=bad, validate_args=None)
    with unchecked_distributions():
        torch.distributions.Categorical(probs=bad)  # accepted unchecked
    with pytest.raises(ValueError, match="probs"):
        torch.distributions.Categorical(probs=bad)


def test_the_default_is_restored_after_an_error():
    before = torch.distributions.Distribution._validate_args
    with pytest.raises(RuntimeError, match="inside"), unchecked_distributions():
        raise RuntimeError("inside")
    assert torch.distributions.Distribution._validate_args == before
