"""Console logs in SkyRL's and OpenRLHF's own print formats (lines reconstructed from their format strings: SkyRL's
Timer at NovaSky-AI/SkyRL a9564572e, openrlhf 0.11.2's PPOTrainer.fit) read through the kit, to figures by hand;
each framework's console log told by its format, so `benchbed ingest` needs no --adapter for it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchbed.adapter import available_adapters, get_adapter
from benchbed.adapterkit.histories.console_formats import console_adapter
from benchbed.errors import AdapterError, NotThisFrameworkError

SKYRL = (
    "2026-12-03 10:00:00.000 | INFO     | skyrl.train.trainer:train:342 - Started: 'step'\n"
    "2026-12-03 10:00:03.000 | INFO     | skyrl.train.trainer:train:361 - Finished: 'generate', time cost: 3.00s\n"
    "2026-12-03 10:00:05.000 | INFO     | skyrl.train.trainer:train:450 - Finished: 'train_critic_and_policy', "
    "time cost: 2.00s\n"
    "2026-12-03 10:00:06.000 | INFO     | skyrl.train.trainer:train:342 - Finished: 'step', time cost: 6.00s\n"
)
OPENRLHF = (
    "INFO 12-03 10:00:00 ppo_trainer.py:551] ✨ Global step 1: {'timing/make_experience': 2.0, "
    "'timing/ppo_train': 3.0, 'timing/broadcast': 1.0, 'timing/generation': 4.0, 'timing/step_total': 10.0}\n"
)


def figures(adapter: str, text: str, tmp_path: Path) -> dict[str, float]:
    log = tmp_path / "run.log"
    log.write_text(text)
    events = get_adapter(adapter).parse(log).events
    return events.groupby("key", observed=True)["value"].sum().to_dict()


def test_skyrl_timer_lines_read_as_one_step(tmp_path: Path) -> None:
    got = figures("skyrl", SKYRL, tmp_path)
    assert got["trainer.step"] == pytest.approx(6.0)
    assert got["trainer.compute"] == pytest.approx(2.0)


def test_openrlhf_global_step_dicts_read_under_train(tmp_path: Path) -> None:
    got = figures("openrlhf", OPENRLHF, tmp_path)
    assert got["trainer.step"] == pytest.approx(10.0)
    assert got["trainer.compute"] == pytest.approx(5.0)  # make_experience + ppo_train
    assert got["trainer.wait"] == pytest.approx(4.0)  # sync: step_total - the three timers = generation
    assert got["trainer.weight_sync"] == pytest.approx(1.0)


NEMO_RL = Path(__file__).resolve().parents[1] / "fixtures" / "nemo_rl" / "console" / "sync-2-steps.log"
ROLL = Path(__file__).resolve().parents[1] / "fixtures" / "roll" / "console" / "async-tensorboard.log"
AREAL = Path(__file__).resolve().parents[1] / "fixtures" / "areal" / "console" / "grpo-async-6x8.log"


@pytest.mark.parametrize(
    ("framework", "text"),
    [("skyrl", SKYRL), ("openrlhf", OPENRLHF), ("nemo_rl", NEMO_RL), ("roll", ROLL), ("areal", AREAL)],
)
def test_each_frameworks_console_log_is_told_by_its_format(framework: str, text: str | Path, tmp_path: Path) -> None:
    log = text if isinstance(text, Path) else tmp_path / "run.log"
    if not isinstance(text, Path):
        log.write_text(text)
    assert console_adapter(log, available_adapters()) == framework


def test_a_log_no_format_or_several_formats_recognise_is_refused_naming_the_file(tmp_path: Path) -> None:
    plain = tmp_path / "train.log"
    plain.write_text("INFO starting\nINFO Train step finished\n")
    with pytest.raises(AdapterError, match=r"train\.log: not a tracker history, and no adapter's console format \(are"):
        console_adapter(plain, available_adapters())
    both = tmp_path / "both.log"
    both.write_text(SKYRL + OPENRLHF)
    with pytest.raises(AdapterError, match=r"both\.log: the console formats of several adapters recognise it \(op"):
        console_adapter(both, available_adapters())


def test_ingest_without_adapter_reads_a_console_log_and_names_one_it_cannot_tell(benchbed, tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(SKYRL)
    done = benchbed("ingest", log, "--warmup-steps", "0", "--store", tmp_path / "store", "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)[0] if done.stdout.lstrip().startswith("[") else json.loads(done.stdout)
    assert record["adapter"]["name"] == "skyrl" and record["status"] == "succeeded"
    log.write_text(SKYRL + OPENRLHF)
    done = benchbed("ingest", log, "--store", tmp_path / "store2")
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        f"benchbed: error: {log}: the console formats of several adapters recognise it (openrlhf, skyrl); name the "
        "framework that wrote it with --adapter"
    ]
    assert not (tmp_path / "store2").exists()


CONSOLE_TITLES = {"nemo_rl": "a NeMo-RL console log", "skyrl": "a SkyRL console log", "roll": "a ROLL console log",
                  "openrlhf": "an OpenRLHF console log", "areal": "an AReaL console log"}  # fmt: skip


@pytest.mark.parametrize("framework", sorted(CONSOLE_TITLES))
def test_a_log_with_no_line_of_the_named_framework_is_refused_saying_so(framework: str, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("INFO starting\nINFO step 1 done in 3.0s\n")
    title = CONSOLE_TITLES[framework]
    with pytest.raises(NotThisFrameworkError, match=rf"train\.log holds no history .* and is not {title} \(no line"):
        get_adapter(framework).parse(log)


def test_no_console_log_is_stored_as_succeeded_without_metrics(benchbed, tmp_path: Path) -> None:
    """Zero matching lines, or the framework's lines without its timing: refused, nothing stored; steps that give no
    metric (one step, the warm-up leaves none): kept as partial, saying why."""
    plain, untimed, short = tmp_path / "plain.log", tmp_path / "untimed.log", tmp_path / "short.log"
    plain.write_text("INFO starting\nINFO done\n")
    untimed.write_text(SKYRL.splitlines(keepends=True)[1])  # a Timer line, but not the step's
    short.write_text(SKYRL)
    for log, adapter, said in ((plain, "skyrl", "is not a SkyRL console log"),
                               (untimed, "skyrl", "untimed.log: a SkyRL console log, but no timing block; expected"),
                               (plain, None, "no adapter's console format")):  # fmt: skip
        done = benchbed("ingest", log, *(("--adapter", adapter) if adapter else ()), "--store", tmp_path / "none")
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and said in done.stderr, said
    assert not (tmp_path / "none").exists()
    done = benchbed("ingest", short, "--store", tmp_path / "store", "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    record = record[0] if isinstance(record, list) else record
    assert record["status"] == "partial" and record["metrics"] == {}
    assert "no metric could be computed: no figure came out; the record is kept as partial" in record["warnings"]
