"""Alarms from alarms.toml fire once, on the figures they name, past their thresholds."""

from __future__ import annotations

from benchbed.watch.alarms import check, load_rules, run_on_alarm
from benchbed.watch.live import LiveFigures


def test_stall_zero_advantage_and_staleness_alarms_fire_once() -> None:
    rules = load_rules()
    figures = LiveFigures(warmup_steps=0, staleness_bound=1.0)
    for step in range(1, 4):
        for zero in (True, True, False):
            figures.group(zero)
        figures.staleness([0.0, 2.0])
        figures.step(step, 2.0, 1.0, 4, observed_at=10.0 * step)
    fired: set[str] = set()
    assert {a.rule.name for a in check(rules, figures, now=30.0 + 11.0, fired=fired)} == {
        "zero_advantage", "staleness_beyond_bound"
    }  # fmt: skip
    stalled = check(rules, figures, now=30.0 + 13.0, fired=fired)
    assert [(a.rule.name, a.value) for a in stalled] == [("step_stalled", 6.5)]
    assert check(rules, figures, now=100.0, fired=fired) == []
    assert stalled[0].env()["BENCHBED_ALARM"] == "step_stalled"


def test_no_stall_once_every_step_of_the_run_is_done() -> None:
    figures = LiveFigures(warmup_steps=0, total_steps=3)
    for step in range(1, 4):
        figures.step(step, 2.0, 1.0, 4, observed_at=10.0 * step)
    assert check(load_rules(), figures, now=1000.0, fired=set()) == []  # shutting down after step 3 of 3
    figures.total_steps = 4
    assert [a.rule.name for a in check(load_rules(), figures, now=1000.0, fired=set())] == ["step_stalled"]


def test_a_failing_on_alarm_command_is_one_line() -> None:
    figures = LiveFigures(warmup_steps=0, total_steps=9)
    for step in range(1, 4):
        figures.step(step, 2.0, 1.0, 4, observed_at=10.0 * step)
    (alarm,) = check(load_rules(), figures, now=1000.0, fired=set())
    assert run_on_alarm('test "$BENCHBED_ALARM" = step_stalled', alarm) is None
    failed = run_on_alarm("echo no >&2; exit 3", alarm)
    assert failed == "--on-alarm 'echo no >&2; exit 3' for step_stalled: exit status 3: no"
