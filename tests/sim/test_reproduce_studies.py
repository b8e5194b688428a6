"""The vime, Marin, Seer, APRIL and ARRoL studies: their specs carry the published configuration, every parameter is
marked, and their rows give the figures worked out in docs/guides/reproduce.md."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy import stats

from benchbed.diagnosis.levers import levers_for
from benchbed.diagnosis.rules import diagnose_metrics
from benchbed.sim.reproduce import EXPERIMENTS, STUDIES, case_specs, reproduce, simulate_in_process
from benchbed.spec import build_spec
from benchbed.spec.model import load_spec_data

NEW_STUDIES = ("vime", "marin", "seer", "april", "arrol")
NAMING = ("name", "adapter", "description")  # a spec's own identity, not a parameter


def unmarked_lines(text: str) -> list[str]:
    """The parameter lines of a spec that say neither PUBLISHED, DERIVED nor ASSUMED."""

    def parameter(code: str) -> bool:
        return bool(re.match(r"^\s*[\w\"]", code)) and "=" in code and not code.strip().startswith(NAMING)

    return [
        line for line in text.splitlines()
        if parameter(line.split("#", 1)[0]) and not re.search(r"PUBLISHED|DERIVED|ASSUMED", line)
    ]  # fmt: skip


@pytest.mark.parametrize("study", NEW_STUDIES)
def test_every_parameter_of_the_new_studies_is_marked_and_its_source_named(study):
    for name in {f for files in STUDIES[study].cases.values() for f in files}:
        assert unmarked_lines((EXPERIMENTS / study / name).read_text()) == [], f"{study}/{name}"
    assert "source" in (EXPERIMENTS / study / "published.toml").read_text()


def test_an_unmarked_parameter_is_found():
    text = 'name = "x"\n[sim]\ntrain_step_time = 81.4\nconcurrency = 256  # DERIVED: 32 x 8\n'
    assert unmarked_lines(text) == ["train_step_time = 81.4"]


def test_new_specs_carry_the_published_configuration():
    april = {spec.name: spec for spec in case_specs("april/qwen3-4b")}
    partial = april["reproduce-april-partial"]
    assert partial.workload.prompts_per_step == 32 and partial.workload.group_size == 8
    assert partial.workload.max_response_tokens == 16384
    assert partial.sim["oversample"] == {"factor": 2.0, "policy": "partial", "requeue_in_quota": True}
    vime = {spec.name: spec for spec in case_specs("vime/qwen3-4b")}
    assert vime["reproduce-vime-sync"].sim["train_step_time"] == 81.4
    assert vime["reproduce-vime-sync"].sim["latency"]["mean"] == round(97.2 / 6.12, 2)
    marin = {spec.name: spec for spec in case_specs("marin/qwen-gsm8k")}
    assert marin["reproduce-marin-async"].sim["weight_sync_time"] == pytest.approx(48.79 / 20 + 5.0)


def test_marin_async_weight_sync_is_the_transfer_plus_the_published_wait():
    rows = {row.quantity: row for row in reproduce(["marin"]) if row.kind != "out-of-sample"}
    sync = rows["weight sync over 20 updates, synchronous (s)"]
    asynchronous = rows["weight sync over 20 updates, asynchronous, with its pauses (s)"]
    assert sync.reproduced == pytest.approx(48.79, abs=0.01) and sync.kind == "consistency"
    assert asynchronous.reproduced == pytest.approx(20 * (2.4395 + 5.0), abs=0.01)  # 148.79 vs published 147.40
    assert asynchronous.ok and asynchronous.kind == "prediction"


def test_arrol_pruning_halves_the_training_and_keeps_the_cap_bound_generation():
    (row,) = reproduce(["arrol"])
    # baseline 749 s (247 generation + 374 training + 128 sync); pruned: 247 + 374 / 2 + 128 = 562 s -> 1.33x
    assert row.reproduced == pytest.approx(749 / 562, abs=0.03)
    assert row.ok and row.kind == "prediction"


def test_vime_fully_async_is_trainer_bound_at_the_contended_train_time():
    rows = {row.quantity: row for row in reproduce(["vime/qwen3-4b"]) if row.kind != "out-of-sample"}
    # sync: 97.2 s of generation (a cap-length response) + 81.4 s of training, generation idle while it trains;
    # fully async hides the generation, and a step that starts beside running samples takes 81.4 x 1.2236 = 99.6 s
    assert rows["sync step time (s)"].reproduced == pytest.approx(178.6, rel=0.05)
    assert 81.4 < rows["fully async step time (s)"].reproduced <= 99.6 + 5.0
    assert rows["speedup, fully async over sync"].ok  # 1.83 vs 1.72


def test_vime_setup1_specs_split_the_published_step_as_setup2_with_the_kl_reference_forward():
    specs = {spec.name: spec for spec in case_specs("vime/qwen3-4b-setup1")}
    sync, fully = specs["reproduce-vime-sync-setup1"], specs["reproduce-vime-fully-async-setup1"]
    # per token, Setup 2 trains with forward + recomputed forward + backward (2N + 2N + 4N); Setup 1's KL loss adds the
    # reference model's forward (2N): 10 / 8 = 1.25 x the training against Setup 2's train : wait of 81.4 : 97.2
    for spec in (sync, fully):
        assert (spec.workload.prompts_per_step, spec.workload.group_size) == (8, 4)
        assert spec.workload.max_response_tokens == 1024
        assert spec.sim["train_step_time"] == round(31.5 * 101.75 / (101.75 + 97.2), 2) == 16.11
        assert spec.sim["latency"]["mean"] == round((31.5 - 16.11) / 0.742 / 6.12, 3) == 3.389
        assert spec.sim["tokens"]["response_mean"] == round(1024 / 6.12)  # 167
        assert spec.sim["train_contention"] == round(99.6 / 81.4 - 1, 4)  # Setup 2's
    assert sync.sim["concurrency"] == fully.sim["concurrency"] == 8 * 4


def test_the_slowest_of_a_batch_is_a_cap_length_response_only_for_large_batches():
    """The vime Setup 1 specs' 0.742: the mean of min(max of 32 draws, cap) over the cap, for the studies' shape
    (lognormal, cv 1.29, the cap at its p99); Setup 2's 256 samples give 0.992, so their batches are cap-bound."""
    sigma = math.sqrt(math.log(1 + 1.29**2))
    cap = math.exp(-(sigma**2) / 2 + 2.3263 * sigma)  # the p99 in units of the mean
    assert cap == pytest.approx(6.12, abs=0.01)
    draws = np.exp(-(sigma**2) / 2 + sigma * np.random.default_rng(1).standard_normal((20_000, 256)))
    assert np.minimum(draws[:, :32].max(axis=1), cap).mean() / cap == pytest.approx(0.742, abs=0.004)
    assert np.minimum(draws.max(axis=1), cap).mean() / cap == pytest.approx(0.992, abs=0.002)


def busy_within(spans: list[tuple[float, float]], t0: float, t1: float) -> float:
    """Seconds of [t0, t1] during which at least one of `spans` runs."""
    busy, reach = 0.0, t0
    for start, end in sorted(spans):
        start, end = max(start, reach), min(end, t1)
        if end > start:
            busy += end - start
            reach = end
    return busy


def test_vime_setup1_fully_async_steps_take_the_contention_while_the_next_batch_decodes():
    rows = {row.quantity: row for row in reproduce(["vime/qwen3-4b-setup1"]) if row.kind != "out-of-sample"}
    # sync: 16.11 s of training + generation that waits for the batch's slowest of 32 samples, 0.742 x a
    # cap-length one (20.74 s) on average: 31.5 s, less what 100 steps leave of the order statistic's spread
    sync = rows["sync step time (s)"]
    assert sync.reproduced == pytest.approx(31.5, rel=0.03) and sync.ok and sync.kind == "consistency"
    # fully async: each step's compute runs at 1 / 1.2236 of its speed while the next batch decodes beside it and
    # at full speed after, so it lasts 16.11 + overlap x (1 - 1 / 1.2236): between 16.11 s (no overlap) and
    # 16.11 x 1.2236 = 19.71 s (overlap throughout)
    specs = {spec.name: spec for spec in case_specs("vime/qwen3-4b-setup1")}
    trace = simulate_in_process(specs["reproduce-vime-fully-async-setup1"]).trace
    rollouts = list(zip(trace.of("rollout")["t0"], trace.of("rollout")["t1"], strict=True))
    compute = trace.of("trainer.compute")
    overlaps = [busy_within(rollouts, t0, t1) for t0, t1 in zip(compute["t0"], compute["t1"], strict=True)]
    durations = list(compute["t1"] - compute["t0"])
    assert durations == pytest.approx([16.11 + overlap * (1 - 1 / 1.2236) for overlap in overlaps], abs=1e-6)
    assert min(overlaps) > 0  # the next batch decodes beside every step
    fully = rows["fully async step time (s)"]
    assert 16.11 < fully.reproduced < 16.11 * 1.2236 and fully.ok  # 19.1 s against the published 20.8
    speedup = rows["speedup, fully async over sync"]
    assert speedup.reproduced == pytest.approx(sync.reproduced / fully.reproduced) and speedup.ok


def test_long_tail_and_generation_bound_runs_name_the_new_levers():
    tail = diagnose_metrics({"trainer_idle_ratio": 0.5, "rollout_tail_share": 0.6})
    assert tail.regime == "long_tail_bound"
    assert "sim.early_prune" in [lever.field for lever in levers_for(tail, "sim", {"sim": {}})]
    generation = diagnose_metrics({"trainer_idle_ratio": 0.5, "generator_utilization": 0.9})
    assert generation.regime == "generation_bound"
    fields = [lever.field for lever in levers_for(generation, "sim", {"sim": {"prefill": {"disaggregated": False}}})]
    assert "sim.prefill.disaggregated" in fields and "sim.early_prune" in fields


def test_marin_runs_are_weight_sync_bound_from_the_sync_share_of_the_step():
    shares = {}
    for spec in case_specs("marin/qwen-gsm8k"):
        run = simulate_in_process(spec)
        assert diagnose_metrics(run.metrics).regime == "weight_sync_bound"
        shares[spec.name] = run.metrics["trainer_weight_sync_ratio"]
    # sync: 2.44 s of sync in a 1.79 + 3.0 + 2.44 s step; async: generation overlapped, 7.44 s (with the 5 s pause
    # wait) in a 3.0 + 7.44 s step
    assert shares["reproduce-marin-sync"] == pytest.approx(2.4395 / (1.79 + 3.0 + 2.4395), abs=0.005)
    assert shares["reproduce-marin-async"] == pytest.approx(7.4395 / (3.0 + 7.4395), abs=0.01)


def test_seer_tail_share_falls_when_decode_speed_is_shared_on_each_engine():
    rows = {(row.case, row.quantity): row for row in reproduce(["seer"])}
    tail = "share of rollout time taken by the last 10% of requests"
    assert rows[("seer/moonlight", tail)].reproduced == pytest.approx(0.435, abs=0.01)
    assert rows[("seer/qwen2-vl-72b", tail)].reproduced == pytest.approx(0.502, abs=0.01)
    assert all(row.ok for row in rows.values())
    # The same spec decoding every sequence at one speed: the last tenth takes 0.65 of the rollout.
    data = load_spec_data(EXPERIMENTS / "seer" / "moonlight.toml")
    del data["sim"]["decode"]
    assert simulate_in_process(build_spec(data)).metrics["rollout_tail_share"] == pytest.approx(0.647, abs=0.01)


def test_april_shape_and_decode_coefficients_follow_from_the_model_card_and_bytes():
    (partial,) = [spec for spec in case_specs("april/qwen3-4b") if spec.name == "reproduce-april-partial"]
    # p99 = 10 x median at Qwen3's 38,912 recommended tokens: mean 38,912 / 6.12, and the 16,384 cap truncates 7.3%.
    sigma = np.log(10) / stats.norm.ppf(0.99)
    mean = partial.sim["tokens"]["response_mean"]
    assert mean == pytest.approx(38912 / 6.12, abs=1)
    lengths = stats.lognorm(s=sigma, scale=mean * np.exp(-(sigma**2) / 2))
    assert lengths.sf(16384) == pytest.approx(0.073, abs=0.001)
    decoded = lengths.expect(lambda x: np.minimum(x, 16384))  # E[min(L, cap)] = 5,511
    decode = partial.sim["decode"]
    bandwidth = 2 * 3.35e12  # two GPUs an engine
    assert decode["step_s"] == pytest.approx(4.02e9 * 2 / bandwidth, rel=0.01)
    kv_per_token = 36 * 8 * 128 * 2 * 2
    assert decode["step_s_per_seq"] == pytest.approx(kv_per_token * (512 + decoded / 2) / bandwidth, rel=0.01)
    # re-prefill: 2 x 4.02e9 FLOPs a token on two 989 TFLOP/s GPUs, over a token decoded alone
    assert partial.sim["reprefill_fraction"] == pytest.approx(4.02e9 / 989e12 / (1.2e-3 + 7.19e-5), rel=0.02)
    rows = reproduce(["april"])
    # 1.33 against 1.17 / 1.21 / 1.35 over 200 steps (2.72 with the p99 at the cap and a group counted against one
    # round's quota only once): within each dataset's +-15%, DAPO-Math-17k's by 0.01 (its bound is 1.3455)
    assert rows[0].reproduced == pytest.approx(1.3346, abs=0.002)
    assert [row.ok for row in rows[:3]] == [True, True, True]
    # slime's off_policy_ratio counted as slime counts it, round by round (each resume's previous segment over those
    # plus every request's completion tokens, aborted ones included), the mean of rounds 4-200: 0.263, against the
    # FAQ's 40%
    assert rows[3].reproduced == pytest.approx(0.2627, abs=0.001) and rows[3].published == 0.40 and not rows[3].ok
