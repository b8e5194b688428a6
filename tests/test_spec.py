"""Specs: TOML loading, dotted-path errors, --set overrides, matrix expansion, spec_id."""

from __future__ import annotations

import pytest

from benchbed.errors import SpecError
from benchbed.spec import expand, load_spec, parse_override

SPEC = """
name = "t"
adapter = "sim"
[workload]
prompts_per_step = 2
group_size = 4
steps = 10
[sim]
concurrency = 8
"""


@pytest.fixture
def spec_file(tmp_path):
    path = tmp_path / "spec.toml"
    path.write_text(SPEC)
    return path


def test_load_fills_defaults(spec_file):
    spec = load_spec(spec_file)
    assert spec.workload.samples_per_step == 8
    assert spec.warmup_steps == 1 and spec.resources.trainer_gpus == 8
    assert spec.adapter_table() == {"concurrency": 8}
    assert spec.source == str(spec_file)


def test_misspelt_field_names_its_dotted_path(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(SPEC.replace("group_size", "group_sise"))
    with pytest.raises(SpecError, match=r"bad.toml: unknown field 'workload.group_sise'"):
        load_spec(path)


def test_invalid_value_names_field_and_value(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(SPEC.replace("steps = 10", "steps = -1"))
    with pytest.raises(SpecError, match=r"field 'workload.steps': Input should be greater than 0 \(got -1\)"):
        load_spec(path)


def test_missing_file_says_what_to_pass(tmp_path):
    with pytest.raises(SpecError, match=r"nope.toml: spec file not found"):
        load_spec(tmp_path / "nope.toml")


def test_invalid_toml(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("name = ")
    with pytest.raises(SpecError, match="not valid TOML"):
        load_spec(path)


def test_overrides_parse_toml_literals_and_create_tables(spec_file):
    spec = load_spec(spec_file, ["workload.group_size=8", "sim.mode=sync", "sim.latency={ mean = 5.0 }", "name=x y"])
    assert spec.workload.group_size == 8
    assert spec.adapter_table("sim")["mode"] == "sync" and spec.adapter_table("sim")["latency"] == {"mean": 5.0}
    assert spec.name == "x y"


def test_override_syntax_errors():
    with pytest.raises(SpecError, match="expected KEY=VALUE"):
        parse_override("workload.group_size")
    with pytest.raises(SpecError, match="empty key"):
        parse_override("workload..x=1")


def test_override_into_a_value_is_an_error(spec_file):
    with pytest.raises(SpecError, match="'name' is a value, not a table"):
        load_spec(spec_file, ["name.x=1"])


def test_spec_id_is_stable_and_changes_with_content(spec_file):
    a, b = load_spec(spec_file), load_spec(spec_file)
    assert a.spec_id == b.spec_id and a.spec_id.startswith("t-") and len(a.spec_id) == 10
    assert load_spec(spec_file, ["sim.concurrency=16"]).spec_id != a.spec_id
    assert load_spec(spec_file, ['description="words only"']).spec_id == a.spec_id


def test_matrix_expands_cartesian_product(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(SPEC + '\n[matrix]\n"sim.concurrency" = [8, 16, 32]\n"workload.max_staleness" = [0, 2]\n')
    specs = expand(load_spec(path), str(path))
    assert len(specs) == 6
    assert [s.sim["concurrency"] for s in specs] == [8, 8, 16, 16, 32, 32]
    assert specs[1].variant == {"sim.concurrency": 8, "workload.max_staleness": 2}
    assert len({s.spec_id for s in specs}) == 6
    assert all(not s.matrix for s in specs)


def test_matrix_point_that_is_invalid_names_the_point(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(SPEC + '\n[matrix]\n"workload.steps" = [5, -5]\n')
    with pytest.raises(SpecError, match=r"matrix point \{'workload.steps': -5\}"):
        expand(load_spec(path), str(path))


def test_spec_id_of_a_spec_written_before_adapter_tables_is_unchanged(spec_file):
    assert load_spec(spec_file).spec_id == "t-20149348"  # computed by benchbed before tables were opened


def test_adapter_tables_are_validated_by_their_adapter_with_dotted_paths(spec_file):
    with pytest.raises(SpecError, match=r"spec.toml: unknown field 'sim.concurency'"):
        load_spec(spec_file, ["sim.concurency=8"])
    with pytest.raises(SpecError, match=r"field 'verl.ppo_mini_batch_size': Input should be greater than 0 \(got 0\)"):
        load_spec(spec_file, ["verl.ppo_mini_batch_size=0"])
    with pytest.raises(SpecError, match=r"field 'sandbox_bench.levels.1': Input should be a valid integer"):
        load_spec(spec_file, ['sandbox_bench.levels=[1, "many"]'])
    spec = load_spec(spec_file, ["prime_rl.harness=bash"])  # any registered adapter's table, whatever the adapter
    assert spec.adapter_table("prime_rl") == {"harness": "bash"} and spec.adapter_options("prime_rl").harness == "bash"


def test_unknown_table_suggests_a_registered_adapter(spec_file):
    with pytest.raises(SpecError, match=r"unknown field 'vrel' .*; did you mean 'verl'\?"):
        load_spec(spec_file, ["vrel.mode=v0"])
    with pytest.raises(SpecError, match=r"field 'slime': expected a table"):
        load_spec(spec_file, ["slime=3"])


def test_matrix_over_an_adapter_table_validates_each_point(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(SPEC + '\n[matrix]\n"sim.mode" = ["sync", "sometimes"]\n')
    with pytest.raises(SpecError, match=r"matrix point \{'sim.mode': 'sometimes'\}.*field 'sim.mode'"):
        expand(load_spec(path), str(path))
