"""The results pages are generated from the result files, provenance included."""

import json

import pytest


def test_every_page_is_generated_from_the_committed_results(generate, tmp_path):
    written = generate.generate_pages(tmp_path)
    assert [path.name for path in written] == [
        "leaderboard.md",
        "learned.md",
        "scale.md",
        "ablation.md",
        "performance.md",
        "order_study.md",
        "datasets.md",
        "pretrained.md",
    ]
    board = (tmp_path / "_generated" / "leaderboard.md").read_text()
    rows = json.loads((generate.PLACEBENCH / "LEADERBOARD.json").read_text())["rows"]
    assert all(f"## {tier}" in board for tier in {row["tier"] for row in rows})
    assert "- commits: `" in board and "- machines: `" in board
    for row in rows:
        if row["split"] == "test":
            assert f"| {row['placer'].replace('|', chr(92) + '|')} | {row['cases']} |" in board


def test_the_pretrained_page_shows_each_card_and_each_size(generate, tmp_path):
    from placerl.agents.pretrained import load_card, shipped

    page = generate.pretrained_page(tmp_path)
    for name in shipped():
        card = load_card(name)
        ratio = f"{card['leaderboard']['vs_constructive']:.3f} ["
        assert f"| {name} | {card['family']} | `recipe:" in page and ratio in page
    sizes = json.loads((generate.RESULTS / "pretrained_sizes.json").read_text())
    for row in sizes["rows"]:
        assert f"| {row['policy']} | {row['trained_nodes']} | {row['nodes']} |" in page
    assert "- commits: `" in page


def test_the_scale_page_shows_every_placement_and_the_tiers_board(generate, tmp_path):
    page = generate.scale_page(tmp_path)
    result = json.loads((generate.RESULTS / "hierarchical_scale.json").read_text())
    for row in result["rows"]:
        assert f"| {row['seed']} | {row['case']} | {row['nodes']} | {row['devices']} |" in page
    for row in result["leaderboard"]:
        assert f"| {row['placer']} | {row['cases']} | {row['score']} |" in page
    fits = sum(row["feasible"] for row in result["rows"])
    assert f"{fits} of {len(result['rows'])} placements fit" in page
    # the summary's run and the run that placed the records it read back
    placing = generate.record_provenances(generate.PLACEBENCH / "recipe_hierarchical")
    commands = {result["provenance"]["command"], *(p["command"] for p in placing)}
    assert all(f"- command: `{command}`" in page for command in commands)


def test_the_learned_page_shows_each_placers_tiers_at_a_glance(generate, tmp_path):
    page = generate.learned_page(tmp_path)
    glance = page.split("## At a glance", 1)[1].split("## Provenance", 1)[0]
    rows = json.loads((generate.PLACEBENCH / "learned" / "versus.json").read_text())["rows"]
    tiers = ("tiny", "families", "models", "devices", "scale")
    shorts = [generate.short_spec(p) for p in {r["placer"] for r in rows}]
    named = {f"`{generate._distinct_short(r['placer'], shorts)}`": r["placer"] for r in rows}
    assert len(named) == len(shorts)  # no two placers read the same
    assert f"| placer | {' | '.join(tiers)} |" in glance
    for regime, table in zip(
        ("equal calls", "equal seconds"), glance.split("### Equal seconds"), strict=True
    ):
        ran = {(r["placer"], r["tier"]) for r in rows if r["regime"] == regime}
        lines = [line for line in table.splitlines() if line.startswith("| `")]
        assert len(lines) == len({placer for placer, _ in ran})
        for line in lines:  # 'not run' exactly where the placer has no row on the tier
            cells = line.strip("| ").split(" | ")
            placer = named[cells[0]]
            assert [c == "not run" for c in cells[1:]] == [(placer, t) not in ran for t in tiers]
    pooled = next(r for r in rows if r["family"] == "all" and r["regime"] == "equal calls")
    assert f"{pooled['ratio']:.3f} [{pooled['ci_low']:.3f}, {pooled['ci_high']:.3f}]" in glance


def test_a_shortened_spec_stays_whole_where_another_reads_the_same(generate):
    long = "recipe:x[" + "a" * 70 + "]"
    shorts = [generate.short_spec(long), generate.short_spec("recipe:x[" + "b" * 70 + "]")]
    assert generate._distinct_short(long, shorts) == long
    assert generate._distinct_short(long, shorts[:1]) == "recipe:x[…]"


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
            {"git_revision": "fedcba9876543210+dirty"},
        ]
    )
    assert lines.splitlines() == [
        "- commits: `abcdef123456`, `fedcba987654+dirty`, `not recorded`",
        "- dates: `2026-12-01`, `2026-12-02`, `not recorded`",
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


def test_the_readme_excerpt_leaves_out_rows_over_part_of_a_tier(generate, monkeypatch):
    """A search matched to one family's budget scores that family only: never a tier's best."""

    def row(placer, cases, seeds, score):
        named = {"tier": "t", "split": "test", "placer": placer}
        return named | {"cases": cases, "seeds": seeds, "score_value": score}

    rows = [
        row("heft", 4, 1, 1.0),
        row("local_search?one_family=1", 2, 1, 1.5),
        row("recipe:a", 12, 3, 1.1),
        row("recipe:b", 6, 3, 1.4),
    ]
    monkeypatch.setattr(generate, "read_json", lambda path: {"rows": rows})
    excerpt = generate.readme_excerpt()
    assert "`heft`" in excerpt and "`recipe:a`" in excerpt
    assert "one_family" not in excerpt and "recipe:b" not in excerpt


def test_a_readme_without_the_markers_is_refused(generate, tmp_path):
    (tmp_path / "README.md").write_text("# no markers\n")
    with pytest.raises(ValueError, match="lacks the markers"):
        generate.write_readme_excerpt(tmp_path / "README.md")


def _study_arm(folder, commit):
    """A study arm's report files: its runs' provenance and one paired row."""
    folder.mkdir(parents=True)
    runs = [
        {
            "commit": commit,
            "machine": "Some CPU (2 cores, no GPU)",
            "command": "placerl-train -m order=topo,bfs",
            "runs": 4,
            "first_date": "2026-12-01T10:00:00+00:00",
            "last_date": "2026-12-02T11:00:00+00:00",
        }
    ]
    (folder / "provenance.json").write_text(
        json.dumps({"provenance": {}, "config": {}, "runs": runs})
    )
    (folder / "orders.csv").write_text(
        "group,agent,order,pairs,ratio,ratio_ci95_low,ratio_ci95_high,wins,losses,p_value,verdict\n"
        "cifar10-n100,maskable_ppo_gnn,bfs,10,1.5,1.2,1.8,0,10,0.002,bfs is slower\n"
        "cifar10-n100,maskable_ppo_gnn,dfs,10,1.0,0.9,1.1,5,5,0.9,no difference between\n"
    )


def test_the_order_study_page_shows_the_arms_that_record_provenance(
    generate, tmp_path, monkeypatch
):
    monkeypatch.setattr(generate, "STUDY", tmp_path / "study")
    _study_arm(tmp_path / "study" / "results" / "refine", "abc1234567890")
    page = generate.order_study_page(tmp_path / "_generated")
    assert "## The refine arm" in page
    assert "- commits: `abc123456789`" in page
    assert "- dates: `2026-12-01`, `2026-12-02`" in page
    assert "- runs: 4, the first finished at `2026-12-01T10:00:00+00:00`" in page
    assert "| cifar10-n100 | maskable_ppo_gnn | bfs | 10 | 1.5 | [1.200, 1.800] |" in page
    assert "- cifar10-n100, maskable_ppo_gnn: bfs is slower." in page
    assert "no difference between" not in page
    assert "## The construct arm" not in page
    assert "predate provenance" in page and "--arms construct,learned" in page


def test_the_order_study_page_includes_the_analyses_once_every_arm_is_there(
    generate, tmp_path, monkeypatch
):
    monkeypatch.setattr(generate, "STUDY", tmp_path / "study")
    results = tmp_path / "study" / "results"
    for arm in generate.STUDY_ARMS:
        _study_arm(results / arm, "abc1234567890")
    (results / "analysis.md").write_text("# The analyses\n\n## A table\n\n| a |\n|---|\n| 1 |\n")
    page = generate.order_study_page(tmp_path / "_generated")
    assert "\n## The analyses\n" in page and "\n### A table\n" in page
    assert "Not shown" not in page


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        ("heft", "heft"),
        (
            "recipe:improve[total_steps=0,env.init='best_of?placers=heft,m_etf,m_sct',"
            "env.reference='best_of?placers=heft']?search=local",
            "recipe:improve[…]?search=local",
        ),
        (
            "recipe:scratch[learn_on=case,total_steps=20000]",
            "recipe:scratch[learn_on=case,total_steps=20000]",
        ),
        (
            "local_search?restarts=1000000&max_evaluations=100000&time_limit=8.8",
            "local_search?restarts=∞&max_evaluations=100000&time_limit=8.8",
        ),
    ],
)
def test_the_readme_excerpt_shortens_overrides_and_unlimited_limits(generate, spec, shown):
    assert generate.short_spec(spec) == shown
