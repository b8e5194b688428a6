"""Which slime version, loop (sync / one-step-off / fully async) and placement produced a run, with the evidence."""

from __future__ import annotations

from dataclasses import dataclass

from benchbed.adapters.slime import keymap as M
from benchbed.adapters.slime.collect import Collected

from benchbed.adapterkit.detection import Detected

SYNC, ONE_STEP_OFF, FULLY_ASYNC, SFT = "sync", "one_step_off", "fully_async", "sft"
# What an SFT run is launched with (scripts/run-qwen3-4B-base-sft.sh at 624b824): the SFT loss, and the "rollout"
# that tokenises dataset samples instead of generating (slime/rollout/sft_rollout.py).
SFT_LOSS, SFT_ROLLOUT = "sft_loss", "slime.rollout.sft_rollout.generate_rollout"


@dataclass
class SlimeDetected(Detected):
    """The release and loop, with the placement and weight-push interval, each with its evidence."""

    placement: str = ""
    update_weights_interval: int = 1


def detect_version(c: Collected) -> tuple[str, str]:
    """(version, evidence) from the file:line of the `perf` log calls, which moved in slime #2298."""
    exact = sorted({M.PERF_CALL_SITES[site] for site in c.call_sites if site in M.PERF_CALL_SITES})
    if len(exact) == 1:
        return exact[0], f"perf log call sites {sorted(c.call_sites)} match slime {exact[0]}"
    layouts = sorted({M.LAYOUT_BY_FILE[f] for f, _ in c.call_sites if f in M.LAYOUT_BY_FILE})
    if len(layouts) == 1:
        return layouts[0], f"perf log call sites {sorted(c.call_sites)} (no exact pinned-commit match)"
    if any("perf/total_train_time" in p.values for p in c.trainer_perf.values()):
        return "pre-#629 (perf/total_train_time)", "trainer logs perf/total_train_time, renamed in slime #629"
    return "", "no console call sites to date the run"


def detect_mode(c: Collected) -> SlimeDetected:
    """Loop and placement from the launch argv or Megatron's argument printout, else from the logs' shape."""
    d = SlimeDetected()
    d.version, d.evidence["version"] = detect_version(c)
    a = c.args
    interval = a.update_weights_interval or 1
    if a.loss_type == SFT_LOSS or a.rollout_function_path == SFT_ROLLOUT:
        d.mode = SFT
        which = f"--loss-type {a.loss_type}" if a.loss_type == SFT_LOSS else f"--rollout-function-path {SFT_ROLLOUT}"
        d.evidence["mode"] = f"{which} ({', '.join(a.sources)}): a trainer-only SFT run, no generation"
    elif (a.rollout_function_path and "fully_async" in a.rollout_function_path) or c.fully_async_ids:
        d.mode = FULLY_ASYNC
        d.evidence["mode"] = "fully-async rollout function" + (" (log lines)" if c.fully_async_ids else " (arguments)")
    elif a.train_script == "train_async.py":
        d.mode, d.evidence["mode"] = ONE_STEP_OFF, "train_async.py in the launch command"
    elif a.train_script == "train.py":
        d.mode, d.evidence["mode"] = SYNC, "train.py in the launch command"
    elif _rollout_ahead_of_trainer(c):
        d.mode, d.evidence["mode"] = ONE_STEP_OFF, "rollout k+1 finished before trainer step k was logged"
    elif a.colocate:
        d.mode, d.evidence["mode"] = SYNC, "--colocate (train_async.py refuses colocation)"
    elif c.trainer_perf and c.rollout_perf:
        d.mode, d.evidence["mode"] = SYNC, "no rollout finished ahead of the trainer (inferred)"
    d.update_weights_interval = interval if d.mode in (ONE_STEP_OFF, FULLY_ASYNC) else 1
    if a.colocate is not None:
        d.placement = "colocated" if a.colocate else "disaggregated"
        d.evidence["placement"] = "--colocate " + ("set" if a.colocate else "not set") + f" ({', '.join(a.sources)})"
    elif d.mode in (ONE_STEP_OFF, FULLY_ASYNC):
        d.placement, d.evidence["placement"] = "disaggregated", "async loops refuse --colocate"
    elif any(t.name in ("sleep", "wake_up") for t in c.timers) or any(
        "perf/sleep_time" in p.values for p in c.trainer_perf.values()
    ):
        d.placement, d.evidence["placement"] = "colocated", "trainer offloads (sleep/wake_up timers) each step"
    return d


def _rollout_ahead_of_trainer(c: Collected) -> bool:
    """In train_async.py rollout k+1 overlaps train step k, so it can finish before step k's perf line."""
    for rid, rollout in c.rollout_perf.items():
        trainer = c.trainer_perf.get(rid - 1)
        if trainer is not None and rollout.ts < trainer.ts:
            return True
    return False
