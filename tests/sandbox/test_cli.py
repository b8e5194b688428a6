"""`benchbed sandbox run|doctor` and `sandbox-bench` through click, including bad input."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from benchbed.cli.sandbox import sandbox, sandbox_bench
from benchbed.metrics.series import sandbox_levels
from benchbed.sandbox import registry
from benchbed.spec import load_spec
from benchbed.store import read_record
from benchbed.trace import read_trace

pytestmark = pytest.mark.usefixtures("no_leaks")


def invoke(cmd, args):
    return CliRunner().invoke(cmd, args, catch_exceptions=False)


def test_run_prints_one_json_result():
    res = invoke(sandbox, ["run", "--timeout", "10", "--", "/bin/sh", "-c", "echo hello; echo oops >&2; exit 3"])
    doc = json.loads(res.stdout)
    assert res.exit_code == 1
    assert doc["status"] == "ok" and doc["exit_code"] == 3 and doc["reason"] is None
    assert doc["stdout_tail"] == "hello\n" and doc["stderr_tail"] == "oops\n"
    assert set(doc["durations"]) == {"queue_s", "start_s", "exec_s", "stop_s"}


def test_run_reports_limits():
    res = invoke(sandbox, ["run", "--timeout", "1", "--memory-mb", "64", "--max-files", "100", "--", "sleep", "9"])
    doc = json.loads(res.stdout)
    assert doc["status"] == "failed" and doc["reason"] == "exec_timeout" and doc["limit"] == "wall"


@pytest.mark.parametrize(
    ("args", "message"),
    [(["run", "--", "no-such-program-xyz"], "not found in the sandbox"),
     (["run"], "empty command"),
     (["run", "--", ""], "empty command"),
     (["run", "--memory-mb", "-5", "--", "true"], "--memory-mb"),
     (["run", "--max-files", "0", "--", "true"], "--max-files"),
     (["run", "--timeout", "-1", "--", "true"], "--timeout"),
     (["run", "--", "/etc/shadow"], "not found in the sandbox")],
)  # fmt: skip
def test_bad_input_is_a_clear_error(args, message):
    res = CliRunner().invoke(sandbox, args)
    assert res.exit_code == 2
    assert message in res.stderr
    assert res.stdout == ""


def test_missing_sdk_names_the_extra(monkeypatch):
    monkeypatch.setattr(registry.importlib.util, "find_spec", lambda name: None)
    res = CliRunner().invoke(sandbox, ["run", "--backend", "modal", "--", "true"])
    assert res.exit_code == 2 and "pip install 'benchbed[modal]'" in res.stderr


def test_missing_credentials_name_the_variables(monkeypatch, tmp_path):
    for var in ("MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET", "PRIME_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MODAL_CONFIG_PATH", str(tmp_path / "none.toml"))
    monkeypatch.setattr(registry.importlib.util, "find_spec", lambda name: object())
    res = CliRunner().invoke(sandbox, ["run", "--backend", "prime", "--", "true"])
    assert res.exit_code == 2 and "set PRIME_API_KEY" in res.stderr
    res = CliRunner().invoke(sandbox, ["run", "--backend", "modal", "--", "true"])
    assert res.exit_code == 2 and "MODAL_TOKEN_ID and MODAL_TOKEN_SECRET" in res.stderr


def test_bubblewrap_missing_names_the_package(monkeypatch):
    from benchbed.sandbox import capabilities

    monkeypatch.setattr(capabilities, "_cache", None)
    monkeypatch.setattr(capabilities.shutil, "which", lambda name: None)
    monkeypatch.delenv("BENCHBED_BWRAP", raising=False)
    res = CliRunner().invoke(sandbox, ["run", "--", "true"])
    assert res.exit_code == 2 and "apt-get install bubblewrap" in res.stderr
    res = CliRunner().invoke(sandbox, ["doctor"])
    assert res.exit_code == 2 and "bubblewrap" in res.stderr
    monkeypatch.setattr(capabilities, "_cache", None)


def test_doctor_json_lists_capabilities():
    res = invoke(sandbox, ["doctor", "--json"])
    doc = json.loads(res.stdout)
    names = [c["name"] for c in doc["capabilities"]]
    assert names[:3] == ["bubblewrap", "namespaces", "network"]
    assert {"cgroup memory", "cgroup pids", "whole-tree kill", "workdir caps"} <= set(names)
    for cap in doc["capabilities"]:
        assert cap["state"] in ("ok", "degraded")
        if cap["state"] == "degraded":
            assert doc["warnings"], "a degraded capability always comes with a warning"


def test_bench_stores_a_run(tmp_path):
    res = invoke(sandbox_bench, ["--concurrency", "1,4", "--per-level", "4", "--store", str(tmp_path), "--json",
                                 "--program", "/bin/echo hi"])  # fmt: skip
    record = json.loads(res.stdout)
    assert record["status"] == "succeeded" and record["adapter"]["name"] == "sandbox"
    run_dir = next(tmp_path.glob("*/sandbox/*/*"))
    assert read_record(run_dir).run_id == record["run_id"]
    trace = read_trace(run_dir)
    starts = trace.of("sandbox.start")
    assert len(starts) == 8 and (starts["status"].astype(str) == "ok").all()
    levels = sorted({json.loads(a)["level"] for a in starts["attrs"]})
    assert levels == [1, 4]
    assert record["metrics"]["sandbox_init_failure_rate"]["value"] == 0.0
    levels = sandbox_levels(trace)
    assert levels["level"].tolist() == [1, 4] and (levels["bare_completions_per_s"] > 0).all()
    assert levels["attempts"].tolist() == [4, 4] and levels["exec_failures"].tolist() == [0, 0]
    # the same sweep written as a spec file is the same spec, so `benchbed run` stores it in the same series
    spec = tmp_path / "sweep.toml"
    spec.write_text('name = "sandbox-bench"\nadapter = "sandbox"\nwarmup_steps = 0\n'
                    '[sandbox]\nbackend = "local"\nstart_timeout_s = 120.0\n'
                    '[sandbox_bench]\nlevels = [1, 4]\nbaseline = true\nper_level = 4\n'
                    'program = ["/bin/echo", "hi"]\n')  # fmt: skip
    assert load_spec(spec).spec_id == record["spec_id"] == run_dir.parent.name


def test_bench_rejects_bad_levels(tmp_path):
    res = CliRunner().invoke(sandbox_bench, ["--concurrency", "1,-3", "--store", str(tmp_path)])
    assert res.exit_code == 2 and "--concurrency" in res.stderr
    assert not any(tmp_path.iterdir())
