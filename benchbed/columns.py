"""Run-sized arrays (a value per sample or per trace row) and the Arrow memory they live in.

numpy advises transparent huge pages for every array of 4 MiB or more, and so does Arrow's default allocator
(mimalloc) for its segments. On the virtual machines benchbed runs on, the first touch of a fresh huge page costs
about 10 ms a MiB, and freed huge pages go back to the host within seconds, so a million-sample trace paid 0.3-2 s
again for its columns whenever it was built. The system allocator through Arrow's system pool advises nothing: its
4 KiB pages cost a tenth of that to touch, and it keeps freed memory for the process's next trace. pandas and Arrow
take these arrays without a copy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

POOL = pa.system_memory_pool()
CHUNK = 1 << 18  # values per temporary where numpy has no `out=`: 2 MiB of int64, under numpy's huge-page size


def pooled(n: int, dtype: Any) -> np.ndarray:
    """An uninitialised, writable array of n values of `dtype` in POOL."""
    dtype = np.dtype(dtype)
    return np.frombuffer(pa.allocate_buffer(n * dtype.itemsize, memory_pool=POOL), dtype)


def searchsorted_right(edges: np.ndarray, values: np.ndarray) -> np.ndarray:
    """np.searchsorted(edges, values, side="right") into a pooled array, chunk by chunk."""
    out = pooled(len(values), np.int64)
    for start in range(0, len(values), CHUNK):
        out[start : start + CHUNK] = np.searchsorted(edges, values[start : start + CHUNK], side="right")
    return out


def arange(first: int, stop: int) -> np.ndarray:
    """np.arange(first, stop) of int64 into a pooled array, chunk by chunk."""
    out = pooled(max(0, stop - first), np.int64)
    for start in range(0, len(out), CHUNK):
        out[start : start + CHUNK] = np.arange(first + start, min(stop, first + start + CHUNK))
    return out
