"""A stand-in for nvidia-ml-py's `pynvml` module, for the machines without an NVIDIA GPU: the functions benchbed's
sampler calls, with their names, arguments and return shapes as nvidia-ml-py 13.615 defines them
(`nvmlDeviceGetUtilizationRates` -> `.gpu`/`.memory` in %, `nvmlDeviceGetMemoryInfo` -> `.used`/`.total` in bytes,
`nvmlDeviceGetPowerUsage` -> mW, `nvmlDeviceGetClockInfo(handle, NVML_CLOCK_SM)` -> MHz). What each GPU reports is the
test's; a quantity set to None raises NVMLError as an unsupported query does."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

NVML_CLOCK_SM = 1


class NVMLError(Exception):
    """pynvml.NVMLError: every NVML failure (here, an unsupported query)."""


@dataclass
class FakeGpu:
    utilization: float | None = 50.0
    memory_used: int | None = 1 << 30
    power_mw: int | None = 300_000
    sm_clock: int | None = 1980


@dataclass
class FakeNvml:
    """The module-level functions of pynvml over `gpus`; `calls` counts the utilization reads."""

    gpus: list[FakeGpu] = field(default_factory=list)
    calls: int = 0
    shut_down: bool = False
    NVML_CLOCK_SM: int = NVML_CLOCK_SM

    def nvmlInit(self) -> None:  # noqa: N802 (pynvml's names)
        self.shut_down = False

    def nvmlShutdown(self) -> None:  # noqa: N802
        self.shut_down = True

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:  # noqa: N802
        return self.gpus[index]

    @staticmethod
    def _value(value: float | None) -> float:
        if value is None:
            raise NVMLError("Not Supported")
        return value

    def nvmlDeviceGetUtilizationRates(self, handle: FakeGpu) -> SimpleNamespace:  # noqa: N802
        self.calls += 1
        return SimpleNamespace(gpu=self._value(handle.utilization), memory=0)

    def nvmlDeviceGetMemoryInfo(self, handle: FakeGpu) -> SimpleNamespace:  # noqa: N802
        return SimpleNamespace(used=self._value(handle.memory_used), total=80 << 30, free=0)

    def nvmlDeviceGetPowerUsage(self, handle: FakeGpu) -> float:  # noqa: N802
        return self._value(handle.power_mw)

    def nvmlDeviceGetClockInfo(self, handle: FakeGpu, clock: int) -> float:  # noqa: N802
        assert clock == NVML_CLOCK_SM
        return self._value(handle.sm_clock)
