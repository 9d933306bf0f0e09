"""Every bad input to the RL layer's entry points, with the message it must produce.

Like the engine's ``test_bad_inputs`` modules: one table per entry point, each row a bad input
and the :class:`~placerl.errors.ConfigError` (or ``PlacementError``) text that names it.
"""

import numpy as np
import pytest

from placerl.agents import make_agent
from placerl.agents.episodes import rollout
from placerl.agents.imitation import behaviour_clone
from placerl.agents.search import run_search
from placerl.envs import PlacementEnv
from placerl.errors import ConfigError, EpisodeError, PlacementError
from placerl.run_config import AgentGroup, EnvGroup, RunConfig

GRAPH, CLUSTER = "synthetic:layered?n=12&seed=0", "placeto?n_devices=2"
#: The groups' bare defaults (the construct env, no warm start), the MLP extractor.
SMALL = {
    "graph": {"spec": GRAPH},
    "cluster": {"spec": CLUSTER},
    "env": EnvGroup(),
    "agent": AgentGroup(extractor="mlp", warm_start=None),
}


@pytest.fixture(scope="module")
def env():
    return PlacementEnv(GRAPH, CLUSTER)


@pytest.fixture(scope="module")
def model(env):
    return make_agent("maskable_ppo", env, "mlp", n_steps=32)


TRAIN = [
    ({"baselines": ["nope"]}, "unknown placer 'nope'; known: best_of"),
    ({"baselines": "heft"}, "baselines must be a list of specs, got 'heft'"),
    (
        {"baselines": ["local_search?max_evaluations={steps}&depth=2"]},
        "unknown option.*depth for placer 'local_search'",
    ),
    ({"agent": {"warm_start": "heft?depth=2"}}, "unknown option.*depth for placer 'heft'"),
    ({"agent": {"warm_start_epochs": 0}}, "agent.warm_start_epochs must be an integer >= 1, got 0"),
    (
        {"agent": {"warm_start_rounds": -1}},
        "agent.warm_start_rounds must be an integer >= 0, got -1",
    ),
    (
        {"agent": {"warm_start_rounds": 2, "warm_start": None}},
        "agent.warm_start_rounds=2 needs an agent.warm_start expert to label the rounds, got None",
    ),
    (
        {"agent": {"hyperparams": [1]}},
        r"agent.hyperparams must be a mapping of option names to values, got \[1\]",
    ),
    (
        {"env": "reward"},
        r"env is a group: give env.kind \({'env': {'kind': 'reward'}}\) or an? "
        "EnvGroup, got 'reward'",
    ),
    (
        {"env_kwargs": {"reward": "delta"}},
        r"'env_kwargs' is now env.<argument> \(e.g. env.reward\)",
    ),
    ({"agent": {"extractor_kwargs": 3}}, "agent.extractor_kwargs must be a mapping"),
    ({"device": "gpu0"}, "device must be 'auto', 'cpu', 'cuda', 'cuda:<index>' or 'mps'"),
    (
        {"env": {"kind": "beam"}},
        "env.kind must be one of construct, refine, dual, one_shot, hierarchical, got 'beam'",
    ),
    ({"seed": -1}, "seed must be an integer >= 0, got -1"),
    ({"order": {"name": "bsf"}}, "order.name must be one of topo, .*bfs.*, got 'bsf'"),
    ({"agent": {"algo": "ppx"}}, "agent.algo must be one of maskable_ppo, ppo, .*got 'ppx'"),
    (
        {"env": {"invalid_action": "ignore"}},
        "env.invalid_action must be one of raise, penalize, nearest, got 'ignore'",
    ),
    ({"vec_env": "ray"}, "vec_env must be one of dummy, subproc, got 'ray'"),
    (
        {"validation_graphs": [GRAPH], "eval_every": 0},
        "validation_graphs choose the weights keep_best keeps at each evaluation: they need "
        "keep_best=True and eval_every > 0, got keep_best=True, eval_every=0",
    ),
    (
        {"validation_graphs": [GRAPH], "keep_best": False, "eval_every": 64},
        "they need keep_best=True and eval_every > 0, got keep_best=False, eval_every=64",
    ),
    (
        {"agent": {"warm_start": "best_move"}},
        r"warm_start 'best_move' needs the refine env \(env=refine\), not PlacementEnv",
    ),
]


@pytest.mark.parametrize(("change", "message"), TRAIN, ids=[m[:30] for _, m in TRAIN])
def test_run_config_refuses_before_any_work(change, message):
    with pytest.raises(ConfigError, match=message):
        base = RunConfig.from_dict(SMALL, base=RunConfig.schema())
        RunConfig.from_dict(change, base=base).check()


CLONE = [
    ({"placer": "nope"}, "unknown placer 'nope'"),
    ({"epochs": 0}, "behaviour cloning epochs must be an integer >= 1, got 0"),
    ({"batch_size": 0}, "behaviour cloning batch_size must be an integer >= 1, got 0"),
    ({"rounds": -1}, "behaviour cloning rounds must be an integer >= 0, got -1"),
    ({"rounds": 1.5}, "behaviour cloning rounds must be an integer >= 0, got 1.5"),
    ({"learning_rate": -1}, "behaviour cloning learning_rate must be a number > 0, got -1"),
    ({"learning_rate": "fast"}, "behaviour cloning learning_rate must be a number > 0"),
    (
        {"placer": "best_move"},
        r"warm_start 'best_move' needs the refine env \(env=refine\), not PlacementEnv",
    ),
]


@pytest.mark.parametrize(("change", "message"), CLONE, ids=[m[:30] for _, m in CLONE])
def test_behaviour_clone_refuses(model, env, change, message):
    arguments = {"placer": "heft", **change}
    with pytest.raises(ConfigError, match=message):
        behaviour_clone(model, env, arguments.pop("placer"), **arguments)


SEARCH = [
    ({"search": "beam"}, "unknown search 'beam'"),
    ({"budget": True}, "search budget must be an integer >= 0, got True"),
    ({"seed": "a"}, "search seed must be an integer >= 0, got 'a'"),
    ({"search": "sample", "budget": 0}, "search 'sample' needs a budget > 0"),
    ({"init": "nope"}, "unknown placer 'nope'"),
    (
        {"init": "policy?path=m.zip"},
        "search option 'init' must be a placer spec other than "
        "'policy' .* got 'policy\\?path=m.zip'",
    ),
    ({"init": 3}, "search option 'init' must be a placer spec .* got 3"),
    ({"init": "heft?depth=2"}, "depth"),
    ({"start": "heft"}, "run_search: option 'start' is now 'init'"),
]


@pytest.mark.parametrize(("change", "message"), SEARCH, ids=[m[:30] for _, m in SEARCH])
def test_run_search_refuses(model, env, change, message):
    arguments = {"search": "greedy", "budget": 0, **change}
    with pytest.raises(ConfigError, match=message):
        run_search(model, env, arguments.pop("search"), **arguments)


def test_rollout_refuses_a_graph_the_env_lacks(model, env):
    with pytest.raises(ConfigError, match=r"reset option 'graph' is 5; the env has graphs 0\.\.0"):
        rollout(model, env, graph=5)


def test_a_step_outside_an_episode_is_an_episode_error():
    fresh = PlacementEnv(GRAPH, CLUSTER)
    with pytest.raises(EpisodeError, match=r"step\(\) called before reset\(\)"):
        fresh.step(0)


def test_an_action_that_is_not_a_device_is_a_placement_error(env):
    env.reset(seed=0)
    with pytest.raises(PlacementError, match=r"action must be an integer device index in 0\.\.1"):
        env.step(np.float32(1.0))
