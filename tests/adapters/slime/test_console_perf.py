"""slime `perf N: {...}` dictionaries pasted without the logger prefix, or split over lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchbed.adapters.slime import SlimeAdapter
from benchbed.adapters.slime.console import parse_console
from hypothesis import given, settings
from hypothesis import strategies as st

from benchbed import keys as K

PERF = "perf {n}: {{'perf/train_wait_time': {wait}, 'perf/actor_train_time': {train}, 'perf/train_time': {train}, " \
    "'perf/step_time': {step}, 'perf/wait_time_ratio': {ratio}}}"  # fmt: skip


def _perf(n: int, wait: float, step: float) -> str:
    return PERF.format(n=n, wait=wait, train=round(step - wait, 6), step=step, ratio=wait / step)


def test_bare_pasted_perf_lines_are_read(tmp_path: Path) -> None:
    log = tmp_path / "pasted.txt"
    log.write_text(_perf(1, 6.0, 8.0) + "\n" + _perf(2, 4.0, 6.0) + "\n")
    trace = SlimeAdapter().parse(log)
    steps = trace.events[trace.events["key"] == K.TRAINER_STEP]
    assert len(steps) == 2


def test_a_dict_split_over_lines_is_joined_not_dropped() -> None:
    whole = _perf(3, 6.0, 8.0)
    cut = whole.index("'perf/train_time'")
    for lines in (
        [whole[:cut], whole[cut:]],  # a bare paste
        [f"[2026-01-05 12:21:29] train_metric_utils.py:401 - {whole[:cut]}", whole[cut:]],
        [f"(TrainRayActor pid=7) [2026-01-05 12:21:29] train_metric_utils.py:401 - {whole[:cut]}",
         f"(TrainRayActor pid=7) {whole[cut:]}"],  # Ray prefixes every physical line
    ):  # fmt: skip
        log = parse_console(lines, "split.log")
        assert [(m.kind, m.id, m.values["perf/step_time"]) for m in log.metrics] == [("perf", 3, 8.0)]
        assert not log.warnings


def test_a_dict_that_never_closes_is_reported() -> None:
    log = parse_console([_perf(4, 6.0, 8.0)[:40], "something else entirely"], "cut.log")
    assert not log.metrics
    assert any("cut.log:1: skipped `perf 4:` line" in w for w in log.warnings)


@settings(max_examples=20, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0.0, 100.0), st.floats(0.5, 100.0)), min_size=1, max_size=5),
    st.sampled_from(["logger", "bare"]),
    st.integers(0, 3),
)
def test_random_perf_console_files_parse_to_their_steps(tmp_path_factory, steps, style, split_at) -> None:
    lines: list[str] = []
    for n, (wait, compute) in enumerate(steps):  # rollout ids count from 0; step N+1 trains rollout N
        text = _perf(n, round(wait, 3), round(wait, 3) + round(compute, 3))
        if style == "logger":
            text = f"[2026-01-05 12:{n:02d}:00] train_metric_utils.py:401 - {text}"
        if split_at:  # hard-wrapped somewhere inside the dict
            brace = text.index("{")
            cut = brace + 1 + (len(text) - brace - 2) * split_at // 4
            lines += [text[:cut], text[cut:]]
        else:
            lines.append(text)
    path = tmp_path_factory.mktemp("slime") / "run.log"
    path.write_text("\n".join(lines) + "\n")
    trace = SlimeAdapter().parse(path)
    got = trace.events[trace.events["key"] == K.TRAINER_STEP]
    assert sorted(got["step"].astype(int)) == list(range(1, len(steps) + 1))
    total = got["value"].where(got["kind"] == "agg", got["t1"] - got["t0"])
    assert total.sum() == pytest.approx(sum(round(w, 3) + round(c, 3) for w, c in steps), rel=1e-6)
