"""`benchbed watch` of tracker histories (issue 38): an update's cost as a W&B `.wandb` record log, a TensorBoard
event file or verl's console log (a run with no other output) grows, against re-reading the whole file.

A verl history of 1,000 and 10,000 steps (each step: verl v1_sync's first logged row, tests/fixtures/verl, with its
step number changed) is written as the trackers write it (wandb's Record messages framed into a `.wandb` log;
tensorboard's own EventFileWriter) and followed through the verl adapter's live reader, which has read it all; each
round appends one more step and updates. The baseline reads the whole 10,000-step file into a fresh reader,
what a watcher without offsets would do on every update. Targets: the update at 10,000 steps within 3x of the one at
1,000 (flat in the file's length) and at least 20x faster than re-reading the file; the issue's 10 ms is reported. Each
update still runs the adapter's history parser and the trace's validation on its new rows (the parse ingest runs),
so it costs more than the JSONL follower's (benchmarks/test_bench_watch.py). On 2 shared cores, runs of both
benchmarks together: 5.2-5.9 ms an update at 1,000 and 10,000 steps against the JSONL follower's 0.17-0.20 ms (30x);
under heavier load 9.6-16.7 ms against 0.16-0.19 ms (50-90x). The 10 ms is met on a quiet machine and missed on a
loaded one, so it is not judged. It was 35-46 ms (200x the JSONL follower's) before verl's key map and
the trace's category dtypes were made once instead of at each update and the validation judged categories instead
of rows."""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ratios import baseline_median, median_of, ratio

from benchbed.adapterkit.histories.wandb_file import (
    BLOCK,
    CHUNK_HEADER,
    FILE_HEADER,
    FIRST,
    FORMAT_VERSION,
    FULL,
    IDENT,
    LAST,
    MAGIC,
    MIDDLE,
)
from benchbed.watch.live import LiveFigures
from benchbed.watch.readers import live_reader

pytest.importorskip("wandb", reason="the `wandb` extra is not installed")
pytest.importorskip("tensorboard", reason="the `tensorboard` extra is not installed")

SIZES = (1_000, 10_000)
ROUNDS = 100
STEP_TARGET_S = 0.010  # the target for an update at 10,000 steps: reported (see the docstring)
FLAT_LIMIT = 3.0
REREAD_LIMIT = 1 / 20
ROW = json.loads((Path(__file__).parents[1] / "tests/fixtures/verl/verl-0.9.1-v1_sync/metrics.jsonl").read_text()
                 .splitlines()[1])["data"]  # fmt: skip
RUN_DIR = "offline-run-20261207_000000-bench0001"


class WandbLog:
    """A `.wandb` log of wandb's own Record messages (a run record, then one history record per step), framed as
    wandb's writer frames them (the LevelDB log format histories/wandb_file.py documents: a 7-byte header, 32 KiB
    blocks of crc | length | type | payload chunks). wandb 0.31 writes the log from its Go core, which flushes an
    offline run's log as it sees fit, so the framing is done here to append one step exactly when a round needs it."""

    def __init__(self, root: Path) -> None:
        from wandb.proto import wandb_internal_pb2 as pb

        self.pb, self.dir = pb, root / RUN_DIR
        self.dir.mkdir(parents=True)
        self.fh = (self.dir / "run-bench0001.wandb").open("wb")
        self.fh.write(IDENT + struct.pack("<HB", MAGIC, FORMAT_VERSION))
        self.pos = FILE_HEADER
        record = pb.Record()
        record.run.run_id, record.run.project = "bench0001", "benchbed"
        self._write(record.SerializeToString())

    def _write(self, payload: bytes) -> None:
        first = True
        while True:
            left = BLOCK - self.pos % BLOCK
            if left < CHUNK_HEADER:  # the block's trailer: zero padding
                self.fh.write(bytes(left))
                self.pos += left
                continue
            n = min(len(payload), left - CHUNK_HEADER)
            last = n == len(payload)
            kind = (FULL if last else FIRST) if first else (LAST if last else MIDDLE)
            chunk, payload, first = payload[:n], payload[n:], False
            self.fh.write(struct.pack("<IHB", zlib.crc32(chunk, zlib.crc32(bytes([kind]))), n, kind) + chunk)
            self.pos += CHUNK_HEADER + n
            if last:
                break
        self.fh.flush()

    def step(self, step: int) -> None:
        record = self.pb.Record()
        for key, value in {**ROW, "_step": step, "_timestamp": 1.8e9 + step}.items():
            item = record.history.item.add()
            item.key, item.value_json = key, json.dumps(value)
        self._write(record.SerializeToString())


class EventLog:
    """An event file written by tensorboard's own EventFileWriter: one event per step holding the row's scalars."""

    def __init__(self, root: Path) -> None:
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        self.dir = root / "tensorboard_log"
        self.writer = EventFileWriter(str(self.dir))

    def step(self, step: int) -> None:
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.proto.summary_pb2 import Summary

        values = [Summary.Value(tag=k, simple_value=float(v)) for k, v in ROW.items()]
        self.writer.add_event(Event(step=step, wall_time=1.8e9 + step, summary=Summary(value=values)))
        self.writer.flush()


class ConsoleLog:
    """A run whose only output is verl's console log (tests/fixtures/verl/verl-0.9.1-v1_sync/console.log, printed by
    verl's Tracking console backend under Ray): the log's lines before its first step line (the task runner's printed
    config among them), then its step-1 line once per step with the step number changed."""

    SOURCE = Path(__file__).parents[1] / "tests/fixtures/verl/verl-0.9.1-v1_sync/console.log"

    def __init__(self, root: Path) -> None:
        lines = self.SOURCE.read_text().splitlines(keepends=True)
        first = next(i for i, line in enumerate(lines) if " step:1 - " in line)
        self.line = lines[first]
        self.dir = root / "run"
        (self.dir / "logs").mkdir(parents=True)
        self.fh = (self.dir / "logs" / "stdout.log").open("w")
        self.fh.write("".join(lines[:first]))

    def step(self, step: int) -> None:
        self.fh.write(self.line.replace(" step:1 - ", f" step:{step} - "))
        self.fh.flush()


FORMATS: dict[str, Callable[[Path], Any]] = {"wandb": WandbLog, "tensorboard": EventLog, "console": ConsoleLog}


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory, quick: bool) -> dict[tuple[str, int], Any]:
    sizes = SIZES[:1] if quick else SIZES
    out = {}
    for name, log_type in FORMATS.items():
        for n in sizes:
            log = log_type(tmp_path_factory.mktemp(f"{name}-{n}"))
            for step in range(1, n + 1):
                log.step(step)
            out[name, n] = log
    return out


def _reader(log: Any) -> tuple[Any, LiveFigures]:
    figures = LiveFigures(warmup_steps=1)
    return live_reader("verl", log.dir, figures), figures


@pytest.mark.parametrize("name", FORMATS)
def test_baseline_rereading_the_whole_file(benchmark, logs, medians: dict[str, float], name: str) -> None:
    steps = max(n for f, n in logs if f == name)

    def reread() -> LiveFigures:
        reader, figures = _reader(logs[name, steps])
        reader.update(now=0.0)
        reader.close()
        return figures

    figures = benchmark.pedantic(reread, rounds=3, iterations=1)
    assert len(figures.step_numbers) >= steps - 1  # TensorBoard holds the last step back until the next one
    medians[f"{name}: re-read the whole file"] = median_of(benchmark)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", FORMATS)
def test_an_update_after_one_more_step(benchmark, logs, medians: dict[str, float], name: str, size: int) -> None:
    if (name, size) not in logs:
        pytest.skip("--bench-quick leaves the largest file out")
    log = logs[name, size]
    reader, figures = _reader(log)
    reader.update(now=0.0)  # the file so far, read once
    appended = [size]

    def append_one_step() -> None:
        appended[0] += 1
        log.step(appended[0])

    benchmark.pedantic(lambda: reader.update(now=0.0), setup=append_one_step, rounds=ROUNDS, iterations=1)
    reader.close()
    assert figures.step_numbers[-1] >= appended[0] - 1  # each update saw its new step
    seconds = median_of(benchmark)
    medians[f"{name}: update at {size}"] = seconds
    print(f"\n{name}: update after one more step of a {size:,}-step history: {seconds * 1e3:.3f} ms")
    sizes = sorted(n for f, n in logs if f == name)
    if size == sizes[-1] and len(sizes) > 1:
        reread = baseline_median(medians, f"{name}: re-read the whole file")
        print(f"{name}: re-reading the whole {size:,}-step file: {reread * 1e3:.1f} ms, {reread / seconds:,.0f}x")
        ratio(f"{name} watch update at {size:,} steps", seconds, "re-read the whole file", reread, REREAD_LIMIT)
        ratio(f"{name} watch update at {size:,} steps", seconds, "10 ms", STEP_TARGET_S, None)
        ratio(f"{name} watch update at {size:,} steps", seconds, f"update at {sizes[0]:,} steps",
              baseline_median(medians, f"{name}: update at {sizes[0]}"), FLAT_LIMIT)  # fmt: skip
