"""Read env-server logs (logs/latest/envs/train/<env>.log): rollout start / sandbox up / rollout done lines.

The fallback for episodes and sandbox starts when a run has no traces.jsonl. `sandbox <id> up` does not name
the rollout, so an up line is paired with the oldest sandbox rollout still waiting for its box (first in, first
out); start latencies from these logs are therefore approximate under concurrency, and the trace says so."""

from __future__ import annotations

import heapq
import math
import re
from pathlib import Path

from benchbed.adapters.prime_rl.console import iter_records
from benchbed.adapters.prime_rl.model import Episode, RunData, SandboxBoot
from benchbed.adapters.prime_rl.sandbox import SANDBOX_RUNTIMES

START = re.compile(r"rollout start: id=(\S+) task=(\S+) harness=(\S+) runtime=(\S+)")
UP = re.compile(r"(\w+): sandbox (\S+) up \(image=([^)]*)\)")
DONE = re.compile(r"rollout done: id=(\S+) task=(\S+) reward=(\S+) turns=(\d+) stop=(\S+)")


def read_env_log(path: Path, data: RunData, offset_s: float = 0.0) -> int:
    """Add one Episode per `rollout done` line (with its sandbox boot); returns how many lines were recognized.

    `offset_s` is added to the log's clock (text logs only carry HH:mm:ss) to align it with other sources."""
    started: dict[str, tuple[float, str]] = {}
    done: dict[str, tuple[float, re.Match[str], int]] = {}
    ups: list[tuple[float, str]] = []
    for rec in iter_records(path):
        t = rec.t + offset_s
        if m := START.search(rec.message):
            started[m.group(1)] = (t, m.group(4))
        elif m := UP.search(rec.message):
            ups.append((t, m.group(2)))
        elif m := DONE.search(rec.message):
            done[m.group(1)] = (t, m, rec.lineno)
    boots = _pair_boots(started, done, ups)
    for rollout_id, (t, m, lineno) in done.items():
        stop = m.group(5)
        t0, runtime = started.get(rollout_id, (t, ""))
        ok = stop not in _ERROR_STOPS and not stop.endswith("Error")
        episode = Episode(
            id=rollout_id,
            group="",
            window_step=-1,
            t0=t0,
            t1=t,
            ok=ok,
            stop=stop,
            reward=_float(m.group(3)),
            error_type="" if ok else stop,
            env=path.stem,
            source=f"{path}:{lineno}",
        )
        boot = boots.get(rollout_id)
        if boot is None and _boot_failed(runtime, m):
            boot = SandboxBoot(runtime, t0, t, False, message="stop=SandboxError (provider message not logged)")
        if boot is not None:
            episode.boots.append(boot)
        data.episodes.append(episode)
    recognized = len(started) + len(done) + len(ups)
    if recognized:
        data.sources.append(str(path))
    return recognized


def _boot_failed(runtime: str, done: re.Match[str]) -> bool:
    return runtime in SANDBOX_RUNTIMES and done.group(5) == "SandboxError" and done.group(4) == "0"


def _pair_boots(
    started: dict[str, tuple[float, str]],
    done: dict[str, tuple[float, re.Match[str], int]],
    ups: list[tuple[float, str]],
) -> dict[str, SandboxBoot]:
    """Match each `sandbox up` line to a sandbox rollout that was running then (earliest finishing first).

    A rollout can only own an up line between its start and its done line; picking the candidate that finishes
    first is the greedy rule that matches the most lines."""
    events: list[tuple[float, int, str]] = []
    for rollout_id, (t0, runtime) in started.items():
        end = done.get(rollout_id)
        if runtime not in SANDBOX_RUNTIMES or (end is not None and _boot_failed(runtime, end[1])):
            continue
        events.append((t0, 0, rollout_id))
    events += [(t, 1, str(i)) for i, (t, _) in enumerate(ups)]
    events.sort()
    open_heap: list[tuple[float, str]] = []
    out: dict[str, SandboxBoot] = {}
    for t, kind, ref in events:
        if kind == 0:
            end = done.get(ref)
            heapq.heappush(open_heap, (end[0] if end else math.inf, ref))
            continue
        while open_heap and open_heap[0][0] < t:
            heapq.heappop(open_heap)
        if open_heap:
            _, rollout_id = heapq.heappop(open_heap)
            t0, runtime = started[rollout_id]
            out[rollout_id] = SandboxBoot(runtime, t0, t, True, sandbox_id=ups[int(ref)][1])
    return out


_ERROR_STOPS = frozenset({"error", "SandboxError", "cancelled"})


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan
