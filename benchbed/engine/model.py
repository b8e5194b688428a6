"""Tiny MoE causal LMs built from a transformers config and initialised from the seed: no download, no hub."""

from __future__ import annotations

import os

from benchbed.engine.config import ModelConfig

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

MAX_POSITIONS = 256


def hf_config(cfg: ModelConfig, vocab_size: int, pad_id: int, eos_id: int):
    """The transformers config of the tiny model: Qwen3-MoE, or GLM-4.5-style MoE (shared expert, grouped top-k)."""
    common = dict(
        vocab_size=vocab_size, hidden_size=cfg.hidden, num_hidden_layers=cfg.layers,
        num_attention_heads=cfg.heads, num_key_value_heads=cfg.kv_heads, head_dim=cfg.hidden // cfg.heads,
        max_position_embeddings=MAX_POSITIONS, moe_intermediate_size=cfg.expert_hidden,
        num_experts_per_tok=cfg.top_k, pad_token_id=pad_id, eos_token_id=eos_id, bos_token_id=eos_id,
        tie_word_embeddings=False,
    )  # fmt: skip
    if cfg.arch == "qwen3_moe":
        from transformers import Qwen3MoeConfig

        return Qwen3MoeConfig(**common, intermediate_size=2 * cfg.expert_hidden, num_experts=cfg.experts,
                              decoder_sparse_step=1, norm_topk_prob=True, output_router_logits=False)  # fmt: skip
    from transformers import Glm4MoeConfig

    return Glm4MoeConfig(**common, intermediate_size=2 * cfg.expert_hidden, n_routed_experts=cfg.experts,
                         n_shared_experts=1, n_group=1, topk_group=1, first_k_dense_replace=0,
                         norm_topk_prob=True, partial_rotary_factor=0.5)  # fmt: skip


def model_class(arch: str) -> type:
    if arch == "qwen3_moe":
        from transformers import Qwen3MoeForCausalLM

        return Qwen3MoeForCausalLM
    from transformers import Glm4MoeForCausalLM

    return Glm4MoeForCausalLM


def build_model(cfg: ModelConfig, vocab_size: int, pad_id: int, eos_id: int, seed: int):
    """The model with weights drawn from `seed`: every process that builds it holds the same version 0."""
    import torch

    torch.manual_seed(seed)
    model = model_class(cfg.arch)(hf_config(cfg, vocab_size, pad_id, eos_id))
    if cfg.arch == "glm4_moe":
        # GLM's router bias correction starts at zero and is not a trained parameter; keep it out of the way.
        for module in model.modules():
            bias = getattr(module, "e_score_correction_bias", None)
            if isinstance(bias, torch.Tensor):
                bias.data.zero_()
    return model
