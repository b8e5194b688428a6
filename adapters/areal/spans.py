"""The parsing only AReaL needs: a trial folder's perf-tracer `train.*` spans -> trainer steps and their parts, its
session records -> one rollout span per sample (versions from the update_weights timeline), its config.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from benchbed.adapterkit.chrome_trace import complete_events
from benchbed.adapterkit.lines import JsonLines, read_utf8
from benchbed.api import NotThisFrameworkError, TraceBuilder, TraceError, attrs_json
from benchbed.api import keys as K

# AReaL's session status -> benchbed's; accepted samples no step consumed become "discarded".
STATUS = {"accepted": "ok", "rejected": "discarded", "dropped": "discarded", "failed": "failed", "pending": "aborted"}


def read_trial(path: Path, perf: Path, parts: dict[str, str], warnings: list[str]) -> tuple[TraceBuilder, dict]:
    """The trial folder's trainer and rollout spans, and the TraceMeta fields its files give (generator shape from
    config.yaml, sources, partial)."""
    events, truncated = complete_events(perf, warnings)
    config = read_config(path / "config.yaml", warnings)
    builder = TraceBuilder()
    update_ends, rollout_ends, step_ends, first = emit_trainer(builder, events, parts, perf)
    sessions = sorted(path.glob("session_tracer/**/sessions-r*.jsonl"))
    records = [r for f in sessions for _, r in JsonLines(f, warnings) if isinstance(r.get("submit_ts"), int | float)]
    rollout = config.get("rollout", {})
    batch = int(rollout.get("consumer_batch_size") or config.get("train_dataset", {}).get("batch_size") or 0)
    group = int(config.get("gconfig", {}).get("n_samples") or 1)
    if records:
        emit_samples(builder, records, first, update_ends, rollout_ends, step_ends, batch, warnings)
    return builder, {"concurrency": (rollout.get("max_concurrent_rollouts") or batch) * group or None,
                     "samples_per_step": batch * group or None, "group_size": group,
                     "sources": [str(f) for f in (perf, *sessions)], "partial": truncated,
                     "extra": {"max_head_offpolicyness": rollout.get("max_head_offpolicyness"),
                               "clock": "session wall clock joined at the first submission = the first "
                                        "train.rollout start (the perf clock has no wall-clock anchor)"}}  # fmt: skip


def emit_trainer(
    builder: TraceBuilder, events: pd.DataFrame, parts: dict[str, str], path: Path
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """trainer.step spans (one per global_step, end to end) and their parts from the `train.*` spans; returns the
    ends of train.update_weights (version v + 1 from the v-th), of train.rollout, of the steps, the first rollout
    start."""
    ours = events[events["name"].isin(parts.keys())].copy()
    ours["g"] = [a.get("global_step") for a in ours["args"]]
    ours = ours[ours["g"].map(lambda g: isinstance(g, int))]
    if ours.empty:
        raise NotThisFrameworkError(f"not an AReaL run: {path} holds no train.* spans with a global_step")
    ends: list[float] = []
    for g, spans in ours.groupby("g", sort=True):
        t0 = ends[-1] if ends else spans["t0"].min()
        ends.append(float(spans["t1"].max()))
        builder.span(K.TRAINER_STEP, float(t0), ends[-1], step=int(g) + 1, actor="trainer", v_train=int(g))
        for name, s0, s1 in zip(spans["name"], spans["t0"], spans["t1"], strict=True):
            builder.span(parts[name], float(s0), float(s1), step=int(g) + 1, actor="trainer", attrs=name)
    rollouts = ours[ours["name"] == "train.rollout"].sort_values("g")
    updates = np.sort(ours.loc[ours["name"] == "train.update_weights", "t1"].to_numpy())
    first = float(rollouts["t0"].min()) if len(rollouts) else 0.0
    return updates, rollouts["t1"].to_numpy(), np.asarray(ends), first


def emit_samples(builder: TraceBuilder, records: list[dict[str, Any]], first: float, update_ends: np.ndarray,
                 rollout_ends: np.ndarray, step_ends: np.ndarray, batch: int, warnings: list[str]) -> None:  # fmt: skip
    """One rollout span per session: the versions current when its generation started and ended, and the step that
    consumed it. A task (one prompt's group of sessions) is accepted whole; prepare_batch takes `batch` accepted
    tasks per step in the order they finished. A sample not trained carries the step it ended in; one never
    finalised (pending at exit) runs to the last step's end."""
    shift = first - min(r["submit_ts"] for r in records)
    done: dict[tuple[int, int], float] = {}
    for r in records:
        if r.get("status") == "accepted":
            task = (r.get("rank", 0), r.get("task_id", -1))
            done[task] = max(done.get(task, 0.0), r.get("finalized_ts") or r["submit_ts"])
    order = sorted(done, key=lambda task: (done[task], task))
    consumed = {task: i // batch for i, task in enumerate(order) if batch and i // batch < len(rollout_ends)}
    late = 0
    for r in records:
        generate = r.get("phases", {}).get("generate", [])
        starts = [p["start_ts"] for p in generate] or [r["submit_ts"]]
        ends = [p["end_ts"] for p in generate if p.get("end_ts") is not None]
        t1 = r["finalized_ts"] + shift if r.get("finalized_ts") else float(step_ends[-1])
        task = (r.get("rank", 0), r.get("task_id", -1))
        g = consumed.get(task, -1)
        late += g >= 0 and t1 > rollout_ends[g] + 1e-6
        status = "discarded" if r.get("status") == "accepted" and g < 0 else STATUS.get(r.get("status"), "failed")
        keep = ("task_id", "session_id", "rank", "status", "reason", "generate_s", "reward_s", "toolcall_s")
        step = g + 1 if g >= 0 else min(int(np.searchsorted(step_ends, t1)), len(step_ends) - 1) + 1
        builder.span(K.ROLLOUT, r["submit_ts"] + shift, t1, step=step, actor="generator",
                     sample=f"r{task[0]}-s{r.get('session_id')}", group=f"r{task[0]}-t{task[1]}", status=status,
                     v_start=int(np.searchsorted(update_ends, min(starts) + shift, side="right")),
                     v_end=int(np.searchsorted(update_ends, max(ends) + shift, side="right")) if ends else -1,
                     v_train=g, attrs=attrs_json({k: r[k] for k in keep if k in r}))  # fmt: skip
    if late:
        warnings.append(f"{late} sample(s) finished after the train.rollout of the step assigned to them: the "
                        "sessions are not in the order prepare_batch took them; their v_train is a guess")  # fmt: skip


class _Loader(yaml.SafeLoader):
    """AReaL's save_config writes `yaml.dump(asdict(cfg))`, whose tuples carry a python/tuple tag."""


_Loader.add_constructor("tag:yaml.org,2002:python/tuple", lambda loader, node: loader.construct_sequence(node))


def read_config(path: Path, warnings: list[str]) -> dict[str, Any]:
    """The trial's config.yaml (AReaL's save_config), {} with a warning when absent or unreadable."""
    try:
        config = yaml.load(read_utf8(path), Loader=_Loader)  # noqa: S506 - a SafeLoader with one tag added
    except (OSError, yaml.YAMLError, TraceError) as exc:
        why = str(exc) if isinstance(exc, TraceError) else f"{path}: no readable config ({exc.__class__.__name__})"
        warnings.append(f"{why}; concurrency and batch size unknown")
        return {}
    return config if isinstance(config, dict) else {}
