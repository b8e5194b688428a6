"""Diagnosis: name a run's bottleneck from its metrics, state the evidence, and list the levers (issue #27)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from benchbed.diagnosis.levers import levers_for, predict_main_lever, prediction_spec
from benchbed.diagnosis.rules import FLAGS, REGIMES, Diagnosis, Evidence, Lever, Prediction, diagnose_metrics
from benchbed.errors import BenchbedError
from benchbed.record import RunRecord

__all__ = ["FLAGS", "REGIMES", "Diagnosis", "Evidence", "Lever", "Prediction", "diagnose_record"]


def diagnose_record(
    record: RunRecord,
    run_dir: Path | None = None,
    predict: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Diagnosis:
    """The diagnosis of a stored run; with `predict`, the main lever's effect from a (calibrated) simulation."""
    from benchbed.adapter import get_adapter

    metrics = {name: value.value for name, value in record.metrics.items() if not name.startswith("framework_")}
    diagnosis = diagnose_metrics(metrics)
    try:
        table = get_adapter(record.adapter.name).table
    except BenchbedError:
        table = record.adapter.name
    diagnosis.levers = levers_for(diagnosis, table, record.spec)
    if predict and run_dir is not None and diagnosis.levers:
        try:
            spec, basis = prediction_spec(Path(run_dir), record.spec)
        except (BenchbedError, ValueError, OSError) as exc:  # an unfittable run still gets its diagnosis
            diagnosis.uncertain.append(f"no prediction: the simulator cannot be calibrated to this run ({exc})")
        else:
            predict_main_lever(diagnosis, spec, basis, progress=progress)
    return diagnosis
