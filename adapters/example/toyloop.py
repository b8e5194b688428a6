"""The example adapter's "framework": a toy synchronous GRPO loop that generates, trains and syncs on a virtual
clock (nothing sleeps, nothing is learned) and logs like a real framework would, one JSON line per record.

`python -m benchbed.adapters.example.toyloop --steps 5 --out example-log.jsonl`. The log's first line is a
header naming the format; then per step one `sample` line per sample and one `step` line with its timers."""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from benchbed.adapters.example.logformat import FORMAT, VERSION


def run(steps: int, prompts: int, group_size: int, seed: int, update_s: float, sync_s: float) -> list[dict]:
    """The log records of a synchronous loop: step k generates with the weights of version k − 1, trains, syncs."""
    rng = random.Random(seed)
    records: list[dict] = [{"format": FORMAT, "version": VERSION, "group_size": group_size}]
    clock = 0.0
    for step in range(1, steps + 1):
        start = clock
        finished = start
        for prompt in range(prompts):
            pass_rate = rng.random()
            for i in range(group_size):
                latency = rng.lognormvariate(0.0, 0.5)
                records.append({
                    "kind": "sample", "id": f"{step}-{prompt}-{i}", "group": f"{step}-{prompt}",
                    "policy_version": step - 1, "trained_by_version": step - 1, "begin": round(start, 6),
                    "end": round(start + latency, 6), "reward": float(rng.random() < pass_rate),
                })  # fmt: skip
                finished = max(finished, start + latency)
        generation = finished - start
        clock = finished + update_s + sync_s
        records.append({
            "kind": "step", "step": step, "begin": round(start, 6), "end": round(clock, 6),
            "timers": {"gen": round(generation, 6), "update": update_s, "sync": sync_s},
        })  # fmt: skip
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--prompts", type=int, default=2)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--update-s", type=float, default=3.0, help="virtual seconds of training per step")
    parser.add_argument("--sync-s", type=float, default=0.5, help="virtual seconds of weight sync per step")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    records = run(args.steps, args.prompts, args.group_size, args.seed, args.update_s, args.sync_s)
    args.out.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
