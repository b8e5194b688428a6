"""Simulator mechanisms against closed forms and cases worked by hand: oversampling, partial rollout, sandbox
starts, multi-turn environment time, response cap, pass-rate mixtures, saturation, cost."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import integrate, stats

from benchbed.errors import SpecError
from benchbed.metrics import compute_metrics
from benchbed.sim import simulate_spec
from benchbed.sim.reproduce import round_off_policy_ratios
from benchbed.spec import ExperimentSpec

from .specs import lognormal, make_spec


def metrics_of(trace) -> dict[str, float]:
    return {k: v.value for k, v in compute_metrics(trace).items()}


def expected_order_statistic(dist: stats.rv_continuous, k: int, n: int) -> float:
    """E[k-th smallest of n iid draws] = ∫ P(fewer than k draws ≤ x) dx."""
    value, _ = integrate.quad(lambda x: stats.binom.cdf(k - 1, n, dist.cdf(x)), 0, np.inf, limit=200)
    return value


def first_wave(rows, n: int):
    """Rows of samples 0..n-1 (the first batch of a one-step synchronous run)."""
    return rows[rows["sample"].astype(int) < n]


def test_oversampling_trains_the_first_to_finish_and_discards_the_rest():
    # sync rounds of 2 × 8 dispatched samples: the batch is the 8 fastest, the step waits for the 8th of 16.
    spec = make_spec({"mode": "sync", "concurrency": 4096, "latency": {"mean": 30.0, "cv": 0.8},
                      "train_step_time": 10.0, "oversample": {"factor": 2.0, "policy": "discard"}, "seed": 4},
                     prompts=8, steps=600)  # fmt: skip
    trace = simulate_spec(spec)
    m = metrics_of(trace)
    wait = expected_order_statistic(lognormal(30.0, 0.8), 8, 16)
    assert m["trainer_idle_ratio"] == pytest.approx(wait / (wait + 10.0), abs=0.02)
    assert m["wasted_generation_fraction"] == pytest.approx(0.5, abs=0.01)
    rollouts = trace.of("rollout")
    assert set(rollouts.status.astype(str).unique()) <= {"ok", "discarded", "aborted"}
    ok = rollouts[rollouts.status == "ok"]
    assert (ok[ok.v_train >= 0].groupby("v_train").size() == 8).all()


def test_carry_over_keeps_the_surplus_for_the_next_batch():
    spec = make_spec({"mode": "async", "concurrency": 256, "latency": {"mean": 20.0, "cv": 1.0},
                      "train_step_time": 5.0, "oversample": {"factor": 2.0, "policy": "carry"}},
                     prompts=8, group=4, staleness=4, steps=100)  # fmt: skip
    trace = simulate_spec(spec)
    groups = trace.of("rollout.group")
    assert (groups.status == "ok").all()
    assert metrics_of(trace)["wasted_generation_fraction"] == 0.0
    # Rounds 0..104 may start (version 100 + staleness 4): about 8 fresh groups each, the surplus being reused,
    # where discarding dispatches the full 16 per round.
    dispatched = trace.of("rollout").group.nunique()
    assert dispatched <= 1.1 * (100 + 4 + 1) * 8 + 16
    discard = simulate_spec(make_spec({**spec.sim, "oversample": {"factor": 2.0, "policy": "discard"}},
                                      prompts=8, group=4, staleness=4, steps=100))  # fmt: skip
    assert discard.of("rollout").group.nunique() >= (100 + 4) * 16


def test_partial_rollout_abort_at_weight_push_by_hand():
    # One slot, B = 1, 10 s samples, 3 s steps, push after every step, re-prefill 50% of the time generated:
    # each sample runs 3 s, is aborted at the push and resumes with 10 − 3 + 0.5 × 3 = 8.5 s left,
    # so a step takes 10 + 0.5 × 3 = 11.5 s, of which the trainer waits 8.5 s.
    spec = make_spec({"mode": "async", "concurrency": 1, "latency": 10.0, "train_step_time": 3.0,
                      "abort_on_weight_push": True, "reprefill_fraction": 0.5},
                     prompts=1, staleness=10, steps=20)  # fmt: skip
    trace = simulate_spec(spec)
    m = metrics_of(trace)
    assert m["step_time_mean_s"] == pytest.approx(11.5)
    assert m["trainer_idle_ratio"] == pytest.approx(8.5 / 11.5)
    assert m["partial_resumed_fraction"] == 1.0
    assert m["staleness_env_mean"] == 1.0 and m["staleness_env_max"] == 1.0
    assert m["partial_buffered_per_step"] == 1.0
    assert m["generator_utilization"] == pytest.approx(1.0)  # the one slot is never idle, and never counted twice
    resumed = trace.of("rollout").query("v_train >= 0 and attrs != ''")
    assert json.loads(resumed["attrs"].iloc[0]) == {"resumes": 1, "staleness_env": 1}


def test_requeue_in_quota_runs_exactly_factor_times_the_batch_each_round():
    # slime's Buffer.get_samples(over_sampling_batch_size): a round takes the buffered groups first, then tops up
    # from the dataset. Batch 4 groups, factor 2: the first round starts 8 new groups; at each fill the 4 unfinished
    # are aborted and resume in the next round beside 4 new ones, so 50 steps (51 rounds, the last dispatched as the
    # run ends) start 8 + 50 x 4 = 208 groups. Counted once per group instead, a group aborted twice takes a place
    # its round does not count, and rounds run more than 8 groups.
    def groups(requeue: bool) -> int:
        spec = make_spec({"mode": "sync", "concurrency": 64, "latency": {"mean": 30.0, "cv": 1.0},
                          "train_step_time": 5.0, "seed": 3,
                          "oversample": {"factor": 2.0, "policy": "partial", "requeue_in_quota": requeue}},
                         prompts=4, group=2, steps=50)  # fmt: skip
        return int(simulate_spec(spec).of("rollout")["group"].nunique())

    assert groups(True) == 8 + 50 * 4
    assert groups(False) > 8 + 50 * 4
    with pytest.raises(SpecError, match="requeue_in_quota needs policy = 'partial'"):
        make_spec({"oversample": {"factor": 2.0, "policy": "carry", "requeue_in_quota": True}})


def one_engine_rounds(seed: int, steps: int, **sim: object) -> ExperimentSpec:
    """One engine at one speed (step_s_per_seq 0), batches of 1 from rounds of 2 (partial rollout, aborted groups
    first), works alone of 10 or 30 s with 50 or 150 tokens (100 x latency / mean 20); `sim` adds or replaces."""
    return make_spec({"mode": "sync", "concurrency": 2, "latency": {"dist": "empirical", "values": [10.0, 30.0]},
                      "train_step_time": 1.0, "seed": seed, "tokens": {"prompt": 10, "response_mean": 100.0},
                      "decode": {"engines": 1, "step_s": 1.0, "step_s_per_seq": 0.0},
                      "oversample": {"factor": 2.0, "policy": "partial", "requeue_in_quota": True}, **sim},
                     prompts=1, group=1, steps=steps)  # fmt: skip


def test_off_policy_tokens_count_each_resumed_segment_after_its_re_prefill():
    # `one_engine_rounds`, re-prefill 0.5 x the time generated. Seed 6 draws 10, 30, 10:
    # sample 1 is aborted at t = 10 having decoded 10 / 30 x 150 = 50 tokens; it resumes at 11 with 20 + 5 s of
    # work beside sample 2 (10 s), which fills the batch at 21: 10 s done, the 5 s re-prefill first, so 5 / 30 x 150
    # = 25 more tokens; resumed again at 22, it counts 50 + 25 = 75 off-policy tokens (slime adds each resumed
    # sample's previous segment's completion tokens).
    spec = one_engine_rounds(6, 2, reprefill_fraction=0.5)
    rows = simulate_spec(spec).of("rollout")
    rows = rows.set_index(rows["sample"].astype(int))
    assert rows["response_tokens"].tolist()[:3] == [50, 150, 50]
    assert json.loads(rows.loc[1, "attrs"]) == {"resumes": 2, "staleness_env": 2, "off_policy_tokens": 75}
    assert rows.loc[1, "t1"] == 22.0 and rows.loc[2, "t1"] == 21.0 and rows.loc[0, "attrs"] == ""


def test_off_policy_and_decoded_tokens_per_round_count_as_slime_logs_them():
    # `one_engine_rounds`, re-prefill 0.2 x the time generated. Seed 15 draws 30, 10, 10, 30, 30 for samples 0-4.
    # Round 1: s1 ends at 10 (50); s0 aborted, 10 s done = 50 tokens.                    decoded 100, off 0
    # Round 2 (11): s0 resumes (+50 off) with 20 + 2 s; s2 ends at 21 (50); s0 aborted,
    #   10 s done of which 2 s re-prefill = 8 / 30 x 150 = 40 tokens.                      decoded 90, off 50
    # Round 3 (22): s0 resumes (+40: the previous segment only) with 12 + 4 s and ends at 38, its last 60 tokens;
    #   s3 aborted, 16 s done = 80 tokens.                                                 decoded 140, off 40
    # Round 4 (39): s3 resumes (+80) with 14 + 3.2 s, ends at 56.2 (70); s4 aborted at 17.2 s = 86 tokens.
    #                                                                                      decoded 156, off 80
    spec = one_engine_rounds(15, 4, reprefill_fraction=0.2)
    trace = simulate_spec(spec)
    rows = trace.of("rollout")
    rows = rows.set_index(rows["sample"].astype(int))
    assert rows["response_tokens"].tolist()[:5] == [150, 50, 50, 150, 150]
    assert rows.loc[0, "t1"] == 38.0 and rows.loc[3, "t1"] == pytest.approx(56.2)
    decoded = trace.of("samples.decoded_tokens").set_index("step")["value"]
    off = trace.of("samples.off_policy_tokens").set_index("step")["value"]
    assert decoded.to_numpy() == pytest.approx([100.0, 90.0, 140.0, 156.0])
    assert off.to_numpy() == pytest.approx([0.0, 50.0, 40.0, 80.0])
    assert round_off_policy_ratios(trace).to_numpy() == pytest.approx([0.0, 50 / 140, 40 / 180, 80 / 236])
    # the sample's attr keeps the sum of its aborted segments
    assert json.loads(rows.loc[0, "attrs"])["off_policy_tokens"] == 90


def test_runs_without_partial_rollout_emit_no_token_series():
    spec = one_engine_rounds(15, 4, oversample={"factor": 2.0, "policy": "discard"})
    trace = simulate_spec(spec)
    assert len(trace.of("rollout")) and not len(trace.of("samples.decoded_tokens"))
    assert not len(trace.of("samples.off_policy_tokens"))


def test_partial_rollout_buffers_rise_after_weight_pushes():
    # slime: the batch fills → surplus aborted and buffered; weights pushed every 5 steps abort everything.
    spec = make_spec({"mode": "async", "concurrency": 128, "latency": {"mean": 40.0, "cv": 0.6},
                      "train_step_time": 10.0, "oversample": {"factor": 4.0, "policy": "partial"},
                      "update_weights_interval": 5, "abort_on_weight_push": True, "reprefill_fraction": 0.05},
                     prompts=8, group=4, staleness=2, steps=60)  # fmt: skip
    trace = simulate_spec(spec)
    m = metrics_of(trace)
    assert m["wasted_generation_fraction"] == 0.0
    assert 0 < m["partial_resumed_fraction"] < 1 and m["staleness_env_max"] >= 1
    buffered = trace.of("samples.partial_buffered").set_index("step")["value"]
    after_push = buffered[(buffered.index % 5 == 1) & (buffered.index > 1)]
    others = buffered[(buffered.index % 5 != 1) & (buffered.index > 1)]
    assert after_push.mean() > 1.5 * others.mean()
    trained = trace.of("rollout").query("v_train >= 0")
    assert ((trained.v_end - trained.v_start) >= 0).all()
    assert (trained.v_start % 5 == 0).all()  # the generator only ever holds pushed weights
    # a resumed sample's row spans its aborted segments, but resumption is immediate: rows never outnumber slots
    rows = trace.of("rollout")
    edges = np.concatenate([rows["t0"].to_numpy(), rows["t1"].to_numpy()])
    order = np.lexsort((np.r_[np.ones(len(rows)), -np.ones(len(rows))], edges))  # ends before starts at a tie
    assert np.cumsum(np.r_[np.ones(len(rows)), -np.ones(len(rows))][order]).max() <= 128
    assert not len(trace.of("rollout.buffered"))


def test_sandbox_create_rate_and_timeout_fail_the_tail_of_a_burst():
    # 20 starts requested at t = 0, one create per second, 2 s to start, 10 s timeout: start k is ready at
    # k + 2, so k = 9..19 (11 of 20) time out and become reward-0 masked samples; 5 starts all succeed.
    sandbox = {"create_rate": 1.0, "start_s": {"mean": 2.0}, "start_timeout_s": 10.0, "policy": "mask"}
    trace = simulate_spec(make_spec({"mode": "sync", "concurrency": 20, "latency": 5.0, "train_step_time": 1.0,
                                     "pass_rate": 1.0, "sandbox": sandbox}, prompts=20, steps=1))  # fmt: skip
    starts = first_wave(trace.of("sandbox.start"), 20)  # the next batch is dispatched as the run ends
    assert len(starts) == 20 and (starts.status == "start_timeout").sum() == 11
    assert (starts[starts.status == "ok"].t1 - starts[starts.status == "ok"].t0 == 2.0).all()
    rollouts = first_wave(trace.of("rollout"), 20)
    masked = rollouts[rollouts["attrs"].str.contains("masked")]
    assert len(masked) == 11 and (masked.value == 0).all() and (masked.t1 - masked.t0 == 10.0).all()
    small = simulate_spec(make_spec({"mode": "sync", "concurrency": 5, "latency": 5.0, "train_step_time": 1.0,
                                     "sandbox": sandbox}, prompts=5, steps=3))  # fmt: skip
    assert metrics_of(small)["sandbox_init_failure_rate"] == 0.0


def test_sandbox_retries_back_off_then_mask_and_account_limit_fails_starts():
    # fail_p = 1, 2 s starts, 2 retries, 10 s backoff doubling: attempts end at 2, 14 and 36 s, then masked.
    sandbox = {"start_s": {"mean": 2.0}, "fail_p": 1.0, "max_retries": 2, "backoff_s": 10.0}
    trace = simulate_spec(make_spec({"mode": "sync", "concurrency": 2, "latency": 5.0, "train_step_time": 1.0,
                                     "sandbox": sandbox}, prompts=2, steps=1))  # fmt: skip
    assert len(first_wave(trace.of("sandbox.start"), 2)) == 6
    rollouts = first_wave(trace.of("rollout"), 2)
    assert (rollouts.t1 - rollouts.t0 == 36.0).all()
    limited = {"start_s": {"mean": 1.0}, "account_limit": 4, "start_timeout_s": 50.0, "policy": "mask"}
    trace = simulate_spec(make_spec({"mode": "sync", "concurrency": 10, "latency": 5.0, "train_step_time": 1.0,
                                     "sandbox": limited}, prompts=10, steps=1))  # fmt: skip
    starts = first_wave(trace.of("sandbox.start"), 10)
    assert (starts.status == "no_capacity").sum() == 6 and (starts.status == "ok").sum() == 4


def test_latency_is_llm_time_plus_environment_time_over_tool_calls():
    fixed = simulate_spec(make_spec({"mode": "sync", "concurrency": 4, "latency": 10.0, "train_step_time": 1.0,
                                     "turns": {"count": 5, "env_s": {"mean": 2.0}}}, steps=5))  # fmt: skip
    done = fixed.of("rollout").query("status == 'ok'")
    assert np.allclose(done.t1 - done.t0, 20.0)
    poisson = simulate_spec(make_spec({"mode": "async", "concurrency": 64, "latency": {"mean": 10.0, "cv": 0.5},
                                       "train_step_time": 1.0,
                                       "turns": {"count": 12, "dist": "poisson", "env_s": {"mean": 2.0, "cv": 1.0}}},
                                      prompts=16, staleness=4, steps=300))  # fmt: skip
    done = poisson.of("rollout").query("status == 'ok'")
    assert (done.t1 - done.t0).mean() == pytest.approx(10.0 + 12 * 2.0, rel=0.03)


def test_response_cap_truncates_the_lognormal_tail():
    # response tokens ∝ LLM time, mean 1000 at 60 s; cap 1500 truncates P(X > 90 s) of the samples.
    spec = make_spec({"mode": "async", "concurrency": 64, "latency": {"mean": 60.0, "cv": 0.5},
                      "train_step_time": 1.0, "tokens": {"prompt": 200, "response_mean": 1000}},
                     prompts=16, staleness=4, steps=300, max_response_tokens=1500)  # fmt: skip
    trace = simulate_spec(spec)
    m = metrics_of(trace)
    assert m["response_truncated_fraction"] == pytest.approx(lognormal(60.0, 0.5).sf(90.0), abs=0.01)
    done = trace.of("rollout").query("status == 'ok'")
    assert (done.t1 - done.t0).max() == pytest.approx(90.0)
    assert done.response_tokens.max() == 1500 and (done.prompt_tokens == 200).all()


def test_pass_rate_mixture_gives_the_zero_advantage_closed_form():
    # 55% always solved, 10% never, the rest Beta(1, 1): z = 0.65 + 0.35 × 2 / (G + 1) with G = 8.
    spec = make_spec({"mode": "async", "concurrency": 256, "latency": {"mean": 5.0, "cv": 0.5},
                      "train_step_time": 1.0, "pass_rate": {"dist": "mixture", "always": 0.55, "never": 0.1}},
                     prompts=8, group=8, staleness=4, steps=300)  # fmt: skip
    assert metrics_of(simulate_spec(spec))["zero_adv_group_fraction"] == pytest.approx(0.65 + 0.35 * 2 / 9, abs=0.015)


def test_throughput_bound_engines_cap_generation():
    # 256 slots on 4 engines saturating at 32 sequences each: LLM time doubles, rate = 256 / (2 × 60 s).
    spec = make_spec({"mode": "async", "concurrency": 256, "latency": {"mean": 60.0, "cv": 0.5},
                      "train_step_time": 20.0, "saturation": {"engines": 4, "seqs_per_engine": 32}},
                     prompts=128, staleness=1000, steps=200)  # fmt: skip
    m = metrics_of(simulate_spec(spec))
    assert m["trainer_idle_ratio"] == pytest.approx(1 - (256 / 120.0) / (128 / 20.0), abs=0.02)


def test_cost_per_step_and_per_million_trained_tokens():
    resources = {"trainer_gpus": 8, "generator_gpus": 16, "price_per_gpu_hour": 2.0,
                 "generator_price_per_gpu_hour": 3.0}  # fmt: skip
    spec = make_spec({"mode": "sync", "concurrency": 4, "latency": 10.0, "train_step_time": 5.0,
                      "tokens": {"prompt": 100, "response_mean": 900}}, steps=10, resources=resources)  # fmt: skip
    m = metrics_of(simulate_spec(spec))
    assert m["step_time_mean_s"] == pytest.approx(15.0)
    assert m["gpu_hours_per_step"] == pytest.approx(24 * 15 / 3600)
    dollars_per_step = (8 * 2.0 + 16 * 3.0) * 15 / 3600
    assert m["cost_per_step"] == pytest.approx(dollars_per_step)
    assert m["cost_per_mtok"] == pytest.approx(dollars_per_step / (4 * 1000 / 1e6))


def test_staleness_threshold_admits_a_fraction_of_a_push_ahead_counted_from_the_last_push():
    # B = 4, a push every 2 steps, threshold 0.5: (1 + 0.5) x 2 - 1 = 2 steps of lookahead from the pushed version,
    # so 12 samples start at t = 0, none when step 1 ends (no push), 8 more when step 2 ends and pushes (v = 2).
    spec = make_spec({"mode": "async", "concurrency": 100, "latency": 10.0, "train_step_time": 100.0,
                      "update_weights_interval": 2, "staleness_threshold": 0.5}, steps=3)  # fmt: skip
    trace = simulate_spec(spec)
    starts = trace.of("rollout")["t0"].value_counts().sort_index()
    ends = trace.of("trainer.step")["t1"].tolist()
    assert ends[:2] == [110.0, 210.0]
    assert starts.to_dict() == {0.0: 12, 210.0: 8}


def test_staleness_threshold_needs_async_count_admission():
    with pytest.raises(SpecError, match="staleness_threshold needs mode = 'async'"):
        simulate_spec(make_spec({"mode": "sync", "staleness_threshold": 0.5}))


def test_a_sample_resumed_where_it_was_aborted_finishes_once():
    # One slot, 10 s samples, a push every 3 s step aborting the running sample; with no re-prefill the sample
    # resumes at once, ending when it would have: every step waits for one sample, so a step takes 10 s and the
    # trainer trains one sample per step (a double finish would queue it twice and halve the wait).
    spec = make_spec({"mode": "async", "concurrency": 1, "latency": 10.0, "train_step_time": 3.0,
                      "abort_on_weight_push": True}, prompts=1, staleness=10, steps=10)  # fmt: skip
    trace = simulate_spec(spec)
    m = metrics_of(trace)
    assert m["step_time_mean_s"] == pytest.approx(10.0)
    assert m["trainer_idle_ratio"] == pytest.approx(7.0 / 10.0)
    rows = trace.of("rollout")
    assert rows["sample"].is_unique and len(rows.query("v_train >= 0")) == 10


def test_groups_in_flight_cap_holds_a_place_until_the_group_ends():
    # Groups of 2 samples of 10 s, a 1 s trainer step of one group, 40 steps. With 8 slots 4 groups run at once
    # (4 steps per 10 s: the last ends at 10 x 10 + 4 = 104 s); capped at 2 groups in flight, 2 steps per 10 s
    # (20 x 10 + 2 = 202 s); capped at 1, a group starts only when the last one ends (40 x 10 + 1 = 401 s).
    def last_step_end(cap: int | None) -> float:
        sim = {"mode": "async", "concurrency": 8, "latency": 10.0, "train_step_time": 1.0}
        trace = simulate_spec(make_spec({**sim, "max_groups_in_flight": cap} if cap else sim, prompts=1, group=2,
                                        staleness=100, steps=40))  # fmt: skip
        return float(trace.of("trainer.step")["t1"].max())

    assert [last_step_end(cap) for cap in (None, 2, 1)] == [104.0, 202.0, 401.0]
