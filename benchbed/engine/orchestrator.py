"""The orchestrator: admits GRPO groups by the mode's rule, runs each rollout in its own sandbox (start, optional
tool turns, checker), asks the generators for tokens, forms batches and feeds the trainer.

| mode | admission | batch formation | generator weights |
|---|---|---|---|
| sync | batch j once v >= j - 1 | the P groups of batch j | exactly v = j - 1 |
| one_step_off | batch j once batch j - 1 is complete and v >= j - 2 | the P groups of batch j | exactly v = j - 2 |
| async, count | non-discarded groups admitted < (max_staleness + v + 1) * P (AReaL) | oldest admitted first | newest |
| async, drop | free slots only | in completion order; groups older than the bound dropped | newest |

In async mode generators take new weights between requests, or mid-request with in-flight updates, or abort
the request at a weight push with partial rollouts (the orchestrator resumes it, in the same sandbox)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
import random
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from benchbed.engine.config import EngineConfig
from benchbed.engine.eventlog import EventLog
from benchbed.engine.sandboxes import ROLLOUT_SANDBOX, make_pool
from benchbed.engine.tasks import CALCULATOR, CHECKER, OBS, Task, make_task, response_text
from benchbed.sandbox.base import Handle, SandboxFailure

READY_TIMEOUT_S = 300.0
EXEC_TIMEOUT_S = 30.0
MONITOR_EVERY_S = 0.1


@dataclass
class Rollout:
    """One sample: its sandbox, its token sequence (prompt, generated, tool observations) and its versions."""

    sid: str
    gid: str
    task: Task
    ids: list[int]
    straggler: bool
    t0: float
    mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    spans: list[list[int]] = field(default_factory=list)
    turn_start: int = 0
    status: str = "running"  # running, done, failed, aborted
    t1: float = math.nan
    reward: float = math.nan
    handle: Handle | None = None
    env_version: int = -1
    resumes: int = 0
    error: str = ""

    def add(self, tokens: list[int], logprobs: list[float], spans: list[list[int]]) -> None:
        self.ids += tokens
        self.mask += [1] * len(tokens)
        self.logprobs += logprobs
        for version, count in spans:
            if self.spans and self.spans[-1][0] == version:
                self.spans[-1][1] += count
            else:
                self.spans.append([version, count])

    @property
    def v_start(self) -> int:
        return self.spans[0][0] if self.spans else -1

    @property
    def v_end(self) -> int:
        return self.spans[-1][0] if self.spans else -1


@dataclass
class Group:
    gid: str
    index: int
    rollouts: list[Rollout]
    batch: int | None
    version: int | None
    status: str = "running"  # running, accepted, filtered_zero_adv, discarded, dropped_stale, aborted, batched
    reward_std: float = math.nan

    @property
    def v_start(self) -> int:
        starts = [r.v_start for r in self.rollouts if r.status == "done"]
        return min(starts) if starts else -1


class Orchestrator:
    """Runs in the engine's main process on asyncio; talks to the workers through multiprocessing queues."""

    def __init__(self, cfg: EngineConfig, log: EventLog, tokenizer: Any, gen_queues: list[Any], batch_queue: Any,
                 processes: dict[str, Any]) -> None:  # fmt: skip
        self.cfg = cfg
        self.ref = cfg.ref
        self.log = log
        self.tokenizer = tokenizer
        self.gen_queues = gen_queues
        self.batch_queue = batch_queue
        self.processes = processes
        self.rng = random.Random(cfg.ref.seed)
        self.version = 0
        self.ready: set[str] = set()
        self.groups: list[Group] = []
        self.tasks: set[asyncio.Task[None]] = set()
        self.futures: dict[int, asyncio.Future[Any]] = {}
        self.outstanding = [0] * len(gen_queues)
        self.req_ids = itertools.count(1)
        self.inflight_samples = 0
        self.fill_batch = 1  # sync / one_step_off: the batch being admitted
        self.fifo: list[Group] = []  # async count: admitted groups not yet batched or discarded, in order
        self.ready_groups: list[Group] = []  # async drop: accepted groups in completion order
        self.removed = 0  # groups filtered or discarded (they do not count against admission)
        self.batches_sent = 0
        self.step_timing: dict[int, dict[str, float]] = {}
        self.trained_staleness: list[int] = []
        self.paused_since: float | None = None
        self.stopping = False
        self.error: str | None = None

    # ---- messages from the workers (reader threads hand them to the loop) --------------------------------------
    def start_readers(self, loop: asyncio.AbstractEventLoop, *queues: Any) -> None:
        def read(q: Any) -> None:
            while True:
                try:
                    msg = q.get()
                except (EOFError, OSError):
                    return
                if msg is None:
                    return
                loop.call_soon_threadsafe(self._on_message, msg)

        for q in queues:
            threading.Thread(target=read, args=(q,), daemon=True).start()

    def _on_message(self, msg: tuple[Any, ...]) -> None:
        kind = msg[0]
        if kind == "ready":
            self.ready.add(msg[1])
        elif kind == "result":
            future = self.futures.get(msg[1])
            if future is not None and not future.done():
                future.set_result((msg[2], msg[3]))
        elif kind == "step_done":
            step, timing = msg[1], msg[2]
            self.version = step
            self.step_timing[step] = timing
            print(f"progress {step}/{self.cfg.steps}", file=sys.stderr, flush=True)
            if step >= self.cfg.steps and not self.finished.done():
                self.finished.set_result(None)
        self.wake.set()

    # ---- the run -------------------------------------------------------------------------------------------
    async def run(self, queues: list[Any]) -> str | None:
        """Run until the trainer finished its last step or something failed; returns the error, if any."""
        loop = asyncio.get_running_loop()
        self.wake = asyncio.Event()
        self.finished: asyncio.Future[None] = loop.create_future()
        self.start_readers(loop, *queues)
        monitor = asyncio.ensure_future(self._monitor())
        pool = make_pool(self.log, self.ref.max_starting, self.ref.sandbox_failure_rate, self.ref.seed)
        async with pool:
            self.pool = pool
            try:
                await asyncio.wait_for(self._all_ready(), READY_TIMEOUT_S)
            except asyncio.TimeoutError:
                self.fail(f"workers not ready within {READY_TIMEOUT_S:g}s (ready: {sorted(self.ready)})")
            if not self.finished.done():
                self.log.write("started", roles=sorted(self.ready))
                dispatcher = asyncio.ensure_future(self._dispatch())
                with contextlib.suppress(Exception):
                    await self.finished
                dispatcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await dispatcher
            self.stopping = True
            self._end_pause()
            for task in list(self.tasks):
                task.cancel()
            if self.tasks:
                await asyncio.gather(*self.tasks, return_exceptions=True)
        monitor.cancel()
        return self.error

    async def _all_ready(self) -> None:
        roles = {"trainer", *(f"gen{i}" for i in range(len(self.gen_queues)))}
        while not roles <= self.ready and not self.finished.done():
            self.wake.clear()
            await self.wake.wait()

    def fail(self, message: str) -> None:
        if self.error is None:
            self.error = message
            self.log.write("error", message=message)
        if not self.finished.done():
            self.finished.set_result(None)
        self.wake.set()

    async def _monitor(self) -> None:
        """A worker that exits before the run is over ends the run (partial) with a clear error."""
        while True:
            await asyncio.sleep(MONITOR_EVERY_S)
            if self.stopping or self.finished.done():
                continue
            for role, proc in self.processes.items():
                if proc.exitcode is not None:
                    how = f"exit code {proc.exitcode}" if proc.exitcode >= 0 else f"signal {-proc.exitcode}"
                    self.fail(f"{'generator worker' if role.startswith('gen') else role} {role} (pid {proc.pid}) "
                              f"died with {how} at trainer version {self.version}")  # fmt: skip

    # ---- admission -----------------------------------------------------------------------------------------
    def _required_version(self, batch: int) -> int:
        return batch - 1 if self.ref.mode == "sync" else max(0, batch - 2)

    def _admission(self) -> str | None:
        """None when a group may start now, else why not: done, slots, batch (full) or version (bound)."""
        cfg, ref = self.cfg, self.ref
        P, G = cfg.prompts_per_step, cfg.group_size
        if self.inflight_samples + G > cfg.concurrency:
            return "slots"
        if ref.mode in ("sync", "one_step_off"):
            j = self.fill_batch
            if j > cfg.steps:
                return "done"
            in_batch = [g for g in self.groups if g.batch == j and g.status in ("running", "accepted")]
            if len(in_batch) >= P:
                return "batch"
            return "version" if self.version < self._required_version(j) else None
        running = sum(1 for g in self.groups if g.status == "running")
        waiting = sum(1 for g in self.groups if g.status == "accepted")
        if running + waiting >= (cfg.steps - self.batches_sent) * P:
            return "done"
        if ref.staleness_policy == "count":
            effective = len(self.groups) - self.removed
            if effective >= (cfg.max_staleness + self.version + 1) * P:
                return "version"
        return None

    async def _dispatch(self) -> None:
        while True:
            self.wake.clear()
            while (reason := self._admission()) is None:
                self._admit()
            if reason == "version" and self.paused_since is None:
                self.paused_since = time.time()
            elif reason != "version":
                self._end_pause()
            await self.wake.wait()

    def _end_pause(self) -> None:
        if self.paused_since is not None:
            self.log.write("paused", t0=self.paused_since, t1=time.time(), reason="admission closed")
            self.paused_since = None

    def _admit(self) -> None:
        index = len(self.groups)
        gid = f"g{index}"
        task = make_task(self.rng)
        sync_like = self.ref.mode in ("sync", "one_step_off")
        batch = self.fill_batch if sync_like else None
        version = self._required_version(batch) if batch is not None else None
        now = time.time()
        prompt = self.tokenizer.encode(task.prompt).ids
        rollouts = [
            Rollout(sid=f"{gid}-{i}", gid=gid, task=task, ids=list(prompt), straggler=self._straggler(), t0=now,
                    mask=[0] * len(prompt))
            for i in range(self.cfg.group_size)
        ]  # fmt: skip
        group = Group(gid=gid, index=index, rollouts=rollouts, batch=batch, version=version)
        if self.ref.mode == "one_step_off" and not any(g.batch == batch for g in self.groups):
            # Every generator moves to the batch's version, so none holds back the trainer's weight broadcast.
            for q in self.gen_queues:
                q.put({"kind": "sync", "version": version})
        self.groups.append(group)
        self.inflight_samples += len(rollouts)
        if self.ref.mode == "async" and self.ref.staleness_policy == "count":
            self.fifo.append(group)
        self.log.write("admit", t=now, group=gid, prompt=task.prompt, expected=task.expected, v=self.version,
                       batch=batch, required_version=version, samples=[r.sid for r in rollouts])  # fmt: skip
        task_ = asyncio.ensure_future(self._run_group(group))
        self.tasks.add(task_)
        task_.add_done_callback(self.tasks.discard)

    def _straggler(self) -> bool:
        return self.ref.straggler_fraction > 0 and self.rng.random() < self.ref.straggler_fraction

    # ---- one group: sandboxes, generation turns, tools, checker --------------------------------------------
    async def _run_group(self, group: Group) -> None:
        try:
            await asyncio.gather(*(self._start_sandbox(r) for r in group.rollouts))
            live = [r for r in group.rollouts if r.status == "running"]
            if len(live) >= 2:
                for turn in range(self.ref.tool_turns + 1):
                    for r in live:
                        r.turn_start = len(r.ids)
                    await self._generate(group, live)
                    if turn < self.ref.tool_turns:
                        await asyncio.gather(*(self._tool(r) for r in live))
                await asyncio.gather(*(self._check(r) for r in live))
            else:
                for r in live:
                    r.status, r.t1, r.error = "aborted", time.time(), "too few sandboxes started to form a group"
            self._group_done(group)
        except asyncio.CancelledError:
            now = time.time()
            for r in group.rollouts:
                if r.status == "running":
                    r.status, r.t1 = "aborted", now
            if group.status == "running":
                group.status = "aborted"
                self._log_rollouts(group)
            raise
        finally:
            handles = [r.handle for r in group.rollouts if r.handle is not None]
            if handles:
                await asyncio.gather(*(self.pool.close(h) for h in handles), return_exceptions=True)

    async def _start_sandbox(self, r: Rollout) -> None:
        try:
            r.handle = await self.pool.create(ROLLOUT_SANDBOX, key=r.sid)
            r.env_version = self.version
        except SandboxFailure as exc:
            r.status, r.t1, r.error = "failed", time.time(), f"sandbox start failed: {exc.reason}"

    def _pick_generator(self) -> int:
        return min(range(len(self.gen_queues)), key=lambda i: self.outstanding[i])

    async def _generate(self, group: Group, live: list[Rollout]) -> None:
        """One turn: ask a generator for up to max_new_tokens per rollout; resume what a weight push aborted."""
        todo = list(live)
        produced = {r.sid: 0 for r in todo}
        loop = asyncio.get_running_loop()
        while todo:
            gen = self._pick_generator()
            req = next(self.req_ids)
            future: asyncio.Future[Any] = loop.create_future()
            self.futures[req] = future
            self.outstanding[gen] += 1
            self.gen_queues[gen].put({
                "kind": "generate", "req": req, "version": group.version, "contexts": [r.ids for r in todo],
                "sids": [r.sid for r in todo], "max_new": [self.ref.max_new_tokens - produced[r.sid] for r in todo],
            })  # fmt: skip
            try:
                outs, _aborted = await future
            finally:
                self.outstanding[gen] -= 1
                self.futures.pop(req, None)
            unfinished = []
            for r, out in zip(todo, outs, strict=True):
                r.add(out["tokens"], out["logprobs"], out["spans"])
                produced[r.sid] += len(out["tokens"])
                if not out["finished"]:
                    r.resumes += 1
                    self.log.write("resume", sample=r.sid, tokens=produced[r.sid], v=self.version,
                                   env_version=r.env_version, env_staleness=self.version - r.env_version)  # fmt: skip
                    unfinished.append(r)
            todo = unfinished

    async def _tool(self, r: Rollout) -> None:
        result = await self.pool.exec(r.handle, ["/bin/sh", "-c", CALCULATOR, "sh", r.task.expression],
                                      timeout_s=EXEC_TIMEOUT_S)  # fmt: skip
        value = result.stdout.decode(errors="replace").strip() if result.ok else "?"
        observation = self.tokenizer.encode(f"{OBS}{value}=").ids
        r.ids += observation
        r.mask += [0] * len(observation)

    async def _check(self, r: Rollout) -> None:
        response = response_text(self.tokenizer, r.ids[r.turn_start :])
        delay = self.ref.straggler_delay_s if r.straggler else 0.0
        argv = ["/bin/sh", "-c", CHECKER, "sh", response, r.task.expected, f"{delay:g}"]
        result = await self.pool.exec(r.handle, argv, timeout_s=EXEC_TIMEOUT_S + delay)
        r.t1 = time.time()
        try:
            r.reward = float(json.loads(result.stdout)["reward"]) if result.ok else math.nan
        except (ValueError, KeyError, TypeError):
            r.reward = math.nan
        if math.isnan(r.reward):
            r.status, r.error = "failed", f"checker failed: {result.reason or result.exit_code} {result.message}"
        else:
            r.status = "done"

    # ---- groups and batches ----------------------------------------------------------------------------------
    def _group_done(self, group: Group) -> None:
        done = [r for r in group.rollouts if r.status == "done"]
        if len(done) < 2:
            group.status = "discarded"
        else:
            group.reward_std = statistics.pstdev(r.reward for r in done)
            zero = group.reward_std == 0
            group.status = "filtered_zero_adv" if zero and self.ref.filter_zero_adv else "accepted"
        self.inflight_samples -= len(group.rollouts)
        self._log_rollouts(group)
        self.log.write("group", group=group.gid, status=group.status, reward_std=group.reward_std,
                       v_start=group.v_start, step=self.version + 1)  # fmt: skip
        if group.status != "accepted":
            self.removed += 1
            if group in self.fifo:
                self.fifo.remove(group)
        elif self.ref.mode == "async" and self.ref.staleness_policy == "drop":
            self.ready_groups.append(group)
        self._form_batches()
        self.wake.set()

    def _log_rollouts(self, group: Group) -> None:
        for r in group.rollouts:
            self.log.write("rollout", sample=r.sid, group=r.gid, t0=r.t0, t1=r.t1, status=r.status, reward=r.reward,
                           spans=r.spans, v_start=r.v_start, v_end=r.v_end, env_version=r.env_version,
                           resumes=r.resumes, straggler=r.straggler, tokens=sum(r.mask), error=r.error)  # fmt: skip

    def _form_batches(self) -> None:
        P, ref = self.cfg.prompts_per_step, self.ref
        while self.batches_sent < self.cfg.steps:
            k = self.batches_sent + 1
            if ref.mode in ("sync", "one_step_off"):
                chosen = [g for g in self.groups if g.batch == k and g.status == "accepted"]
                if len(chosen) < P:
                    return
                self.fill_batch = k + 1
            elif ref.staleness_policy == "count":
                head = self.fifo[:P]
                if len(head) < P or any(g.status != "accepted" for g in head):
                    return
                chosen, self.fifo = head, self.fifo[P:]
            else:
                for g in list(self.ready_groups):
                    if (k - 1) - g.v_start > self.cfg.max_staleness:
                        self.ready_groups.remove(g)
                        g.status = "dropped_stale"
                        self.log.write("drop", group=g.gid, step=k, v_train=k - 1, v_start=g.v_start)
                if len(self.ready_groups) < P:
                    return
                chosen, self.ready_groups = self.ready_groups[:P], self.ready_groups[P:]
            self._send_batch(k, chosen)

    def _send_batch(self, step: int, groups: list[Group]) -> None:
        samples, sids, staleness = [], [], []
        for g in groups:
            g.status = "batched"
            for r in g.rollouts:
                if r.status != "done":
                    continue
                samples.append({"ids": r.ids, "mask": r.mask, "logprobs": r.logprobs, "reward": r.reward,
                                "group": g.gid})  # fmt: skip
                sids.append(r.sid)
                staleness.append(step - 1 - r.v_start)
        self.trained_staleness += staleness
        self.log.write("batch", step=step, v_train=step - 1, groups=[g.gid for g in groups], samples=sids,
                       staleness=staleness)  # fmt: skip
        self.batch_queue.put({"step": step, "samples": samples})
        self.batches_sent += 1
