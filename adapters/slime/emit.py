"""Turn the collected slime sources into the canonical trace (trainer steps, counters, samples, groups, sandboxes)."""

from __future__ import annotations

import math
import re
from collections import defaultdict

from benchbed.adapters.slime import keymap as M
from benchbed.adapters.slime import trainer as T
from benchbed.adapters.slime.collect import Collected, clock_shift
from benchbed.adapters.slime.detect import SFT, SlimeDetected
from benchbed.adapters.slime.dumps import DumpSample
from benchbed.adapters.slime.sandbox import abort_failure

from benchbed.adapterkit.breakdown import StepBreakdown, emit_step
from benchbed.adapterkit.groups import group_stats
from benchbed.adapterkit.shared import failure_reason, redact
from benchbed.api import Trace, TraceBuilder, TraceMeta, attrs_json
from benchbed.api import keys as K

GENERATE_SPAN = "generate_and_rm"  # slime's traced span around one generation + reward call of a sample
_SANDBOX_SPAN_WORDS = {
    K.SANDBOX_START: ("boot", "provision", "sandbox_start", "create_sandbox"),
    K.SANDBOX_EXEC: ("exec", "tool", "run_command", "env_step"),
    K.SANDBOX_STOP: ("sandbox_stop", "kill", "terminate", "close_sandbox"),
}


def build_trace(c: Collected, d: SlimeDetected) -> Trace:
    b = TraceBuilder()
    warnings = list(c.warnings)
    steps, ends = trainer_steps(c, warnings)
    origin = run_origin(c, steps, ends)
    emit_trainer(b, c, steps, ends, origin)
    sft = d.mode == SFT
    if not sft:  # an SFT run's "rollouts" tokenise dataset samples: no generator, no groups, no staleness
        rollout_ends = {rid: p.ts for rid, p in c.rollout_perf.items() if math.isfinite(p.ts)}
        T.emit_generator_pauses(b, steps, ends, origin, d.mode, rollout_ends)
        emit_rollout_side(b, c, warnings)
        emit_dumps(b, c, d, origin - clock_shift(c))
    emit_sandbox_lines(b, c, origin)
    a = c.args
    spp = a.rollout_batch_size * a.n_samples_per_prompt if a.rollout_batch_size and a.n_samples_per_prompt else None
    concurrency = None
    if a.sglang_server_concurrency and a.rollout_num_gpus and a.rollout_num_gpus_per_engine:
        concurrency = a.sglang_server_concurrency * max(1, a.rollout_num_gpus // a.rollout_num_gpus_per_engine)
    partial = truncation(c, steps)
    if partial:
        warnings.append(f"run is partial: {partial}")
    for (kind, rid), values in sorted(c.other_dicts.items()):
        if kind == "partial_rollout":
            values = _partial_rollout_counts(b, rid + 1, values)
        actor = "generator" if kind in ("eval", "fully_async", "partial", "partial_rollout") else "trainer"
        _native(b, rid + 1, values, actor, quality=kind == "eval")
    meta = TraceMeta(
        adapter="slime",
        framework="slime",
        framework_version=d.version,
        mode=d.mode,
        concurrency=concurrency,
        samples_per_step=spp,
        group_size=None if sft else a.n_samples_per_prompt,
        sources=c.sources,
        warnings=warnings,
        partial=c.partial or bool(partial),
        extra={
            "placement": d.placement,
            "update_weights_interval": d.update_weights_interval,
            "partial_rollout": a.partial_rollout,
            "trainer_only_replay": bool(a.load_debug_rollout_data),
            "unmapped_timers": unmapped_timers(c),
            "structural_staleness": None
            if sft
            else STRUCTURAL_STALENESS.get(d.mode, "unknown").format(n=d.update_weights_interval),
            "train_script": a.train_script,
            "pinned_commits": M.PINNED_COMMITS,
            "detection": d.evidence,
            "run_start_epoch_s": origin,
            "args_sources": a.sources,
        },
    )
    return b.build(meta)


def trainer_steps(c: Collected, warnings: list[str]) -> tuple[list[T.StepParts], list[float] | None]:
    """Decomposed trainer steps, and their end times (epoch s) when every trainer dict has a log time."""
    steps: list[T.StepParts] = []
    times: list[float] = []
    carried = 0.0
    previous = None
    inner = StepBreakdown(K.TRAINER_OTHER, "the compute timers (actor_train, log_probs, ...)", "perf/train_time")
    outer = StepBreakdown(K.TRAINER_WAIT, "the timers outside the train block", "perf/train_wait_time")
    for rid in sorted(c.trainer_perf):
        perf = c.trainer_perf[rid]
        parts = T.decompose(rid, perf, carried if previous == rid - 1 else 0.0, inner, outer, warnings)
        carried, previous = T.carried_ref_update(perf), rid
        if parts is not None:
            steps.append(parts)
            times.append(perf.ts)
    warnings.extend(w for w in (inner.warning(), outer.warning()) if w)
    timed = bool(steps) and all(math.isfinite(t) for t in times)
    return steps, T.step_ends(steps, times) if timed else None


def run_origin(c: Collected, steps: list[T.StepParts], ends: list[float] | None) -> float:
    """Run start (epoch s): the earliest log time, or the start of the first step if that is earlier."""
    candidates = [c.first_ts] + ([ends[0] - steps[0].total] if ends else [])
    finite = [t for t in candidates if math.isfinite(t)]
    return min(finite) if finite else 0.0


STRUCTURAL_STALENESS = {
    "sync": "0 (train.py generates every batch with the latest weights)",
    "one_step_off": "<= {n} versions (one batch generated ahead; weights pushed every {n} steps)",
    "fully_async": "unbounded by slime (queued and partial groups can predate several pushes; pushes every {n} steps)",
}


def unmapped_timers(c: Collected) -> list[str]:
    """Trainer timers the key map does not name (e.g. perf/cp_seq_kl_prep_time): their time stays where it ran,
    in trainer.other when inside the train block, in trainer.wait when outside it."""
    known = {"train", "train_wait", *M.WAIT_CONTAINED, *M.NEXT_STEP_WAIT_CONTAINED, *M.COMPUTE_IN_TRAIN}
    keys = {k for p in c.trainer_perf.values() for k in p.values if k.startswith("perf/") and k.endswith("_time")}
    names = {k[len("perf/") : -len("_time")] for k in keys - set(M.STEP_TIME_KEYS)}
    return sorted(names - known)


def truncation(c: Collected, steps: list[T.StepParts]) -> str:
    """Why the run looks crashed or cut short ('' if it does not): a failed Ray job, a train block that started
    after the last logged step, or fewer steps than --num-rollout."""
    if c.job_failed:
        return c.job_failed[0]
    last_end = max((p.ts for p in c.trainer_perf.values() if math.isfinite(p.ts)), default=math.nan)
    started = [t for t in c.timers if t.name == "train" and t.what == "start"]
    if started and math.isfinite(last_end) and max(t.ts for t in started) > last_end:
        return f"a train block started after the last logged step (line {started[-1].lineno})"
    if c.args.num_rollout and steps and steps[-1].step < c.args.num_rollout:
        return f"{steps[-1].step} of --num-rollout {c.args.num_rollout} steps logged"
    return ""


def emit_trainer(
    b: TraceBuilder, c: Collected, steps: list[T.StepParts], ends: list[float] | None, origin: float
) -> None:
    """Trainer steps: spans when every trainer dict has a log time, else agg rows; plus per-step counters."""
    for parts in steps:
        rid = parts.step - 1
        values = c.trainer_perf[rid].values
        ratio = values.get(M.WAIT_RATIO_KEY)
        if isinstance(ratio, (int, float)) and math.isfinite(ratio):
            b.agg(M.FRAMEWORK_IDLE, parts.step, float(ratio), actor="trainer")
        _native(b, parts.step, values, "trainer")
        _train_counters(b, c, rid, parts.step)
        tokens = _trained_tokens(values)
        if tokens is not None:
            b.agg(M.TRAINED_TOKENS, parts.step, tokens, actor="trainer")
    if ends is not None:
        T.emit_spans(b, steps, ends, origin)
    else:
        for s in steps:
            emit_step(b, s.step, s.total, s.parts)


def _trained_tokens(values: dict[str, object]) -> float | None:
    """The step's trained tokens: slime's tokens-per-second of actor_train times that timer (whole batch)."""
    rate, seconds = values.get(M.TRAINED_TOKENS_RATE), values.get(M.TRAINED_TOKENS_TIME)
    if not (_num(rate) and _num(seconds)):
        return None
    tokens = float(rate) * float(seconds)  # type: ignore[arg-type]
    return float(round(tokens)) if math.isfinite(tokens) and tokens >= 0 else None


def _train_counters(b: TraceBuilder, c: Collected, rid: int, step: int) -> None:
    optimizer_steps = c.train_steps.get(rid) or []
    trained = [s["train/global_batch_size"] for s in optimizer_steps if "train/global_batch_size" in s]
    a = c.args
    if trained:
        b.agg(K.SAMPLES_TRAINED, step, float(sum(trained)), actor="trainer")
    elif a.rollout_batch_size and a.n_samples_per_prompt:
        b.agg(K.SAMPLES_TRAINED, step, float(a.rollout_batch_size * a.n_samples_per_prompt), actor="trainer")
    for key in sorted({k for s in optimizer_steps for k in s if not k.endswith("/step")}):
        values = [s[key] for s in optimizer_steps if key in s and math.isfinite(s[key])]
        if values:
            b.agg(f"native.{key}", step, sum(values) / len(values), actor="trainer")
    for key, value in (c.trainer_rollout.get(rid) or {}).items():
        b.agg(M.quality_of(key) or f"native.trainer/{key}", step, value, actor="trainer")


def emit_rollout_side(b: TraceBuilder, c: Collected, warnings: list[str]) -> None:
    """Per-rollout counters from the RolloutManager dict; rollout k feeds trainer step k + 1."""
    a = c.args
    kept_groups = a.rollout_batch_size
    if c.rollout_perf and not (a.rollout_batch_size and a.n_samples_per_prompt):
        warnings.append(
            "rollout_batch_size / n_samples_per_prompt unknown (no launch manifest or Megatron arguments "
            "block): groups.finished and samples.* counters not emitted"
        )
    for rid in sorted(c.rollout_perf):
        v = c.rollout_perf[rid].values
        step = rid + 1
        counted = _rollout_counts(v)
        b.agg(K.GROUPS_ZERO_ADV, step, counted.get(K.GROUPS_ZERO_ADV, 0.0), actor="generator")
        if kept_groups and a.n_samples_per_prompt:
            finished_groups = kept_groups + counted.get(K.GROUPS_FINISHED, 0.0)
            b.agg(K.GROUPS_FINISHED, step, finished_groups, actor="generator")
            b.agg(K.SAMPLES_FINISHED, step, finished_groups * a.n_samples_per_prompt, actor="generator")
            b.agg(K.SAMPLES_ACCEPTED, step, kept_groups * a.n_samples_per_prompt, actor="generator")
        _native(b, step, v, "generator")


def _rollout_counts(values: dict[str, object]) -> dict[str, float]:
    """canonical -> the sum of the rollout dict's keys each rollout counter of the key map matches (file order)."""
    counted: dict[str, float] = {}
    for entry, match in _ROLLOUT_COUNTERS:
        total = sum(float(x) for k, x in values.items() if match(k) and _num(x))
        counted[entry.canonical] = counted.get(entry.canonical, 0) + total
    return counted


_ROLLOUT_COUNTERS = [(e, re.compile(e.regex()).fullmatch) for e in M.ROLLOUT_COUNTERS]


def _partial_rollout_counts(b: TraceBuilder, step: int, values: dict[str, float]) -> dict[str, float]:
    """APRIL's per-rollout token counts and off-policy share as their canonical keys; what is left, to keep as
    native."""
    for key, canonical in M.PARTIAL_ROLLOUT_KEYS.items():
        if key in values:
            b.agg(canonical, step, values[key], actor="generator")
    return {k: v for k, v in values.items() if k not in M.PARTIAL_ROLLOUT_KEYS}


def _native(b: TraceBuilder, step: int, values: dict[str, object], actor: str, quality: bool = False) -> None:
    """Each finite figure as native.<key>, or (`quality`: an evaluation dict) as its quality.* key where it has one."""
    for key, value in values.items():
        if _num(value) and math.isfinite(float(value)):  # type: ignore[arg-type]
            name = (M.quality_of(key) if quality else None) or f"native.{key}"
            b.agg(name, step, float(value), actor=actor)  # type: ignore[arg-type]


def _num(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def emit_dumps(b: TraceBuilder, c: Collected, d: SlimeDetected, origin: float) -> None:
    """One rollout row per dumped sample, one rollout.group row per group, sandbox spans from sample traces."""
    interval = d.update_weights_interval
    starts_from_logs = bool(c.sandbox)  # log lines also see failed attempts, which never reach a dump
    agentic = any("abort_reason" in s.metadata or "instance_id" in s.metadata for x in c.dumps for s in x.samples)
    for dump in sorted(c.dumps, key=lambda x: x.rollout_id):
        step = dump.rollout_id + 1
        groups: dict[str, list[DumpSample]] = defaultdict(list)
        env_lag: list[int] = []
        for s in dump.samples:
            times = _sample_times(s)
            v_start, v_end = _version(s.weight_versions[:1], interval), _version(s.weight_versions[-1:], interval)
            attrs: dict[str, object] = {
                "reward": s.reward,
                "slime_status": s.status,
                "response_length": s.response_length,
            }
            resumed = s.metadata.get("start_rollout_id")
            if isinstance(resumed, int) and resumed < dump.rollout_id:
                lag = dump.rollout_id - resumed
                attrs.update(resumed_from_rollout=resumed, env_staleness=lag)
                env_lag.append(lag)
            if s.non_generation_time > 0:
                attrs["non_generation_time_s"] = s.non_generation_time
            reason = s.metadata.get("abort_reason")
            if reason:
                attrs["abort_reason"] = redact(str(reason))
            status = _status(s)
            fields = dict(
                step=step,
                actor="generator",
                sample=f"{dump.rollout_id}:{s.index}",
                group=s.group,
                v_start=v_start,
                v_end=v_end,
                v_train=dump.rollout_id,
                status=status,
                value=s.reward,
                attrs=attrs_json(attrs),
                prompt_tokens=s.tokens - s.response_length if s.tokens >= s.response_length >= 0 else -1,
                response_tokens=s.response_length if s.tokens >= s.response_length >= 0 else -1,
            )
            if times:
                b.span(K.ROLLOUT, times[0] - origin, times[1] - origin, **fields)
            else:
                b.point(K.ROLLOUT, math.nan, **fields)
            for t0, t1 in _buffered_gaps(s):
                b.span(K.ROLLOUT_BUFFERED, t0 - origin, t1 - origin, step=step, actor="generator",
                       sample=fields["sample"], group=s.group)  # fmt: skip
            groups[s.group].append(s)
            _sandbox_from_sample(b, s, step, origin, reason, not starts_from_logs, agentic)
        for gid, members in groups.items():
            ends = [t[1] for t in (_sample_times(m) for m in members) if t]
            std = group_stats([m.reward for m in members]).std
            b.point(
                K.ROLLOUT_GROUP,
                (max(ends) - origin) if ends else math.nan,
                step=step,
                group=gid,
                value=std,
                status="ok",
                actor="generator",
                attrs=attrs_json({"size": len(members)}),
            )
        if env_lag:
            b.agg("native.partial_rollout/resumed_samples", step, float(len(env_lag)), actor="generator")
            b.agg("native.partial_rollout/env_staleness_mean", step, sum(env_lag) / len(env_lag), actor="generator")
        non_gen = [s.non_generation_time for s in dump.samples if s.non_generation_time > 0]
        if non_gen:
            b.agg("native.sample/non_generation_time_sum_s", step, float(sum(non_gen)), actor="generator")


def _status(s: DumpSample) -> str:
    if s.status == "aborted":
        return "aborted"
    if s.status == "failed":
        return "failed"
    if s.remove or s.status == "pending":
        return "discarded"
    return "ok"


def _version(weight_versions: list[str], interval: int) -> int:
    """slime's weight_version counts pushes (the initial push is 1); benchbed counts trainer steps."""
    if not weight_versions:
        return -1
    try:
        pushed = int(weight_versions[0])
    except ValueError:
        return -1
    return max(0, (pushed - 1) * interval)


def _sample_times(s: DumpSample) -> tuple[float, float] | None:
    stamps = [float(e["ts"]) for e in s.trace_events if _num(e.get("ts"))]
    return (min(stamps), max(stamps)) if stamps else None


def _buffered_gaps(s: DumpSample) -> list[tuple[float, float]]:
    """Gaps between a sample's generation segments: slime traces one `generate_and_rm` span per call, and a partial
    rollout resumed in a later rollout is called again, its trace keeping the earlier span; in between it waited
    in the buffer, holding no generator slot."""
    starts: dict[str, float] = {}
    segments = []
    for e in s.trace_events:
        if e.get("name") != GENERATE_SPAN or not _num(e.get("ts")):
            continue
        if e.get("type") == "span_start":
            starts[str(e.get("span_id"))] = float(e["ts"])
        elif e.get("type") == "span_end" and str(e.get("span_id")) in starts:
            segments.append((starts.pop(str(e.get("span_id"))), float(e["ts"])))
    gaps = []
    reach = math.inf
    for start, end in sorted(segments):
        if start > reach:
            gaps.append((reach, start))
        reach = end if reach == math.inf else max(reach, end)
    return gaps


def _sandbox_from_sample(
    b: TraceBuilder, s: DumpSample, step: int, origin: float, reason: object, with_starts: bool, agentic: bool
) -> None:
    """Sandbox spans from a sample's trace (span names with sandbox words). sandbox.start rows only when no console
    log reports the starts; in an agentic run (samples carry instance_id / abort_reason) a sample without a traced
    start counts as one start: failed with its abort reason, else ok."""
    opened: dict[str, dict] = {}
    traced_start = False
    for e in s.trace_events:
        kind, sid = e.get("type"), e.get("span_id")
        if kind == "span_start" and sid:
            opened[sid] = e
        elif kind == "span_end" and sid in opened:
            start = opened.pop(sid)
            key = _sandbox_key(str(e.get("name", "")))
            if key is None or (key == K.SANDBOX_START and not with_starts):
                continue
            traced_start = traced_start or key == K.SANDBOX_START
            attrs = e.get("attrs") if isinstance(e.get("attrs"), dict) else {}
            error = attrs.get("error_type")
            phase = "exec" if key == K.SANDBOX_EXEC else "start"
            status = failure_reason(f"{error}: {attrs.get('error_message', '')}", phase) if error else "ok"
            b.span(
                key,
                float(start["ts"]) - origin,
                float(e["ts"]) - origin,
                step=step,
                actor="sandbox",
                sample=str(s.index),
                status=status,
                attrs=attrs_json({"name": e.get("name"), "error": redact(str(error)) if error else None}),
            )
    if with_starts and agentic and not traced_start:
        status = abort_failure(str(reason)) if reason else "ok"
        if status is not None:
            attrs = attrs_json({"abort_reason": redact(str(reason))} if reason else {})
            b.point(
                K.SANDBOX_START, math.nan, step=step, actor="sandbox", sample=str(s.index), status=status, attrs=attrs
            )


def _sandbox_key(name: str) -> str | None:
    lowered = name.lower()
    for key, words in _SANDBOX_SPAN_WORDS.items():
        if any(w in lowered for w in words):
            return key
    return None


def emit_sandbox_lines(b: TraceBuilder, c: Collected, origin: float) -> None:
    """Coding-agent log lines as sandbox.start attempts: a failed provision attempt and an `aborted: <reason>` line
    are failures (the abort that follows exhausted provision attempts is the same failure, counted once); a finished
    agent run is a success. Log lines carry only their time, so these are points: the failure rate counts them,
    start latencies need spans (dump traces)."""
    exhausted: set[str] = set()
    for line in sorted(c.sandbox, key=lambda x: x.lineno):
        t0 = line.ts - origin
        if line.kind == "provision_failed":
            det = line.detail
            text = redact(f"{det['error_type']}: {det['message']}")[:300]
            if det["attempt"] >= det["max_attempts"]:
                exhausted.add(line.instance)
            attrs = {"attempt": det["attempt"], "max_attempts": det["max_attempts"], "error": text}
            b.point(
                K.SANDBOX_START,
                t0,
                actor="sandbox",
                sample=line.instance,
                status=failure_reason(text),
                attrs=attrs_json(attrs),
            )
        elif line.kind == "agent_done":
            b.point(K.SANDBOX_START, t0, actor="sandbox", sample=line.instance, status="ok")
        elif line.kind == "aborted":
            reason = redact(line.detail["reason"])
            status = abort_failure(reason)
            if status is not None and not (reason.startswith("exception:") and line.instance in exhausted):
                b.point(
                    K.SANDBOX_START,
                    t0,
                    actor="sandbox",
                    sample=line.instance,
                    status=status,
                    attrs=attrs_json({"abort_reason": reason}),
                )
            exhausted.discard(line.instance)
