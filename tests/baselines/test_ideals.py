"""The ideal-enumeration kernels against brute force over all subsets."""

import itertools

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from placerl.baselines import _ideals


@st.composite
def posets(draw, max_blocks=9):
    """Edges ``u -> v`` with ``u < v`` (blocks numbered topologically), as CSR."""
    n = draw(st.integers(1, max_blocks))
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n)]
    edges = sorted(draw(st.lists(st.sampled_from(pairs), unique=True))) if pairs else []
    edges = np.array(edges, dtype=np.int64).reshape(-1, 2)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(ptr, edges[:, 0] + 1, 1)
    indegree = np.bincount(edges[:, 1], minlength=n).astype(np.int64)
    return n, edges, np.cumsum(ptr), np.ascontiguousarray(edges[:, 1]), indegree


def brute_force_ideals(n, edges):
    out = set()
    for mask in itertools.product([False, True], repeat=n):
        if all(mask[u] or not mask[v] for u, v in edges):
            out.add(frozenset(np.flatnonzero(mask).tolist()))
    return out


def members(parent, added, i):
    out = set()
    while i > 0:
        out.add(int(added[i]))
        i = parent[i]
    return frozenset(out)


@given(posets())
def test_enumerates_every_ideal_once(poset):
    n, edges, ptr, succ, indegree = poset
    zobrist = np.frombuffer(np.random.default_rng(0).bytes(8 * n), dtype=np.uint64)
    count, parent, added, key, size = _ideals.enumerate_ideals(ptr, succ, indegree, zobrist, 1000)
    found = [members(parent, added, i) for i in range(count)]
    assert len(set(found)) == count
    assert set(found) == brute_force_ideals(n, edges)
    assert [len(f) for f in found] == size[:count].tolist()
    keys, ids, unique = _ideals.build_table(key, count)
    assert unique
    assert all(_ideals._lookup(keys, ids, key[i]) == i for i in range(count))


@given(posets())
def test_reports_overflow_past_the_limit(poset):
    n, edges, ptr, succ, indegree = poset
    zobrist = np.zeros(n, dtype=np.uint64)
    total = len(brute_force_ideals(n, edges))
    assert _ideals.enumerate_ideals(ptr, succ, indegree, zobrist, total)[0] == total
    if total > 1:
        assert _ideals.enumerate_ideals(ptr, succ, indegree, zobrist, total - 1)[0] == -1


@given(posets())
def test_level_width_is_an_antichain_bounding_the_ideals_from_below(poset):
    n, edges, ptr, succ, _ = poset
    width = int(_ideals.level_width(ptr, succ, n))
    assert 2**width <= len(brute_force_ideals(n, edges))
    reach = np.eye(n, dtype=bool)  # reach[u, v]: a path u -> v (blocks numbered topologically)
    for u, v in sorted(edges.tolist(), key=lambda e: -e[0]):
        reach[u] |= reach[v]
    widest = max(
        len(a)
        for k in range(1, n + 1)
        for a in itertools.combinations(range(n), k)
        if not any(reach[x, y] for x in a for y in a if x != y)
    )
    assert 1 <= width <= widest


def test_rest_is_the_work_outside_each_ideal():
    parent = np.array([-1, 0, 1, 0])
    added = np.array([-1, 0, 1, 1])
    rest = _ideals.ideal_rest(parent, added, np.array([1.0, 2.0]), 4)
    assert rest.tolist() == [3.0, 2.0, 0.0, 1.0]
