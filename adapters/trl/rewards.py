"""Reward functions for TRL runs, in TRL's calling convention `f(prompts, completions, **columns) -> list[float]`.

`arith` grades an arithmetic answer in this process with the reference engine's rule; `arith_sandbox` runs the
engine's own checker program in a fresh local sandbox per completion (benchbed's pool: every start is a real
`sandbox.start`, logged to `events/sandboxes.jsonl` for the parser). The rule, from `benchbed.engine.tasks`:
1.0 for the exact answer, 0.5 for an answer whose first digit is right, 0.25 for one that starts with a digit."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

SANDBOX_LOG_ROLE = "sandboxes"  # events/sandboxes.jsonl, the reference engine's event-log format


def grade(response: str, expected: str) -> float:
    """The reference engine's CHECKER rule in Python (the two are checked against each other in the tests)."""
    if response == expected or (response.startswith(expected) and not response[len(expected)].isdigit()):
        return 1.0
    digits, want = response.removeprefix("-"), expected.removeprefix("-")
    if not digits[:1].isdigit():
        return 0.0
    return 0.5 if digits[0] == want[0] else 0.25


def text_of(item: Any) -> str:
    """A prompt or completion as text: a string as is, a conversation's messages' contents joined."""
    return item if isinstance(item, str) else "".join(message["content"] for message in item)


def arith(prompts: list[Any], completions: list[Any], answer: list[str], **_: Any) -> list[float]:
    """Graded arithmetic reward (see the module docstring), computed in the trainer's process; a conversational
    completion (a list of messages) is graded on its messages' text."""
    return [grade(text_of(c).strip(), expected) for c, expected in zip(completions, answer, strict=True)]


class SandboxChecker:
    """`arith_sandbox`: one sandbox per completion, the checker run inside it; reward None when it cannot start.

    TRL calls reward functions synchronously, so the pool lives on this object's own event loop."""

    __name__ = "arith_sandbox"  # TRL names the reward (and its profiling timer) after the callable

    def __init__(self, run_dir: Path, max_starting: int, seed: int) -> None:
        self.run_dir, self.max_starting, self.seed = Path(run_dir), max_starting, seed
        self.loop = asyncio.new_event_loop()
        self.pool: Any = None
        self.log: Any = None
        self.calls = 0

    def __call__(self, prompts: list[str], completions: list[str], answer: list[str], **_: Any) -> list[float | None]:
        self.calls += 1
        return self.loop.run_until_complete(self._check_all(completions, answer))

    async def _check_all(self, completions: list[str], answers: list[str]) -> list[float | None]:
        if self.pool is None:
            from benchbed.engine.eventlog import EventLog
            from benchbed.engine.sandboxes import make_pool

            self.log = EventLog(self.run_dir, SANDBOX_LOG_ROLE)
            self.pool = await make_pool(self.log, self.max_starting, 0.0, self.seed).__aenter__()
        n = self.calls
        checks = (self._check(f"c{n}-{i}", text.strip(), expected) for i, (text, expected)
                  in enumerate(zip(completions, answers, strict=True)))  # fmt: skip
        return list(await asyncio.gather(*checks))

    async def _check(self, key: str, response: str, expected: str) -> float | None:
        from benchbed.engine.sandboxes import ROLLOUT_SANDBOX
        from benchbed.engine.tasks import CHECKER

        outcome = await self.pool.run(ROLLOUT_SANDBOX, ["/bin/sh", "-c", CHECKER, "sh", response, expected, "0"],
                                      key=key, timeout_s=30.0)  # fmt: skip
        if outcome.result is None or outcome.result.exit_code != 0:
            return None
        return float(json.loads(outcome.result.stdout)["reward"])

    def close(self) -> None:
        """Close every sandbox and the pool's backend; the loop last."""
        if self.pool is not None:
            self.loop.run_until_complete(self.pool.shutdown())
            self.log.close()
        self.loop.close()
