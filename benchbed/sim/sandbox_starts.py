"""The sandbox provider of the simulator: starts throttled by a create rate and a cap on starts in progress,
failing on timeouts, account limits and random faults, retried with exponential backoff (config.Sandbox)."""

from __future__ import annotations

import heapq

from benchbed.sim.config import Sandbox
from benchbed.sim.draws import Draws

SANDBOX_STATUSES = ("ok", "start_timeout", "no_capacity", "internal")
SANDBOX_QUEUE_ROW, SANDBOX_START_ROW = 0, 1


class SandboxStarts:
    """Starts sandboxes for samples and records every queue wait and start attempt as a row
    (row kind, sample, t0, t1, status index into SANDBOX_STATUSES)."""

    def __init__(self, sandbox: Sandbox, start_s: Draws, uniforms: Draws) -> None:
        self.sandbox = sandbox
        self.start_s = start_s
        self.uniforms = uniforms
        self.rows: list[tuple[int, int, float, float, int]] = []
        self.next_create = 0.0  # the next create slot the rate limit allows
        self.starting: list[float] = []  # ends of starts in progress (a heap), for max_starting

    def start(self, now: float, sample: int, live: int) -> tuple[float, bool]:
        """Start the sample's sandbox (with retries): when it is ready, or when the last attempt failed."""
        sandbox, starting = self.sandbox, self.starting
        t = end = now
        attempts = sandbox.max_retries + 1 if sandbox.policy == "retry" else 1
        for attempt in range(attempts):
            created = t
            if sandbox.create_rate is not None:
                created = max(created, self.next_create)
                self.next_create = created + 1.0 / sandbox.create_rate
            if sandbox.max_starting is not None:
                while starting and starting[0] <= created:
                    heapq.heappop(starting)
                if len(starting) >= sandbox.max_starting:
                    created = max(created, heapq.heappop(starting))
            deadline = t + sandbox.start_timeout_s
            ready = created + self.start_s.take_one()
            if sandbox.account_limit is not None and live >= sandbox.account_limit:
                status, end = 2, deadline  # no capacity: the start hangs until the timeout (init dead)
            elif ready > deadline:
                status, end = 1, deadline
            elif sandbox.fail_p > 0 and self.uniforms.take_one() < sandbox.fail_p:
                status, end = 3, ready
            else:
                status, end = 0, ready
            created = min(created, end)
            if sandbox.max_starting is not None:
                heapq.heappush(starting, end)
            if created > t:
                self.rows.append((SANDBOX_QUEUE_ROW, sample, t, created, 0))
            self.rows.append((SANDBOX_START_ROW, sample, created, end, status))
            if status == 0:
                return end, True
            t = end + sandbox.backoff_s * 2**attempt
        return end, False
