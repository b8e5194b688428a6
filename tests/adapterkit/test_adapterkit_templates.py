"""The kit's launch templates (benchbed/adapterkit/templates.py): placeholders filled with their values' types, text
formatted once, sections chosen by condition, flag tables as argv; and the kit's TensorBoard-folder run marker."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from benchbed.adapterkit.templates import argv, fill, render_template, sections, spec_values
from benchbed.runs import by_folder
from benchbed.spec import build_spec


class _Options(BaseModel):
    lr: float = 1e-6
    tags: list[str] = ["a", "b"]
    domain: str = "math"
    path: str | None = None


VALUES = {"options": _Options(), "run_dir": "/runs/r {x}", "n": 0, "table": {"k": 7}}


def test_a_whole_placeholder_keeps_its_values_type_and_inline_ones_are_text() -> None:
    template = {
        "lr": "{options.lr}",
        "tags": "{options.tags}",
        "none": "{options.path}",
        "zero": "{n}",
        "from_mapping": "{table.k}",
        "out": "{run_dir}/output",
        "range": "list(range({n},{table.k}))",
        "{options.domain}": {"plain": 1.5, "list": ["{n}", "x{n}"], "flag": True},
    }
    assert fill(template, VALUES) == {
        "lr": 1e-6,
        "tags": ["a", "b"],
        "none": None,
        "zero": 0,
        "from_mapping": 7,
        "out": "/runs/r {x}/output",  # a brace in a value is not read again
        "range": "list(range(0,7))",
        "math": {"plain": 1.5, "list": [0, "x0"], "flag": True},
    }


def test_fill_leaves_the_template_as_it_was() -> None:
    template = {"a": ["{n}", {"b": "{table.k}"}]}
    before = copy.deepcopy(template)
    filled = fill(template, VALUES)
    filled["a"][1]["b"] = 8
    filled["a"].append("c")
    assert template == before and fill(template, VALUES) == {"a": [0, {"b": 7}]}


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("{missing}", "{missing}"),
        ("{options.nope}", "{options.nope}"),
        ("{table.nope}", "{table.nope}"),
        ("x {missing.deeper} y", "{missing.deeper}"),
    ],
)
def test_an_unknown_placeholder_is_named(text: str, name: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"template placeholder {name}: no such value")):
        fill({"key": text}, VALUES)


def test_yaml_and_toml_templates_are_read_by_their_suffix(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text('a:\n  b: "{n}"\n  c: [1, "{run_dir}"]\nd: null\n')
    (tmp_path / "f.toml").write_text('[always]\n"--x" = "{table.k}"\n"--y" = true\n')
    assert render_template(tmp_path / "c.yaml", VALUES) == {"a": {"b": 0, "c": [1, "/runs/r {x}"]}, "d": None}
    assert render_template(tmp_path / "f.toml", VALUES) == {"always": {"--x": 7, "--y": True}}
    (tmp_path / "c.json").write_text("{}")
    with pytest.raises(ValueError, match=r"c\.json: a template is a \.yaml or \.toml file"):
        render_template(tmp_path / "c.json", VALUES)


def test_spec_values_name_the_spec_its_options_and_what_the_renderer_computed() -> None:
    spec = build_spec({"name": "r1", "adapter": "roll", "workload": {"steps": 9}, "roll": {"seed": 3}})
    values = spec_values(spec, Path("/runs/a"), first=16)
    assert sorted(values) == ["first", "name", "options", "resources", "run_dir", "workload"]
    text = "{name} {workload.steps} {options.seed} {resources.trainer_gpus} {run_dir} {first}"
    assert fill(text, values) == f"r1 9 3 {spec.resources.trainer_gpus} /runs/a 16"


def test_sections_keep_always_and_those_whose_condition_holds_in_the_tables_order() -> None:
    table = {"always": {"--a": 1, "--s": True}, "kl": {"--k": 2}, "asynchronous": {"--q": 3, "--e": True}}
    assert sections(table, kl=False, asynchronous=True) == {"--a": 1, "--s": True, "--q": 3, "--e": True}
    assert list(sections(table, kl=True, asynchronous=False)) == ["--a", "--s", "--k"]
    with pytest.raises(ValueError, match="template sections without a condition: asynchronous, kl"):
        sections(table)


def test_argv_gives_valued_flags_then_switches() -> None:
    flags = {"--n": 0, "--lr": 1e-06, "--on": True, "--off": False, "--unset": None, "--name": "a b", "--sw": True}
    assert argv(flags) == ["--n", "0", "--lr", "1e-06", "--name", "a b", "--on", "--sw"]


def test_by_folder_marks_the_folder_above_the_nearest_named_one() -> None:
    marks = by_folder("tensorboard", ".tfevents.")
    assert marks(Path("/r/run1/tensorboard/events.out.tfevents.1.host")) == Path("/r/run1")
    assert marks(Path("/r/run1/tensorboard/sub/events.out.tfevents.1.host")) == Path("/r/run1")
    assert marks(Path("/r/tensorboard/run1/tensorboard/x.tfevents.2")) == Path("/r/tensorboard/run1")
    assert marks(Path("/r/run1/logs/events.out.tfevents.1.host")) is None
    assert marks(Path("/r/run1/tensorboard/notes.txt")) is None
