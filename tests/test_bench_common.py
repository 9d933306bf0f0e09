"""benchmarks/_common.py: every result file records what made it, and both layouts read."""

import json

import pytest

from tests.bench_modules import module_fixture

common = module_fixture("_common")

#: The fields placerl._provenance.provenance() gives every result.
PROVENANCE = ("python", "numpy", "git_revision", "command", "machine", "date")


def test_a_written_result_has_its_provenance_config_and_rows(common, tmp_path):
    rows = [{"nodes": 100, "steps/s": 2.5}]
    path = common.write_results(
        "speed", rows, tmp_path / "out", config={"quick": True, "out": tmp_path}
    )
    record = json.loads(path.read_text())
    assert set(record) == {"provenance", "config", "rows"}
    assert all(field in record["provenance"] for field in PROVENANCE)
    assert {"cpu", "cores"} <= set(record["provenance"]["machine"])
    assert record["config"] == {"quick": True, "out": str(tmp_path)}  # paths as text
    assert record["rows"] == rows
    assert common.read_rows(path) == rows


def test_the_markdown_beside_names_the_same_commit_date_and_machine(common, tmp_path):
    path = common.write_results(
        "speed", [{"a": 1}], tmp_path, config={}, markdown="Table.\n", extra={"points": [1, 2]}
    )
    record = json.loads(path.read_text())
    assert record["points"] == [1, 2]
    head, _, rest = (tmp_path / "speed.md").read_text().partition("\n\n")
    provenance = record["provenance"]
    commit = (provenance["git_revision"] or "unknown").removesuffix("+dirty")[:12]
    assert f"`{commit}`" in head and provenance["date"] in head
    assert provenance["machine"]["cpu"] in head and f"`{provenance['command']}`" in head
    assert rest == "Table.\n"


def test_a_title_stays_on_top_of_the_provenance_line(common):
    text = common.with_provenance("# Measured\n\ntable\n", None)
    assert text.startswith("# Measured\n\n_No provenance recorded")
    assert text.endswith("\n\ntable\n")


@pytest.mark.parametrize("dirty, words", [(False, ""), (True, " with uncommitted changes")])
def test_the_provenance_line_says_whether_the_checkout_had_changes(common, dirty, words):
    record = {
        "git_revision": "0123456789abcdef" + "+dirty" * dirty,
        "date": "2026-12-01",
        "command": "bench_sim.py --quick",
        "machine": {"cpu": "Some CPU", "cores": 2, "gpus": []},
    }
    assert common.provenance_line(record) == (
        f"_Commit `0123456789ab`{words}, 2026-12-01, on Some CPU (2 cores, no GPU): "
        "`bench_sim.py --quick`._"
    )


def test_an_archived_result_reads_as_rows_without_provenance(common, tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps([{"a": 1}, {"a": 2}]))
    assert common.read_results(path) == {
        "provenance": None,
        "config": None,
        "rows": [{"a": 1}, {"a": 2}],
    }


def test_the_load_note_gives_the_load_in_words_and_as_a_field(common):
    words, field = common.load_note()
    if not field:
        pytest.skip("no load average on this platform")
    assert words.startswith(" Load average when it started: ")
    assert set(field["load_average"]) == {"1min", "5min", "cores"}
