"""Credentials a tracker's history holds although nobody exported them here (OpenRLHF's `--logger.wandb.key` inside
the W&B config's Namespace repr, a `wandb_api_key` config entry, a key on the command line, an `hf_token` MLflow
param) reach no file of the stored run: masked in text, binary record logs and databases left out with a warning
naming them, the figures unchanged. All values here are fake."""

from __future__ import annotations

import json
import shutil
from argparse import Namespace
from pathlib import Path

import pandas as pd
import pytest
from benchbed.adapters.verl import VerlAdapter

from benchbed.adapterkit.histories import open_history
from benchbed.trace import read_trace

pytest.importorskip("wandb", reason="the `wandb` extra is not installed: pip install 'benchbed[wandb]'")

FIXTURES = Path(__file__).parents[1] / "fixtures" / "histories" / "verl" / "verl-0.9.1-v1_sync"
NAMESPACE_KEY = "fake-wandb-0123456789abcdef0123456789abcdef"  # wandb keys are 40 hex characters
CONFIG_KEY = "fake-api-key-42-not-real"
ARGV_TOKEN = "hf_fakeArgvToken987654"
PARAM_TOKEN = "hf_fakeParamToken123456"
TAG_TOKEN = "hf_fakeTagToken24680135"
TEXT_TOKEN = "hf_fakeTextToken13579246"
HPARAM_TOKEN = "fake-hparam-key-11223344"


def _stored(store: Path) -> tuple[Path, dict]:
    (record_file,) = store.rglob("record.json")
    return record_file.parent, json.loads(record_file.read_text())


def _assert_nowhere(run_dir: Path, *secrets: str) -> None:
    """No file of the whole store (the run's record, trace and native copies, the catalog, anything else) holds any
    secret's bytes."""
    assert len([p for p in run_dir.rglob("*") if p.is_file()]) >= 3  # record.json, trace.parquet, native history
    store = run_dir.parents[3]  # store/machine/adapter/spec/run
    for path in (p for p in store.rglob("*") if p.is_file()):
        data = path.read_bytes()
        for secret in secrets:
            assert secret.encode() not in data, f"{secret} in {path}"


def _same_figures(run_dir: Path, history_location: Path | str) -> None:
    """The stored history and trace equal what the unmasked history gives."""
    history = open_history(history_location)
    pd.testing.assert_frame_equal(pd.read_parquet(run_dir / "native" / "history.parquet"), history.frame)
    expected = VerlAdapter().parse_history(history).events
    assert len(expected) > 100
    pd.testing.assert_frame_equal(read_trace(run_dir / "trace.parquet").events, expected)


def test_a_wandb_run_holding_keys_in_its_config_and_command_line_is_stored_without_them(
    benchbed, tmp_path: Path, wandb_run
) -> None:
    (original,) = (FIXTURES / "wandb").glob("offline-run-*")
    history = open_history(original)
    args = Namespace(logger=Namespace(wandb=Namespace(key=NAMESPACE_KEY, project="rl"), input_key="prompt"))
    config = history.config | {"openrlhf_args": repr(args), "wandb_api_key": CONFIG_KEY}
    rows = [{"step": step, "data": data} for step, _, data in history.rows()]
    run = wandb_run({"rows": rows, "config": config}, tmp_path / "w", ("--hf_token", ARGV_TOKEN))
    (record_log,) = run.glob("run-*.wandb")
    assert NAMESPACE_KEY.encode() in record_log.read_bytes()  # wandb kept the config as written
    assert open_history(run).command[-2:] == ["--hf_token", ARGV_TOKEN]  # wandb's environment record

    done = benchbed("ingest", run, "--store", tmp_path / "results")
    assert done.returncode == 0, done.stderr
    run_dir, record = _stored(tmp_path / "results")
    _assert_nowhere(run_dir, NAMESPACE_KEY, CONFIG_KEY, ARGV_TOKEN)
    left_out = [w for w in record["warnings"] if "it holds a credential" in w]
    assert left_out == [f"native copy: left out {record_log}: it holds a credential (config openrlhf_args: key=); "
                        "the figures are in native/history.parquet"]  # fmt: skip
    assert not (run_dir / "native" / record_log.name).exists()
    assert (run_dir / "native" / "files" / "requirements.txt").read_bytes() == (run / "files" / "requirements.txt"
                                                                              ).read_bytes()  # fmt: skip
    _same_figures(run_dir, run)


@pytest.mark.parametrize("store_kind", ["file", "sqlite"])
def test_an_mlflow_run_with_an_hf_token_param_is_stored_without_it(
    benchbed, tmp_path: Path, store_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mlflow", reason="the `mlflow` extra is not installed: pip install 'benchbed[mlflow]'")
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    original = open_history(FIXTURES / "mlruns")
    location: Path = tmp_path / ("mlruns" if store_kind == "file" else "mlflow.db")
    client = MlflowClient(tracking_uri=f"file://{location}" if store_kind == "file" else f"sqlite:///{location}")
    run_id = client.create_run(client.create_experiment("benchbed")).info.run_id
    metrics = [Metric(k, v, int(t * 1000), s) for s, t, row in original.rows() for k, v in row.items()]
    for i in range(0, len(metrics), 500):
        client.log_batch(run_id, metrics=metrics[i : i + 500])
    client.log_batch(run_id, params=[Param("hf_token", PARAM_TOKEN), Param("data/prompt_key", "prompt")])
    client.set_tag(run_id, "HF_TOKEN", TAG_TOKEN)  # a tag file of its own in a file store, named by the key
    client.set_terminated(run_id)

    done = benchbed("ingest", location, "--store", tmp_path / "results")
    assert done.returncode == 0, done.stderr
    run_dir, record = _stored(tmp_path / "results")
    _assert_nowhere(run_dir, PARAM_TOKEN, TAG_TOKEN)
    left_out = [w for w in record["warnings"] if "it holds a credential" in w]
    if store_kind == "sqlite":
        assert left_out == [f"native copy: left out {location}: it holds a credential (config hf_token); "
                            "the figures are in native/history.parquet"]  # fmt: skip
        assert not (run_dir / "native" / location.name).exists()
    else:
        assert left_out == []
        (param,) = (run_dir / "native").rglob("params/hf_token")
        assert param.read_text() == "***" and next((run_dir / "native").rglob("params/data/prompt_key")).read_text(
            ) == "prompt"  # fmt: skip
        assert next((run_dir / "native").rglob("tags/HF_TOKEN")).read_text() == "***"
    _same_figures(run_dir, location)


def test_a_run_directory_with_a_wandb_run_inside_is_copied_without_its_credentials(
    benchbed, tmp_path: Path, wandb_run
) -> None:
    """`benchbed ingest RUN_DIR` of verl's console log and JSONL beside the W&B run verl's Tracking wrote there."""
    run = tmp_path / "run"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "verl" / "verl-0.9.1-v1_sync", run)
    wandb_run({"rows": [{"step": 1, "data": {"actor/pg_loss": 0.5}}], "config": {"wandb_api_key": CONFIG_KEY}}, run)
    (record_log,) = run.glob("wandb/offline-run-*/run-*.wandb")
    done = benchbed("ingest", run, "--adapter", "verl", "--store", tmp_path / "results")
    assert done.returncode == 0, done.stderr
    run_dir, record = _stored(tmp_path / "results")
    _assert_nowhere(run_dir, CONFIG_KEY)
    assert [w for w in record["warnings"] if "it holds a credential" in w] == [
        f"native copy: left out {record_log}: it holds a credential ({record_log.parent.name} config wandb_api_key)"
    ]
    assert (run_dir / "native" / "console.log").read_bytes() == (run / "console.log").read_bytes()


def test_a_tensorboard_run_whose_text_and_hparams_hold_credentials_is_stored_without_them(
    benchbed, tmp_path: Path
) -> None:
    """A text summary with `--hf_token VALUE` (a logged command line) and an hparams session with an `api_key`: the
    event file that holds them is binary, so it is left out with a warning; the figures are all kept."""
    pytest.importorskip("tensorboard", reason="the `tensorboard` extra is not installed")
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.plugins.hparams import summary_v2 as hp
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    from tensorboard.util import tensor_util

    logs = tmp_path / "tensorboard_log"
    shutil.copytree(FIXTURES / "tensorboard_log", logs)
    writer = EventFileWriter(str(logs))
    text = summary_pb2.Summary.Value(
        tag="command", tensor=tensor_util.make_tensor_proto(f"python -m verl.trainer.main_ppo --hf_token {TEXT_TOKEN}")
    )
    text.metadata.plugin_data.plugin_name = "text"
    writer.add_event(event_pb2.Event(wall_time=1.0, step=0, summary=summary_pb2.Summary(value=[text])))
    session = hp.hparams_pb({"api_key": HPARAM_TOKEN, "lr": 1e-6})
    writer.add_event(event_pb2.Event(wall_time=1.0, step=0, summary=session))
    writer.close()
    done = benchbed("ingest", logs, "--adapter", "verl", "--store", tmp_path / "results")
    assert done.returncode == 0, done.stderr
    run_dir, record = _stored(tmp_path / "results")
    _assert_nowhere(run_dir, TEXT_TOKEN, HPARAM_TOKEN)
    left_out = [w for w in record["warnings"] if "it holds a credential" in w]
    assert len(left_out) == 1 and "events.out.tfevents" in left_out[0] and "text" in left_out[0]
    assert len(read_trace(run_dir / "trace.parquet").events) == len(
        VerlAdapter().parse_history(open_history(FIXTURES / "tensorboard_log")).events
    )


def test_a_run_directory_whose_event_file_logs_a_token_is_copied_without_it(benchbed, tmp_path: Path) -> None:
    """`benchbed ingest RUN_DIR` of verl's console log and JSONL beside an event file whose text summary holds a
    token: the event file is left out, the console log copied as it is."""
    pytest.importorskip("tensorboard", reason="the `tensorboard` extra is not installed")
    from torch.utils.tensorboard import SummaryWriter

    run = tmp_path / "run"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "verl" / "verl-0.9.1-v1_sync", run)
    with SummaryWriter(str(run / "tensorboard_log")) as writer:
        writer.add_text("argv", f"--hf_token {TEXT_TOKEN}", 0)
        writer.add_scalar("timing_s/step", 1.0, 1)
    done = benchbed("ingest", run, "--adapter", "verl", "--store", tmp_path / "results")
    assert done.returncode == 0, done.stderr
    run_dir, record = _stored(tmp_path / "results")
    _assert_nowhere(run_dir, TEXT_TOKEN)
    assert any("events.out.tfevents" in w and "it holds a credential" in w for w in record["warnings"])
    assert (run_dir / "native" / "console.log").read_bytes() == (run / "console.log").read_bytes()
