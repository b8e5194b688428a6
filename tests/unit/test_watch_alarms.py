"""Alarms from alarms.toml fire once, on the figures they name, past their thresholds."""

from __future__ import annotations

from benchbed.watch.alarms import check, load_rules
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
