"""Extractors: shapes, batching without loops, the GNN's neighbourhood shortcut, heads."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from placerl.agents.extractors import EXTRACTORS, GNN_LAYERS, GnnExtractor
from placerl.agents.extractors.base import NUM_SUMMARY, masked_mean
from placerl.agents.extractors.message_plan import message_sums, node_bags, plan_messages
from placerl.agents.heads import DeviceScorer, DeviceValue
from placerl.envs import PlacementEnv
from placerl.envs.device_features import NUM_DEVICE_FEATURES
from placerl.errors import ConfigError


def _batch(env, steps=24, seed=0):
    """Observations from a few random steps, stacked as SB3 would feed them (floats)."""
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    seen = []
    for _ in range(steps):
        seen.append(obs)
        obs, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        if done:
            obs, _ = env.reset()
    return {k: torch.as_tensor(np.stack([o[k] for o in seen]), dtype=torch.float32) for k in obs}


@pytest.fixture(scope="module")
def env():
    # two graphs of different sizes: padding and ragged batches are exercised
    return PlacementEnv(
        graph=["synthetic:layered?n=30&seed=1", "synthetic:layered?n=18&seed=2"],
        cluster="placeto?n_devices=3",
    )


@pytest.mark.parametrize("name", sorted(EXTRACTORS))
def test_output_layout(env, name):
    extractor = EXTRACTORS[name](env.observation_space)
    out = extractor(_batch(env))
    assert out.shape == (24, extractor.features_dim)
    assert extractor.device_dim == NUM_SUMMARY + NUM_DEVICE_FEATURES
    assert extractor.features_dim == extractor.context_dim + 3 * extractor.device_dim
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("name", sorted(EXTRACTORS))
def test_batched_equals_one_by_one(env, name):
    torch.manual_seed(0)
    extractor = EXTRACTORS[name](env.observation_space).eval()
    batch = _batch(env)
    with torch.no_grad():
        together = extractor(batch)
        alone = torch.cat(
            [extractor({k: v[i : i + 1] for k, v in batch.items()}) for i in range(24)]
        )
    torch.testing.assert_close(together, alone, rtol=1e-4, atol=1e-5)


def test_device_rows_without_the_env_features(env):
    extractor = EXTRACTORS["mlp"](env.observation_space, device_features=False)
    assert extractor.device_dim == NUM_SUMMARY
    rows = extractor.device_rows(_batch(env))
    assert rows.shape == (24, 3, NUM_SUMMARY)
    # shares of placed compute and memory: each at most 1 summed over devices
    assert (rows.sum(dim=1) <= 1 + 1e-5).all()


@pytest.mark.parametrize("layer", sorted(GNN_LAYERS))
def test_gnn_neighbourhood_gives_the_full_graph_embedding(env, layer):
    """The current node's embedding after k rounds on its k-hop neighbourhood equals the one
    from message passing over every node."""
    torch.manual_seed(0)
    extractor = GnnExtractor(env.observation_space, layer=layer, rounds=2).eval()
    batch = _batch(env)
    with torch.no_grad():
        fast = extractor.context(batch)[:, : extractor.hidden]
        b, n = batch["node_mask"].shape
        real = batch["node_mask"].flatten() > 0.5
        new_index = torch.cumsum(real.long(), 0) - 1
        edges = batch["edge_index"].long() + (torch.arange(b) * n)[:, None, None]
        edges = new_index[edges.transpose(0, 1)[:, batch["edge_mask"] > 0.5]]
        h = extractor.embed(batch["nodes"].reshape(b * n, -1)[real])
        plan = plan_messages(None, edges, h.shape[0], hops=2)
        for round_ in extractor.rounds:
            h = round_(h, plan.round(h.shape[0]))
        current = new_index[batch["current"].argmax(dim=1) + torch.arange(b) * n]
        torch.testing.assert_close(fast, h[current], rtol=1e-4, atol=1e-5)


def test_unknown_gnn_layer():
    env = PlacementEnv(graph="synthetic:layered?n=10&seed=0")
    with pytest.raises(ConfigError, match="unknown GNN layer 'gcn'; known: gatv2, gin, sage"):
        GnnExtractor(env.observation_space, layer="gcn")


def test_extractor_refuses_a_foreign_space():
    from gymnasium import spaces

    space = spaces.Dict({"nodes": spaces.Box(0, 1, (3, 4))})
    with pytest.raises(ConfigError, match="lacks current, devices, edge_index"):
        EXTRACTORS["mlp"](space)


def test_device_heads_are_equivariant_and_count_free():
    torch.manual_seed(0)
    scorer, value = DeviceScorer(5, 3, 16), DeviceValue(5, 3, 16)
    context, rows = torch.randn(7, 5), torch.randn(7, 4, 3)
    latent = torch.cat([context, rows.flatten(1)], dim=1)
    permutation = torch.tensor([2, 0, 3, 1])
    permuted = torch.cat([context, rows[:, permutation].flatten(1)], dim=1)
    torch.testing.assert_close(scorer(permuted), scorer(latent)[:, permutation])
    torch.testing.assert_close(value(permuted), value(latent))
    # the same heads score two devices, or eight
    for count in (2, 8):
        latent = torch.cat([context, torch.randn(7, count, 3).flatten(1)], dim=1)
        assert scorer(latent).shape == (7, count)
        assert value(latent).shape == (7, 1)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("name", sorted(EXTRACTORS))
def test_cuda_matches_cpu(env, name):
    torch.manual_seed(0)
    extractor = EXTRACTORS[name](env.observation_space).eval()
    batch = _batch(env)
    with torch.no_grad():
        cpu = extractor(batch)
        gpu = extractor.cuda()({k: v.cuda() for k, v in batch.items()}).cpu()
    torch.testing.assert_close(cpu, gpu, rtol=1e-3, atol=1e-4)


def test_device_heads_share_the_context_part_of_their_first_layer():
    """Computing the context's share of the first layer once per sample gives the same
    encodings as the shared MLP applied to every (context, device row) pair."""
    torch.manual_seed(0)
    head = DeviceScorer(6, 3, 16)
    context, rows = torch.randn(5, 6), torch.randn(5, 4, 3)
    pairs = torch.cat([context[:, None, :].expand(-1, 4, -1), rows], dim=-1)
    expected = head.score(head.encode.net(pairs)).squeeze(-1)
    torch.testing.assert_close(head(torch.cat([context, rows.flatten(1)], dim=1)), expected)


def test_the_plan_lists_the_nearest_nodes_first_and_messages_both_ways():
    """Rows sorted by hop distance (edges both ways), seeds first, with the prefix counts the
    pruned rounds read; each message once along its edge and once against it, sorted by
    target, scaled to a mean."""
    # two disjoint chains 0-1-2-3-4 and 5-6-7-8-9 (as one flat batch), seeds 2 and 9
    edges = torch.tensor([[0, 1, 2, 3, 5, 6, 7, 8], [1, 2, 3, 4, 6, 7, 8, 9]])
    plan = plan_messages(torch.tensor([2, 9]), edges, 10, hops=2)
    rows = plan.rows.tolist()
    assert rows[:2] == [2, 9] and plan.within == [2, 5, 8]  # seeds; then 1, 3, 8; then 0, 4, 7
    assert set(rows[2:5]) == {1, 3, 8} and set(rows[5:]) == {0, 4, 7}
    assert 5 not in rows and 6 not in rows  # 3 and 4 hops from seed 9
    messages = {
        (rows[s], rows[t // 2], "along" if t % 2 == 0 else "against")
        for s, t in zip(plan.sources.tolist(), plan.targets.tolist(), strict=True)
    }
    # into the 5 rows a round updates: along each edge into its consumer, against into its
    # producer (0 and 4 and 7 are updated by no round)
    assert messages == {
        (0, 1, "along"),
        (1, 2, "along"),
        (2, 3, "along"),
        (7, 8, "along"),
        (8, 9, "along"),
        (2, 1, "against"),
        (3, 2, "against"),
        (4, 3, "against"),
        (9, 8, "against"),
    }
    assert plan.targets.tolist() == sorted(plan.targets.tolist())
    assert plan.upto == [3, 9, 9] and plan.messages(2) == 3  # the seeds' messages first
    assert plan.scale.tolist() == [1.0] * 9  # every target here has one message per direction
    along, against = plan.round(5).edges()
    assert along.shape[1] == 5 and against.shape[1] == 4


def test_the_plan_averages_over_each_directions_neighbours():
    # 0 -> 2, 1 -> 2, 2 -> 3: node 2 has two producers and one consumer
    edges = torch.tensor([[0, 1, 2], [2, 2, 3]])
    plan = plan_messages(None, edges, 4, hops=1)
    assert plan.rows.tolist() == [0, 1, 2, 3] and plan.within == [4, 4]
    pairs = zip(plan.sources.tolist(), plan.targets.tolist(), strict=True)
    scale = dict(zip(pairs, plan.scale.tolist(), strict=True))
    assert scale[(0, 4)] == scale[(1, 4)] == 0.5  # along: the mean of 0 and 1
    assert scale[(3, 5)] == 1.0  # against: node 2's one consumer


def _torch_sums(h, sources, targets, scale, num_targets):
    """What :func:`message_sums` computes, in torch's own operations."""
    messages = h.index_select(0, sources) * scale[:, None]
    return h.new_zeros(num_targets, h.shape[1]).index_add_(0, targets, messages)


@settings(max_examples=30, deadline=None)
@given(
    rows=st.integers(1, 40),
    messages=st.integers(0, 120),
    extra=st.integers(0, 5),
    seed=st.integers(0, 2**16),
)
def test_compiled_message_sums_are_torchs_bit_for_bit_forward_and_backward(
    rows, messages, extra, seed
):
    """The CPU kernel sums each target's messages in message order, as ``index_add_`` does, and
    its gradient each source's, as the backward of ``index_select`` does: equal bit for bit
    (so seeded training follows the same path), targets without messages included."""
    generator = torch.Generator().manual_seed(seed)
    num_targets = rows + extra
    sources = torch.randint(0, rows, (messages,), generator=generator)
    targets = torch.randint(0, num_targets, (messages,), generator=generator).sort().values
    scale = torch.rand(messages, generator=generator)
    h = torch.randn(rows, 6, generator=generator, requires_grad=True)
    got = message_sums(h, sources, targets, scale, num_targets)
    expected = _torch_sums(h, sources, targets, scale, num_targets)
    assert torch.equal(got, expected)
    grad = torch.randn(num_targets, 6, generator=generator)
    assert torch.equal(
        torch.autograd.grad(got, h, grad)[0], torch.autograd.grad(expected, h, grad)[0]
    )


def test_compiled_message_sums_pass_gradcheck():
    torch.manual_seed(0)
    sources = torch.tensor([0, 2, 2, 1, 0])
    targets = torch.tensor([0, 0, 1, 3, 3])
    scale = torch.tensor([0.5, 0.5, 1.0, 0.25, 2.0], dtype=torch.float64)
    h = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: message_sums(x, sources, targets, scale, 4), (h,))


@pytest.mark.parametrize(
    ("sources", "targets", "message"),
    [
        ([0, 3], [0, 1], "reads a row that does not exist"),
        ([0, -1], [0, 1], "reads a row that does not exist"),
        ([0, 1], [1, 0], "must be sorted"),
        ([0, 1], [0, 2], "below the number of targets"),
    ],
)
def test_message_sums_refuse_indices_the_kernel_cannot_use(sources, targets, message):
    h = torch.randn(3, 2)
    with pytest.raises(ValueError, match=message):
        message_sums(h, torch.tensor(sources), torch.tensor(targets), torch.ones(2), 2)


def test_message_sums_have_no_second_derivative():
    h = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)
    sums = message_sums(
        h, torch.tensor([0, 2]), torch.tensor([0, 1]), torch.ones(2, dtype=torch.float64), 2
    )
    (grad,) = torch.autograd.grad(sums.sum(), h, create_graph=True)
    with pytest.raises(RuntimeError, match=r"once_differentiable|does not require grad"):
        grad.sum().backward()


def test_message_sums_of_other_dtypes_take_torchs_operations():
    h = torch.randn(3, 4).to(torch.bfloat16)
    sources, targets = torch.tensor([0, 2]), torch.tensor([1, 1])
    scale = torch.tensor([0.5, 0.5], dtype=torch.bfloat16)
    assert torch.equal(
        message_sums(h, sources, targets, scale, 2), _torch_sums(h, sources, targets, scale, 2)
    )


def test_the_sage_round_starts_from_the_weights_two_sageconv_layers_draw():
    """Under one seed, the written-out round and the PyG form start from the same weights, so
    seeded runs start where they started before the round was written out."""
    from torch_geometric.nn import SAGEConv

    hidden = 8
    torch.manual_seed(3)
    old = torch.nn.ModuleDict(
        {
            "forward_conv": SAGEConv(hidden, hidden),
            "backward_conv": SAGEConv(hidden, hidden),
            "mix": torch.nn.Linear(2 * hidden, hidden),
        }
    )
    torch.manual_seed(3)
    new = GNN_LAYERS["sage"](hidden)
    loaded = GNN_LAYERS["sage"](hidden)
    loaded.load_state_dict(old.state_dict())
    for name, value in loaded.state_dict().items():
        torch.testing.assert_close(
            new.state_dict()[name] * (new.mask if name == "weight" else 1), value, rtol=0, atol=0
        )


def test_the_sage_rounds_zero_blocks_stay_zero_so_passes_without_gradients_skip_the_mask():
    torch.manual_seed(0)
    layer = GNN_LAYERS["sage"](4)
    edges = torch.tensor([[0, 1, 2, 3, 1], [2, 2, 3, 4, 4]])
    plan, h = plan_messages(None, edges, 5, hops=1), torch.randn(5, 4)
    optimizer = torch.optim.Adam(layer.parameters(), lr=0.1)
    for _ in range(3):  # training: the mask keeps the blocks' gradient at zero
        optimizer.zero_grad()
        layer(h, plan.round(5)).pow(2).sum().backward()
        optimizer.step()
    state = layer.state_dict()
    state["weight"] = torch.ones_like(state["weight"])  # a checkpoint with the blocks filled
    loaded = GNN_LAYERS["sage"](4)
    loaded.load_state_dict(state)
    for module in (layer, loaded):
        assert torch.all(module.weight[module.mask == 0] == 0)
        with torch.no_grad():
            without = module(h, plan.round(5))
        torch.testing.assert_close(without, module(h, plan.round(5)), rtol=0, atol=0)


def test_the_sage_round_loads_a_two_sageconv_checkpoint_exactly():
    """A checkpoint of the PyG form (two SAGEConv layers and the mix) loads into the written-out
    round and computes the same embeddings."""
    from torch_geometric.nn import SAGEConv

    torch.manual_seed(0)
    hidden = 8
    old = torch.nn.ModuleDict(
        {
            "forward_conv": SAGEConv(hidden, hidden),
            "backward_conv": SAGEConv(hidden, hidden),
            "mix": torch.nn.Linear(2 * hidden, hidden),
        }
    )
    new = GNN_LAYERS["sage"](hidden)
    new.load_state_dict(old.state_dict())
    edges = torch.tensor([[0, 1, 2, 3, 1], [2, 2, 3, 4, 4]])
    h = torch.randn(5, hidden)
    both = torch.cat([old["forward_conv"](h, edges), old["backward_conv"](h, edges.flip(0))], 1)
    expected = h + torch.relu(old["mix"](torch.relu(both)))
    got = new(h, plan_messages(None, edges, 5, hops=1).round(5))
    torch.testing.assert_close(got, expected)


def test_node_bags_list_each_distinct_row_once_and_every_real_row():
    nodes = torch.tensor(
        [[[1.0, 0.0], [2.0, 0.0], [1.0, 0.0]], [[2.0, 0.0], [3.0, 1.0], [9.0, 9.0]]]
    )
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])  # the last row is padding
    bags = node_bags(nodes, mask)
    flat = nodes.flatten(0, 1)
    rows = flat[bags.distinct]
    assert rows.tolist() == [[1.0, 0.0], [2.0, 0.0], [3.0, 1.0]]  # first occurrences, in order
    assert bags.members.tolist() == [0, 1, 0, 1, 2] and bags.samples.tolist() == [0, 0, 0, 1, 1]
    torch.testing.assert_close(bags.weights, torch.tensor([1 / 3] * 3 + [1 / 2] * 2))


def test_node_bags_pool_means_and_a_sample_without_real_rows_pools_zeros():
    nodes = torch.tensor([[[1.0], [2.0]], [[5.0], [6.0]], [[2.0], [4.0]]])
    mask = torch.tensor([[1.0, 1.0], [0.0, 0.0], [1.0, 0.0]])  # sample 1 is all padding
    bags = node_bags(nodes, mask)
    assert bags.batch == 3
    values = nodes.flatten(0, 1)[bags.distinct] * 10
    torch.testing.assert_close(bags.means(values), torch.tensor([[15.0], [0.0], [20.0]]))


def test_the_graph_embedding_pools_every_real_node_once_per_distinct_row(env):
    torch.manual_seed(0)
    extractor = GnnExtractor(env.observation_space).eval()
    batch = _batch(env)  # two graphs of different sizes: padded rows
    bags = node_bags(batch["nodes"], batch["node_mask"])
    assert bags.distinct.numel() < bags.members.numel() == int(batch["node_mask"].sum())
    pooled = extractor._pooled_first_embedding(batch["nodes"], batch["node_mask"])
    expected = masked_mean(extractor.embed(batch["nodes"]), batch["node_mask"])
    torch.testing.assert_close(pooled, expected)
