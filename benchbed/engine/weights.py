"""Weight transfer from the trainer (rank 0) to the generators (ranks 1..N) by torch.distributed (gloo, 127.0.0.1).

Each published version is one broadcast of all parameters flattened into one buffer. The trainer stages the
buffer and a sender thread runs the broadcast, so the trainer does not wait for generators that are busy;
a generator joins pending broadcasts, in order, at its safe points. `published` (a shared integer) says how
many versions the trainer has staged."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist

INIT_TIMEOUT_S = 120


def init_group(rank: int, world_size: int, port: int) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size,
                            timeout=timedelta(seconds=INIT_TIMEOUT_S))  # fmt: skip


def flat_buffer(model: torch.nn.Module) -> torch.Tensor:
    return torch.empty(sum(p.numel() for p in model.parameters()), dtype=torch.float32)


def pack(model: torch.nn.Module, out: torch.Tensor) -> None:
    offset = 0
    with torch.no_grad():
        for p in model.parameters():
            n = p.numel()
            out[offset : offset + n].copy_(p.detach().reshape(-1).float())
            offset += n


def unpack(model: torch.nn.Module, flat: torch.Tensor) -> None:
    offset = 0
    with torch.no_grad():
        for p in model.parameters():
            n = p.numel()
            p.copy_(flat[offset : offset + n].view_as(p).to(p.dtype))
            offset += n


class WeightSender:
    """Trainer side: stage a version into a buffer, broadcast it from a thread; one broadcast in flight at a time."""

    def __init__(self, model: torch.nn.Module, published) -> None:
        self.model = model
        self.published = published
        self.buffer = flat_buffer(model)
        self.thread: threading.Thread | None = None

    def publish(self, version: int) -> None:
        """Wait for the previous broadcast to be received, stage this version, start its broadcast."""
        self.wait()
        pack(self.model, self.buffer)
        self.published.value = version
        self.thread = threading.Thread(target=self._broadcast, daemon=True, name=f"weights-v{version}")
        self.thread.start()

    def _broadcast(self) -> None:
        dist.broadcast(self.buffer, src=0)

    def wait(self) -> None:
        if self.thread is not None:
            self.thread.join()
            self.thread = None

    @property
    def nbytes(self) -> int:
        return self.buffer.numel() * self.buffer.element_size()


class WeightReceiver:
    """Generator side: join the trainer's broadcasts one version at a time and load them into the model."""

    def __init__(self, model: torch.nn.Module, published, log) -> None:
        self.model = model
        self.published = published
        self.buffer = flat_buffer(model)
        self.version = 0
        self.log = log

    def pending(self) -> bool:
        return self.published.value > self.version

    def receive_next(self) -> None:
        t0 = time.time()
        dist.broadcast(self.buffer, src=0)
        unpack(self.model, self.buffer)
        self.version += 1
        self.log.write("weights", t0=t0, t1=time.time(), version=self.version,
                       bytes=self.buffer.numel() * self.buffer.element_size())  # fmt: skip

    def sync_to(self, version: int | None, stop=lambda: False) -> None:
        """Receive versions up to `version` (None: every published one); waits if it is not published yet."""
        while True:
            target = self.published.value if version is None else version
            if self.version >= target or stop():
                return
            if self.published.value > self.version:
                self.receive_next()
            else:
                time.sleep(0.002)
