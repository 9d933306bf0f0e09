"""PlacementVecEnv: SB3's in-process vector env, without deep copies of the infos."""

import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv

from placerl.agents.vec_env import PlacementVecEnv
from placerl.envs import PlacementEnv


def _make():
    return PlacementEnv(graph="synthetic:layered?n=12&seed=0", cluster="placeto?n_devices=2")


def test_it_steps_as_sb3s_dummy_vec_env_without_copying_the_infos():
    ours, sb3 = PlacementVecEnv([_make] * 2), DummyVecEnv([_make] * 2)
    for venv in (ours, sb3):
        venv.seed(0)
        venv.reset()
    for step in range(30):  # past the first episode end: terminal observations and resets
        actions = np.array([step % 2, 0])
        obs, rewards, dones, infos = ours.step(actions)
        expected = sb3.step(actions)
        for key in obs:
            np.testing.assert_array_equal(obs[key], expected[0][key])
        np.testing.assert_array_equal(rewards, expected[1])
        np.testing.assert_array_equal(dones, expected[2])
        assert [sorted(i) for i in infos] == [sorted(i) for i in expected[3]]
        # the same dicts the envs returned (no deep copy), in a new list each step
        assert all(mine is buffered for mine, buffered in zip(infos, ours.buf_infos, strict=True))
        assert infos is not ours.buf_infos
