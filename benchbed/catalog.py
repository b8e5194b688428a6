"""The store catalog: one parquet index per machine directory (`<store>/_catalog/<machine>.parquet`), so `ls`,
`history` and `nightly` query a table instead of reading and validating every record.json.

The records stay the only source of truth; the catalog is derived from them and can be deleted at any time.
Each record write updates its machine's index under a lock (temp file, fsync, rename), announced beforehand by a
pending marker so a writer that dies between the record and the index leaves a note to the next reader. A reader
reconciles before it answers: a missing or older-format index is rebuilt from the records, a run directory added
or removed behind benchbed's back (a copy from another machine, an `rm -r`) is found by listing the spec
directories whose modification time moved, and pending markers are re-read."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from benchbed.errors import OutputError, StoreError
from benchbed.liveness import pid_alive
from benchbed.metrics.registry import listed_columns
from benchbed.outputs import open_output, write_output

if TYPE_CHECKING:
    from benchbed.record import RunRecord

CATALOG_DIRNAME = "_catalog"
CATALOG_VERSION = 1
RECORD_FILENAME = "record.json"
_PENDING = "pending"
_META_KEY = b"benchbed.catalog"
FLAT_METRICS = tuple(listed_columns())  # metrics also kept as columns, for `ls` (the registry names them)

_METRIC = pa.struct([("name", pa.string()), ("value", pa.float64()), ("unit", pa.string())])
SCHEMA = pa.schema([
    ("path", pa.string()), ("machine", pa.string()), ("adapter", pa.string()), ("spec_id", pa.string()),
    ("run_id", pa.string()), ("started_at", pa.string()), ("status", pa.string()), ("mode", pa.string()),
    ("framework", pa.string()), ("framework_version", pa.string()), ("benchbed_commit", pa.string()),
    ("repeat", pa.int64()), ("suite", pa.string()), ("entry", pa.string()), ("night", pa.string()),
    ("watch", pa.string()), ("gate", pa.string()), ("error", pa.string()), ("metrics", pa.list_(_METRIC)),
    *((name, pa.float64()) for name in FLAT_METRICS),
])  # fmt: skip
_TEXT = pa.dictionary(pa.int32(), pa.string())
# SCHEMA with each text column, and each metric's name and unit, as a dictionary array: what history reads
DICTIONARY_SCHEMA = pa.schema([
    pa.field(f.name, _TEXT) if f.type == pa.string()
    else pa.field(f.name, pa.list_(pa.struct([("name", _TEXT), ("value", pa.float64()), ("unit", _TEXT)])))
    if f.name == "metrics" else f
    for f in SCHEMA
])  # fmt: skip


def read_record(path: Path) -> RunRecord:
    """Load a record.json (or the one in a run directory); refuse unknown format versions. (pydantic and the
    record models load here, on the first record read: a query answered from the index needs neither.)"""
    from pydantic import ValidationError

    from benchbed.record import FORMAT_VERSION, RunRecord

    path = Path(path)
    if path.is_dir():
        path = path / RECORD_FILENAME
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise StoreError(f"{path}: no run record here; expected a run directory written by benchbed") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise StoreError(f"{path}: record is not valid JSON ({exc})") from exc
    except OSError as exc:
        raise StoreError(f"{path}: cannot read the run record ({exc.strerror})") from None
    version = data.get("format_version") if isinstance(data, dict) else None
    if version != FORMAT_VERSION:
        newer = isinstance(version, int) and version > FORMAT_VERSION
        action = "upgrade benchbed to read it" if newer else "it was not written by this benchbed"
        raise StoreError(
            f"{path}: record format_version {version!r} is not supported "
            f"(this benchbed reads version {FORMAT_VERSION}); {action}"
        )
    try:
        return RunRecord.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise StoreError(f"{path}: record field '{where}': {first['msg']}") from exc


def catalog_row(rel: str, record: RunRecord | None, error: str | None = None) -> dict[str, Any]:
    """One index row: `rel` is machine-dir/adapter/spec_id/run relative to the store; an unreadable record keeps
    its path and the error that says why, so `ls` can warn about it without reading it again."""
    machine, adapter, spec_id, _ = rel.split("/")
    row: dict[str, Any] = dict.fromkeys(SCHEMA.names)
    row.update(path=rel, machine=machine, adapter=adapter, spec_id=spec_id, error=error, metrics=[])
    if record is None:
        return row
    suite = record.suite
    row.update(
        machine=record.machine.name, adapter=record.adapter.name, spec_id=record.spec_id, run_id=record.run_id,
        started_at=record.started_at, status=record.status, mode=record.adapter.mode,
        framework=record.adapter.framework, framework_version=record.adapter.version,
        benchbed_commit=record.benchbed.commit, repeat=record.repeat,
        suite=suite.name if suite else None, entry=suite.entry if suite else None,
        night=suite.night if suite else None, watch=",".join(suite.watch) if suite else None,
        gate=suite.gate.model_dump_json() if suite else None,
        metrics=[{"name": k, "value": v.value, "unit": v.unit} for k, v in record.metrics.items()],
        **{name: record.metrics[name].value if name in record.metrics else None for name in FLAT_METRICS},
    )  # fmt: skip
    return row


@dataclass
class _Index:
    """One machine's rows (an Arrow table in path order) and its spec directories' mtimes when last listed."""

    rows: pa.Table
    dirs: dict[str, int]

    def paths(self, prefix: str = "") -> set[str]:
        column = self.rows.column("path")
        if prefix:
            column = column.filter(pc.starts_with(column, prefix))
        return set(column.to_pylist())

    def drop(self, paths: set[str]) -> None:
        if paths:
            self.rows = self.rows.filter(pc.invert(pc.is_in(self.rows.column("path"), pa.array(sorted(paths)))))

    def add(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            self.drop({r["path"] for r in rows})
            self.rows = pa.concat_tables([self.rows, pa.Table.from_pylist(rows, schema=SCHEMA)])

    def table(self) -> pa.Table:
        meta = json.dumps({"version": CATALOG_VERSION, "dirs": self.dirs}).encode()
        return self.rows.sort_by("path").replace_schema_metadata({_META_KEY: meta})


class Catalog:
    """The index of one store. `save` is how benchbed writes a record into a store."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.dir = self.root / CATALOG_DIRNAME

    # writing -------------------------------------------------------------------------------------------------

    def save(self, run_dir: Path, record: RunRecord, write: Callable[[Path, RunRecord], Path]) -> Path:
        """Write a record with `write(run_dir, record)` and index it: a pending marker first (so a writer that dies
        before the index is updated leaves a note), then the record, then the index row under the machine lock.
        A store with no index yet is left for the first reader to index."""
        rel = self._rel(run_dir)
        machine = rel.split("/")[0]
        try:
            marker: Path | None = self._mark(rel)
        except (OSError, OutputError):  # a full disk, say: the record still goes first
            marker = None
        path = write(run_dir, record)
        try:
            with self._locked(machine):
                index = self._load(machine)
                if index is not None:
                    index.add([catalog_row(rel, record)])
                    self._store(machine, index)
        except (OSError, OutputError):  # the record is written; the marker tells the next reader to index it
            if marker is None:  # no marker either: drop the index (freeing space), the next reader rebuilds it
                with contextlib.suppress(OSError):
                    self._path(machine).unlink(missing_ok=True)
            return path
        if marker is not None:
            marker.unlink(missing_ok=True)
        return path

    def _mark(self, rel: str) -> Path:
        folder = self.dir / _PENDING / rel.split("/")[0]
        folder.mkdir(parents=True, exist_ok=True)
        marker = folder / f"{uuid.uuid4().hex}.json"
        write_output(marker, json.dumps({"path": rel, "pid": os.getpid(), "host": socket.gethostname()}))
        return marker

    # reading -------------------------------------------------------------------------------------------------

    def table(
        self, machine: str | None = None, columns: list[str] | None = None, dictionaries: bool = False
    ) -> pa.Table:
        """Every run's row (or one machine directory's), reconciled with the records first; `columns` limits what
        is read (leaving out `metrics` keeps `ls` on 100,000 runs cheap). With `dictionaries`, text comes as
        dictionary arrays (DICTIONARY_SCHEMA), decoded from the index without a string per row: a store's
        history reads its 600,000 metric names and units in a third of the time."""
        names = [machine] if machine is not None else self._machines()
        full = DICTIONARY_SCHEMA if dictionaries else SCHEMA
        schema = pa.schema([full.field(c) for c in columns]) if columns else full
        tables = [self._reconciled(name, columns, dictionaries) for name in names if (self.root / name).is_dir()]
        return pa.concat_tables(tables).cast(schema) if tables else schema.empty_table()

    def _machines(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(e.name for e in os.scandir(self.root) if e.is_dir() and not e.name.startswith(("_", ".")))

    def _reconciled(self, machine: str, columns: list[str] | None, dictionaries: bool) -> pa.Table:
        """The machine's rows brought up to date with its directories and pending markers; the index is saved when
        it moved and the store is writable (a read-only store is answered from what was computed)."""
        schema = pa.schema([(DICTIONARY_SCHEMA if dictionaries else SCHEMA).field(c) for c in columns or SCHEMA.names])
        if self._current(machine):
            text = [f.name for f in schema if f.type == _TEXT] + (["metrics.list.element.name",
                    "metrics.list.element.unit"] if dictionaries and "metrics" in schema.names else [])  # fmt: skip
            try:
                with pq.ParquetFile(self._path(machine), read_dictionary=text) as index_file:  # not read_table:
                    table = index_file.read(columns=columns)  # its dataset machinery imports pandas (0.3 s)
                return table.replace_schema_metadata(None).cast(schema)
            except (OSError, pa.ArrowException):
                pass
        try:
            with self._locked(machine):
                index, changed = self._reconcile(machine)
                if changed:
                    self._store(machine, index)
        except (OSError, OutputError):
            index, _ = self._reconcile(machine)
        table = index.rows.sort_by("path")
        return (table.select(columns) if columns else table).cast(schema)

    def _current(self, machine: str) -> bool:
        """The saved index is of this format, no spec directory moved since it was listed, and no marker waits."""
        try:
            meta = json.loads((pq.read_schema(self._path(machine)).metadata or {}).get(_META_KEY, b"{}"))
        except (OSError, ValueError, pa.ArrowException):
            return False
        if meta.get("version") != CATALOG_VERSION or _spec_dirs(self.root / machine) != meta.get("dirs"):
            return False
        return not any((self.dir / _PENDING / machine).glob("*.json"))

    def _reconcile(self, machine: str) -> tuple[_Index, bool]:
        index = self._load(machine)
        if index is None:
            return self._build(machine), True
        changed = False
        current = _spec_dirs(self.root / machine)
        for spec_dir, mtime in current.items():
            if index.dirs.get(spec_dir) == mtime:
                continue
            changed = True
            prefix = f"{machine}/{spec_dir}/"
            present = {f"{prefix}{name}" for name in _run_names(self.root / machine / spec_dir)}
            indexed = index.paths(prefix)
            index.drop(indexed - present)
            index.add([self._read_row(rel) for rel in sorted(present - indexed)])
            index.dirs[spec_dir] = mtime
        for spec_dir in [d for d in index.dirs if d not in current]:
            changed = True
            del index.dirs[spec_dir]
            index.drop(index.paths(f"{machine}/{spec_dir}/"))
        for marker in sorted((self.dir / _PENDING / machine).glob("*.json")):
            changed = self._apply_marker(index, marker) or changed
        return index, changed

    def _apply_marker(self, index: _Index, marker: Path) -> bool:
        """Re-read the run a pending marker names; drop the marker once its writer is known to be gone."""
        try:
            note = json.loads(marker.read_text())
        except (OSError, ValueError):
            return False
        rel = note["path"]
        if (self.root / rel / RECORD_FILENAME).exists():
            index.add([self._read_row(rel)])
        else:
            index.drop({rel})
        if note.get("host") == socket.gethostname() and not pid_alive(int(note.get("pid", 0))):
            with contextlib.suppress(OSError):
                marker.unlink()
        return True

    def _build(self, machine: str) -> _Index:
        """The index of one machine directory from its records (the first query of an unindexed store)."""
        index = _Index(rows=SCHEMA.empty_table(), dirs={})
        rows = []
        for spec_dir, mtime in _spec_dirs(self.root / machine).items():
            rows += [
                self._read_row(f"{machine}/{spec_dir}/{name}") for name in _run_names(self.root / machine / spec_dir)
            ]
            index.dirs[spec_dir] = mtime
        index.add(rows)
        return index

    def _read_row(self, rel: str) -> dict[str, Any]:
        try:
            return catalog_row(rel, read_record(self.root / rel))
        except StoreError as exc:
            return catalog_row(rel, None, str(exc))

    # files ---------------------------------------------------------------------------------------------------

    def _rel(self, run_dir: Path) -> str:
        try:
            rel = Path(run_dir).absolute().relative_to(self.root.absolute())
        except ValueError:
            raise StoreError(f"{run_dir}: not a run directory of the store {self.root}") from None
        if len(rel.parts) != 4:
            raise StoreError(f"{run_dir}: not a run directory of the store {self.root} (machine/adapter/spec/run)")
        return rel.as_posix()

    def _path(self, machine: str) -> Path:
        return self.dir / f"{machine}.parquet"

    @contextlib.contextmanager
    def _locked(self, machine: str) -> Iterator[None]:
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / f"{machine}.lock", "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _load(self, machine: str) -> _Index | None:
        """The saved index, or None when there is none, or it is of another format or unreadable."""
        try:
            with pq.ParquetFile(self._path(machine)) as index_file:
                table = index_file.read()
            meta = json.loads((table.schema.metadata or {}).get(_META_KEY, b"{}"))
        except (OSError, ValueError, pa.ArrowException):
            return None
        table = table.replace_schema_metadata(None)
        if meta.get("version") != CATALOG_VERSION or table.schema != SCHEMA:
            return None
        return _Index(rows=table, dirs=dict(meta.get("dirs", {})))

    def _store(self, machine: str, index: _Index) -> None:
        with open_output(self._path(machine)) as fh:
            pq.write_table(index.table(), fh)


def _spec_dirs(machine_dir: Path) -> dict[str, int]:
    """adapter/spec_id -> mtime (ns) of every spec directory of a machine directory."""
    out = {}
    for adapter in _subdirs(machine_dir):
        for spec in _subdirs(Path(adapter.path)):
            out[f"{adapter.name}/{spec.name}"] = spec.stat().st_mtime_ns
    return out


def _subdirs(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return [e for e in entries if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")]
    except OSError:
        return []


def _run_names(spec_dir: Path) -> list[str]:
    """Run directories holding a record (a directory claimed but not yet written is not a run yet)."""
    return [e.name for e in _subdirs(spec_dir) if os.path.exists(os.path.join(e.path, RECORD_FILENAME))]
