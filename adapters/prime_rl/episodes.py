"""Read per-step episode files rollouts/step_N/train/{all,effective}/traces.jsonl (verifiers `Episode.to_record()`).

`all` holds every episode that arrived while batch N was being collected (errored and cancelled ones too);
`effective` holds the episodes batch N actually shipped to the trainer, so it fixes v_train = N - 1."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbed.adapters.prime_rl.model import Episode, RunData, SandboxBoot
from benchbed.adapters.prime_rl.sandbox import SANDBOX_RUNTIMES, is_provisioning_error
from orjson import loads as _loads  # ~3x faster than the standard library on episode records

from benchbed.adapterkit.lines import JsonLines

STEP_DIR = re.compile(r"^step_(\d+)$")
_ID_START = b'{"id":"'
_PHASES = ("boot", "setup", "agent", "finalize", "scoring")
# Most of a record's bytes are what benchbed never reads: each trace's message graph (token ids, logprobs), the
# task payload (prompt, data) stored once per episode and once per trace, and the agent's config.
# They are cut out by byte search before parsing. Pydantic dumps fields in declaration order (verifiers@a60a606
# and 0.3.1: Episode = id, env, task, group, run, ok, errors, traces; Trace = version, id, verifiers, task, agent,
# tools, nodes, calls, mm_token_type_id_map (0.3.1 on), request_rewrites, ...; AgentInfo = config, runtime, ...;
# AgentConfig ends with its timeout and retries tables), and `,"` / `},"` never occur inside a JSON string, so
# the markers are structural. The model calls after the graph are kept: their `usage` gives the token counts
# (verifiers `ModelCall.usage`: prompt_tokens without cache reads, cached_input_tokens, completion_tokens). A cut
# that does not fit (a nested key of the same name) leaves invalid JSON, and
# then the whole line is parsed instead.
_TASK = b',"task":{"type":'
_TASK_ENDS = (b'},"group":{"id":', b'},"run":{"type":')
_TRACE_TASK_END = b'},"agent":{'
_CONFIG = b'"config":{'
_CONFIG_END = b'}},"runtime":{'
_TOOLS = b',"tools":['
_NODES = b',"nodes":['
_NODES_END = b'],"calls":['
MAX_MESSAGE = 500


def step_dirs(run_dir: Path) -> list[tuple[int, Path]]:
    """(N, rollouts/step_N) sorted by N."""
    root = run_dir / "rollouts"
    if not root.is_dir():
        return []
    out = []
    for child in root.iterdir():
        m = STEP_DIR.match(child.name)
        if m and child.is_dir():
            out.append((int(m.group(1)), child))
    return sorted(out)


@dataclass
class StepFiles:
    """What one rollouts/step_N folder holds."""

    step: int
    episodes: list[Episode] = field(default_factory=list)
    trained_ids: list[str] | None = None  # None when the folder has no effective file
    warnings: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)


def read_step_folder(step: int, folder: Path) -> StepFiles:
    """Episodes of train/all (or train/effective when `all` is missing) and the ids train/effective shipped."""
    out = StepFiles(step)
    all_path = folder / "train" / "all" / "traces.jsonl"
    eff_path = folder / "train" / "effective" / "traces.jsonl"
    if eff_path.exists():
        out.trained_ids = _read_ids(eff_path, out.warnings)
        out.sources.append(str(eff_path))
    source = all_path if all_path.exists() else eff_path if eff_path.exists() else None
    if source is None:
        return out
    if source is all_path:
        out.sources.append(str(all_path))
    for lineno, record in JsonLines(source, out.warnings, load_record):
        episode = episode_from_record(record, step, f"{source}:{lineno}", out.warnings)
        if episode is not None:
            out.episodes.append(episode)
    return out


def read_episode_files(run_dir: Path, data: RunData) -> int:
    """Fill data.episodes and data.trained_at from every train episode file; returns the number of step folders."""
    folders = step_dirs(run_dir)
    for step, folder in folders:
        part = read_step_folder(step, folder)
        data.episodes += part.episodes
        data.warnings += part.warnings
        data.sources += part.sources
        if part.trained_ids is not None:
            data.effective_steps.add(step)
            for episode_id in part.trained_ids:
                data.trained_at[episode_id] = step
    return len(folders)


def _read_ids(path: Path, warnings: list[str]) -> list[str]:
    """Episode ids of an effective file. The id is the first key of every record, so the ids are found by byte
    search for `{"id":"` at line starts without splitting or parsing the (large) records."""
    data = path.read_bytes()
    ids = []
    pos = 0
    lineno = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        lineno += 1
        if data.startswith(_ID_START, pos):
            stop = data.find(b'"', pos + len(_ID_START), end)
            if stop > 0:
                ids.append(data[pos + len(_ID_START) : stop].decode())
                pos = end + 1
                continue
        line = data[pos:end]
        if line.strip():
            try:
                ids.append(str(json.loads(line)["id"]))
            except (ValueError, KeyError, TypeError):
                warnings.append(f"{path}:{lineno}: skipped effective episode line without a readable id")
        pos = end + 1
    return ids


def slim(raw: bytes) -> bytes:
    """The record without task payloads, agent configs and traces' `nodes` (byte search, no parse)."""
    cuts: list[tuple[int, int]] = []
    i = raw.find(_TASK)
    ends = [j for m in _TASK_ENDS if (j := raw.find(m, i)) >= 0] if i >= 0 else []
    pos = 0
    if ends:
        pos = min(ends) + 1
        cuts.append((i, pos))
    while (i := raw.find(_TASK, pos)) >= 0:  # one task per trace, then its agent, tools, nodes and calls
        j = raw.find(_TRACE_TASK_END, i)
        if j < 0:
            break
        cuts.append((i, j + 1))
        agent_body = j + len(_TRACE_TASK_END)
        k = raw.find(_CONFIG_END, agent_body)
        if raw.startswith(_CONFIG, agent_body) and 0 <= k < raw.find(_TOOLS, agent_body):
            cuts.append((agent_body, k + 3))  # from `"config":{` up to the runtime info's `"runtime":{`
        n = raw.find(_NODES, j)
        m = raw.find(_NODES_END, n) if n >= 0 else -1
        if m < 0:
            break
        cuts.append((n, m + 1))  # from `,"nodes":[` to the `]` closing it; `,"calls":[` follows the agent's tools
        pos = m
    if not cuts:
        return raw
    parts = []
    pos = 0
    for start, end in cuts:
        parts.append(raw[pos:start])
        pos = end
    parts.append(raw[pos:])
    return b"".join(parts)


def load_record(raw: bytes) -> Any:
    """Parse a record, skipping the token arrays when the cut leaves valid JSON; else parse it whole."""
    cut = slim(raw)
    if cut is not raw:
        try:
            return _loads(cut)
        except ValueError:
            pass
    return _loads(raw)


def _num(value: Any) -> float:
    return float(value) if value.__class__ in (float, int) else math.nan


def _dict(value: Any) -> dict[str, Any]:
    return value if value.__class__ is dict else {}


def episode_from_record(record: dict[str, Any], window_step: int, where: str, warnings: list[str]) -> Episode | None:
    """The fields benchbed needs from one episode record; None (with a warning) if it is not an episode.

    Well-formed records (every field prime-rl@559b447 writes for a train episode) take a direct path; anything
    else, or a non-finite number, goes through the defensive reader."""
    try:
        episode = episode_direct(record, window_step, where)
    except (KeyError, TypeError, AttributeError, ValueError, IndexError):
        episode = None
    if episode is not None:
        return episode
    return episode_careful(record, window_step, where, warnings)


def episode_direct(record: dict[str, Any], window_step: int, where: str) -> Episode | None:
    """Direct indexing of a complete record; raises (or returns None) when the record is not that regular."""
    episode_id = record["id"]
    policy = record["run"]["work"]["policy"]
    env = record["env"]
    errors = record["errors"]
    traces = record["traces"]
    last_error = errors[-1] if errors else None
    starts = []
    ends = []
    rewards = []
    boots = []
    stop = ""
    for trace in traces:
        timing = trace["timing"]
        start = timing["start"]
        if start > 0:
            starts.append(start)
        phase_ends = [e for p in _PHASES if (e := timing[p]["end"]) > 0]
        ends += phase_ends
        scored = [r["score"] * r["weight"] for r in trace["rewards"].values() if r is not None]
        if scored:
            rewards.append(sum(scored))
        stop = trace.get("stop_condition") or stop
        if last_error is None and trace["errors"]:
            last_error = trace["errors"][-1]
        runtime = trace["agent"].get("runtime")
        if runtime is not None and runtime["type"] in SANDBOX_RUNTIMES and timing["boot"]["start"] > 0:
            boots.append(_boot(trace, timing, phase_ends, errors))
    reward = sum(rewards) / len(rewards) if rewards else math.nan
    if not (math.isfinite(reward) or not rewards) or not math.isfinite(sum(starts) + sum(ends)):
        return None  # the careful reader warns about it
    t0 = min(starts) if starts else math.nan
    prompt_tokens, response_tokens = episode_tokens(traces)
    return Episode(
        id=episode_id,
        group=record["group"]["id"],
        window_step=window_step,
        v_start=policy["start"],
        v_end=policy["end"],
        ok=record["ok"],
        error_type=last_error["type"] if last_error else "",
        error_message=last_error["message"][:MAX_MESSAGE] if last_error else "",
        reward=reward,
        t0=t0,
        t1=(max(ends) if ends else t0) if starts else math.nan,
        env=env.get("name") or env["id"],
        stop=stop,
        boots=boots,
        source=where,
        prompt_tokens=prompt_tokens,
        response_tokens=response_tokens,
    )


def episode_tokens(traces: list[Any]) -> tuple[int, int]:
    """(prompt, response) tokens of an episode's model calls, summed over its traces; (-1, -1) if no call reported
    usage. Response = Σ completion_tokens; prompt = the tokens fed in, each counted once: per call, its input
    (prompt_tokens + cached_input_tokens) beyond the previous call's whole sequence (verifiers'
    `Trace.num_input_tokens`), so a multi-turn history is not counted again at every turn."""
    prompt = response = 0
    seen = False
    for trace in traces:
        calls = trace.get("calls") if trace.__class__ is dict else None
        if calls.__class__ is not list:
            continue
        previous = 0
        for call in calls:
            usage = call.get("usage") if call.__class__ is dict else None
            if usage.__class__ is not dict:
                continue
            given, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
            cached = usage.get("cached_input_tokens")
            if given.__class__ is not int or completion.__class__ is not int:
                continue
            fed = given + (cached if cached.__class__ is int else 0)
            prompt += max(0, fed - previous)
            response += completion
            previous = fed + completion
            seen = True
    return (prompt, response) if seen else (-1, -1)


def episode_careful(record: dict[str, Any], window_step: int, where: str, warnings: list[str]) -> Episode | None:
    """Field by field with defaults, for records with missing or odd fields."""
    episode_id = record.get("id")
    if episode_id.__class__ is not str:
        warnings.append(f"{where}: skipped record without an episode id")
        return None
    env = _dict(record.get("env"))
    policy = _dict(_dict(_dict(record.get("run")).get("work")).get("policy"))
    errors = [e for e in record.get("errors") or () if e.__class__ is dict]
    traces = [t for t in record.get("traces") or () if t.__class__ is dict]
    last_error = errors[-1] if errors else next((t["errors"][-1] for t in reversed(traces) if t.get("errors")), {})
    episode = Episode(
        id=episode_id,
        group=str(_dict(record.get("group")).get("id", "")),
        window_step=window_step,
        v_start=int(policy.get("start", -1)),
        v_end=int(policy.get("end", -1)),
        ok=bool(record.get("ok", False)),
        error_type=str(last_error.get("type", "")) if last_error.__class__ is dict else "",
        error_message=str(last_error.get("message", ""))[:MAX_MESSAGE] if last_error.__class__ is dict else "",
        env=str(env.get("name") or env.get("id") or ""),
        source=where,
    )
    rewards = []
    starts: list[float] = []
    ends: list[float] = []
    for trace in traces:
        timing = _dict(trace.get("timing"))
        start = _num(timing.get("start"))
        if start > 0:
            starts.append(start)
        phase_ends = [end for p in _PHASES if (end := _num(_dict(timing.get(p)).get("end", 0.0))) > 0]
        ends += phase_ends
        reward = _trace_reward(trace)
        if reward is not None:
            rewards.append(reward)
        episode.stop = str(trace.get("stop_condition") or episode.stop)
        boot = _boot(trace, timing, phase_ends, errors)
        if boot is not None:
            episode.boots.append(boot)
    if rewards:
        reward = sum(rewards) / len(rewards)
        if math.isfinite(reward):
            episode.reward = reward
        else:
            warnings.append(f"{where}: non-finite reward; kept the episode without a reward")
    if starts:
        episode.t0 = min(starts)
        episode.t1 = max(ends) if ends else episode.t0
    episode.prompt_tokens, episode.response_tokens = episode_tokens(traces)
    return episode


def _trace_reward(trace: dict[str, Any]) -> float | None:
    """Sum of score × weight over the trace's named rewards (verifiers `Trace.reward`); None if none was scored."""
    rewards = trace.get("rewards")
    if not isinstance(rewards, dict):
        return None
    total = 0.0
    scored = False
    for reward in rewards.values():
        if isinstance(reward, dict) and isinstance(reward.get("score"), (int, float)):
            total += float(reward["score"]) * float(reward.get("weight", 1.0))
            scored = True
    return total if scored else None


def _boot(trace: dict[str, Any], timing: dict[str, Any], phase_ends: list[float], errors: list) -> SandboxBoot | None:
    """The sandbox start of one trace, if its runtime is a sandbox and the boot phase began."""
    runtime = _dict(_dict(trace.get("agent")).get("runtime"))
    if runtime.get("type") not in SANDBOX_RUNTIMES:
        return None
    boot = _dict(timing.get("boot"))
    t0, t1 = _num(boot.get("start", 0.0)), _num(boot.get("end", 0.0))
    if not t0 > 0:
        return None
    message = ""
    for error in [*(trace.get("errors") or []), *errors]:
        if isinstance(error, dict) and is_provisioning_error(str(error.get("type")), str(error.get("message", ""))):
            message = str(error["message"])[:MAX_MESSAGE]
    ok = t1 > 0 and not message
    if not ok:
        later = [e for e in phase_ends if e >= t0]
        t1 = max(later) if later else t0
    return SandboxBoot(
        runtime=str(runtime["type"]),
        t0=t0,
        t1=t1,
        ok=ok,
        sandbox_id=str(runtime.get("id") or ""),
        message=message,
        image_cached=runtime.get("image_cached"),
    )
