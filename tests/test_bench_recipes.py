"""bench_recipes.py's references at equal cost: evaluations and seconds, and its split."""

import numpy as np
import pytest

pytest.importorskip("hydra", reason="the experiments extra is not installed")
pytest.importorskip("stable_baselines3", reason="the rl extra is not installed")

from placerl.baselines import solve
from placerl.cluster import load_cluster
from placerl.graph import load_graph
from tests.bench_modules import module_fixture

bench = module_fixture("bench_recipes")


@pytest.fixture(scope="module")
def case():
    graph = load_graph("synthetic:layered?n=30&seed=3")
    cluster = load_cluster("placeto?n_devices=4")
    start = np.asarray(solve("heft", graph, cluster, "step_time").placement)
    return graph, cluster, start


def _climb(graph, cluster, start, budget, seed=0):
    return solve(
        "local_search",
        graph,
        cluster,
        "step_time",
        max_rounds=10**6,
        time_limit=1e6,
        max_evaluations=budget,
        init=start,
        seed=seed,
    ).runtime


def test_evaluations_to_reach_is_the_fewest_that_reach_the_target(bench, case):
    graph, cluster, start = case
    first, optimum = _climb(graph, cluster, start, 1), _climb(graph, cluster, start, 0)
    assert optimum < first  # HEFT is not a local optimum here: there is a climb to bisect
    target = np.sqrt(first * optimum)  # somewhere along the climb
    needed = bench.evaluations_to_reach(graph, cluster, start, target, seed=0)
    assert 1 < needed < np.inf
    assert _climb(graph, cluster, start, int(needed)) <= target
    assert _climb(graph, cluster, start, int(needed) - 1) > target
    assert bench.evaluations_to_reach(graph, cluster, start, first, seed=0) == 1


def test_evaluations_to_reach_is_inf_below_the_local_optimum(bench, case):
    graph, cluster, start = case
    optimum = _climb(graph, cluster, start, 0)
    assert bench.evaluations_to_reach(graph, cluster, start, 0.9 * optimum, seed=0) == np.inf


def test_local_searches_stop_at_the_seconds_given(bench, case):
    graph, cluster, start = case
    unlimited = bench.local_searches(graph, cluster, start, 0)
    timed = bench.local_searches(graph, cluster, start, 0, seconds=0.0, restarts=10**6)
    assert all(evaluations == 1 for _, evaluations, _ in timed)  # the start alone
    assert all(t[1] < u[1] for t, u in zip(timed, unlimited, strict=True))


def test_iterated_local_searches_go_on_past_the_optimum_while_time_lasts(bench, case):
    graph, cluster, start = case
    climbs = bench.local_searches(graph, cluster, start, 0)
    kicked = bench.local_searches(graph, cluster, start, 0, seconds=0.2, restarts=10**6)
    for (runtime, evaluations, _), (iterated, more, seconds) in zip(climbs, kicked, strict=True):
        assert iterated <= runtime and more > evaluations and seconds < 1.0


def test_break_even_is_the_evaluation_cost_that_pays_for_the_policy(bench):
    assert bench.break_even(0.2, 50, 150) == pytest.approx(0.002)  # 0.2 s over 100 saved
    assert bench.break_even(0.2, 50, 50) == np.inf
    assert bench.break_even(0.2, 50, 20) == np.inf  # the search needs fewer: it always wins
    assert bench.break_even(0.2, 50, np.inf) == 0.0  # the search never gets there


def test_budgets_pairs_each_run_with_its_own_search(bench):
    def row(needed, evaluations, seconds):
        return {
            "recipe": "improve",
            "method": "zero-shot",
            "evaluations": evaluations,
            "wall_s": seconds + 0.25,
            "policy_own_s": seconds,
            "iterated_local_search_evaluations": 900,
            "local_search_to_match": needed,
            "break_even_ms": 1e3 * bench.break_even(seconds, evaluations, needed),
        }

    rows = [
        row(40.0, 10, 0.3),
        row(50.0, 100, 0.2),
        row(float("inf"), 20, 0.4),
        {"recipe": "improve", "method": "local"},
    ]
    (summary,) = bench.budgets(rows)
    assert summary["runs"] == 3 and summary["policy_evaluations"] == 20  # the median
    assert summary["policy_s"] == 0.3  # the seconds search was given, not wall_s
    assert summary["local_search_evaluations_to_match"] == 50
    assert summary["search_over_policy"] == 4.0  # per run: 4, 0.5, inf
    assert summary["search_needs_more"] == "2/3" and summary["unreached"] == "1/3"
    assert summary["break_even_ms"] == 10.0  # per run: 10 ms, inf, 0 (never reached)
    unreached = bench.budgets([row(float("inf"), 10, 0.1), row(float("inf"), 10, 0.1)])[0]
    assert unreached["local_search_evaluations_to_match"] == "unreached"
    assert bench.budgets([{"recipe": "classic", "method": "local_search"}]) == []


def test_equal_cost_references_give_search_the_policys_seconds(bench, case):
    from placerl.baselines.problem import Problem

    graph, cluster, start = case
    problem = Problem(graph, cluster, "step_time")
    optimum = _climb(graph, cluster, start, 0)
    refs = bench.equal_cost_references(problem, start, optimum * 1.5, 7, seconds=0.0)
    assert refs["policy_own_s"] == 0.0
    assert refs["iterated_local_search_evaluations"] == 1  # no time: the start alone
    assert refs["vs_iterated_local_search_time"] == pytest.approx(
        optimum * 1.5 / _climb(graph, cluster, start, 1)
    )
    assert refs["local_search_to_match"] == 1  # the start is already faster than the target
    assert refs["break_even_ms"] == np.inf  # search needs fewer evaluations


@pytest.mark.parametrize("name", ["cifar10", "ptb", "nmt"])
def test_held_out_cells_are_graphs_no_policy_trained_on(bench, name):
    # ptb and nmt draw a few shapes per seed, so different seeds can give the same graph:
    # the held-out ones must differ from seed 0's (shaping), the training ones and each other.
    family = bench.FAMILIES[name]
    seen = {load_graph(spec).content_fingerprint() for spec in family.graphs((0, *family.train))}
    for spec in family.held_out_graphs():
        content = load_graph(spec).content_fingerprint()
        assert content not in seen, f"{spec} repeats a training, shaping or held-out graph"
        seen.add(content)


def test_a_negative_budget_is_refused_and_zero_means_no_limit(bench, monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["bench_recipes.py", "--budget", "-1"])
    with pytest.raises(SystemExit):
        bench.main()
    assert "--budget must be at least 0 (0: the local searches run to their optima), got -1" in (
        capsys.readouterr().err
    )
    assert bench._budget_words(0).startswith("to its local optimum")
    assert bench._budget_words(240) == "at 240 simulator evaluations"


def test_a_recipe_config_trains_on_the_family_and_its_policy_places_held_out_graphs(
    bench, tmp_path
):
    """The composed recipe with the benchmark's settings over it (``recipe_config``), trained
    (a clone, no PPO steps) and placing a held-out graph in every method."""
    from placerl.agents.placer import load_model
    from placerl.train import train

    family = bench.Family(
        "synthetic:layered?n=10&seed={seed}", range(2), (5,), "placeto?n_devices=2", validation=(7,)
    )
    config = bench.recipe_config(
        "improve",
        family,
        1,
        0,
        rollback_graphs=1,
        overrides=("env.passes=1",),
        select_on_validation=True,
    )
    assert config.graph.spec == family.graphs(range(2))
    assert config.cluster.spec == family.cluster and config.env.objective == bench.OBJECTIVE
    assert config.env.kind == "refine" and config.env.passes == 1  # the recipe, overridden
    placed = [load_graph(spec) for spec in family.graphs((0, 1, 5, 7))]
    assert config.env.max_nodes == max(g.num_nodes for g in placed)
    assert config.env.max_edges == max(g.num_edges for g in placed)
    assert config.agent.warm_start == "best_move" and config.agent.rollback_graphs == 1
    assert config.validation_graphs == family.graphs((7,)) and config.baselines == []
    assert (config.seed, config.total_steps, config.eval_samples) == (1, 0, 0)
    train(config, out_dir=str(tmp_path))
    model = load_model(tmp_path / "model.zip", "cpu")
    assert model.placerl_settings["init"] == "best_of"  # its seconds count in the rows
    rows = bench.place_held_out(model, family.held_out_graphs()[0], family.cluster, 20)
    assert [row["method"] for row in rows] == [method for method, _, _ in bench.METHODS]
    assert all(row["vs_best_of"] <= 1 + 1e-9 for row in rows)  # undo_worse from best_of
