"""Write a real W&B offline run with the installed wandb, in a child process (wandb starts its own service).

Run: python tests/histories/wandb_writer.py SPEC.json (tests call it through conftest's `wandb_run`), where SPEC
holds `dir`, `project`, `name`, `config`,
`rows` ([{"step": N or null, "data": {...}}], each one `run.log(data, step=N)`) and `summary` (set without
logging: a summary-only run when `rows` is empty). Prints the run directory."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(spec_path: str) -> None:
    import wandb

    spec = json.loads(Path(spec_path).read_text())
    run = wandb.init(
        project=spec.get("project", "benchbed"), name=spec.get("name"), dir=spec["dir"], config=spec.get("config"),
        settings=wandb.Settings(x_disable_stats=True, x_disable_meta=spec.get("no_meta", False)),
    )  # fmt: skip
    for row in spec.get("rows", []):
        run.log(row["data"], step=row.get("step"))
    for key, value in spec.get("summary", {}).items():
        run.summary[key] = value
    run_dir = Path(run.dir).parent
    run.finish()
    print(run_dir)


if __name__ == "__main__":
    main(sys.argv[1])
