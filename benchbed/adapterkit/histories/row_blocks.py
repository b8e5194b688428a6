"""Rows of key -> number kept as they are read, in blocks of doubles (one column per key seen so far, NaN where a key
was not logged), not as a dict per row: a history reader's memory stays within about twice its values."""

from __future__ import annotations

from typing import Any

import numpy as np

BLOCK_ROWS = 4096  # rows per block: a block of 50 keys is 1.6 MB


class RowBlocks:
    """A growing matrix of rows × keys. `row(rank)` adds a row (`rank`: where it goes among the rows, default the
    order added); `set(row, key, value)` writes into any row added so far (a later value of a key in the same row
    replaces the earlier one); `matrix()` gives the rows in rank order as one array, its columns in the order a
    row-by-row table of them shows the keys (`keys()`): by the first row holding each, then as written there."""

    def __init__(self) -> None:
        self.rows = 0
        self._index: dict[str, int] = {}  # key -> column, as first seen
        self._blocks: list[np.ndarray] = []
        self._ranks: list[Any] = []
        self._first: dict[str, tuple[int, int]] = {}  # key -> (row, write number) of its first value in its first row
        self._writes = 0

    def row(self, rank: Any = None) -> int:
        """A new row, all NaN; its number."""
        if self.rows % BLOCK_ROWS == 0:
            self._blocks.append(np.full((BLOCK_ROWS, max(len(self._index), 1)), np.nan))
        self._ranks.append(self.rows if rank is None else rank)
        self.rows += 1
        return self.rows - 1

    def set(self, row: int, key: str, value: float) -> None:
        column = self._index.setdefault(key, len(self._index))
        self._block(row, column)[row % BLOCK_ROWS, column] = value
        first = self._first.get(key)
        if first is None or self._ranks[first[0]] > self._ranks[row]:
            self._first[key] = (row, self._writes)
        self._writes += 1

    def fill_last(self, keys: list[str], values: np.ndarray) -> None:
        """`values` of `keys` (a later one of a key repeated wins) into the last row added, at once: for rows added
        in rank order, where a key's first row is the one it was first seen in."""
        row, known = self.rows - 1, len(self._index)
        columns = [self._index.setdefault(k, len(self._index)) for k in keys]
        for key in list(self._index)[known:]:
            self._first[key] = (row, self._writes)
            self._writes += 1
        self._block(row, len(self._index) - 1)[row % BLOCK_ROWS, columns] = values

    def _block(self, row: int, column: int) -> np.ndarray:
        """The block holding `row`, widened first when `column` is past its end (later blocks start that wide)."""
        block = self._blocks[row // BLOCK_ROWS]
        if column >= block.shape[1]:
            wider = np.full((BLOCK_ROWS, len(self._index) + 8), np.nan)
            wider[:, : block.shape[1]] = block
            block = self._blocks[row // BLOCK_ROWS] = wider
        return block

    def order(self) -> np.ndarray:
        """The rows' numbers in rank order (ties: as added)."""
        return np.array(sorted(range(self.rows), key=self._ranks.__getitem__), dtype=np.intp)

    def keys(self) -> list[str]:
        """The keys by the first row (in rank order) holding each, then as written into that row."""
        return sorted(self._index, key=lambda k: (self._ranks[self._first[k][0]], self._first[k][1]))

    def matrix(self, order: np.ndarray | None = None) -> np.ndarray:
        """rows × `keys()`: row order[i] at position i (default: as added). The blocks are released as they are
        copied, so memory peaks at the matrix and one block beyond the values read."""
        place = np.arange(self.rows) if order is None else np.empty(self.rows, dtype=np.intp)
        if order is not None:
            place[order] = np.arange(self.rows)
        columns = np.array([self._index[k] for k in self.keys()], dtype=np.intp)
        out = np.full((len(columns), self.rows), np.nan)  # key-major: each key's column contiguous, as a frame holds it
        for number in range(len(self._blocks)):
            block, self._blocks[number] = self._blocks[number], np.empty((0, 0))
            start = number * BLOCK_ROWS
            count = min(BLOCK_ROWS, self.rows - start)
            present = np.flatnonzero(columns < block.shape[1])
            out[np.ix_(present, place[start : start + count])] = block[:count, columns[present]].T
            del block
        self._blocks = []
        return out.T
