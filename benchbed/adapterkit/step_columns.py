"""Per-step metric records held as columns: one table of doubles per key set, a type byte beside each value.

A dict of Python floats per record takes some 70 bytes a value (the dict slot, the float object, the key's share):
a file-logger JSONL of 10^6 steps x 50 keys held as dicts peaked at 19x its values as doubles. Here a value takes 9
bytes (its double and its type byte), and a record's values are read back exactly as JSON gave them."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any, overload

import numpy as np

FLOAT, INT, OTHER, BIG = 0, 1, 2, 3  # a value's type byte; BIG: an int no double holds exactly (kept as itself too)
_KIND = {float: FLOAT, int: INT}
_EXACT = 1 << 53  # ints up to this size are doubles exactly
_INT64 = 1 << 63


@dataclass(slots=True)
class Record:
    """One record as a dict: where it came from and its values (what a caller reading a few records sees)."""

    step: int
    data: dict[str, Any]
    source: str
    line: int


class KeyTable:
    """The records that share one key tuple: their values row by row (a double each, NaN where the value is not a
    number), a type byte per value, and the values no double holds (text, null, bools, big ints) by position."""

    __slots__ = ("column", "keys", "kinds", "others", "values")

    def __init__(self, keys: tuple[str, ...]) -> None:
        self.keys = keys
        self.column = {key: j for j, key in enumerate(keys)}
        self.values = array("d")
        self.kinds = bytearray()
        self.others: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self.kinds) // max(len(self.keys), 1)

    def append(self, values: list[Any]) -> int:
        """Add one record's values (in key order); its row."""
        row = len(self)
        kinds = bytearray(map(_KIND.get, map(type, values), repeat(OTHER)))  # bool is OTHER: not a number here
        at = len(self.kinds)
        j = kinds.find(OTHER)
        while j >= 0:
            self.others[at + j], values[j] = values[j], math.nan
            j = kinds.find(OTHER, j + 1)
        j = kinds.find(INT)
        while j >= 0:
            if not -_EXACT <= values[j] <= _EXACT:
                kinds[j], self.others[at + j] = self._big(values[j])
                values[j] = float(values[j]) if kinds[j] == BIG else math.nan
            j = kinds.find(INT, j + 1)
        self.values.extend(values)
        self.kinds += kinds
        return row

    @staticmethod
    def _big(value: int) -> tuple[int, int]:
        """(type byte, value) of an int past 2^53: BIG when a double comes near it, else OTHER (not a number)."""
        try:
            float(value)
        except OverflowError:
            return OTHER, value
        return BIG, value

    def get(self, row: int, key: str, default: Any = None) -> Any:
        """The value of `key` in a row, as JSON gave it."""
        j = self.column.get(key)
        if j is None:
            return default
        at = row * len(self.keys) + j
        kind = self.kinds[at]
        if kind == FLOAT:
            return self.values[at]
        return int(self.values[at]) if kind == INT else self.others[at]

    def data(self, row: int) -> dict[str, Any]:
        return {key: self.get(row, key) for key in self.keys}

    def matrix(self, rows: np.ndarray, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray | None]:
        """The values of `keys` at `rows` as a (rows x keys) float array, NaN where a value is not a number (null,
        text, a bool), and the mask of those non-numbers (None when every value is a number)."""
        width = len(self.keys)
        cols = [self.column[key] for key in keys]
        values = np.frombuffer(self.values, np.float64).reshape(-1, width)[np.ix_(rows, cols)]
        kinds = np.frombuffer(self.kinds, np.uint8).reshape(-1, width)[np.ix_(rows, cols)]
        not_number = kinds == OTHER
        return values, not_number if not_number.any() else None


class StepColumns(Sequence[Record]):
    """Records in the order read: each one's step, line and source file, and its row in the table of its key set.
    Indexing gives a `Record` (a dict built for that one record)."""

    def __init__(self) -> None:
        self.steps = array("q")
        self.lines = array("q")
        self.source_of = array("q")
        self.table_of = array("q")
        self.row_of = array("q")
        self.sources: list[str] = []
        self.tables: list[KeyTable] = []
        self._table_ids: dict[tuple[str, ...], int] = {}
        self._source_ids: dict[str, int] = {}

    def add(self, step: int, data: dict[str, Any], source: str, line: int) -> int:
        """Append one record (a step that fits 64 bits); its index."""
        keys = tuple(data)
        t = self._table_ids.get(keys)
        if t is None:
            t = self._table_ids[keys] = len(self.tables)
            self.tables.append(KeyTable(keys))
        s = self._source_ids.get(source)
        if s is None:
            s = self._source_ids[source] = len(self.sources)
            self.sources.append(source)
        self.row_of.append(self.tables[t].append(list(data.values())))
        self.steps.append(step)
        self.lines.append(line)
        self.source_of.append(s)
        self.table_of.append(t)
        return len(self.steps) - 1

    def __len__(self) -> int:
        return len(self.steps)

    @overload
    def __getitem__(self, index: int) -> Record: ...
    @overload
    def __getitem__(self, index: slice) -> list[Record]: ...
    def __getitem__(self, index: int | slice) -> Record | list[Record]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        i = range(len(self))[index]
        return Record(self.steps[i], self.data(i), self.source(i), self.lines[i])

    def __iter__(self) -> Iterator[Record]:
        return (self[i] for i in range(len(self)))

    def source(self, i: int) -> str:
        return self.sources[self.source_of[i]]

    def where(self, i: int) -> str:
        """`FILE:LINE` of a record, as warnings name it."""
        return f"{self.source(i)}:{self.lines[i]}"

    def keys(self, i: int) -> tuple[str, ...]:
        return self.tables[self.table_of[i]].keys

    def get(self, i: int, key: str, default: Any = None) -> Any:
        return self.tables[self.table_of[i]].get(self.row_of[i], key, default)

    def data(self, i: int) -> dict[str, Any]:
        return self.tables[self.table_of[i]].data(self.row_of[i])

    def key_set(self, records: Sequence[int] | range | None = None) -> set[str]:
        """Every key of the given records (all of them by default), read from their tables."""
        table_of = self.table_of if records is None else [self.table_of[i] for i in records]
        return {key for t in set(table_of) for key in self.tables[t].keys}

    def array(self, name: str, records: np.ndarray) -> np.ndarray:
        """`steps`, `lines`, `table_of` or `row_of` at `records`, as int64."""
        return np.frombuffer(getattr(self, name), np.int64)[records]


def fits_int64(step: int) -> bool:
    """Whether a step fits the 64-bit column it is kept in."""
    return -_INT64 <= step < _INT64


class Places(Sequence[str]):
    """`FILE:LINE` of each record at `records`, built only for the few a warning names."""

    def __init__(self, columns: StepColumns, records: np.ndarray) -> None:
        self._columns, self._records = columns, records

    def __len__(self) -> int:
        return len(self._records)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self._columns.where(int(self._records[index]))
