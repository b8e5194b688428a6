"""A fourth framework needs one package and one entry point: an adapter installed from outside the tree gets its
spec table, --set overrides, dotted-path errors, spec_id hashing and `benchbed run`, with no edit to benchbed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from benchbed.adapter import available_adapters
from benchbed.errors import SpecError
from benchbed.spec import load_spec

from . import outside

SPEC = """
name = "outside-run"
adapter = "outsider"
warmup_steps = 0
[workload]
steps = 4
[outsider]
step_s = 1.5
"""


def test_outside_adapter_owns_its_table(outsider_site, tmp_path):
    assert outside.NAME in available_adapters()
    path = tmp_path / "spec.toml"
    path.write_text(SPEC)
    spec = load_spec(path)
    assert spec.adapter_table() == {"step_s": 1.5} and spec.adapter_options().label == "outside"
    assert load_spec(path, ["outsider.label=x"]).spec_id != spec.spec_id  # the table is part of the spec id
    with pytest.raises(SpecError, match=r"spec.toml: unknown field 'outsider.stepz'"):
        load_spec(path, ["outsider.stepz=2"])
    with pytest.raises(SpecError, match=r"field 'outsider.step_s': Input should be greater than 0 \(got -1\)"):
        load_spec(path, ["outsider.step_s=-1"])
    with pytest.raises(SpecError, match=r"unknown field 'outsidr'.*did you mean 'outsider'\?"):
        load_spec(path, ["outsidr.step_s=2"])


def test_benchbed_run_launches_an_outside_adapter(tmp_path):
    site = outside.build(tmp_path / "site")
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    store = tmp_path / "results"
    argv = [sys.executable, "-m", "benchbed", "run", str(spec), "--set", "outsider.step_s=2.5", "--store", str(store),
            "--json"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["status"] == "succeeded" and record["adapter"]["name"] == "outsider"
    assert record["spec"]["outsider"] == {"step_s": 2.5}
    assert record["metrics"]["step_time_mean_s"]["value"] == pytest.approx(2.5)
    assert record["metrics"]["trainer_compute_ratio"]["value"] == pytest.approx(1.0)
    bad = subprocess.run([*argv[:5], "--set", "outsider.step_s=0", "--store", str(store)], capture_output=True,
                         text=True, env=env, timeout=60)  # fmt: skip
    assert bad.returncode == 2 and "field 'outsider.step_s'" in bad.stderr
