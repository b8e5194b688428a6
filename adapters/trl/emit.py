"""TRL's synchronous run, read by parse.py, as trace rows: step spans painted with their components, TRL's own
figures, one rollout row per generated sample with its versions, and the sandbox spans the reward logged."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

import pandas as pd
from benchbed.adapters.trl.launch import BATCHES_FILE
from benchbed.adapters.trl.rewards import SANDBOX_LOG_ROLE
from benchbed.adapters.trl.schedule import Schedule
from benchbed.adapters.trl.timeline import KEYMAP, Timeline, paint

from benchbed.adapterkit.groups import reward_std
from benchbed.adapterkit.keymaps import quality_key
from benchbed.adapterkit.shared import Ev, SandboxEvent, add_spans
from benchbed.api import TraceBuilder, attrs_json
from benchbed.api import keys as K
from benchbed.engine.eventlog import EVENTS_DIRNAME

if TYPE_CHECKING:
    from benchbed.adapters.trl.parse import Run

TOKEN_COLUMNS = ("prompt_tokens", "completion_tokens")


def emit_step_spans(builder: TraceBuilder, timeline: Timeline, steps: list[int]) -> None:
    """trainer.step spans end to end, each painted with its components (trainer.compute where nothing else is)."""
    for step in steps:
        bounds = timeline.step_bounds.get(step)
        if bounds is None:
            continue
        t0, t1 = bounds
        builder.span(K.TRAINER_STEP, t0, t1, step=step, actor="trainer", v_train=step - 1)
        for key, s0, s1 in paint(t0, t1, timeline.components.get(step, []), K.TRAINER_COMPUTE):
            builder.span(key, s0, s1, step=step, actor="trainer")
        for name, seconds in timeline.natives.get(step, {}).items():
            builder.agg(name, step, seconds, actor="trainer")


def emit_framework(builder: TraceBuilder, run: Run) -> None:
    """TRL's own per-step figures: the framework's zero-advantage fraction, its reward and evaluation scores
    (quality.*), and every other number as native.*."""
    release, _ = KEYMAP.nearest(run.versions.get("trl", ""))
    framework, quality = KEYMAP.mapping(release, "framework", "sync"), KEYMAP.at(release, "quality", "sync")
    for e in run.log:
        step = int(e["step"])
        for key, value in e.items():
            if key in ("step", "epoch") or not isinstance(value, int | float) or not math.isfinite(value):
                continue
            name = framework.get(key) or quality_key(quality, key) or f"native.trl.{key}"
            builder.agg(name, step, float(value), actor="trainer")


def _batch_table(run: Run, g: int) -> pd.DataFrame | None:
    """Batch g's samples in generation order, as the rendered script recorded them: one column per reward
    function (what it returned) and the token counts; None when the batch was not recorded."""
    entry = run.batches[g] if g < len(run.batches) else {}
    if "rewards" not in entry:
        return None
    table = pd.DataFrame({name: [math.nan if r is None else r for r in values]
                          for name, values in entry["rewards"].items()})  # fmt: skip
    for column in TOKEN_COLUMNS:
        if len(entry.get(column, [])) == len(table):
            table[column] = entry[column]
    return table


def emit_samples(builder: TraceBuilder, run: Run, schedule: Schedule, last: int, timeline: Timeline | None) -> None:
    """One rollout row per generated sample and one rollout.group point per group, batch by batch."""
    g_size = int(run.args["num_generations"])
    names = run.header.get("reward_funcs", [])
    weights = run.header.get("reward_weights")
    generated = {int(e["step"]) for e in run.log if "reward" in e}
    for g in range(schedule.generations(last)):
        step = schedule.generated_in_step(g)
        if step not in generated:
            run.warnings.append(f"step {step}: the schedule generates batch {g} here but TRL logged no reward")
            continue
        table = _batch_table(run, g)
        n = schedule.generation_batch
        if table is None or len(table) != n:
            run.warnings.append(f"step {step}: no record of batch {g}'s {n} samples; left out")
            continue
        rewards = total_rewards(table, names, weights)
        slices = _slices(run, g, n, schedule.per_device_batch)
        window = timeline.generation.get(step) if timeline is not None else None
        v_start = schedule.version_at(schedule.generation_micro_step(g))
        for i in range(n):
            uses = [v for v in schedule.uses(g, slices[i]) if v < last]
            v_train = uses[0] if uses else -1
            tokens = {c: int(table[c][i]) if c in table else -1 for c in TOKEN_COLUMNS}
            attrs = {"generation": g, "slice": slices[i], "uses": uses}
            fields = dict(step=v_train + 1 if uses else step, value=rewards[i], actor="generator", sample=f"g{g}-{i}",
                          group=f"g{g}-p{i // g_size}", v_start=v_start, v_end=v_start, v_train=v_train, status="ok",
                          prompt_tokens=tokens["prompt_tokens"], response_tokens=tokens["completion_tokens"],
                          attrs=attrs_json(attrs))  # fmt: skip
            if window is not None:
                builder.span(K.ROLLOUT, window[0], window[1], **fields)
            else:
                builder.add(K.ROLLOUT, "point", **fields)
        for p in range(n // g_size):
            group = rewards[p * g_size : (p + 1) * g_size]
            point = dict(step=step, value=reward_std(group), actor="generator", group=f"g{g}-p{p}", v_start=v_start,
                         status="ok")  # fmt: skip
            if window is not None:
                builder.point(K.ROLLOUT_GROUP, window[1], **point)
            else:
                builder.add(K.ROLLOUT_GROUP, "point", **point)


def total_rewards(table: pd.DataFrame, names: list[str], weights: list[float] | None) -> list[float]:
    """TRL's reward per sample: the weighted sum of the reward functions' columns, NaNs left out (nansum)."""
    columns = names or [c for c in table.columns if c not in TOKEN_COLUMNS]
    weights = weights or [1.0] * len(columns)
    out = []
    for i in range(len(table)):
        parts = [w * float(table[c][i]) for c, w in zip(columns, weights, strict=True)]
        finite = [x for x in parts if math.isfinite(x)]
        out.append(sum(finite) if finite else math.nan)
    return out


def _slices(run: Run, g: int, n: int, per_slice: int) -> list[int]:
    """The slice each sample of batch g (in generation order) was trained in: TRL's recorded permutation puts
    original sample perm[j] at shuffled position j, which is in slice j // per_slice."""
    if g < len(run.batches) and len(run.batches[g]["permutation"]) == n:
        slices = [0] * n
        for j, original in enumerate(run.batches[g]["permutation"]):
            slices[original] = j // per_slice
        return slices
    if g == 0:
        run.warnings.append(f"no {BATCHES_FILE}: samples are given slices in generation order, so the staleness "
                            "values are exact but which sample had which is not")  # fmt: skip
    return [i // per_slice for i in range(n)]


def emit_sandboxes(builder: TraceBuilder, run: Run, origin: float) -> int:
    """The sandbox lifecycle the arith_sandbox reward logged (the reference engine's event format)."""
    path = run.path / EVENTS_DIRNAME / f"{SANDBOX_LOG_ROLE}.jsonl"
    if not path.is_file():
        return 0
    run.sources.append(str(path))
    events = []
    for line in path.read_text().splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # the last line of a killed process may be cut short
    if math.isnan(origin):
        origin = min((e["t"] for e in events), default=0.0)
    lifecycle = [SandboxEvent(key=e["key"], ev=Ev(e["step"]), t=e["t"] - origin, attempt=e["attempt"],
                              reason=e["reason"], attrs=e["attrs"])
                 for e in events if e.get("ev") == "sandbox"]  # fmt: skip
    return add_spans(builder, lifecycle)
