"""Gymnasium compliance and behaviour of every registered placement env."""

import itertools
import math

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

import placerl  # registers the ids
import placerl.envs
from placerl._env_ids import ENV_IDS, ENV_KINDS, PLACEMENT_ENVS, env_class
from placerl.baselines.list_scheduling import upward_rank
from placerl.baselines.problem import Problem
from placerl.cluster import homogeneous
from placerl.envs import SANITY_PROBLEMS, PlacementEnv, PlacementRefineEnv
from placerl.envs.case import NUM_BASE_FEATURES, PLACED, RANK
from placerl.envs.rewards import INFEASIBLE_FACTOR
from placerl.errors import EpisodeError
from placerl.graph import CompGraph, load_graph
from placerl.graph.folding import fold_repeats
from placerl.graph.orders import ORDERS
from placerl.sim import simulate
from tests.envs import assert_clone_resumes, masked_problem

# The measured ids run real models on worker processes: tests/measure/test_envs.py checks them;
# Parallelize-v1 decides configurations, not devices: tests/envs/test_parallelize.py (the
# checkers below run on every id).
IDS = sorted(
    env_id
    for env_id, spec in gym.registry.items()
    if env_id.startswith("placerl/") and not spec.nondeterministic and "Parallelize" not in env_id
)
SMALL = "synthetic:layered?n=12&seed=1"


def make(env_id, **kwargs):
    if "Sanity" not in env_id:
        kwargs.setdefault("graph", SMALL)
        kwargs.setdefault("cluster", "gpu4_pcie")
    return gym.make(env_id, **kwargs)


def random_allowed(env, rng):
    """A uniformly random action among those the env's mask allows (what a masked algorithm
    takes; tests/envs/test_invalid_actions.py checks the others)."""
    space, mask = env.unwrapped.action_space, env.unwrapped.action_masks()
    if isinstance(space, gym.spaces.MultiDiscrete):  # one choice per row
        rows = mask.reshape(len(space.nvec), -1)
        return np.array([rng.choice(np.flatnonzero(row)) for row in rows])
    return int(rng.choice(np.flatnonzero(mask)))


def rollout(env, seed, actions=None):
    obs, info = env.reset(seed=seed)
    trace = [obs]
    rewards = []
    rng = np.random.default_rng(0)
    for t in itertools.count():
        action = actions[t] if actions else random_allowed(env, rng)
        obs, reward, terminated, truncated, info = env.step(action)
        trace.append(obs)
        rewards.append(reward)
        if terminated or truncated:
            return trace, rewards, info


def test_ids_are_registered():
    assert {"placerl/Placement-v1", "placerl/PlacementRefine-v1", "placerl/SanityChain-v1"} <= set(
        IDS
    )


def checker_arguments(env_id):
    """The arguments each id's checks run with: the small masked problem, where every env's
    masks rule actions out (so that the checkers' unmasked samples meet ``invalid_action``),
    under both objectives; the sanity ids and Parallelize-v1 on their own problems. The
    measured ids run on the simulator here, over every order: they are the construct and
    refine envs with another objective, whose real runs tests/measure/test_envs.py checks."""
    if "Sanity" in env_id or "Parallelize" in env_id:
        return [{}]
    if "Measured" in env_id:
        return [{"objective": "step_time"}]
    graph, cluster = masked_problem()
    return [
        {"graph": graph, "cluster": cluster, "objective": objective}
        for objective in ("step_time", "pipeline")
    ]


@pytest.mark.parametrize("order", sorted(ORDERS))
@pytest.mark.parametrize("env_id", [env_id for env_id, _, _ in ENV_IDS])
def test_gymnasium_and_sb3_checkers_pass_with_no_extra_arguments(env_id, order):
    """The checkers step with unmasked ``action_space.sample()``: the default
    ``invalid_action`` (``nearest``) takes what the masks rule out."""
    for kwargs in checker_arguments(env_id):
        env = gym.make(env_id, order=order, **kwargs)
        gym_check_env(env.unwrapped, skip_render_check=True)
        sb3_check_env(env.unwrapped, warn=False)


@pytest.mark.filterwarnings("ignore:.*is out of date:DeprecationWarning")
@pytest.mark.parametrize("env_id", [env_id for env_id, _, _ in ENV_IDS])
def test_every_id_is_v1_and_its_v0_names_it(env_id):
    """Gymnasium refuses a removed older version of a registered name, naming the new id."""
    assert env_id.endswith("-v1") and env_id.replace("-v1", "-v0") not in gym.registry
    with pytest.raises(gym.error.DeprecatedEnv, match=f"Please use `{env_id}` instead"):
        gym.make(env_id.replace("-v1", "-v0"))


@pytest.mark.filterwarnings("ignore:.*is out of date:DeprecationWarning")
def test_placement_v0_names_placement_v1():
    with pytest.raises(gym.error.DeprecatedEnv, match="placerl/Placement-v1"):
        gym.make("placerl/Placement-v0")


def _camel(kind):
    return "" if kind == "construct" else "".join(w.capitalize() for w in kind.split("_"))


@pytest.mark.parametrize(("kind", "row"), PLACEMENT_ENVS.items())
def test_kind_id_and_class_follow_one_naming_rule(kind, row):
    """Kind ``k`` <-> id ``placerl/Placement<K>-v1`` <-> class ``Placement<K>Env``, in one
    table; the envs package exports every class under that name and no other."""
    env_id, entry = row
    cls = env_class(kind)
    assert env_id == ENV_KINDS[kind] == f"placerl/Placement{_camel(kind)}-v1"
    assert entry.endswith(f":Placement{_camel(kind)}Env") and cls.__name__ == entry.split(":")[1]
    assert cls.kind == kind and getattr(placerl.envs, cls.__name__) is cls
    assert gym.spec(env_id).entry_point == entry
    old = {
        "dual": "DualPlacementEnv",
        "one_shot": "OneShotPlacementEnv",
        "hierarchical": "HierarchicalPlacementEnv",
    }.get(kind)
    assert old is None or not hasattr(placerl.envs, old)


@pytest.mark.parametrize("env_id", IDS)
def test_same_seed_same_episode(env_id):
    kwargs = {"init": "uniform"} if "Refine" in env_id else {}
    a = rollout(make(env_id, **kwargs), seed=7)
    b = rollout(make(env_id, **kwargs), seed=7)
    assert a[1] == b[1]
    for x, y in zip(a[0], b[0], strict=True):
        for key in x:
            np.testing.assert_array_equal(x[key], y[key])
    np.testing.assert_array_equal(a[2]["placement"], b[2]["placement"])


@pytest.mark.parametrize("env_id", IDS)
def test_pickle_round_trip_mid_episode(env_id):
    env = make(env_id)
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    if "OneShot" not in env_id:  # a one-shot episode ends with its first step
        env.step(random_allowed(env, rng))
    assert_clone_resumes(env, lambda: random_allowed(env, rng), steps=3)


def test_vector_envs_and_wrappers():
    vec = gym.make_vec("placerl/Placement-v1", num_envs=2, vectorization_mode="sync", graph=SMALL)
    obs, _ = vec.reset(seed=0)
    assert obs["nodes"].shape == (2, 12, NUM_BASE_FEATURES + 3)
    obs, reward, *_ = vec.step(np.array([0, 1]))
    assert reward.shape == (2,)
    vec.close()
    limited = make("placerl/PlacementRefine-v1", max_episode_steps=3)
    limited.reset(seed=0)
    outcomes = [limited.step(0) for _ in range(3)]
    assert outcomes[-1][3] is True  # TimeLimit truncates
    mask = limited.get_wrapper_attr("action_masks")()
    assert mask.dtype == bool and mask.shape == (4,)


def test_sb3_vec_envs_including_subprocesses():
    dummy = DummyVecEnv([lambda: make("placerl/Placement-v1")] * 2)
    dummy.reset()
    dummy.step(np.array([0, 1]))
    masks = dummy.env_method("action_masks")
    assert len(masks) == 2 and masks[0].dtype == bool
    from placerl._processes import start_method

    # placerl's own start method (a fork server that imported torch; spawn where there is
    # none): the env factories are pickled either way, as in training
    sub = SubprocVecEnv(
        [lambda: make("placerl/PlacementRefine-v1")] * 2, start_method=start_method()
    )
    try:
        sub.reset()
        _, rewards, _, infos = sub.step(np.array([1, 2]))
        assert rewards.shape == (2,) and "runtime" in infos[0]
    finally:
        sub.close()


def test_maskable_ppo_finds_action_masks():
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported

    vec = DummyVecEnv([lambda: make("placerl/SanityMemory-v1")])
    assert is_masking_supported(vec)
    vec.reset()
    assert get_action_masks(vec).shape == (1, 2)


# ------------------------------------------------------------------- observations
def test_observation_rows_follow_the_traversal_order():
    g = load_graph(SMALL)
    topo = PlacementEnv(graph=g, order="topo")
    alpha = PlacementEnv(graph=g, order="random")
    a, _ = topo.reset(seed=0)
    b, _ = alpha.reset(seed=0)
    assert not np.array_equal(a["nodes"], b["nodes"])
    # the same node set: rows are a permutation of each other
    np.testing.assert_allclose(np.sort(a["nodes"][:, 0]), np.sort(b["nodes"][:, 0]))
    order = topo.case.order
    np.testing.assert_allclose(
        a["nodes"][:, 0], g.arrays.cost[order] / g.arrays.cost.max(), rtol=1e-6
    )
    assert a["current"][0] == 1.0 and a["nodes"][0, 7] == 1.0
    # edges index rows: edge (u, v) appears as (row_of[u], row_of[v])
    rows = a["edge_index"][:, : g.num_edges]
    np.testing.assert_array_equal(order[rows[0]], g.arrays.src)


def test_observation_updates_and_fresh_arrays():
    env = PlacementEnv(graph=SMALL, cluster="gpu4_pcie", max_nodes=20, max_edges=40)
    obs, _ = env.reset(seed=0)
    assert obs["node_mask"].sum() == 12 and obs["node_mask"][12:].sum() == 0
    assert obs["edge_mask"].sum() == load_graph(SMALL).num_edges
    obs["nodes"][:] = 5.0
    after, *_ = env.step(2)
    assert after["nodes"].max() <= 1.0
    assert after["nodes"][0, NUM_BASE_FEATURES + 2] == 1.0 and after["nodes"][0, PLACED] == 1.0
    assert after["current"][1] == 1.0 and after["current"].sum() == 1.0
    assert env.observation_space.contains(after)


def test_refine_start_time_feature_is_relative_to_current_node():
    env = PlacementRefineEnv(graph=SMALL, cluster="gpu4_pcie", init="uniform")
    obs, info = env.reset(seed=1)
    result = simulate(env.case.graph, env.placement, env.cluster)
    order = env.case.order
    expected = (result.start[order] - result.start[order[0]]) / result.runtime
    np.testing.assert_allclose(obs["nodes"][:12, 8], expected, rtol=1e-5, atol=1e-7)
    assert info["runtime"] == pytest.approx(result.runtime)


def test_refine_leaving_a_node_in_place_reuses_the_simulation(monkeypatch):
    env = PlacementRefineEnv(
        graph=SMALL, cluster="gpu4_pcie", init="uniform", reward="normalized_delta"
    )
    env.reset(seed=1)
    calls = []
    evaluate = env.case.model.evaluate
    monkeypatch.setattr(
        env.case.model, "evaluate", lambda *a, **k: calls.append(1) or evaluate(*a, **k)
    )
    v = int(env.case.order[0])
    _, reward, _, _, info = env.step(int(env.placement[v]))
    assert calls == [] and reward == 0.0
    assert info["runtime"] == pytest.approx(
        simulate(env.case.graph, env.placement, env.cluster).runtime
    )
    moved = (int(env.placement[int(env.case.order[1])]) + 1) % env.num_devices
    env.step(moved)
    assert calls == [1]


def _runtime_if(env, device):
    placement = env.placement.copy()
    placement[env.case.members[int(env.case.order[env._row])]] = device
    return simulate(env.case.graph, placement, env.cluster).runtime


def test_best_move_is_the_device_of_one_best_improvement_step():
    env = PlacementRefineEnv(graph=SMALL, cluster="gpu4_pcie", init="uniform")
    checked = moved = 0
    for seed in range(3):
        env.reset(seed=seed)
        done = False
        while not done:
            simulations, placement = env.simulations, env.placement.copy()
            best = env.best_move()
            assert env.simulations == simulations  # on a copy: the env is as it was
            np.testing.assert_array_equal(env.placement, placement)
            runtimes = {d: _runtime_if(env, d) for d in np.flatnonzero(env.action_masks())}
            current = int(env.placement[int(env.case.order[env._row])])
            assert runtimes[best] == pytest.approx(min(runtimes.values()))
            if best != current:  # a move only when strictly faster than staying
                assert runtimes[best] < runtimes[current]
                moved += 1
            assert env.keeps_placement(best) == (best == current)
            _, _, done, _, _ = env.step(best)
            checked += 1
    assert checked == 36 and moved > 0


def _fresh_twin(env, **kwargs):
    """An env reset to ``env``'s placement and step: what its observation must be."""
    twin = PlacementRefineEnv(
        graph=env.case.graph, cluster=env.cluster, objective=env.objective, **kwargs
    )
    twin.reset(seed=0, options={"init": env.placement})
    twin._t = env._t
    twin._focus(int(twin.case.steps[twin._t]))
    return twin


@pytest.mark.parametrize("kick", [0, 1, 3, 50])
def test_kick_moves_that_many_units_of_the_start_to_other_devices(kick):
    g = CompGraph(
        [{"name": f"n{i}", "cost": 1.0, "group": "g" if i in (0, 5) else None} for i in range(8)],
        [(f"n{i}", f"n{i + 1}") for i in range(7)],
    )
    start = np.zeros(8, dtype=np.int64)
    env = PlacementRefineEnv(graph=g, cluster=homogeneous(3), kick=kick)
    units = 7  # n0 and n5 form one colocation group
    for seed in range(5):
        _, info = env.reset(seed=seed, options={"init": start})
        moved = env.placement != start
        assert env.placement[0] == env.placement[5]  # a group moves as one unit
        assert moved.sum() - moved[5] == min(kick, units)  # each to another device
        assert info["runtime"] == pytest.approx(env.case.model.runtime(env.placement))
        twin = PlacementRefineEnv(graph=g, cluster=homogeneous(3))
        twin.reset(seed=seed, options={"init": env.placement})
        for key, value in twin._observation().items():
            np.testing.assert_array_equal(env._observation()[key], value, err_msg=key)
        again = PlacementRefineEnv(graph=g, cluster=homogeneous(3), kick=kick)
        again.reset(seed=seed, options={"init": start})
        np.testing.assert_array_equal(again.placement, env.placement)  # seeded


def test_kick_skips_a_unit_no_other_device_can_run():
    from placerl.cluster import Cluster, Device

    g = CompGraph(
        [{"name": "a", "cost": 1.0, "costs": {"b": math.inf}}, {"name": "b", "cost": 1.0}]
    )
    cluster = Cluster((Device("A", kind="a"), Device("B", kind="b")), comm_model="ideal")
    env = PlacementRefineEnv(graph=g, cluster=cluster, kick=2)
    env.reset(seed=0, options={"init": [0, 0]})
    assert env.placement.tolist() == [0, 1]


@pytest.mark.parametrize("objective", ["step_time", "pipeline"])
@pytest.mark.parametrize("undo", [False, True])
def test_undo_worse_undoes_exactly_the_moves_that_slow_the_placement(undo, objective):
    kwargs = {"init": "uniform", "objective": objective}
    env = PlacementRefineEnv(graph=SMALL, cluster="gpu4_pcie", undo_worse=undo, **kwargs)
    rng = np.random.default_rng(0)
    undone = 0
    for seed in range(4):
        obs, info = env.reset(seed=seed)
        start, done = info["runtime"], False
        while not done:
            before, placement = info["runtime"], env.placement.copy()
            node = int(env.case.order[env._row])
            action = int(rng.integers(env.num_devices))
            moved_to = placement.copy()
            moved_to[node] = action
            slower = env.case.model.runtime(moved_to) > before * (1 + 1e-12)
            simulations = env.simulations
            obs, reward, done, _, info = env.step(action)
            assert env.simulations == simulations + (action != placement[node])
            if undo and slower:
                undone += 1
                assert info["undone"] and reward == 0.0 and info["runtime"] == before
                np.testing.assert_array_equal(env.placement, placement)
            else:
                assert "undone" not in info
            assert info["runtime"] == pytest.approx(env.case.model.runtime(env.placement))
            if not done:  # every observation array as a fresh env's at this placement
                twin = _fresh_twin(env, init="uniform")
                for key, value in twin._observation().items():
                    np.testing.assert_allclose(obs[key], value, rtol=1e-5, atol=1e-6, err_msg=key)
                np.testing.assert_array_equal(env.action_masks(), twin.action_masks())
        assert info["runtime"] <= start or not undo
    assert (undone > 0) == undo


def test_keeps_placement_needs_an_episode():
    env = PlacementRefineEnv(graph=SMALL, cluster="gpu4_pcie")
    with pytest.raises(EpisodeError, match="reset"):
        env.keeps_placement(0)


def test_short_refine_episodes_start_at_a_drawn_node_and_go_on_in_order():
    env = PlacementRefineEnv(graph=SMALL, cluster="gpu4_pcie", init="uniform", moves=5)
    firsts = set()
    for seed in range(6):
        obs, _ = env.reset(seed=seed)
        first = int(np.argmax(obs["current"]))
        firsts.add(first)
        visited, done, steps = [first], False, 0
        while not done:
            obs, _, done, truncated, _ = env.step(int(env.action_masks().argmax()))
            steps += 1
            if not done:
                visited.append(int(np.argmax(obs["current"])))
        assert steps == 5 and not truncated
        assert visited == [(first + k) % 12 for k in range(5)]  # rows in order, wrapping
    assert len(firsts) > 1  # the start is drawn, not always the first node


# ------------------------------------------------------------------------ rewards
def test_refine_reward_is_positive_when_the_placement_gets_faster():
    problem = SANITY_PROBLEMS["branches"]
    env = PlacementRefineEnv(graph=problem.graph, cluster=problem.cluster, order="topo")
    env.reset(seed=0)  # starts on one device: 4e-2 s
    names = env.case.graph.names
    rewards = {}
    for t in range(env.case.graph.num_nodes):
        node = names[env.case.order[t]]
        _, reward, *_ = env.step(1 if node.startswith("r") else 0)
        rewards[node] = reward
    assert rewards["r1"] > 0 or rewards["r0"] > 0
    assert sum(rewards.values()) == pytest.approx((4e-2 - 2e-2) / 4e-2)
    # and moving back is punished
    env.reset(seed=0)
    assert env.placement.tolist() == [0] * 6


def test_construct_rewards_sum_to_the_final_improvement():
    for reward in ("normalized_delta", "improvement", "log_speedup", "runtime_delta"):
        env = PlacementEnv(graph=SMALL, cluster="gpu4_pcie", reward=reward)
        _, rewards, info = rollout(env, seed=0)
        ref, final = info["reference_runtime"], info["runtime"]
        expected = {
            "normalized_delta": (ref - final) / ref,
            "improvement": (ref - final) / ref,
            "log_speedup": math.log(ref / final),
            "runtime_delta": ref - final,
        }[reward]
        assert sum(rewards) == pytest.approx(expected, rel=1e-9, abs=1e-12)
        if reward in ("improvement", "log_speedup"):
            assert all(r == 0 for r in rewards[:-1])


def test_info_reports_runtimes_and_final_placement():
    env = PlacementEnv(graph=SMALL, cluster="gpu4_pcie")
    _, info = env.reset(seed=0)
    assert info["action_mask"].dtype == np.int8 and "runtime" not in info
    _, _, info = rollout(env, seed=0, actions=[0] * 12)
    assert info["placement"].tolist() == [0] * 12
    assert info["runtime"] == pytest.approx(simulate(env.case.graph, [0] * 12, env.cluster).runtime)
    assert info["single_device_runtime"] == info["reference_runtime"]
    assert info["graph_index"] == 0 and "best_runtime" not in info  # history is a wrapper's


def test_colocation_groups_move_together():
    g = CompGraph(
        [
            {"name": "f", "cost": 1.0, "group": "g"},
            {"name": "x", "cost": 1.0},
            {"name": "b", "cost": 1.0, "group": "g"},
        ],
        [("f", "x"), ("x", "b")],
    )
    env = PlacementEnv(graph=g, cluster=homogeneous(2))
    env.reset(seed=0)
    env.step(1)
    assert env.placement.tolist() == [1, -1, 1]
    env.step(0)
    _, _, done, _, info = env.step(0)  # moves f with b
    assert done and info["placement"].tolist() == [0, 0, 0]


# ------------------------------------------------------------------------- memory
def test_memory_mask_and_stuck_episodes():
    env = gym.make("placerl/SanityMemory-v1")
    _, info = env.reset(seed=0)
    env.step(0)
    _, _, _, _, info = env.step(0)  # 12 GiB on device 0: op2 no longer fits there
    assert info["action_mask"].tolist() == [0, 1]
    too_big = CompGraph(
        [
            {"name": "a", "cost": 1.0, "mem_bytes": 10.0},
            {"name": "b", "cost": 1.0, "mem_bytes": 10.0},
        ]
    )
    stuck = PlacementEnv(graph=too_big, cluster=homogeneous(2, memory=15.0))
    _, info = stuck.reset(seed=0)
    _obs, reward, done, _, info = stuck.step(0)
    assert not done and info["action_mask"].tolist() == [0, 1]
    tiny = PlacementEnv(graph=too_big, cluster=homogeneous(1, memory=15.0))
    tiny.reset(seed=0)
    _, reward, done, _, info = tiny.step(0)
    assert done and info["infeasible"] is True
    assert reward == pytest.approx(math.log(1 / 3))  # runtime 3x the reference


def test_refine_episodes_that_cannot_go_on_end_with_the_penalty():
    chain = CompGraph(
        [{"name": f"n{i}", "cost": 1.0, "mem_bytes": 10.0} for i in range(3)],
        [("n0", "n1"), ("n1", "n2")],
    )
    env = PlacementRefineEnv(
        graph=chain, cluster=homogeneous(2, memory=15.0), reward="log_speedup", init="single_device"
    )
    _, info = env.reset(seed=0)  # all on one device: 30 bytes on 15, infeasible
    assert info["feasible"] is False and info["action_mask"].tolist() == [0, 1]
    _, reward, done, _, info = env.step(1)  # n0 moves; n1 fits nowhere now (10 + 10 > 15)
    assert done and info["infeasible"] is True and info["feasible"] is False
    assert reward == pytest.approx(math.log(1 / (INFEASIBLE_FACTOR + 1)))
    assert info["runtime"] == pytest.approx((INFEASIBLE_FACTOR + 1) * info["reference_runtime"])


@pytest.mark.parametrize("cls", [PlacementEnv, PlacementRefineEnv])
def test_a_first_node_that_fits_nowhere_still_gets_a_move(cls):
    huge = CompGraph(
        [{"name": "m", "cost": 1.0, "mem_bytes": 9.0}, {"name": "x", "cost": 1.0}], [("m", "x")]
    )
    env = cls(graph=huge, cluster=homogeneous(2, memory=4.0))
    _, info = env.reset(seed=0)
    assert info["action_mask"].tolist() == [1, 1]  # runnable devices, scored by the penalty
    *_, info = env.step(0)
    assert info.get("feasible") in (False, None)


def test_info_reports_feasibility_with_every_runtime():
    env = PlacementRefineEnv(graph=SMALL, cluster="gpu4_pcie")
    _, info = env.reset(seed=0)
    assert info["feasible"] is True
    _, _, _, _, info = env.step(1)
    assert info["feasible"] is True


def test_penalty_mode_scores_infeasible_placements():
    g = CompGraph(
        [
            {"name": "a", "cost": 1.0, "mem_bytes": 10.0},
            {"name": "b", "cost": 1.0, "mem_bytes": 10.0},
        ]
    )
    env = PlacementEnv(graph=g, cluster=homogeneous(2, memory=15.0), memory="penalty")
    env.reset(seed=0)
    assert env.action_masks().all()
    env.step(0)
    _, reward, done, _, info = env.step(0)
    assert done and info["runtime"] > 2 * info["reference_runtime"] and reward < 0


# -------------------------------------------------------------------- sanity envs
@pytest.mark.parametrize("name", sorted(SANITY_PROBLEMS))
def test_sanity_optimum_by_brute_force(name):
    problem = SANITY_PROBLEMS[name]
    g, c = problem.graph, problem.cluster
    best = min(
        simulate(g, p, c).runtime
        for p in itertools.product(range(c.num_devices), repeat=g.num_nodes)
        if simulate(g, p, c).feasible
    )
    assert best == pytest.approx(problem.optimal_runtime, rel=1e-12)
    env = gym.make(f"placerl/Sanity{name.capitalize()}-v1")
    _, info = env.reset(seed=0)
    assert info["optimal_runtime"] == problem.optimal_runtime


# ------------------------------------------------------------------------- render
def test_render_modes():
    env = PlacementEnv(graph=SMALL, cluster="gpu4_pcie", render_mode="ansi")
    env.reset(seed=0)
    env.step(1)
    text = env.render()
    assert "1/12 nodes placed" in text and "gpu:1" in text
    rgb = PlacementRefineEnv(graph=SMALL, cluster="gpu4_pcie", render_mode="rgb_array")
    rgb.reset(seed=0)
    image = rgb.render()
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 3
    # every node starts on gpu:0; the legend still shows the other devices' colours
    import matplotlib.pyplot as plt

    for d in range(4):
        colour = np.array(plt.get_cmap("tab10")(d)[:3]) * 255
        assert (np.abs(image.astype(float) - colour).max(axis=2) < 3).any(), d


def test_graph_lists_sample_one_graph_per_episode():
    env = PlacementEnv(
        graph=["synthetic:chain?n=5", SMALL, "msr:bert24_inference"], cluster="gpu4_pcie"
    )
    assert env.max_nodes == 32
    seen = {env.reset(seed=s)[1]["graph"] for s in range(12)}
    assert len(seen) == 3


@pytest.mark.parametrize("objective", ["step_time", "pipeline"])
@pytest.mark.parametrize("env_id", ["placerl/Placement-v1", "placerl/PlacementRefine-v1"])
def test_fold_visits_first_copies_only_and_ties_every_copy(env_id, objective):
    graph = load_graph("zoo:transformer?variant=bert_tiny&training=true")
    env = make(env_id, graph=graph, objective=objective, fold=True)
    gym_check_env(env.unwrapped, skip_render_check=True)
    trace, _, info = rollout(env, seed=2)
    folding = fold_repeats(graph)
    assert len(trace) - 1 == folding.num_decisions  # one step per node of the folded graph
    copies = next(iter(folding.blocks.values()))
    for copy in copies[1:]:
        np.testing.assert_array_equal(info["placement"][copy], info["placement"][copies[0]])
    full = simulate(graph, info["placement"], "gpu4_pcie", objective)
    assert info["runtime"] == pytest.approx(full.runtime, rel=1e-9)
    assert env.unwrapped.settings()["fold"] is True


def test_fold_must_be_a_bool():
    with pytest.raises(placerl.errors.ConfigError, match="fold must be True or False, got 1"):
        make("placerl/Placement-v1", fold=1)


@pytest.mark.parametrize(
    ("cls", "kwargs", "per_episode"),
    [
        (PlacementEnv, {"reward": "log_speedup"}, lambda n, moved: 1),
        (PlacementEnv, {"reward": "normalized_delta"}, lambda n, moved: n),
        (PlacementRefineEnv, {}, lambda n, moved: 1 + moved),  # the start, then each move
    ],
    ids=["construct-sparse", "construct-dense", "refine"],
)
def test_envs_count_their_simulations(cls, kwargs, per_episode):
    env = cls("synthetic:layered?n=12&seed=0", "placeto?n_devices=3", **kwargs)
    rng = np.random.default_rng(0)
    for episode in range(1, 3):
        before = env.simulations
        env.reset(seed=episode)
        done, moved, n = False, 0, env.case.graph.num_nodes
        while not done:
            node = int(env.case.order[int(np.argmax(env._observation()["current"]))])
            action = int(rng.choice(np.flatnonzero(env.action_masks())))
            moved += int(env.placement[node] != action)
            done = env.step(action)[2]
        assert env.simulations - before == per_episode(n, moved)


@pytest.mark.parametrize("order", ["topo", "reverse_topo", "bfs"])
def test_the_rank_column_is_heft_priority_in_row_order(order):
    """Column RANK is every node's upward rank over the largest: HEFT's priority, a global
    quantity that a few rounds of message passing cannot compute."""
    env = PlacementEnv(graph=SMALL, cluster="gpu4_pcie", order=order)
    obs, _ = env.reset(seed=0)
    rank = upward_rank(Problem(env.case.graph, env.cluster, env.objective))
    np.testing.assert_allclose(
        obs["nodes"][:12, RANK], (rank / rank.max())[env.case.order], rtol=1e-6
    )
    assert obs["nodes"][:12, RANK].max() == 1.0
