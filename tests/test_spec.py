"""The spec parser shared by graph, cluster and placer specs."""

import pytest

from placerl._spec import parse_value, split_named, split_spec


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("true", True),
        ("False", False),
        ("3", 3),
        ("-2", -2),
        ("1e9", 1e9),
        ("0.5", 0.5),
        ("inf", float("inf")),
        ("abc", "abc"),
        ("", ""),
    ],
)
def test_values_are_typed(text, value):
    assert parse_value(text) == value and type(parse_value(text)) is type(value)


def test_specs_split_into_scheme_body_and_options():
    assert split_spec("synthetic:layered?n=5&p=0.5", what="graph spec") == (
        "synthetic",
        "layered",
        {"n": 5, "p": 0.5},
    )
    assert split_named("placeto?n_devices=4", what="cluster spec") == ("placeto", {"n_devices": 4})
    assert split_named("heft", what="placer spec") == ("heft", {})


def test_a_plus_in_a_value_is_kept_as_python_writes_floats():
    """``f"{1e10}"`` is ``1e+10``: a query must not decode its ``+`` as a space."""
    from placerl._spec import parse_query
    from placerl.cluster import load_cluster

    assert parse_query("bandwidth=1e+10&name=a%20b", what="x") == {"bandwidth": 1e10, "name": "a b"}
    cluster = load_cluster(f"homogeneous?n_devices=2&bandwidth={1e10}")
    assert (cluster.bandwidth == 1e10).all()
