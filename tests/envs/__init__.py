"""Shared checks for the env tests."""

import pickle

import numpy as np


def assert_clone_resumes(env, actions, steps: int = 0) -> None:
    """A pickled copy of ``env`` (mid-episode) steps exactly like the original.

    ``actions``: a sequence of actions, or a function called for each of ``steps`` actions.
    """
    clone = pickle.loads(pickle.dumps(env))
    if callable(actions):
        draw = actions
        actions = (draw() for _ in range(steps))
    for action in actions:
        out_a, out_b = env.step(action), clone.step(action)
        assert out_a[1] == out_b[1]
        np.testing.assert_array_equal(out_a[0]["nodes"], out_b[0]["nodes"])
        if out_a[2]:
            break


def masked_problem():
    """A small graph and cluster on which every env's masks rule actions out: ``gpu_only``
    cannot run on the CPU, ``a0`` and ``c0`` form a colocation group, and a device holds
    only 4 of the 8 nodes (the dual env's rows wait for producers; the hierarchical env's
    place step has more choices than devices)."""
    import math

    from placerl.cluster import Cluster, Device
    from placerl.graph import CompGraph

    names = ["in", "a0", "a1", "gpu_only", "b1", "c0", "c1", "out"]
    nodes = [
        {"name": n, "cost": 1e-3 * (1 + i % 3), "mem_bytes": 4.0, "out_bytes": 1e6}
        for i, n in enumerate(names)
    ]
    nodes[1]["group"] = nodes[5]["group"] = "g"
    nodes[3]["costs"] = {"cpu": math.inf}
    edges = [
        ("in", "a0"),
        ("in", "a1"),
        ("a0", "gpu_only"),
        ("a1", "b1"),
        ("gpu_only", "c0"),
        ("b1", "c1"),
        ("c0", "out"),
        ("c1", "out"),
    ]
    devices = [
        Device("cpu:0", "cpu", memory=16.0),
        Device("gpu:0", "gpu", memory=16.0),
        Device("gpu:1", "gpu", memory=16.0),
    ]
    return CompGraph(nodes, edges, name="masked"), Cluster(devices, bandwidth=1e9)
