"""Schedule strings (RL Zoo's ``lin_<start>``) for the learning rate and clip ranges."""

import pickle

import pytest

from placerl.agents import make_agent
from placerl.agents.schedules import LinearSchedule, parse_schedules
from placerl.envs import PlacementEnv
from placerl.errors import ConfigError


def test_linear_decays_to_zero_and_pickles():
    schedule = parse_schedules({"learning_rate": "lin_3e-4"})["learning_rate"]
    assert schedule(1.0) == pytest.approx(3e-4) and schedule(0.5) == pytest.approx(1.5e-4)
    assert schedule(0.0) == 0.0
    assert pickle.loads(pickle.dumps(schedule)) == LinearSchedule(3e-4)


def test_numbers_and_other_options_pass_through():
    options = {"learning_rate": 1e-3, "n_steps": 64, "clip_range": "lin_0.2"}
    parsed = parse_schedules(options)
    assert parsed["learning_rate"] == 1e-3 and parsed["n_steps"] == 64
    assert parsed["clip_range"] == LinearSchedule(0.2)


def test_make_agent_trains_with_a_schedule():
    env = PlacementEnv("synthetic:layered?n=8&seed=0", "placeto?n_devices=2")
    model = make_agent(
        "maskable_ppo", env, "mlp", learning_rate="lin_1e-3", n_steps=16, batch_size=16
    )
    model.learn(32)
    assert model.lr_schedule(0.25) == pytest.approx(2.5e-4)


@pytest.mark.parametrize("text", ["lin_x", "exp_0.1", "lin_-1", "lin_", "0.2", "lin_inf"])
def test_bad_schedules_name_the_option(text):
    with pytest.raises(
        ConfigError, match=f"clip_range must be a number or a schedule 'lin_<start>'.*got '{text}'"
    ):
        parse_schedules({"clip_range": text})
