"""Simulator speed and memory: simulated samples per second of wall time (trace written) and peak RSS.

Targets (issue 2): ≥ 100,000 samples/s including the trace; a 1,000,000-sample run under 2 GiB peak memory.
Each size runs in a fresh subprocess through `python -m benchbed.sim`, exactly as `benchbed run` launches it,
so peak RSS is that process's own. Usage: python benchmarks/sim_speed.py [--sizes 100000,1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

TARGET_SPS = 100_000
TARGET_RSS_GIB = 2.0


def spec_for(samples: int) -> dict:
    """A generation-bound async run with B = 512 (32 prompts × 16) and enough steps for `samples`."""
    return {
        "name": f"speed-{samples}",
        "adapter": "sim",
        "workload": {"prompts_per_step": 32, "group_size": 16, "max_staleness": 4, "steps": max(1, samples // 512)},
        "sim": {"mode": "async", "concurrency": 1024, "latency": {"mean": 60.0, "cv": 0.6}, "train_step_time": 20.0,
                "pass_rate": {"dist": "beta", "a": 0.6, "b": 0.6}},
    }  # fmt: skip


def run_once(samples: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        spec_path = Path(tmp) / "spec.json"
        spec_path.write_text(json.dumps(spec_for(samples)))
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "benchbed.sim", "--spec", str(spec_path), "--out", tmp], check=True,
                       stderr=subprocess.DEVNULL)  # fmt: skip
        wall = time.perf_counter() - start
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        table = pq.read_table(Path(tmp) / "trace.parquet", columns=["key"])
        rollouts = sum(1 for k in table.column("key").to_pylist() if k == "rollout")
        size_mib = os.path.getsize(Path(tmp) / "trace.parquet") / 2**20
    return {
        "samples": rollouts,
        "events": table.num_rows,
        "wall_s": wall,
        "samples_per_s": rollouts / wall,
        "peak_rss_gib": max(peak_kib, before) / 2**20,
        "trace_mib": size_mib,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated sample counts")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size; the best wall time is reported")
    args = parser.parse_args()
    ok = True
    print(
        f"{'samples':>9} {'events':>9} {'best wall s':>11} {'samples/s':>10} {'peak GiB':>8} {'trace MiB':>9}  verdict"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        runs = [run_once(size) for _ in range(args.repeat)]
        best = min(runs, key=lambda r: r["wall_s"])
        peak = max(r["peak_rss_gib"] for r in runs)
        passed = best["samples_per_s"] >= TARGET_SPS and peak < TARGET_RSS_GIB
        ok &= passed
        print(
            f"{best['samples']:>9} {best['events']:>9} {best['wall_s']:>11.2f} {best['samples_per_s']:>10,.0f} "
            f"{peak:>8.2f} {best['trace_mib']:>9.1f}  {'ok' if passed else 'MISSES TARGET'} "
            f"(target ≥ {TARGET_SPS:,}/s, < {TARGET_RSS_GIB} GiB; wall includes interpreter start and trace write)"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
