"""A prime-rl trainer log that ends in a traceback before its first step is a failed run, not "not a prime-rl run":
ingest keeps a `failed` record with the traceback's last line. The log is written with the fixture generator's
loguru line format (generate.py::ansi_line) and the trainer's start-up lines at 559b447."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchbed.adapters.prime_rl.parse import parse_path

from benchbed.errors import NotThisFrameworkError, RunFailedError
from benchbed.pipeline import ingest
from benchbed.store import Store

DIED_ON = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB"
TRACEBACK = (
    'Traceback (most recent call last):\n  File "/workspace/prime-rl/src/prime_rl/trainer/rl/train.py", line 231, '
    f"in train\n    model = setup_model(config.model, parallel_dims)\n{DIED_ON}\n"
)


def trainer_log(gen, path: Path, traceback: str = TRACEBACK) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        gen.ansi_line(gen.T0 + 2, "INFO", "Starting RL trainer in head-559b447")
        + gen.ansi_line(gen.T0 + 9, "INFO", "Initializing model (name='Qwen/Qwen3-30B-A3B-Thinking-2507')")
        + gen.ansi_line(gen.T0 + 41, "ERROR", "Training failed with an exception")
        + traceback
    )
    return path


def test_a_trainer_log_that_died_at_start_up_is_a_failed_run(gen, tmp_path: Path) -> None:
    log = trainer_log(gen, tmp_path / "trainer.log")
    with pytest.raises(RunFailedError) as caught:
        parse_path(log)
    assert str(caught.value) == f"{log}:7: the prime-rl run failed before its first step: {DIED_ON}"
    record = json.loads((ingest(log, "prime_rl", Store(tmp_path / "s")).run_dir / "record.json").read_text())
    assert record["status"] == "failed" and record["adapter"]["framework"] == "prime-rl"
    assert record["error"]["log_tail"].endswith(DIED_ON)


def test_a_run_directory_whose_logs_died_at_start_up_is_a_failed_run(gen, tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "configs").mkdir(parents=True)
    trainer_log(gen, run / "logs" / "attempt_1" / "trainer.log", TRACEBACK.replace("prime_rl", "app"))
    with pytest.raises(RunFailedError, match=r"trainer\.log:7: the prime-rl run failed before its first step: "):
        parse_path(run)


def test_a_traceback_prime_rl_did_not_write_is_still_refused(gen, tmp_path: Path) -> None:
    log = trainer_log(gen, tmp_path / "other.log", TRACEBACK.replace("prime_rl", "app"))
    with pytest.raises(NotThisFrameworkError, match="not a prime-rl run"):
        parse_path(log)
