"""How long the slime adapter takes to ingest 1,000 steps of console output plus TensorBoard events (target < 10 s).

Usage: .venv/bin/python benchmarks/slime_ingest.py [--steps 1000] [--repeat 3] [--keep DIR]
Writes a synthetic slime run (console lines in slime's formats; events with a real SummaryWriter, one file per
process as slime writes them), then times SlimeAdapter.parse on it and prints the figures as JSON."""

from __future__ import annotations

import argparse
import importlib.util
import json
import tempfile
import time
from pathlib import Path

from benchbed.adapters.slime import SlimeAdapter

FIXTURES = Path(__file__).parents[1] / "tests" / "fixtures" / "slime" / "make_fixtures.py"
TIMERS = {"sleep": 4.0, "update_weights": 2.0, "wake_up": 2.0, "data_preprocess": 0.5, "train_wait": 60.0,
          "ref_log_probs": 3.0, "log_probs": 2.0, "actor_train": 14.0, "train": 20.0}  # fmt: skip


def _fixtures():
    spec = importlib.util.spec_from_file_location("slime_make_fixtures", FIXTURES)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def write_run(out: Path, steps: int) -> dict[str, int]:
    """A 624b824-style run: per step a rollout perf dict, trainer Timer lines, rollout/step/perf dicts, noise."""
    f = _fixtures()
    site = f.SITES["624b824"]
    lines = f.args_block({"rollout_batch_size": 32, "n_samples_per_prompt": 8, "global_batch_size": 256,
                          "colocate": True, "update_weights_interval": 1})  # fmt: skip
    pairs = []
    t = 5.0
    for rid in range(steps):
        rollout = f.rollout_perf(40.0, {"0": rid % 3, "1": rid % 2})
        trainer = f.trainer_perf(TIMERS)
        pairs.append((rollout, trainer))
        end = t + TIMERS["train_wait"] + TIMERS["train"]
        lines.append(f.line(f.ROLLOUT, end - 25, site["rollout_perf"], f"perf {rid}: {rollout}"))
        for name in ("wake_up", "data_preprocess", "train_wait", "ref_log_probs", "log_probs", "actor_train"):
            lines.append(f.line(f.TRAINER, end - 20, "timer.py:24", f"Timer {name} start"))
            lines.append(f.line(f.TRAINER, end - 2, "timer.py:32", f"Timer {name} end (elapsed: {TIMERS[name]:.1f}s)"))
        stats = {"rollout/log_probs": -0.41, "rollout/raw_reward": 0.5, "rollout/advantages": 0.0}
        lines.append(f.line(f.TRAINER, end - 15, site["trainer_rollout"], f"rollout {rid}: {stats}"))
        for k in range(2):
            step_dict = {"train/loss": 0.01, "train/grad_norm": 0.2, "train/global_batch_size": 128,
                         "train/step": 2 * rid + k}  # fmt: skip
            lines.append(f.line(f.TRAINER, end - 5, site["step"], f"step {2 * rid + k}: {step_dict}"))
        lines.append(f.line(f.TRAINER, end, site["trainer_perf"], f"perf {rid}: {trainer}"))
        lines.append("[2026-04-15 07:59:01 TP0] Decode batch. #running-req: 31, #token: 118232, gen throughput: 2412")
        t = end
    out.mkdir(parents=True, exist_ok=True)
    (out / "run.log").write_text("\n".join(lines) + "\n")
    f.write_tensorboard(out / "tensorboard", pairs)
    scalars = sum(len(r) + len(tr) + 2 for r, tr in pairs)
    return {"console_lines": len(lines), "tensorboard_scalars": scalars}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=None, help="write the synthetic run here and keep it")
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = ns.keep or Path(tmp) / "run"
        sizes = write_run(run, ns.steps)
        seconds = []
        for _ in range(ns.repeat):
            start = time.perf_counter()
            trace = SlimeAdapter().parse(run)
            seconds.append(time.perf_counter() - start)
    steps = int((trace.events["key"] == "trainer.step").sum())
    print(json.dumps({"benchmark": "slime_ingest", "steps": steps, **sizes, "events": len(trace.events),
                      "seconds_min": round(min(seconds), 3), "seconds_all": [round(s, 3) for s in seconds],
                      "target_s": 10.0, "ok": min(seconds) < 10.0}))  # fmt: skip


if __name__ == "__main__":
    main()
