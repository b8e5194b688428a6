"""The trainer's compute drifting by blocks of weight pushes (`sim.train_time_drift`) against steps worked by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from benchbed.cli.main import cli
from benchbed.errors import SpecError
from benchbed.sim import simulate_spec

from .specs import make_spec


def test_sync_steps_take_their_blocks_factor_and_the_last_factor_holds():
    # Colocated sync, one group of 4 samples of 10 s per step, 4 s of compute, a push every step, blocks of 2 pushes
    # at 0.5 then 2.0: steps 1-2 take 10 + 2 = 12 s, steps 3-5 10 + 8 = 18 s (the last factor holds past the list).
    spec = make_spec({"mode": "sync", "concurrency": 4, "latency": 10.0, "train_step_time": 4.0,
                      "train_time_drift": {"every_pushes": 2, "factors": [0.5, 2.0]}},
                     prompts=1, group=4, steps=5)  # fmt: skip
    steps = simulate_spec(spec).of("trainer.step")
    assert steps["t1"].tolist() == [12.0, 24.0, 42.0, 60.0, 78.0]


def test_async_blocks_count_pushes_not_local_updates():
    # Trainer-bound async (1 s samples, room for 10 steps ahead), a push every 2 steps, blocks of one push at 1.0,
    # 3.0, 0.5: steps 1-2 compute 10 s each, steps 3-4 30 s, steps 5-6 5 s; the 1 s push after steps 2, 4 and 6.
    spec = make_spec({"mode": "async", "concurrency": 64, "latency": 1.0, "train_step_time": 10.0,
                      "update_weights_interval": 2, "weight_sync_time": 1.0,
                      "train_time_drift": {"every_pushes": 1, "factors": [1.0, 3.0, 0.5]}},
                     prompts=4, group=4, staleness=10, steps=6)  # fmt: skip
    steps = simulate_spec(spec).of("trainer.step")
    assert (steps["t1"] - steps["t0"]).tolist()[1:] == [11.0, 30.0, 31.0, 5.0, 6.0]
    compute = simulate_spec(spec).of("trainer.compute")
    assert (compute["t1"] - compute["t0"]).tolist() == [10.0, 10.0, 30.0, 30.0, 5.0, 5.0]


def test_factors_of_one_give_the_same_trace_as_no_drift():
    sim = {"mode": "async", "concurrency": 24, "latency": {"mean": 30.0, "cv": 0.8}, "train_step_time": 4.0,
           "update_weights_interval": 2, "weight_sync_time": 0.5, "seed": 4}  # fmt: skip
    plain = simulate_spec(make_spec(sim, staleness=2, steps=30)).events
    ones = simulate_spec(make_spec({**sim, "train_time_drift": {"every_pushes": 3, "factors": [1.0, 1.0]}},
                                   staleness=2, steps=30)).events  # fmt: skip
    assert ones.equals(plain)


@pytest.mark.parametrize(
    ("drift", "message"),
    [
        ({"every_pushes": 0, "factors": [1.0]}, "every_pushes"),
        ({"every_pushes": 10, "factors": []}, "factors"),
        ({"every_pushes": 10, "factors": [1.0, -0.5]}, "factors must be positive"),
        ({"every_pushes": 10, "factors": [1.0, 1e308]}, "not a finite number of seconds"),
    ],
)
def test_bad_drift_is_a_spec_error(drift: dict, message: str):
    with pytest.raises(SpecError, match=message):
        simulate_spec(make_spec({"mode": "sync", "train_time_drift": drift}))


def test_bad_drift_in_a_file_is_one_line_naming_the_file_and_the_field(tmp_path: Path):
    spec = tmp_path / "drift.toml"
    spec.write_text(
        'name = "d"\nadapter = "sim"\n[workload]\nprompts_per_step = 1\ngroup_size = 4\nsteps = 3\n'
        '[sim]\nmode = "sync"\ntrain_time_drift = { every_pushes = 100, factors = [0.65, 0.0] }\n'
    )
    result = CliRunner().invoke(cli, ["simulate", str(spec)])
    assert result.exit_code != 0 and "Traceback" not in result.output
    (line,) = [line for line in result.output.splitlines() if "train_time_drift" in line]
    assert str(spec) in line and "factors must be positive" in line
