"""bench_hierarchical_scale.py: the hierarchical recipe trained per cluster, placing graphs
beyond its padding, its records read by the leaderboard (plumbing at a tiny size)."""

import json

from placerl.bench.case import Case
from placerl.bench.suite import Suite, load_suite
from tests.bench_modules import module_fixture

bench = module_fixture("bench_hierarchical_scale")

#: A family of 12-node graphs on two devices, and a "scale" case of 40 nodes on three.
TINY = Suite(
    "tinyscale",
    1,
    (
        Case(
            "fam/layered-n12-s0",
            "fam",
            "train",
            "synthetic:layered?n=12&seed=0",
            "placeto?n_devices=2",
        ),
        Case(
            "fam/layered-n12-s1",
            "fam",
            "validation",
            "synthetic:layered?n=12&seed=1",
            "placeto?n_devices=2",
        ),
        Case(
            "big/layered-n40-s0",
            "big",
            "test",
            "synthetic:layered?n=40&seed=0",
            "gpu8_nvlink?n_devices=3",
        ),
    ),
    {"big/layered-n40": ("fam/layered-n12",)},
)
#: The recipe at a test's budget: 64 steps, no clone of best_of, four groups.
OVERRIDES = [
    "total_steps=64",
    "n_envs=1",
    "eval_every=32",
    "eval_samples=0",
    "agent.warm_start=null",
    "env.groups=4",
    "+agent.hyperparams.n_steps=32",
    "+agent.hyperparams.batch_size=32",
    "agent.hyperparams.n_epochs=1",
    "threads=1",
    "progress_bar=false",
]


def test_the_scale_cases_train_on_their_family_moved_onto_their_cluster(bench):
    suite = load_suite("placebench-v1")
    cases = bench.scale_cases(suite, [10_000, 100_000])
    assert [c.name for c in cases] == ["scale/layered-n10000-s0", "scale/layered-n100000-s0"]
    train, validation = bench.training_cases(suite, cases[1])
    assert {c.cluster for c in (*train, *validation)} == {"gpu8_nvlink?n_devices=32"}
    assert {c.family for c in train} == {"families/layered-n80"}
    assert {c.split for c in train} == {"train"}
    assert {c.split for c in validation} == {"validation"}


def test_a_run_trains_per_cluster_places_beyond_its_padding_and_writes_records(bench, tmp_path):
    out, summary = tmp_path / "records", tmp_path / "summary"
    (case,) = TINY.select("big")
    rows = bench.run(TINY, [case], OVERRIDES, [0], out, summary, {"test": True})
    (row,) = rows
    assert (row["seed"], row["case"], row["nodes"], row["devices"]) == (
        0,
        "big/layered-n40-s0",
        40,
        3,
    )
    assert row["place_s"] > 0 and row["runtime_ms"] > 0 and row["vs_heft"] > 0
    assert row["train_steps"] == 64
    record = json.loads((out / "big__layered-n40-s0@seed0.json").read_text())
    assert (
        record["placer"] == "recipe:hierarchical[total_steps=64,n_envs=1,eval_every=32,"
        "eval_samples=0,agent.warm_start=null,env.groups=4,"
        "+agent.hyperparams.n_steps=32,+agent.hyperparams.batch_size=32,"
        "agent.hyperparams.n_epochs=1]"
    )
    training = record["training"]
    assert training["cluster"] == "gpu8_nvlink?n_devices=3"
    assert training["cases"] == ["fam/layered-n12-s0"]
    assert training["validation"] == ["fam/layered-n12-s1"]
    config = json.loads(
        (out / "training" / "big__layered-n40-d3-seed0" / "training.json").read_text()
    )["config"]
    assert config["env"]["max_nodes"] == 12  # the padding it trained with: 40 nodes placed
    saved = json.loads((summary / "hierarchical_scale.json").read_text())
    assert saved["rows"] == rows and saved["provenance"]["git_revision"]
    (board,) = saved["leaderboard"]
    assert board["placer"] == record["placer"] and board["cases"] == 1
    text = (summary / "hierarchical_scale.md").read_text()
    assert "| big/layered-n40-s0 |" in text and "_Commit `" in text
    # a second run reads the record and the training back
    before = (out / "big__layered-n40-s0@seed0.json").stat().st_mtime_ns
    assert (
        bench.run(TINY, [case], OVERRIDES, [0], out, None, {})[0]["runtime_ms"] == row["runtime_ms"]
    )
    assert (out / "big__layered-n40-s0@seed0.json").stat().st_mtime_ns == before


def test_a_read_back_keeps_heft_timed_in_the_run_that_placed_the_policy(bench, tmp_path):
    """The policy's seconds to place are read back with its record: HEFT's must come from
    the run that placed it too, row by row, and only from that record's own row."""
    out, summary = tmp_path / "records", tmp_path / "summary"
    (case,) = TINY.select("big")
    bench.run(TINY, [case], OVERRIDES, [0, 1], out, summary, {})
    path = summary / "hierarchical_scale.json"
    saved = json.loads(path.read_text())
    for row, seconds in zip(saved["rows"], (123.0, 456.0), strict=True):
        row["heft_place_s"] = seconds  # as if the placing run had timed that
    path.write_text(json.dumps(saved))
    first, second = bench.run(TINY, [case], OVERRIDES, [0, 1], out, summary, {})
    assert (first["heft_place_s"], second["heft_place_s"]) == (123.0, 456.0)
    assert first["heft_ms"] == saved["rows"][0]["heft_ms"]
    # seed 1 placed again: timed again beside it; seed 0 still read back, still kept
    (out / "big__layered-n40-s0@seed1.json").unlink()
    first, second = bench.run(TINY, [case], OVERRIDES, [0, 1], out, summary, {})
    assert first["heft_place_s"] == 123.0 and second["heft_place_s"] < 123.0
    # a row that is not the record's (other seconds to place) lends it nothing
    saved = json.loads(path.read_text())
    saved["rows"][0] |= {"heft_place_s": 789.0, "place_s": saved["rows"][0]["place_s"] + 1}
    path.write_text(json.dumps(saved))
    assert bench.run(TINY, [case], OVERRIDES, [0], out, summary, {})[0]["heft_place_s"] < 123.0


def test_a_summary_that_does_not_read_is_no_earlier_run(bench, tmp_path):
    summary = tmp_path / "summary"
    summary.mkdir()
    for text in ("{not json", json.dumps({"rows": [{"case": "x"}]}), json.dumps([1])):
        (summary / "hierarchical_scale.json").write_text(text)
        assert bench.earlier_rows(summary) == {}
    assert bench.earlier_rows(None) == {}


def test_the_summary_board_holds_every_classic_row_of_the_scale_tier(bench):
    folders = {path.parent.name for path in bench.CLASSIC}
    assert folders == {"single_device", "random", "heft", "m_etf", "m_sct"}
    assert {path.name for path in bench.CLASSIC} == {"scale"}
