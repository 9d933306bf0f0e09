"""The ``devices`` observation: what HEFT sees, checked by hand and against its definitions."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placerl.baselines.list_scheduling import ListSchedule
from placerl.baselines.problem import Problem
from placerl.baselines.references import reference
from placerl.cluster import homogeneous, load_cluster
from placerl.envs import PlacementEnv, PlacementRefineEnv
from placerl.envs.device_features import (
    ALLOWED,
    CLIP,
    DURATION,
    EARLIEST,
    FINISH,
    FINISH_GAP,
    FINISH_RANK,
    LOAD,
    MEMORY,
    NUM_DEVICE_FEATURES,
    START,
    TRANSFER,
)
from placerl.envs.dual import PlacementDualEnv
from placerl.envs.sanity import SanityEnv
from placerl.graph import CompGraph
from placerl.graph import load_graph as load_graph_spec


def _fork():
    """a -> b, a -> c with 1 MB tensors; 1 ms ops; 1 GB/s links (1 ms per transfer)."""
    nodes = [{"name": x, "cost": 1e-3, "out_bytes": 1e6, "mem_bytes": 1e9} for x in "abc"]
    graph = CompGraph(nodes, [("a", "b"), ("a", "c")], name="fork")
    cluster = homogeneous(2, bandwidth=1e9, memory=4e9, comm_model="ideal")
    return graph, cluster


def test_heft_figures_by_hand():
    graph, cluster = _fork()
    env = PlacementEnv(graph=graph, cluster=cluster, order="topo")
    obs, _ = env.reset(seed=0)
    assert obs["devices"].shape == (2, NUM_DEVICE_FEATURES)
    np.testing.assert_allclose(obs["devices"][:, DURATION], 1 / 3)  # 1 ms of a 3 ms scale
    np.testing.assert_allclose(obs["devices"][:, [LOAD, MEMORY, TRANSFER, START]], 0)
    obs, *_ = env.step(0)  # a on device 0; next b
    d = obs["devices"]
    np.testing.assert_allclose(d[:, LOAD], [1 / 3, 0])
    np.testing.assert_allclose(d[:, MEMORY], [0.25, 0])
    np.testing.assert_allclose(d[:, TRANSFER], [0, 1 / 3])  # 1 MB over 1 GB/s from device 0
    np.testing.assert_allclose(d[:, START], [1 / 3, 2 / 3])  # device 0 free at 1 ms; data at 2 ms
    np.testing.assert_allclose(d[:, FINISH], [2 / 3, 1])
    np.testing.assert_allclose(d[:, FINISH_GAP], [0, 1 / 3])
    np.testing.assert_allclose(d[:, ALLOWED], 1)
    np.testing.assert_allclose(d[:, FINISH_RANK], [0, 1])  # scale-free: earliest 0, latest 1
    np.testing.assert_allclose(d[:, EARLIEST], [1, 0])
    obs, *_ = env.step(0)  # b on device 0 too; next c: device 0 is busy until 2 ms
    np.testing.assert_allclose(obs["devices"][:, START], [2 / 3, 2 / 3])
    np.testing.assert_allclose(obs["devices"][:, LOAD], [2 / 3, 0])
    np.testing.assert_allclose(obs["devices"][:, FINISH_RANK], [0, 0])  # a tie
    np.testing.assert_allclose(obs["devices"][:, EARLIEST], [1, 1])


def test_inputs_are_sent_in_heft_order_whatever_the_edge_list_order():
    """b -> c listed before a -> c, under ``placeto`` (one channel per device): a and b on
    device 0, c on device 1. HEFT sends a's output first (its inputs go by producer), so it
    reaches device 1 at 2 ms, not behind b's at 4 ms, and d (a's other consumer) can start
    there at 2 ms."""
    nodes = [{"name": x, "cost": 1e-3, "out_bytes": 1e6} for x in "abcd"]
    graph = CompGraph(nodes, [("b", "c"), ("a", "c"), ("a", "d")], name="sends")
    cluster = homogeneous(2, bandwidth=1e9, comm_model="placeto")
    env = PlacementEnv(graph=graph, cluster=cluster, order=lambda g, rng: np.arange(4))
    env.reset(seed=0)
    schedule = ListSchedule(Problem(graph, cluster, env.objective))
    for v, device in enumerate([0, 0, 1]):
        schedule.commit(v, device, schedule.earliest_start(v, device, insertion=True))
        obs, *_ = env.step(device)
    heft = [schedule.earliest_start(3, d, insertion=True) for d in range(2)]
    np.testing.assert_allclose(heft, [2e-3, 2e-3])  # device 0 frees at 2 ms; a's output too
    np.testing.assert_allclose(obs["devices"][:, START] * env.case.device_tables.time_scale, heft)


def test_a_group_visited_again_leaves_its_first_device():
    """Construct mode visits every member of a colocation group, and each visit moves the whole
    group: the list schedule books it once, on the device of its latest visit."""
    nodes = [
        {"name": "a", "cost": 1e-3, "group": "g"},
        {"name": "b", "cost": 1e-3, "group": "g"},
        {"name": "c", "cost": 1e-3},
    ]
    graph = CompGraph(nodes, [], name="group")
    env = PlacementEnv(
        graph=graph, cluster=homogeneous(2, comm_model="ideal"), order=lambda g, rng: np.arange(3)
    )
    env.reset(seed=0)
    env.step(0)  # the group on device 0
    env.step(1)  # b's visit moves it to device 1
    starts = env._observation()["devices"][:, START]
    np.testing.assert_allclose(starts * env.case.device_tables.time_scale, [0.0, 2e-3])
    np.testing.assert_array_equal(env._device_state.busy_count, [0, 1])


def test_a_node_fills_an_idle_gap_as_heft_inserts_it():
    """x -> y and a free-standing z, placed x, y, z: y waits 1 ms for x's output on device 1,
    and z, placed after it, starts in that gap (insertion) rather than after y."""
    nodes = [
        {"name": "x", "cost": 1e-3, "out_bytes": 1e6},
        {"name": "y", "cost": 1e-3, "out_bytes": 1e6},
        {"name": "z", "cost": 5e-4, "out_bytes": 1e6},
    ]
    graph = CompGraph(nodes, [("x", "y")], name="gap")
    cluster = homogeneous(2, bandwidth=1e9, comm_model="ideal")
    env = PlacementEnv(graph=graph, cluster=cluster, order=lambda g, rng: np.arange(3))
    env.reset(seed=0)
    env.step(0)  # x on device 0 from 0 to 1 ms
    env.step(1)  # y on device 1 from 2 ms (x's output arrives) to 3 ms
    obs = env._observation()
    scale = 2.5e-3
    np.testing.assert_allclose(obs["devices"][:, START], [1e-3 / scale, 0.0])  # z: in the gap
    np.testing.assert_allclose(obs["devices"][:, FINISH], [1.5e-3 / scale, 5e-4 / scale])


def test_memory_mask_shows_as_not_allowed():
    env = SanityEnv("memory")
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(0)
    obs, *_ = env.step(0)  # 12 GiB on device 0: the third 6 GiB op fits only on device 1
    np.testing.assert_array_equal(obs["devices"][:, ALLOWED], [0, 1])
    np.testing.assert_array_equal(obs["devices"][:, ALLOWED], env.action_masks())


def test_refine_counts_the_node_out_of_its_own_device():
    graph, cluster = _fork()
    env = PlacementRefineEnv(graph=graph, cluster=cluster, order="topo", init="single_device")
    obs, _ = env.reset(seed=0)  # everything on device 0, focus on a
    d = obs["devices"]
    np.testing.assert_allclose(d[:, LOAD], [2 / 3, 0])  # b and c, not a itself
    np.testing.assert_allclose(d[:, TRANSFER], [0, 2 / 3])  # moving a sends both outputs
    obs, *_ = env.step(0)  # focus on b: its input a finished at 1 ms in the simulation
    np.testing.assert_allclose(obs["devices"][:, START], [1 / 3, 2 / 3])


@pytest.mark.parametrize("cls", [PlacementEnv, PlacementRefineEnv])
@pytest.mark.parametrize("objective", ["step_time", "pipeline"])
def test_features_in_every_mode_stay_in_the_box(cls, objective):
    env = cls(
        graph="synthetic:layered?n=40&seed=3", cluster="cpu_gpu?n_gpus=2", objective=objective
    )
    space = env.observation_space["devices"]
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    for _ in range(60):
        assert space.contains(obs["devices"])
        obs, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        if done:
            obs, _ = env.reset()


def test_flat_observation_scales_edge_rows():
    graph_env = PlacementEnv(graph="synthetic:layered?n=27&seed=0")
    flat_env = PlacementEnv(graph="synthetic:layered?n=27&seed=0", observation="flat")
    graph_obs, _ = graph_env.reset(seed=0)
    flat_obs, _ = flat_env.reset(seed=0)
    assert flat_env.observation_space["edge_index"].dtype == np.float32
    assert flat_env.observation_space.contains(flat_obs)
    np.testing.assert_allclose(flat_obs["edge_index"] * 26, graph_obs["edge_index"], atol=1e-5)
    for key in ("nodes", "devices", "current", "node_mask"):
        np.testing.assert_array_equal(flat_obs[key], graph_obs[key])


def test_unknown_observation_mode():
    from placerl.errors import ConfigError

    with pytest.raises(ConfigError, match="observation must be one of graph, flat, got 'image'"):
        PlacementEnv(observation="image")


def _reference_block(state, members, placement, resident, mem_bytes, mask, starts):
    """The features as plain numpy, from their definitions and the ``starts`` of the group on
    each device (the compiled kernel's twin)."""
    t = state.tables
    scale, n_dev = t.time_scale, len(state.load)
    duration = t.durations[members].sum(axis=0)
    own_load, own_mem = np.zeros(n_dev), np.zeros(n_dev)
    for m in members:
        if placement[m] >= 0:
            own_load[placement[m]] += t.durations[m, placement[m]]
            own_mem[placement[m]] += mem_bytes[m]
    transfer = np.zeros(n_dev)
    node = int(members[0])
    for k in range(t.in_ptr[node], t.in_ptr[node + 1]):
        src, e = t.in_src[k], t.in_edge[k]
        if placement[src] >= 0:
            for d in range(n_dev):
                transfer[d] += _seconds(t, e, placement[src], d)
    for k in range(t.out_ptr[node], t.out_ptr[node + 1]):
        dst, e = t.out_dst[k], t.out_edge[k]
        if placement[dst] >= 0:
            for d in range(n_dev):
                transfer[d] += _seconds(t, e, d, placement[dst])
    finish = starts + duration
    allowed = mask if mask.any() else np.ones_like(mask)
    best, worst = finish[allowed].min(), finish[allowed].max()
    with np.errstate(invalid="ignore", divide="ignore"):
        rank = np.where(allowed, (finish - best) / (worst - best) if worst > best else 0.0, 1.0)
    columns = [
        duration / scale,
        (state.load - own_load) / scale,
        (resident - own_mem) / state.capacity,
        transfer / scale,
        starts / scale,
        finish / scale,
        (finish - best) / scale,
        mask.astype(float),
        rank,
        (allowed & (finish == best)).astype(float),
    ]
    out = np.stack(columns, axis=1)
    with np.errstate(invalid="ignore"):
        out = np.nan_to_num(out, nan=CLIP, posinf=CLIP)
    return np.clip(out, 0.0, CLIP).astype(np.float32)


def _seconds(t, e, a, b):
    """Uncontended seconds of edge ``e`` from device ``a`` to ``b``."""
    if a == b:
        return 0.0
    explicit = t.edge_time[e]
    if not np.isnan(explicit):
        return explicit
    return t.latency[a, b] + t.edge_bytes[e] / t.bandwidth[a, b]


def _refine_starts(state, node, placement):
    """While refining the devices count as free: the latest uncontended arrival of the placed
    producers' outputs, at their last simulated finish."""
    t = state.tables
    starts = np.zeros(len(state.load))
    for k in range(t.in_ptr[node], t.in_ptr[node + 1]):
        src, e = t.in_src[k], t.in_edge[k]
        if placement[src] >= 0 and not np.isnan(state.finish[src]):
            for d in range(len(starts)):
                starts[d] = max(starts[d], state.finish[src] + _seconds(t, e, placement[src], d))
    return starts


CLUSTERS = ["cpu_gpu?n_gpus=2", "placeto?n_devices=4&memory=2e8"]


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_construction_features_are_heft_list_schedule(cluster):
    """Under random actions the ``start`` column is ``ListSchedule``'s insertion start of the
    node on every device, the schedule HEFT decides with, and every column its definition."""
    env = PlacementEnv(graph="synthetic:layered?n=40&seed=3", cluster=cluster)
    rng = np.random.default_rng(1)
    obs, _ = env.reset(seed=0)
    schedule = ListSchedule(Problem(env.case.graph, env.cluster, env.objective))
    for _ in range(80):
        v = int(env.case.order[env._row])
        starts = np.array(
            [schedule.earliest_start(v, d, insertion=True) for d in range(env.num_devices)]
        )
        mask = env._mask.astype(bool)
        expected = _reference_block(
            env._device_state,
            env.case.members[v],
            env.placement,
            env._resident,
            env.case.model.arrays.mem_bytes,
            mask,
            starts,
        )
        np.testing.assert_allclose(obs["devices"], expected, rtol=1e-5, atol=1e-6)
        allowed = np.flatnonzero(env.action_masks())
        device = int(rng.choice(allowed if allowed.size else [0]))
        schedule.commit(v, device, starts[device])
        obs, _, done, _, _ = env.step(device)
        if done:
            obs, _ = env.reset()
            schedule = ListSchedule(Problem(env.case.graph, env.cluster, env.objective))


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_refine_features_equal_their_definitions(cluster):
    env = PlacementRefineEnv(graph="synthetic:layered?n=40&seed=3", cluster=cluster)
    rng = np.random.default_rng(1)
    obs, _ = env.reset(seed=0)
    for _ in range(80):
        v = int(env.case.order[env._row])
        members = env.case.members[v]
        starts = _refine_starts(env._device_state, int(members[0]), env.placement)
        expected = _reference_block(
            env._device_state,
            members,
            env.placement,
            env._resident,
            env.case.model.arrays.mem_bytes,
            env._mask.astype(bool),
            starts,
        )
        expected[:, [FINISH_RANK, EARLIEST]] = 0.0  # HEFT's choice only while constructing
        np.testing.assert_allclose(obs["devices"], expected, rtol=1e-5, atol=1e-6)
        obs, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        if done:
            obs, _ = env.reset()


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(8, 60),
    comm=st.sampled_from(["placeto", "links", "ideal"]),
    gaps=st.booleans(),
    shuffled=st.booleans(),
)
def test_earliest_finish_in_heft_order_places_as_heft(seed, n, comm, gaps, shuffled):
    """The rule a policy can learn from these features: in the dual env, select the ready node
    of highest upward rank and take the first ``earliest`` device (HEFT breaks ties by device
    index). That is HEFT, device for device, contention and gaps included."""
    cluster = load_cluster("placeto?n_devices=3")
    gap = {"transfer_gap": 2e-5, "op_gap": 5e-6} if gaps else {"transfer_gap": 0.0, "op_gap": 0.0}
    cluster = dataclasses.replace(cluster, comm_model=comm, **gap)
    graph = load_graph_spec(f"synthetic:layered?n={n}&seed={seed}")
    if shuffled:  # edges not listed by producer: the sends must still go in HEFT's order
        edges = [graph.edges[i] for i in np.random.default_rng(seed).permutation(graph.num_edges)]
        graph = CompGraph(graph.nodes, edges, name=graph.name)
    env = PlacementDualEnv(graph=graph, cluster=cluster)
    heft = reference(graph, cluster, env.objective, "heft").placement
    obs, _ = env.reset(seed=0)
    done = False
    while not done:
        action = env.expert_action(heft)
        if obs["current"].any():  # a place step
            action = int(np.flatnonzero(obs["devices"][:, EARLIEST])[0])
        obs, _, done, _, _ = env.step(action)
    np.testing.assert_array_equal(env.placement, heft)
