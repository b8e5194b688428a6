"""flash-attn's `flash_attn_varlen_func` in plain torch, one `scaled_dot_product_attention` per packed sequence: the
kernel TRL's tree attention calls (trl/experimental/async_grpo/packing.py:190 in trl 1.16.0), which TRL downloads
from the Hugging Face Hub as a CUDA build (packing.py:161). benchbed's CPU route for the asynchronous trainer
(trl/vllm_cpu.py) gives it this one instead. Rows of `q` and `k` are the sequences' tokens end to end, cut at
`cu_seqlens_q` and `cu_seqlens_k`; causal masking is aligned bottom-right, as flash-attn does when a sequence has
fewer queries than keys."""

from __future__ import annotations

from typing import Any

import torch
from torch.nn.functional import scaled_dot_product_attention


def causal_mask(queries: int, keys: int) -> torch.Tensor:
    """Query i sees keys 0 .. i + keys - queries: the last query sees every key (flash-attn's bottom-right rule)."""
    return torch.ones(queries, keys, dtype=torch.bool).tril(keys - queries)


def flash_attn_varlen_func(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens_q: torch.Tensor,
                           cu_seqlens_k: torch.Tensor, max_seqlen_q: Any, max_seqlen_k: Any,
                           softmax_scale: float | None = None, causal: bool = False,
                           window_size: tuple[int, int] = (-1, -1), softcap: float = 0.0) -> torch.Tensor:  # fmt: skip
    """Attention of `q` (tokens, heads, dim) over `k`, `v` (tokens, kv_heads, dim) sequence by sequence; kv heads are
    shared by heads // kv_heads query heads each, as in grouped-query attention. No sliding window, no soft cap."""
    if tuple(window_size) != (-1, -1) or softcap:
        raise NotImplementedError("benchbed's CPU varlen attention has no sliding window and no soft cap")
    groups = q.shape[1] // k.shape[1]
    bounds_q, bounds_k = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    pieces = []
    for i in range(len(bounds_q) - 1):
        (q0, q1), (k0, k1) = bounds_q[i : i + 2], bounds_k[i : i + 2]
        query = q[q0:q1].transpose(0, 1)
        key = k[k0:k1].transpose(0, 1).repeat_interleave(groups, dim=0)
        value = v[k0:k1].transpose(0, 1).repeat_interleave(groups, dim=0)
        mask = causal_mask(q1 - q0, k1 - k0) if causal else None
        out = scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=softmax_scale)
        pieces.append(out.transpose(0, 1))
    return torch.cat(pieces, dim=0)
