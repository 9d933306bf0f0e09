"""The published recipes (``experiment=<recipe>``): each composes and learns on a small graph."""

import pytest

pytest.importorskip("hydra", reason="the experiments extra is not installed")
pytest.importorskip("stable_baselines3", reason="the rl extra is not installed")

import numpy as np

from placerl.agents.placer import env_for, load_model
from placerl.agents.search import run_search
from placerl.baselines import solve
from placerl.baselines.problem import Problem
from placerl.baselines.references import reference
from placerl.cluster import load_cluster
from placerl.graph import load_graph
from placerl.train import train
from tests.test_apps import _compose

GRAPH, CLUSTER = "synthetic:layered?n=16&seed=2", "placeto?n_devices=3"
SMALL = [
    f"graph.spec='{GRAPH}'",
    f"cluster.spec='{CLUSTER}'",
    "n_envs=2",
    "eval_every=256",
    "eval_samples=0",
    "progress_bar=false",
    "total_steps=1536",
    "baselines=[single_device]",
    "+agent.hyperparams.n_steps=64",
    "+agent.hyperparams.batch_size=64",
]


def test_placeto_refines_from_the_best_so_far_with_its_reward():
    config = _compose("experiment=placeto")
    assert config.env.kind == "refine" and config.env.start_from_best
    assert config.env.reward == "normalized_delta"
    assert config.env.init == config.env.reference == "best_of"
    assert config.agent.warm_start == "best_of"


def test_placeto_learns_to_improve_a_poor_start():
    """From single-device starts, the refining policy learns moves worth 30% more than its
    untrained self's in 1.5k steps (measured: 0.231 ms at step 0, 0.134 ms at the end)."""
    run = _compose("experiment=placeto", *SMALL, "env.init=single_device", "agent.warm_start=null")
    result = train(run)
    single = solve("single_device", GRAPH, CLUSTER).runtime
    curve = [c["runtimes"][0] for c in result.curve]
    final = result.graphs[0].final_runtime
    assert final < 0.7 * curve[0]  # the untrained policy's refinement, at step 0
    assert final < 0.7 * single


def test_excursions_are_short_refine_episodes_without_a_clone():
    config = _compose("experiment=excursions")
    assert config.env.kind == "refine" and config.env.start_from_best
    assert config.agent.warm_start is None
    assert config.env.moves == 4 and config.env.init == "best_of"
    assert config.agent.hyperparams["n_epochs"] == 2  # the placeto recipe's tuned PPO (placeto_gnn)


def test_excursions_compare_with_iterated_local_search_at_the_runs_budget():
    """``{steps}``: the steps trained, ``total_steps`` rounded up to whole rollouts (the
    train tests check that it is filled in)."""
    config = _compose("experiment=excursions", "total_steps=3000")
    assert "local_search?init=best_of" in config.baselines
    assert any("restarts=" in b and "max_evaluations={steps}&" in b for b in config.baselines)


def test_another_env_drops_the_excursions_and_brings_the_clone_back():
    config = _compose("experiment=excursions", "env=construct")
    assert config.env.kind == "construct" and config.env.moves is None
    assert not config.env.start_from_best and "moves" not in config.env_arguments()
    assert config.agent.warm_start == "best_of"


def test_excursions_find_placements_beyond_local_searchs_optimum():
    """From best_of on a 26-node graph, 768 steps of 4-move excursions find a placement 7%
    faster than best_of's; hill climbing from best_of stops 6% faster (measured: 0.926 and
    0.936 of best_of). So short a run is a smoke test, and its seed decides: over seeds 0-3 the
    best placements were 0.936, 0.936, 0.963 and 0.926 of best_of (with the ``devices``
    features before HEFT's schedule and the rank column, 0.912, 0.877, 0.939 and 0.950)."""
    graph = "synthetic:layered?n=26&seed=2"
    run = _compose(
        "experiment=excursions",
        f"graph.spec='{graph}'",
        *SMALL[1:],
        "seed=3",
        "total_steps=768",
        "eval_every=512",
        "baselines=[best_of]",
    )
    result = train(run)
    start = reference(graph, CLUSTER, placer="best_of")  # cached: the run computed it
    climbed = solve("local_search", graph, CLUSTER, init=start.placement).runtime
    best_of = start.runtime
    assert result.graphs[0].best_runtime < min(0.95 * best_of, climbed)


def test_improve_proposes_moves_the_simulator_keeps_when_they_help():
    config = _compose("experiment=improve")
    assert config.env.kind == "refine" and config.agent.warm_start == "best_move"
    assert config.env.undo_worse is True and config.env.passes == 3
    assert config.env.init == config.env.reference == "best_of"
    assert len(config.graph.spec) == 24 and config.env.max_nodes == 80  # the family


def _geomean(values):
    return float(np.exp(np.mean(np.log(values))))


@pytest.mark.slow  # about a minute: the default suite keeps the fast improve test
def test_improve_places_unseen_graphs_faster_than_best_of_and_local_search(tmp_path):
    """Cloned from ``best_move`` on 6 graphs (no PPO), one greedy pass over each of 6 unseen
    graphs (measured over seeds 0-3: 0.914-0.930x ``best_of``, 10.5-13 simulator evaluations
    each) beats ``best_of`` and ``local_search`` from ``best_of`` given the same evaluations.

    One pass, not the recipe's three: on 24 nodes three passes (0.931-0.946x in 20-23
    evaluations) spend half of a local-search round, where local search does as well (0.924x
    on seed 0); ``bench_recipes.py`` measures the three passes at 80 nodes."""
    family = "synthetic:layered?n=24&seed={}"
    training = ",".join(f"'{family.format(s)}'" for s in range(6))
    run = _compose(
        "experiment=improve",
        f"graph.spec=[{training}]",
        f"cluster.spec='{CLUSTER}'",
        "total_steps=0",
        "eval_every=0",
        "progress_bar=false",
        "baselines=[]",
        "env.max_nodes=24",
        "env.max_edges=80",
        "env.passes=1",
    )
    train(run, out_dir=str(tmp_path))
    model = load_model(str(tmp_path / "model.zip"))
    ratios, searched = [], []
    for spec in (family.format(s) for s in range(10, 16)):
        problem = Problem(load_graph(spec), load_cluster(CLUSTER), "step_time")
        found = run_search(model, env_for(model, problem), "greedy")
        best_of = reference(spec, CLUSTER, placer="best_of").runtime  # cached: the env's start
        ratios.append(found.runtime / best_of)
        budget = int(found.evaluations)
        searched.append(
            _geomean(
                [
                    solve(
                        "local_search",
                        spec,
                        CLUSTER,
                        init="best_of",
                        seed=s,
                        max_evaluations=budget,
                    ).runtime
                    for s in range(3)
                ]
            )
            / best_of
        )
        assert found.runtime <= best_of  # a pass with undo_worse never ends slower
    assert _geomean(ratios) < 0.95
    assert _geomean(ratios) < _geomean(searched)
    # graphs twice as large as any it trained on (its padding is 24 nodes): the GNN reads them
    larger = []
    for spec in (f"synthetic:layered?n=48&seed={s}" for s in range(10, 13)):
        problem = Problem(load_graph(spec), load_cluster(CLUSTER), "step_time")
        larger.append(
            run_search(model, env_for(model, problem), "greedy").runtime
            / reference(spec, CLUSTER, placer="best_of").runtime
        )
    assert _geomean(larger) < 0.97  # measured: 0.90, 0.96 and 0.90


def test_doppler_selects_then_places_and_imitates_the_best_classic_placer():
    config = _compose("experiment=doppler")
    assert config.env.kind == "dual" and config.agent.warm_start == "best_of"
    assert config.env.reference == "best_of"


def test_doppler_learns_an_order_and_devices_from_scratch():
    """Without imitation, the dual policy learns in 1.5k steps (measured: 0.146 ms at step 0,
    0.125 ms at the end; HEFT 0.128 ms, single device 0.254 ms). Over seeds 0-3 it ended at
    0.857, 0.890, 0.491 and 0.799 of its start, at 0.125-0.132 ms; with the ``devices``
    features before HEFT's schedule, seed 0 went from 0.179 to 0.139 ms."""
    run = _compose("experiment=doppler", *SMALL, "agent.warm_start=null")
    result = train(run)
    curve = [c["runtimes"][0] for c in result.curve]
    final = result.graphs[0].final_runtime
    assert final < 0.9 * curve[0]
    assert final < 1.05 * solve("heft", GRAPH, CLUSTER).runtime


def test_gdp_places_a_family_in_one_shot():
    config = _compose("experiment=gdp")
    assert config.env.kind == "one_shot" and config.agent.warm_start == "best_of"
    assert len(config.graph.spec) == 24 and config.env.max_nodes == 80


def test_gdp_learns_one_shot_placements_from_scratch():
    """Without imitation, the one-shot policy learns in 1k episodes on a 10-node graph (seed
    0: from 0.163 ms at step 0 to 0.105; HEFT 0.091 ms). Over seeds 0-3 it ended at 0.642,
    0.933, 0.777 and 0.787 of its untrained start (0.147-0.163 ms): seed 1 barely moved
    (before the encoders stopped reading the device columns: 1.000, 0.703, 0.774, 0.842).
    Before the rank column seeds 0-5 ended at 0.105-0.143 ms from single device's 0.163. On 16
    nodes 1.5k episodes took twice the time for the same gain. The rows fit the graph, not the
    family's 80 nodes: padding made the test 3x slower and learns the same."""
    small = "synthetic:layered?n=10&seed=2"
    run = _compose(
        "experiment=gdp",
        *SMALL,
        "seed=0",
        f"graph.spec='{small}'",
        "total_steps=1024",
        "env.max_nodes=10",
        "env.max_edges=16",
        "agent.warm_start=null",
    )
    result = train(run)
    curve = [c["runtimes"][0] for c in result.curve]
    final = result.graphs[0].final_runtime
    assert final < 0.9 * curve[0]
    assert final < 1.6 * solve("heft", small, CLUSTER).runtime


def test_hierarchical_groups_then_places_a_large_graph():
    config = _compose("experiment=hierarchical")
    assert config.env.kind == "hierarchical" and config.env.groups == 64
    assert config.graph.spec == "synthetic:layered?n=1200&seed=0"
    assert config.agent.warm_start == "best_of" and not config.agent.rollback


def test_hierarchical_learns_groups_and_their_devices_from_scratch():
    """Without imitation, the grouper-placer learns in 2k steps, 1k placements of a 10-node
    graph into 3 groups (0.163 ms at step 0, single device's; HEFT 0.091 ms). At 1k steps one
    machine measured 0.112 ms at the end and another 0.138-0.147 (the code before and after
    the GNN's written-out rounds alike: float sums in another order send so short a run
    elsewhere); at 2k steps that machine ended at 0.119 and 0.121 ms (seeds 0 and 1). With the
    rank column seeds 0-3 ended at 0.137, 0.123, 0.115 and 0.115 ms (0.70-0.84 of the start)."""
    small = "synthetic:layered?n=10&seed=2"
    run = _compose(
        "experiment=hierarchical",
        *SMALL,
        f"graph.spec='{small}'",
        "total_steps=2048",
        "env.groups=3",
        "agent.warm_start=null",
    )
    result = train(run)
    curve = [c["runtimes"][0] for c in result.curve]
    final = result.graphs[0].final_runtime
    assert final < 0.85 * curve[0]
    assert final < 1.55 * solve("heft", small, CLUSTER).runtime
