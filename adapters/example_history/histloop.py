"""The "framework": a synchronous loop on a virtual clock that logs one metrics row per step, as a tracker would
(`{"step": N, key: value, ...}`, a flat JSON-lines metrics history)."""

from __future__ import annotations

import argparse
import json
import random


def main() -> None:
    args = argparse.ArgumentParser()
    for flag, kind in (("--steps", int), ("--samples", int), ("--update-s", float), ("--seed", int), ("--out", str)):
        args.add_argument(flag, type=kind, required=True)
    a = args.parse_args()
    rng = random.Random(a.seed)
    with open(a.out, "w") as out:
        for step in range(1, a.steps + 1):
            gen, sync = rng.uniform(5.0, 9.0), 0.5
            data = {"timing/step": gen + a.update_s + sync, "timing/gen_wait": gen, "timing/update": a.update_s,
                    "timing/sync": sync, "batch/samples": a.samples, "reward/mean": rng.random(),
                    "reward/zero_std_fraction": rng.choice([0.0, 0.25, 0.5])}  # fmt: skip
            out.write(json.dumps({"step": step, **data}) + "\n")


if __name__ == "__main__":
    main()
