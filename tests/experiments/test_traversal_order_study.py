"""experiments/traversal_order_study: its configs compose to the protocol, run.py's commands."""

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("hydra", reason="the experiments extra is not installed")

from placerl.compose import compose_run
from placerl.train import train

STUDY = Path(__file__).resolve().parents[2] / "experiments" / "traversal_order_study"
spec = importlib.util.spec_from_file_location("order_study_run", STUDY / "run.py")
run_py = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_py)


def compose(*overrides):
    return compose_run(f"hydra.searchpath=[file://{STUDY / 'conf'}]", *overrides)


def test_the_refine_arm_is_the_study_s_setting():
    run = compose("experiment=order_study", "agent=placeto_lstm")
    assert run.env.kind == "refine" and run.env.start_from_best and run.env.passes == 1
    assert run.env.reward == "normalized_delta"  # Placeto's sign: a move that saves is positive
    assert run.env.init == "random" and run.agent.warm_start is None
    assert run.cluster.spec == "placeto?n_devices=3" and run.agent.extractor == "lstm"
    assert run.agent.hyperparams["n_epochs"] == 2  # the placeto recipe's tuned PPO


@pytest.mark.parametrize(
    ("experiment", "kind", "steps"),
    [("order_study_construct", "construct", 5000), ("order_study_learned", "dual", 10000)],
)
def test_the_construct_and_learned_arms_share_the_episode_budget(experiment, kind, steps):
    run = compose(f"experiment={experiment}")
    assert run.env.kind == kind and run.total_steps == steps  # 50 episodes of ~100 nodes
    assert run.agent.warm_start is None and run.env.reference == "single_device"
    # The same network and PPO settings: only the order differs between the arms.
    construct = compose("experiment=order_study_construct")
    assert (run.agent.extractor_kwargs, run.agent.hyperparams) == (
        construct.agent.extractor_kwargs,
        construct.agent.hyperparams,
    )


def test_a_study_job_trains_and_records_its_best_placement(tmp_path):
    run = compose(
        "experiment=order_study",
        "graph.spec='synthetic:cifar10?n=23&seed=1'",
        "total_steps=256",
        "eval_every=128",
        "order=dfs_preorder",
        "threads=1",
    )
    result = train(run, out_dir=str(tmp_path))
    outcome = result.graphs[0]
    assert outcome.best_runtime <= outcome.final_runtime
    assert [point["step"] for point in result.curve][:3] == [0, 128, 256]
    assert (tmp_path / "result.json").is_file()
    # the analyses read the graph's spec back from the job's result.json
    import pandas as pd

    jobs = pd.DataFrame({"run": [str(tmp_path)], "graph": [outcome.graph]})
    assert analyze._graph_specs(jobs) == {outcome.graph: "synthetic:cifar10?n=23&seed=1"}


def commands(*argv, fails=None, status=0):
    """The commands ``run.py`` runs, recorded instead of run; a command holding the word
    ``fails`` exits with status 1. Asserts ``run.py``'s exit status."""
    import subprocess

    lines = []

    def run(command, check):
        lines.append(command)
        return subprocess.CompletedProcess(command, int(fails in command))

    original = run_py.subprocess.run
    try:
        run_py.subprocess.run = run
        assert run_py.main([*argv]) == status
    finally:
        run_py.subprocess.run = original
    return lines


def test_one_command_runs_every_arm_then_reports_it_then_the_analyses(tmp_path):
    lines = commands("--out", str(tmp_path))
    *arms, analysis = lines
    sweeps, reports = arms[0::2], arms[1::2]
    assert [c[c.index("-m") + 3].split("=")[1] for c in sweeps] == [
        "order_study",
        "order_study_construct",
        "order_study_learned",
    ]
    refine = sweeps[0]
    assert "order=" + ",".join(run_py.ORDERS) in refine and len(run_py.ORDERS) == 9
    assert "agent=placeto_gnn,placeto_lstm" in refine and "seed=0,1,2,3,4" in refine
    graphs = next(a for a in refine if a.startswith("graph.spec="))
    assert graphs.count("n=100&") == 6 and "'synthetic:nmt?n=100&seed=2'" in graphs
    assert not any(a.startswith("order=") for a in sweeps[2])  # the learned arm picks its own
    assert "hydra/launcher=joblib" in refine
    assert f"hydra.sweep.dir={tmp_path}/runs/refine" in refine
    assert reports[0][1:] == [
        str(tmp_path / "runs" / "refine"),
        "--out",
        str(tmp_path / "results" / "refine"),
        "--metric",
        "best",
    ]
    assert analysis[1:] == [
        str(STUDY / "analyze.py"),
        "--runs",
        str(tmp_path / "runs"),
        "--out",
        str(tmp_path / "results"),
    ]


def test_a_failed_sweep_stops_no_other_arm_and_is_named(tmp_path, capsys):
    # The construct sweep dies as a whole (its jobs' own failures never stop a multirun): the
    # learned arm still runs; construct's report and the analyses are not rewritten from part
    # of the runs; the exit status and the last line say so.
    lines = commands("--out", str(tmp_path), fails="experiment=order_study_construct", status=1)
    ran = [
        next(w.split("=")[1] for w in c if w.startswith("experiment="))
        if "-m" in c
        else Path(c[1]).name
        for c in lines
    ]
    assert ran == [
        "order_study",
        "refine",
        "order_study_construct",
        "order_study_learned",
        "learned",
    ]
    error = capsys.readouterr().err
    assert "failed: construct sweep (exit status 1); a failed sweep's report was left " in error


def test_failed_jobs_within_a_sweep_are_counted_and_fail_the_command(tmp_path, capsys):
    job = tmp_path / "runs" / "zoo" / "agent=placeto_gnn,seed=0"
    job.mkdir(parents=True)
    (job / "error.txt").write_text("Traceback ...")
    (tmp_path / "runs" / "zoo" / "finished").mkdir()
    (tmp_path / "runs" / "zoo" / "finished" / "error.txt").write_text("from a past attempt")
    (tmp_path / "runs" / "zoo" / "finished" / "result.json").write_text("{}")
    commands("--out", str(tmp_path), "--arms", "zoo", status=1)
    assert (
        "failed: zoo: 1 unfinished job(s) (a failed one's traceback is in its error.txt)"
        in capsys.readouterr().err
    )


def test_a_missing_executable_is_a_named_failure(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(run_py.shutil, "which", lambda name: None)
    monkeypatch.setenv("PATH", str(tmp_path))  # no placerl-train, no placerl-report
    assert run_py.main(["--out", str(tmp_path), "--arms", "zoo"]) == 1
    assert "failed: zoo sweep ([Errno 2] No such file or directory" in capsys.readouterr().err


def test_the_analyses_follow_only_arms_they_read_with_the_refine_arm_there(tmp_path):
    assert len(commands("--out", str(tmp_path), "--arms", "zoo")) == 2
    assert len(commands("--out", str(tmp_path), "--arms", "learned")) == 2  # no refine arm
    (tmp_path / "results" / "refine").mkdir(parents=True)
    (tmp_path / "results" / "refine" / "runs.csv").write_text("run\n")
    *_, analysis = commands("--out", str(tmp_path), "--arms", "learned")
    assert analysis[1].endswith("analyze.py")
    assert len(commands("--out", str(tmp_path), "--arms", "msr")) == 2  # msr is not read


def test_the_full_protocol_is_a_switch_and_runs_on_slurm(tmp_path):
    (sweep, _, _) = commands(
        "--full",
        "--launcher",
        "slurm",
        "--arms",
        "refine",
        "--out",
        str(tmp_path),
        "hydra.launcher.partition=gpu",
    )
    graphs = next(a for a in sweep if a.startswith("graph.spec="))
    assert "n=100" not in graphs
    # nmt's seeds 1-32 give 16 distinct graphs (its seed draws only shapes): each runs once.
    assert [graphs.count(f"synthetic:{family}?") for family in ("cifar10", "ptb", "nmt")] == [
        32,
        32,
        16,
    ]
    assert "nmt?seed=12'" in graphs and "nmt?seed=24'" not in graphs  # 24 is 12's graph
    assert "hydra/launcher=slurm" in sweep and sweep[-1] == "hydra.launcher.partition=gpu"


def test_an_unknown_arm_is_named(capsys):
    with pytest.raises(SystemExit):
        run_py.main(["--arms", "refine,sideways", "--dry-run"])
    assert (
        "unknown arm(s) sideways; known: refine, construct, learned, zoo, msr"
        in capsys.readouterr().err
    )


spec = importlib.util.spec_from_file_location("order_study_analyze", STUDY / "analyze.py")
analyze = importlib.util.module_from_spec(spec)
spec.loader.exec_module(analyze)


def test_graph_features_measure_depth_width_and_skips():
    features = analyze.graph_features("synthetic:chain?n=5")
    assert features["depth"] == 5 and features["width"] == 1 and features["skip_share"] == 0
    assert features["fan_out"] == pytest.approx(4 / 5)


def _frame(rows):
    import pandas as pd

    return pd.DataFrame(rows, columns=["agent", "group", "graph", "order", "seed", "runtime_ms"])


def test_a_feature_rule_is_fitted_on_two_families_and_scored_on_the_third():
    import pandas as pd

    # deep graphs want dfs, shallow ones bfs; topo is in between everywhere
    graphs = {
        "a-s1": ("a", 10),
        "a-s2": ("a", 12),
        "b-s1": ("b", 2),
        "b-s2": ("b", 3),
        "c-s1": ("c", 11),
        "c-s2": ("c", 1),
    }
    rows = []
    for graph, (family, depth) in graphs.items():
        deep = depth > 5
        for order, runtime in (
            ("dfs_preorder", 1.0 if deep else 2.0),
            ("bfs", 2.0 if deep else 1.0),
            ("topo", 1.5),
        ):
            rows += [("gnn", family, graph, order, seed, runtime) for seed in range(2)]
    features = pd.DataFrame(
        {g: {f: float(d) for f in analyze.FEATURES} for g, (_, d) in graphs.items()}
    ).T
    table = analyze.rule_on_held_out(_frame(rows), features)
    held_out_c = next(r for r in table if r["held-out family"] == "c")
    assert held_out_c["rule / best order"] == 1.0  # the rule transfers to family c
    assert held_out_c["topo / best order"] == 1.5
    assert held_out_c["rule"].startswith("dfs_preorder if ") and held_out_c["rule"].endswith(
        " else bfs"
    )


def test_the_rule_fitted_on_every_family_is_scored_on_the_zoo_models():
    import pandas as pd

    # deep graphs want dfs, shallow ones bfs; only the agent both arms ran is scored
    families = {"a-s1": ("a", 10), "b-s1": ("b", 2), "c-s1": ("c", 11), "c-s2": ("c", 1)}
    zoo = {"resnet50": ("resnet50", 30), "transformer": ("transformer", 1.5)}
    rows = []
    for graph, (family, depth) in {**families, **zoo}.items():
        deep = depth > 5
        for order, runtime in (
            ("dfs_preorder", 1.0 if deep else 2.0),
            ("bfs", 2.0 if deep else 1.0),
            ("topo", 1.2),
        ):
            rows += [("gnn", family, graph, order, seed, runtime) for seed in range(2)]
            rows += [("lstm", family, graph, order, 0, runtime) for _ in range(graph in families)]
    runs = _frame(rows)
    features = pd.DataFrame(
        {g: {f: float(d) for f in analyze.FEATURES} for g, (_, d) in {**families, **zoo}.items()}
    ).T
    on_families = runs[runs["graph"].isin(list(families))]
    on_zoo = runs[runs["graph"].isin(list(zoo)) & (runs["agent"] == "gnn")]
    (row,) = analyze.rule_on_zoo(on_families, on_zoo, features)
    assert row["agent"] == "gnn" and row["graphs"] == 2
    assert row["rule / best order"] == 1.0 and row["topo / best order"] == 1.2
    assert row["rule"] == "dfs_preorder if depth > 2 else bfs"  # fitted on the families only
    assert row["most wins on fit"] == "bfs" and row["it / best order"] == 1.5  # 2 of 4, first


def test_an_order_missing_on_a_graph_is_named_not_averaged_away():
    rows = [("gnn", "a", g, o, 0, 1.0) for g in ("a-s1", "a-s2") for o in ("bfs", "topo")]
    with pytest.raises(ValueError, match=r"no runs of some orders on a-s2 \(topo\): re-run"):
        analyze.order_runtimes(_frame(rows[:-1]))


def test_ties_for_a_graph_s_best_order_count_as_wins_for_each():
    import pandas as pd

    table = pd.DataFrame(
        {"alpha": [2.0, 1.0, 3.0], "topo": [1.0, 1.0, 1.0], "bfs": [1.0, 2.0, 1.0]}
    )
    assert analyze.most_wins(table) == "topo"  # 3 wins, ties included; bfs 2, alpha 1
    assert analyze.most_wins(table.drop(columns="topo")) == "bfs"


def test_zoo_and_msr_arms_are_opt_in_and_msr_places_each_graph_on_its_cluster(tmp_path):
    zoo, _, msr, _ = commands("--arms", "zoo,msr", "--out", str(tmp_path))
    assert (
        "graph.spec='zoo:inception_v3?max_nodes=100','zoo:resnet50?max_nodes=100',"
        "'zoo:transformer?max_nodes=100','zoo:gnmt'" in zoo
    )
    assert "experiment=order_study_msr" in msr
    (full, _) = commands("--arms", "zoo", "--full", "--out", str(tmp_path))[:2]
    assert "graph.spec='zoo:inception_v3','zoo:resnet50','zoo:transformer','zoo:gnmt'" in full
    run = compose("experiment=order_study_msr", "graph.spec=msr:resnet50_inference")
    assert run.cluster.spec == "msr:resnet50_inference" and run.env.objective == "pipeline"
    assert run.env.kind == "refine" and "tarnawski_dp" in run.baselines


spec = importlib.util.spec_from_file_location("improve_orders", STUDY / "improve_orders.py")
improve_orders = importlib.util.module_from_spec(spec)
spec.loader.exec_module(improve_orders)


def _bench_rows(scale, graphs=8):
    """A bench_recipes results file's rows: zero-shot and validation runs of 3 seeds."""
    rows = [
        {
            "recipe": "classic",
            "method": "local_search",
            "graph": "g0",
            "seed": 0,
            "runtime": 1.0,
            "vs_constructive": 1.0,
            "evaluations": 240,
        }
    ]
    for method, count in (("zero-shot", graphs), ("validation", 2 * graphs)):
        for g in range(count):
            for seed in range(3):
                runtime = (1 + g / 10) * scale * (1 + seed / 100)
                rows.append(
                    {
                        "recipe": "improve",
                        "method": method,
                        "graph": f"g{g}",
                        "seed": seed,
                        "runtime": runtime,
                        "vs_constructive": runtime,
                        "evaluations": 60,
                    }
                )
    return rows


def test_improve_orders_pairs_each_order_with_topo_per_split(tmp_path, monkeypatch):
    import json

    import pandas as pd

    monkeypatch.setattr(improve_orders, "RESULTS", tmp_path)
    monkeypatch.setattr(improve_orders, "ORDERS", ("topo", "bfs", "alpha"))
    for order, scale in (("topo", 1.0), ("bfs", 0.9), ("alpha", 1.0)):
        improve_orders.results_file(order).write_text(json.dumps(_bench_rows(scale)))
    assert improve_orders.results_file("bfs").name == "recipes_improve_order-bfs.json"
    runs = pd.concat([improve_orders.load(o) for o in ("topo", "bfs", "alpha")])
    table = improve_orders.compare(runs).set_index(["split", "order"])
    bfs = table.loc[("held-out", "bfs")]
    assert bfs["pairs"] == 24 and bfs["vs_topo"] == 0.9 and bfs["faster"] == "24/24"
    assert bfs["verdict"].startswith("bfs is 10.0% faster than topo")
    assert table.loc[("validation", "bfs")]["pairs"] == 48
    assert "same runtime in all 24 pairs" in table.loc[("held-out", "alpha")]["verdict"]
    assert table.loc[("held-out", "topo")]["ci95"] == "-"
    text = improve_orders.report(improve_orders.compare(runs), tmp_path / "out")
    assert "## held-out" in text and "## validation" in text
    assert (tmp_path / "out" / "orders.csv").is_file()


def test_improve_orders_runs_the_benchmark_only_for_missing_orders(tmp_path, monkeypatch):
    monkeypatch.setattr(improve_orders, "RESULTS", tmp_path)
    monkeypatch.setattr(improve_orders, "ORDERS", ("topo", "bfs"))
    (tmp_path / "recipes_improve.json").write_text("[]")
    commands = []
    monkeypatch.setattr(
        improve_orders.subprocess, "run", lambda command, **kwargs: commands.append(command)
    )
    improve_orders.run_missing("models")
    assert len(commands) == 1
    assert commands[0][-4:] == ["--override", "order=bfs", "--models", "models"]
    assert commands[0][2:6] == ["--recipes", "improve", "--steps", "0"]


def test_the_analyses_regenerate_from_the_committed_tables(tmp_path, monkeypatch):
    import shutil

    for arm in ("refine", "construct", "learned"):  # the reports' runs.csv, no run folders
        shutil.copytree(STUDY / "results" / arm, tmp_path / arm)
    # The searches against the learned order take a minute: tested on their own below.
    monkeypatch.setattr(analyze, "learned_against_search", lambda learned: [])
    assert analyze.main(["--runs", str(tmp_path / "gone"), "--out", str(tmp_path)]) == 0
    search = "## The learned order against search"
    assert (tmp_path / "analysis.md").read_text().split(search)[0] == (
        STUDY / "results" / "analysis.md"
    ).read_text().split(search)[0]


def test_the_learned_order_is_set_against_search_from_best_of(monkeypatch):
    monkeypatch.setattr(analyze, "SEARCH_EVALUATIONS", 300)
    spec = "synthetic:layered?n=12&seed=1"
    rows = [("gnn", "layered", "layered-s1", "topo", seed, ms) for seed, ms in ((0, 9.0), (1, 4.0))]
    runs = _frame(rows).assign(
        run=f"/gone/graph.spec='{spec}',seed=0",
        steps=240,
        cluster="placeto?n_devices=3",
        objective="step_time",
    )
    (row,) = analyze.learned_against_search(runs)
    assert row["episodes"] == 10  # 240 steps, two a node
    from placerl.baselines import solve

    best_of = solve("best_of", spec, "placeto?n_devices=3").runtime
    assert row["learned"] == round(6e-3 / best_of, 3)  # the geometric mean of 9 and 4 ms
    budgeted, optimum = row["local_search, as many evaluations"], row["local_search to its optimum"]
    # All start from best_of's placement; the iterated search's first climb is the optimum's.
    assert row["iterated local search, 300 evaluations"] <= optimum <= 1.0 and budgeted <= 1.0


def test_an_arm_with_neither_runs_nor_a_table_is_named(tmp_path):
    with pytest.raises(
        FileNotFoundError,
        match=r"the refine arm has neither .* run run\.py "
        r"--arms refine",
    ):
        analyze.main(["--runs", str(tmp_path / "gone"), "--out", str(tmp_path)])


def test_a_run_whose_graph_cannot_be_told_is_named():
    runs = _frame([("gnn", "a", "a-s1", "topo", 0, 1.0)]).assign(run="/gone/job-7")
    with pytest.raises(ValueError, match=r"run /gone/job-7 of graph a-s1: no result\.json"):
        analyze._graph_specs(runs)
