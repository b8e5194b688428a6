"""Read slime's TensorBoard event files (one per logging process) into per-(file, step) scalar dicts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

INSTALL_HINT = "pip install 'benchbed[tensorboard]' (the optional extra with the event-file reader)"


class TensorboardUnavailable(RuntimeError):
    """tensorboard (the event reader) is not installed."""


@dataclass
class ScalarDict:
    """All scalars one process wrote at one step of one step axis (rollout/step or train/step)."""

    file: str
    step: int
    values: dict[str, float]
    wall_time: float


def read_event_file(path: Path) -> list[tuple[str, int, float, float]]:
    """(tag, step, wall_time, value) for every scalar in one event file, in file order."""
    try:
        from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader
        from tensorboard.util import tensor_util
    except ImportError as exc:
        raise TensorboardUnavailable(f"reading {path} needs tensorboard: {INSTALL_HINT}") from exc
    out: list[tuple[str, int, float, float]] = []
    for event in LegacyEventFileLoader(str(path)).Load():
        if not event.HasField("summary"):
            continue
        for value in event.summary.value:
            kind = value.WhichOneof("value")
            if kind == "simple_value":
                number = float(value.simple_value)
            elif kind == "tensor" and value.metadata.plugin_data.plugin_name == "scalars":
                number = float(tensor_util.make_ndarray(value.tensor).item())
            else:
                continue
            out.append((value.tag, int(event.step), float(event.wall_time), number))
    return out


def scalar_dicts(path: Path) -> list[ScalarDict]:
    """Group one file's scalars by step; the dict's time is the latest wall time among its scalars."""
    grouped: dict[int, ScalarDict] = {}
    for tag, step, wall_time, number in read_event_file(path):
        entry = grouped.get(step)
        if entry is None:
            entry = grouped[step] = ScalarDict(str(path), step, {}, wall_time)
        entry.values[tag] = number
        entry.wall_time = max(entry.wall_time, wall_time)
    return [grouped[s] for s in sorted(grouped)]


def split_axes(entry: ScalarDict) -> tuple[dict[str, float], dict[str, float]]:
    """Split one step's scalars by slime's step axes: (train/* on train/step, everything else on rollout/step)."""
    train = {k: v for k, v in entry.values.items() if k.startswith("train/")}
    other = {k: v for k, v in entry.values.items() if not k.startswith("train/")}
    return train, other
