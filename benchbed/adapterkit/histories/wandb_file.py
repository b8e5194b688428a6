"""W&B run directories read on this machine: the `.wandb` file is wandb's record log, one `wandb_internal.Record`
protobuf message per entry, decoded with the installed wandb package's own Record type.

The entries are framed as in LevelDB's log format (documented in leveldb's doc/log_format.md, which wandb's
writer follows): a 7-byte file header (":W&B", magic 0xBEE1, format version 0), then 32 KiB blocks of chunks
`crc32 (4, little endian) | length (2) | type (1) | payload`, type FULL, or FIRST/MIDDLE/LAST for an entry split
across blocks; wandb's checksum is the IEEE CRC-32 of the type byte and the payload. A chunk that is cut off or
fails its checksum ends the reading: what came before is kept and the history is marked partial at that offset."""

from __future__ import annotations

import io
import json
import math
import re
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import orjson

from benchbed.adapterkit.gpu import match_gpu_key, samples_frame
from benchbed.adapterkit.histories.history import History, HistoryError, HistorySource, frame_from_matrix
from benchbed.adapterkit.histories.row_blocks import RowBlocks

IDENT, MAGIC, FORMAT_VERSION = b":W&B", 0xBEE1, 0
BLOCK, CHUNK_HEADER, FILE_HEADER = 32768, 7, 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
_CRC = [zlib.crc32(bytes([t])) for t in range(5)]
RUN_DIR = re.compile(r"^(?:offline-)?run-\d{8}_\d{6}-(?P<id>[A-Za-z0-9]+)$")
INSTALL_HINT = "pip install 'benchbed[wandb]'"


def find_wandb_file(path: Path) -> Path | None:
    """The `.wandb` file that `path` names: the file itself, or the one inside a run directory."""
    if path.is_file():
        return path if path.suffix == ".wandb" else None
    found = sorted(p for p in path.glob("run-*.wandb") if p.is_file()) if path.is_dir() else []
    return found[-1] if found else None


def run_dirs_under(path: Path) -> list[Path]:
    """W&B run directories under a `wandb/` folder (or the folder above it), the `latest-run` link left out."""
    out = []
    for base in (path, path / "wandb"):
        if base.is_dir():
            out += sorted(p for p in base.iterdir() if RUN_DIR.match(p.name) and not p.is_symlink() and p.is_dir())
    return [p for p in out if find_wandb_file(p) is not None]


class RecordLog:
    """The entries of a W&B record log, in order, read one 32 KiB block at a time as they are iterated (memory
    stays that of the entries in use, not of the file); once iterated, `damaged` is the offset of the damage that
    ended the reading, or None. `source` is the file, or its bytes."""

    def __init__(self, source: Path | bytes, path: Path, warnings: list[str]) -> None:
        self.source, self.path, self.warnings = source, path, warnings
        self.damaged: int | None = None
        with self._open() as fh:
            head = fh.read(FILE_HEADER)
        if head[:4] != IDENT:
            raise HistoryError(
                f"{path}: not a W&B run log (it does not start with {IDENT!r}); expected a run-*.wandb file"
            )
        if len(head) < FILE_HEADER:
            raise HistoryError(f"{path}: W&B run log cut off inside its 7-byte header ({len(head)} bytes)")
        magic, version = struct.unpack_from("<HB", head, 4)
        if magic != MAGIC or version != FORMAT_VERSION:
            raise HistoryError(
                f"{path}: W&B log format {version} (magic {magic:#06x}); this reader knows format {FORMAT_VERSION} "
                f"(magic {MAGIC:#06x}), written by wandb 0.10 to at least 0.31: upgrade benchbed, or export the run "
                "with the wandb that wrote it"
            )

    def _open(self) -> BinaryIO:
        return io.BytesIO(self.source) if isinstance(self.source, (bytes, bytearray)) else self.source.open("rb")

    def __iter__(self) -> Iterator[bytes]:
        pending: list[bytes] = []
        read = 0
        with self._open() as fh:
            for number, block in enumerate(iter(lambda: fh.read(BLOCK), b"")):
                base, pos, size = number * BLOCK, FILE_HEADER if number == 0 else 0, len(block)
                while pos < size:
                    if BLOCK - pos < CHUNK_HEADER:  # a block's last bytes too few for a header are zero padding
                        break
                    if pos + CHUNK_HEADER > size:
                        self._damage(read, base + pos, "cut off inside a chunk header")
                        return
                    crc, length, kind = struct.unpack_from("<IHB", block, pos)
                    if kind == 0 and length == 0 and crc == 0:  # zero padding left by a writer that preallocated
                        return
                    end = pos + CHUNK_HEADER + length
                    if end > size:
                        self._damage(read, base + pos, f"a chunk of {length} bytes runs past the end")
                        return
                    payload = block[pos + CHUNK_HEADER : end]
                    if kind > LAST or zlib.crc32(payload, _CRC[kind]) != crc:
                        self._damage(read, base + pos, "checksum mismatch")
                        return
                    pos = end
                    if kind == FULL:
                        read += 1
                        yield payload
                    elif kind == FIRST:
                        pending = [payload]
                    elif kind == MIDDLE:
                        pending.append(payload)
                    else:
                        pending.append(payload)
                        read += 1
                        yield b"".join(pending)
                        pending = []
        if pending:
            self._damage(read, base + pos, "the last entry is incomplete")

    def _damage(self, read: int, offset: int, why: str) -> None:
        self.damaged = offset
        self.warnings.append(
            f"{self.path}: damaged at byte {offset} ({why}); the {read} entries before it are read, the rest is lost"
        )


def chunks(data: bytes, path: Path, warnings: list[str]) -> tuple[list[bytes], int | None]:
    """(entries, offset of the damage or None): every whole entry of the log, in order, in one list."""
    log = RecordLog(data, path, warnings)
    entries = list(log)
    return entries, log.damaged


def _record_type() -> Any:
    try:
        from wandb.proto import wandb_internal_pb2
    except ImportError as exc:
        raise HistoryError(f"reading a W&B run needs the wandb package: {INSTALL_HINT}") from exc
    return wandb_internal_pb2.Record


def _key(item: Any) -> str:
    """A history key: wandb 0.19+ writes it as `nested_key` (a dict logged nested is one path, joined by '.')."""
    nested = item.nested_key
    return nested[0] if len(nested) == 1 else (item.key or ".".join(nested))


def _loads(texts: list[str]) -> list[Any]:
    """Decode many JSON values at once; wandb writes NaN and Infinity as bare tokens, which only `json` reads."""
    joined = "[" + ",".join(texts) + "]"
    try:
        return orjson.loads(joined)
    except orjson.JSONDecodeError:
        return json.loads(joined)


def _number(value: Any) -> float:
    """A number, a flag as 0/1, anything else NaN."""
    return float(value) if isinstance(value, (int, float)) else math.nan


def read_wandb_file(wandb_file: Path, uri: str | None = None, allow_empty: bool = False) -> History:
    """A W&B run's history (one row per history record: `_step`, `_timestamp`) with its config and summary; the step
    is the run's own step key where it defined one for every key (`define_metric("*", step_metric=KEY)`).
    `allow_empty` keeps a run without history rows (one process of a job that only set the config)."""
    record_type = _record_type()
    warnings: list[str] = []
    log = RecordLog(wandb_file, wandb_file, warnings)
    rows = RowBlocks()  # keys as columns in first-seen order (wandb writes each row's keys in its own order)
    config: dict[str, Any] = {}
    summaries: list[bytes] = []
    run: dict[str, str] = {}
    step_key = "_step"
    started = math.nan
    command: list[str] = []
    gpu: tuple[list[float], list[str], list[float]] = ([], [], [])  # the GPU items of the system metrics records
    skipped = 0
    for raw in log:
        record = record_type()  # a fresh message each time: re-parsing into one keeps growing its arena
        try:
            record.ParseFromString(raw)
        except Exception:  # the protobuf runtime's DecodeError: a damaged entry whose checksum still matched
            skipped += 1
            continue
        kind = record.WhichOneof("record_type")
        if kind == "history":
            items = record.history.item
            rows.row()
            rows.fill_last(list(map(_key, items)), _numbers(_loads([i.value_json or _typed_json(i) for i in items])))
        elif kind == "run":
            r = record.run
            run = {"run_id": r.run_id, "project": r.project, "name": r.display_name}
            started = r.start_time.seconds + r.start_time.nanos / 1e9 if r.HasField("start_time") else math.nan
            _apply(config, r.config.update)
        elif kind == "metric" and record.metric.glob_name == "*" and record.metric.step_metric:
            step_key = record.metric.step_metric
        elif kind == "config":
            _apply(config, record.config.update)
        elif kind == "environment":  # wandb-metadata.json's content, kept in the record log by offline runs
            command = list(record.environment.args) or command  # wandb writes a second, empty one
        elif kind == "summary":  # decoded below: the last one, or all of them when there is no history
            summaries = [raw] if rows.rows else [*summaries, raw]
        elif kind == "stats":  # system metrics, sampled by wandb beside the history (the UI's system.* charts)
            _gpu_items(record.stats, gpu)
    damaged = log.damaged
    summary: dict[str, Any] = {}
    for raw in summaries if not rows.rows else summaries[-1:]:
        record = record_type()
        record.ParseFromString(raw)
        _apply(summary, record.summary.update)
    if skipped:
        warnings.append(f"{wandb_file}: {skipped} entries could not be decoded as wandb Records; skipped")
    config.pop("_wandb", None)
    run_dir = wandb_file.parent
    in_run_dir = RUN_DIR.match(run_dir.name)
    run_id = run.get("run_id") or (in_run_dir.group("id") if in_run_dir else wandb_file.stem)
    history = History(
        source=HistorySource(
            "wandb", run_id, uri or str(wandb_file.resolve()), project=run.get("project", ""), name=run.get("name", "")
        ),
        frame=history_frame(rows, step_key),
        config=config,
        summary={k: v for k, v in summary.items() if not k.startswith("_")},
        packages=_requirements(run_dir / "files" / "requirements.txt"),
        files=[p for p in sorted(run_dir.rglob("*")) if p.is_file()] if in_run_dir else [wandb_file],
        warnings=warnings,
        partial=damaged is not None,
        started=started,
        command=command,
        system=samples_frame(*gpu),
    )
    if not rows.rows and damaged is None and not allow_empty:
        raise HistoryError(no_rows_message(str(wandb_file), history.summary))
    return history


def _gpu_items(stats: Any, into: tuple[list[float], list[str], list[float]]) -> None:
    """The GPU items of one system metrics record (wandb's `StatsRecord`: a timestamp and key/value_json items)."""
    wall = stats.timestamp.seconds + stats.timestamp.nanos / 1e9
    for item in stats.item:
        if match_gpu_key(item.key) is None:
            continue
        try:
            value = float(json.loads(item.value_json))
        except (ValueError, TypeError):
            continue
        into[0].append(wall)
        into[1].append(item.key)
        into[2].append(value)


def _numbers(values: list[Any]) -> np.ndarray:
    """One row's values as doubles (a flag as 0/1, anything else that is not a number NaN)."""
    try:
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        return np.asarray([_number(v) for v in values], dtype=float)


def history_frame(rows: RowBlocks, step_key: str = "_step") -> Any:
    """The history frame around the rows' one matrix; `step_key` (`_step` unless the run named its own) and
    `_timestamp` become `step` and `wall_time`; other `_` keys and keys with no number are left out."""
    keys, matrix, n = rows.keys(), rows.matrix(), rows.rows
    columns = {k: matrix[:, j] for j, k in enumerate(keys)}
    counter = columns.get("_step", np.arange(n, dtype=float))
    step = columns.get(step_key, counter)  # a row without the run's own step key keeps wandb's counter
    wall = columns.get("_timestamp", np.full(n, np.nan))
    left_out = {k for k, v in columns.items() if k.startswith("_") or k == step_key or np.isnan(v).all()}
    steps = np.where(np.isnan(step), np.where(np.isnan(counter), np.arange(n), counter), step).astype(np.int64)
    return frame_from_matrix(steps, wall, keys, matrix, left_out=left_out)


def add_api_row(rows: RowBlocks, row: dict[str, Any]) -> None:
    """One row as wandb's API returns it (`_step`, `_timestamp` and the logged keys), read by `history_frame`."""
    rows.row()
    rows.fill_last(list(row), _numbers(list(row.values())))


def no_rows_message(path: str, summary: dict[str, Any]) -> str:
    if summary:
        shown = ", ".join(sorted(summary)[:5])
        return (
            f"{path}: this W&B run has only summary values ({shown}{' ...' if len(summary) > 5 else ''}) and no "
            "history rows: there are no per-step figures to measure"
        )
    return f"{path}: this W&B run logged no history rows"


def _typed_json(item: Any) -> str:
    """A history value that a newer wandb sent typed rather than as JSON text."""
    which = item.WhichOneof("value")
    if which in ("number", "integer"):
        return repr(float(getattr(item, which)))
    if which == "boolean":
        return "true" if item.boolean else "false"
    if which == "json":
        return item.json
    return "null"


def _apply(target: dict[str, Any], updates: Any) -> None:
    """Config/summary updates into a nested dict (`nested_key` paths, `value_json` values)."""
    for item in updates:
        path = list(item.nested_key) or [item.key]
        try:
            value = json.loads(item.value_json) if item.value_json else None
        except ValueError:
            value = item.value_json
        node = target
        for part in path[:-1]:
            node = node.setdefault(part, {}) if isinstance(node.get(part), dict) or part not in node else {}
        node[path[-1]] = (
            value.get("value", value) if isinstance(value, dict) and set(value) == {"value", "desc"} else value
        )


_REQ = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*==\s*([^\s;#]+)", re.MULTILINE)


def _requirements(path: Path) -> dict[str, str]:
    """name -> version from the requirements.txt wandb saves with a run (what `pip freeze` said)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return {}
    return {m.group(1).lower().replace("_", "-"): m.group(2) for m in _REQ.finditer(text)}
