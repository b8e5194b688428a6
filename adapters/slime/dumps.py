"""Read slime rollout dumps (--save-debug-rollout-data .../rollout_{rollout_id}.pt) into per-sample records."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbed.api import AdapterError, NotThisFrameworkError

DUMP_NAME = re.compile(r"^rollout_(?P<id>\d+)\.pt$")
INSTALL_HINT = "pip install 'benchbed[local]' (the optional extra with torch)"
# Sample.to_dict() fields benchbed reads; present in every dump from v0.3.1 through 624b824.
REQUIRED_FIELDS: tuple[str, ...] = ("index", "group_index", "reward", "status", "weight_versions", "metadata")


class TorchUnavailable(RuntimeError):
    """torch (needed to unpickle dumps) is not installed."""


@dataclass
class DumpSample:
    """One sample of one dump, reduced to what the trace needs."""

    rollout_id: int
    index: str
    group: str
    reward: float
    status: str
    remove: bool
    weight_versions: list[str]
    metadata: dict[str, Any]
    non_generation_time: float
    response_length: int
    tokens: int  # len(Sample.tokens): prompt + response; -1 when the dump has no token list
    trace_events: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Dump:
    path: str
    rollout_id: int
    samples: list[DumpSample]
    unsafe_load: bool = False


def load_dump(path: Path) -> Dump:
    """Load one dump; tensors-and-primitives first (weights_only), full unpickling only if the dump needs it."""
    try:
        import torch
    except ImportError as exc:
        raise TorchUnavailable(f"{path}: reading rollout dumps needs torch: {INSTALL_HINT}") from exc
    unsafe = False
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as safe_exc:  # noqa: BLE001 - any unpickling refusal: retry the way slime itself loads dumps
        try:
            payload = torch.load(path, map_location="cpu", weights_only=False)
        except Exception as exc:  # noqa: BLE001 - report the file, not a pickle traceback
            raise NotThisFrameworkError(f"not a slime run: {path} is not a torch file ({exc or safe_exc})") from exc
        unsafe = True
    return parse_dump(payload, path, unsafe)


def parse_dump(payload: Any, path: Path, unsafe: bool = False) -> Dump:
    """Check the dump's shape ({"rollout_id", "samples": [Sample.to_dict()]}) and reduce its samples."""
    if not isinstance(payload, dict) or "samples" not in payload:
        found = sorted(payload)[:8] if isinstance(payload, dict) else type(payload).__name__
        raise NotThisFrameworkError(
            f"not a slime run: {path} is not a slime rollout dump (expected a dict with 'rollout_id' and 'samples', "
            f"found {found})"
        )
    samples = payload["samples"]
    if not isinstance(samples, list) or not all(isinstance(s, dict) for s in samples):
        raise AdapterError(f"{path}: 'samples' must be a list of Sample.to_dict() dicts (slime v0.3.1 .. 624b824)")
    rollout_id = _rollout_id(payload, path)
    missing = sorted({f for s in samples for f in REQUIRED_FIELDS if f not in s})
    if missing:
        raise AdapterError(
            f"{path}: rollout dump from an incompatible slime version: samples lack field(s) {missing} "
            f"(benchbed reads {list(REQUIRED_FIELDS)}, present in slime v0.3.1 .. 624b824)"
        )
    return Dump(str(path), rollout_id, [_sample(s, rollout_id, i) for i, s in enumerate(samples)], unsafe)


def _rollout_id(payload: dict[str, Any], path: Path) -> int:
    value = payload.get("rollout_id")
    if isinstance(value, int):
        return value
    m = DUMP_NAME.match(path.name)
    if m:
        return int(m.group("id"))
    raise AdapterError(f"{path}: dump has no integer 'rollout_id' and its name is not rollout_<id>.pt")


def _sample(raw: dict[str, Any], rollout_id: int, position: int) -> DumpSample:
    trace = raw.get("trace")
    events = trace.get("events") if isinstance(trace, dict) else None
    index = raw.get("index")
    group = raw.get("group_index")
    return DumpSample(
        rollout_id=rollout_id,
        index=str(index if index is not None else f"pos{position}"),
        group=str(group) if group is not None else "",
        reward=reward_value(raw.get("reward")),
        status=str(getattr(raw.get("status"), "value", raw.get("status"))).lower(),
        remove=bool(raw.get("remove_sample", False)),
        weight_versions=[str(v) for v in (raw.get("weight_versions") or [])],
        metadata=dict(raw.get("metadata") or {}),
        non_generation_time=float(raw.get("non_generation_time") or 0.0),
        response_length=int(raw.get("response_length") or 0),
        tokens=len(tokens) if isinstance(tokens := raw.get("tokens"), list) else -1,
        trace_events=[e for e in events if isinstance(e, dict)] if isinstance(events, list) else [],
    )


def reward_value(reward: Any) -> float:
    """A scalar reward: the number itself, or the 'reward'/'score'/'acc' entry of a reward dict."""
    if isinstance(reward, bool):
        return float(reward)
    if isinstance(reward, (int, float)):
        return float(reward)
    if isinstance(reward, dict):
        for key in ("reward", "score", "acc", "accuracy"):
            if isinstance(reward.get(key), (int, float)):
                return float(reward[key])
    return math.nan
