"""The trl live reader fed a real TRL run's files as they were written (tests/fixtures/trl/grpo-spg2-watch, made by
`benchbed run experiments/trl-grpo-cpu.toml --set workload.steps=6`), a few lines and half-lines at a time: it sees
each step once, in order, and ends on the figures the adapter's parse and the metrics give."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from benchbed.adapters.trl.launch import BATCHES_FILE, ROWS_FILE

from benchbed.adapter import get_adapter
from benchbed.engine.eventlog import EVENTS_DIRNAME
from benchbed.metrics import compute_metrics
from benchbed.watch.live import LiveFigures
from benchbed.watch.readers import check_watchable, live_reader

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "trl" / "grpo-spg2-watch"
SANDBOXES = f"{EVENTS_DIRNAME}/sandboxes.jsonl"
STEPS = 6
# figure -> the metric it is (the live name, the registry's name)
SAME = {"trainer_idle_ratio": "trainer_idle_ratio", "step_time_mean_s": "step_time_mean_s",
        "trainer_throughput_sps": "trainer_throughput_sps", "staleness_mean": "staleness_mean",
        "staleness_max": "staleness_max", "zero_adv_group_fraction": "zero_adv_group_fraction",
        "truncated_fraction": "response_truncated_fraction", "generator_utilization": "generator_utilization",
        "sandbox_init_failure_rate": "sandbox_init_failure_rate"}  # fmt: skip


def _lines(name: str) -> list[str]:
    return (FIXTURE / name).read_text().splitlines(keepends=True)


def writes_in_order() -> list[tuple[str, str]]:
    """Every line of the followed files as (file, line), in the order the run wrote them: rows and sandbox events by
    their times; a batch (logged at global_step s) before the row that ends step s + 1, as TRL makes it in that step."""
    rows, batches = _lines(ROWS_FILE), _lines(BATCHES_FILE)
    timed = [(json.loads(line).get("_timestamp", json.loads(line).get("run_end")), ROWS_FILE, line) for line in rows]
    timed += [(json.loads(line)["t"], SANDBOXES, line) for line in _lines(SANDBOXES)]
    out: list[tuple[str, str]] = [(BATCHES_FILE, batches[0])]  # the header, written before training
    pending = [json.loads(line) for line in batches[1:]]
    for _, name, line in sorted(timed, key=lambda item: item[0]):
        step = json.loads(line).get("train/global_step") if name == ROWS_FILE else None
        while pending and step is not None and pending[0]["global_step"] < step:
            out.append((BATCHES_FILE, json.dumps(pending.pop(0)) + "\n"))
        out.append((name, line))
    return out


def _append(path: Path, text: str) -> None:
    with path.open("a") as fh:
        fh.write(text)


def _post_hoc() -> dict[str, float]:
    metrics = compute_metrics(get_adapter("trl").parse(FIXTURE), warmup_steps=1)
    return {name: metrics[metric].value for name, metric in SAME.items()}


def test_a_run_read_in_pieces_reaches_the_figures_of_its_parse(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    for name in (ROWS_FILE, BATCHES_FILE, SANDBOXES):
        (run / name).write_text("")
    figures = LiveFigures(warmup_steps=1)
    reader = live_reader("trl", run, figures)
    rng = random.Random(7)
    writes = writes_in_order()
    seen, read, i = [], 0, 0
    while i < len(writes):
        chunk = writes[i : i + rng.randint(1, 9)]
        i += len(chunk)
        for name, line in chunk[:-1]:
            _append(run / name, line)
        name, line = chunk[-1]
        cut = rng.randrange(len(line))
        _append(run / name, line[:cut])  # a line still being written: it waits for its newline
        read += reader.update(now=float(i))
        seen.append(len(figures.step_numbers))
        assert not figures.ended
        _append(run / name, line[cut:])
    read += reader.update(now=float(i + 1))
    reader.close()
    assert figures.ended and reader.warnings == [] and reader.resets == 0
    assert read == len(writes)  # every line once
    assert figures.step_numbers == list(range(1, STEPS + 1))
    assert len(set(seen)) > 3  # the steps came over several updates, not at the end
    live = figures.figures()["run"]
    assert {name: live[name] for name in SAME} == pytest.approx(_post_hoc(), rel=1e-9)
    # by hand: two slices per batch, so steps 2..6 train slices 1, 0, 1, 0, 1 of their batch, 8 samples each
    assert live["staleness_mean"] == pytest.approx(3 / 5) and live["staleness_max"] == 1.0
    assert live["trainer_throughput_sps"] == pytest.approx(8 / live["step_time_mean_s"])


def test_the_whole_run_in_one_update_gives_the_same_figures() -> None:
    figures = LiveFigures(warmup_steps=1)
    reader = live_reader("trl", FIXTURE, figures)
    lines = sum(len(_lines(name)) for name in (ROWS_FILE, BATCHES_FILE, SANDBOXES))
    assert reader.update(now=0.0) == lines
    assert reader.update(now=1.0) == 0
    reader.close()
    assert figures.ended and figures.step_numbers == list(range(1, STEPS + 1))
    assert figures.total_steps == STEPS and figures.concurrency == 16  # 8 samples per step x 2 steps per generation
    live = figures.figures()["run"]
    assert {name: live[name] for name in SAME} == pytest.approx(_post_hoc(), rel=1e-9)


def test_trl_is_watchable_and_an_adapter_without_a_reader_is_refused_naming_both() -> None:
    check_watchable("trl", "spec.toml")
    refusal = r"spec\.toml: benchbed watch follows areal, .*ref, .*trl, verl runs live; the sim adapter's"
    with pytest.raises(Exception, match=refusal):
        check_watchable("sim", "spec.toml")


def test_a_run_without_the_rows_file_ends_when_trl_logs_its_summary_with_a_warning(tmp_path: Path) -> None:
    run = shutil.copytree(FIXTURE.parent / "grpo-spg2-sandbox", tmp_path / "run")  # rendered before the rows file
    state = json.loads((run / "trainer_state.json").read_text())
    summary = state["log_history"].pop()
    assert "train_runtime" in summary
    (run / "trainer_state.json").write_text(json.dumps(state))
    figures = LiveFigures(warmup_steps=1)
    reader = live_reader("trl", run, figures)
    reader.update(now=0.0)
    assert not figures.ended and reader.warnings == []  # still training, as far as the files say
    state["log_history"].append(summary)
    (run / "trainer_state.json").write_text(json.dumps(state))
    reader.update(now=1.0)
    reader.close()
    assert figures.ended and figures.step_numbers == []
    assert reader.warnings == [f"{run}: no {ROWS_FILE} (written by the scripts benchbed renders): no live steps; the "
                               "figures are the finished run's"]  # fmt: skip


def test_asynchronous_grpo_steps_are_its_perf_figures_as_parse_sums_them(tmp_path: Path) -> None:
    """TRL's AsyncGRPOTrainer logs per-step `perf/*` and `batch/*` figures (key names imitated from TRL 1.16.0's
    trl/experimental/async_grpo/async_grpo_trainer.py, as in test_trl_parts.py; a real run needs a GPU and vLLM);
    the Trainer's W&B callback sends each as `train/<key>`, the row the rendered script writes."""
    log = [{"step": 1, "perf/fwd_bwd_s": 0.5, "perf/rollout_wait_s": 2.0, "batch/samples_per_step": 8.0},
           *({"step": k, "perf/step_s": 1.0 + k / 10, "perf/fwd_bwd_s": 0.5, "perf/optimizer_s": 0.1,
              "perf/rollout_wait_s": 0.1 * k, "perf/weight_sync_s": 0.1, "batch/samples_per_step": 8.0,
              "sample/staleness_mean": 1.0} for k in (2, 3, 4)),
           {"train_runtime": 4.0, "step": 4}]  # fmt: skip
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": log, "global_step": 4, "max_steps": 4}))
    (tmp_path / "training_args.json").write_text(json.dumps({"num_generations": 4, "per_device_train_batch_size": 8}))
    (tmp_path / "benchbed-plan.json").write_text(json.dumps({"schema_version": 1, "adapter": "trl", "mode": "async",
                                                             "argv": ["python", "trl_grpo.py"]}))  # fmt: skip
    rows = [{"_timestamp": 100.0 + e["step"], **{f"train/{k}": v for k, v in e.items() if k != "step"},
             "train/global_step": e["step"]} for e in log[:-1]]  # fmt: skip
    (tmp_path / ROWS_FILE).write_text("".join(json.dumps(r) + "\n" for r in [*rows, {"run_end": 105.0}]))
    figures = LiveFigures(warmup_steps=1)
    reader = live_reader("trl", tmp_path, figures)
    reader.update(now=0.0)
    reader.close()
    assert figures.ended and figures.step_numbers == [2, 3, 4]  # step 1 has no perf/step_s: no time
    live = figures.figures()["run"]
    assert live["trainer_idle_ratio"] == pytest.approx((0.2 + 0.3 + 0.4) / (1.2 + 1.3 + 1.4))  # steps 2-4, by hand
    assert live["trainer_throughput_sps"] == pytest.approx(24 / (1.2 + 1.3 + 1.4))
    metrics = compute_metrics(get_adapter("trl").parse(tmp_path), warmup_steps=1)
    assert live["trainer_idle_ratio"] == pytest.approx(metrics["trainer_idle_ratio"].value, rel=1e-12)
    assert live["trainer_throughput_sps"] == pytest.approx(metrics["trainer_throughput_sps"].value, rel=1e-12)


def test_lines_that_are_not_what_the_script_writes_are_warnings_and_the_rest_is_read(tmp_path: Path) -> None:
    run = shutil.copytree(FIXTURE, tmp_path / "run")
    rows = _lines(ROWS_FILE)
    (run / ROWS_FILE).write_text("".join([rows[0], "{not json\n", '{"train/loss": 1.0}\n', *rows[1:]]))
    figures = LiveFigures(warmup_steps=1)
    reader = live_reader("trl", run, figures)
    reader.update(now=0.0)
    reader.close()
    assert figures.ended and figures.step_numbers == list(range(1, STEPS + 1))
    assert reader.warnings == [
        f"{ROWS_FILE}: a line that is not JSON (the final parse names it)",
        f"{ROWS_FILE}: a line without what the script writes there (KeyError: '_timestamp')",
    ]
