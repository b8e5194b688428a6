"""The verl live reader fed verl's file-logger JSONL (tests/fixtures/verl/*/metrics.jsonl, written by verl's own
Tracking) a few bytes at a time, half-written lines included, or, in a run with no JSONL, its console log a line at a
time: it sees each step once, in order, and its run figures are the ones the adapter's parse gives the finished run.
A `.wandb` file that cannot be read ends the watch with one line naming it."""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path

import pytest

from benchbed.adapter import get_adapter
from benchbed.metrics import compute_metrics
from benchbed.watch.live import LiveFigures
from benchbed.watch.readers import check_watchable, live_reader
from benchbed.watch.session import Watch, final_metrics

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "verl"
SCENARIOS = ("verl-0.9.1-v1_sync", "verl-0.9.1-fully_async", "verl-0.9.1-one_step_off")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_live_figures_end_on_the_parse_of_the_whole_file(scenario: str, tmp_path: Path) -> None:
    check_watchable("verl", tmp_path)  # verl declares a live reader
    source = (FIXTURES / scenario / "metrics.jsonl").read_bytes()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    figures = LiveFigures(warmup_steps=1)
    reader = live_reader("verl", run_dir, figures)
    chunks, rng, at = 0, random.Random(7), 0
    while at < len(source):
        cut = min(len(source), at + rng.randint(1, 400))  # a piece may end inside a line
        with (run_dir / "metrics.jsonl").open("ab") as fh:
            fh.write(source[at:cut])
        at = cut
        reader.update(now=float(chunks))
        chunks += 1
    reader.close()
    metrics = compute_metrics(get_adapter("verl").parse(FIXTURES / scenario / "metrics.jsonl"), warmup_steps=1)
    logged = sorted({json.loads(line)["step"] for line in source.decode().splitlines()} - {0})
    assert figures.step_numbers == logged  # each step once, in order (verl's step 0 is a validation, no step)
    run = figures.figures()["run"]
    assert run["trainer_idle_ratio"] == pytest.approx(metrics["trainer_idle_ratio"].value, rel=1e-9)
    assert run["step_time_mean_s"] == pytest.approx(metrics["step_time_mean_s"].value, rel=1e-9)
    assert chunks > len(logged) and not figures.ended and reader.warnings == []


def test_a_launched_run_ends_when_its_record_does(tmp_path: Path) -> None:
    figures = LiveFigures()
    reader = live_reader("verl", tmp_path, figures)
    (tmp_path / "record.json").write_text(json.dumps({"status": "started"}))
    reader.update(now=0.0)
    assert not figures.ended
    (tmp_path / "record.json").write_text(json.dumps({"status": "succeeded"}))
    reader.update(now=1.0)
    assert figures.ended


def test_a_line_that_is_not_json_is_named_and_left_to_the_final_parse(tmp_path: Path) -> None:
    figures = LiveFigures()
    reader = live_reader("verl", tmp_path, figures)
    (tmp_path / "metrics.jsonl").write_text('{"step": 1, "data": {"timing_s/step": 2.0, "timing_s/gen": 1.0}}\n'
                                            "{cut\n")  # fmt: skip
    reader.update(now=0.0)
    assert figures.step_numbers == [1]
    assert reader.warnings == [f"{tmp_path / 'metrics.jsonl'}:2: not a JSON line (the final parse names it)"]


# (scenario, the figures compared): fully_async's printed config gives no batch, so ingest has no throughput either
CONSOLE_SCENARIOS = (
    ("verl-0.9.1-v1_sync", ("trainer_idle_ratio", "step_time_mean_s", "trainer_throughput_sps")),
    ("verl-0.9.1-fully_async", ("trainer_idle_ratio", "step_time_mean_s")),
)


def _ingested(location: Path) -> dict[str, float]:
    return {name: m.value for name, m in compute_metrics(get_adapter("verl").parse(location), warmup_steps=1).items()}


@pytest.mark.parametrize(("scenario", "compared"), CONSOLE_SCENARIOS)
def test_a_run_whose_only_output_is_its_console_log_is_followed_line_by_line(
    scenario: str, compared: tuple[str, ...], tmp_path: Path
) -> None:
    """verl's console log (written by verl's Tracking console backend: Ray actor prefixes, ANSI colours, the task
    runner's pprinted config, `np.int64(1)` values) appended a line at a time, now and then half a line first, into a
    run directory that holds nothing else: each step is seen once, in order, and the live figures (throughput too,
    from the printed config's batch) end on ingest's of the finished directory."""
    source = FIXTURES / scenario / "console.log"
    run_dir = tmp_path / "run"
    (run_dir / "logs").mkdir(parents=True)
    log = run_dir / "logs" / "stdout.log"  # where benchbed's launcher writes a run's console
    log.write_bytes(b"")
    figures = LiveFigures(warmup_steps=1)
    reader = live_reader("verl", run_dir, figures)
    rng = random.Random(11)
    for index, line in enumerate(source.read_bytes().splitlines(keepends=True)):
        cut = rng.randint(0, len(line)) if index % 3 == 0 else len(line)
        with log.open("ab") as fh:
            fh.write(line[:cut])
        reader.update(now=float(index))
        with log.open("ab") as fh:
            fh.write(line[cut:])
        reader.update(now=float(index))
    assert not figures.ended  # a console prints no end: the last step waits, a wrapped line may go on
    (run_dir / "record.json").write_text(json.dumps({"status": "succeeded"}))
    reader.update(now=1e6)
    reader.close()
    trace = get_adapter("verl").parse(run_dir)
    steps = sorted(int(s) for s in trace.events.loc[trace.events["key"] == "trainer.step", "step"].unique())
    assert figures.ended and figures.step_numbers == steps and len(steps) >= 4
    ingested, run = _ingested(run_dir), figures.figures()["run"]
    assert ingested == _ingested(source)  # the directory is read as its one console log
    for name in compared:
        assert run[name] == pytest.approx(ingested[name], rel=1e-12), name
    assert reader.warnings == []
    assert {k: m.value for k, m in final_metrics(run_dir, "verl").items()} == ingested  # what the watch prints last


def _wandb_bytes(rng: random.Random, header: bool) -> bytes:
    """Random bytes, after a valid W&B log header (`:W&B`, magic 0xBEE1, format 0) when `header`."""
    body = rng.randbytes(4096)
    return (b":W&B\xe1\xbe\x00" + body) if header else body


@pytest.mark.parametrize(("header", "offset"), [(False, 0), (True, 7)])
def test_a_wandb_file_of_random_bytes_is_named_at_once(benchbed, header: bool, offset: int, tmp_path: Path) -> None:
    """Nothing of it can ever be read: the watch ends at once, one line naming the file and the byte, exit 2 (a
    --timeout long enough to notice a watch that waits instead)."""
    pytest.importorskip("wandb", reason="the `wandb` extra is not installed: pip install 'benchbed[wandb]'")
    wandb_file = tmp_path / "run-x1y2z3.wandb"
    wandb_file.write_bytes(_wandb_bytes(random.Random(offset), header))
    started = time.monotonic()
    watched = benchbed("watch", tmp_path, "--adapter", "verl", "--interval", "0.05", "--timeout", "20")
    assert watched.returncode == 2 and time.monotonic() - started < 10
    lines = watched.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"benchbed: error: {wandb_file}: damaged at byte {offset} ("), lines
    assert watched.stdout == ""


def test_a_wandb_file_damaged_after_its_rows_is_named_when_the_run_is_over(tmp_path: Path) -> None:
    """A launched run's record log read for a while, then damaged: the rows before the damage are shown, and the
    watch ends, naming the damage, once benchbed's record says the run is over."""
    pytest.importorskip("wandb", reason="the `wandb` extra is not installed: pip install 'benchbed[wandb]'")
    source = next((FIXTURES.parent / "histories" / "verl" / "verl-0.9.1-v1_sync" / "wandb").glob("*/run-*.wandb"))
    data = bytearray(source.read_bytes())
    at = len(data) - 3000  # past the first steps' history records (the config's entries fill the first half)
    data[at : at + 64] = random.Random(1).randbytes(64)  # a stretch overwritten inside some chunk
    (tmp_path / source.name).write_bytes(bytes(data))
    (tmp_path / "record.json").write_text(json.dumps({"status": "started"}))
    watch = Watch(tmp_path, "verl")
    rows, _ = watch.update()
    assert rows and watch.failure is None and not watch.ended  # the run goes on: what comes after may still be read
    (tmp_path / "record.json").write_text(json.dumps({"status": "succeeded"}))
    watch.update()
    watch.close()
    assert watch.ended and watch.failure is not None
    assert re.fullmatch(rf"{re.escape(str(tmp_path / source.name))}: damaged at byte (\d+) \(checksum mismatch\); "
                        "not followed further", watch.failure)  # fmt: skip
    assert int(watch.failure.split("byte ")[1].split()[0]) <= at + 64
    assert watch.failure in watch.warnings
