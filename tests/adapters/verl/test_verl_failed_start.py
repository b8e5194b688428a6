"""A verl log that ends in a traceback before its first step is a failed run, not "not a verl log": ingest keeps a
`failed` record with the error (the traceback's last line), and a launch that dies that way says what it died on.

The fixture (tests/fixtures/verl/failed-start/, see its README) is a real verl 0.9.1 start-up refused by verl's
own `validate_config`; the launch test runs that start-up again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from benchbed.adapters.verl import VerlAdapter

from benchbed.adapterkit.failure import last_error
from benchbed.errors import NotThisFrameworkError, RunFailedError
from benchbed.pipeline import execute, ingest
from benchbed.spec import build_spec
from benchbed.store import Store

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "verl" / "failed-start" / "validate-config"
DIED_ON = "AssertionError: real_train_batch_size (4) must be divisible by minimal possible batch size (3)"


def test_ingest_keeps_a_failed_record_with_the_error(tmp_path: Path) -> None:
    outcome = ingest(FIXTURE, "verl", Store(tmp_path / "results"))
    record = json.loads((outcome.run_dir / "record.json").read_text())
    assert record["status"] == "failed" and record["metrics"] == {}
    assert record["adapter"]["framework"] == "verl"
    assert record["error"]["message"] == (
        f"{FIXTURE / 'logs' / 'stderr.log'}:12: the verl run failed before its first step: {DIED_ON}"
    )
    assert record["error"]["log_tail"].startswith("Traceback (most recent call last):")
    assert record["error"]["log_tail"].endswith(DIED_ON)
    assert not (outcome.run_dir / "trace.parquet").exists()
    assert (outcome.run_dir / "native" / "logs" / "stderr.log").read_bytes() == (
        FIXTURE / "logs" / "stderr.log"
    ).read_bytes()


def test_the_log_file_alone_is_a_failed_run_and_the_cli_exits_1(tmp_path: Path) -> None:
    store = tmp_path / "results"
    done = subprocess.run(
        [sys.executable, "-m", "benchbed", "ingest", str(FIXTURE / "logs" / "stderr.log"), "--adapter", "verl",
         "--store", str(store), "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    record = json.loads(done.stdout)
    assert record["status"] == "failed"
    assert record["error"]["message"].endswith(f"stderr.log:12: the verl run failed before its first step: {DIED_ON}")
    assert [p.name for p in store.rglob("record.json")] == ["record.json"]


def test_a_traceback_that_verl_did_not_write_is_still_refused(tmp_path: Path) -> None:
    log = tmp_path / "other.log"
    log.write_text(
        'Traceback (most recent call last):\n  File "/srv/app/train.py", line 3, in <module>\n    main()\n'
        "ValueError: bad learning rate\n"
    )
    with pytest.raises(NotThisFrameworkError, match=r"^not a verl log: "):
        ingest(log, "verl", Store(tmp_path / "results"))
    assert not (tmp_path / "results").exists()


def test_a_ray_task_error_names_the_task_s_own_exception(tmp_path: Path) -> None:
    """The driver's traceback ends in Ray's wrapper, then the task's traceback and its exception (Ray prefixes and
    colours removed); the last exception line is what the run died on."""
    log = tmp_path / "console.log"
    log.write_text(
        "\x1b[36m(TaskRunnerV1 pid=15208)\x1b[0m {'actor_rollout_ref': {'actor': {'clip_ratio': 0.2,\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/verl/verl/trainer/main_ppo.py", line 42, in main\n'
        "    run_ppo(config)\n"
        "ray.exceptions.RayTaskError(OSError): \x1b[36mray::TaskRunnerV1.run()\x1b[39m (pid=15208, ip=192.0.2.2)\n"
        '  File "/opt/verl/verl/utils/fs.py", line 80, in copy_to_local\n'
        "    raise OSError(path)\n"
        "OSError: Incorrect path_or_model_id: '/models/missing'\n"
        "\n"
    )
    error = last_error(log)
    assert error is not None
    assert (error.message, error.line) == ("OSError: Incorrect path_or_model_id: '/models/missing'", 8)
    with pytest.raises(RunFailedError) as caught:
        VerlAdapter().parse(log)
    assert caught.value.error == error.message


@pytest.mark.slow
def test_a_launch_that_dies_at_start_up_records_what_it_died_on(tmp_path: Path) -> None:
    pytest.importorskip("verl", reason="the `verl` extra is not installed: pip install torch==2.13.0 'benchbed[verl]'")
    spec = build_spec(
        {
            "name": "verl-bad-config",
            "adapter": "verl",
            "workload": {
                "model": "/nonexistent/model",
                "prompts_per_step": 2,
                "group_size": 2,
                "steps": 2,
                "max_response_tokens": 16,
            },
            "resources": {"trainer_gpus": 3, "generator_gpus": 3, "colocated": True},
            "verl": {
                "python": sys.executable,
                "engine": "fsdp",
                "overrides": {"actor_rollout_ref.actor.use_dynamic_bsz": False},
            },
        }  # fmt: skip
    )
    outcome = execute(spec, Store(tmp_path / "results"), timeout_s=280)
    record = outcome.record
    assert record.status == "failed" and record.error is not None and record.error.exit_code == 1
    assert record.error.message.startswith("launch exited (exit code 1) after ")
    assert record.error.message.endswith(f"s: {DIED_ON}")
    assert record.adapter.framework == "verl"
    assert not any("no trace recovered" in w for w in record.warnings)
