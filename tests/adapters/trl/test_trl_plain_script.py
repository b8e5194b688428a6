"""A run directory left by a plain TRL script (written here, not rendered by benchbed: a tiny Qwen2 from a config, a
character tokenizer, local prompts, report_to none, checkpoints and save_state) read with `benchbed ingest
--adapter trl`, and the log dicts it printed read without --adapter, their figures checked against the values in
the run's own trainer_state.json."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchbed.adapter import available_adapters, get_adapter
from benchbed.adapterkit.histories.console_formats import console_adapter
from benchbed.errors import AdapterError, NotThisFrameworkError

pytest.importorskip("trl", reason="TRL is not installed (pip install 'benchbed[trl]')")

SCRIPT = """
import sys

import torch
from datasets import Dataset
from tokenizers import Tokenizer, models
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
from trl import GRPOConfig, GRPOTrainer

torch.set_num_threads(1)
chars = ["<pad>", "<eos>", "<unk>"] + list("0123456789+=")
core = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(chars)}, merges=[], unk_token="<unk>"))
tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")
torch.manual_seed(0)
model = Qwen2ForCausalLM(Qwen2Config(vocab_size=len(chars), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                     num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
                                     pad_token_id=0, eos_token_id=1, bos_token_id=1))
data = Dataset.from_dict({"prompt": [f"{a}+{b}=" for a in range(4) for b in range(4)]})


def digits(completions, **kwargs):
    return [float(sum(ch.isdigit() for ch in c)) for c in completions]


args = GRPOConfig(output_dir=sys.argv[1], num_generations=4, per_device_train_batch_size=4, max_completion_length=4,
                  max_steps=3, logging_steps=1, save_strategy="steps", save_steps=3, report_to="none", use_cpu=True,
                  bf16=False, disable_tqdm=True, seed=0, learning_rate=1e-3)
trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=digits, args=args, train_dataset=data)
trainer.train()
trainer.save_state()
"""


@pytest.fixture(scope="module")
def output_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The output_dir of one run of the plain script (made once for the module)."""
    root = tmp_path_factory.mktemp("plain-trl")
    (root / "grpo.py").write_text(SCRIPT)
    env = {**os.environ, "WANDB_MODE": "disabled", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run([sys.executable, str(root / "grpo.py"), str(root / "out")], capture_output=True, text=True,
                          cwd=root, env=env, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (root / "stdout.log").write_text(done.stdout)  # the log dicts transformers' PrinterCallback printed
    return root / "out"


def rows(out: Path) -> list[dict]:
    """The per-step rows of TRL's own trainer_state.json (its final summary row left out)."""
    return [e for e in json.loads((out / "trainer_state.json").read_text())["log_history"] if "step_time" in e]


@pytest.mark.slow  # the plain script's run: about 16 s on a CPU
def test_the_plain_run_ingests_to_its_trainer_state_figures(output_dir: Path, tmp_path: Path) -> None:
    logged = rows(output_dir)
    assert [e["step"] for e in logged] == [1, 2, 3]
    argv = [sys.executable, "-m", "benchbed", "ingest", str(output_dir), "--adapter", "trl", "--store", str(tmp_path)]
    done = subprocess.run([*argv, "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    record = record[0] if isinstance(record, list) else record
    m = {name: metric["value"] for name, metric in record["metrics"].items()}
    assert record["status"] == "succeeded" and record["adapter"]["name"] == "trl"
    window = logged[1:]  # warm-up 1 leaves out step 1
    seconds = sum(e["step_time"] for e in window)
    assert m["step_time_mean_s"] == pytest.approx(seconds / 2)
    assert m["trainer_throughput_sps"] == pytest.approx(4 * 2 / seconds)  # train_batch_size 4 a step
    assert m["framework_zero_adv_group_fraction"] == pytest.approx(sum(e["frac_reward_zero_std"] for e in window) / 2)
    assert any("a TRL run benchbed did not launch (no training_args.json)" in w for w in record["warnings"])
    assert any(f"trainer idle is unknown (looked for in {output_dir / 'wandb'}; W&B writes it" in w
               for w in record["warnings"])  # fmt: skip


@pytest.mark.slow  # the plain script's run: about 16 s on a CPU
def test_the_steps_are_trls_step_time_and_its_figures_are_kept(output_dir: Path) -> None:
    trace = get_adapter("trl").parse(output_dir)
    steps = trace.of("trainer.step").sort_values("step")
    logged = rows(output_dir)
    assert list(zip(steps["step"], steps["value"], strict=True)) == [(e["step"], e["step_time"]) for e in logged]
    rewards = trace.of("quality.reward_mean").sort_values("step")
    assert list(rewards["value"]) == pytest.approx([e["reward"] for e in logged])
    assert trace.meta.group_size is None and trace.meta.samples_per_step == 4 and not trace.meta.partial


@pytest.mark.slow  # the plain script's run: about 16 s on a CPU
def test_without_save_state_the_last_checkpoint_is_read(output_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "out"
    shutil.copytree(output_dir, run)
    (run / "trainer_state.json").unlink()
    adapter = get_adapter("trl")
    assert adapter.find_runs(run) == [run]
    trace = adapter.parse(run)
    assert list(trace.of("trainer.step").sort_values("step")["step"]) == [1, 2, 3]
    assert any("has no trainer_state.json (trainer.save_state() was not called): read" in w and "checkpoint-3" in w
               for w in trace.meta.warnings)  # fmt: skip


def test_an_hf_trainer_run_of_another_kind_is_not_trls_grpo(tmp_path: Path) -> None:
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": [{"loss": 1.5, "step": 1}]}))
    with pytest.raises(NotThisFrameworkError, match="not a GRPO run of TRL: .* logs none of frac_reward_zero_std"):
        get_adapter("trl").parse(tmp_path)


@pytest.mark.slow  # the plain script's run: about 16 s on a CPU
def test_the_printed_log_dicts_read_to_the_same_steps(output_dir: Path, tmp_path: Path) -> None:
    """PrinterCallback prints each float with 4 significant digits: the steps are trainer_state's, so rounded."""
    stdout = output_dir.parent / "stdout.log"
    logged = rows(output_dir)
    trace = get_adapter("trl").parse(stdout)
    steps = trace.of("trainer.step").sort_values("step")
    rounded = [float(f"{e['step_time']:.4g}") for e in logged]
    assert list(steps["step"]) == [1, 2, 3] and list(steps["value"]) == rounded and not trace.meta.partial
    zero = trace.of("framework.zero_adv_group_fraction").sort_values("step")
    assert list(zero["value"]) == [float(f"{e['frac_reward_zero_std']:.4g}") for e in logged]
    argv = [sys.executable, "-m", "benchbed", "ingest", str(stdout), "--store", str(tmp_path), "--json"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    record = record[0] if isinstance(record, list) else record
    assert record["adapter"]["name"] == "trl" and record["status"] == "succeeded"
    assert record["metrics"]["step_time_mean_s"]["value"] == pytest.approx(sum(rounded[1:]) / 2)


PRINTED = ("{'loss': '0.01', 'grad_norm': '1.5', 'reward': '2.5', 'frac_reward_zero_std': '0.25', 'step_time': '0.5', "
           "'epoch': '0.1'}\n{'loss': '0.02', 'grad_norm': '1.25', 'reward': '3', 'frac_reward_zero_std': '0.5', "
           "'step_time': '0.75', 'epoch': '0.2'}\n")  # fmt: skip


def test_log_dicts_as_printed_read_by_hand_and_a_cut_log_is_partial(tmp_path: Path) -> None:
    log = tmp_path / "train.out"
    log.write_text(PRINTED)
    assert console_adapter(log, available_adapters()) == "trl"  # so `benchbed ingest` needs no --adapter
    trace = get_adapter("trl").parse(log)
    assert trace.of("trainer.step")[["step", "value"]].values.tolist() == [[1, 0.5], [2, 0.75]]
    assert trace.of("framework.zero_adv_group_fraction")["value"].tolist() == [0.25, 0.5]
    assert trace.meta.partial and any("TRL did not finish training" in w for w in trace.meta.warnings)
    log.write_text(PRINTED + "{'train_runtime': '1.3', 'train_samples_per_second': '6', 'epoch': '0.2'}\n")
    assert not get_adapter("trl").parse(log).meta.partial
    log.write_text(PRINTED.replace("'step_time'", "'step_seconds'"))
    with pytest.raises(AdapterError, match=r"train\.out: a TRL console log, but no timing block \(it holds"):
        get_adapter("trl").parse(log)
