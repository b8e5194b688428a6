"""The NVML samples benchbed takes during a local launch (benchbed.launch.gpu_sampler, gpu_samples.jsonl in the run
directory), followed line by line beside the adapter's own files: each utilization sample feeds the live GPU-busy
figure. A run without GPUs has no such file and shows no GPU figures."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from benchbed.adapterkit.gpu import match_gpu_key
from benchbed.launch.gpu_sampler import SAMPLES_FILENAME
from benchbed.watch.live import LiveFigures
from benchbed.watch.tail import FileTail


@dataclass
class GpuSamplesTail:
    """Follows `run_dir/gpu_samples.jsonl` (`{"t": epoch seconds, "gpu": index, "utilization": percent, ...}`)."""

    run_dir: Path
    warnings: list[str] = field(default_factory=list)
    _tail: FileTail = field(init=False)
    _lines: int = 0

    def __post_init__(self) -> None:
        self._tail = FileTail(Path(self.run_dir) / SAMPLES_FILENAME)

    def update(self, figures: LiveFigures) -> int:
        """Feed the utilization samples appended since the last update; the number of new lines."""
        lines = self._tail.read()
        for text in lines:
            self._lines += 1
            try:
                sample = json.loads(text)
                gpu, value = int(sample["gpu"]), sample.get("utilization")
            except (ValueError, KeyError, TypeError):
                self.warnings.append(f"{self._tail.path}:{self._lines}: not a GPU sample (expected t and gpu)")
                continue
            matched = match_gpu_key(f"nvml.{gpu}.utilization")
            if matched is not None and isinstance(value, int | float) and math.isfinite(value):
                figures.gpu_sample(float(value) * matched[0].scale)
        return len(lines)

    def close(self) -> None:
        """Release the file."""
        self._tail.close()
