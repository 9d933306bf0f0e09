"""Every bad input of the env layer raises a placerl error naming the argument and value."""

import re

import gymnasium as gym
import numpy as np
import pytest

import placerl  # noqa: F401  (registers the ids)
from placerl.baselines.references import reference
from placerl.cluster import homogeneous
from placerl.envs import PlacementEnv, PlacementRefineEnv, StartFromBest
from placerl.errors import ClusterError, ConfigError, EpisodeError, PlacementError

SMALL = "synthetic:layered?n=12&seed=1"
ENVS = [PlacementEnv, PlacementRefineEnv]


def build(cls=PlacementEnv, **kwargs):
    return cls(**{"graph": SMALL, "cluster": "gpu4_pcie", **kwargs})


CONSTRUCTION = [
    (
        "graph as a number",
        {"graph": 123},
        ConfigError,
        "graph must be a graph spec, a CompGraph, or a non-empty list of them, got 123",
    ),
    ("empty graph list", {"graph": []}, ConfigError, "non-empty list of them, got []"),
    (
        "graph list with a number",
        {"graph": [SMALL, 5]},
        ConfigError,
        "a graph spec must be a string, Path or CompGraph, got int",
    ),
    (
        "repeated spec option",
        {"graph": "synthetic:layered?n=5&n=7"},
        ConfigError,
        "gives option 'n' more than once",
    ),
    (
        "max_nodes as text",
        {"max_nodes": "abc"},
        ConfigError,
        "max_nodes must be an integer >= 1, got 'abc'",
    ),
    (
        "max_nodes as a bool",
        {"max_nodes": True},
        ConfigError,
        "max_nodes must be an integer >= 1, got True",
    ),
    (
        "max_edges as a float",
        {"max_edges": 40.0},
        ConfigError,
        "max_edges must be an integer >= 1, got 40.0",
    ),
    (
        "max_nodes too small",
        {"max_nodes": 3},
        ConfigError,
        "max_nodes=3 is smaller than the largest graph (12)",
    ),
    ("unknown order", {"order": "nope"}, ConfigError, "unknown traversal order 'nope'; known: "),
    (
        "order as a number",
        {"order": 3},
        ConfigError,
        "a traversal order is a registered name or a callable, got 3",
    ),
    (
        "order_seed as a bool",
        {"order_seed": True},
        ConfigError,
        "order_seed must be an integer >= 0, got True",
    ),
    (
        "negative order_seed",
        {"order_seed": -1},
        ConfigError,
        "order_seed must be an integer >= 0, got -1",
    ),
    ("unknown objective", {"objective": "energy"}, ConfigError, "unknown objective 'energy'"),
    ("unknown reward", {"reward": "joy"}, ConfigError, "unknown reward 'joy'; known: "),
    (
        "unknown memory mode",
        {"memory": "ignore"},
        ConfigError,
        "memory must be one of mask, penalty, got 'ignore'",
    ),
    (
        "unknown render mode",
        {"render_mode": "human"},
        ConfigError,
        "render_mode must be 'ansi', 'rgb_array' or None, got 'human'",
    ),
    (
        "unknown invalid_action",
        {"invalid_action": "skip"},
        ConfigError,
        "invalid_action must be one of raise, penalize, nearest, got 'skip'",
    ),
    (
        "invalid_action not a string",
        {"invalid_action": None},
        ConfigError,
        "invalid_action must be one of raise, penalize, nearest, got None",
    ),
    (
        "unknown argument",
        {"grpah": SMALL},
        ConfigError,
        "has no argument 'grpah'; known: graph, cluster, order, objective, reward, memory",
    ),
    ("unknown reference placer", {"reference": "oracle"}, ConfigError, "unknown placer 'oracle'"),
    (
        "reference option of the wrong type",
        {"reference": "local_search?time_limit=abc"},
        ConfigError,
        "option 'time_limit' of placer 'local_search' must be a number, got 'abc'",
    ),
    (
        "reference of the wrong type",
        {"reference": 1.5},
        ConfigError,
        "reference must be a placer spec ('single_device', 'heft', ...), a Reference",
    ),
    ("unknown cluster preset", {"cluster": "tpu"}, ClusterError, "unknown cluster preset 'tpu'"),
    (
        "cluster as a number",
        {"cluster": 3},
        ClusterError,
        "a cluster spec must be a Cluster, a preset spec",
    ),
    (
        "cluster option as text",
        {"cluster": "homogeneous?n_devices=2&bandwidth=fast"},
        ClusterError,
        "option 'bandwidth' of cluster preset 'homogeneous' must be a number",
    ),
]

REFINE_CONSTRUCTION = [
    ("passes as a bool", {"passes": True}, ConfigError, "passes must be an integer >= 1, got True"),
    ("zero passes", {"passes": 0}, ConfigError, "passes must be an integer >= 1, got 0"),
    ("passes as a float", {"passes": 2.0}, ConfigError, "passes must be an integer >= 1, got 2.0"),
    ("zero moves", {"moves": 0}, ConfigError, "moves must be an integer >= 1, got 0"),
    ("moves as text", {"moves": "8"}, ConfigError, "moves must be an integer >= 1, got '8'"),
    (
        "unknown init",
        {"init": "warm"},
        ConfigError,
        "init='warm' is neither an env start placement (uniform, reference) nor a placer spec",
    ),
    (
        "init placer option of the wrong type",
        {"init": "random?seed=x"},
        ConfigError,
        "option 'seed' of placer 'random' must be an integer, got 'x'",
    ),
    (
        "init placer with a bad option",
        {"init": "heft?depth=1"},
        ConfigError,
        "unknown option(s) depth for placer 'heft'",
    ),
    (
        "initial, init's old name",
        {"initial": "uniform"},
        ConfigError,
        "argument 'initial' of PlacementRefineEnv is now 'init'",
    ),
    (
        "undo_worse not a bool",
        {"undo_worse": "yes"},
        ConfigError,
        "undo_worse must be true or false, got 'yes'",
    ),
    ("negative kick", {"kick": -1}, ConfigError, "kick must be an integer >= 0, got -1"),
    ("kick not an int", {"kick": 1.5}, ConfigError, "kick must be an integer >= 0, got 1.5"),
]


@pytest.mark.parametrize("cls", ENVS)
@pytest.mark.parametrize(
    ("case", "kwargs", "error", "message"), CONSTRUCTION, ids=[row[0] for row in CONSTRUCTION]
)
def test_bad_arguments_fail_at_construction(cls, case, kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        build(cls, **kwargs)


@pytest.mark.parametrize(
    ("case", "kwargs", "error", "message"),
    REFINE_CONSTRUCTION,
    ids=[row[0] for row in REFINE_CONSTRUCTION],
)
def test_bad_refine_arguments_fail_at_construction(case, kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        build(PlacementRefineEnv, **kwargs)


BAD_ACTIONS = [
    (2.5, "got 2.5 (float)"),
    ("1", "got '1' (str)"),
    (True, "got True (bool)"),
    (np.bool_(True), "(bool)"),  # the repr differs between numpy 1 and 2
    (None, "got None (NoneType)"),
    (np.float32(1.0), "(float32)"),
    (np.array([1]), "got array([1]) (ndarray)"),
    (np.array(1.0), "got array(1.) (ndarray)"),
    ([1], "got [1] (list)"),
    (4, "action 4 is not a device index in 0..3"),
    (-1, "action -1 is not a device index in 0..3"),
    (np.int64(7), "action 7 is not a device index in 0..3"),
]


@pytest.mark.parametrize("cls", ENVS)
@pytest.mark.parametrize(("action", "message"), BAD_ACTIONS, ids=[repr(a) for a, _ in BAD_ACTIONS])
def test_bad_actions_raise_placement_errors(cls, action, message):
    env = build(cls)
    env.reset(seed=0)
    with pytest.raises(PlacementError, match=re.escape(message)):
        env.step(action)


@pytest.mark.parametrize("cls", ENVS)
@pytest.mark.parametrize("action", [1, np.int64(1), np.int32(1), np.uint8(1), np.array(1)])
def test_integer_actions_of_every_kind_are_accepted(cls, action):
    env = build(cls)
    env.reset(seed=0)
    env.step(action)
    assert env.placement[env.case.order[0]] == 1


@pytest.mark.parametrize("cls", ENVS)
def test_stepping_outside_an_episode_raises(cls):
    env = build(cls)
    with pytest.raises(EpisodeError, match=re.escape("step() called before reset()")):
        env.step(0)
    env.reset(seed=0)
    done = False
    while not done:
        _, _, done, _, _ = env.step(0)
    with pytest.raises(EpisodeError, match=re.escape("step() called after the episode ended")):
        env.step(0)
    env.reset(seed=0)
    env.step(0)  # a new episode steps again


def test_stepping_after_an_infeasible_end_raises():
    too_big = [{"name": x, "cost": 1.0, "mem_bytes": 10.0} for x in "ab"]
    from placerl.graph import CompGraph

    env = PlacementEnv(graph=CompGraph(too_big), cluster=homogeneous(1, memory=15.0))
    env.reset(seed=0)
    *_, info = env.step(0)
    assert info["infeasible"]
    with pytest.raises(EpisodeError, match="after the episode ended"):
        env.step(0)


RESET = [
    ("options not a dict", {"options": [1]}, ConfigError, "reset options must be a dict, got [1]"),
    (
        "unknown option",
        {"options": {"start": 1}},
        ConfigError,
        "unknown reset option(s) start; known: graph",
    ),
    (
        "graph index out of range",
        {"options": {"graph": 3}},
        ConfigError,
        "reset option 'graph' is 3; the env has graphs 0..0",
    ),
    (
        "graph index as text",
        {"options": {"graph": "0"}},
        ConfigError,
        "reset option 'graph' must be an integer >= 0, got '0'",
    ),
    ("seed as text", {"seed": "abc"}, ConfigError, "reset seed must be an integer >= 0, got 'abc'"),
    ("negative seed", {"seed": -1}, ConfigError, "reset seed must be an integer >= 0, got -1"),
]


@pytest.mark.parametrize(
    ("case", "kwargs", "error", "message"), RESET, ids=[row[0] for row in RESET]
)
def test_bad_reset_arguments(case, kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        build().reset(**kwargs)


REFINE_RESET = [
    (
        "init of the wrong length",
        {"init": [0, 1]},
        PlacementError,
        "reset option 'init': placement has shape (2,); expected (12,)",
    ),
    (
        "init device out of range",
        {"init": [9] * 12},
        PlacementError,
        "reset option 'init': placement puts node",
    ),
    ("init as floats", {"init": [0.5] * 12}, PlacementError, "non-integer device 0.5"),
    (
        "init for a graph the env lacks",
        {"init": {5: [0] * 12}},
        ConfigError,
        "reset option 'init': graph index 5; the env has graphs 0..0",
    ),
    (
        "init keyed by text",
        {"init": {"0": [0] * 12}},
        ConfigError,
        "reset option 'init': a graph index must be an integer >= 0, got '0'",
    ),
    (
        "a bad placement for another key",
        {"init": {0: [0] * 12, 1: [9]}},
        ConfigError,
        "graph index 1; the env has graphs 0..0",
    ),
    (
        "initial, init's old name",
        {"initial": [0] * 12},
        ConfigError,
        "reset option 'initial' is now 'init'",
    ),
]


@pytest.mark.parametrize(
    ("case", "options", "error", "message"), REFINE_RESET, ids=[row[0] for row in REFINE_RESET]
)
def test_bad_refine_reset_options(case, options, error, message):
    with pytest.raises(error, match=re.escape(message)):
        build(PlacementRefineEnv).reset(seed=0, options=options)


def test_initial_on_an_env_without_a_start_placement_names_init_too():
    with pytest.raises(
        ConfigError,
        match=re.escape(
            "argument 'initial' of PlacementEnv is now 'init' (PlacementEnv takes no 'init' either)"
        ),
    ):
        build(initial="uniform")
    with pytest.raises(
        ConfigError, match=re.escape("argument 'initial' of PlacementRefineEnv is now 'init'")
    ):
        gym.make("placerl/PlacementRefine-v1", graph=SMALL, initial="uniform")
    with pytest.raises(
        ConfigError, match=re.escape("unknown reset option(s) initial; known: graph")
    ):
        build().reset(options={"initial": [0] * 12})


@pytest.mark.parametrize("cls", ENVS)
@pytest.mark.parametrize("action", [0, 1, 2])
def test_raise_refuses_a_device_whose_kind_cannot_run_the_node_by_name(cls, action):
    from placerl.cluster import Cluster, Device
    from placerl.graph import CompGraph

    graph = CompGraph([{"name": "gpu_op", "cost": 1.0, "costs": {"cpu": float("inf")}}])
    cluster = Cluster(
        [Device("gpu:0", "gpu"), Device("cpu:0", "cpu"), Device("gpu:1", "gpu")], bandwidth=1e9
    )
    env = cls(graph=graph, cluster=cluster, invalid_action="raise")
    env.reset(seed=0)
    if action == 1:
        with pytest.raises(
            PlacementError,
            match=re.escape("node 0 ('gpu_op'): device 1 (cpu:0) cannot run it; allowed: [0, 2]"),
        ):
            env.step(action)
    else:
        assert env.step(action)[-1]["placement"].tolist() == [action]


@pytest.mark.parametrize("cls", ENVS)
def test_raise_refuses_a_device_that_cannot_hold_the_group_by_name(cls):
    from placerl.graph import CompGraph

    graph = CompGraph([{"name": f"n{i}", "cost": 1.0, "mem_bytes": 10.0} for i in range(2)])
    kwargs = {"init": "uniform"} if cls is PlacementRefineEnv else {}
    env = cls(graph=graph, cluster=homogeneous(2, memory=15.0), invalid_action="raise", **kwargs)
    env.reset(seed=0, options={"init": [0, 1]} if kwargs else None)
    if cls is PlacementEnv:
        env.step(0)  # n0 on device 0: n1 no longer fits there
    v = int(env.case.order[env._row])
    message = (
        f"node {v} ('n{v}'): device {1 - v} (gpu:{1 - v}) cannot hold its group "
        "(10 bytes, 5 free); allowed: ["
        if cls is PlacementRefineEnv
        else "node 1 ('n1'): device 0 (gpu:0) cannot hold its group (10 bytes, 5 free); "
        "allowed: [1]"
    )
    with pytest.raises(PlacementError, match=re.escape(message)):
        env.step(1 - v if cls is PlacementRefineEnv else 0)


def test_precomputed_references_must_match_the_graph_at_construction():
    other = reference("synthetic:chain?n=5", "gpu4_pcie")
    with pytest.raises(ConfigError, match="was computed for another graph than 'layered-n12-s1'"):
        build(reference=other)
    with pytest.raises(ConfigError, match="got 1 references for 2 graphs"):
        build(graph=[SMALL, "synthetic:chain?n=5"], reference=[other])


def test_start_from_best_wraps_only_the_refine_env():
    with pytest.raises(ConfigError, match="StartFromBest wraps placerl/PlacementRefine-v1"):
        StartFromBest(gym.make("placerl/Placement-v1", graph=SMALL))


@pytest.mark.parametrize("cls", ENVS)
def test_numpy_integer_seeds_are_accepted(cls):
    env = build(cls)
    a = env.reset(seed=np.int64(3))[0]
    np.testing.assert_array_equal(a["nodes"], env.reset(seed=3)[0]["nodes"])
