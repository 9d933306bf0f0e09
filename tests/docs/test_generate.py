"""The results pages are generated from the result files, provenance included."""

import json

import pytest


def test_every_page_is_generated_from_the_committed_results(generate, tmp_path):
    written = generate.generate_pages(tmp_path)
    assert [path.name for path in written] == [
        "leaderboard.md",
        "learned.md",
        "ablation.md",
        "performance.md",
    ]
    board = (tmp_path / "_generated" / "leaderboard.md").read_text()
    rows = json.loads((generate.PLACEBENCH / "LEADERBOARD.json").read_text())["rows"]
    assert all(f"## {tier}" in board for tier in {row["tier"] for row in rows})
    assert "- commits: `" in board and "- machines: `" in board
    for row in rows:
        if row["split"] == "test":
            assert f"| {row['placer'].replace('|', chr(92) + '|')} | {row['cases']} |" in board


def test_a_table_escapes_pipes_and_rounds_floats(generate):
    table = generate.markdown_table(
        [{"a": "x|y", "b": 0.123456, "c": None}], {"a": "A", "b": "B", "c": "C"}
    )
    assert table.splitlines() == ["| A | B | C |", "|---|---|---|", "| x\\|y | 0.1235 |  |"]


def test_provenance_lists_commits_dates_machines(generate):
    machine = {"cpu": "AMD EPYC", "cores": 2, "gpus": []}
    lines = generate.provenance_lines(
        [
            {
                "git_revision": "abcdef1234567890",
                "date": "2026-12-02T05:40:11+00:00",
                "machine": machine,
                "command": "bench.py --x",
            },
            {"date": "2026-12-01T00:00:00+00:00"},
        ]
    )
    assert lines.splitlines() == [
        "- commits: `abcdef123456`, `not recorded`",
        "- dates: `2026-12-01`, `2026-12-02`",
        "- machines: `AMD EPYC (2 cores, no GPU)`, `not recorded`",
        "- command: `bench.py --x`",
    ]


def test_a_missing_result_file_fails_naming_it(generate, tmp_path, monkeypatch):
    monkeypatch.setattr(generate, "RESULTS", tmp_path / "results")
    with pytest.raises(
        FileNotFoundError,
        match=r"the docs read .*results/ablation/"
        r"ablation.json, which is missing",
    ):
        generate.ablation_page(tmp_path)


def test_a_result_file_that_is_not_json_fails_naming_it(generate, tmp_path, monkeypatch):
    monkeypatch.setattr(generate, "ROOT", tmp_path)
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match=r"bad\.json does not read as JSON"):
        generate.read_json(tmp_path / "bad.json")


def test_the_readme_excerpt_is_what_the_leaderboard_gives(generate):
    """``python docs/generate.py --readme`` wrote it from the committed leaderboard."""
    start, end = generate.EXCERPT_MARKERS
    readme = (generate.ROOT / "README.md").read_text()
    excerpt = readme.split(start, 1)[1].split(end, 1)[0].strip()
    assert excerpt == generate.readme_excerpt().strip()
    assert "| tiny |" in excerpt and "`recipe:" in excerpt


def test_a_readme_without_the_markers_is_refused(generate, tmp_path):
    (tmp_path / "README.md").write_text("# no markers\n")
    with pytest.raises(ValueError, match="lacks the markers"):
        generate.write_readme_excerpt(tmp_path / "README.md")
