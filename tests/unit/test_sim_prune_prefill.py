"""Early pruning and prefill-decode disaggregation against hand models: the step times a synchronous run with fixed
latencies must give, worked out by hand."""

from __future__ import annotations

import json

import pytest

from benchbed.errors import SpecError
from benchbed.metrics import compute_metrics
from benchbed.sim import simulate_spec
from benchbed.spec import build_spec


def spec(sim: dict, group: int = 4, prompts: int = 2, steps: int = 6):
    return build_spec(
        {
            "name": "t",
            "adapter": "sim",
            "workload": {"prompts_per_step": prompts, "group_size": group, "max_staleness": 0, "steps": steps},
            "sim": {"mode": "sync", "concurrency": 1024, "seed": 3, **sim},
        }
    )


def step_times(trace) -> list[float]:
    steps = trace.of("trainer.step")
    return (steps["t1"] - steps["t0"]).round(6).tolist()


def test_early_pruning_frees_slots_early_and_shrinks_the_training_batch():
    # Fixed 100 s rollouts, G = 4, half pruned at 30%: the batch still waits for the two survivors (100 s), but the
    # trainer trains 2 of 4 samples per group: 40 s x 2/4 = 20 s. A synchronous step: 100 + 20 = 120 s, not 140.
    base = spec({"latency": 100.0, "train_step_time": 40.0})
    pruned = spec({"latency": 100.0, "train_step_time": 40.0, "early_prune": {"fraction": 0.5, "at": 0.3}})
    assert step_times(simulate_spec(base))[1:] == [140.0] * 5
    trace = simulate_spec(pruned)
    assert step_times(trace)[1:] == [120.0] * 5
    rollouts = trace.of("rollout")
    rollouts = rollouts[rollouts["t1"] < trace.of("trainer.step")["t1"].max() - 100]  # finished before the last step
    runtime = (rollouts["t1"] - rollouts["t0"]).round(6)
    # two of each group's four samples stop at 30 s: half the rollouts, each marked as pruned
    assert sorted(set(runtime)) == [30.0, 100.0]
    assert (runtime == 30.0).mean() == pytest.approx(0.5, abs=0.02)
    marked = [json.loads(a) for a in rollouts["attrs"] if isinstance(a, str) and a]
    assert sum(1 for a in marked if a.get("pruned") == "early") == int((runtime == 30.0).sum())


def test_early_pruning_fraction_rounds_to_whole_samples_and_keeps_one_survivor():
    trace = simulate_spec(spec({"latency": 50.0, "train_step_time": 16.0, "early_prune": {"fraction": 0.9, "at": 0.5}}))
    # 0.9 x 4 rounds to 4, capped at 3 so a group keeps one sample: trainer 16 x 1/4 = 4 s, step 50 + 4
    assert step_times(trace)[1:] == [54.0] * 5


def test_aggregated_prefill_stalls_for_the_whole_decode_batch():
    # 3 tool calls of 5 s each and 10 s of LLM time; 4 prefills of 0.5 s. Aggregated with 8 sequences an engine:
    # each prefill costs 0.5 x 8 = 4 s -> 10 + 15 + 16 = 41 s. Disaggregated with a 0.25 s KV transfer:
    # 4 x (0.5 + 0.25) = 3 s -> 28 s. Trainer 2 s: steps 43 s and 30 s.
    turns = {"count": 3, "env_s": {"mean": 5.0}}
    prefill = {"turn_s": 0.5, "decode_batch": 8}
    aggregated = spec({"latency": 10.0, "train_step_time": 2.0, "turns": turns, "prefill": prefill})
    split = spec({"latency": 10.0, "train_step_time": 2.0, "turns": turns,
                  "prefill": {**prefill, "disaggregated": True, "kv_transfer_s": 0.25}})  # fmt: skip
    assert step_times(simulate_spec(aggregated))[1:] == [43.0] * 5
    assert step_times(simulate_spec(split))[1:] == [30.0] * 5


def test_prefill_without_turns_is_one_prefill_per_sample():
    trace = simulate_spec(spec({"latency": 10.0, "train_step_time": 2.0, "prefill": {"turn_s": 1.5}}))
    assert step_times(trace)[1:] == [13.5] * 5  # 10 + 1.5 x 1 (decode_batch 1) + 2


def test_off_by_default_the_trace_is_unchanged():
    plain = spec({"latency": {"mean": 30.0, "cv": 0.5}, "train_step_time": 5.0})
    assert plain.sim.get("early_prune") is None and plain.sim.get("prefill") is None
    first, second = simulate_spec(plain), simulate_spec(plain)
    assert step_times(first) == step_times(second)
    assert compute_metrics(first)["trainer_idle_ratio"].value > 0.5


@pytest.mark.parametrize(
    "sim",
    [{"early_prune": {"fraction": 0.0, "at": 0.5}}, {"early_prune": {"fraction": 0.5, "at": 0.0}},
     {"prefill": {"turn_s": 0.0}}, {"prefill": {"turn_s": 1.0, "kv_transfer_s": -1.0}}],
)  # fmt: skip
def test_out_of_range_mechanism_fields_are_spec_errors(sim):
    with pytest.raises(SpecError):
        spec(sim)
