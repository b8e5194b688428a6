"""W&B run directories written by the real wandb (offline), read back by the kit's W&B source."""

from __future__ import annotations

import math
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchbed.adapterkit.histories import HistoryError, history_kind, open_history
from benchbed.adapterkit.histories.locate import WANDB
from benchbed.adapterkit.histories.wandb_file import BLOCK, find_wandb_file, read_wandb_file

ROWS = [{"step": s, "data": {"timing_s/step": 10.0 + s, "timing_s/gen": 4.0 + s / 4, "nested": {"x": s}}}
        for s in range(1, 301)]  # fmt: skip
ROWS[4]["data"]["note"] = "text values are not figures"
ROWS[5]["data"]["timing_s/gen"] = math.nan


@pytest.fixture(scope="module")
def run_dir(wandb_run: Callable[[dict[str, Any], Path], Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    spec = {"project": "bench", "name": "three-hundred", "config": {"trainer": {"total_training_steps": 300}},
            "rows": ROWS}  # fmt: skip
    return wandb_run(spec, tmp_path_factory.mktemp("wandb"))


def test_rows_config_and_source_are_read_exactly(run_dir: Path) -> None:
    history = open_history(run_dir)
    frame = history.frame
    assert list(frame["step"]) == list(range(1, 301))
    assert frame["timing_s/step"].tolist() == [10.0 + s for s in range(1, 301)]
    assert frame["nested.x"].tolist() == list(map(float, range(1, 301)))
    assert math.isnan(frame["timing_s/gen"][5]) and frame["timing_s/gen"][6] == 4.0 + 7 / 4
    assert "note" not in frame.columns and frame["wall_time"].notna().all()
    assert frame["wall_time"].is_monotonic_increasing
    assert history.config == {"trainer": {"total_training_steps": 300}}
    run_id = run_dir.name.rsplit("-", 1)[1]
    assert (history.source.tracker, history.source.run_id, history.source.project, history.source.name) == (
        "wandb", run_id, "bench", "three-hundred")  # fmt: skip
    assert history.packages["wandb"] and not history.partial and history.warnings == []
    step, wall, values = next(history.rows())
    assert (step, values) == (1, {"timing_s/step": 11.0, "timing_s/gen": 4.25, "nested.x": 1.0}) and wall > 1.7e9


def test_every_form_of_the_location_reads_the_same_run(run_dir: Path) -> None:
    wandb_file = find_wandb_file(run_dir)
    assert wandb_file is not None
    for location in (run_dir, wandb_file, run_dir.parent, str(run_dir)):
        assert history_kind(location) == WANDB
        assert len(open_history(location).frame) == 300


def chunk_starts(data: bytes, block: int) -> set[int]:
    """The file offsets at which the chunks of block `block` start (each header gives its payload's length)."""
    starts, pos = set(), block * BLOCK
    while pos + 7 <= min(len(data), (block + 1) * BLOCK):
        starts.add(pos)
        pos += 7 + struct.unpack_from("<H", data, pos + 4)[0]
    return starts


def test_a_cut_file_keeps_the_rows_before_the_cut_and_names_the_offset(run_dir: Path, tmp_path: Path) -> None:
    data = find_wandb_file(run_dir).read_bytes()  # type: ignore[union-attr]
    assert len(data) > 2 * BLOCK
    # Mid-block and inside a chunk: a cut exactly where a chunk starts leaves a whole log of fewer entries, which no
    # reader can tell from a run that stopped there, so the cut moves past such a start (into its header).
    cut_at = next(at for at in range(BLOCK + 100, 2 * BLOCK) if at not in chunk_starts(data, 1))
    cut = tmp_path / "run-cut.wandb"
    cut.write_bytes(data[:cut_at])
    history = read_wandb_file(cut)
    assert history.partial
    (warning,) = history.warnings
    assert warning.startswith(f"{cut}: damaged at byte ") and "the rest is lost" in warning
    offset = int(warning.split("damaged at byte ")[1].split()[0])
    assert BLOCK <= offset < cut_at
    whole = read_wandb_file(find_wandb_file(run_dir))  # type: ignore[arg-type]
    n = len(history.frame)
    assert 0 < n < 300
    assert history.frame["timing_s/step"].tolist() == whole.frame["timing_s/step"].tolist()[:n]


def test_a_bad_checksum_ends_the_reading_there(run_dir: Path, tmp_path: Path) -> None:
    data = bytearray(find_wandb_file(run_dir).read_bytes())  # type: ignore[union-attr]
    assert struct.unpack_from("<H", data, 2 * BLOCK + 4)[0] > 0  # the third block's first chunk has a payload
    data[2 * BLOCK + 7] ^= 0xFF  # its first payload byte
    bad = tmp_path / "run-bad.wandb"
    bad.write_bytes(bytes(data))
    history = read_wandb_file(bad)
    assert history.partial and "checksum mismatch" in history.warnings[0]
    assert f"damaged at byte {2 * BLOCK}" in history.warnings[0]
    assert 0 < len(history.frame) < 300


def test_a_newer_log_format_and_a_foreign_file_are_refused(run_dir: Path, tmp_path: Path) -> None:
    data = bytearray(find_wandb_file(run_dir).read_bytes())  # type: ignore[union-attr]
    struct.pack_into("<B", data, 6, 1)
    newer = tmp_path / "run-newer.wandb"
    newer.write_bytes(bytes(data))
    with pytest.raises(HistoryError, match=r"W&B log format 1 .*this reader knows format 0"):
        read_wandb_file(newer)
    foreign = tmp_path / "run-foreign.wandb"
    foreign.write_text('{"step": 1}\n')
    with pytest.raises(HistoryError, match="not a W&B run log"):
        read_wandb_file(foreign)


def test_a_summary_only_run_says_so(wandb_run: Callable[..., Path], tmp_path: Path) -> None:
    run_dir = wandb_run({"project": "bench", "summary": {"final/accuracy": 0.75}}, tmp_path)
    with pytest.raises(HistoryError, match=r"only summary values \(final/accuracy\) and no history rows"):
        open_history(run_dir)


def test_a_wandb_folder_with_two_runs_names_them(run_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "wandb"
    for name in ("offline-run-20260101_000000-aaaa1111", "offline-run-20260102_000000-bbbb2222"):
        shutil.copytree(run_dir, folder / name)
    with pytest.raises(HistoryError, match=r"holds 2 W&B runs; pass one run directory: offline-run-20260101"):
        open_history(folder)


def test_the_guide_names_the_wandb_versions_that_wrote_the_fixtures() -> None:
    """docs/guides/histories.md says which wandb the reader is tested with: every version that wrote a committed
    W&B fixture (its requirements.txt, wandb's own pip freeze) is named there."""
    guide = (Path(__file__).parents[2] / "docs" / "guides" / "histories.md").read_text()
    fixtures = Path(__file__).parents[1] / "fixtures"
    versions = set()
    for requirements in fixtures.glob("**/wandb/*/files/requirements.txt"):
        lines = requirements.read_text().splitlines()
        versions |= {line.split("==")[1] for line in lines if line.startswith("wandb==")}
    assert versions and all(f"wandb {v} " in guide.split("Tested with", 1)[1][:200] for v in versions), versions
