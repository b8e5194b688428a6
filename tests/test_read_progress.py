"""Progress of a long file read: the kit's line reader reports bytes read to the listener the CLI installs, and
nothing when none is installed (the CLI installs one only when stderr is a terminal)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from benchbed import progress
from benchbed.adapterkit.lines import JsonLines
from benchbed.cli.main import cli


def _jsonl(path: Path, rows: int) -> Path:
    path.write_text("".join(json.dumps({"step": i, "data": {"x": 0.5, "pad": "p" * 200}}) + "\n" for i in
                            range(1, rows + 1)))  # fmt: skip
    return path


def test_a_long_read_reports_rising_byte_counts_that_end_at_the_file_size(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "metrics.jsonl", 60_000)  # about 13 MiB: three reports, then the last
    seen: list[tuple[str, int, int]] = []
    with progress.reporting(lambda label, done, total: seen.append((label, done, total))):
        rows = sum(1 for _ in JsonLines(path, []))
    size = path.stat().st_size
    assert rows == 60_000 and size > 3 * progress.EVERY
    assert {label for label, _, _ in seen} == {"reading metrics.jsonl"} and {t for *_, t in seen} == {size}
    done = [d for _, d, _ in seen]
    assert done == sorted(done) and done[-1] == size and len(done) == size // progress.EVERY + 1
    assert all(b - a >= progress.EVERY for a, b in zip(done[:-2], done[1:-1], strict=True))


def test_without_a_listener_nothing_is_reported_and_the_listener_is_reset(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "metrics.jsonl", 10)
    seen: list[int] = []
    with progress.reporting(lambda *_: seen.append(1)):
        pass
    assert progress.listener() is None
    assert sum(1 for _ in JsonLines(path, [])) == 10 and seen == []


def test_an_ingest_on_a_pipe_draws_no_bar(tmp_path: Path) -> None:
    fixture = Path(__file__).resolve().parent / "fixtures" / "verl" / "verl-0.9.1-v1_sync" / "metrics.jsonl"
    result = CliRunner().invoke(cli, ["ingest", str(fixture), "--adapter", "verl", "--store", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    assert "reading metrics.jsonl" not in result.stderr
