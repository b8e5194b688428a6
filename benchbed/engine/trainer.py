"""Trainer process: GRPO (group-normalised advantages, clipped policy-ratio loss, AdamW) on batches from the
orchestrator, then weights published to the generators. It measures its own wait, compute and sync time."""

from __future__ import annotations

import os
import time
from typing import Any

from benchbed.engine.config import EngineConfig
from benchbed.engine.eventlog import EventLog
from benchbed.engine.runtime import set_threads

ADV_EPS = 1e-6


def advantages(rewards: list[float], groups: list[str]) -> list[float]:
    """(r − mean) / (std + eps) within each group; a group whose rewards all agree gets 0."""
    by_group: dict[str, list[float]] = {}
    for r, g in zip(rewards, groups, strict=True):
        by_group.setdefault(g, []).append(r)
    stats = {}
    for g, rs in by_group.items():
        mean = sum(rs) / len(rs)
        std = (sum((r - mean) ** 2 for r in rs) / len(rs)) ** 0.5
        stats[g] = (mean, std)
    return [0.0 if stats[g][1] == 0 else (r - stats[g][0]) / (stats[g][1] + ADV_EPS)
            for r, g in zip(rewards, groups, strict=True)]  # fmt: skip


def grpo_step(model, optimizer, samples: list[dict[str, Any]], clip_eps: float, pad_id: int) -> dict[str, float]:
    """One optimizer step of the clipped GRPO objective over the batch's generated tokens."""
    import torch

    adv = advantages([s["reward"] for s in samples], [s["group"] for s in samples])
    width = max(len(s["ids"]) for s in samples)
    n = len(samples)
    ids = torch.full((n, width), pad_id, dtype=torch.long)
    attn = torch.zeros((n, width), dtype=torch.long)
    mask = torch.zeros((n, width), dtype=torch.float32)
    old = torch.zeros((n, width), dtype=torch.float32)
    for i, s in enumerate(samples):
        length = len(s["ids"])
        ids[i, :length] = torch.tensor(s["ids"])
        attn[i, :length] = 1
        m = torch.tensor(s["mask"], dtype=torch.float32)
        mask[i, :length] = m
        old[i, :length][m.bool()] = torch.tensor(s["logprobs"], dtype=torch.float32)
    device = next(model.parameters()).device
    ids, attn, mask, old = ids.to(device), attn.to(device), mask.to(device), old.to(device)
    logits = model(input_ids=ids, attention_mask=attn, use_cache=False).logits[:, :-1].float()
    logp = torch.log_softmax(logits, dim=-1).gather(2, ids[:, 1:, None]).squeeze(2)
    mask, old = mask[:, 1:], old[:, 1:]
    a = torch.tensor(adv, dtype=torch.float32, device=device)[:, None]
    ratio = torch.exp(logp - old) * mask + (1 - mask)
    loss_tok = -torch.minimum(ratio * a, ratio.clamp(1 - clip_eps, 1 + clip_eps) * a)
    loss = (loss_tok * mask).sum() / mask.sum().clamp(min=1)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    clipped = ((ratio - 1).abs() > clip_eps).float() * mask
    return {
        "loss": float(loss.detach()), "grad_norm": float(grad_norm),
        "clip_fraction": float(clipped.sum() / mask.sum().clamp(min=1)),
        "reward_mean": sum(s["reward"] for s in samples) / n, "tokens": int(mask.sum()),
    }  # fmt: skip


def trainer_main(cfg_json: str, run_dir: str, port: int, published: Any, batches: Any, events: Any) -> None:
    """Entry point of the trainer (torch.distributed rank 0)."""
    cfg = EngineConfig.model_validate_json(cfg_json)
    ref = cfg.ref
    set_threads(ref.threads)
    import torch

    from benchbed.engine.model import build_model
    from benchbed.engine.tasks import EOS, PAD, build_tokenizer
    from benchbed.engine.weights import WeightSender, init_group

    log = EventLog(run_dir, "trainer")
    tokenizer = build_tokenizer()
    pad = tokenizer.token_to_id(PAD)
    model = build_model(ref.model, tokenizer.get_vocab_size(), pad, tokenizer.token_to_id(EOS), ref.seed)
    model.to(ref.device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=ref.lr, weight_decay=0.0)
    init_group(0, ref.generators + 1, port)
    sender = WeightSender(model, published)
    params = sum(p.numel() for p in model.parameters())
    import transformers

    log.write("ready", pid=os.getpid(), threads=torch.get_num_threads(), params=params, weight_bytes=sender.nbytes,
              versions={"torch": torch.__version__, "transformers": transformers.__version__})  # fmt: skip
    events.put(("ready", "trainer"))
    step_t0, step_p0 = time.time(), time.perf_counter()
    for step in range(1, cfg.steps + 1):
        wait_p0 = time.perf_counter()
        batch = batches.get()
        if batch is None:
            break
        wait_t1, wait_p1 = time.time(), time.perf_counter()
        stats = grpo_step(model, optimizer, batch["samples"], ref.clip_eps, pad)
        compute_t1, compute_p1 = time.time(), time.perf_counter()
        if step < cfg.steps:  # nothing generates with the last version
            sender.publish(step)
            if ref.mode == "sync":  # generation waits for these weights: the broadcast is on the critical path
                sender.wait()
        end_t, end_p = time.time(), time.perf_counter()
        timing = {"wait_s": wait_p1 - wait_p0, "compute_s": compute_p1 - wait_p1, "sync_s": end_p - compute_p1,
                  "step_s": end_p - step_p0}  # fmt: skip
        log.write("step", step=step, v_train=step - 1, t0=step_t0, t_wait_end=wait_t1, t_compute_end=compute_t1,
                  t1=end_t, samples=len(batch["samples"]), **timing, **stats)  # fmt: skip
        events.put(("step_done", step, timing))
        step_t0, step_p0 = end_t, end_p
    events.put(("done", "trainer"))
    sender.wait()
    log.write("stop")
    log.close()
