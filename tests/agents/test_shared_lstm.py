"""The LSTM over shared rows: the plain bidirectional LSTM's states and gradients, less work."""

from unittest.mock import patch

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from placerl.agents.extractors import LstmExtractor, shared_lstm
from placerl.agents.extractors.shared_lstm import dynamic_columns, plan_sharing
from placerl.envs import PlacementEnv
from placerl.envs.case import CURRENT, NUM_BASE_FEATURES, PLACED
from tests.agents.test_extractors import _batch


@pytest.fixture(scope="module")
def env():
    # two graphs of one size: no padding, and two donor runs in one minibatch
    return PlacementEnv(
        graph=["synthetic:layered?n=24&seed=1", "synthetic:layered?n=24&seed=2"],
        cluster="placeto?n_devices=3",
    )


def _minibatch(env, size=64, steps=200, seed=0):
    """A PPO-like minibatch: a random subset of a rollout's observations."""
    rollout = _batch(env, steps=steps, seed=seed)
    pick = torch.as_tensor(np.random.default_rng(seed).permutation(steps)[:size])
    return {k: v[pick] for k, v in rollout.items()}


def _outputs_and_gradients(extractor, batch, shared):
    """The extractor's output and its parameters' gradients, with or without sharing."""
    extractor.zero_grad()
    minimum = shared_lstm.MIN_SAMPLES
    shared_lstm.MIN_SAMPLES = minimum if shared else 10**9
    try:
        out = extractor(batch)
    finally:
        shared_lstm.MIN_SAMPLES = minimum
    (out * torch.linspace(-1, 1, out.shape[1])).sum().backward()
    return out.detach(), [p.grad.clone() for p in extractor.parameters()]


def _assert_same(extractor, batch):
    plain, plain_grads = _outputs_and_gradients(extractor, batch, shared=False)
    shared, shared_grads = _outputs_and_gradients(extractor, batch, shared=True)
    torch.testing.assert_close(shared, plain, rtol=1e-5, atol=1e-6)
    for got, expected in zip(shared_grads, plain_grads, strict=True):
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("per_node", [False, True])
def test_shared_rows_give_the_plain_lstms_states_and_gradients(env, per_node):
    torch.manual_seed(0)
    extractor = LstmExtractor(env.observation_space, hidden=16, per_node=per_node)
    batch = _minibatch(env)
    plan = plan_sharing(batch["nodes"], batch["current"])
    assert plan is not None and len(plan.graphs) == 2
    assert len(plan.backward) > 1 and len(plan.forward) > 1  # both directions bucketed
    assert 0 < len(plan.roots) < len(batch["nodes"])  # episodes' samples share prefixes
    _assert_same(extractor, batch)


def test_each_direction_runs_fewer_rows_than_the_plain_lstm(env):
    batch = _minibatch(env)
    plan = plan_sharing(batch["nodes"], batch["current"])
    samples, num_nodes = batch["nodes"].shape[:2]
    backward = sum(len(chunk) * length for chunk, length in plan.backward)
    forward = sum(len(chunk) * (num_nodes - start) for chunk, start in plan.forward)
    forward += len(plan.roots) * max(start for _, start in plan.forward)
    assert backward <= 0.8 * samples * num_nodes and forward <= 0.8 * samples * num_nodes


def _assert_roots_start_the_same(batch):
    nodes, current = batch["nodes"], batch["current"]
    plan = plan_sharing(nodes, current)
    for chunk, start in plan.forward:
        for sample in chunk.tolist() if start else ():  # from row 0: no root
            root = int(plan.roots[plan.root_of[sample]])
            assert torch.equal(nodes[sample, :start], nodes[root, :start])
            assert start <= int(current[sample].argmax())


def test_every_sample_shares_a_prefix_only_with_a_root_whose_rows_start_the_same(env):
    _assert_roots_start_the_same(_minibatch(env))


def test_a_fingerprint_collision_costs_only_the_saving(env, monkeypatch):
    # every prefix and graph fingerprinted alike: the row-by-row checks must still keep foreign
    # prefixes and graphs out
    monkeypatch.setattr(
        shared_lstm,
        "_prefix_fingerprints",
        lambda nodes: torch.zeros(nodes.shape[0], nodes.shape[1] + 1),
    )
    torch.manual_seed(0)
    extractor = LstmExtractor(env.observation_space, hidden=16, per_node=True)
    batch = _minibatch(env)
    _assert_roots_start_the_same(batch)
    assert len(plan_sharing(batch["nodes"], batch["current"]).graphs) == 2  # told apart anyway
    _assert_same(extractor, batch)


def test_a_refine_like_batch_where_every_row_is_placed_runs_plainly():
    # every row placed, each sample's placement its own: no shared suffix, no shared prefix
    samples, num_nodes, devices = 40, 12, 3
    generator = torch.Generator().manual_seed(0)
    device = torch.randint(0, devices, (samples, num_nodes), generator=generator)
    nodes = torch.zeros(samples, num_nodes, NUM_BASE_FEATURES + devices)
    nodes[:, :, PLACED] = 1.0
    nodes[:, :, NUM_BASE_FEATURES:] = torch.nn.functional.one_hot(device, devices).float()
    current = torch.nn.functional.one_hot(torch.arange(samples) % num_nodes, num_nodes).float()
    nodes[:, :, CURRENT] = current
    assert plan_sharing(nodes, current) is None


def test_small_batches_run_plainly(env):
    batch = _minibatch(env, size=shared_lstm.MIN_SAMPLES - 1)
    assert plan_sharing(batch["nodes"], batch["current"]) is None


def test_batches_off_the_cpu_run_plainly(env):
    # the GPU's cuDNN kernels are another trade-off; the meta device stands in for CUDA here
    batch = _minibatch(env)
    assert plan_sharing(batch["nodes"].to("meta"), batch["current"].to("meta")) is None


def test_passes_without_gradients_run_plainly(env):
    batch = _minibatch(env)
    assert plan_sharing(batch["nodes"], batch["current"]) is not None
    with torch.no_grad():
        assert plan_sharing(batch["nodes"], batch["current"]) is None


def test_the_shared_pass_leaves_torchs_random_stream_alone(env):
    torch.manual_seed(0)
    extractor = LstmExtractor(env.observation_space, hidden=16)
    batch = _minibatch(env)
    shared_lstm._random_weights.cache_clear()  # first use: the fingerprints' weights are drawn
    state = torch.random.get_rng_state()
    extractor(batch)
    assert torch.equal(state, torch.random.get_rng_state())


@st.composite
def _episodes(draw):
    """Samples of a few episodes over two graphs, placed in order; some samples also touch a
    row after their current one (a colocation group placed ahead)."""
    num_nodes, devices = draw(st.integers(3, 9)), 2
    features = NUM_BASE_FEATURES + devices
    generator = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    graphs = torch.rand(2, num_nodes, features, generator=generator)
    graphs[:, :, dynamic_columns(features)] = 0
    samples, currents = [], []
    for _ in range(draw(st.integers(2, 6))):
        graph = draw(st.integers(0, 1))
        placement = draw(
            st.lists(st.integers(0, devices - 1), min_size=num_nodes, max_size=num_nodes)
        )
        for step in sorted(draw(st.sets(st.integers(0, num_nodes - 1), min_size=1))):
            rows = graphs[graph].clone()
            for row in range(step):
                rows[row, PLACED] = 1.0
                rows[row, NUM_BASE_FEATURES + placement[row]] = 1.0
            rows[step, CURRENT] = 1.0
            ahead = draw(st.integers(step, num_nodes - 1))
            if ahead > step:
                rows[ahead, PLACED] = 1.0
                rows[ahead, NUM_BASE_FEATURES + placement[ahead]] = 1.0
            samples.append(rows)
            currents.append(torch.nn.functional.one_hot(torch.tensor(step), num_nodes).float())
    repeats = -(-shared_lstm.MIN_SAMPLES // len(samples))  # enough samples to plan
    return torch.stack(samples * repeats), torch.stack(currents * repeats)


def _parameter_gradients(modules, outputs):
    weights = torch.linspace(-1, 1, outputs.numel()).view_as(outputs)
    parameters = [p for module in modules for p in module.parameters()]
    return torch.autograd.grad((outputs * weights).sum(), parameters)


@settings(max_examples=30, deadline=None)
@given(_episodes(), st.booleans())
def test_any_batch_of_episodes_gives_the_plain_lstms_states_and_gradients(episodes, collide):
    nodes, current = episodes
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(8, 4, batch_first=True, bidirectional=True)
    embed = torch.nn.Linear(nodes.shape[2], 8)
    expected, (h_n, _) = lstm(embed(nodes))
    plain = torch.cat([expected.flatten(), h_n.flatten()])
    expected_grads = _parameter_gradients([lstm, embed], plain)
    fingerprints = shared_lstm._prefix_fingerprints
    if collide:  # every prefix and graph alike: only the row-by-row checks keep samples apart
        fingerprints = lambda rows: torch.zeros(rows.shape[0], rows.shape[1] + 1)  # noqa: E731
    with patch.object(shared_lstm, "_prefix_fingerprints", fingerprints):
        plan = plan_sharing(nodes, current)
    assume(plan is not None)
    states, finals = shared_lstm.shared_bidirectional(lstm, embed, embed(nodes), plan)
    torch.testing.assert_close(states, expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(finals, h_n, rtol=1e-5, atol=1e-6)
    grads = _parameter_gradients([lstm, embed], torch.cat([states.flatten(), finals.flatten()]))
    for got, want in zip(grads, expected_grads, strict=True):  # sums in another order
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4 * float(want.abs().max()))


def test_a_prefix_that_differs_only_in_its_last_placed_row_is_not_shared(monkeypatch):
    # two episodes alike up to the device of row 2; samples at row 3 must not share a root
    monkeypatch.setattr(
        shared_lstm,
        "_prefix_fingerprints",
        lambda rows: torch.zeros(rows.shape[0], rows.shape[1] + 1),
    )
    num_nodes, devices, copies = 6, 2, 20
    nodes = torch.rand(1, num_nodes, NUM_BASE_FEATURES + devices).repeat(2 * copies, 1, 1)
    nodes[:, :, dynamic_columns(nodes.shape[2])] = 0
    nodes[:, :3, PLACED] = 1.0
    nodes[:, :3, NUM_BASE_FEATURES] = 1.0
    nodes[copies:, 2, NUM_BASE_FEATURES:] = torch.tensor([0.0, 1.0])  # the second episode
    nodes[:, 3, CURRENT] = 1.0
    current = nodes[:, :, CURRENT].clone()
    plan = plan_sharing(nodes, current)
    assert plan is not None
    for chunk, start in plan.forward:
        for sample in chunk.tolist() if start else ():
            root = int(plan.roots[plan.root_of[sample]])
            assert (sample < copies) == (root < copies)


def test_a_stacked_lstm_runs_plainly(env):
    torch.manual_seed(0)
    extractor = LstmExtractor(env.observation_space, hidden=16, layers=2)
    assert not shared_lstm.supports(extractor.lstm)
    _assert_same(extractor, _minibatch(env))


@pytest.mark.parametrize(
    "options",
    [
        {"num_layers": 2},
        {"bidirectional": False},
        {"batch_first": False},
        {"bias": False},
        {"proj_size": 2},
    ],
)
def test_the_shared_pass_refuses_lstms_it_cannot_run(env, options):
    settings_ = {"batch_first": True, "bidirectional": True, **options}
    lstm = torch.nn.LSTM(8, 4, **settings_)
    batch = _minibatch(env)
    plan = plan_sharing(batch["nodes"], batch["current"])
    x = torch.zeros(*batch["nodes"].shape[:2], 8)
    with pytest.raises(ValueError, match="one bidirectional batch-first LSTM layer"):
        shared_lstm.shared_bidirectional(lstm, torch.nn.Identity(), x, plan)


def test_rows_without_placerls_columns_run_plainly():
    nodes = torch.rand(40, 12, NUM_BASE_FEATURES - 1)
    assert plan_sharing(nodes, torch.zeros(40, 12)) is None
