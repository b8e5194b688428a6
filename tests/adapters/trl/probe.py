"""What the ground-truth tests plug into real TRL runs (through `[trl] rewards` and `callbacks`), measuring on their
own what benchbed reads from TRL's outputs. Each writes JSON lines into the run directory (the process's cwd)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from benchbed.adapters.trl.rewards import grade
from transformers import TrainerCallback

REWARDS_FILE = "probe-rewards.jsonl"
TIMING_FILE = "probe-timing.jsonl"


def recorded(prompts: list[str], completions: list[str], answer: list[str], trainer_state=None, **_) -> list[float]:
    """The arithmetic grade, with every batch of rewards it returned written down, in TRL's order."""
    rewards = [grade(text.strip(), expected) for text, expected in zip(completions, answer, strict=True)]
    with Path(REWARDS_FILE).open("a") as fh:
        fh.write(json.dumps({"global_step": trainer_state.global_step, "rewards": rewards}) + "\n")
    return rewards


class GenerationShare(TrainerCallback):
    """Measures, by its own clock, how long each step spends before the trainer's first forward pass with gradients
    (the loss): the time the step produces its batch (generating, scoring). Also the bare `model.generate` time."""

    def __init__(self) -> None:
        self.began: float | None = None
        self.preparing = self.generating = 0.0

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        import torch

        forward, generate = model.forward, model.generate

        def timed_forward(*a, **k):
            if self.began is not None and torch.is_grad_enabled():
                self.preparing += time.time() - self.began
                self.began = None
            return forward(*a, **k)

        def timed_generate(*a, **k):
            t0 = time.time()
            try:
                return generate(*a, **k)
            finally:
                self.generating += time.time() - t0

        model.forward, model.generate = timed_forward, timed_generate

    def on_step_begin(self, args, state, control, **kwargs):
        self.began = time.time()

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            line = {"step": state.global_step, "t": time.time(), "preparing": self.preparing,
                    "generating": self.generating}  # fmt: skip
            with Path(TIMING_FILE).open("a") as fh:
                fh.write(json.dumps(line) + "\n")
            self.preparing = self.generating = 0.0


class KillAtStep3(TrainerCallback):
    """SIGKILL the trainer's own process once step 3 is logged: a run killed midway, nothing cleaned up."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.global_step >= 3:
            os.kill(os.getpid(), signal.SIGKILL)
