"""How long the verl adapter takes to parse a 10,000-step file-logger JSONL with 300 keys per step (target < 5 s),
beside pandas.read_json(lines=True) on the same file in the same run.

Usage: .venv/bin/python benchmarks/verl_parse.py [--steps 10000] [--keys 300] [--repeat 3] [--keep FILE]
Writes a synthetic V1 sync run in verl's file-logger format (real key names from a verl 0.9.1 run, padded with
per-layer MoE keys to the requested width), then prints the timings as JSON."""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd
from benchbed.adapters.verl import VerlAdapter

FIXTURE = Path(__file__).parents[1] / "tests" / "fixtures" / "verl" / "verl-0.9.1-v1_sync" / "metrics.jsonl"


def base_record() -> dict[str, float]:
    """One step's keys from the committed verl 0.9.1 fixture (produced by verl's own logger)."""
    for line in FIXTURE.read_text().splitlines():
        data = json.loads(line)["data"]
        if "timing_s/step" in data:
            return {k: v for k, v in data.items() if isinstance(v, (int, float))}
    raise SystemExit(f"{FIXTURE}: no step with timing_s/step; regenerate the fixtures")


def write_jsonl(path: Path, steps: int, width: int, seed: int = 0) -> int:
    rng = random.Random(seed)
    base = base_record()
    layer_keys = [f"rollout/moe/max_vio/layer_{i}" for i in range(max(0, width - len(base)))]
    with path.open("w") as fh:
        for step in range(1, steps + 1):
            data = {k: v * rng.uniform(0.9, 1.1) if isinstance(v, float) else v for k, v in base.items()}
            data["training/global_step"] = step
            data.update({k: rng.random() for k in layer_keys})
            fh.write(json.dumps({"step": step, "data": data}, separators=(",", ":")) + "\n")
    return len(base) + len(layer_keys)


def best_of(fn, repeat: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times), times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--keys", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="write the JSONL here instead of a temp dir")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "metrics.jsonl"
        keys = write_jsonl(path, args.steps, args.keys)
        adapter = VerlAdapter()
        trace = adapter.parse(path)
        parse_best, parse_all = best_of(lambda: adapter.parse(path), args.repeat)
        pandas_best, pandas_all = best_of(lambda: pd.read_json(path, lines=True), args.repeat)
        report = {
            "file_mb": round(path.stat().st_size / 1e6, 1),
            "steps": args.steps,
            "keys_per_step": keys,
            "trace_rows": len(trace.events),
            "verl_parse_s": round(parse_best, 3),
            "verl_parse_s_all": [round(t, 3) for t in parse_all],
            "pandas_read_json_lines_s": round(pandas_best, 3),
            "pandas_read_json_lines_s_all": [round(t, 3) for t in pandas_all],
            "verl_parse_median_s": round(statistics.median(parse_all), 3),
            "target_s": 5.0,
            "within_target": parse_best < 5.0,
        }
        print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
