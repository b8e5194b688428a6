"""Generator worker process: a model copy that samples batches of rollouts with a KV cache.

Requests come from the orchestrator: contexts to continue, a token budget, and the policy version they must be
generated with (None: the newest one). At each decode step (a safe point) the worker may take new weights and
go on (in-flight updates: the rollout's tokens then span versions) or stop and hand back what it has (partial
rollouts, resumed later by the orchestrator)."""

from __future__ import annotations

import inspect
import os
import queue
import time
from dataclasses import dataclass, field
from typing import Any

from benchbed.engine.config import EngineConfig
from benchbed.engine.eventlog import EventLog
from benchbed.engine.runtime import set_threads

POLL_S = 0.01
KILL_EXIT_CODE = 13


@dataclass
class SampleOut:
    """What one sample produced in one request: tokens, their behaviour log-probs, and [version, count] spans."""

    sid: str
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    spans: list[list[int]] = field(default_factory=list)
    finished: bool = False

    def add(self, token: int, logprob: float, version: int) -> None:
        self.tokens.append(token)
        self.logprobs.append(logprob)
        if self.spans and self.spans[-1][0] == version:
            self.spans[-1][1] += 1
        else:
            self.spans.append([version, 1])


def cache_argument(model) -> str:
    """The forward() keyword for the KV cache: `cache` in recent transformers, `past_key_values` before."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def generate(model, receiver, contexts: list[list[int]], sids: list[str], max_new: list[int], eos: int,
             temperature: float, rng, on_safe_point) -> tuple[list[SampleOut], bool]:  # fmt: skip
    """Sample up to max_new tokens per context (left-padded batch, one KV cache). Returns the outputs and whether
    the batch was aborted at a safe point (unfinished samples then keep what they produced so far)."""
    import torch
    from transformers import DynamicCache

    device = next(model.parameters()).device
    n = len(contexts)
    width = max(len(c) for c in contexts)
    ids = torch.zeros((n, width), dtype=torch.long)
    mask = torch.zeros((n, width), dtype=torch.long)
    for i, ctx in enumerate(contexts):
        ids[i, width - len(ctx) :] = torch.tensor(ctx)
        mask[i, width - len(ctx) :] = 1
    ids, mask = ids.to(device), mask.to(device)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    outs = [SampleOut(sid) for sid in sids]
    budget = torch.tensor(max_new, device=device)
    active = budget > 0
    kv = {cache_argument(model): DynamicCache()}
    with torch.inference_mode():
        logits = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True,
                       **kv).logits[:, -1]  # fmt: skip
        step = 0
        while True:
            logp = torch.log_softmax(logits.float() / temperature, dim=-1)
            tokens = torch.multinomial(logp.exp(), 1, generator=rng).squeeze(1)
            chosen = logp.gather(1, tokens[:, None]).squeeze(1)
            for i in torch.nonzero(active).flatten().tolist():
                outs[i].add(int(tokens[i]), float(chosen[i]), receiver.version)
            step += 1
            active &= (tokens != eos) & (budget > step)
            for i in range(n):
                outs[i].finished = not bool(active[i])
            if not bool(active.any()):
                return outs, False
            if on_safe_point() == "abort":
                return outs, True
            mask = torch.cat([mask, torch.ones((n, 1), dtype=torch.long, device=device)], dim=1)
            positions = positions[:, -1:] + 1
            logits = model(input_ids=tokens[:, None], attention_mask=mask, position_ids=positions, use_cache=True,
                           **kv).logits[:, -1]  # fmt: skip


def generator_main(index: int, cfg_json: str, run_dir: str, port: int, published: Any, requests: Any,
                   results: Any) -> None:  # fmt: skip
    """Entry point of generator worker `index` (torch.distributed rank index + 1)."""
    cfg = EngineConfig.model_validate_json(cfg_json)
    ref = cfg.ref
    set_threads(ref.threads)
    import torch

    from benchbed.engine.model import build_model
    from benchbed.engine.tasks import EOS, PAD, build_tokenizer
    from benchbed.engine.weights import WeightReceiver, init_group

    role = f"gen{index}"
    log = EventLog(run_dir, role)
    tokenizer = build_tokenizer()
    eos = tokenizer.token_to_id(EOS)
    model = build_model(ref.model, tokenizer.get_vocab_size(), tokenizer.token_to_id(PAD), eos, ref.seed)
    model.to(ref.device).eval()
    init_group(index + 1, ref.generators + 1, port)
    receiver = WeightReceiver(model, published, log)
    rng = torch.Generator(device=ref.device).manual_seed(ref.seed * 1000 + index + 1)
    # sync and async generators take pending weights whenever they are idle; one-step-off ones only when a
    # request needs them, so that each batch is generated by exactly the version it was admitted for.
    eager = ref.mode != "one_step_off"
    log.write("ready", pid=os.getpid(), threads=torch.get_num_threads())
    results.put(("ready", role))

    def on_safe_point() -> str:
        if not receiver.pending():
            return "go"
        if ref.partial_rollouts:
            return "abort"
        if ref.in_flight_updates:
            receiver.sync_to(None)
        return "go"

    while True:
        if eager:
            receiver.sync_to(None)
        try:
            msg = requests.get(timeout=POLL_S)
        except queue.Empty:
            continue
        if msg is None:
            receiver.sync_to(None)  # complete any broadcast the trainer started, so it can exit
            break
        if msg["kind"] == "sync":
            receiver.sync_to(msg["version"])
            continue
        if index == 0 and ref.kill_generator_at_step is not None and published.value >= ref.kill_generator_at_step:
            log.write("fault", message=f"generator {role} dies on purpose (kill_generator_at_step)")
            os._exit(KILL_EXIT_CODE)
        receiver.sync_to(msg["version"])  # None: every published version
        t0 = time.time()
        outs, aborted = generate(model, receiver, msg["contexts"], msg["sids"], msg["max_new"], eos,
                                 ref.temperature, rng, on_safe_point)  # fmt: skip
        t1 = time.time()
        log.write("generate", t0=t0, t1=t1, req=msg["req"], samples=len(outs), aborted=aborted,
                  tokens=sum(len(o.tokens) for o in outs))  # fmt: skip
        results.put(("result", msg["req"], [o.__dict__ for o in outs], aborted))
    log.write("stop")
    log.close()
