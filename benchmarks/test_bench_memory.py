"""Issue 39's memory target: peak RSS against the size of the values read as doubles (N steps × keys × 8 bytes), for
a verl file-logger JSONL of N steps × 57 keys, with the interpreter's own peak (the module imported, nothing read)
taken off.

- The reader (the file into per-key-set columns, a line at a time): at most 3× the values.
- TensorBoard's reader (an event file of N steps × 50 keys into blocks of doubles, a record at a time): at most 3×.
- The whole parse into a trace: reported beside the trace's own size. The trace keeps a row per step and figure (25
  here) with 16 columns, some 100 bytes a row: 5.5× the values of this file, so the parse cannot come within 3×
  while the trace is a frame of that shape."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ratios import PRINT_PEAK_RSS_KIB, ratio
from workloads import write_verl_jsonl

KEYS = 50
READER_LIMIT = 3.0


@pytest.fixture(scope="module")
def jsonl(
    tmp_path_factory: pytest.TempPathFactory, quick: bool, request: pytest.FixtureRequest
) -> tuple[Path, int, int]:
    """(file, steps, keys per step): `--memory-steps` steps, else 10,000 quick and 100,000 by default."""
    steps = request.config.getoption("--memory-steps") or (10_000 if quick else 100_000)
    path = tmp_path_factory.mktemp("memory") / "metrics.jsonl"
    return path, steps, write_verl_jsonl(path, steps, KEYS)


def run(code: str, *args: str) -> list[str]:
    """The lines a child Python prints running `code`, its own peak RSS in KiB last."""
    out = subprocess.run([sys.executable, "-c", code + "\n" + PRINT_PEAK_RSS_KIB, *args], check=True,
                         capture_output=True, text=True)  # fmt: skip
    return out.stdout.split()


def label(path: Path, steps: int, width: int) -> str:
    return f"{steps:,} steps x {width} keys ({path.stat().st_size >> 20} MiB)"


def test_verl_reader_peak_rss_within_3x_the_values(jsonl: tuple[Path, int, int]) -> None:
    path, steps, width = jsonl
    module = "from benchbed.adapters.verl.records import read_jsonl"
    idle = int(run(module)[-1])
    peak = int(run(f"{module}\nimport sys, pathlib\nassert len(read_jsonl(pathlib.Path(sys.argv[1])).records)",
                   str(path))[-1])  # fmt: skip
    values = steps * width * 8
    ratio(f"verl JSONL read peak RSS above start-up, {label(path, steps, width)}", (peak - idle) * 1024,
          "the values as doubles", values, READER_LIMIT)  # fmt: skip


def test_verl_parse_peak_rss_against_the_values_size(jsonl: tuple[Path, int, int]) -> None:
    path, steps, width = jsonl
    idle = int(run("from benchbed.adapters.verl import VerlAdapter")[-1])
    parse = ("import sys\nfrom benchbed.adapters.verl import VerlAdapter\ntrace = VerlAdapter().parse(sys.argv[1])\n"
             "print(len(trace.events), trace.events.memory_usage().sum())")  # fmt: skip
    rows, trace_bytes, peak = map(int, run(parse, str(path))[-3:])
    assert rows == 25 * steps  # a row per step and figure the file logs
    values = steps * width * 8
    above_idle = (peak - idle) * 1024
    ratio(f"verl parse peak RSS above start-up, {label(path, steps, width)}", above_idle, "the values as doubles",
          values, None)  # fmt: skip
    ratio(f"the trace's own size, {steps:,} steps", trace_bytes, "the values as doubles", values, None)
    ratio(f"verl parse peak RSS above start-up, {steps:,} steps", above_idle, "the trace's own size", trace_bytes,
          None)  # fmt: skip


# TensorBoard (issue 39, item 3): one event file of N steps, each an event with every key's scalar as a summary value
# (a TF1 merged summary, as `FileWriter.add_summary` writes it), written with tensorboard's own EventFileWriter.
TENSORBOARD_KEYS = 50
WRITE_TENSORBOARD = """
import sys
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter
steps, keys = int(sys.argv[2]), int(sys.argv[3])
writer = EventFileWriter(sys.argv[1], max_queue_size=1000)
tags = [f"timing_s/k{j}" for j in range(keys)]
for s in range(steps):
    values = [summary_pb2.Summary.Value(tag=tag, simple_value=s * 0.5 + j) for j, tag in enumerate(tags)]
    writer.add_event(event_pb2.Event(wall_time=1.7e9 + s, step=s, summary=summary_pb2.Summary(value=values)))
writer.close()
"""
TENSORBOARD_READER = ("from benchbed.adapterkit.histories.tensorboard import read_tensorboard\n"
                      "from tensorboard.compat.proto.event_pb2 import Event\nfrom tensorboard.util import tensor_util\n"
                      "import google_crc32c, pandas")  # fmt: skip


@pytest.fixture(scope="module")
def tensorboard_run(tmp_path_factory: pytest.TempPathFactory, quick: bool) -> tuple[Path, int]:
    """(folder holding one event file, steps)."""
    pytest.importorskip("tensorboard", reason="the `tensorboard` extra is not installed")
    steps = 10_000 if quick else 100_000
    folder = tmp_path_factory.mktemp("tensorboard")
    subprocess.run([sys.executable, "-c", WRITE_TENSORBOARD, str(folder), str(steps), str(TENSORBOARD_KEYS)],
                   check=True)  # fmt: skip
    return folder, steps


def test_tensorboard_reader_peak_rss_within_3x_the_values(tensorboard_run: tuple[Path, int]) -> None:
    """`read_tensorboard` of 10^5 steps × 50 keys in a fresh process, its peak RSS above the same process with the
    reader and tensorboard's event classes imported and nothing read: at most 3× the values as doubles."""
    folder, steps = tensorboard_run
    idle = int(run(TENSORBOARD_READER)[-1])
    read = (f"{TENSORBOARD_READER}\nimport sys, pathlib\nframe = read_tensorboard(pathlib.Path(sys.argv[1])).frame\n"
            "print(frame.shape[0], frame.shape[1])")  # fmt: skip
    rows, columns, peak = map(int, run(read, str(folder))[-3:])
    assert (rows, columns) == (steps, 2 + 1 + TENSORBOARD_KEYS)  # step, wall_time, part, the keys
    size = sum(f.stat().st_size for f in folder.iterdir())
    ratio(f"TensorBoard read peak RSS above start-up, {steps:,} steps x {TENSORBOARD_KEYS} keys ({size >> 20} MiB)",
          (peak - idle) * 1024, "the values as doubles", steps * TENSORBOARD_KEYS * 8, READER_LIMIT)  # fmt: skip
