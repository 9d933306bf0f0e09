"""The shared reference cache: one computation per (graph, cluster, objective, placer)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from placerl.baselines import PLACERS, register_placer, solve
from placerl.baselines.references import (
    Reference,
    cache_dir,
    clear_memory_cache,
    parse_placer,
    reference,
)
from placerl.cluster import Cluster, homogeneous
from placerl.devices import GiB
from placerl.graph import CompGraph, load_graph
from placerl.sim import CostModel, penalized_runtime

GRAPH = "synthetic:layered?n=30&seed=2"


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PLACERL_CACHE", str(tmp_path))
    clear_memory_cache()
    yield tmp_path / "references"
    clear_memory_cache()


@pytest.fixture
def counting_placer():
    """A placer that counts its runs (HEFT underneath)."""
    calls = []
    with PLACERS.scope():

        @register_placer("test_counting")
        def counting(problem, *, bias: int = 0):
            calls.append(bias)
            return PLACERS["heft"].fn(problem)

        yield calls


def test_a_reference_is_the_placers_scored_placement(fresh_cache):
    ref = reference(GRAPH, "gpu4_pcie", "step_time", "heft")
    result = solve("heft", GRAPH, "gpu4_pcie")
    assert np.array_equal(ref.placement, result.placement)
    assert (ref.runtime, ref.feasible, ref.score) == (result.runtime, True, result.runtime)
    assert ref.graph == load_graph(GRAPH).fingerprint()
    assert ref.cluster == Cluster.preset("gpu4_pcie").fingerprint()


def test_computed_once_in_memory_then_on_disk(fresh_cache, counting_placer):
    first = reference(GRAPH, "gpu4_pcie", placer="test_counting")
    assert reference(GRAPH, "gpu4_pcie", placer="test_counting") is first
    files = list(fresh_cache.glob("*.json"))
    assert len(files) == 1 and files[0].name.startswith("test_counting-")
    clear_memory_cache()  # a new process: only the disk cache is left
    again = reference(GRAPH, "gpu4_pcie", placer="test_counting")
    assert counting_placer == [0]
    assert np.array_equal(again.placement, first.placement) and again.runtime == first.runtime


@pytest.mark.parametrize(
    "change",
    [
        {"placer": "test_counting?bias=1"},
        {"objective": "pipeline"},
        {"cluster": "gpu4_pcie?n_devices=3"},
        {"graph": "synthetic:layered?n=30&seed=3"},
    ],
)
def test_the_key_covers_graph_cluster_objective_placer_and_options(
    fresh_cache, counting_placer, change
):
    base = {
        "graph": GRAPH,
        "cluster": "gpu4_pcie",
        "objective": "step_time",
        "placer": "test_counting",
    }
    reference(**base)
    reference(**{**base, **change})
    assert len(counting_placer) == 2 and len(list(fresh_cache.glob("*.json"))) == 2


def test_an_unreadable_cache_file_is_recomputed(fresh_cache, counting_placer):
    reference(GRAPH, "gpu4_pcie", placer="test_counting")
    (path,) = fresh_cache.glob("*.json")
    path.write_text("{truncated")
    clear_memory_cache()
    assert reference(GRAPH, "gpu4_pcie", placer="test_counting").feasible
    assert len(counting_placer) == 2 and json.loads(path.read_text())["placer"] == "test_counting"


def test_use_cache_false_recomputes_and_writes_nothing(fresh_cache, counting_placer):
    reference(GRAPH, "gpu4_pcie", placer="test_counting", use_cache=False)
    reference(GRAPH, "gpu4_pcie", placer="test_counting", use_cache=False)
    assert len(counting_placer) == 2 and not fresh_cache.exists()


WORKER = """
import sys, time
from placerl.baselines import PLACERS, register_placer
from placerl.baselines.references import reference

@register_placer("slow_counting")
def slow(problem):
    with open(sys.argv[1], "a") as log:
        log.write("computed\\n")
    time.sleep(0.5)  # long enough for the other workers to arrive meanwhile
    return PLACERS["heft"].fn(problem)

print(reference(sys.argv[2], "gpu4_pcie", "step_time", "slow_counting").runtime)
"""


def test_workers_starting_together_compute_a_reference_once(fresh_cache, tmp_path):
    log = tmp_path / "log.txt"
    env = {**os.environ, "PLACERL_CACHE": str(fresh_cache.parent)}
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(log), GRAPH],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    outputs = {worker.communicate()[0] for worker in workers}
    assert all(worker.returncode == 0 for worker in workers)
    assert len(outputs) == 1 and log.read_text() == "computed\n"


def test_processes_share_the_disk_cache(fresh_cache):
    code = (
        "from placerl.baselines.references import reference; "
        f"print(reference({GRAPH!r}, 'gpu4_pcie', 'step_time', 'heft').runtime)"
    )
    env = {**os.environ, "PLACERL_CACHE": str(fresh_cache.parent)}
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout
        for _ in range(2)
    ]
    assert runs[0] == runs[1] and len(list(fresh_cache.glob("*.json"))) == 1
    assert float(runs[0]) == reference(GRAPH, "gpu4_pcie", "step_time", "heft").runtime


def test_an_infeasible_single_device_reference_is_scored_by_the_penalty(fresh_cache):
    graph = CompGraph(
        [{"name": f"op{i}", "cost": 1e-3, "mem_bytes": 6 * GiB} for i in range(3)],
        [("op0", "op1"), ("op1", "op2")],
    )
    cluster = homogeneous(2, memory=16 * GiB)
    ref = reference(graph, cluster)  # no warning: an infeasible reference is legitimate
    sim = CostModel(graph, cluster).evaluate(ref.placement)
    assert not ref.feasible and ref.score == penalized_runtime(sim, sim.runtime) > ref.runtime


def test_round_trip_and_placer_specs(fresh_cache):
    ref = reference(GRAPH, "gpu4_pcie", placer="local_search?time_limit=0.5&seed=3")
    assert ref.placer == "local_search"
    assert ref.options == {
        "init": "m_topo",
        "max_rounds": 50,
        "time_limit": 0.5,
        "max_evaluations": 0,
        "seed": 3,
        "restarts": 0,
        "kick": 4,
    }
    back = Reference.from_dict(json.loads(json.dumps(ref.to_dict())))
    assert back.to_dict() == ref.to_dict()
    assert parse_placer("random?seed=4") == ("random", {"seed": 4})
    assert cache_dir() == fresh_cache


def test_defaults_spelled_out_or_not_are_one_entry(fresh_cache, counting_placer):
    a = reference(GRAPH, "gpu4_pcie", placer="test_counting")
    assert reference(GRAPH, "gpu4_pcie", placer="test_counting?bias=0") is a
    assert counting_placer == [0]


def test_a_placer_reregistered_under_its_name_is_not_served_from_the_cache(fresh_cache):
    graph = CompGraph([{"name": x, "cost": 1.0} for x in "ab"], [("a", "b")])
    placements = []
    for device in (0, 1):
        with PLACERS.scope():
            register_placer("test_fixed")(lambda problem, d=device: np.full(2, d))
            placements.append(reference(graph, homogeneous(2), placer="test_fixed").placement)
    assert [p.tolist() for p in placements] == [[0, 0], [1, 1]]


def test_cached_placements_cannot_be_edited_by_callers(fresh_cache):
    ref = reference(GRAPH, "gpu4_pcie")
    with pytest.raises(ValueError, match="read-only"):
        ref.placement[0] = 3
    clear_memory_cache()
    with pytest.raises(ValueError, match="read-only"):
        reference(GRAPH, "gpu4_pcie").placement[0] = 3  # read back from disk
