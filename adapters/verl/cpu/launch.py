"""Build what benchbed's CPU profile of verl trains on, then run verl: a tiny random-weight Qwen3 (or Qwen3-MoE)
from a config with a character tokenizer, and a parquet set of arithmetic prompts, all in this directory and built
once (nothing is downloaded). `python launch.py MODULE ARGS...` then replaces itself with `python -m MODULE ARGS...`
(on a running Ray cluster, without the Ray resource counts).
Written by benchbed (adapters/verl/cpu/); it reads its settings from setup.json beside it."""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PAD, EOS, UNK = "<pad>", "<eos>", "<unk>"
CHARS = [chr(c) for c in range(32, 127)]  # printable ASCII, one token each
RAY_COUNTS = ("ray_kwargs.ray_init.num_cpus=", "+ray_kwargs.ray_init.num_gpus=")
CHAT_TEMPLATE = "{% for message in messages %}{{ message['content'] }}{% endfor %}"


def build_tokenizer(out: Path) -> Any:
    """A character-level tokenizer saved as tokenizer.json, which transformers and vLLM both load."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate([PAD, EOS, UNK, *CHARS])}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.add_special_tokens([PAD, EOS, UNK])
    core.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, pad_token=PAD, eos_token=EOS, unk_token=UNK)
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(out)
    return tok


def build_model(out: Path, model: dict[str, Any], seed: int) -> None:
    """The model with weights drawn from `seed`, saved with its tokenizer and generation config."""
    import torch
    import transformers

    tok = build_tokenizer(out)
    common = dict(
        vocab_size=len(tok), hidden_size=model["hidden"], num_hidden_layers=model["layers"],
        num_attention_heads=model["heads"], num_key_value_heads=model["kv_heads"],
        head_dim=model["hidden"] // model["heads"], intermediate_size=model["intermediate"],
        max_position_embeddings=model["max_positions"], pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id, bos_token_id=tok.eos_token_id, tie_word_embeddings=False,
    )  # fmt: skip
    if model["arch"] == "qwen3_moe":
        config = transformers.Qwen3MoeConfig(**common, num_experts=model["experts"], decoder_sparse_step=1,
                                             num_experts_per_tok=model["top_k"], norm_topk_prob=True,
                                             moe_intermediate_size=model["expert_hidden"])  # fmt: skip
        cls = transformers.Qwen3MoeForCausalLM
    else:
        config = transformers.Qwen3Config(**common)
        cls = transformers.Qwen3ForCausalLM
    torch.manual_seed(seed)
    cls(config).save_pretrained(out)
    transformers.GenerationConfig(eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id).save_pretrained(out)


def build_data(path: Path, prompts: int, seed: int) -> None:
    """`prompts` additions `a+b=` in verl's RL dataset layout; the reward function checks the sum."""
    import pandas as pd

    rng = random.Random(seed)
    rows = []
    for index in range(prompts):
        a, b = rng.randint(0, 99), rng.randint(0, 99)
        rows.append({"data_source": "benchbed/arith", "prompt": [{"role": "user", "content": f"{a}+{b}="}],
                     "ability": "arithmetic", "reward_model": {"style": "rule", "ground_truth": str(a + b)},
                     "extra_info": {"index": index}})  # fmt: skip
    pd.DataFrame(rows).to_parquet(path)


def verl_args(argv: list[str], ray_address: str | None) -> list[str]:
    """The overrides verl gets: on a running Ray cluster (RAY_ADDRESS set, as in a Ray job) without the CPU and
    GPU counts Ray is told of, which Ray refuses from a driver that joins a cluster ("When connecting to an
    existing cluster, num_cpus and num_gpus must not be provided"): the cluster's own resources count."""
    if not ray_address:
        return argv
    return [arg for arg in argv if not arg.startswith(RAY_COUNTS)]


def main(argv: list[str]) -> None:
    setup = json.loads((HERE / "setup.json").read_text())
    model_dir, data = HERE / "model", HERE / "train.parquet"
    if not (model_dir / "config.json").exists():
        build_model(model_dir, setup["model"], setup["model"]["seed"])
    if not data.exists():
        build_data(data, setup["prompts"], setup["model"]["seed"])
    os.execv(sys.executable, [sys.executable, "-m", *verl_args(argv, os.environ.get("RAY_ADDRESS"))])


if __name__ == "__main__":
    main(sys.argv[1:])
