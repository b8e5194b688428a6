"""Console-line reading: Ray prefixes, Python-repr dicts with nan, which process printed a `perf N:` line."""

from __future__ import annotations

import math

import pytest
from benchbed.adapters.slime.console import is_trainer_perf, parse_console, strip_prefix

from benchbed.adapterkit.pyrepr import ReprError, parse_repr_dict

# Verbatim from slime issue #1837 (RolloutManager, pre-#2298 file name).
ISSUE_1837 = (
    "(RolloutManager pid=1805485) [2026-04-15 07:57:53] rollout.py:1193 - perf 0: {'rollout/response_len/mean': "
    "2773.71484375, 'rollout/response_len/median': 2837.5, 'rollout/response_len/max': 4096, "
    "'rollout/response_len/min': 593, 'rollout/zero_std/count_0': 12, 'rollout/zero_std/count_1': 14, "
    "'rollout/repetition_frac': 0.0, 'rollout/truncated_ratio': 0.46484375, 'perf/rollout_time': 371.1796889305115, "
    "'perf/tokens_per_gpu_per_sec': 239.12643295688667, 'perf/longest_sample_tokens_per_sec': 11.035086568992766, "
    "'perf/effective_tokens_per_gpu_per_sec': 239.12643295688667, "
    "'perf/longest_effective_sample_tokens_per_sec': 11.035086568992766}"
)


def test_repr_dict_reads_nan_inf_and_numpy_scalars() -> None:
    d = parse_repr_dict("{'train/grad_norm': nan, 'a': -inf, 'b': np.float64(0.5), 'c': np.int64(3), 'd': [1, 2]}")
    assert math.isnan(d["train/grad_norm"])
    assert d["a"] == -math.inf
    assert d["b"] == 0.5 and d["c"] == 3 and d["d"] == [1, 2]


@pytest.mark.parametrize(
    "text", ["{'a': __import__('os').system('true')}", "{'a': 1", "[1, 2]", "{'a': x}", "{'a': 1 + 2}"]
)
def test_repr_dict_refuses_anything_but_literals(text: str) -> None:
    with pytest.raises(ReprError):
        parse_repr_dict(text)


def test_strip_prefix_handles_colours_remote_ip_and_dedup_suffix() -> None:
    actor, pid, text = strip_prefix(
        "\x1b[36m(RolloutManager pid=2211, ip=10.0.3.17)\x1b[0m [2026-01-01 00:00:00] x.py:1 - hi "
        "[repeated 3x across cluster]\n"
    )
    assert (actor, pid) == ("RolloutManager", "2211")
    assert text == "[2026-01-01 00:00:00] x.py:1 - hi"
    assert strip_prefix("[2026-01-01 00:00:00] train.py:9 - driver")[0] == ""


def test_real_rollout_manager_line_is_read_as_rollout_side() -> None:
    log = parse_console([ISSUE_1837], "issue1837.log")
    (metric,) = log.metrics
    assert (metric.kind, metric.id, metric.actor, metric.file, metric.line) == (
        "perf",
        0,
        "RolloutManager",
        "rollout.py",
        1193,
    )
    assert metric.values["rollout/zero_std/count_1"] == 14
    assert metric.values["perf/rollout_time"] == pytest.approx(371.1796889305115)
    assert is_trainer_perf(metric) is False


def test_perf_side_is_decided_by_keys_before_actor() -> None:
    lines = [
        "(MegatronTrainRayActor pid=1) [2026-01-01 00:00:10] train_metric_utils.py:401 - perf 3: "
        "{'perf/train_wait_time': 1.0, 'perf/train_time': 2.0}",
        # keys win over a misleading prefix (e.g. a log re-emitted by a wrapper process)
        "(MegatronTrainRayActor pid=1) [2026-01-01 00:00:11] rollout_metrics.py:268 - perf 4: "
        "{'perf/rollout_time': 5.0}",
        "(RolloutManager pid=2) [2026-01-01 00:00:12] custom.py:1 - perf 5: {'agent/turns': 3}",
        "[2026-01-01 00:00:13] custom.py:1 - perf 6: {'agent/turns': 3}",
    ]
    sides = [is_trainer_perf(m) for m in parse_console(lines, "x.log").metrics]
    assert sides == [True, False, False, None]


def test_unparseable_dict_is_skipped_with_a_warning_naming_the_line() -> None:
    lines = ["noise", "[2026-01-01 00:00:00] train_metric_utils.py:401 - perf 1: {'perf/train_time': 1.0, 'x"]
    log = parse_console(lines, "run.log")
    assert log.metrics == []
    assert len(log.warnings) == 1 and log.warnings[0].startswith("run.log:2: skipped `perf 1:` line")


def test_timer_fully_async_sandbox_and_megatron_argument_lines() -> None:
    lines = [
        "------------------------ arguments ------------------------",
        "  colocate ........................................ False",
        "  rollout_batch_size .............................. 32",
        "-------------------- end of arguments ---------------------",
        "(MegatronTrainRayActor pid=7) [2026-01-01 00:00:05] timer.py:32 - Timer update_weights end (elapsed: 12.5s)",
        "(RolloutManager pid=8) [2026-01-01 00:00:06] fully_async_rollout.py:216 - fully-async rollout 4: target=8 "
        "queue_warm=3",
        "(RolloutManager pid=8) [2026-01-01 00:00:07] generate.py:119 - [coding_agent_rl] a__b-1: provision attempt "
        "1/2 failed: RateLimitError: slow down",
    ]
    log = parse_console(lines, "x.log")
    assert log.args == {"colocate": "False", "rollout_batch_size": "32"}
    (timer,) = log.timers
    assert (timer.name, timer.what, timer.elapsed) == ("update_weights", "end", 12.5)
    assert log.fully_async[0][0] == 4
    (sb,) = log.sandbox
    assert sb.kind == "provision_failed" and sb.instance == "a__b-1"
    assert sb.detail == {"attempt": 1, "max_attempts": 2, "error_type": "RateLimitError", "message": "slow down"}


def test_hard_wrapped_dicts_from_pasted_logs_are_rejoined() -> None:
    # As pasted in slime PR #1102: the terminal wrapped the dict mid-key.
    lines = [
        "(MegatronTrainRayActor pid=38610) [2026-01-05 12:20:29] train_metric_utils.py:44 - perf 2: {'perf/sleep_ti",
        "me': 4.04, 'perf/train_wait_time': 11.33, 'perf/actor_train_time': 1.02, 'perf/tr",
        "ain_time': 2.84}",
        "(MegatronTrainRayActor pid=38610) [2026-01-05 12:20:30] timer.py:24 - Timer train_wait start",
    ]
    log = parse_console(lines, "pasted.log")
    assert log.warnings == []
    (metric,) = log.metrics
    assert (metric.id, metric.lineno) == (2, 1)
    assert metric.values == {"perf/sleep_time": 4.04, "perf/train_wait_time": 11.33, "perf/actor_train_time": 1.02,
                             "perf/train_time": 2.84}  # fmt: skip
    assert len(log.timers) == 1
