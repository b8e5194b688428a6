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


class GenerationTimer(TrainerCallback):
    """Times every `model.generate` call itself (by wrapping it) and stamps the end of every logged step."""

    def __init__(self) -> None:
        self.generating = 0.0

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        generate = model.generate

        def timed(*a, **k):
            t0 = time.time()
            try:
                return generate(*a, **k)
            finally:
                self.generating += time.time() - t0

        model.generate = timed

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            line = {"step": state.global_step, "t": time.time(), "generating": self.generating}
            with Path(TIMING_FILE).open("a") as fh:
                fh.write(json.dumps(line) + "\n")
            self.generating = 0.0


class KillAtStep3(TrainerCallback):
    """SIGKILL the trainer's own process once step 3 is logged: a run killed midway, nothing cleaned up."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.global_step >= 3:
            os.kill(os.getpid(), signal.SIGKILL)
