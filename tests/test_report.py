"""placerl-report: aggregation over seeds, paired order comparison, files and plots."""

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pandas", reason="the experiments extra is not installed")
pytest.importorskip("tabulate", reason="the experiments extra is not installed")

from placerl.errors import ConfigError
from placerl.report import (
    compare_orders,
    error_summary,
    graph_group,
    load_runs,
    main,
    not_compared,
    open_jobs,
    select_metric,
    summarize,
    unfinished_jobs,
    write_report,
)
from placerl.results import RESULT_SCHEMA

TOPO = [2.0, 2.2, 1.8, 2.1, 1.9, 2.0]
BFS = [1.0, 1.2, 0.8, 1.1, 0.9, 1.0]  # half of topo's, seed by seed


def _train_config(order, seed, **settings):
    """A training result's nested config (``RunConfig.to_dict``'s shape)."""
    return {
        "order": {"name": order, "seed": 0},
        "seed": seed,
        "agent": {"algo": "maskable_ppo", "extractor": "gnn"},
        "cluster": {"spec": "placeto"},
        "env": {"objective": "step_time"},
        **settings,
    }


def _write(folder, order, seed, runtime, placer=None, graph="g", **settings):
    evaluation = {"placer": placer, "cluster": {"spec": "placeto"}, "objective": "step_time"}
    config = evaluation if placer else _train_config(order, seed, **settings)
    result = {
        "kind": "eval" if placer else "train",
        "schema": RESULT_SCHEMA,
        "config": config,
        "steps": 0 if placer else 100,
        "timings": {"train": 1.0},
        "curve": []
        if placer
        else [{"step": 50, "runtimes": [2 * runtime]}, {"step": 100, "runtimes": [runtime]}],
        "graphs": [
            {
                "graph": graph,
                "final_runtime": runtime,
                "best_runtime": runtime,
                "baselines": {"heft": 1.5, "single_device": 3.0},
            }
        ],
    }
    run = folder / f"{graph}-{order}-{seed}-{placer}"
    run.mkdir(parents=True)
    (run / "result.json").write_text(json.dumps(result))


@pytest.fixture
def sweep(tmp_path):
    for seed, (t, b) in enumerate(zip(TOPO, BFS, strict=True)):
        _write(tmp_path / "sweep", "topo", seed, t)
        _write(tmp_path / "sweep", "bfs", seed, b)
    _write(tmp_path / "evals", "-", 0, 1.5, placer="heft")
    return tmp_path


def test_summary_has_means_and_confidence_intervals(sweep):
    runs = load_runs([sweep / "sweep", sweep / "evals"])
    assert len(runs) == 13
    summary = summarize(runs).set_index("order")
    assert summary.loc["topo", "seeds"] == 6 and summary.loc["topo", "jobs"] == 6
    mean = 1e3 * np.mean(TOPO)
    assert summary.loc["topo", "runtime_ms"] == pytest.approx(mean)
    half = 2.5706 * np.std(1e3 * np.array(TOPO), ddof=1) / np.sqrt(6)  # t(0.975, 5)
    assert summary.loc["topo", "runtime_ci95_low"] == pytest.approx(mean - half, rel=1e-4)
    assert summary.loc["topo", "runtime_ci95_high"] == pytest.approx(mean + half, rel=1e-4)
    assert summary.loc["topo", "steps"] == 100
    assert summary.loc["bfs", "speedup_vs_best"] == pytest.approx(np.mean([1.5 / b for b in BFS]))
    assert summary.loc["none", "agent"] == "heft"  # a placer follows no order


def test_multi_graph_runs_give_one_curve_per_graph_and_no_interval_for_one_seed(tmp_path):
    config = _train_config("bfs", 0, agent={"algo": "a2c", "extractor": "mlp"})
    result = {
        "kind": "train",
        "schema": RESULT_SCHEMA,
        "config": config,
        "steps": 10,
        "timings": {"train": 1.0},
        "curve": [{"step": 10, "runtimes": [1.0, 3.0]}],
        "graphs": [
            {"graph": name, "final_runtime": r, "best_runtime": r, "baselines": {"heft": 2.0}}
            for name, r in (("a", 1.0), ("b", 3.0))
        ],
    }
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "result.json").write_text(json.dumps(result))
    runs = load_runs([tmp_path]).set_index("graph")
    assert runs.loc["a", "curve"] == [(10, 1000.0)] and runs.loc["b", "curve"] == [(10, 3000.0)]
    summary = summarize(load_runs([tmp_path]))
    assert summary[["runtime_ci95_low", "runtime_ci95_high"]].isna().all().all()


def test_runs_differing_in_more_than_the_seed_are_not_pooled(sweep):
    _write(sweep / "other", "topo", 0, 5.0)
    path = next((sweep / "other").rglob("result.json"))
    result = json.loads(path.read_text())
    result["config"]["total_steps"] = 999  # another budget: another variant
    path.write_text(json.dumps(result))
    summary = summarize(load_runs([sweep]))
    topo = summary[summary["order"] == "topo"]
    assert sorted(topo["seeds"]) == [1, 6]


def test_orders_are_compared_pairwise(sweep):
    orders = compare_orders(load_runs([sweep]), reference="topo")
    (row,) = orders.to_dict("records")
    assert row["order"] == "bfs" and row["pairs"] == 6 and row["wins"] == 6
    assert row["group"] == "g" and row["losses"] == row["ties"] == 0
    assert row["ratio"] == pytest.approx(np.exp(np.mean(np.log(np.array(BFS) / TOPO))))
    assert row["p_value"] == pytest.approx(0.03125)  # exact two-sided Wilcoxon, 6 of 6 wins
    assert row["ratio_ci95_low"] <= row["ratio"] <= row["ratio_ci95_high"] < 1
    assert row["verdict"].startswith("bfs is 50.3% faster than topo, 95% CI [")
    assert row["verdict"].endswith("faster in 6 of 6 pairs (Wilcoxon p = 0.031)")


def test_two_seeds_cannot_decide_and_the_report_says_so(tmp_path):
    for seed in (0, 1):
        _write(tmp_path, "topo", seed, TOPO[seed])
        _write(tmp_path, "bfs", seed, BFS[seed])
    (row,) = compare_orders(load_runs([tmp_path])).to_dict("records")
    assert np.isnan(row["p_value"])
    assert row["p_value_note"] == "2 pairs: the signed-rank test needs 6 to reach p < 0.05"
    assert row["verdict"] == (
        "bfs looks 47.8% faster than topo (95% CI [0.500, 0.545]), but 2 "
        "pairs are too few to confirm it (the signed-rank test needs 6)"
    )


def test_a_family_s_graphs_are_paired_within_their_group(tmp_path):
    for graph in ("cifar10-s1", "cifar10-s2", "ptb-s1"):
        for seed in range(3):
            _write(tmp_path, "topo", seed, 2.0, graph=graph)
            _write(tmp_path, "bfs", seed, 1.0 if graph != "ptb-s1" else 2.0, graph=graph)
    orders = compare_orders(load_runs([tmp_path])).set_index("group")
    assert orders.loc["cifar10", "pairs"] == 6 and orders.loc["cifar10", "wins"] == 6
    assert orders.loc["ptb", "pairs"] == 3 and orders.loc["ptb", "ties"] == 3
    assert orders.loc["ptb", "p_value_note"] == "every pair ties"
    assert "the order does not matter here" in orders.loc["ptb", "verdict"]


def test_orders_run_with_different_budgets_are_refused_and_named(tmp_path):
    for seed in range(6):
        _write(tmp_path, "topo", seed, TOPO[seed])
        _write(tmp_path, "bfs", seed, BFS[seed], total_steps=5000)
    runs = load_runs([tmp_path])
    assert compare_orders(runs).empty
    (line,) = not_compared(runs)
    assert "bfs with total_steps=5000; topo with total_steps=None" in line
    assert "they differ in total_steps" in line
    text = write_report([tmp_path], tmp_path / "report").read_text()
    assert "## Not compared: configs differ in more than the seed" in text
    assert "(no pairs: no other order ran on the same graph, agent, seed and settings" in text


TRACEBACK = """Traceback (most recent call last):
  File "placerl/apps.py", line 93, in _to_run
    check_known_keys(OmegaConf.to_container(cfg, resolve=False), schema)
placerl.errors.ConfigError: unknown option 'total_step'; did you mean total_steps?
"""


def _job(sweep, name, error=None, steps=None, hydra=True):
    job = sweep / "sweep" / name
    job.mkdir(parents=True)
    if hydra:
        (job / ".hydra").mkdir()
    if error is not None:
        (job / "error.txt").write_text(error)
    if steps is not None:
        (job / "checkpoint").mkdir()
        (job / "checkpoint" / "state.json").write_text(
            json.dumps({"steps": steps, "config": {"total_steps": 20_000}})
        )
    return job


def test_failed_jobs_are_listed_with_their_error_apart_from_unfinished_ones(sweep):
    failed = _job(sweep, "7", error=TRACEBACK)
    resumable = _job(sweep, "8", steps=5_000)
    silent = _job(sweep, "9")
    failed_late = _job(sweep, "10", error="Traceback...\nValueError: cycle\n", steps=5_000)
    plain = _job(sweep, "11", steps=10_000, hydra=False)  # train(config) with an out_dir
    error = "placerl.errors.ConfigError: unknown option 'total_step'; did you mean total_steps?"
    assert [(j.folder, j.status) for j in open_jobs([sweep])] == [
        (failed_late, "failed"),
        (plain, "unfinished"),
        (failed, "failed"),
        (resumable, "unfinished"),
        (silent, "no result"),
    ]
    lines = unfinished_jobs([sweep])
    assert lines[2] == f"{failed}: failed: {error} (traceback in {failed / 'error.txt'})"
    assert lines[0].startswith(f"{failed_late}: failed: ValueError: cycle (traceback in ")
    assert lines[3] == (
        f"{resumable}: unfinished: checkpoint at step 5,000 of 20,000; "
        "re-running the same command resumes it"
    )
    assert lines[4].startswith(f"{silent}: no result: no result.json, checkpoint or error.txt")
    text = write_report([sweep], sweep / "report").read_text()
    failed_part = text.split("## Failed jobs")[1].split("## Unfinished jobs")[0]
    unfinished_part = text.split("## Unfinished jobs")[1]
    assert error in failed_part and "ValueError: cycle" in failed_part
    assert str(resumable) not in failed_part and str(failed) not in unfinished_part
    assert "checkpoint at step 5,000 of 20,000" in unfinished_part
    assert "resumes it" not in failed_part


def test_finished_jobs_and_sweep_folders_are_not_listed(sweep):
    done = _job(sweep, "7", steps=20_000)
    (done / "result.json").write_text("{}")
    (sweep / "sweep" / ".hydra").mkdir()  # a folder of finished jobs
    assert open_jobs([sweep]) == []


@pytest.mark.parametrize(
    ("text", "summary"),
    [
        (
            TRACEBACK,
            "placerl.errors.ConfigError: unknown option 'total_step'; did you mean total_steps?",
        ),
        (
            'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n    f()\n'
            "    ^^^\nValueError: two\nlines\n\n",
            "ValueError: two lines",
        ),
        ("killed by the scheduler\n", "killed by the scheduler"),
        ("Traceback:\n    indented to the end\n", "indented to the end"),
        ("  \n", "(empty error.txt)"),
    ],
)
def test_error_summary_is_the_exception_the_traceback_ends_with(text, summary):
    assert error_summary(text) == summary


def test_an_unreadable_checkpoint_state_is_said(sweep):
    job = _job(sweep, "7", steps=1)
    (job / "checkpoint" / "state.json").write_text("{not json")
    (line,) = unfinished_jobs([sweep])
    assert line == (
        f"{job}: unfinished: a checkpoint ({job / 'checkpoint' / 'state.json'} is "
        "unreadable); re-running the same command resumes it"
    )


def test_report_writes_tables_and_plots(sweep, capsys):
    assert main([str(sweep), "--out", str(sweep / "report")]) == 0
    files = (
        "report.md",
        "runs.csv",
        "summary.csv",
        "orders.csv",
        "runtime_per_order.png",
        "speedup_vs_best.png",
        "learning_curves.png",
        "order_ratios.png",
    )
    for name in files:
        assert (sweep / "report" / name).is_file(), name
    text = (sweep / "report" / "report.md").read_text()
    assert "## Orders against topo (paired)" in text and "| bfs" in text
    assert "- **g (maskable_ppo_gnn, placeto, step_time)**: bfs is 50.3% faster" in text
    assert "![order_ratios](order_ratios.png)" in text and "bootstrap 95% interval" in text
    assert "Report, CSV tables and plots in" in capsys.readouterr().out


def test_the_report_records_where_its_runs_came_from(sweep):
    made = {
        "git_revision": "abc123",
        "date": "2026-12-01T10:00:00+00:00",
        "command": "placerl-train -m seed=0,1",
        "machine": {"cpu": "Some CPU", "cores": 2, "gpus": []},
    }
    for path in sorted((sweep / "sweep").rglob("result.json"))[:3]:
        result = json.loads(path.read_text())
        path.write_text(json.dumps(result | {"provenance": made}))
    write_report([sweep / "sweep"], sweep / "report")
    record = json.loads((sweep / "report" / "provenance.json").read_text())
    assert {"git_revision", "command", "machine", "date"} <= set(record["provenance"])
    assert record["config"] == {
        "folders": [str(sweep / "sweep")],
        "metric": "final",
        "reference": "topo",
    }
    recorded, unrecorded = sorted(record["runs"], key=lambda entry: entry["commit"])
    assert recorded == {
        "commit": "abc123",
        "machine": "Some CPU (2 cores, no GPU)",
        "command": "placerl-train -m seed=0,1",
        "runs": 3,
        "first_date": "2026-12-01T10:00:00+00:00",
        "last_date": "2026-12-01T10:00:00+00:00",
    }
    assert unrecorded["commit"] == "not recorded" and unrecorded["runs"] == 9
    text = (sweep / "report" / "report.md").read_text()
    assert "## Provenance" in text
    assert "- 3 run(s) at commit `abc123` on Some CPU (2 cores, no GPU)" in text
    runs = (sweep / "report" / "runs.csv").read_text().splitlines()
    assert "commit" in runs[0].split(",") and "command" not in runs[0].split(",")


def test_missing_or_empty_folders_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no such folder: .*nowhere"):
        write_report([tmp_path / "nowhere"], tmp_path / "out")
    with pytest.raises(FileNotFoundError, match=r"no readable result\.json under"):
        write_report([tmp_path], tmp_path / "out")
    with pytest.raises(SystemExit):
        main([str(tmp_path / "nowhere")])


def test_unreadable_results_are_skipped_with_a_warning_and_listed(sweep):
    truncated = sweep / "sweep" / "cut" / "result.json"
    truncated.parent.mkdir()
    truncated.write_text('{"config": {"order": "topo"')
    edited = sweep / "sweep" / "edited" / "result.json"
    edited.parent.mkdir()
    edited.write_text('{"config": {"order": "topo"}}')
    with pytest.warns(UserWarning, match=r"skipped .*cut.result\.json: not a readable result"):
        write_report([sweep], sweep / "report")
    text = (sweep / "report" / "report.md").read_text()
    assert "## Skipped result files" in text
    assert "cut/result.json (JSONDecodeError" in text
    assert "edited/result.json (ConfigError" in text
    assert "schema 1; this placerl reads schema 2" in text


def test_a_reference_order_no_run_used_is_named(sweep, capsys):
    with pytest.raises(
        ConfigError, match="reference order 'bfz' is none of the runs' orders: bfs, topo"
    ):
        write_report([sweep], sweep / "report", reference_order="bfz")
    with pytest.raises(SystemExit):
        main([str(sweep), "--out", str(sweep / "report"), "--reference-order", "bfz"])
    assert "none of the runs' orders" in capsys.readouterr().err


def test_an_out_that_is_a_file_is_refused(sweep):
    target = sweep / "report.txt"
    target.write_text("")
    with pytest.raises(ConfigError, match=r"out_dir '.*report.txt' is a file; give a folder"):
        write_report([sweep], target)


def test_a_report_without_the_default_reference_order_says_so(sweep):
    for path in sweep.rglob("result.json"):
        if json.loads(path.read_text())["config"].get("order") != {"name": "bfs", "seed": 0}:
            path.unlink()
    text = write_report([sweep], sweep / "report").read_text()
    assert (
        "(no pairs: no run used topo; the runs' orders: bfs; pick one with --reference-order)"
    ) in text


@pytest.mark.parametrize(
    ("name", "group"),
    [
        ("cifar10-s3", "cifar10"),
        ("layered-n80-s12", "layered-n80"),
        ("inception_v3", "inception_v3"),
        ("bert-s1x", "bert-s1x"),
    ],
)
def test_graph_groups_drop_the_seed_suffix(name, group):
    assert graph_group(name) == group


def _write_learning_run(folder, order, seed, final, best, curve):
    result = {
        "kind": "train",
        "schema": RESULT_SCHEMA,
        "config": _train_config(order, seed),
        "steps": 300,
        "timings": {"train": 1.0},
        "curve": [{"step": s, "runtimes": [r], "best": [b]} for s, r, b in curve],
        "graphs": [
            {"graph": "g", "final_runtime": final, "best_runtime": best, "baselines": {"heft": 1.5}}
        ],
    }
    run = folder / f"{order}-{seed}"
    run.mkdir(parents=True)
    (run / "result.json").write_text(json.dumps(result))


def test_the_best_metric_reports_the_best_placement_found_and_how_fast_it_came(tmp_path):
    curve = [(0, 4.0, 4.0), (100, 3.0, 2.1), (200, 2.5, 2.0), (300, 2.5, 2.0)]
    _write_learning_run(tmp_path, "topo", 0, final=2.5, best=2.0, curve=curve)
    runs = load_runs([tmp_path])
    best = summarize(select_metric(runs, "best")).iloc[0]
    final = summarize(select_metric(runs, "final")).iloc[0]
    assert best["runtime_ms"] == pytest.approx(2000.0) and final["runtime_ms"] == 2500.0
    assert best["speedup_vs_best"] == pytest.approx(0.75)
    assert best["steps_to_5pct"] == 100  # 2.1 is within 5% of 2.0
    assert final["steps_to_5pct"] == 200
    text = write_report([tmp_path], tmp_path / "report", metric="best").read_text()
    assert "Runtime: the best placement each run found while training (`--metric best`)" in text


def test_the_best_metric_reads_the_per_rollout_best_curve_when_the_run_has_one(tmp_path):
    _write_learning_run(tmp_path, "topo", 0, final=2.5, best=2.0, curve=[(0, 4.0, 4.0)])
    result_file = tmp_path / "topo-0" / "result.json"
    result = json.loads(result_file.read_text())
    result["best_curve"] = [{"step": 64, "best": [3.0]}, {"step": 128, "best": [2.05]}]
    result_file.write_text(json.dumps(result))
    run = select_metric(load_runs([tmp_path]), "best").iloc[0]
    assert run["curve"] == [(64, 3000.0), (128, 2050.0)] and run["steps_to_5pct"] == 128
    assert select_metric(load_runs([tmp_path]), "final").iloc[0]["curve"] == [(0, 4000.0)]


def test_an_unknown_metric_is_named(tmp_path, capsys):
    _write_learning_run(tmp_path, "topo", 0, final=2.5, best=2.0, curve=[(0, 2.5, 2.0)])
    with pytest.raises(ConfigError, match="unknown metric 'worst'; known: final, best"):
        write_report([tmp_path], tmp_path / "report", metric="worst")
    with pytest.raises(SystemExit):
        main([str(tmp_path), "--metric", "worst"])
    assert "invalid choice: 'worst'" in capsys.readouterr().err


def test_the_paired_table_gives_each_order_s_learning_speed(sweep):
    (row,) = compare_orders(select_metric(load_runs([sweep]), "final")).to_dict("records")
    assert row["steps_to_5pct"] == 100 and row["reference_steps_to_5pct"] == 100
    (raw,) = compare_orders(load_runs([sweep])).to_dict("records")
    assert np.isnan(raw["steps_to_5pct"])


def test_error_bars_stop_at_zero_and_are_the_tables_intervals():
    import pandas as pd

    from placerl.comparison import t_interval
    from placerl.report_figures import error_bars

    runs = pd.DataFrame(
        {
            "group": ["g"] * 5,
            "series": ["topo", "topo", "bfs", "bfs", "dfs"],
            "runtime_ms": [0.7, 4.0, 2.0, 2.2, 3.0],
        }
    )
    means, errors = error_bars(runs, "runtime_ms")
    assert errors.shape == (3, 2, 1)  # series, below and above, groups
    column = list(means.columns).index("topo")
    below, above = errors[column, :, 0]
    assert below == pytest.approx(2.35)  # down to 0, not to the plain interval's -18.6
    assert above == pytest.approx(t_interval([0.7, 4.0])[1] - 2.35)
    bfs = list(means.columns).index("bfs")
    low, high = t_interval([2.0, 2.2])
    assert errors[bfs, :, 0] == pytest.approx([2.1 - max(low, 0), high - 2.1])
    assert list(errors[list(means.columns).index("dfs"), :, 0]) == [0, 0]  # one value


def test_runs_ending_on_a_placement_that_does_not_fit_are_counted(tmp_path):
    from placerl.apps import sweep_table

    for seed in range(3):
        _write(tmp_path, "topo", seed, 1.0 + seed)
    path = sorted(tmp_path.rglob("result.json"))[2]
    result = json.loads(path.read_text())
    result["graphs"][0]["final_infeasible"] = "memory"
    path.write_text(json.dumps(result))
    summary = summarize(load_runs([tmp_path]))
    assert summary.loc[0, "infeasible"] == 1 and summary.loc[0, "seeds"] == 3
    assert "infeasible" in sweep_table(summary).columns
    assert "infeasible" not in sweep_table(summary.assign(infeasible=0)).columns


def test_the_speedup_chart_draws_the_best_baseline_at_1(sweep, monkeypatch):
    """Bars above the dashed line at 1 beat the best baseline placer."""
    import matplotlib.figure

    saved, save = {}, matplotlib.figure.Figure.savefig

    def recording(self, path, *args, **kwargs):
        saved[Path(path).name] = self.axes[0]
        return save(self, path, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", recording)
    assert main([str(sweep), "--out", str(sweep / "report")]) == 0
    lines = saved["speedup_vs_best.png"].get_lines()
    assert any(list(line.get_ydata()) == [1.0, 1.0] for line in lines)
    assert not any(
        list(line.get_ydata()) == [1.0, 1.0] for line in saved["runtime_per_order.png"].get_lines()
    )
