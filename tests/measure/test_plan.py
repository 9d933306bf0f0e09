"""Plans of placements: every message matched, slots disjoint, and no device waits forever."""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from placerl.graph import load_graph
from placerl.measure.layout import Layout
from placerl.measure.plan import ALIGN, make_plans
from placerl.measure.program import load_program, reference_run
from placerl.measure.source import source_of
from placerl.sim import CostModel

SPECS = {
    "inference": "zoo:transformer?variant=bert_tiny",
    "training": "zoo:resnet50?variant=small&training=true",
}


@pytest.fixture(scope="module", params=sorted(SPECS))
def laid(request):
    graph = load_graph(SPECS[request.param])
    loaded = load_program(source_of(graph))
    return graph, Layout.build(graph, loaded, reference_run(loaded), loaded.names)


def test_layout_covers_every_traced_node_once(laid):
    graph, layout = laid
    members = [m for ms in layout.members for m in ms]
    assert len(members) == len(set(members))
    assert layout.training == bool(graph.arrays.backward.any())
    if layout.training:
        assert np.all(layout.backward >= 0)
        assert {graph.nodes[b].attrs["forward"] for b in layout.backward} == {
            graph.names[f] for f in layout.forward
        }
    for owner, reads in enumerate(layout.reads):
        assert all(layout.owner[v] != owner for v in reads)


def _play(plans, layout):
    """Run the plans' message logic step by step; False if some device waits forever."""
    exits = [[v for v, o in layout.owner.items() if o == i] for i in range(len(layout.forward))]
    sent, position = set(), [0] * len(plans)
    progress = True
    while progress:
        progress = False
        for d, plan in enumerate(plans):
            if position[d] == len(plan.steps):
                continue
            step = plan.steps[position[d]]
            if step.backward:
                needed = {
                    t for m in plan.grad_receives if m.value in exits[step.node] for t in m.tags
                }
            else:
                needed = {
                    t for m in plan.receives if m.value in layout.reads[step.node] for t in m.tags
                }
            if needed <= sent:
                sent |= {t for m in step.sends for t in m.tags}
                position[d] += 1
                progress = True
    return all(p == len(plan.steps) for p, plan in zip(position, plans, strict=True))


@given(seed=st.integers(0, 2**31 - 1), devices=st.integers(1, 4))
def test_plans_match_messages_and_never_deadlock(laid, seed, devices):
    graph, layout = laid
    placement = np.random.default_rng(seed).integers(0, devices, graph.num_nodes)
    placement[layout.backward[layout.backward >= 0]] = placement[layout.forward][
        layout.backward >= 0
    ]
    start = CostModel(graph, f"homogeneous?n_devices={devices}").evaluate(placement).start
    plans, arena = make_plans(graph, layout, placement, start, devices)
    sends = {
        (d, m.peer, m.tags, m.slots) for d, p in enumerate(plans) for s in p.steps for m in s.sends
    }
    receives = {
        (m.peer, d, m.tags, m.slots)
        for d, p in enumerate(plans)
        for m in (*p.receives, *p.grad_receives)
    }
    assert sends == receives
    tags = [t for _, _, ts, _ in sends for t in ts]
    assert len(tags) == len(set(tags))
    slots = sorted(s for _, _, _, ss in sends for s in ss)
    assert all(offset % ALIGN == 0 for offset, _ in slots)
    assert all(a[0] + a[1] <= b[0] for a, b in itertools.pairwise(slots))
    assert arena >= (slots[-1][0] + slots[-1][1] if slots else 0)
    steps = sorted((s.node, s.backward) for p in plans for s in p.steps)
    expected = sorted(
        [(i, False) for i in range(len(layout.forward))]
        + [(i, True) for i in range(len(layout.forward)) if layout.backward[i] >= 0]
    )
    assert steps == expected
    assert _play(plans, layout)
