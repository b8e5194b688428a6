"""The one-way flow: spec → plan → launch → trace → metrics → record, and ingest of existing artifacts."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from benchbed import keys as K
from benchbed.adapter import Adapter, LaunchPlan, available_adapters, get_adapter
from benchbed.adapterkit.gpu import samples_frame, with_samples
from benchbed.adapterkit.wandb_summary import summary_keys, summary_message
from benchbed.errors import AdapterError, BenchbedError, RunFailedError, TraceError
from benchbed.launch.base import Launcher, LaunchResult, get_launcher
from benchbed.launch.gpu_sampler import SAMPLES_FILENAME, gpu_sampling, read_samples
from benchbed.launch.signals import interrupt_for, signal_name, stop_signals_held
from benchbed.metrics import compute_metrics
from benchbed.record import AdapterInfo, ErrorInfo, RunRecord, SuiteInfo, benchbed_info, machine_info, utc_now
from benchbed.secrets import redact, redact_mapping, secret_values
from benchbed.spec.model import ExperimentSpec
from benchbed.store import RECORD_FILENAME, Store
from benchbed.trace import TRACE_FILENAME, ImpossibleValueError, Trace

NATIVE_DIRNAME = "native"


@dataclass
class RunOutcome:
    run_dir: Path
    record: RunRecord
    trace: Trace | None


def _new_record(spec_data: dict, spec_id: str, adapter_name: str, launcher: str) -> RunRecord:
    return RunRecord(
        spec=redact_mapping(spec_data),  # type: ignore[arg-type]
        spec_id=spec_id,
        adapter=AdapterInfo(name=adapter_name),
        benchbed=benchbed_info(),
        machine=machine_info(),
        launcher=launcher,
    )


def _ingest_record(
    name: str, source: str, adapter_name: str, resources: dict[str, Any] | None, quality_target: str | None
) -> RunRecord:
    """The record of ingesting `source` as `ingest-<name>`: its id carries a hash of the source, its spec the
    [resources] table and the [quality] target where given."""
    spec_data: dict[str, Any] = {"name": f"ingest-{name}", "adapter": adapter_name, "source": source}
    if resources:
        spec_data["resources"] = resources
    if quality_target:
        spec_data["quality"] = {"target": quality_target}
    spec_id = f"ingest-{name}-{hashlib.sha256(source.encode()).hexdigest()[:8]}"
    return _new_record(spec_data, spec_id, adapter_name, "ingest")


def _finish(record: RunRecord, store: Store, run_dir: Path, trace: Trace | None, warmup_steps: int) -> None:
    """Attach what the trace says (framework, mode, metrics, warnings), write it, finalise the record.

    Whatever stops this (a stop signal or an error while the metrics are computed), the record is written with a
    final status before the exception goes on; the write itself holds stop signals until it is done."""
    stopped: BaseException | None = None
    try:
        if trace is not None:
            _measure(record, run_dir, trace, warmup_steps)
    except KeyboardInterrupt as exc:
        stopped = exc
        record.status = "partial" if record.status == "succeeded" else "failed"
        record.metrics = {}
        message = f"benchbed was interrupted ({signal_name(exc)}) while computing the metrics"
        record.error = record.error or ErrorInfo(message=f"{message}; the run's artifacts are in {run_dir}")
    except Exception as exc:
        stopped = exc
        record.status, record.metrics = "failed", {}
        message = f"benchbed failed computing the metrics: {type(exc).__name__}: {exc}"
        record.error = record.error or ErrorInfo(message=redact(message))
    started = record.started_at
    record.finished_at = utc_now().isoformat()
    record.duration_s = (utc_now() - datetime.fromisoformat(started)).total_seconds()
    with stop_signals_held():
        store.save(run_dir, record)
    if stopped is not None:
        raise stopped


def _has_value(value: object) -> bool:
    return value is not None and not (isinstance(value, float) and value != value)


def _measure(record: RunRecord, run_dir: Path, trace: Trace, warmup_steps: int) -> None:
    meta = trace.meta
    record.adapter.framework = meta.framework
    record.adapter.version = meta.framework_version
    record.adapter.mode = meta.mode
    warnings = list(meta.warnings)
    if isinstance(record.spec.get("resources"), dict):
        meta.extra.setdefault("resources", record.spec["resources"])  # GPU counts and prices for cost metrics
    if isinstance(record.spec.get("quality"), dict) and record.spec["quality"].get("target"):
        meta.extra.setdefault("quality_target", record.spec["quality"]["target"])  # for the learning metrics
    trace = _with_sampled_gpus(trace, run_dir, warnings)
    record.metrics = compute_metrics(trace, warmup_steps=warmup_steps, warnings=warnings)
    record.warnings.extend(redact(w) for w in warnings)
    record.trace_events = len(trace.events)
    meta.warnings = [redact(w) for w in meta.warnings]
    target = run_dir / TRACE_FILENAME
    if not target.exists():  # a trace the launch wrote itself (sim, sandbox-bench) is kept as written
        trace.write(target)
    if meta.partial and record.status == "succeeded":
        record.status = "partial"
    if record.status == "succeeded" and not any(_has_value(m.value) for m in record.metrics.values()):
        steps = (trace.events["key"] == K.TRAINER_STEP).sum() if len(trace.events) else 0
        why = "no figure came out" if steps else "no trainer step was read (no per-step trainer timing in the input)"
        record.status = "partial"
        record.warnings.append(f"no metric could be computed: {why}; the record is kept as partial")


def _with_sampled_gpus(trace: Trace, run_dir: Path, warnings: list[str]) -> Trace:
    """The trace with the GPU samples benchbed took during the launch (gpu_samples.jsonl), in the steps they fell in
    (by the trainer.step spans); they stay in the file alone where the trace has no epoch origin or no step spans."""
    path = run_dir / SAMPLES_FILENAME
    if not path.is_file():
        return trace
    origin = trace.meta.extra.get("epoch_origin")
    steps = trace.events[(trace.events["key"] == K.TRAINER_STEP) & (trace.events["kind"] == "span")]
    if not isinstance(origin, int | float) or not len(steps):
        warnings.append(f"{path}: the GPU samples are not in the trace: the {trace.meta.adapter} trace has no "
                        "wall-clock origin or no timed trainer steps to place them in")  # fmt: skip
        return trace
    samples = samples_frame(*read_samples(path, warnings))
    ends = steps["t1"].to_numpy(dtype=float) + float(origin)
    return with_samples(trace, samples, float(origin), steps["step"].to_numpy(), ends)


def render(spec: ExperimentSpec, run_dir: Path) -> tuple[Adapter, LaunchPlan]:
    """The adapter and its launch plan; an adapter's refusal names the spec file it came from."""
    adapter = get_adapter(spec.adapter)
    try:
        return adapter, adapter.render(spec, run_dir)
    except BenchbedError as exc:
        message = str(exc)
        if message.startswith(spec.source):
            raise
        raise type(exc)(f"{spec.source}: {message}") from exc


def preflight(specs: list[ExperimentSpec], store: Store, launcher: Launcher | None = None) -> None:
    """Render every spec (each matrix point) before the first launches, and let the launcher check what it needs
    (`Launcher.preflight`), so a bad point fails now, not hours into a sweep; nothing is created."""
    for spec in specs:
        run_dir = store.propose_run_dir("preflight", spec.adapter, spec.spec_id, "")
        _, plan = render(spec, run_dir)
        if launcher is not None:
            launcher.preflight(spec, plan, run_dir)


def execute(
    spec: ExperimentSpec,
    store: Store,
    on_line: Callable[[str], None] | None = None,
    timeout_s: float | None = None,
    suite: SuiteInfo | None = None,
    launcher: str | Launcher = "local",
    on_run_dir: Callable[[Path], None] | None = None,
) -> RunOutcome:
    """Launch one spec (its `repeat`-th run) with `launcher` (a registered launcher name or a built Launcher), keep its
    artifacts in a fresh run directory, and record the result. `on_run_dir` is told the directory before the launch
    (benchbed run --watch follows it)."""
    launcher = get_launcher(launcher) if isinstance(launcher, str) else launcher
    record = _new_record(spec.model_dump(mode="json"), spec.spec_id, spec.adapter, launcher.name)
    record.repeat, record.suite = spec.repeat, suite
    while True:
        run_dir = store.propose_run_dir(record.machine.name, spec.adapter, spec.spec_id, record.benchbed.commit)
        adapter, plan = render(spec, run_dir)  # invalid specs fail here, before anything is stored
        if store.claim(run_dir):
            break
    store.save(run_dir, record)
    trace: Trace | None = None
    result: LaunchResult | None = None
    try:
        if on_run_dir is not None:
            on_run_dir(run_dir)
        with gpu_sampling(run_dir) if launcher.name == "local" else contextlib.nullcontext():  # this machine's GPUs
            result = launcher.launch(spec, plan, run_dir, timeout_s=timeout_s or spec.timeout_s, on_line=on_line)
        record.launch = result.info
        record.warnings.extend(redact(w) for w in result.warnings)
        died: RunFailedError | None = None
        if result.ok and result.remote:
            trace = _parse_remote_outputs(adapter, run_dir, record, result)
        else:
            trace, died = _try_parse(adapter, run_dir, record, required=result.ok)
        if result.ok:
            if record.status == "started":
                record.status = "succeeded" if trace is not None else "failed"
        else:
            record.status = "partial" if trace is not None and len(trace.events) else "failed"
            died_on = f": {redact(died.error)}" if died else ""
            record.error = ErrorInfo(
                message=_failure_message(result) + died_on, exit_code=result.exit_code, log_tail=result.log_tail()
            )
    except BenchbedError as exc:
        record.status = "failed"
        record.error = ErrorInfo(message=redact(str(exc)), exit_code=result.exit_code if result else None)
    except KeyboardInterrupt as exc:  # a stop signal outside the launch itself (while parsing, say)
        record.status = "failed"
        record.error = ErrorInfo(message=f"benchbed was interrupted ({signal_name(exc)}) after the launch")
        raise
    except Exception as exc:  # benchbed's own failure (a full disk, say): the record says so, never `started`
        record.status = "failed"
        record.error = ErrorInfo(message=redact(f"benchbed failed: {type(exc).__name__}: {exc}"))
        raise
    finally:
        _finish(record, store, run_dir, trace, spec.warmup_steps)
    if result is not None and result.interrupted:
        raise interrupt_for(result.stop_signal)
    return RunOutcome(run_dir, record, trace)


def _failure_message(result: LaunchResult) -> str:
    if result.failure and not (result.timed_out or result.interrupted):
        return f"{redact(result.failure)} after {result.duration_s:.1f}s"
    interrupted = f"interrupted by {result.stop_signal}" if result.stop_signal else "interrupted"
    reason = "timed out" if result.timed_out else interrupted if result.interrupted else "exited"
    job = f" ({result.info.scheduler} job {result.info.job_id})" if result.info and result.info.job_id else ""
    return f"launch{job} {reason} (exit code {result.exit_code}) after {result.duration_s:.1f}s"


def _parse_remote_outputs(adapter: Adapter, run_dir: Path, record: RunRecord, result: LaunchResult) -> Trace | None:
    """A job that succeeded on a cluster but whose outputs benchbed cannot read is partial, never a success."""
    try:
        return adapter.parse(run_dir)
    except BenchbedError as exc:
        job = f"{result.info.scheduler} job {result.info.job_id}" if result.info else "the job"
        record.status = "partial"
        record.error = ErrorInfo(
            message=f"{job} succeeded but its outputs could not be read from {run_dir} ({redact(str(exc))}); "
            "a remote run needs --store on a filesystem both benchbed and the job's nodes see",
            exit_code=result.exit_code,
            log_tail=result.log_tail(),
        )
        return None


def _try_parse(
    adapter: Adapter, run_dir: Path, record: RunRecord, required: bool
) -> tuple[Trace | None, RunFailedError | None]:
    """The run's trace; for a failed launch, no trace and either what its log shows it died on (a traceback before
    its first step) or a warning saying why no trace was recovered."""
    try:
        return adapter.parse(run_dir), None
    except RunFailedError as exc:
        if required:
            raise
        record.adapter.framework = exc.framework
        return None, exc
    except BenchbedError as exc:
        if required:
            raise
        record.warnings.append(f"no trace recovered from the failed run: {redact(str(exc))}")
        return None, None


class SeveralRunsError(BenchbedError):
    """A directory given to ingest holds more than one run of the adapter; `runs` lists them."""

    def __init__(self, path: Path, adapter_name: str, runs: list[Path]) -> None:
        self.runs = runs
        shown = ", ".join(str(r) for r in runs[:MAX_LISTED])
        shown += f", … ({len(runs)} in all)" if len(runs) > MAX_LISTED else ""
        super().__init__(
            f"{path}: holds {len(runs)} {adapter_name} runs; pass one of them, or --all to ingest each: {shown}"
        )


MAX_LISTED = 20  # candidates named in a SeveralRunsError message


def find_runs(path: Path, adapter_name: str) -> list[Path]:
    """The runs of this adapter at `path`: what the adapter's `find_runs` discovers under a directory, else `path`."""
    path = Path(path)
    check_readable_input(path)
    runs = get_adapter(adapter_name).find_runs(path) if path.is_dir() else [path]
    return runs or [path]  # nothing marked a run: the adapter's parse says why


def ingest(
    path: Path,
    adapter_name: str,
    store: Store,
    warmup_steps: int = 1,
    resources: dict[str, Any] | None = None,
    found: Mapping[str, str] | None = None,
    quality_target: str | None = None,
) -> RunOutcome:
    """Parse an existing run (file or directory) into the store, with a copy of the native artifacts.

    `resources` (a [resources] table: GPU counts, prices) goes into the record's spec for the cost metrics;
    `found`: credentials the run's tracker history holds, kept out of the copy (see copy_native); `quality_target`
    (a benchbed.quality.Target's text) goes into the record's spec as its [quality] table.
    A directory that holds several runs of the adapter is refused with SeveralRunsError naming them."""
    path = Path(path)
    runs = find_runs(path, adapter_name)
    if len(runs) > 1:
        raise SeveralRunsError(path, adapter_name, runs)
    adapter = get_adapter(adapter_name)
    source = str(path.resolve())
    record = _ingest_record(path.name, source, adapter_name, resources, quality_target)  # its clock starts now
    refuse_summary(path, whole=True)  # a pasted W&B summary is no adapter's to read, however lenient its parser
    trace: Trace | None = None
    try:
        with _no_traceback_from_bytes(path):
            trace = adapter.parse(path)  # unreadable input fails here, before anything is stored
    except RunFailedError as exc:  # the framework's log of a run that died before its first step: a failed run
        record.adapter.framework = exc.framework
        record.error = ErrorInfo(message=redact(str(exc)), log_tail=redact(exc.log_tail))
    except AdapterError:
        refuse_summary(path)  # a log the adapter cannot read that ends in wandb's summary block: say so
        raise
    from benchbed.adapterkit.histories.credentials import run_dir_secrets

    found = {**run_dir_secrets(path), **(found or {})}  # a W&B run kept in the run directory: its own credentials
    run_dir = store.new_run_dir(record.machine.name, adapter_name, record.spec_id, record.benchbed.commit)
    try:
        record.warnings.extend(copy_native(path, run_dir / NATIVE_DIRNAME, found))
        record.status = "succeeded" if trace is not None else "failed"
        _finish(record, store, run_dir, trace, warmup_steps)
    except BaseException:  # nothing half-written: an ingest that cannot finish leaves no run behind
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    return RunOutcome(run_dir, record, trace)


def _impossible_in_history(history: Any, exc: ImpossibleValueError) -> str:
    """The refusal of an impossible duration or count, said of the history: its source, its run, the native keys
    that hold a negative or infinite value at those steps, and the steps."""
    import numpy as np

    frame = history.frame
    at = frame[frame["step"].isin(exc.steps)]
    native = [k for k in history.keys if ((at[k] < 0) | np.isinf(at[k].to_numpy(dtype=float))).any()]
    steps = ", ".join(map(str, exc.steps[:10]))
    shown = ", ".join(f"{k} = {at[k][np.isinf(at[k]) | (at[k] < 0)].iloc[0]:g}" for k in native[:3]) or exc.key
    return (f"{history.source.uri} (run {history.source.run_id}): {shown} at step(s) {steps}: {exc.key} is a "
            "duration or count, never negative or infinite")  # fmt: skip


@contextlib.contextmanager
def _no_traceback_from_bytes(where: str | Path) -> Iterator[None]:
    """Text that is not UTF-8, or JSON nested past Python's recursion limit, where an adapter's reader did not
    expect it: one AdapterError naming the input, never a traceback."""
    try:
        yield
    except UnicodeDecodeError as exc:
        raise AdapterError(f"{where}: a file of the run is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except RecursionError:
        raise AdapterError(f"{where}: a record of the run is nested too deeply to read") from None


def refuse_summary(path: Path, whole: bool = False) -> None:
    """Refuse a W&B run summary (wandb-summary.json, or wandb's printed `Run summary:` block) with one line that
    says what it is and whose keys it holds: final values only, no per-step history to measure."""
    keys = summary_keys(Path(path), whole=whole)
    if keys is not None:
        raise AdapterError(summary_message(Path(path), keys, recognising_adapters(keys)))


def recognising_adapters(keys: list[str]) -> list[str]:
    """The registered adapters whose key maps recognise a history with these keys (see FrameworkAdapter.recognises)."""
    found = []
    for name in available_adapters():
        try:
            adapter = get_adapter(name)
        except AdapterError:
            continue
        if adapter.recognises(keys):
            found.append(name)
    return found


def ingest_history(
    location: str | Path,
    adapter_name: str | None,
    store: Store,
    warmup_steps: int = 1,
    resources: dict[str, Any] | None = None,
    progress: Callable[[int, int | None], None] | None = None,
    quality_target: str | None = None,
) -> RunOutcome:
    """Read a tracker's history of a run (W&B, MLflow, TensorBoard; see benchbed.adapterkit.histories) into the
    store through the adapter's key map; without `adapter_name`, the one adapter that recognises the history.
    Nothing is stored when the history cannot be opened or no single adapter reads it."""
    from benchbed.adapterkit.histories import history_kind, open_history
    from benchbed.adapterkit.histories.credentials import history_secrets, mask_history

    kind = history_kind(location)
    history = open_history(location, progress=progress)
    if history.partial and not history.keys:  # damaged before its first step: say where, not "no known keys"
        damage = next((w for w in history.warnings if "damaged at byte" in w), history.source.uri)
        raise BenchbedError(f"{damage}; no step was logged before the damage, so there is nothing to measure")
    found = history_secrets(history)  # credentials the run itself holds: masked before any adapter sees them
    mask_history(history, found)
    if adapter_name is None:
        candidates = recognising_adapters(history.keys)
        if len(candidates) != 1:
            shown = ", ".join(history.keys[:6]) + (" ..." if len(history.keys) > 6 else "")
            which = (
                f"several adapters recognise it ({', '.join(candidates)})" if candidates else "no adapter recognises it"
            )
            raise BenchbedError(f"{history.source.uri}: {which} (keys: {shown}); name one with --adapter")
        adapter_name = candidates[0]
    adapter = get_adapter(adapter_name)
    support = adapter.history()
    if support is None or kind not in support.kinds:
        # the adapter reads these files with its own parser (slime: its TensorBoard event files)
        if Path(location).exists():
            return ingest(Path(location), adapter_name, store, warmup_steps, resources, found, quality_target)
        raise AdapterError(f"the {adapter_name} adapter reads no tracker histories ({history.source.uri})")
    source = history.source.uri
    name = f"{history.source.tracker}-{history.source.run_id}"
    record = _ingest_record(name, source, adapter_name, resources, quality_target)
    try:
        with _no_traceback_from_bytes(source):  # unreadable: fails here, before anything is stored
            trace = support.parse(history).validate()
    except ImpossibleValueError as exc:
        raise TraceError(_impossible_in_history(history, exc)) from None
    run_dir = store.new_run_dir(record.machine.name, adapter_name, record.spec_id, record.benchbed.commit)
    try:
        native = run_dir / NATIVE_DIRNAME
        native.mkdir(parents=True, exist_ok=True)
        history.frame.to_parquet(native / "history.parquet", index=False)
        root = Path(os.path.commonpath([str(p.parent) for p in history.files])) if history.files else None
        for file in history.files:
            target = native / file.parent.relative_to(root)  # type: ignore[arg-type]
            record.warnings.extend(copy_native(file, target, found, "; the figures are in native/history.parquet"))
        record.status = "succeeded"
        _finish(record, store, run_dir, trace, warmup_steps)
    except BaseException:  # nothing half-written: an ingest that cannot finish leaves no run behind
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    return RunOutcome(run_dir, record, trace)


def check_readable_input(path: Path) -> None:
    """Refuse what cannot be ingested before reading it: a missing path, a device (/dev/zero reads forever),
    a FIFO (blocks forever), a socket, or a file or directory this user cannot read."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise BenchbedError(f"{path}: no such file or directory; pass a run directory or a log file") from None
    except OSError as exc:
        raise BenchbedError(f"{path}: cannot read ({exc.strerror}); pass a run directory or a log file") from None
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        kind = (
            "a FIFO"
            if stat.S_ISFIFO(mode)
            else "a device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else ("a socket")
        )
        raise BenchbedError(f"{path}: is {kind}, not a file or directory; pass a run directory or a log file")
    if not os.access(path, os.R_OK | (os.X_OK if stat.S_ISDIR(mode) else 0)):
        raise BenchbedError(f"{path}: cannot read (permission denied); pass a run directory or a log file")


def copy_native(source: Path, target: Path, found: Mapping[str, str] | None = None, note: str = "") -> list[str]:
    """Copy a run's native artifacts into the store (regular files only, links never followed), masking in text
    files the secret values found in this environment and `found` ({credential: where the run holds it}); a binary
    file (a .wandb record log, a SQLite store) that holds one is left out, not copied verbatim. Returns a warning
    for each kind of thing left out (`note` added to the warning for a file left out for a credential)."""
    origins = {v: "an exported secret's value" for v in secret_values()} | dict(found or {})
    secrets = sorted(origins, key=len, reverse=True)
    skipped: dict[str, list[str]] = {}
    withheld: list[str] = []

    def copy(src: Path, dst: Path) -> None:
        try:
            if src.is_symlink():
                skipped.setdefault("symbolic link(s), not followed", []).append(str(src))
                return
            if not src.is_file():
                skipped.setdefault("special file(s) (FIFO, device, socket)", []).append(str(src))
                return
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.stat().st_size > _WHOLE_COPY_LIMIT:  # copied a chunk at a time; one holding a credential left out
                if (held := _copy_in_chunks(src, dst, secrets)) is not None:
                    withheld.append(f"native copy: left out {src}: it holds a credential ({origins[held]}){note}")
                return
            data = src.read_bytes()
            try:
                text = data.decode() if secrets else None
            except UnicodeDecodeError:
                text = None
            if text is None and (held := _held_credential(data, secrets)) is not None:
                withheld.append(f"native copy: left out {src}: it holds a credential ({origins[held]}){note}")
            elif text is None:
                dst.write_bytes(data)
                shutil.copystat(src, dst)
            else:
                dst.write_text(redact(text, secrets))
        except PermissionError:
            skipped.setdefault("unreadable file(s)", []).append(str(src))

    os.makedirs(target, exist_ok=True)
    if source.is_dir():

        def unreadable(exc: OSError) -> None:
            skipped.setdefault("unreadable directory(ies)", []).append(str(exc.filename))

        for folder, dirs, files in os.walk(source, onerror=unreadable):  # never follows links to directories
            here = Path(folder)
            for name in dirs:
                if (here / name).is_symlink():
                    skipped.setdefault("symbolic link(s), not followed", []).append(str(here / name))
            for name in files:
                if name in (RECORD_FILENAME, TRACE_FILENAME):
                    continue
                copy(here / name, target / (here / name).relative_to(source))
    else:
        copy(source, target / source.name)
    return withheld + [
        f"native copy: left out {len(paths)} {what}: {', '.join(paths[:3])}{' ...' if len(paths) > 3 else ''}"
        for what, paths in skipped.items()
    ]


_WHOLE_COPY_LIMIT = 64 << 20  # bytes: a larger native file is copied in chunks, never held whole


def _copy_in_chunks(src: Path, dst: Path, secrets: list[str], chunk: int = 8 << 20) -> str | None:
    """Copy `src` to `dst` a chunk at a time, each chunk searched for the secrets together with the end of the one
    before (a value split across two chunks is found); the first secret found (the copy removed), else None."""
    overlap = max((len(json.dumps(v).encode()) for v in secrets), default=0)
    tail = b""
    with src.open("rb") as fh, dst.open("wb") as out:
        while block := fh.read(chunk):
            if (held := _held_credential(tail + block, secrets)) is not None:
                out.close()
                dst.unlink()
                return held
            out.write(block)
            tail = block[-overlap:] if overlap else b""
    shutil.copystat(src, dst)
    return None


def _held_credential(data: bytes, secrets: list[str]) -> str | None:
    """The first secret whose bytes (as written, or escaped as in a JSON string) occur in `data`."""
    for value in secrets:
        forms = {value.encode(), json.dumps(value)[1:-1].encode(), json.dumps(value, ensure_ascii=False)[1:-1].encode()}
        if any(form in data for form in forms):
            return value
    return None
