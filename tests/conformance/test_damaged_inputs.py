"""Every adapter's own fixture runs, with one of their files damaged (cut at 60%, four bytes flipped, a byte that
is not UTF-8 written into it): each ingest ends in one BenchbedError line or a stored record, never a traceback; a
record log or event file (framed, with checksums) damaged in any of these ways is marked partial with a warning when
the figures came from it. A new adapter's fixtures get these cases too."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchbed.errors import BenchbedError
from benchbed.pipeline import ingest
from benchbed.store import Store

from .own_fixtures import COMMITTED, committed

DAMAGE = ("cut", "flipped", "not-utf8")


def framed(path: Path) -> bool:
    """A file whose records carry checksums (a W&B record log, a TensorBoard event file): any damage is found."""
    return path.suffix == ".wandb" or path.name.startswith("events.out.tfevents")


def data_files(run: Path, most: int = 3) -> list[Path]:
    """The run's largest files (what its figures come from), at most `most`, in name order."""
    files = [run] if run.is_file() else [p for p in run.rglob("*") if p.is_file() and not p.name.startswith(".")]
    return sorted(sorted(files, key=lambda p: (-p.stat().st_size, str(p)))[:most])


def damaged(data: bytes, how: str) -> bytes:
    middle = len(data) // 2
    if how == "cut":
        return data[: int(len(data) * 0.6)]
    if how == "flipped":
        return data[:middle] + bytes(b ^ 0xFF for b in data[middle : middle + 4]) + data[middle + 4 :]
    return data[:middle] + b"\xff\xfe" + data[middle:]


CASES = [(adapter, runs[0]) for adapter in sorted(COMMITTED) if (runs := committed(adapter))]


@pytest.mark.parametrize(("adapter", "run"), CASES, ids=[a for a, _ in CASES])
def test_a_damaged_file_of_a_run_is_one_line_or_a_marked_record(adapter: str, run: Path, tmp_path: Path) -> None:
    root = run if run.is_dir() else run.parent
    for victim in data_files(run):
        for how in DAMAGE:
            copy = tmp_path / f"{victim.name}-{how}" / run.name
            if run.is_dir():
                shutil.copytree(run, copy, symlinks=True)
            else:
                copy.parent.mkdir(parents=True)
                shutil.copy(run, copy)
            target = copy / victim.relative_to(root) if run.is_dir() else copy
            target.write_bytes(damaged(victim.read_bytes(), how))
            try:
                outcome = ingest(copy, adapter, Store(tmp_path / "store"))
            except BenchbedError as exc:
                assert "\n" not in str(exc).strip() and "Traceback" not in str(exc), (victim, how)
                continue
            record = outcome.record
            assert record.status in ("succeeded", "partial", "failed"), (victim, how)
            read_from = {Path(source).name for source in outcome.trace.meta.sources} if outcome.trace else set()
            if framed(victim) and victim.name in read_from:
                assert record.status == "partial" and any("damaged" in w for w in record.warnings), (victim, how)
