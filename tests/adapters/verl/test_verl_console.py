"""Console-log and JSONL reading: Ray prefixes, ANSI, numpy reprs, tqdm fragments, cut lines."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from benchbed.adapters.verl.records import (
    clean_console_line,
    config_from_lines,
    console_value,
    parse_step_line,
    read_console,
    read_jsonl,
)

from benchbed.errors import NotThisFrameworkError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "verl"


def fixture_dir(name: str) -> Path:
    return FIXTURES / f"verl-0.9.1-{name}"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0.25", 0.25),
        ("np.float64(1.5)", 1.5),
        ("np.float32(123.4)", 123.4),
        ("np.int64(7)", 7.0),
        ("tensor(3.)", 3.0),
        ("1e-06", 1e-6),
        ("True", 1.0),
        ("nan", None),
        ("'text'", None),
        ("np.float64(2.5", 2.5),  # cut before the closing parenthesis
    ],
)
def test_console_value(text: str, value: float | None) -> None:
    got = console_value(text)
    if value is None and text == "nan":
        assert got != got  # NaN stays NaN: float('nan')
    else:
        assert got == value


def test_ray_prefix_ansi_and_dedup_suffix_are_removed() -> None:
    raw = (
        "\x1b[36m(FullyAsyncTrainer pid=4242, ip=10.0.0.3)\x1b[0m step:3 - a:1"
        " \x1b[32m [repeated 2x across cluster]\x1b[0m"
    )
    line, actor = clean_console_line(raw)
    assert actor == "FullyAsyncTrainer"
    assert line == "step:3 - a:1"


def test_step_line_with_tqdm_fragment_and_cut_pair(tmp_path: Path) -> None:
    log = tmp_path / "console.log"
    log.write_text(
        "Training Progress:  17%|#         | 1/6 [00:02<00:13]\x1b[36m(TaskRunner pid=1)\x1b[0m "
        "step:1 - timing_s/gen:np.float64(1.5) - timing_s/step:2.0\rTraining Progress:  33%|##\n"
        "\x1b[36m(TaskRunner pid=1)\x1b[0m step:2 - timing_s/gen:1.0 - timing_s/step:3.0 - critic/sc"
    )
    reading = read_console(log)
    assert [(r.step, r.data) for r in reading.records] == [
        (1, {"timing_s/gen": 1.5, "timing_s/step": 2.0}),
        (2, {"timing_s/gen": 1.0, "timing_s/step": 3.0}),
    ]
    assert reading.truncated
    assert any("cut off" in w and ":2:" in w for w in reading.warnings)
    assert any("1 key:value pair" in w for w in reading.warnings)


def test_parse_step_line_keeps_negative_values() -> None:
    data, bad = parse_step_line("actor/pg_loss:-0.0299 - actor/lr:1e-06 - response/aborted_ratio:0.0")
    assert data == {"actor/pg_loss": -0.0299, "actor/lr": 1e-06, "response/aborted_ratio": 0.0}
    assert bad == 0


def test_jsonl_cut_last_line_is_dropped_with_warning() -> None:
    path = fixture_dir("v1_sync-crashed") / "metrics.jsonl"
    reading = read_jsonl(path)
    assert [r.step for r in reading.records] == [1, 2, 3]
    assert reading.truncated
    assert any(":4: skipped truncated last line" in w and "cut off" in w for w in reading.warnings)


def test_printed_config_is_read_from_a_real_console() -> None:
    reading = read_console(fixture_dir("v1_sync") / "console.log")
    assert reading.config is not None
    assert reading.config["trainer"]["v1"]["trainer_mode"] == "sync"
    assert reading.config["data"]["train_batch_size"] == 4
    assert reading.actors == {"TaskRunnerV1"}


def test_the_config_ends_where_its_braces_close(tmp_path: Path) -> None:
    """verl 0.9.1's V1 task runner prints more lines between its config and the file logger's first line (as in
    benchbed's real CPU runs); a value pprint put on a line of its own, and braces inside strings, are read too."""
    lines = [
        "{'actor_rollout_ref': {'actor': {'fsdp_config': ",
        "{'_target_': 'verl.workers.config.FSDPEngineConfig', 'dtype': 'bf{16'},",
        "                                 'ppo_mini_batch_size': 2}},",
        " 'data': {'train_batch_size': 16, 'prompt_key': 'x)]'},",
        " 'trainer': {'use_v1': True, 'v1': {'trainer_mode': 'sync'}}}",
        "Using dataset class: RLHFDataset",
        "dataset len: 6",
        "LLMServerManager: ['192.0.2.2:39597']",
        "Creating file logger at /tmp/run/metrics.jsonl",
    ]
    warnings: list[str] = []
    cfg = config_from_lines(lines, 0, tmp_path / "c.log", warnings)
    assert warnings == []
    assert cfg == {
        "actor_rollout_ref": {"actor": {"fsdp_config": {"_target_": "verl.workers.config.FSDPEngineConfig",
                                                        "dtype": "bf{16"}, "ppo_mini_batch_size": 2}},
        "data": {"train_batch_size": 16, "prompt_key": "x)]"},
        "trainer": {"use_v1": True, "v1": {"trainer_mode": "sync"}},
    }  # fmt: skip


def test_a_config_printing_inf_or_nan_is_read_whole(tmp_path: Path) -> None:
    """pprint writes a float set to infinity or NaN as a bare `inf`/`nan`, which no Python literal spells: the kit's
    repr reader takes them, so the whole config is read instead of the fields benchbed needs."""
    lines = ["{'data': {'train_batch_size': 16}, 'trainer': {'grad_clip': inf, 'target': nan}}", "dataset len: 6"]
    warnings: list[str] = []
    cfg = config_from_lines(lines, 0, tmp_path / "c.log", warnings)
    assert warnings == []
    assert cfg is not None and "_partial" not in cfg
    assert cfg["data"] == {"train_batch_size": 16} and cfg["trainer"]["grad_clip"] == math.inf
    assert math.isnan(cfg["trainer"]["target"])


def test_deduplicated_config_falls_back_to_the_needed_fields(tmp_path: Path) -> None:
    lines = [
        "{'actor_rollout_ref': {'actor': {'ppo_mini_batch_size': 2,",
        "                                 'x': 1},",
        "                       'rollout': {'n': 4,",
        "                                   'n_gpus_per_node': 8,",
        "                                   'val_kwargs': {'n': 1,",
        # Ray dropped the closing lines of these dicts as repeats
        " 'data': {'train_batch_size': 16},",
        " 'trainer': {'use_v1': True, 'v1': {'trainer_mode': 'colocate_async'}}}",
    ]
    warnings: list[str] = []
    cfg = config_from_lines(lines, 0, tmp_path / "c.log", warnings)
    assert cfg == {
        "actor_rollout_ref": {"actor": {"ppo_mini_batch_size": 2}, "rollout": {"n": 4}},
        "data": {"train_batch_size": 16},
        "trainer": {"use_v1": True, "v1": {"trainer_mode": "colocate_async"}},
        "_partial": True,
    }
    assert "RAY_DEDUP_LOGS=0" in warnings[0]
    assert config_from_lines(["no config printed here"], None, tmp_path / "c.log", warnings) is None


def test_json_lines_of_another_shape_are_not_verl(tmp_path: Path) -> None:
    from benchbed.adapters.verl.records import is_file_logger_jsonl

    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1, "time/step": 2.0, "loss": 0.1}\n')
    with pytest.raises(NotThisFrameworkError, match="not a verl log: .*file-logger shape"):
        is_file_logger_jsonl(path)


@pytest.mark.parametrize(
    "second",
    [
        # the break fell on a separator, inside a number, or inside a key
        ("timing_s/gen:30.5 -", " timing_s/step:58.0 - actor/pg_loss:-0.25"),
        ("timing_s/gen:30.", "5 - timing_s/step:58.0 - actor/pg_loss:-0.25"),
        ("timing_s/gen:30.5 - timing_s/st", "ep:58.0 - actor/pg_loss:-0.25"),
        ("timing_s/gen:30.5 -", "timing_s/step:58.0 - actor/pg_loss:-0.25"),  # the paste stripped the space
    ],
)
def test_a_wrapped_step_line_is_put_back_together(tmp_path: Path, second: tuple[str, str]) -> None:
    log = tmp_path / "pasted.txt"
    log.write_text(f"step:3 - {second[0]}\n{second[1]}\nsome other output: 1\nstep:4 - timing_s/gen:1.0\n")
    reading = read_console(log)
    assert [(r.step, r.data) for r in reading.records] == [
        (3, {"timing_s/gen": 30.5, "timing_s/step": 58.0, "actor/pg_loss": -0.25}),
        (4, {"timing_s/gen": 1.0}),
    ]
