"""placerl.bench.versus: a learned recipe against iterated local search at its own budget."""

import json
import math

import pytest

from placerl.baselines.references import parse_placer
from placerl.bench.versus import (
    NO_ROW,
    NOT_RUN,
    best_known,
    best_runtimes,
    budget_per_case,
    coverage,
    coverage_sections,
    floor,
    search_at_calls,
    search_at_seconds,
    versus_rows,
)
from tests.bench_modules import module_fixture


def _record(case, runtime, seed, training_id, calls=10, wall=0.5):
    training = {"id": training_id, "simulator_calls": 1000, "wall_s": 30.0}
    return {
        "case": case,
        "tier": "t",
        "placer": "recipe:x",
        "seed": seed,
        "runtime": runtime,
        "feasible": True,
        "error": None,
        "simulator_calls": calls,
        "wall_s": wall,
        "training": training,
    }


def test_each_training_counts_once_per_seed_spread_over_the_cases():
    records = [_record(c, 1.0, s, f"seed{s}") for s in (0, 1) for c in ("a", "b", "c", "d")]
    budget = budget_per_case(records)
    assert budget["calls"] == pytest.approx((2 * 1000 + 8 * 10) / 8)
    assert budget["seconds"] == pytest.approx((2 * 30.0 + 8 * 0.5) / 8)
    failed = {**_record("e", 1.0, 0, "seed0"), "error": "ConfigError: 3 devices"}
    assert budget_per_case([*records, failed]) == budget  # nothing spread over a failure
    with pytest.raises(ValueError, match="no record of a placed case"):
        budget_per_case([failed])


def test_the_searches_stop_at_the_matched_budget_and_are_valid_specs():
    calls, seconds = search_at_calls(260.2), search_at_seconds(7.5)
    assert "max_evaluations=261&" in calls and "restarts=1000000" in calls
    assert "time_limit=7.5" in seconds and "max_evaluations=1000000000" in seconds
    for spec in (calls, seconds):
        assert parse_placer(spec)[1]["init"] == "best_of"


def test_the_seeds_of_a_case_pair_once_as_their_geometric_mean():
    """Seeds share their case's graph: one pair per case, not one per seed."""
    learned = [
        _record("a", 1.0, 0, "s0"),
        _record("b", 2.0, 0, "s0"),
        _record("a", 0.25, 1, "s1"),
        _record("b", 2.0, 1, "s1"),
        {**_record("c", 9.0, 1, "s1"), "feasible": False},  # no pair from a misfit ...
        _record("d", 0.5, 0, "s0"),  # ... nor from a case one seed fit and one did not
        {**_record("d", None, 1, "s1"), "error": "PlacementError: no room"},  # as run.py writes
    ]
    search = [
        {
            "case": c,
            "placer": "ils",
            "runtime": 1.0,
            "feasible": True,
            "error": None,
            "simulator_calls": 260,
            "wall_s": 3.0,
        }
        for c in "abcd"
    ]
    search[0]["lower_bound"], search[1]["lower_bound"] = 0.5, 0.8
    (row,) = versus_rows(learned, {"calls": search})
    # c and d: no pairs, but losses (the search placed them), and their misfits are counted
    assert (row["regime"], row["pairs"], row["wins"], row["losses"]) == ("equal calls", 2, 1, 3)
    assert (row["unplaced"], row["placements"]) == (2, 7)
    assert "2 more case(s) lost" in row["verdict"] and "(2 of 7 placements)" in row["verdict"]
    assert row["floor"] == pytest.approx(math.sqrt(0.5 * 0.8))  # over a and b only
    assert (row["family"], row["ratio"]) == ("all", pytest.approx(1.0))  # sqrt(0.25) * 2
    assert row["search_calls_per_case"] == 260
    assert row["calls_per_case"] == pytest.approx((2 * 1000 + 6 * 10) / 6)  # the errorless
    json.dumps(row)  # a result file holds it
    (row,) = versus_rows(learned, {"calls": search[:2]})  # the search placed neither c nor d
    assert (row["pairs"], row["losses"], row["unplaced"]) == (2, 1, 2)
    assert "more case(s) lost" not in row["verdict"]


def test_the_best_known_runtime_of_a_case_is_its_fastest_feasible_record():
    def found(case, runtime, feasible=True, error=None):
        return {"case": case, "runtime": runtime, "feasible": feasible, "error": error}

    records = [
        found("a", 2.0),
        found("a", 1.5),
        found("a", 0.1, feasible=False),  # overflows memory: no placement to keep
        found("b", 3.0),
        found("b", 0.2, error="ConfigError: 3 devices"),
    ]
    known = best_runtimes(records)
    assert known == {"a": 1.5, "b": 3.0}
    assert best_known([found("a", 2.0), found("b", 3.0)], known) == pytest.approx(math.sqrt(0.75))
    # a case nobody placed has no best known runtime: the row says nothing rather than 1
    assert math.isnan(best_known([found("c", 1.0)], known)) and math.isnan(best_known([], known))


def test_the_floor_is_the_lower_bound_over_the_search():
    def found(runtime, lower_bound, optimum_gap=None):
        return {"runtime": runtime, "lower_bound": lower_bound, "optimum_gap": optimum_gap}

    assert floor([found(2.0, 1.0)]) == pytest.approx(0.5)
    assert floor([found(2.0, 1.0), found(1.0, 0.5)]) == pytest.approx(0.5)
    # an optimum among contiguous splits bounds no other placement: only the bound counts
    assert floor([found(2.0, 1.0, optimum_gap=-0.2)]) == pytest.approx(0.5)
    assert math.isnan(floor([found(2.0, None)])) and math.isnan(floor([]))


def test_coverage_shows_where_each_placer_met_the_search():
    def row(placer, tier, family, ratio, regime="equal calls", **more):
        fields = {"ci_low": ratio - 0.01, "ci_high": ratio + 0.02, "pairs": 3, "unplaced": 0}
        named = {"placer": placer, "tier": tier, "family": family, "regime": regime}
        return named | {"ratio": ratio, "placements": 9} | fields | more

    nan = math.nan
    rows = [
        row("recipe:b", "fam", "fam/y", 1.2, unplaced=2),
        row("recipe:b", "fam", "fam/x", 1.1),
        row("recipe:b", "fam", "fam/q", 0.1),  # no test family of the suite: left out
        row("recipe:b", "fam", "fam/x", 0.5, regime="equal seconds"),
        row("recipe:a", "fam", "all", 0.98),
        row("recipe:a", "fam", "fam/x", 0.97),  # the tier's pooled row stands for it
        row("recipe:a", "dev", "all", 1.0),
        row("recipe:c", "dev", "all", 4.4, ci_low=nan, ci_high=nan, pairs=1, unplaced=6),
        row("recipe:c", "fam", "all", nan, ci_low=nan, ci_high=nan, pairs=0, unplaced=9),
        row("recipe:d", "gone", "all", 1.0),  # a tier the suite lacks: no row at all
    ]
    families = {"dev": ("dev/x",), "fam": ("fam/x", "fam/y", "fam/z")}
    assert coverage(rows, "equal calls", families) == [
        {"placer": "recipe:a", "dev": "1.000 [0.990, 1.020]", "fam": "0.980 [0.970, 1.000]"},
        {
            "placer": "recipe:b",
            "dev": NOT_RUN,
            "fam": "x 1.100; y 1.200, 2 of 9 unplaced (2 of 3 families)",
        },
        {
            "placer": "recipe:c",
            "dev": "4.400 (1 pair(s)), 6 of 9 unplaced",
            "fam": "no pair, 9 of 9 unplaced",
        },
    ]
    assert coverage(rows, "equal seconds", families) == [
        {"placer": "recipe:b", "dev": NOT_RUN, "fam": "x 0.500 (1 of 3 families)"}
    ]


def test_coverage_sections_head_each_regime_and_say_where_none_has_a_row():
    rows = [
        {"placer": "recipe:a", "tier": "fam", "family": "all", "regime": "equal calls"}
        | {"ratio": 0.98, "ci_low": 0.97, "ci_high": 1.0, "pairs": 3, "placements": 3}
    ]
    drawn = []

    def render(table):
        drawn.append(table)
        return f"<{len(table)} row(s)>"

    text = coverage_sections(rows, {"fam": ("fam/x",)}, render)
    assert text == f"### Equal calls\n\n<1 row(s)>\n\n### Equal seconds\n\n{NO_ROW}"
    assert drawn == [[{"placer": "recipe:a", "fam": "0.980 [0.970, 1.000]"}]]


script = module_fixture("bench_learned")


#: A recipe budget of one short rollout: the script's plumbing, not its learning.
ONE_ROLLOUT = [
    "total_steps=16",
    "n_envs=1",
    "eval_every=0",
    "eval_samples=0",
    "progress_bar=false",
    "checkpoint_every=0",
    "+agent.hyperparams.n_steps=16",
]


def test_the_script_matches_the_search_to_the_recipe_and_pairs_them(script, tmp_path):
    script.main(
        [
            "--recipes",
            "scratch",
            "--tiers",
            "tiny",
            "--family",
            "tiny/chain-n12",
            "--seeds",
            "0",
            "--learn-on",
            "case",
            "--classic",
            "--out",
            str(tmp_path),
            "--budget",
            *ONE_ROLLOUT,
        ]
    )
    rows = json.loads((tmp_path / "versus.json").read_text())["rows"]
    assert [(r["regime"], r["pairs"]) for r in rows] == [("equal calls", 2), ("equal seconds", 2)]
    calls = rows[0]
    best_of = 9  # the calls of the construction the search starts from, on these cases
    assert calls["search_calls_per_case"] <= math.ceil(calls["calls_per_case"]) + best_of
    assert 0 < calls["floor"] <= 1  # the lower bounds over the search's runtimes
    # the best runtime any record in the folder reached: the search's, or the recipe's
    assert calls["floor"] <= calls["best_known"] <= min(1.0, calls["ratio"])
    board = (tmp_path / "LEADERBOARD.md").read_text()
    assert "recipe:scratch[learn_on=case,total_steps=16" in board and "local_search" in board
    report = (tmp_path / "versus.md").read_text()
    assert "| tiny | tiny/chain-n12 | equal seconds | 2 |" in report
    # at a glance: one family of eight on the tiny tier, no other tier
    glance = report.split("## At a glance", 1)[1].split("## Every row", 1)[0]
    cells = f"chain-n12 {calls['ratio']:.3f} (1 of 8 families) |" + " not run |" * 4
    assert f"{cells}\n" in glance
    from placerl.bench.leaderboard import leaderboard

    assert len(leaderboard([tmp_path])) == 3  # versus.json beside the records is no record


def test_train_only_places_the_cases_and_a_later_run_reads_them_back(script, tmp_path):
    """Processes given other seeds share the trainings; the last run searches and pairs."""
    common = ["--recipes", "scratch", "--tiers", "tiny", "--family", "tiny/chain-n12"]
    common += ["--learn-on", "case", "--classic", "--out", str(tmp_path), "--budget", *ONE_ROLLOUT]
    script.main([*common, "--seeds", "1", "--train-only"])
    records = sorted(p.name for p in tmp_path.glob("recipe_*/tiny/*.json"))
    assert records == ["tiny__chain-n12-s8@seed1.json", "tiny__chain-n12-s9@seed1.json"]
    assert not (tmp_path / "versus.json").exists() and not (tmp_path / "search").exists()
    trained = {p: p.stat().st_mtime_ns for p in tmp_path.glob("recipe_*/tiny/training/*/*")}
    script.main([*common, "--seeds", "0", "1"])
    rows = json.loads((tmp_path / "versus.json").read_text())["rows"]
    assert [r["pairs"] for r in rows] == [2, 2] and (tmp_path / "search").is_dir()
    assert all(p.stat().st_mtime_ns == t for p, t in trained.items())  # read back


def test_each_family_meets_the_search_at_its_own_budget(script, tmp_path, monkeypatch):
    """A recipe trained per family on a tier of several: the tier's row, then one row per
    family whose search got that family's calls and seconds per case, in a folder the
    leaderboard does not read."""
    from placerl.bench.run import select_cases
    from placerl.bench.versus import FAMILY_SEARCHES

    asked = {}

    def run_cases(suite, tier, split, spec, where, family=None, progress=True, force=False):
        regime = "seconds" if "max_evaluations=1000000000" in spec else "calls"
        asked[(family, regime)] = (spec, where.relative_to(tmp_path))
        cases = ("chain-n12-s8", "chain-n12-s9", "chain-n24-s8", "chain-n24-s9")
        chosen = [c for c in cases if family is None or c.startswith(family[5:])]
        found = {"placer": spec, "runtime": 1.0, "feasible": True, "error": None}
        return [{**found, "case": f"tiny/{c}", "simulator_calls": 5, "wall_s": 0.1} for c in chosen]

    monkeypatch.setattr(script, "run_cases", run_cases)
    learned = [
        {**_record(f"tiny/{c}", 0.9, 0, c[:9]), "tier": "tiny"}
        for c in ("chain-n12-s8", "chain-n12-s9", "chain-n24-s8", "chain-n24-s9")
    ]
    learned[2]["training"] = learned[3]["training"] = {
        "id": "chain-n24",
        "simulator_calls": 100,
        "wall_s": 3.0,
    }
    _, cases = select_cases("placebench-v1", "tiny", "test")
    args = script.argparse.Namespace(
        suite="placebench-v1", family=None, out=str(tmp_path), classic=[]
    )
    rows = script.matched(args, learned, "recipe:x", cases, by_family=True)
    assert [(r["family"], r["regime"], r["pairs"]) for r in rows] == [
        ("all", "equal calls", 4),
        ("all", "equal seconds", 4),
        ("tiny/chain-n12", "equal calls", 2),
        ("tiny/chain-n12", "equal seconds", 2),
        ("tiny/chain-n24", "equal calls", 2),
        ("tiny/chain-n24", "equal seconds", 2),
    ]
    spec, where = asked[("tiny/chain-n12", "calls")]
    assert "max_evaluations=510&" in spec  # (1000 + 2 * 10) / 2
    assert where.parts[:2] == ("search", FAMILY_SEARCHES) and where.parts[-1] == "tiny"
    assert where.parts[2].endswith("calls_chain_n12")
    assert "max_evaluations=60&" in asked[("tiny/chain-n24", "calls")][0]  # (100 + 2 * 10) / 2
    assert "time_limit=15.5" in asked[("tiny/chain-n12", "seconds")][0]  # (30 + 2 * 0.5) / 2
    spec, where = asked[(None, "calls")]
    assert "max_evaluations=285&" in spec and FAMILY_SEARCHES not in where.parts
    assert all(r["ratio"] == pytest.approx(0.9) for r in rows)
    assert all(math.isnan(r["best_known"]) for r in rows)  # no record in the folder yet
    assert len(script.matched(args, learned, "recipe:x", cases)) == 2  # learned per case


def test_a_match_to_a_new_budget_replaces_the_earlier_ones_search(script, tmp_path):
    """A recipe placed again spent other calls and seconds: its searches run again at them
    (they used to stop the run, as records of another placer in the folder), and a match
    interrupted at the new budget resumes, its finished cases read back."""
    from placerl.bench.run import select_cases

    family = "tiny/chain-n12"
    suite, cases = select_cases("placebench-v1", "tiny", "test", family)
    learned = [_record(case.name, 1.0, 0, "training", calls=1, wall=0.01) for case in cases]

    def matched_after_training(calls):
        for record in learned:
            record["training"] |= {"simulator_calls": calls, "wall_s": 0.05}
        return script.searches(suite, tmp_path, learned, "recipe:x", cases, family)["calls"]

    first = matched_after_training(20)
    folder = tmp_path / "search" / script.folder_name("recipe:x-calls-chain-n12") / "tiny"
    paths = sorted(folder.glob("*.json"))
    assert len(paths) == len(cases) == 2
    # interrupted at the new budget: one case done (marked), the other still the old match's
    for record in learned:
        record["training"]["simulator_calls"] = 40
    new_spec = script.search_at_calls(script.budget_per_case(learned)["calls"])
    done = json.loads(paths[0].read_text()) | {"placer": new_spec, "marked": True}
    paths[0].write_text(json.dumps(done))
    again = matched_after_training(40)
    assert {r["placer"] for r in again} == {new_spec} != {r["placer"] for r in first}
    assert [r.get("marked") for r in again] == [True, None]  # read back, then run
    saved = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    assert [r["placer"] for r in saved] == [new_spec, new_spec]


def test_only_another_searchs_records_are_dropped(script, tmp_path):
    (tmp_path / "mine.json").write_text(json.dumps({"placer": "a"}))
    (tmp_path / "theirs.json").write_text(json.dumps({"placer": "b"}))
    (tmp_path / "nameless.json").write_text(json.dumps({"runtime": 1.0}))
    (tmp_path / "list.json").write_text("[1]")
    (tmp_path / "torn.json").write_text("{not json")
    assert script.drop_other_matches(tmp_path, "a") == 3
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["mine.json", "torn.json"]
    assert script.drop_other_matches(tmp_path / "none", "a") == 0


def test_a_search_at_inference_is_the_policy_placers_options(script):
    assert script.search_options("greedy") is None
    assert script.search_options("local") == {"search": "local"}
    assert script.search_options("sample?budget=200") == {"search": "sample", "budget": 200}


def test_a_later_run_keeps_the_rows_it_does_not_replace(tmp_path):
    from tests.bench_modules import benchmark_module

    path = tmp_path / "versus.json"
    old = [
        {"placer": "a", "tier": "t", "regime": "equal calls", "ratio": 1.0},
        {"placer": "b", "tier": "t", "regime": "equal calls", "ratio": 2.0},
    ]
    path.write_text(json.dumps({"rows": old}))
    new = [{"placer": "b", "tier": "t", "regime": "equal calls", "ratio": 3.0}]
    key = ("placer", "tier", "regime")
    with benchmark_module("_common") as common:
        merged = common.merged_rows(path, new, key)
        assert [row["ratio"] for row in merged] == [1.0, 3.0] and "run" not in merged[0]
        assert merged[1]["run"]["commit"] == common.provenance()["git_revision"]
        assert merged[1]["run"]["command"] and merged[1]["run"]["date"]
        kept = {**new[0], "run": {"commit": "abc", "date": "d", "command": "c"}}
        assert common.merged_rows(tmp_path / "none.json", [kept], key) == [kept]
        # a field added since: the earlier rows get its default, and the new row replaces
        later = [{**new[0], "family": "all", "ratio": 4.0}]
        wider = ("placer", "tier", "family", "regime")
        merged = common.merged_rows(path, later, wider, defaults={"family": "all"})
        assert [(row["placer"], row["family"], row["ratio"]) for row in merged] == [
            ("a", "all", 1.0),
            ("b", "all", 4.0),
        ]


def test_a_row_of_an_earlier_run_shows_the_fields_added_since_as_empty(script, tmp_path):
    from tests.bench_modules import benchmark_module

    path = tmp_path / "versus.json"
    old = {field: 1 for field in script.SHOWN if field not in script.EARLIER_ROWS}
    old |= {"placer": "recipe:x", "tier": "t", "regime": "equal calls", "verdict": "v"}
    old |= {"ci_low": 0.9, "ci_high": 1.1, "run": {"commit": "abc", "date": "d", "command": "c"}}
    path.write_text(json.dumps({"rows": [old]}))
    key = ("placer", "tier", "family", "regime")
    with benchmark_module("_common") as common:
        rows = common.merged_rows(path, [], key, defaults=script.EARLIER_ROWS)
    assert (rows[0]["unplaced"], rows[0]["placements"], rows[0]["family"]) == (None, None, "all")
    table = script.report(rows, "placebench-v1", "a run")
    assert "| recipe:x | t | all | equal calls |" in table
    assert "### Equal seconds\n\nNo row yet." in table


def test_a_shipped_policy_meets_the_search_at_its_training_counted_once(
    script, tmp_path, monkeypatch
):
    """``--pretrained``: the card's training (here made small) is every record's, counted
    once over the cases; a 4-device policy places the tiny tier's 3 devices."""
    from placerl.agents import pretrained

    card = pretrained.load_card("layered")
    card["training"] |= {"simulator_calls": 100, "wall_s": 0.2}
    monkeypatch.setattr(pretrained, "load_card", lambda name: card)
    argv = [
        "--recipes",
        "--pretrained",
        "layered",
        "--tiers",
        "tiny",
        "--family",
        "tiny/chain-n12",
        "--classic",
        "--out",
        str(tmp_path),
    ]
    script.main(argv)
    rows = json.loads((tmp_path / "versus.json").read_text())["rows"]
    assert [(r["placer"], r["regime"], r["pairs"]) for r in rows] == [
        ("policy?pretrained=layered", "equal calls", 2),
        ("policy?pretrained=layered", "equal seconds", 2),
    ]
    records = [json.loads(p.read_text()) for p in tmp_path.glob("policy_pretrained_layered/*/*")]
    assert len(records) == 2 and all(r["training"]["simulator_calls"] == 100 for r in records)
    placing = sum(r["simulator_calls"] for r in records)
    assert rows[0]["calls_per_case"] == pytest.approx((100 + placing) / 2)
    script.main(argv)  # a second run reads the records back: same budget, same searches
    again = [json.loads(p.read_text()) for p in tmp_path.glob("policy_pretrained_layered/*/*")]
    assert sorted(r["wall_s"] for r in again) == sorted(r["wall_s"] for r in records)


def test_a_pooled_table_names_each_rows_run():
    from tests.bench_modules import benchmark_module

    row = {"placer": "a", "ratio": 0.9, "ci_low": 0.8, "ci_high": 1.0, "pairs": 8, "floor": 0.5}
    with benchmark_module("_common") as common:
        table = common.paired_table(
            [row | {"run": {"commit": "0123456789abcdef"}}, row | {"floor": None}],
            ("placer", "ratio", "interval", "floor", "commit"),
        )
    assert table.splitlines()[2:] == [
        "| a | 0.900 | [0.800, 1.000] | 0.5 | `0123456789ab` |",
        "| a | 0.900 | [0.800, 1.000] |  | `not recorded` |",  # a field it did not record
    ]
