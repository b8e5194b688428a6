"""`python -m benchbed.engine --config engine.json --out RUN_DIR`: run the CPU reference engine.

It writes its native event log (RUN_DIR/events/*.jsonl) and summary.json; `progress STEP/STEPS` lines go to
stderr. Exit status 0 on success, 1 when the run failed part-way (events kept), 2 for a bad configuration."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pydantic import ValidationError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchbed.engine", description=__doc__)
    parser.add_argument("--config", required=True, type=Path, help="engine.json written by the ref adapter")
    parser.add_argument("--out", required=True, type=Path, help="run directory for events/ and summary.json")
    args = parser.parse_args(argv)
    from benchbed.engine.config import EngineConfig

    try:
        cfg = EngineConfig.model_validate_json(args.config.read_text())
    except (OSError, ValidationError) as exc:
        print(f"benchbed.engine: error: {args.config}: expected an engine configuration ({exc})", file=sys.stderr)
        return 2
    from benchbed.engine.run import run_engine

    code = run_engine(cfg, args.out)
    if code:
        summary = (args.out / "summary.json").read_text()
        import json

        print(f"benchbed.engine: error: {json.loads(summary)['error']}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
