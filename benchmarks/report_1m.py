"""Report speed on a ~1,000,000-event simulated run: time of write_report and of each section (target: seconds).

Usage: .venv/bin/python benchmarks/report_1m.py [--steps 3800] [--out /tmp/report_1m.html] [--json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from benchbed.metrics import compute_metrics
from benchbed.record import AdapterInfo, RunRecord, benchbed_info, machine_info
from benchbed.report import sections, write_report
from benchbed.sim import simulate_spec
from benchbed.spec import build_spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3800, help="trainer steps (256 samples each)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/report_1m.html"))
    parser.add_argument("--json", action="store_true", help="print the timings as one JSON document")
    args = parser.parse_args()

    workload = {"prompts_per_step": 16, "group_size": 16, "steps": args.steps, "max_staleness": 2}
    sim = {"mode": "async", "concurrency": 512, "train_step_time": 20.0, "latency": {"mean": 40.0, "cv": 0.6}}
    spec = build_spec({"name": "report-1m", "adapter": "sim", "workload": workload, "sim": sim})
    trace = simulate_spec(spec)
    record = RunRecord(
        status="succeeded", spec=spec.model_dump(mode="json"), spec_id=spec.spec_id,
        adapter=AdapterInfo(name="sim", framework=trace.meta.framework, mode=trace.meta.mode),
        benchbed=benchbed_info(), machine=machine_info(), metrics=compute_metrics(trace),
    )  # fmt: skip

    timings = {"events": len(trace.events)}
    for builder in sections.BUILDERS:
        start = time.perf_counter()
        builder(record, trace)
        timings[f"section_{builder.__name__}_s"] = round(time.perf_counter() - start, 3)
    start = time.perf_counter()
    write_report([(record, trace)], args.out)
    timings["write_report_s"] = round(time.perf_counter() - start, 3)
    timings["html_bytes"] = args.out.stat().st_size
    print(json.dumps(timings) if args.json else "\n".join(f"{k}: {v}" for k, v in timings.items()))


if __name__ == "__main__":
    main()
