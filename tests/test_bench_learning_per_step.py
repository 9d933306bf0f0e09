"""bench_learning_per_step.py: each variant is paired with the default layout by graph and seed."""

import numpy as np
import pytest

pytest.importorskip("stable_baselines3", reason="the rl extra is not installed")
pytest.importorskip("scipy", reason="the paired test needs scipy")

from tests.bench_modules import module_fixture

bench = module_fixture("bench_learning_per_step")


def _run(variant, graph, seed, ratio, extractor="gnn", steps=(0, 1000, 2000)):
    return {
        "variant": variant,
        "extractor": extractor,
        "graph": f"synthetic:{graph}",
        "seed": seed,
        "steps": list(steps),
        "ratio": ratio,
        "train_s": 1.0,
    }


def _geomean(values):
    return float(np.exp(np.log(values).mean()))


def test_variants_pair_with_the_reference_of_their_own_label_and_seed(bench):
    # the reference's curves differ by seed, so pairing the wrong seeds changes every ratio
    runs = [_run("8x128 (a)", "g1", s, [2.0, 1.0 + s, 1.0 + s]) for s in range(8)]
    runs += [_run("8x128_2ep (a)", "g1", s, [2.0, 1.3 + s, 1.3 + s]) for s in range(8)]
    runs += [_run("8x128", "g1", s, [9.0, 9.0, 9.0]) for s in range(8)]  # another label
    runs += [_run("8x128_2ep (a)", "g1", 99, [1.0, 1.0, 1.0])]  # no reference for seed 99
    (row,) = bench.paired(runs)  # one graph: no pooled row
    assert (row["variant"], row["against"], row["graph"]) == ("8x128_2ep (a)", "8x128 (a)", "g1")
    assert row["pairs"] == 8 and row["better / worse"] == "0 / 8"
    curve = [(4.6 + 2 * s) / (4 + 2 * s) for s in range(8)]
    final = [(1.3 + s) / (1 + s) for s in range(8)]
    assert row["curve mean ratio"].startswith(f"{_geomean(curve):.3f} [")
    assert row["final ratio"].startswith(f"{_geomean(final):.3f} [")
    assert "slower than 8x128 (a)" in row["verdict (curve mean)"]


def test_pairs_stay_within_their_graph_and_pool_over_all(bench):
    runs = []
    for graph, scale in (("g1", 1.0), ("g2", 4.0)):  # the graphs' references differ
        for seed in range(3):
            runs.append(_run("8x128", graph, seed, [scale, scale, scale]))
            runs.append(_run("16x64", graph, seed, [1.0, 1.0, 1.0]))
            runs.append(_run("16x64", graph, seed, [9.0, 9.0, 9.0], extractor="lstm"))
    rows = bench.paired(runs)
    assert [(r["extractor"], r["graph"], r["pairs"]) for r in rows] == [
        ("gnn", "g1", 3),
        ("gnn", "g2", 3),
        ("gnn", "all graphs", 6),
    ]
    assert [r["curve mean ratio"].split()[0] for r in rows] == ["1.000", "0.250", "0.500"]
    assert "3 pairs are too few to confirm it" in rows[1]["verdict (curve mean)"]


def test_duplicate_runs_and_unequal_evaluation_steps_are_refused(bench):
    twice = [_run("8x128", "g1", 0, [1.0, 1.0, 1.0])] * 2
    with pytest.raises(ValueError, match="two runs of variant, extractor, graph and seed"):
        bench.paired(twice)
    runs = [
        _run("8x128", "g1", 0, [1.0, 1.0, 1.0]),
        _run("16x64", "g1", 0, [1.0, 1.0, 1.0], steps=(0, 500, 1000)),
    ]
    with pytest.raises(ValueError, match="evaluated at different steps"):
        bench.paired(runs)


def test_a_run_trains_the_bare_construct_setting_with_the_variants_layout(bench, monkeypatch):
    """A real (tiny) run: the config the benchmark gives ``train`` is valid and trains the
    groups' bare defaults (construct env, no warm start, no rollback, placerl's PPO settings
    for ``default``), not the main job's recipe."""
    from placerl.run_config import AgentGroup, EnvGroup, OrderGroup, RunConfig
    from placerl.train import train as real

    layered = bench.config("16x64", "synthetic:layered?n=100&seed=0", 3, 1_000, 100, "lstm")
    run = RunConfig.from_dict(layered).check()
    assert (run.order, run.env) == (OrderGroup(), EnvGroup())
    assert run.agent == AgentGroup(
        extractor="lstm",
        warm_start=None,
        rollback=False,
        hyperparams=bench.VARIANTS["16x64"]["hyperparams"],
    )
    assert (run.graph.spec, run.cluster.spec) == ("synthetic:layered?n=100&seed=0", bench.CLUSTER)
    assert (run.n_envs, run.total_steps, run.eval_every, run.seed) == (16, 1_000, 100, 3)
    assert (run.eval_samples, run.checkpoint_every, run.baselines) == (0, 0, ["heft"])
    assert not (run.keep_best or run.progress_bar or run.resume)
    default = RunConfig.from_dict(bench.config("default", "synthetic:cifar10?seed=0", 0, 64, 32))
    assert default.agent == AgentGroup(warm_start=None, rollback=False)
    assert default.n_envs == RunConfig.schema().n_envs

    configs = []

    def recording(config, **kwargs):
        configs.append(config)
        return real(config, **kwargs)

    monkeypatch.setitem(
        bench.VARIANTS, "tiny", {"n_envs": 2, "hyperparams": {"n_steps": 16, "batch_size": 32}}
    )
    monkeypatch.setattr(bench, "train", recording)
    row = bench.run("tiny", "synthetic:layered?n=10&seed=0", 0, 64, 32, "mlp", " (t)")
    assert (row["variant"], row["extractor"], row["seed"]) == ("tiny (t)", "mlp", 0)
    assert row["steps"] == [0, 32, 64, 64] and len(row["ratio"]) == 4
    assert RunConfig.from_dict(configs[0]).agent.extractor == "mlp"
