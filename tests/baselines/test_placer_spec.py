"""Placer options as Python keyword arguments, and ``{steps}`` read in one place."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placerl.baselines import placer_spec
from placerl.baselines.references import CALLS, STEPS, parse_placer, resolve_budget
from placerl.errors import ConfigError


def test_keyword_arguments_write_the_spec_the_command_line_takes():
    spec = placer_spec("local_search", init="best_of", max_evaluations=STEPS, restarts=5)
    assert spec == "local_search?init=best_of&max_evaluations={steps}&restarts=5"
    assert placer_spec("heft") == "heft"


def test_a_nested_spec_with_options_stays_whole():
    nested = placer_spec("best_of", placers=["heft", "m_etf"])
    assert nested == "best_of?placers=heft,m_etf"
    spec = placer_spec("local_search", init=nested, restarts=2)
    assert parse_placer(spec) == ("local_search", {"init": nested, "restarts": 2})


@given(
    restarts=st.integers(0, 10**6),
    limit=st.floats(0.1, 1e3),
    seed=st.integers(0, 99),
    init=st.sampled_from(["heft", "m_topo", "best_of?placers=heft,m_etf"]),
)
def test_the_spec_parses_back_to_the_keyword_arguments(restarts, limit, seed, init):
    options = {"init": init, "restarts": restarts, "time_limit": limit, "seed": seed}
    assert parse_placer(placer_spec("local_search", **options)) == ("local_search", options)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: placer_spec("local_serch"), "local_serch"),
        (lambda: placer_spec("local_search", int="heft"), r"unknown option\(s\) int for placer"),
        (lambda: placer_spec("local_search", restarts="many"), "option 'restarts' of placer"),
    ],
)
def test_a_bad_placer_or_option_fails_by_name(call, message):
    with pytest.raises(ConfigError, match=message):
        call()


def test_the_budget_is_filled_in_at_least_one_and_refused_where_nothing_trained():
    search = "local_search?max_evaluations="
    specs = ["heft", f"{search}{STEPS}", f"{search}{CALLS}"]
    assert resolve_budget(specs, 20_480, 31_337) == [
        "heft",
        "local_search?max_evaluations=20480",
        "local_search?max_evaluations=31337",
    ]
    assert resolve_budget(specs, 0, 0)[1:] == ["local_search?max_evaluations=1"] * 2  # 0: no limit
    with pytest.raises(ConfigError, match=r"\{steps\} and \{calls\} stand for the budget"):
        resolve_budget(specs, None)
