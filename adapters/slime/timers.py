"""Rebuild the trainer's per-step timer dicts from `Timer <name> start/end (elapsed: Ns)` lines, for logs whose
`perf N:` lines are missing (slime's trainer rank 0 prints every timer it stops)."""

from __future__ import annotations

from collections import Counter, defaultdict

from benchbed.adapters.slime.console import TimerLine
from benchbed.adapters.slime.trainer import Perf


def perf_from_timers(timers: list[TimerLine], first_id: int = 0) -> dict[int, Perf]:
    """One dict per `Timer train end`, holding every timer stopped since the previous one, as log_perf_data would.

    Timer lines carry no rollout id, so steps are numbered from first_id in log order. ref_model_update, stopped
    right after the train block but before slime logs the dict, joins the dict just closed."""
    ends = [t for t in timers if t.what == "end" and t.elapsed == t.elapsed]  # elapsed is NaN on malformed lines
    closing = Counter(t.pid for t in ends if t.name == "train")
    if not closing:
        return {}
    pid = closing.most_common(1)[0][0]  # the actor's rank 0 (a critic's rank 0 has no `train` timer)
    out: dict[int, Perf] = {}
    acc: dict[str, float] = defaultdict(float)
    since_close = 0
    for t in sorted((t for t in ends if t.pid == pid), key=lambda t: t.lineno):
        if t.name == "ref_model_update" and since_close == 0 and out:
            last = out[max(out)]
            last.values["perf/ref_model_update_time"] = last.values.get("perf/ref_model_update_time", 0.0) + t.elapsed
            continue
        acc[t.name] += t.elapsed
        since_close += 1
        if t.name == "train":
            rid = first_id + len(out)
            out[rid] = Perf({f"perf/{k}_time": v for k, v in acc.items()}, t.ts, f"Timer lines up to line {t.lineno}")
            acc = defaultdict(float)
            since_close = 0
    return out
