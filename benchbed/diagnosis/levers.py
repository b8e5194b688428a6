"""Levers: the spec fields that move a run out of its regime or flag (lever sets: benchbed's levers.toml, and the
sets outside packages register in the `benchbed.levers` entry-point group, e.g. for their adapter's table), and
their predicted effect from a simulation calibrated to the run (the run's own spec when it is a simulation)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from benchbed.diagnosis.rules import Diagnosis, Lever, Prediction
from benchbed.errors import BenchbedError
from benchbed.registry import Registry

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CORE_TABLES = ("workload", "resources", "sandbox")
TARGET_IDLE = 0.10  # the planner's target: trainer idle at most 10%, the trainer-bound threshold


LeverSet = dict[str, list[dict[str, Any]]]  # regime or flag -> levers ({field, direction, why[, to, predict]})


def _is_lever_set(obj: Any) -> bool:
    return isinstance(obj, dict) and all(
        isinstance(v, list) and all(isinstance(e, dict) and {"field", "direction", "why"} <= set(e) for e in v)
        for v in obj.values()
    )


LEVER_SETS: Registry[LeverSet] = Registry(
    "benchbed.levers",
    "lever set",
    (_is_lever_set, "a dict of regime or flag -> list of {field, direction, why} tables"),
    BenchbedError,
)


@cache
def _builtin_levers() -> LeverSet:
    return tomllib.loads((resources.files("benchbed.diagnosis") / "levers.toml").read_text(encoding="utf-8"))


def lever_table() -> LeverSet:
    """Regime or flag -> the levers, in order of preference: levers.toml's, then each registered set's (by name)."""
    table = {name: list(entries) for name, entries in _builtin_levers().items()}
    for extra in LEVER_SETS.load_all().values():
        for name, entries in extra.items():
            table.setdefault(name, []).extend(entries)
    return table


def _lookup(spec: Mapping[str, Any], dotted: str) -> Any:
    node: Any = spec
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def applicable(field: str, adapter_table: str) -> bool:
    """A core field applies to every run; an adapter table's field only to runs of that adapter."""
    table = field.split(".", 1)[0]
    return table in CORE_TABLES or table == adapter_table


def levers_for(diagnosis: Diagnosis, adapter_table: str, spec: Mapping[str, Any]) -> list[Lever]:
    """The levers of the diagnosis's regime, then of each flag, that apply to this adapter's spec."""
    out: list[Lever] = []
    seen: set[str] = set()
    for name in (diagnosis.regime, *diagnosis.flags):
        for entry in lever_table().get(name, []):
            field = entry["field"]
            if field in seen or not applicable(field, adapter_table):
                continue
            if adapter_table == "sim" and field.startswith("resources."):
                continue  # a simulation has no GPUs to add: its own fields are the levers
            seen.add(field)
            current = _lookup(spec, field)
            if entry["direction"] in ("set", "enable") and current == entry.get("to", True):
                continue  # already set that way
            why = entry["why"] + (f" (now {current})" if current is not None else "")
            out.append(Lever(field=field, direction=entry["direction"], why=why, to=entry.get("to")))
    return out


def predict_main_lever(
    diagnosis: Diagnosis,
    simulate_spec: Any,
    basis: str,
    progress: Callable[[str], None] | None = None,
) -> None:
    """Attach the planner's prediction to the first lever whose regime entry names a simulator field.

    `simulate_spec` is an ExperimentSpec for the simulator (the run's own, or calibrated from the run). The planner
    searches the smallest value meeting trainer_idle_ratio <= 0.10; when none does, the prediction is the best point
    of its sweep (the smallest value within 0.01 of the lowest idle), since another limit binds beyond it.
    """
    from benchbed.sim.plan import Target, plan

    predict = {e["field"]: e.get("predict") for e in lever_table().get(diagnosis.regime, [])}
    for lever in diagnosis.levers:
        vary = predict.get(lever.field)
        if not vary:
            continue
        observed = next((e.value for e in diagnosis.evidence if e.metric == "trainer_idle_ratio"), None)
        result = plan(simulate_spec, Target("trainer_idle_ratio", "<=", TARGET_IDLE), vary, progress=progress)
        at, to, note = result.answer, result.answer_metric, ""
        if at is None:  # the target is out of reach: the best the lever alone does, and where it stops helping
            points = [(x, y) for x, y in result.curve if y is not None]
            if not points:
                diagnosis.uncertain.append(f"{basis}: no simulated point for {vary}")
                return
            best = min(y for _, y in points)
            at, to = next((x, y) for x, y in points if y <= best + 0.01)
            note = f" (the lever alone stops there: another limit binds, target idle <= {TARGET_IDLE:g} unreached)"
        if observed is None or to is None:
            return
        lever.predicted = Prediction(metric="trainer_idle_ratio", from_=observed, to=to, at=at, basis=basis)
        lever.why += f"; {lever.predicted.sentence(vary)}{note}"
        return


def prediction_spec(run_dir: Path, record_spec: Mapping[str, Any]) -> tuple[Any, str]:
    """The simulator spec to predict with: the run's own for a simulation, else calibrated from the run."""
    from benchbed.spec import build_spec

    if record_spec.get("adapter") == "sim":
        data = {k: v for k, v in record_spec.items() if k not in ("matrix", "variant")}
        return build_spec(data, f"{run_dir} (its own spec)"), "simulation of the run's spec"
    from benchbed.sim.calibrate import calibrate

    calibration = calibrate(run_dir)
    return build_spec(calibration.spec_data(), f"calibrated from {run_dir}"), "calibrated simulation"
