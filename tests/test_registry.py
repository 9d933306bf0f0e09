"""The shared name -> entry registry."""

import pytest

from placerl._registry import Registry
from placerl.errors import ConfigError
from placerl.graph.orders import ORDERS, register_order


def test_scope_undoes_registrations_and_overwrites():
    registry: Registry[int] = Registry("number")
    registry.register("one", 1)
    with registry.scope():
        registry.register("two", 2)
        registry.register("one", 11, overwrite=True)
        assert dict(registry) == {"one": 11, "two": 2}
    assert dict(registry) == {"one": 1}


def test_scope_restores_even_when_the_block_fails():
    with pytest.raises(RuntimeError), ORDERS.scope():
        register_order("test_scoped")(lambda graph, rng: range(graph.num_nodes))
        assert "test_scoped" in ORDERS
        raise RuntimeError
    assert "test_scoped" not in ORDERS


def test_unknown_names_list_the_known_ones():
    registry: Registry[int] = Registry("number")
    registry.register("one", 1)
    with pytest.raises(ConfigError, match="unknown number 'two'; known: one"):
        registry["two"]
