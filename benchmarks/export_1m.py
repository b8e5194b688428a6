"""Perfetto export speed and memory on a ~1,000,000-event simulated trace (target: seconds, memory bounded).

The trace is simulated and stored, then `benchbed export` runs as a child process; its peak RSS is compared with a
child that only reads the trace, so the difference is what the export itself holds (bounded by its chunks). The
file is checked to be one JSON document.

Usage: .venv/bin/python benchmarks/export_1m.py [--steps 3800] [--out /tmp/export_1m.json] [--json]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchbed.sim import simulate_spec
from benchbed.spec import build_spec


def _child(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of a child process."""
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    return seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3800, help="trainer steps (256 samples each)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/export_1m.json"))
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON document")
    args = parser.parse_args()

    workload = {"prompts_per_step": 16, "group_size": 16, "steps": args.steps, "max_staleness": 2}
    sim = {"mode": "async", "concurrency": 512, "train_step_time": 20.0, "latency": {"mean": 40.0, "cv": 0.6}}
    trace = simulate_spec(build_spec({"name": "export-1m", "adapter": "sim", "workload": workload, "sim": sim}))
    with tempfile.TemporaryDirectory() as run_dir:
        trace.write(Path(run_dir))
        read = f"from benchbed.trace import read_trace; read_trace({run_dir!r})"
        read_s, read_mib = _child([sys.executable, "-c", read])
        export_s, export_mib = _child([sys.executable, "-m", "benchbed", "export", run_dir, "-o", str(args.out)])
    with args.out.open() as fh:
        events = len(json.load(fh)["traceEvents"])
    figures = {
        "trace_events": len(trace.events), "exported_events": events,
        "file_mib": round(args.out.stat().st_size / 2**20),
        "export_child_s": round(export_s, 2), "read_only_child_s": round(read_s, 2),
        "export_peak_rss_mib": round(export_mib), "read_only_peak_rss_mib": round(read_mib),
    }  # fmt: skip
    print(json.dumps(figures) if args.json else "\n".join(f"{k}: {v}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
