"""Series from store points: one per (machine, entry) and metric, nights in time order, changes marked."""

from __future__ import annotations

import pandas as pd

from benchbed.nightly.history import POINT_COLUMNS, build_series
from benchbed.record import Gate


def points(entry: str, medians: list[float], spec_from: int | None = None, gate: Gate | None = None) -> list[dict]:
    """Three repeats per night around each median; nights from `spec_from` on ran an edited spec."""
    rows = []
    for n, median in enumerate(medians):
        for r, offset in enumerate((-0.01, 0.0, 0.01)):
            rows.append({
                "machine": "box", "suite": "s", "entry": entry, "night": f"2026010{n}T020000Z-{entry}",
                "run_id": f"{entry}{n}{r}", "started_at": f"2026-01-0{n}T02:00:0{r}+00:00", "repeat": r,
                "spec_id": "spec-b" if spec_from is not None and n >= spec_from else "spec-a", "adapter": "sim",
                "framework": "benchbed-sim", "framework_version": "1", "benchbed_commit": "abc", "watch": "",
                "gate": (gate or Gate()).model_dump_json(), "metric": "trainer_throughput_sps",
                "value": median * (1 + offset), "unit": "samples/s", "path": "",
            })  # fmt: skip
    return rows


def test_each_entry_is_its_own_series_with_its_own_gate():
    rows = points("a", [10, 10, 10, 10, 12, 12, 12, 12], spec_from=4)
    rows += points("b", [5, 5, 5, 4.5], gate=Gate(min_effect=0.2))
    frame = pd.DataFrame(rows, columns=list(POINT_COLUMNS))
    a, b = build_series(frame)
    assert (a.entry, b.entry) == ("a", "b") and len(a.nights) == 8 and len(b.nights) == 4
    assert a.change_points == [4] and list(a.marked) == [4] and "spec-a → spec-b" in a.marked[4]
    assert a.verdict.verdict == "unchanged"  # the last night matches the four nights since the step
    assert b.verdict.verdict == "unchanged" and b.verdict.comparison.relative_change < -0.05  # 10% < 20% gate
    (b_again,) = build_series(frame[frame["entry"] == "b"], nights=1)
    assert b_again.verdict.comparison.n_baseline == 3
