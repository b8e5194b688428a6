"""V1 replay-buffer evictions (counted in prompt groups) -> per-step sample counters for wasted-generation metrics."""

from __future__ import annotations

from collections.abc import Callable

from benchbed.adapters.verl.emit import Segment

from benchbed.adapterkit.rows import AggRows
from benchbed.api import TraceBuilder, attrs_json
from benchbed.api import keys as K

# replay_buffer._evict_terminal_groups counts evicted prompt uids (whole groups) under these keys
STALE = "training/off_policy/evicted_samples"
FILTERED = "training/filter_groups/evicted_samples"
EVICTION_KEYS = (STALE, FILTERED, "training/rollout_failure/evicted_samples")


def emit_eviction_counts(
    segments: list[Segment],
    group_size: int | None,
    samples_for: Callable[[int, int], float | None],
    builder: TraceBuilder,
) -> bool:
    """samples.finished / accepted / dropped_stale per step, when the run logs evictions and G is known.

    finished = trained + groups dropped for staleness or filtered (zero advantage) x G; groups whose agent loop
    failed are not finished. Returns whether anything was emitted."""
    if not group_size or not any(
        key in s.records.keys(i) for s in segments for i in s.rows.tolist() for key in EVICTION_KEYS
    ):
        return False
    rows = AggRows()
    for segment in segments:
        attrs = attrs_json({"segment": segment.index}) if segment.index else ""
        records = segment.records
        for i in segment.rows.tolist():
            step = records.steps[i]
            trained = samples_for(step, 1) if "timing_s/step" in records.keys(i) else None
            if trained is None:
                continue
            stale = float(records.get(i, STALE) or 0) * group_size
            filtered = float(records.get(i, FILTERED) or 0) * group_size
            rows.add(K.SAMPLES_ACCEPTED, step, trained, "", attrs)
            rows.add(K.SAMPLES_DROPPED_STALE, step, stale, "", attrs)
            rows.add(K.SAMPLES_FINISHED, step, trained + stale + filtered, "", attrs)
    rows.flush(builder)
    return True
