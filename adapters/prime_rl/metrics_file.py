"""Read prime-rl's metrics.jsonl, where trainer and orchestrator both append rows, several per step each.

Rows are told apart by the keys that come with them, never merged blindly: both processes log `time/step`
and `time/save_ckpt` with different meanings (trainer loop body vs. orchestrator ship-to-ship interval)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from benchbed.adapters.prime_rl.lines import read_jsonl
from benchbed.adapters.prime_rl.model import OrchestratorStep, RunData, TrainerStep

from benchbed.errors import NotThisFrameworkError

TRAINER_TIME_KEYS = ("time/wait_for_batch", "time/forward_backward", "time/load_data", "time/broadcast_weights")
TRAINER_PREFIXES = (
    "perf/",
    "optim/",
    "loss/",
    "entropy/",
    "mismatch_kl/",
    "system/ckpt_disk",
    "kl_ent_ratio",
    "is_masked",
    "masked_advantage",
    "max_vio/",
    "routing_confidence/",
)
ORCHESTRATOR_PREFIXES = (
    "time/wait_for_policy",
    "time/pack",
    "off_policy/",
    "progress/",
    "train/agg/",
    "batch/",
    "curriculum/",
    "pre_filters/",
    "eval/",
    "scheduler/",
    "time/wait_for_ckpt",
    "time/update_weights",
    "off_policy_level/",
    "errored_rollouts/",
    "empty_rollouts/",
    "reward/",
    "seq_len/",
)
# Orchestrator figures kept per step (everything else in the row is the episode metric matrix).
ORCHESTRATOR_KEEP = re.compile(
    r"^(time/(step|pack|save_ckpt|wait_for_policy|wait_for_ckpt|update_weights)|off_policy/.*|off_policy_level/all/.*"
    r"|scheduler/(async_level|inflight_rollouts|inflight_samples|cancelled_rollouts)|progress/(rollouts|tasks|tokens"
    r"|samples|problems)|errored_rollouts/all|train/agg/all/[^/]+/(error/[^/]+|has_error/mean|cancelled/mean"
    r"|is_trainable/mean))$"
)
TRAINER_NATIVE = ("perf/mfu", "perf/throughput", "perf/peak_memory", "optim/grad_norm")
# Markers that date a file: present only from a given release on (see era.py).
HEAD_MARKERS = ("off_policy/mean", "time/pack")
LEGACY_MARKERS = ("scheduler/async_level", "time/wait_for_ckpt", "off_policy_level/all/mean")


def row_role(row: dict[str, Any]) -> str:
    """'trainer-time', 'trainer', 'orchestrator', 'eval' or '' (unrecognized), from the keys in the row."""
    keys = row.keys()
    if any(k in row for k in TRAINER_TIME_KEYS):
        return "trainer-time"
    if any(k.startswith("eval/") for k in keys) and not any(k.startswith(("train/", "progress/")) for k in keys):
        return "eval"
    if any(k.startswith(ORCHESTRATOR_PREFIXES) for k in keys):
        return "orchestrator"
    if any(k.startswith(TRAINER_PREFIXES) for k in keys):
        return "trainer"
    return ""


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def read_metrics_file(path: Path, data: RunData) -> None:
    """Fill data.trainer and data.orchestrator from one metrics.jsonl; raise NotThisFrameworkError if no row is ours."""
    roles: dict[str, int] = {}
    first_keys: list[str] = []
    n_rows = 0
    trainer_native: dict[int, dict[str, float]] = {}
    for lineno, row in read_jsonl(path, data.warnings):
        n_rows += 1
        if not first_keys:
            first_keys = sorted(row)[:8]
        role = row_role(row)
        roles[role] = roles.get(role, 0) + 1
        step = row.get("step")
        if role and (isinstance(step, bool) or not isinstance(step, int)):
            data.warnings.append(f"{path}:{lineno}: skipped {role} row without an integer 'step'")
            continue
        where = f"{path}:{lineno}"
        if role == "trainer-time":
            _add_trainer_row(row, step, where, data)
        elif role == "trainer":
            native = trainer_native.setdefault(step, {})
            native.update({k: v for k in TRAINER_NATIVE if (v := _float(row.get(k))) is not None})
        elif role == "orchestrator":
            _add_orchestrator_row(row, step, where, data)
    if not (roles.get("trainer-time") or roles.get("trainer") or roles.get("orchestrator") or roles.get("eval")):
        detail = f"first row keys {first_keys}" if first_keys else "no JSON rows"
        raise NotThisFrameworkError(
            f"not a prime-rl run: {path} has {n_rows} row(s) but none with prime-rl trainer keys "
            f"({', '.join(TRAINER_TIME_KEYS[:2])}) or orchestrator keys (time/wait_for_policy, off_policy/*, "
            f"progress/*); {detail}"
        )
    if roles.get(""):
        data.warnings.append(f"{path}: {roles['']} row(s) matched neither trainer nor orchestrator keys; ignored")
    for step, native in trainer_native.items():
        if step in data.trainer:
            data.trainer[step].native.update(native)
    data.sources.append(str(path))


def _add_trainer_row(row: dict[str, Any], step: int, where: str, data: RunData) -> None:
    step_s = _float(row.get("time/step"))
    if step_s is None:
        data.warnings.append(f"{where}: trainer time row without 'time/step'; skipped")
        return
    if step in data.trainer:
        data.warnings.append(f"{where}: second trainer time row for step {step} (a resumed run?); the later one wins")

    def get(key: str) -> float:
        value = _float(row.get(key))
        return float("nan") if value is None else value

    data.trainer[step] = TrainerStep(
        step=step,
        step_s=step_s,
        wait_s=get("time/wait_for_batch"),
        load_s=get("time/load_data"),
        compute_s=get("time/forward_backward"),
        weight_sync_s=get("time/broadcast_weights"),
        checkpoint_s=get("time/save_ckpt"),
        t_end=get("time"),
        source=where,
    )


def _add_orchestrator_row(row: dict[str, Any], step: int, where: str, data: RunData) -> None:
    kept = {k: v for k, raw in row.items() if ORCHESTRATOR_KEEP.match(k) and (v := _float(raw)) is not None}
    data.evidence.update(k for k in HEAD_MARKERS if k in row)
    data.evidence.update(k for k in LEGACY_MARKERS if k in row)
    if "time/wait_for_policy" in row:
        data.evidence.add("time/wait_for_policy")
    current = data.orchestrator.get(step)
    if current is None:
        t_end = _float(row.get("time"))
        data.orchestrator[step] = OrchestratorStep(step, kept, float("nan") if t_end is None else t_end, where)
    else:
        current.values.update(kept)
