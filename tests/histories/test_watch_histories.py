"""`benchbed watch` of tracker histories (issue 38): verl's W&B `.wandb`, TensorBoard event file and MLflow file store
(tests/fixtures/histories/verl, written by wandb, tensorboard and mlflow through verl's own Tracking) are written
into a fresh directory piece by piece, cut inside records and at block boundaries, and followed by the kit's
follower of each format through verl's history parser. Each step is seen once, in order, and the live run figures
end on the figures `benchbed ingest` computes from the finished history; the watch's final figures are ingest's."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
from benchbed.adapters.verl.history import parse_history

from benchbed.adapter import get_adapter
from benchbed.adapterkit.histories.wandb_file import BLOCK
from benchbed.adapterkit.live_history import HistoryStepsReader
from benchbed.adapterkit.live_tensorboard import TensorboardFollower
from benchbed.metrics import compute_metrics
from benchbed.watch.live import LiveFigures
from benchbed.watch.readers import live_reader
from benchbed.watch.session import final_metrics

pytest.importorskip("wandb", reason="the `wandb` extra is not installed: pip install 'benchbed[wandb]'")
pytest.importorskip("mlflow", reason="the `mlflow` extra is not installed: pip install 'benchbed[mlflow]'")
pytest.importorskip("tensorboard", reason="the `tensorboard` extra is not installed")

HISTORIES = Path(__file__).parents[1] / "fixtures" / "histories" / "verl"
SYNC, ASYNC, GPU = (HISTORIES / n for n in ("verl-0.9.1-v1_sync", "verl-0.9.1-fully_async", "verl-0.9.1-v1_sync-gpu"))
FIGURES = ("trainer_idle_ratio", "step_time_mean_s")  # the live figures that are the metrics themselves


def _cuts(size: int, seed: int) -> list[int]:
    """Where the file is cut: every 32 KiB block boundary and 3 bytes either side, and random places (most inside a
    record), ending at the file's end."""
    rng = random.Random(seed)
    cuts = {min(size, b + d) for b in range(BLOCK, size, BLOCK) for d in (-3, 0, 3)}
    cuts |= {rng.randint(1, size) for _ in range(max(8, size // 700))}
    return sorted(cuts | {size})


def _grow(source: Path, target: Path, update: object, seed: int = 7) -> int:
    """Write `source` into `target` piece by piece, `update()` after each piece; the number of pieces."""
    data = source.read_bytes()
    at = 0
    cuts = _cuts(len(data), seed)
    for cut in cuts:
        with target.open("ab") as fh:
            fh.write(data[at:cut])
        at = cut
        update()  # type: ignore[operator]
    return len(cuts)


def _ingested(location: Path) -> dict[str, float]:
    return {name: m.value for name, m in compute_metrics(get_adapter("verl").parse(location), warmup_steps=1).items()}


def _assert_live_ends_on(figures: LiveFigures, location: Path) -> None:
    trace = get_adapter("verl").parse(location)
    steps = sorted(int(s) for s in trace.events.loc[trace.events["key"] == "trainer.step", "step"].unique())
    assert figures.step_numbers == steps  # each step once, in order
    metrics, run = _ingested(location), figures.figures()["run"]
    for name in FIGURES:
        assert run[name] == pytest.approx(metrics[name], rel=1e-12), name


def _wandb_copy(source_run: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    """(the fixture's .wandb file, an empty run directory of the same name, the file to grow in it)."""
    wandb_file = next(source_run.glob("run-*.wandb"))
    run_dir = tmp_path / source_run.name
    shutil.copytree(source_run, run_dir, ignore=shutil.ignore_patterns("*.wandb"))
    target = run_dir / wandb_file.name
    target.write_bytes(b"")
    return wandb_file, run_dir, target


@pytest.mark.parametrize("scenario", [SYNC, ASYNC], ids=lambda p: p.name)
def test_wandb_record_log_followed_chunk_by_chunk(scenario: Path, tmp_path: Path) -> None:
    source_run = next((scenario / "wandb").glob("offline-run-*"))
    wandb_file, run_dir, target = _wandb_copy(source_run, tmp_path)
    figures = LiveFigures(warmup_steps=1)
    reader = live_reader("verl", run_dir, figures)
    assert isinstance(reader, HistoryStepsReader)
    pieces = _grow(wandb_file, target, lambda: reader.update(now=0.0))
    reader.close()
    assert pieces > len(figures.step_numbers) and figures.ended  # wandb's exit record ends the run
    assert reader.warnings == []
    _assert_live_ends_on(figures, source_run)
    assert {k: m.value for k, m in final_metrics(run_dir, "verl").items()} == _ingested(source_run)


def test_tensorboard_event_file_followed_chunk_by_chunk(tmp_path: Path) -> None:
    source = next((SYNC / "tensorboard_log").glob("events.out.tfevents.*"))
    run_dir = tmp_path / "run"
    logs = run_dir / "tensorboard_log"
    logs.mkdir(parents=True)
    figures = LiveFigures(warmup_steps=1)
    reader = HistoryStepsReader(run_dir, figures, lambda: TensorboardFollower(logs), parse_history, "verl")
    target = logs / source.name
    _grow(source, target, lambda: reader.update(now=0.0))
    last = max(figures.step_numbers)
    assert not figures.ended  # TensorBoard writes no end: the last step waits, it may still gain scalars
    (run_dir / "record.json").write_text('{"status": "succeeded"}')  # benchbed's record of the run says it ended
    reader.update(now=1.0)
    assert figures.ended and max(figures.step_numbers) > last and reader.warnings == []
    _assert_live_ends_on(figures, SYNC / "tensorboard_log")
    assert {k: m.value for k, m in final_metrics(logs, "verl").items()} == _ingested(SYNC / "tensorboard_log")


def test_a_new_event_file_is_picked_up_through_the_adapters_watcher(tmp_path: Path) -> None:
    source = next((SYNC / "tensorboard_log").glob("events.out.tfevents.*"))
    logs = tmp_path / "tensorboard_log"
    logs.mkdir()
    (logs / source.name).write_bytes(b"")
    figures = LiveFigures(warmup_steps=1)
    reader = live_reader("verl", logs, figures)
    reader.update(now=0.0)
    (logs / source.name).write_bytes(source.read_bytes())
    reader.update(now=1.0)
    steps = sorted(int(s) for s in _steps(SYNC / "tensorboard_log"))
    assert figures.step_numbers == steps[:-1]  # all but the last step, which may still grow


def _steps(location: Path) -> list[int]:
    trace = get_adapter("verl").parse(location)
    return list(trace.events.loc[trace.events["key"] == "trainer.step", "step"].unique())


def _mlflow_copy(store: Path, tmp_path: Path) -> tuple[Path, Path, list[tuple[Path, bytes]]]:
    """(the copied store, its run folder, the metric lines to append in the order mlflow wrote them); the copy's
    metric files are empty and its run RUNNING."""
    target = tmp_path / "mlruns"
    shutil.copytree(store, target)
    run = next(p.parent for p in target.glob("*/*/metrics"))
    lines = []
    for path in sorted((run / "metrics").rglob("*")):
        if path.is_file():
            for order, line in enumerate(path.read_bytes().splitlines(keepends=True)):
                lines.append((int(line.split()[0]), order, path, line))
            path.write_bytes(b"")
    meta = run / "meta.yaml"
    meta.write_text(meta.read_text().replace("status: 3", "status: 1"))
    return target, run, [(p, line) for _, _, p, line in sorted(lines, key=lambda x: (x[0], x[1], str(x[2])))]


@pytest.mark.parametrize("scenario", [SYNC, GPU], ids=lambda p: p.name)
def test_mlflow_file_store_followed_line_by_line(scenario: Path, tmp_path: Path) -> None:
    target, run, lines = _mlflow_copy(scenario / "mlruns", tmp_path)
    figures = LiveFigures(warmup_steps=1)
    reader = live_reader("verl", target, figures)
    rng = random.Random(3)
    for index, (path, line) in enumerate(lines):
        cut = rng.randint(0, len(line))  # half a line first, now and then
        with path.open("ab") as fh:
            fh.write(line[:cut])
        if index % 7 == 0:
            reader.update(now=float(index))
        with path.open("ab") as fh:
            fh.write(line[cut:])
        if index % 5 == 0:
            reader.update(now=float(index))
    reader.update(now=float(len(lines)))
    assert not figures.ended
    meta = run / "meta.yaml"
    meta.write_text(meta.read_text().replace("status: 1", "status: 3"))  # mlflow's FINISHED
    reader.update(now=float(len(lines) + 1))
    reader.close()
    assert figures.ended and reader.warnings == []
    _assert_live_ends_on(figures, scenario / "mlruns")
    ingested = _ingested(scenario / "mlruns")
    assert {k: m.value for k, m in final_metrics(target, "verl").items()} == ingested
    if scenario is GPU:  # the system/gpu_*_utilization_percentage samples, by the schedule: 55 % over steps 2-6
        assert figures.figures()["run"]["gpu_busy_ratio"] == pytest.approx(0.55, rel=1e-12)
        assert ingested["gpu_busy_ratio"] == pytest.approx(0.55, rel=1e-12)


def test_gpu_busy_from_wandb_system_records_live(tmp_path: Path) -> None:
    """The GPU fixture's schedule (make_gpu_trackers.py): over the run's steps 2-6 the four GPUs are 90, 70, 40 and
    20 % busy, so 55 % on average; the warm-up's 100 % and the 0 % after the last step are not in the run scope."""
    source_run = next((GPU / "wandb").glob("offline-run-*"))
    wandb_file, run_dir, target = _wandb_copy(source_run, tmp_path)
    figures = LiveFigures(warmup_steps=1)
    reader = live_reader("verl", run_dir, figures)
    _grow(wandb_file, target, lambda: reader.update(now=0.0), seed=11)
    run = figures.figures()["run"]
    assert run["gpu_busy_ratio"] == pytest.approx(0.55, rel=1e-12)
    assert run["gpu_busy_ratio"] == pytest.approx(_ingested(source_run)["gpu_busy_ratio"], rel=1e-12)
    assert run["gpu_idle_gap"] == pytest.approx(0.45 - run["trainer_idle_ratio"], rel=1e-12)


def test_a_truncated_record_log_is_read_again_and_a_damaged_chunk_stops_the_following(tmp_path: Path) -> None:
    from benchbed.adapterkit.live_tensorboard import TfRecordTail
    from benchbed.adapterkit.live_wandb import RecordLogTail

    data = next(next((SYNC / "wandb").glob("offline-run-*")).glob("run-*.wandb")).read_bytes()
    path = tmp_path / "run-x.wandb"
    path.write_bytes(data)
    tail = RecordLogTail(path)
    entries = tail.read()
    assert len(entries) > 10 and tail.read() == []
    path.write_bytes(data[:5000])  # a new log in its place, shorter than what was read
    again = tail.read()
    assert tail.resets == 1 and 0 < len(again) < len(entries) and again == entries[: len(again)]
    damaged = bytearray(data)
    damaged[5000 + 20] ^= 0xFF  # inside a chunk past the first 5,000 bytes
    path.write_bytes(bytes(damaged))
    tail.read()
    assert tail.damage is not None and "checksum mismatch" in tail.damage and tail.read() == []
    events = next((SYNC / "tensorboard_log").glob("events.out.tfevents.*")).read_bytes()
    tb = tmp_path / "events.out.tfevents.1.x"
    tb.write_bytes(events[:-3])  # the last record still being written
    records = TfRecordTail(tb)
    first = records.read()
    tb.write_bytes(events)
    assert len(records.read()) == 1 and records.damage is None and len(first) > 1


def test_a_console_log_is_followed_through_rotation_and_truncation(tmp_path: Path) -> None:
    """AReaL's console log (tests/fixtures/areal/console, read through adapters/areal/console.toml) written line by
    line into a run directory, rotated (renamed, a new log opened) a third of the way and truncated in place
    (copytruncate) two thirds of the way: every step is seen once and the figures end on ingest's of the whole log."""
    source = Path(__file__).parents[1] / "fixtures" / "areal" / "console" / "grpo-async-6x8.log"
    lines = source.read_bytes().splitlines(keepends=True)
    run_dir = tmp_path / "trial"
    run_dir.mkdir()
    log = run_dir / "trial.log"
    figures = LiveFigures(warmup_steps=1)
    reader = live_reader("areal", run_dir, figures)
    rng = random.Random(5)
    at = 0
    for event, until in (("rotate", len(lines) // 3), ("truncate", 2 * len(lines) // 3), ("end", len(lines))):
        while at < until:
            piece = b"".join(lines[at : min(until, at + rng.randint(1, 6))])
            cut = rng.randint(0, len(piece))
            with log.open("ab") as fh:
                fh.write(piece[:cut])  # the piece's end, half a line maybe, comes after an update
            reader.update(now=float(at))
            with log.open("ab") as fh:
                fh.write(piece[cut:])
            at = min(until, at + len(piece.splitlines()))
            reader.update(now=float(at))
        if event == "rotate":
            log.rename(run_dir / "trial.log.1")
            log.write_bytes(b"")
        elif event == "truncate":
            reader.update(now=float(at))
            (run_dir / "trial.log.2").write_bytes(log.read_bytes())
            log.write_bytes(b"")
    reader.update(now=float(at))
    assert not figures.ended
    (run_dir / "record.json").write_text('{"status": "succeeded"}')
    reader.update(now=float(at + 1))
    reader.close()
    assert figures.ended and reader.resets == 2 and reader.warnings == []
    trace = get_adapter("areal").parse(source)
    steps = sorted(int(s) for s in trace.events.loc[trace.events["key"] == "trainer.step", "step"].unique())
    assert figures.step_numbers == steps
    metrics = {name: m.value for name, m in compute_metrics(trace, warmup_steps=1).items()}
    run = figures.figures()["run"]
    for name in FIGURES:
        assert run[name] == pytest.approx(metrics[name], rel=1e-12), name
