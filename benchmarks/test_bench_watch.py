"""`benchbed watch` (issue 38): an update's cost as the run's log grows, against re-reading the whole log.

A reference-engine event log of 100, 1,000 and 10,000 steps (a step: 8 rollouts, 2 groups, a batch and the trainer's
step event, 12 lines across orchestrator.jsonl and trainer.jsonl) is followed by a Watch that has read it all; each
round appends one more step and updates. The baseline reads the whole 10,000-step log into a fresh Watch, what a
watcher without offsets would do on every update. Targets: at most 10 ms an update at 10,000 steps, and the update
at 10,000 steps within 3x of the one at 100 (flat in the log's length)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ratios import baseline_median, median_of, ratio

from benchbed.watch.session import Watch

SIZES = (100, 1_000, 10_000)
ROUNDS = 200
STEP_LIMIT_S = 0.010
FLAT_LIMIT = 3.0
GROUP, PROMPTS = 4, 2


def _line(event: dict) -> str:
    return json.dumps(event, separators=(",", ":")) + "\n"


def step_lines(step: int) -> tuple[str, str]:
    """(orchestrator.jsonl lines, trainer.jsonl line) of one synchronous step, one second long from t = step."""
    t0 = float(step)
    orchestrator = []
    for g in range(PROMPTS):
        group = f"s{step}g{g}"
        for i in range(GROUP):
            orchestrator.append(_line({"ev": "rollout", "t": t0 + 0.6, "role": "orchestrator", "sample": f"{group}-{i}",
                                       "group": group, "t0": t0 + 0.1, "t1": t0 + 0.5 + 0.01 * i, "status": "done",
                                       "reward": float(i % 2), "tokens": 5 + i % 3}))  # fmt: skip
        orchestrator.append(_line({"ev": "group", "t": t0 + 0.61, "role": "orchestrator", "group": group,
                                   "status": "accepted", "reward_std": 0.5 * (g % 2), "step": step}))  # fmt: skip
    orchestrator.append(_line({"ev": "batch", "t": t0 + 0.62, "role": "orchestrator", "step": step,
                               "staleness": [0] * (GROUP * PROMPTS)}))  # fmt: skip
    trainer = _line({"ev": "step", "t": t0 + 0.99, "role": "trainer", "step": step, "t0": t0, "t_wait_end": t0 + 0.63,
                     "t1": t0 + 0.98, "wait_s": 0.63, "samples": GROUP * PROMPTS})  # fmt: skip
    return "".join(orchestrator), trainer


def write_log(root: Path, steps: int) -> Path:
    """A run directory whose event log holds `run_start` and `steps` steps (the run still running)."""
    events = root / "events"
    events.mkdir(parents=True)
    start = {"ev": "run_start", "t": 0.0, "role": "orchestrator", "concurrency": 8,
             "config": {"steps": steps + 10 * ROUNDS, "max_staleness": 0, "ref": {"max_new_tokens": 6}}}  # fmt: skip
    with (events / "orchestrator.jsonl").open("w") as orch, (events / "trainer.jsonl").open("w") as trainer:
        orch.write(_line(start))
        for step in range(1, steps + 1):
            lines, step_line = step_lines(step)
            orch.write(lines)
            trainer.write(step_line)
    return root


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory, quick: bool) -> dict[int, Path]:
    sizes = SIZES[:2] if quick else SIZES
    return {n: write_log(tmp_path_factory.mktemp(f"log-{n}"), n) for n in sizes}


def test_baseline_rereading_the_whole_log(benchmark, logs, medians: dict[str, float]) -> None:
    steps = max(logs)

    def reread() -> Watch:
        watch = Watch(logs[steps], "ref", clock=lambda: 0.0)
        watch.update()
        watch.close()
        return watch

    watch = benchmark.pedantic(reread, rounds=3, iterations=1)
    assert watch.figures.step_numbers[-1] == steps
    medians["re-read the whole log"] = median_of(benchmark)


@pytest.mark.parametrize("size", SIZES)
def test_an_update_after_one_more_step(benchmark, logs, medians: dict[str, float], size: int) -> None:
    if size not in logs:
        pytest.skip("--bench-quick leaves the largest log out")
    root = logs[size]
    watch = Watch(root, "ref", clock=lambda: 0.0)
    watch.update()  # the log so far, read once
    appended = [size]

    def append_one_step() -> None:
        appended[0] += 1
        orchestrator, trainer = step_lines(appended[0])
        with (root / "events" / "orchestrator.jsonl").open("a") as handle:
            handle.write(orchestrator)
        with (root / "events" / "trainer.jsonl").open("a") as handle:
            handle.write(trainer)

    rows = benchmark.pedantic(lambda: watch.update()[0], setup=append_one_step, rounds=ROUNDS, iterations=1)
    watch.close()
    assert [r.step for r in rows] == [appended[0]]  # the last round's update saw exactly its one new step
    assert watch.figures.figures()["run"]["trainer_idle_ratio"] == pytest.approx(0.63 / 0.98)
    seconds = median_of(benchmark)
    medians[f"update at {size}"] = seconds
    print(f"\nupdate after one more step of a {size:,}-step log: {seconds * 1e3:.3f} ms")
    if size == max(logs):
        reread = baseline_median(medians, "re-read the whole log")
        print(f"re-reading the whole {size:,}-step log: {reread * 1e3:.1f} ms, {reread / seconds:,.0f}x an update")
        assert seconds <= STEP_LIMIT_S, f"an update at {size:,} steps took {seconds * 1e3:.2f} ms"
        ratio(f"watch update at {size:,} steps", seconds, "re-read the whole log", reread, None)
        ratio(f"watch update at {size:,} steps", seconds, f"update at {min(logs):,} steps",
              baseline_median(medians, f"update at {min(logs)}"), FLAT_LIMIT)  # fmt: skip
