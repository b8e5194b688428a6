"""`python -m benchbed.sim --spec spec.json --out RUN_DIR`: simulate and write RUN_DIR/trace.parquet.

Progress goes to stderr as `progress STEP/STEPS` lines, which the launcher turns into a progress bar."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchbed.errors import BenchbedError
from benchbed.sim import simulate_spec
from benchbed.spec import build_spec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchbed.sim", description=__doc__)
    parser.add_argument("--spec", required=True, type=Path, help="experiment spec as JSON (written by benchbed run)")
    parser.add_argument("--out", required=True, type=Path, help="run directory to write trace.parquet into")
    args = parser.parse_args(argv)
    try:
        spec = build_spec(json.loads(args.spec.read_text()), str(args.spec))
        steps = spec.workload.steps
        every = max(1, steps // 100)

        def report(step: int) -> None:
            if step % every == 0 or step == steps:
                print(f"progress {step}/{steps}", file=sys.stderr, flush=True)

        trace = simulate_spec(spec, report)
        args.out.mkdir(parents=True, exist_ok=True)
        trace.write(args.out)
    except (BenchbedError, OSError, ValueError) as exc:
        print(f"benchbed.sim: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
