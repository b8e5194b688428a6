"""The results store: results/<machine>/<adapter>/<spec_id>/<stamp>-<commit8>/ with atomic, versioned records."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from benchbed.catalog import RECORD_FILENAME, Catalog, read_record
from benchbed.errors import OutputError, StoreError
from benchbed.metrics.registry import listed_columns
from benchbed.outputs import write_output

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from benchbed.record import RunRecord

DEFAULT_STORE = Path("results")


RECORD_RESERVE = 8192  # bytes of blank padding after a `started` record: room for its final version on a full disk


def write_record(run_dir: Path, record: RunRecord) -> Path:
    """Write record.json atomically (benchbed.outputs: unique temp file, fsync, rename over).

    A `started` record is padded with blanks, so when the final record cannot be written (a full disk, a quota),
    a compact final version (status `failed`, the reason, no metrics) overwrites it in place, in space it
    already holds: a run is never left `started` because the disk filled up while it ran."""
    path = Path(run_dir) / RECORD_FILENAME
    text = record.model_dump_json(indent=2)
    if record.status == "started":
        return write_output(path, text + " " * RECORD_RESERVE + "\n")
    try:
        return write_output(path, text)
    except OutputError as exc:
        if not _overwrite_in_place(path, _compact(record, str(exc))):
            raise
        return path


def _compact(record: RunRecord, failure: str) -> str:
    """The smallest honest final record: failed, why (the run's own error first), no metrics or warnings."""
    from benchbed.record import ErrorInfo

    reason = f"benchbed could not write the final record ({failure})"
    if record.error:
        reason = f"{record.error.message[:1000]}; {reason}"
    update = {"status": "failed", "metrics": {}, "warnings": [], "error": ErrorInfo(message=reason)}
    return record.model_copy(update=update).model_dump_json()


def _overwrite_in_place(path: Path, text: str) -> bool:
    """Write `text` over the existing file without allocating (padded with blanks to its size); False if the
    file is not there or too small."""
    data = text.encode()
    try:
        with open(path, "r+b") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < len(data) + 1:
                return False
            fh.write(data + b" " * (size - len(data) - 1) + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
    except OSError:
        return False
    return True


@dataclass
class Store:
    """A results directory. Run directories are created exclusively, so concurrent writers never collide."""

    root: Path = DEFAULT_STORE

    def __post_init__(self) -> None:
        self.root = Path(self.root)

    def propose_run_dir(self, machine: str, adapter: str, spec_id: str, commit: str) -> Path:
        """Where the next run of this spec would go (not created yet: adapters render against it first)."""
        from benchbed.record import utc_now

        stamp = utc_now().strftime("%Y%m%dT%H%M%S.%fZ")
        return (self.root / machine / adapter / spec_id / f"{stamp}-{(commit or 'nocommit')[:8]}").absolute()

    def claim(self, run_dir: Path) -> bool:
        """Create the run directory exclusively; False if another writer already has it."""
        try:
            run_dir.parent.mkdir(parents=True, exist_ok=True)
            run_dir.mkdir()
        except FileExistsError:
            return False
        except OSError as exc:  # a read-only or foreign store: say so once, before anything is launched
            raise StoreError(
                f"{self.root}: cannot create a run directory in the store ({exc.strerror}); pass a writable --store"
            ) from None
        return True

    def new_run_dir(self, machine: str, adapter: str, spec_id: str, commit: str) -> Path:
        """A fresh, exclusively created run directory."""
        while True:
            run_dir = self.propose_run_dir(machine, adapter, spec_id, commit)
            if self.claim(run_dir):
                return run_dir

    def run_dirs(self) -> Iterator[Path]:
        if not self.root.exists():
            return
        for record_path in sorted(self.root.glob(f"*/*/*/*/{RECORD_FILENAME}")):
            yield record_path.parent

    def records(self) -> tuple[list[tuple[Path, RunRecord]], list[str]]:
        """Every readable record with its directory, and one error line per unreadable one."""
        good, errors = [], []
        for run_dir in self.run_dirs():
            try:
                good.append((run_dir, read_record(run_dir)))
            except StoreError as exc:
                errors.append(str(exc))
        return good, errors

    def save(self, run_dir: Path, record: RunRecord) -> Path:
        """Write a run's record (atomically) and update the store's catalog with it."""
        return Catalog(self.root).save(run_dir, record, write_record)

    def query(self, where: str | None = None, order_by: str = "started_at") -> tuple[pa.Table, list[str]]:
        """Stored runs as an Arrow table, filtered and ordered with DuckDB SQL over the catalog (benchbed.catalog),
        and one error line per unreadable record. Arrow all the way: no Python object per run."""
        import duckdb

        runs = Catalog(self.root).table(columns=[*_TABLE_COLUMNS, "error"])
        connection = duckdb.connect()
        connection.register("catalog", runs)
        errors = [
            e for (e,) in connection.sql("SELECT error FROM catalog WHERE error IS NOT NULL ORDER BY path").fetchall()
        ]
        columns = ", ".join(c if c != "path" else f"{_quoted(f'{self.root}/')} || path AS path" for c in _TABLE_COLUMNS)
        connection.execute(f"CREATE VIEW runs AS SELECT {columns} FROM catalog WHERE error IS NULL")
        sql = "SELECT * FROM runs"
        if where:
            sql += f" WHERE {where}"
        sql += f" ORDER BY {order_by}, path"  # ties (runs started the same second) in path order
        try:
            result = connection.sql(sql).to_arrow_table()
        except duckdb.Error as exc:  # DuckDB's messages run over several lines (caret, hint): keep the first
            first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
            raise StoreError(f"store query failed: --where {where!r} is not a valid filter ({first})") from None
        return result, errors

    def table(self, where: str | None = None, order_by: str = "started_at") -> tuple[pd.DataFrame, list[str]]:
        """`query` as a pandas DataFrame."""
        runs, errors = self.query(where, order_by)
        return runs.to_pandas(), errors


_TABLE_COLUMNS = ("run_id", "started_at", "status", "adapter", "mode", "spec_id", "machine", *listed_columns(), "path")


def _quoted(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"
