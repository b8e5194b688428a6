"""Series from store points: one per (machine, entry) and metric, nights in time order, changes marked."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

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


def test_nights_group_repeats_in_time_order_from_categorical_points_as_the_catalog_gives_them():
    """load_points gives text columns as Categoricals; series and nights are the same as from plain strings."""
    rows = points("a", [10, 20, 30]) + points("b", [1, 1])
    rows[4]["value"] = float("nan")  # a repeat without a value: its night's median is of the other two
    rows[6]["spec_id"] = "spec-c"  # night 2's first repeat ran another spec
    shuffled = rows[3:6] + rows[:3] + rows[6:]  # night 1's rows come first; nights are still in time order
    plain = pd.DataFrame(shuffled, columns=list(POINT_COLUMNS))
    categorical = plain.astype({c: "category" for c in POINT_COLUMNS if c not in ("value", "repeat")})
    for frame in (plain, categorical):
        a, b = build_series(frame)
        assert (a.machine, a.entry, a.suite, a.metric, a.unit) == ("box", "a", "s", "trainer_throughput_sps",
                                                                   "samples/s")  # fmt: skip
        assert [n.night for n in a.nights] == [f"2026010{n}T020000Z-a" for n in range(3)]
        first, second, third = a.nights
        assert first.values == (9.9, 10.0, 10.1) and first.median == 10.0
        assert second.values[0] == 19.8 and second.values[1] != second.values[1] and second.median == 20.0
        assert second.run_ids == ("a10", "a11", "a12") and second.started_at == "2026-01-01T02:00:00+00:00"
        assert third.spec_ids == ("spec-c", "spec-a") and a.marked == {2: "spec spec-a → spec-c, spec-a"}
        assert [n.median for n in b.nights] == [1.0, 1.0] and b.verdict.night == "20260101T020000Z-b"


def test_no_points_no_series_whatever_the_form_of_the_frame():
    empty = pd.DataFrame([], columns=list(POINT_COLUMNS))
    assert build_series(empty) == [] and build_series(pa.Table.from_pandas(empty.astype(str))) == []
