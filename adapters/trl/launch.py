"""What a rendered TRL script calls, in the run's own process: build the model, tokenizer, data, reward functions
and callbacks, then train. Heavy imports (torch, transformers, datasets, trl) happen here, never in render or parse.

Besides TRL's own outputs (trainer_state.json, the W&B offline run), the script leaves `benchbed-trl-batches.jsonl`:
per generated batch, the rewards each reward function returned, the token counts, and the permutation TRL drew
to shuffle the batch before cutting it into per-step slices, so the parser knows exactly which sample each
optimizer step trained on (TRL's own completions tables, `log_completions`, would cost a quarter of each step:
with W&B on, TRL also logs each as a W&B table); and `benchbed-trl-rows.jsonl`, each row the run sends to W&B as
it is sent, for `benchbed watch` (W&B's offline record log reaches the disk only when the process ends)."""

from __future__ import annotations

import atexit
import functools
import importlib
import importlib.util
import json
import math
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchbed.adapters.trl.options import TESTED_BELOW, TESTED_MIN, TESTED_RANGE
from benchbed.adapters.trl.rewards import SandboxChecker, arith, text_of

BATCHES_FILE = "benchbed-trl-batches.jsonl"
ROWS_FILE = "benchbed-trl-rows.jsonl"
ARGS_FILE = "training_args.json"  # TRL's resolved GRPOConfig, as TrainingArguments.to_json_string writes it


def version_problem(version: str) -> str | None:
    """Why an installed TRL release cannot be used, or None when it is in the tested range."""
    parts = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    if len(parts) == 2 and TESTED_MIN <= parts < TESTED_BELOW:
        return None
    return (f"TRL {version} is outside the range benchbed's trl adapter was tested with ({TESTED_RANGE}): "
            f"pip install 'trl{TESTED_RANGE}' (or 'benchbed[trl]')")  # fmt: skip


def prepare(threads: int) -> None:
    """Check the TRL release and set torch's threads, before TRL is imported."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        problem = version_problem(version("trl"))
    except PackageNotFoundError:
        problem = f"TRL is not installed: pip install 'benchbed[trl]' ({TESTED_RANGE})"
    if problem:
        sys.exit(f"benchbed trl: {problem}")
    import torch

    torch.set_num_threads(threads)


def tokenizer():
    """The reference engine's character tokenizer as a transformers tokenizer (built in memory, no download)."""
    from transformers import PreTrainedTokenizerFast

    from benchbed.engine.tasks import EOS, PAD, UNK, build_tokenizer

    return PreTrainedTokenizerFast(tokenizer_object=build_tokenizer(), pad_token=PAD, eos_token=EOS, unk_token=UNK)


def tiny_model(arch: str, layers: int, hidden: int, heads: int, kv_heads: int, intermediate: int, experts: int,
               top_k: int, expert_hidden: int, seed: int) -> tuple[Any, Any]:  # fmt: skip
    """(model, tokenizer): a Qwen2, Qwen3 or Qwen3-MoE model from a config, weights drawn from `seed`."""
    import torch

    from benchbed.engine.config import ModelConfig
    from benchbed.engine.model import build_model, hf_config

    tok = tokenizer()
    moe = ModelConfig(layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads, experts=experts, top_k=top_k,
                      expert_hidden=expert_hidden)  # fmt: skip
    if arch == "qwen3_moe":
        return build_model(moe, len(tok), tok.pad_token_id, tok.eos_token_id, seed), tok
    import transformers

    common = hf_config(moe, len(tok), tok.pad_token_id, tok.eos_token_id).to_dict()
    keep = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
            "head_dim", "max_position_embeddings", "pad_token_id", "eos_token_id", "bos_token_id",
            "tie_word_embeddings")  # fmt: skip
    names = {"qwen2": ("Qwen2Config", "Qwen2ForCausalLM"), "qwen3": ("Qwen3Config", "Qwen3ForCausalLM")}[arch]
    config = getattr(transformers, names[0])(**{k: common[k] for k in keep}, intermediate_size=intermediate)
    torch.manual_seed(seed)
    return getattr(transformers, names[1])(config), tok


CHAT_TEMPLATE = "{% for message in messages %}{{ message['content'] }}{% endfor %}"  # the prompt's text, as is
# how transformers parses a generated turn back into a message under that template: all of it is the content (the
# prompt before it ends at the end of the prefix). The asynchronous trainer's rollout worker needs one
# (trl/experimental/async_grpo/async_rollout_worker.py:369; trl/chat_template_utils.py:778 knows only hub templates).
RESPONSE_TEMPLATE = {"defaults": {"role": "assistant"}, "start_anchor_pattern": r"\Z",
                     "fields": {"content": {"close_pattern": "$", "content": "text"}}}  # fmt: skip


def save_model(model: Any, tok: Any, directory: str) -> str:
    """Save the model and its tokenizer (with a chat template that writes the messages' text as is, and its
    response template, for the asynchronous trainer's conversational prompts) where vLLM loads them: the absolute
    directory."""
    from transformers import GenerationConfig

    out = Path(directory).resolve()
    tok.chat_template = CHAT_TEMPLATE
    tok.response_template = RESPONSE_TEMPLATE
    model.save_pretrained(out)
    tok.save_pretrained(out)
    GenerationConfig(eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id).save_pretrained(out)
    return str(out)


def start_vllm_server(model_dir: str, port: int, max_model_len: int, timeout_s: float) -> str:
    """vLLM's own OpenAI server (what `vllm serve` runs) for `model_dir` on 127.0.0.1:`port`, in this
    environment's python, its output in vllm_server.log; stopped when this process exits. Waits until it is ready;
    its base URL."""
    from benchbed.adapters.trl.vllm_cpu import wait_until_ready

    url = f"http://127.0.0.1:{port}"
    # the server's module, not the `vllm serve` command: the command reads the version of a `vllm` distribution,
    # and the CPU build's is named `vllm-cpu` (vllm/entrypoints/cli/main.py, PackageNotFoundError)
    argv = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model_dir, "--host", "127.0.0.1",
            "--port", str(port), "--dtype", "float32", "--enforce-eager", "--max-model-len", str(max_model_len),
            "--logprobs-mode", "processed_logprobs", "--max-logprobs", "-1"]  # fmt: skip
    with Path("vllm_server.log").open("w") as log:  # the server keeps its own copy of the descriptor
        server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)

    def stop() -> None:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()

    atexit.register(stop)
    took = wait_until_ready(url, timeout_s, lambda: server.poll() is None)
    print(f"benchbed trl: vLLM server ready at {url} after {took:.1f}s", flush=True)
    return url


def local_model(path: str) -> tuple[Any, Any]:
    """(model, tokenizer) from a local checkpoint directory; never the hub."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return (AutoModelForCausalLM.from_pretrained(path, local_files_only=True),
            AutoTokenizer.from_pretrained(path, local_files_only=True))  # fmt: skip


def arith_dataset(prompts: int, seed: int, conversational: bool = False):
    """The reference engine's arithmetic tasks as a dataset: `prompt` ("12+7=") and `answer` ("19"); a conversational
    prompt is the one user message with that text (the asynchronous trainer takes only conversations)."""
    from datasets import Dataset

    from benchbed.engine.tasks import make_task

    rng = random.Random(seed)
    tasks = [make_task(rng) for _ in range(prompts)]
    texts = [t.prompt for t in tasks]
    if conversational:
        texts = [[{"role": "user", "content": text}] for text in texts]
    return Dataset.from_dict({"prompt": texts, "answer": [t.expected for t in tasks]})


def local_dataset(path: str):
    """A dataset saved with `save_to_disk`, or a local .json/.jsonl/.parquet/.csv file (its train split)."""
    import datasets

    p = Path(path)
    if p.is_dir():
        loaded = datasets.load_from_disk(str(p))
        return loaded["train"] if isinstance(loaded, datasets.DatasetDict) else loaded
    kind = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}[p.suffix]
    return datasets.load_dataset(kind, data_files=str(p), split="train")


def load_ref(ref: str) -> Any:
    """'package.module:name' or 'path/file.py:name' -> the object."""
    where, _, name = ref.rpartition(":")
    if where.endswith(".py"):
        spec = importlib.util.spec_from_file_location(Path(where).stem, where)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {where}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    return getattr(module, name)


class Recorder:
    """What each generated batch was, from inside the run: every reward function's returned rewards and the
    samples' token counts (gathered as TRL calls the reward functions), and the permutation TRL drew to shuffle the
    batch before cutting it into per-step slices. One JSON line per batch, written when TRL shuffles it."""

    def __init__(self, tok: Any) -> None:
        self.tok = tok
        self.pending: dict[str, Any] = {}

    def wrap(self, func: Callable[..., Any]) -> Callable[..., Any]:
        """`func`, recording what it returns (and, once per batch, the token counts)."""

        @functools.wraps(func)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            rewards = func(*args, **kwargs)
            if "prompt_tokens" not in self.pending:
                prompts = [text_of(p) for p in kwargs.get("prompts", args[0] if args else [])]
                self.pending["prompt_tokens"] = [len(ids) for ids in self.tok(text=prompts)["input_ids"]]
                self.pending["completion_tokens"] = [len(ids) for ids in kwargs.get("completion_ids", [])]
            self.pending.setdefault("rewards", {})[recorded.__name__] = [None if r is None else float(r)
                                                                          for r in rewards]  # fmt: skip
            return rewards

        if not hasattr(recorded, "__name__"):
            recorded.__name__ = type(func).__name__  # a callable object: TRL names the reward after it
        recorded.close = getattr(func, "close", None)  # type: ignore[attr-defined]
        return recorded

    def install(self, trainer: Any) -> None:
        """Log each batch with the permutation of TRL's shuffle (the same draw from the same RNG state)."""
        import torch
        import trl.trainer.grpo_trainer as grpo

        shuffle = getattr(grpo, "shuffle_sequence_dict", None)
        if shuffle is None:
            print("benchbed trl: this TRL has no shuffle_sequence_dict; per-sample slots will be approximate")
            return
        out = Path(trainer.args.output_dir) / BATCHES_FILE

        def logged(seq_dict: dict[str, Any]) -> dict[str, Any]:
            state = torch.get_rng_state()
            size = len(next(v for v in seq_dict.values() if v is not None))
            permutation = torch.randperm(size).tolist()
            torch.set_rng_state(state)
            line = {"global_step": trainer.state.global_step, "micro_step": trainer._step,
                    "permutation": permutation, **self.pending}  # fmt: skip
            self.pending = {}
            with out.open("a") as fh:
                fh.write(json.dumps(line) + "\n")
            return shuffle(seq_dict)

        grpo.shuffle_sequence_dict = logged


def reward_functions(names: list[str], recorder: Recorder | None, max_starting: int,
                     seed: int) -> list[Callable[..., Any]]:  # fmt: skip
    """The named reward functions, each recorded by `recorder` (None: as they are, for the asynchronous trainer,
    which pickles them into its rollout worker's process)."""
    funcs: list[Callable[..., Any]] = []
    for name in names:
        if name == "arith":
            funcs.append(arith)
        elif name == "arith_sandbox":
            funcs.append(SandboxChecker(Path.cwd(), max_starting, seed))
        else:
            funcs.append(load_ref(name))
    return funcs if recorder is None else [recorder.wrap(f) for f in funcs]


def callbacks(refs: list[str]) -> list[Any]:
    """The user's TrainerCallback classes, instantiated, plus the one that keeps trainer_state.json current."""
    from transformers import TrainerCallback

    class SaveStateOnLog(TrainerCallback):
        """Write trainer_state.json after every log, so a run killed midway leaves its history."""

        def on_log(self, args, state, control, **kwargs):
            tmp = Path(args.output_dir) / "trainer_state.json.tmp"
            state.save_to_json(str(tmp))
            os.replace(tmp, Path(args.output_dir) / "trainer_state.json")

    return [SaveStateOnLog(), *(load_ref(ref)() for ref in refs)]


def _reward_funcs(trainer: Any) -> list[Any]:
    """The trainer's reward functions: GRPOTrainer holds them, the asynchronous trainer's rollout worker does."""
    owner = trainer if hasattr(trainer, "reward_funcs") else getattr(trainer, "rollout_worker", None)
    return list(getattr(owner, "reward_funcs", None) or [])


def write_header(trainer: Any) -> None:
    """TRL's resolved arguments (training_args.json) and the batch log's header: when the process started (the
    trace's origin), package versions, reward function names and weights."""
    from importlib.metadata import version

    import psutil
    from trl.trainer.utils import get_callable_name

    out = Path(trainer.args.output_dir)
    (out / ARGS_FILE).write_text(trainer.args.to_json_string())
    header = {"format": "benchbed-trl-batches", "process_start": psutil.Process().create_time(),
              "versions": {p: version(p) for p in ("trl", "transformers", "torch")},
              "reward_funcs": [get_callable_name(f) for f in _reward_funcs(trainer)],
              "reward_weights": getattr(trainer, "reward_weights", None)}  # fmt: skip
    if header["reward_weights"] is not None:
        header["reward_weights"] = header["reward_weights"].tolist()
    (out / BATCHES_FILE).write_text(json.dumps(header) + "\n")


def _append(path: Path, line: dict[str, Any]) -> None:
    with path.open("a") as fh:
        fh.write(json.dumps(line) + "\n")


def log_rows(out: Path) -> None:
    """Write each W&B row as the run logs it: one JSON line per `wandb.log` call, its numbers and the `_timestamp`
    W&B stores (stamped here, so W&B keeps this same time). When the process exits, after W&B has closed its run
    (its exit hooks, registered later, run first), a last line `{"run_end": time}`: the run's files are complete."""
    path = out / ROWS_FILE
    path.write_text("")
    atexit.register(lambda: _append(path, {"run_end": time.time()}))
    try:
        from wandb.sdk.wandb_run import Run
    except ImportError:
        return
    log = Run.log

    @functools.wraps(log)
    def logged(self: Any, data: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        stamped = {"_timestamp": time.time(), **data}
        _append(path, {k: v for k, v in stamped.items() if isinstance(v, int | float) and math.isfinite(v)})
        return log(self, stamped, *args, **kwargs)

    Run.log = logged


def run(trainer: Any, recorder: Recorder | None) -> None:
    """Train, save the final state, and close what the reward functions opened (sandboxes) on every path out."""
    write_header(trainer)
    log_rows(Path(trainer.args.output_dir))
    if recorder is not None:
        recorder.install(trainer)
    try:
        trainer.train()
        trainer.save_state()
    finally:
        for func in _reward_funcs(trainer):
            close = getattr(func, "close", None)
            if callable(close):
                close()
