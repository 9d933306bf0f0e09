"""Search at inference: budgets in simulator evaluations, never worse than greedy, bad input."""

from typing import ClassVar

import gymnasium as gym
import numpy as np
import pytest
import torch

from placerl.agents import make_agent
from placerl.agents.search import SEARCHES, run_search
from placerl.baselines import solve
from placerl.baselines.references import reference
from placerl.envs import PlacementEnv, PlacementRefineEnv
from placerl.errors import ConfigError
from placerl.run_config import AgentGroup, EnvGroup, OrderGroup
from placerl.train import train

GRAPH, CLUSTER = "synthetic:layered?n=16&seed=1", "placeto?n_devices=3"


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    out = tmp_path_factory.mktemp("search")
    train(
        {
            "graph": {"spec": GRAPH},
            "cluster": {"spec": CLUSTER},
            "order": OrderGroup(),
            "env": EnvGroup(reward="normalized_delta"),
            "agent": AgentGroup(warm_start=None),
            "n_envs": 2,
            "total_steps": 128,
            "eval_every": 0,
            "eval_samples": 0,
            "baselines": ["single_device"],
            "resume": False,
            "progress_bar": False,
        },
        out_dir=str(out),
    )
    return out / "model.zip"


@pytest.fixture(scope="module")
def model(model_path):
    from placerl.agents.placer import load_model

    return load_model(model_path, "cpu")


def _untrained(env):
    """An untrained MLP policy: far from ``best_of``, what a start placer is for (seed 4:
    with seeds 0 to 3 its greedy placement is within 12% of best_of's, and 30 local moves
    reach best_of)."""
    torch.manual_seed(0)
    return make_agent("maskable_ppo", env, "mlp", n_steps=32, batch_size=32, seed=4)


def _env(**kwargs):
    return PlacementEnv(GRAPH, CLUSTER, reward="normalized_delta", **kwargs)


def test_every_search_is_registered():
    assert set(SEARCHES) >= {"greedy", "sample", "local", "ils", "active"}


@pytest.mark.parametrize(
    ("search", "budget"),
    [("greedy", 0), ("sample", 80), ("local", 0), ("local", 40), ("ils", 80), ("active", 80)],
)
def test_never_worse_than_greedy_and_within_budget(model, search, budget):
    env = _env()
    result = run_search(model, env, search, budget=budget, seed=0)
    greedy = run_search(model, _env(), "greedy").runtime
    assert result.greedy_runtime == pytest.approx(greedy)
    assert result.feasible and result.runtime <= greedy * (1 + 1e-12)
    simulated = solve("single_device", GRAPH, CLUSTER).simulation  # same units as the env
    assert simulated.runtime > 0
    episode = 16  # a dense reward simulates once per step
    assert result.evaluations >= episode
    if budget:
        assert result.evaluations <= max(budget, episode)
    assert result.wall_s > 0
    from placerl.sim import simulate

    assert simulate(env.graphs[0], result.placement, env.cluster).runtime == pytest.approx(
        result.runtime
    )


def test_sample_counts_its_episodes(model):
    result = run_search(model, _env(), "sample", budget=16 * 5)
    assert result.info["episodes"] == 5 and result.evaluations == 80


def test_local_reaches_a_local_optimum_without_a_budget(model):
    env = _env()
    result = run_search(model, env, "local")
    assert result.evaluations > 16 + 1
    from placerl.sim import simulate

    for node in range(16):
        for device in range(3):
            moved = result.placement.copy()
            moved[node] = device
            assert simulate(env.graphs[0], moved, env.cluster).runtime >= result.runtime * (
                1 - 1e-9
            )


def test_local_uses_the_policys_probabilities(model):
    from placerl.agents.search import greedy_preferences

    run, preferences = greedy_preferences(model, _env())
    assert preferences.shape == (16, 3)
    np.testing.assert_allclose(preferences.sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(np.argmax(preferences, axis=1), run.placement)


def test_active_search_fine_tunes_a_copy_and_leaves_the_model_as_it_was(model):
    before = [p.detach().clone() for p in model.policy.parameters()]
    result = run_search(model, _env(), "active", budget=200, seed=1)
    assert result.info["updates"] >= 2  # rollouts sized so that the budget pays for updates
    assert result.evaluations <= 200
    for old, new in zip(before, model.policy.parameters(), strict=True):
        assert torch.equal(old, new)


def test_active_search_refuses_a_budget_that_pays_for_no_training(model):
    with pytest.raises(
        ConfigError,
        match=r"search 'active' needs a budget above 32 simulator "
        r"evaluations on this graph .* got 30",
    ):
        run_search(model, _env(), "active", budget=30)


def test_searches_place_a_graph_beyond_the_padding_but_active_search_refuses_it(model):
    """The GNN places a larger graph (a larger padding); fine-tuning on it would train the
    policy on observations of another shape."""
    from placerl.agents.placer import env_for
    from placerl.baselines import Problem
    from placerl.cluster import load_cluster
    from placerl.graph import load_graph

    problem = Problem(
        load_graph("synthetic:layered?n=24&seed=3"), load_cluster(CLUSTER), "step_time"
    )
    for search, budget in (("greedy", 0), ("sample", 60), ("local", 60)):
        result = run_search(model, env_for(model, problem), search, budget=budget)
        assert len(result.placement) == 24 and result.feasible
        assert result.runtime <= result.greedy_runtime * (1 + 1e-12)
    with pytest.raises(
        ConfigError,
        match=r"search 'active' fine-tunes the policy on the env, "
        r"whose observations have another shape .*padding "
        r"max_nodes=24, .*the policy's: max_nodes=16",
    ):
        run_search(model, env_for(model, problem), "active", budget=400)


@pytest.mark.parametrize("search", ["sample", "active"])
def test_same_seed_same_placement_whatever_the_global_seeds(model, search):
    runs = []
    for global_seed in (1, 2):
        torch.manual_seed(global_seed)
        np.random.seed(global_seed)
        runs.append(run_search(model, _env(), search, budget=160, seed=3))
    np.testing.assert_array_equal(runs[0].placement, runs[1].placement)
    assert runs[0].runtime == runs[1].runtime


def test_the_callers_torch_generator_is_left_as_it_was(model):
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    run_search(model, _env(), "sample", budget=64)
    np.testing.assert_array_equal(torch.rand(3).numpy(), expected.numpy())


def test_local_spends_at_most_its_budget(model):
    for budget in (17, 20, 45):
        assert run_search(model, _env(), "local", budget=budget).evaluations <= budget


def test_ils_spends_its_whole_budget_where_local_stops_at_the_optimum():
    """``local`` ends at its climb's optimum; ``ils`` kicks on from there, spending every
    evaluation it was given, and ends no slower than ``local``."""
    graph = "synthetic:layered?n=30&seed=2"
    env = PlacementEnv(graph, CLUSTER)
    model = _untrained(env)
    local = run_search(model, env, "local", budget=3000, seed=0, init="heft")
    ils = run_search(model, PlacementEnv(graph, CLUSTER), "ils", budget=3000, seed=0, init="heft")
    assert local.evaluations < 3000  # a climb stops at its optimum
    # all of it, but one held back to score a placement that does not fit
    assert ils.evaluations in (2999, 3000) and ils.info["kicks"] > 1
    assert ils.runtime <= local.runtime * (1 + 1e-12)
    again = run_search(model, PlacementEnv(graph, CLUSTER), "ils", budget=3000, seed=0, init="heft")
    np.testing.assert_array_equal(again.placement, ils.placement)  # seeded


def test_ils_climbs_and_kicks_where_the_policy_points(model, monkeypatch):
    from placerl.agents.search import greedy_preferences
    from placerl.baselines import local_search

    seen = []

    def spy(*args, **kwargs):
        seen.append(kwargs["preferences"])
        return iterated(*args, **kwargs)

    iterated = local_search.iterated_climbs
    monkeypatch.setattr(local_search, "iterated_climbs", spy)
    run_search(model, _env(), "ils", budget=200, seed=0)
    _, preferences = greedy_preferences(model, _env(), seed=0)
    (given,) = seen
    np.testing.assert_array_equal(given, preferences)


def test_ils_needs_a_budget(model):
    with pytest.raises(ConfigError, match=r"search 'ils' needs a budget > 0"):
        run_search(model, _env(), "ils")


class _CountResets(gym.Wrapper):
    resets: ClassVar[list] = []

    def reset(self, **kwargs):
        _CountResets.resets.append(1)
        return self.env.reset(**kwargs)


def test_sampled_episodes_run_through_the_envs_wrappers(model):
    _CountResets.resets.clear()
    result = run_search(model, _CountResets(_env()), "sample", budget=16 * 4)
    assert result.info["episodes"] == 4 and len(_CountResets.resets) == 4


@pytest.mark.parametrize("search", ["greedy", "sample", "local", "ils", "active"])
def test_searches_work_on_wrapped_refine_envs(search):
    env = gym.wrappers.TimeLimit(PlacementRefineEnv(GRAPH, CLUSTER, init="heft"), 1000)
    model = make_agent("maskable_ppo", env.unwrapped, "gnn", n_steps=32, batch_size=32)
    result = run_search(model, env, search, budget=0 if search == "greedy" else 60)
    assert result.evaluations <= 60 + 17  # the greedy episode is always run
    assert result.runtime <= result.greedy_runtime * (1 + 1e-12)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("search", ["greedy", "sample", "local", "active"])
def test_every_search_places_with_a_policy_on_a_gpu_as_on_the_cpu(model_path, search):
    """Envs on the CPU, the policy on a GPU: the same searches end on the same placements
    (an untrained-enough policy's margins dwarf the devices' rounding differences)."""
    from placerl.agents.placer import load_model

    found = {}
    for device in ("cpu", "cuda"):
        model = load_model(model_path, device)
        assert model.policy.device.type == device
        found[device] = run_search(
            model, _env(), search, budget=0 if search == "greedy" else 80, seed=0
        )
    on_gpu = found["cuda"]
    assert on_gpu.feasible and on_gpu.runtime <= on_gpu.greedy_runtime * (1 + 1e-12)
    assert on_gpu.greedy_runtime == pytest.approx(found["cpu"].greedy_runtime)
    if search != "active":  # fine-tuning's gradients round differently per device
        np.testing.assert_array_equal(on_gpu.placement, found["cpu"].placement)


def test_the_policy_placer_takes_a_search_and_a_budget(model_path):
    greedy = solve("policy", GRAPH, CLUSTER, path=str(model_path))
    local = solve("policy", GRAPH, CLUSTER, path=str(model_path), search="local", budget=50)
    assert local.runtime <= greedy.runtime * (1 + 1e-12)


# local at 30 evaluations: at 60 the untrained policy's climb already reached best_of's
# runtime, so its own search would not be worse than the start it is bounded by.
@pytest.mark.parametrize(
    ("search", "budget"), [("greedy", 0), ("sample", 80), ("local", 30), ("active", 80)]
)
def test_an_init_placer_bounds_every_search(search, budget):
    untrained = _untrained(_env())
    best_of = reference(GRAPH, CLUSTER, placer="best_of").runtime  # cached, as init= reads it
    alone = run_search(untrained, _env(), search, budget=budget, seed=0)
    started = run_search(untrained, _env(), search, budget=budget, seed=0, init="best_of")
    assert alone.runtime > best_of * 1.01  # the untrained policy alone is worse
    assert started.runtime <= best_of * (1 + 1e-12) and started.info["init"] == "best_of"
    assert started.greedy_runtime == pytest.approx(alone.greedy_runtime)
    if search == "greedy":  # init's one evaluation is counted
        assert started.evaluations == alone.evaluations + 1


def test_local_search_climbs_from_the_start_when_it_is_better():
    graph = "synthetic:layered?n=30&seed=2"
    env = PlacementEnv(graph, CLUSTER)
    found = run_search(_untrained(env), env, "local", budget=200, seed=0, init="heft")
    heft = solve("heft", graph, CLUSTER).runtime
    assert found.greedy_runtime > heft  # so the climb began at heft's placement
    assert found.runtime < heft * (1 - 1e-9)  # it moved on from heft's placement
    assert found.evaluations <= 200


def test_the_policy_placer_takes_an_init(model_path):
    started = solve("policy", GRAPH, CLUSTER, path=str(model_path), init="heft")
    assert started.runtime <= solve("heft", GRAPH, CLUSTER).runtime * (1 + 1e-12)


@pytest.mark.parametrize("old", ["start", "initial"])
def test_the_old_names_of_init_are_refused_naming_it(model_path, model, old):
    from placerl.agents.placer import env_for, policy_placer
    from placerl.baselines.problem import Problem
    from placerl.cluster import load_cluster
    from placerl.graph import load_graph

    with pytest.raises(
        ConfigError,
        match=rf"unknown option\(s\) {old} for placer 'policy'; "
        r"known: .*\binit\b",
    ):
        solve("policy", GRAPH, CLUSTER, path=str(model_path), **{old: "heft"})
    with pytest.raises(ConfigError, match=f"policy_placer: option '{old}' is now 'init'"):
        policy_placer(model_path, **{old: "heft"})
    with pytest.raises(ConfigError, match=f"run_search: option '{old}' is now 'init'"):
        run_search(model, _env(), **{old: "heft"})
    problem = Problem(load_graph(GRAPH), load_cluster(CLUSTER), "step_time")
    with pytest.raises(ConfigError, match=f"env_for: option '{old}' is now 'init'"):
        env_for(model, problem, **{old: "heft"})
    unknown = r"run_search\(\) got an unexpected keyword argument 'begin'"
    with pytest.raises(TypeError, match=unknown):  # any other name: as Python says
        run_search(model, _env(), begin="heft")


BAD = [
    ({"search": "beam"}, "unknown search 'beam'; known: .*active.*greedy.*local.*sample"),
    ({"search": "sample"}, r"search 'sample' needs a budget > 0 \(simulator evaluations\)"),
    ({"search": "active", "budget": 0}, "search 'active' needs a budget > 0"),
    ({"search": "local", "budget": -5}, "search budget must be an integer >= 0, got -5"),
    (
        {"search": "local", "budget": 2.5},
        "option 'budget' of placer 'policy' must be an integer, got 2.5",
    ),
]


@pytest.mark.parametrize(
    ("options", "message"),
    BAD,
    ids=["unknown", "sample-no-budget", "active-zero", "negative", "float"],
)
def test_bad_searches_fail_before_any_work(model_path, options, message):
    with pytest.raises(ConfigError, match=message):
        solve("policy", GRAPH, CLUSTER, path=str(model_path), **options)


def test_an_env_over_several_graphs_is_refused(model):
    env = PlacementEnv(
        [GRAPH, "synthetic:layered?n=12&seed=2"], CLUSTER, max_nodes=16, max_edges=64
    )
    with pytest.raises(ConfigError, match="run_search places one graph; the env has 2"):
        run_search(model, env, "greedy")


def test_sample_with_a_recurrent_policy_counts_each_evaluation_once():
    env = _env(max_nodes=16)
    model = make_agent("recurrent_ppo", env, "mlp", n_steps=16, batch_size=16)
    result = run_search(model, env, "sample", budget=16 * 4)
    assert result.evaluations == 64 and result.info["episodes"] == 4


def test_local_refuses_a_recurrent_policy():
    env = _env(max_nodes=16)
    model = make_agent("recurrent_ppo", env, "mlp", n_steps=16, batch_size=16)
    for search in ("local", "ils"):
        with pytest.raises(ConfigError, match="searches 'local' and 'ils' need a feed-forward"):
            run_search(model, env, search, budget=40)


def test_rollout_accepts_an_env_made_by_gymnasium_make():
    """gymnasium.make wraps the env (OrderEnforcing, PassiveEnvChecker): masks are read below."""
    import placerl  # noqa: F401  (registers the ids)
    from placerl.agents import rollout

    env = gym.make("placerl/Placement-v1", graph=GRAPH, cluster=CLUSTER)
    model = make_agent("maskable_ppo", env, "mlp", n_steps=16, batch_size=16)
    assert rollout(model, env).feasible
    assert run_search(model, env, "sample", budget=3).evaluations == 3


@pytest.mark.parametrize(("search", "budget"), [("greedy", 0), ("local", 40)])
def test_a_refine_search_keeps_the_best_placement_its_episode_passed_through(search, budget):
    env = PlacementRefineEnv(GRAPH, CLUSTER, init="heft")
    untrained = _untrained(env)
    found = run_search(untrained, env, search, budget=budget, seed=0)
    heft = solve("heft", GRAPH, CLUSTER).runtime
    assert _episode_end(untrained, env) > heft * 1.01  # the untrained refinement ends worse ...
    assert found.greedy_runtime <= heft * (1 + 1e-12)  # ... than its start, which it kept
    assert found.runtime <= found.greedy_runtime * (1 + 1e-12)
    assert found.evaluations <= max(budget, 17)  # at no extra evaluation


def _episode_end(model, env) -> float:
    """The runtime where a greedy episode ends (not the best it passed through)."""
    obs, _ = env.reset(seed=0, options={"graph": 0})
    done = False
    while not done:
        action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
        obs, _, terminated, truncated, info = env.step(int(action))
        done = terminated or truncated
    return info["runtime"]
