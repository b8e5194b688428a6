"""Where a prime-rl run's files are: the run directory `rl` created, its newest logs folder, and which files mark a
run (for `find_runs`)."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapters.prime_rl.render import run_name

METRICS_FILE = "metrics.jsonl"
TRAINER_LOGS = ("trainer.log", "trainer.stdout", "trainer/node_0.log", "rl.log")
ORCHESTRATOR_LOGS = ("orchestrator.log", "orchestrator.stdout")
RUN_MARKERS = (METRICS_FILE, "rollouts", "configs", "logs")


def log_dir(run_dir: Path) -> Path | None:
    """logs/latest, else the newest logs/attempt_N, else logs/ (<= v0.5 layout)."""
    logs = run_dir / "logs"
    if not logs.is_dir():
        return None
    if (logs / "latest").is_dir():
        return logs / "latest"
    attempts = [p for p in logs.glob("attempt_*") if p.name.removeprefix("attempt_").isdigit()]
    if attempts:
        return max(attempts, key=lambda p: int(p.name.removeprefix("attempt_")))
    return logs


def resolve_run_dir(path: Path) -> Path:
    """The prime-rl run directory: `path` itself, or the `<output_dir>/<run.name>` below it that `rl` created."""
    nested = path / run_name(path)
    if nested.is_dir() and any((nested / m).exists() for m in RUN_MARKERS):
        return nested
    if any((path / m).exists() for m in (METRICS_FILE, "rollouts", "configs")):
        return path
    children = [c for c in path.iterdir() if c.is_dir() and any((c / m).exists() for m in RUN_MARKERS)]
    return children[0] if len(children) == 1 else path


_RUN_LOG_NAMES = ("trainer.log", "orchestrator.log", "trainer.stdout", "orchestrator.stdout")


def marks_run(path: Path) -> Path | None:
    """The run directory a file marks (for `find_runs`): a metrics.jsonl's folder when configs/, rollouts/ or logs/
    stand beside it; a trainer or orchestrator log's folder above its logs/."""
    if path.name == METRICS_FILE and any((path.parent / m).is_dir() for m in ("configs", "rollouts", "logs")):
        return path.parent
    if path.name in _RUN_LOG_NAMES:
        return next((p.parent for p in path.parents if p.name == "logs"), None)
    return None
