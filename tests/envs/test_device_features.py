"""The ``devices`` observation: what HEFT sees, checked by hand and against its definitions."""

import numpy as np
import pytest

from placerl.cluster import homogeneous
from placerl.envs import PlacementEnv, PlacementRefineEnv
from placerl.envs.device_features import (
    ALLOWED,
    CLIP,
    DURATION,
    FINISH,
    FINISH_GAP,
    LOAD,
    MEMORY,
    NUM_DEVICE_FEATURES,
    START,
    TRANSFER,
)
from placerl.envs.sanity import SanityEnv
from placerl.graph import CompGraph


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
    obs, *_ = env.step(0)  # b on device 0 too; next c: device 0 is busy until 2 ms
    np.testing.assert_allclose(obs["devices"][:, START], [2 / 3, 2 / 3])
    np.testing.assert_allclose(obs["devices"][:, LOAD], [2 / 3, 0])


def test_memory_mask_shows_as_not_allowed():
    env = SanityEnv("memory")
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(0)
    obs, *_ = env.step(0)  # 12 GiB on device 0: the third 6 GiB op fits only on device 1
    np.testing.assert_array_equal(obs["devices"][:, ALLOWED], [0, 1])
    np.testing.assert_array_equal(obs["devices"][:, ALLOWED], env.action_masks())


def test_refine_counts_the_node_out_of_its_own_device():
    graph, cluster = _fork()
    env = PlacementRefineEnv(graph=graph, cluster=cluster, order="topo", initial="single_device")
    obs, _ = env.reset(seed=0)  # everything on device 0, focus on a
    d = obs["devices"]
    np.testing.assert_allclose(d[:, LOAD], [2 / 3, 0])  # b and c, not a itself
    np.testing.assert_allclose(d[:, TRANSFER], [0, 2 / 3])  # moving a sends both outputs
    obs, *_ = env.step(0)  # focus on b: its input a finished at 1 ms in the simulation
    np.testing.assert_allclose(obs["devices"][:, START], [1 / 3, 2 / 3])


@pytest.mark.parametrize("cls", [PlacementEnv, PlacementRefineEnv])
@pytest.mark.parametrize("objective", ["step_time", "pipeline"])
def test_features_in_every_mode_stay_in_the_box(cls, objective):
    env = cls(graph="synthetic:layered?n=40&seed=3", cluster="cpu_gpu?n_gpus=2",
              objective=objective)  # fmt: skip
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


def _reference_block(state, members, placement, resident, mem_bytes, mask):
    """The features as plain numpy, from their definitions (the compiled kernel's twin)."""
    t = state.tables
    scale, n_dev = t.time_scale, len(state.load)
    duration = t.durations[members].sum(axis=0)
    own_load, own_mem = np.zeros(n_dev), np.zeros(n_dev)
    for m in members:
        if placement[m] >= 0:
            own_load[placement[m]] += t.durations[m, placement[m]]
            own_mem[placement[m]] += mem_bytes[m]
    arrival, transfer = np.zeros(n_dev), np.zeros(n_dev)
    node = int(members[0])

    def seconds(e, a, b):
        if a == b:
            return 0.0
        explicit = t.edge_time[e]
        if not np.isnan(explicit):
            return explicit
        return t.latency[a, b] + t.edge_bytes[e] / t.bandwidth[a, b]

    for k in range(t.in_ptr[node], t.in_ptr[node + 1]):
        src, e = t.in_src[k], t.in_edge[k]
        if placement[src] >= 0:
            for d in range(n_dev):
                transfer[d] += seconds(e, placement[src], d)
                if not np.isnan(state.finish[src]):
                    arrived = state.finish[src] + seconds(e, placement[src], d)
                    arrival[d] = max(arrival[d], arrived)
    for k in range(t.out_ptr[node], t.out_ptr[node + 1]):
        dst, e = t.out_dst[k], t.out_edge[k]
        if placement[dst] >= 0:
            for d in range(n_dev):
                transfer[d] += seconds(e, d, placement[dst])
    start = np.maximum(arrival, state.free_at)
    finish = start + duration
    best = finish[mask].min() if mask.any() else finish.min()
    columns = [duration / scale, (state.load - own_load) / scale,
               (resident - own_mem) / state.capacity, transfer / scale, start / scale,
               finish / scale, (finish - best) / scale, mask.astype(float)]  # fmt: skip
    out = np.stack(columns, axis=1)
    with np.errstate(invalid="ignore"):
        out = np.nan_to_num(out, nan=CLIP, posinf=CLIP)
    return np.clip(out, 0.0, CLIP).astype(np.float32)


@pytest.mark.parametrize("cls", [PlacementEnv, PlacementRefineEnv])
@pytest.mark.parametrize("cluster", ["cpu_gpu?n_gpus=2", "placeto?n_devices=4&memory=2e8"])
def test_compiled_features_equal_their_definitions(cls, cluster):
    env = cls(graph="synthetic:layered?n=40&seed=3", cluster=cluster)
    rng = np.random.default_rng(1)
    obs, _ = env.reset(seed=0)
    for _ in range(80):
        v = int(env.case.order[env._row])
        members = env.case.members[v]
        mem_bytes, mask = env.case.model.arrays.mem_bytes, env._mask.astype(bool)
        expected = _reference_block(env._device_state, members, env.placement, env._resident,
                                    mem_bytes, mask)  # fmt: skip
        np.testing.assert_allclose(obs["devices"], expected, rtol=1e-5, atol=1e-6)
        allowed = np.flatnonzero(env.action_masks())
        obs, _, done, _, _ = env.step(int(rng.choice(allowed if allowed.size else [0])))
        if done:
            obs, _ = env.reset()


def test_the_compiled_schedule_appends_each_placed_group_as_defined():
    """Construction's list schedule: a group starts on its device when the device is free and
    its placed inputs (those with a finish time) have arrived, and ends after its members'
    durations there; the device is busy until then."""
    env = PlacementEnv(graph="synthetic:layered?n=40&seed=3", cluster="cpu_gpu?n_gpus=2")
    rng = np.random.default_rng(2)
    env.reset(seed=0)
    state, t = env._device_state, env._device_state.tables
    done = False
    while not done:
        v = int(env.case.order[env._row])
        members = env.case.members[v]
        device = int(rng.choice(np.flatnonzero(env.action_masks())))
        start = state.free_at[device]
        for k in range(t.in_ptr[members[0]], t.in_ptr[members[0] + 1]):
            src, e = t.in_src[k], t.in_edge[k]
            a = env.placement[src]
            if a < 0 or np.isnan(state.finish[src]):
                continue
            seconds = 0.0 if a == device else (
                t.edge_time[e] if not np.isnan(t.edge_time[e])
                else t.latency[a, device] + t.edge_bytes[e] / t.bandwidth[a, device])
            start = max(start, state.finish[src] + seconds)
        end = start + t.durations[members, device].sum()
        free_at = max(state.free_at[device], end)
        _, _, done, _, _ = env.step(device)
        assert np.all(state.finish[members] == end) and state.free_at[device] == free_at
