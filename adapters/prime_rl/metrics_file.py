"""Read prime-rl's metrics.jsonl, where trainer and orchestrator both append rows, several per step each.

Rows are told apart by the keys that come with them, never merged blindly: both processes log `time/step`
and `time/save_ckpt` with different meanings (trainer loop body vs. orchestrator ship-to-ship interval)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchbed.adapters.prime_rl.keymap import (
    HEAD_MARKERS,
    LEGACY_MARKERS,
    ORCHESTRATOR_KEEP,
    ORCHESTRATOR_MARKER,
    SHARED_TIMERS,
    TRAINER_MARKER,
    TRAINER_NATIVE,
    TRAINER_TIMERS,
    quality_of,
)
from benchbed.adapters.prime_rl.model import OrchestratorStep, RunData, TrainerStep

from benchbed.adapterkit.lines import JsonLines, loads_finite
from benchbed.api import NotThisFrameworkError
from benchbed.api import keys as K

# Only the SFT trainer (`sft` entrypoint, trainer/sft/train.py at 559b447) logs a perplexity; the RL trainer never does.
SFT_KEY = "loss/perplexity"
# canonical trainer key -> the native timer of the trainer's time row
_NATIVE = {canonical: native for native, canonical in {**TRAINER_TIMERS, **SHARED_TIMERS}.items()}


def row_role(row: dict[str, Any]) -> str:
    """'trainer-time', 'trainer', 'orchestrator', 'eval' or '' (unrecognized), from the keys in the row."""
    keys = row.keys()
    if any(k in row for k in TRAINER_TIMERS):
        return "trainer-time"
    if any(k.startswith("eval/") for k in keys) and not any(k.startswith(("train/", "progress/")) for k in keys):
        return "eval"
    if any(ORCHESTRATOR_MARKER.match(k) for k in keys):
        return "orchestrator"
    if any(TRAINER_MARKER.match(k) for k in keys):
        return "trainer"
    return ""


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def read_metrics_file(path: Path, data: RunData) -> None:
    """Fill data.trainer and data.orchestrator from one metrics.jsonl; raise NotThisFrameworkError if no row is ours."""
    lines = JsonLines(path, data.warnings, loads_finite, finite=True)
    read_metric_rows(((f"{path}:{lineno}", row) for lineno, row in lines), data, str(path))


def read_metric_rows(rows: Iterable[tuple[str, dict[str, Any]]], data: RunData, source: str) -> None:
    """Fill data.trainer and data.orchestrator from (where, row) pairs, each row as the monitors log it
    (`step`, `time` and the metrics); raise NotThisFrameworkError if no row is ours."""
    roles: dict[str, int] = {}
    first_keys: list[str] = []
    n_rows = 0
    trainer_native: dict[int, dict[str, float]] = {}
    for where, row in rows:
        n_rows += 1
        if not first_keys:
            first_keys = sorted(row)[:8]
        role = row_role(row)
        roles[role] = roles.get(role, 0) + 1
        if data.sft is None and SFT_KEY in row:
            data.sft = f"{where}: {SFT_KEY}, which only the SFT trainer logs"
        step = row.get("step")
        if role and (isinstance(step, bool) or not isinstance(step, int)):
            data.warnings.append(f"{where}: skipped {role} row without an integer 'step'")
            continue
        if role == "trainer-time":
            _add_trainer_row(row, step, where, data)
        elif role == "trainer":
            native = trainer_native.setdefault(step, {})
            native.update({k: v for k in TRAINER_NATIVE if (v := _float(row.get(k))) is not None})
        elif role == "orchestrator":
            _add_orchestrator_row(row, step, where, data)
        elif role == "eval":
            for key, raw in row.items():
                if (quality := quality_of(key)) is not None and (value := _float(raw)) is not None:
                    data.evals.setdefault(step, {}).setdefault(quality, []).append(value)
    if not (roles.get("trainer-time") or roles.get("trainer") or roles.get("orchestrator") or roles.get("eval")):
        detail = f"first row keys {first_keys}" if first_keys else "no JSON rows"
        raise NotThisFrameworkError(
            f"not a prime-rl run: {source} has {n_rows} row(s) but none with prime-rl trainer keys "
            f"({', '.join(list(TRAINER_TIMERS)[:2])}) or orchestrator keys (time/wait_for_policy, off_policy/*, "
            f"progress/total_*, progress/num_*); {detail}"
        )
    if roles.get(""):
        data.warnings.append(f"{source}: {roles['']} row(s) matched neither trainer nor orchestrator keys; ignored")
    if data.sft is not None:  # the SFT trainer's own progress rows look like the orchestrator's; SFT has none
        data.orchestrator.clear()
    for step, native in trainer_native.items():
        if step in data.trainer:
            data.trainer[step].native.update(native)
    data.sources.append(source)


def _add_trainer_row(row: dict[str, Any], step: int, where: str, data: RunData) -> None:
    step_s = _float(row.get(_NATIVE[K.TRAINER_STEP]))
    if step_s is None:
        data.warnings.append(f"{where}: trainer time row without '{_NATIVE[K.TRAINER_STEP]}'; skipped")
        return
    if step in data.trainer:
        data.warnings.append(f"{where}: second trainer time row for step {step} (a resumed run?); the later one wins")

    def get(key: str) -> float:
        value = _float(row.get(key))
        return float("nan") if value is None else value

    data.trainer[step] = TrainerStep(
        step=step,
        step_s=step_s,
        wait_s=get(_NATIVE[K.TRAINER_WAIT]),
        load_s=get(_NATIVE[K.TRAINER_OTHER]),
        compute_s=get(_NATIVE[K.TRAINER_COMPUTE]),
        weight_sync_s=get(_NATIVE[K.TRAINER_WEIGHT_SYNC]),
        checkpoint_s=get(_NATIVE[K.TRAINER_CHECKPOINT]),
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
