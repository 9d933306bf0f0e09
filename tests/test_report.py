"""placerl-report: aggregation over seeds, paired order comparison, files and plots."""

import json

import numpy as np
import pytest

pytest.importorskip("pandas", reason="the experiments extra is not installed")
pytest.importorskip("tabulate", reason="the experiments extra is not installed")

from placerl.errors import ConfigError
from placerl.report import compare_orders, load_runs, main, summarize, write_report

TOPO = [2.0, 2.2, 1.8, 2.1, 1.9, 2.0]
BFS = [1.0, 1.2, 0.8, 1.1, 0.9, 1.0]  # half of topo's, seed by seed


def _write(folder, order, seed, runtime, placer=None):
    config = ({"placer": placer, "cluster": "placeto", "objective": "step_time"} if placer else
              {"order": order, "seed": seed, "algo": "maskable_ppo", "extractor": "gnn",
               "cluster": "placeto", "objective": "step_time"})  # fmt: skip
    result = {"config": config, "steps": 0 if placer else 100,
              "timings": {"train": 1.0}, "curve": [] if placer else [
                  {"step": 50, "runtimes": [2 * runtime]}, {"step": 100, "runtimes": [runtime]}],
              "graphs": [{"graph": "g", "final_runtime": runtime, "best_runtime": runtime,
                          "baselines": {"heft": 1.5, "single_device": 3.0}}]}  # fmt: skip
    run = folder / f"{order}-{seed}-{placer}"
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
    assert summary.loc["topo", "seeds"] == 6
    assert summary.loc["topo", "runtime_ms"] == pytest.approx(1e3 * np.mean(TOPO))
    half = 2.5706 * np.std(1e3 * np.array(TOPO), ddof=1) / np.sqrt(6)  # t(0.975, 5)
    assert summary.loc["topo", "runtime_ci95_ms"] == pytest.approx(half, rel=1e-3)
    assert summary.loc["bfs", "speedup_vs_best"] == pytest.approx(np.mean([1.5 / b for b in BFS]))
    assert summary.loc["none", "agent"] == "heft"  # a placer follows no order


def test_multi_graph_runs_give_one_curve_per_graph_and_no_interval_for_one_seed(tmp_path):
    result = {"config": {"order": "bfs", "seed": 0, "algo": "a2c", "extractor": "mlp",
                         "cluster": "c", "objective": "step_time"},
              "steps": 10, "timings": {"train": 1.0},
              "curve": [{"step": 10, "runtimes": [1.0, 3.0]}],
              "graphs": [{"graph": name, "final_runtime": r, "best_runtime": r,
                          "baselines": {"heft": 2.0}} for name, r in (("a", 1.0), ("b", 3.0))]}
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "result.json").write_text(json.dumps(result))
    runs = load_runs([tmp_path]).set_index("graph")
    assert runs.loc["a", "curve"] == [(10, 1000.0)] and runs.loc["b", "curve"] == [(10, 3000.0)]
    assert summarize(load_runs([tmp_path]))["runtime_ci95_ms"].isna().all()


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
    assert row["ratio"] == pytest.approx(np.exp(np.mean(np.log(np.array(BFS) / TOPO))))
    assert row["p_value"] == pytest.approx(0.03125)  # exact two-sided Wilcoxon, 6 of 6 wins


def test_report_writes_tables_and_plots(sweep, capsys):
    assert main([str(sweep), "--out", str(sweep / "report")]) == 0
    files = ("report.md", "runs.csv", "summary.csv", "orders.csv", "runtime_per_order.png",
             "speedup_vs_best.png", "learning_curves.png")
    for name in files:
        assert (sweep / "report" / name).is_file(), name
    text = (sweep / "report" / "report.md").read_text()
    assert "## Orders against topo (paired)" in text and "| bfs" in text
    assert "Report, CSV tables and plots in" in capsys.readouterr().out


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
    assert "cut/result.json (JSONDecodeError" in text and "edited/result.json (KeyError" in text


def test_a_reference_order_no_run_used_is_named(sweep, capsys):
    with pytest.raises(ConfigError, match="reference order 'bfz' is none of the runs' orders: "
                                          "bfs, topo"):  # fmt: skip
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
        if json.loads(path.read_text())["config"].get("order") != "bfs":
            path.unlink()
    text = write_report([sweep], sweep / "report").read_text()
    assert ("(no pairs: no run used topo; the runs' orders: bfs; pick one with "
            "--reference-order)") in text
