"""GPU samples into the trace's `gpu.*` points: each source's key names mapped through gpu_keys.toml (W&B and MLflow
system metrics, benchbed's own NVML sampler), times made run-relative, and every sample given the trainer step
during which it was taken, so the GPU metrics share the trainer metrics' window.

A sample belongs to the first step that ends at or after it (a step runs from the end of the previous one to its
own end); a sample taken after the last step ended belongs to none (step -1)."""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass
from importlib import resources

import numpy as np
import pandas as pd

from benchbed.trace import Trace, TraceBuilder

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SAMPLE_COLUMNS = ("wall_time", "key", "value")  # one sample: epoch seconds, the source's key, the source's value


@dataclass(frozen=True)
class GpuKey:
    """One source key pattern and the canonical key it carries, with the factor from the source's unit."""

    source: str
    pattern: re.Pattern[str]
    canonical: str
    unit: str
    scale: float


@functools.cache
def gpu_keys() -> tuple[GpuKey, ...]:
    """The table of gpu_keys.toml, in file order."""
    text = resources.files("benchbed.adapterkit").joinpath("gpu_keys.toml").read_text(encoding="utf-8")
    return tuple(
        GpuKey(e["source"], re.compile(e["pattern"]), e["canonical"], e["unit"], float(e["scale"]))
        for e in tomllib.loads(text)["key"]
    )


@functools.lru_cache(maxsize=4096)
def match_gpu_key(key: str) -> tuple[GpuKey, str] | None:
    """(the table entry, the sample's actor `gpu<i>` or `<node>.gpu<i>`) for a source key; None for any other key."""
    for entry in gpu_keys():
        found = entry.pattern.fullmatch(key)
        if found:
            node = found.groupdict().get("node")
            actor = f"gpu{int(found['gpu'])}"
            return entry, f"{node}.{actor}" if node else actor
    return None


def empty_samples() -> pd.DataFrame:
    """A sample table with no rows."""
    return pd.DataFrame({"wall_time": np.empty(0), "key": np.empty(0, dtype=object), "value": np.empty(0)})


def samples_frame(wall_times: list[float], keys: list[str], values: list[float]) -> pd.DataFrame:
    """A sample table from equal-length columns, only the rows whose key is a GPU key and whose value is finite."""
    frame = pd.DataFrame({"wall_time": np.asarray(wall_times, dtype=float), "key": keys,
                          "value": np.asarray(values, dtype=float)})  # fmt: skip
    known = frame["key"].map(lambda k: match_gpu_key(k) is not None).to_numpy(dtype=bool)
    return frame[known & np.isfinite(frame["value"].to_numpy()) & np.isfinite(frame["wall_time"].to_numpy())]


def steps_at(times: np.ndarray, step_numbers: np.ndarray, step_ends: np.ndarray) -> np.ndarray:
    """For each time, the step during which it fell: the first step (by end time) ending at or after it; -1 after
    the last step's end."""
    order = np.argsort(step_ends, kind="stable")
    ends, steps = np.asarray(step_ends, dtype=float)[order], np.asarray(step_numbers, dtype=np.int64)[order]
    at = np.searchsorted(ends, times, side="left")
    out = np.full(len(times), -1, dtype=np.int64)
    inside = at < len(ends)
    out[inside] = steps[at[inside]]
    return out


def gpu_columns(samples: pd.DataFrame, origin: float, step_numbers: np.ndarray, step_ends: np.ndarray) -> dict:
    """The trace columns of the samples as `gpu.*` points: t0 = wall time - origin (epoch seconds of the trace's
    zero), value in the canonical unit, actor `gpu<i>`, step by `steps_at` over the steps' ends (epoch seconds)."""
    matched = [match_gpu_key(k) for k in samples["key"]]
    wall = samples["wall_time"].to_numpy(dtype=float)
    scale = np.array([m[0].scale for m in matched], dtype=float) if matched else np.empty(0)
    return {
        "key": [m[0].canonical for m in matched],
        "kind": "point",
        "t0": wall - origin,
        "value": samples["value"].to_numpy(dtype=float) * scale,
        "actor": [m[1] for m in matched],
        "step": steps_at(wall, step_numbers, step_ends),
    }


def with_samples(trace: Trace, samples: pd.DataFrame, origin: float, step_numbers: np.ndarray,
                 step_ends: np.ndarray) -> Trace:  # fmt: skip
    """The trace with `samples` added as `gpu.*` points (see `gpu_columns`), and `origin` kept in its metadata as
    `epoch_origin`."""
    trace.meta.extra.setdefault("epoch_origin", origin)
    if not len(samples):
        return trace
    builder = TraceBuilder()
    builder.extend_columns(len(samples), gpu_columns(samples, origin, step_numbers, step_ends))
    points = builder.build(trace.meta).events
    return Trace(pd.concat([trace.events, points], ignore_index=True), trace.meta)
