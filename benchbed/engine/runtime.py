"""Process-level settings shared by the engine's roles: thread counts and a free loopback port."""

from __future__ import annotations

import contextlib
import os
import socket

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def set_threads(threads: int) -> None:
    """Cap this process's compute threads (before and after torch is imported): roles share a few cores."""
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch

    torch.set_num_threads(threads)
    with contextlib.suppress(RuntimeError):  # already set once in this process
        torch.set_num_interop_threads(1)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
