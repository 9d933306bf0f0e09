"""Rows that compute the same embedding, computed once: the same embeddings as every row."""

import pytest
import torch

from placerl.agents.extractors import GNN_LAYERS
from placerl.agents.extractors.message_plan import plan_batch
from placerl.agents.extractors.row_classes import share_rows
from placerl.envs import PlacementEnv
from tests.agents.test_extractors import _batch


@pytest.fixture(scope="module")
def batch():
    env = PlacementEnv(
        graph=["synthetic:layered?n=30&seed=1", "synthetic:layered?n=18&seed=2"],
        cluster="placeto?n_devices=3",
    )
    return _batch(env, steps=40)


def _row_level(layers, embed, batch, hops, whole):
    """Every planned row computed on its own (no sharing): the reference."""
    plan = plan_batch(batch, hops, whole=whole)
    h = embed(batch["nodes"].flatten(0, 1)[plan.rows])
    for r, layer in enumerate(layers):
        h = layer(h, plan.round(plan.within[-1] if whole else plan.within[hops - 1 - r]))
    return h


@pytest.mark.parametrize("layer", sorted(GNN_LAYERS))
@pytest.mark.parametrize("whole", [False, True])
def test_shared_rounds_give_every_rows_embedding(batch, layer, whole):
    torch.manual_seed(0)
    hops, hidden = 3, 8
    layers = [GNN_LAYERS[layer](hidden) for _ in range(hops)]
    embed = torch.nn.Linear(batch["nodes"].shape[-1], hidden)
    with torch.no_grad():
        expected = _row_level(layers, embed, batch, hops, whole)
        shared = share_rows(plan_batch(batch, hops, whole=whole), batch["nodes"], whole=whole)
        h = embed(batch["nodes"].flatten(0, 1)[shared.inputs])
        for layer_, step in zip(layers, shared.rounds, strict=True):
            h = layer_(h, step)
    torch.testing.assert_close(h[shared.outputs], expected, rtol=1e-5, atol=1e-6)
    rows = len(plan_batch(batch, hops, whole=whole).rows)
    assert len(shared.inputs) < rows and all(step.size < rows for step in shared.rounds)


def test_copies_of_an_observation_share_every_class(batch):
    one = {k: v[:5] for k, v in batch.items()}
    four = {k: torch.cat([v[:5]] * 4) for k, v in batch.items()}
    single, repeated = (
        share_rows(plan_batch(b, 2, whole=True), b["nodes"], whole=True) for b in (one, four)
    )
    assert len(repeated.inputs) == len(single.inputs)
    assert [s.size for s in repeated.rounds] == [s.size for s in single.rounds]
    assert torch.equal(repeated.outputs, single.outputs.repeat(4))


def test_gradients_reach_every_shared_parameter(batch):
    torch.manual_seed(0)
    layers = [GNN_LAYERS["sage"](8) for _ in range(2)]
    embed = torch.nn.Linear(batch["nodes"].shape[-1], 8)
    shared = share_rows(plan_batch(batch, 2), batch["nodes"])
    h = embed(batch["nodes"].flatten(0, 1)[shared.inputs])
    for layer, step in zip(layers, shared.rounds, strict=True):
        h = layer(h, step)
    h[shared.outputs].pow(2).sum().backward()
    reference = [
        p.grad.clone() for p in [*embed.parameters(), *(p for m in layers for p in m.parameters())]
    ]
    for p in [*embed.parameters(), *(p for m in layers for p in m.parameters())]:
        p.grad = None
    _row_level(layers, embed, batch, 2, whole=False).pow(2).sum().backward()
    got = [p.grad for p in [*embed.parameters(), *(p for m in layers for p in m.parameters())]]
    for a, b in zip(reference, got, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
