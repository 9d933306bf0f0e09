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
