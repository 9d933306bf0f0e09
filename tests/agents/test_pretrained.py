"""Shipped pretrained policies: each places a test case as its card says; bad uses fail by name."""

import hashlib
import json
import shutil

import numpy as np
import pytest
from gymnasium import spaces

from placerl.agents import pretrained
from placerl.agents.pretrained import (
    CARD_FIELDS,
    check_cluster,
    check_widths,
    load_card,
    shipped,
)
from placerl.baselines import place
from placerl.bench.placebench import placebench_v1
from placerl.cluster import load_cluster
from placerl.errors import ConfigError
from placerl.graph import load_graph
from placerl.sim import simulate

SHIPPED = shipped()
NAMES = ("cifar10", "layered", "nmt", "ptb")
LAYERED = "synthetic:layered?n=80&seed=24"  # a test case of the layered family


def test_a_policy_ships_for_each_family_of_the_tier():
    assert SHIPPED == NAMES


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_policy_places_a_test_case_as_its_card_says(name):
    card = load_card(name)
    case = card["test"][0]
    placement = place("policy", case["graph"], card["cluster"], card["objective"], pretrained=name)
    runtime = simulate(case["graph"], placement, card["cluster"], card["objective"]).runtime
    assert placement.tolist() == case["placement"] or runtime == pytest.approx(
        case["runtime"], rel=1e-9
    )


@pytest.mark.parametrize("name", SHIPPED)
def test_a_card_describes_its_zip_and_the_cases_it_was_scored_on(name):
    card = load_card(name)
    data = pretrained.pretrained_path(name).read_bytes()
    assert set(CARD_FIELDS) <= set(card) and card["name"] == name
    assert card["sha256"] == hashlib.sha256(data).hexdigest() and card["bytes"] == len(data)
    assert len(data) < 1_000_000  # small enough to ship in the wheel
    suite = placebench_v1()
    test = suite.select(card["tier"], "test", card["family"])
    assert card["cases"]["test"] == [c.name for c in test] == [t["case"] for t in card["test"]]
    assert {c.cluster for c in test} == {card["cluster"]}
    assert card["leaderboard"]["placer"] == card["label"]
    assert card["leaderboard"]["cases"] == len(test)


def test_an_unknown_name_lists_the_shipped_ones():
    with pytest.raises(
        ConfigError, match=r"no pretrained policy 'imagenet'; shipped: " + ", ".join(SHIPPED)
    ):
        place("policy", LAYERED, "placeto?n_devices=4", pretrained="imagenet")


@pytest.mark.parametrize(
    ("options", "given"), [({}, "neither"), ({"path": "m.zip", "pretrained": "layered"}, "both")]
)
def test_a_path_or_a_pretrained_name_not_both_or_neither(options, given):
    with pytest.raises(
        ConfigError,
        match=rf"a model zip \(path=...\) or a shipped policy "
        rf"\(pretrained=...\), not {given}",
    ):
        place("policy", LAYERED, "placeto?n_devices=4", **options)


@pytest.mark.skipif("layered" not in SHIPPED, reason="no layered policy shipped")
@pytest.mark.parametrize("devices", [2, 8])
def test_a_shipped_policy_places_on_other_device_counts(devices):
    """Trained on 4 devices, it places on 2 and 8 (its card says it reads any count)."""
    assert load_card("layered")["reads"]["any_device_count"]
    placement = place("policy", LAYERED, f"placeto?n_devices={devices}", pretrained="layered")
    assert placement.shape == (load_graph(LAYERED).num_nodes,)
    assert set(placement.tolist()) <= set(range(devices))


def test_another_device_count_says_what_a_tied_policy_was_trained_for():
    """A card whose policy has per-device parameters refuses another count before any work."""
    card = {
        "name": "x",
        "cluster": "placeto?n_devices=4",
        "reads": {
            "num_devices": 4,
            "any_device_count": False,
            "feature_width": {"nodes": 14, "devices": 10},
        },
    }
    message = (
        r"pretrained policy 'x' was trained for cluster 'placeto\?n_devices=4' "
        r"\(4 devices; feature widths nodes=14, devices=10\); the cluster has 3 "
        r"devices: place it on 4 devices"
    )
    with pytest.raises(ConfigError, match=message):
        check_cluster(card, load_cluster("placeto?n_devices=3"))
    check_cluster(
        card | {"reads": card["reads"] | {"any_device_count": True}},
        load_cluster("placeto?n_devices=3"),
    )


def test_other_feature_widths_say_what_the_policy_was_trained_for():
    card = {
        "name": "x",
        "cluster": "placeto?n_devices=4",
        "reads": {"num_devices": 4, "feature_width": {"nodes": 14, "devices": 10}},
    }
    space = spaces.Dict(
        {
            "nodes": spaces.Box(0, 1, (80, 15)),
            "devices": spaces.Box(0, 1, (4, 10)),
            "edge_index": spaces.Box(0, 80, (2, 192), dtype=np.int64),
        }
    )
    with pytest.raises(
        ConfigError,
        match=r"trained for cluster 'placeto\?n_devices=4' \(4 "
        r"devices; feature widths nodes=14, devices=10\); "
        r"this cluster gives feature widths nodes=15, "
        r"devices=10",
    ):
        check_widths(card, space)
    check_widths(
        card,
        spaces.Dict({"nodes": spaces.Box(0, 1, (300, 14)), "devices": spaces.Box(0, 1, (4, 10))}),
    )


@pytest.mark.skipif("layered" not in SHIPPED, reason="no layered policy shipped")
def test_the_cli_spec_places_with_a_pretrained_policy():
    """``placerl-eval placer='policy?pretrained=layered'`` runs this function."""
    from placerl.evaluate import evaluate

    result = evaluate(LAYERED, "placeto?n_devices=4", "policy?pretrained=layered")
    (outcome,) = result.graphs
    card = load_card("layered")
    committed = next(t for t in card["test"] if t["graph"] == LAYERED)
    assert outcome.final_runtime == pytest.approx(committed["runtime"], rel=1e-9)


@pytest.mark.skipif(not SHIPPED, reason="no policy shipped")
def test_a_card_without_a_field_or_of_another_version_is_refused(tmp_path, monkeypatch):
    name = SHIPPED[0]
    source = pretrained.pretrained_dir()
    shutil.copy(source / f"{name}.zip", tmp_path / "a.zip")
    shutil.copy(source / f"{name}.zip", tmp_path / "b.zip")
    card = json.loads((source / f"{name}.json").read_text())
    (tmp_path / "a.json").write_text(json.dumps({k: v for k, v in card.items() if k != "reads"}))
    (tmp_path / "b.json").write_text(json.dumps({**card, "card_version": 99}))
    monkeypatch.setattr(pretrained, "pretrained_dir", lambda: tmp_path)
    assert shipped() == ("a", "b")
    with pytest.raises(ConfigError, match=r"a.json lacks field 'reads'"):
        load_card("a")
    with pytest.raises(
        ConfigError,
        match=r"b.json is of version 99; this placerl reads "
        r"version 1",
    ):
        load_card("b")
