"""Golden traces: the simulator emits exactly the same events for the same spec and seed.

Each hash covers every event of the trace (values, order, column names), so a refactor of the event loop or of
the trace builder that changes one timestamp, one status or one row's place fails here. The hashes were taken
from the simulator before its event handlers were split out of one function (issue 18 item 5)."""

from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchbed.sim import simulate_spec
from benchbed.spec import build_spec, expand, load_spec
from benchbed.trace import Trace

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
REPRODUCE = resources.files("benchbed") / "data" / "reproduce" / "semianalysis"


def trace_hash(trace: Trace) -> str:
    """SHA-256 over the column names and a per-row hash of every column's values, in row order."""
    events = trace.events
    digest = hashlib.sha256("|".join(events.columns).encode())
    digest.update(pd.util.hash_pandas_object(events, index=False, categorize=False).to_numpy().tobytes())
    return digest.hexdigest()[:16]


def mechanism(sim: dict, prompts: int = 4, group: int = 4, staleness: int = 1, steps: int = 30, **workload):
    return build_spec({
        "name": "golden", "adapter": "sim",
        "workload": {"prompts_per_step": prompts, "group_size": group, "max_staleness": staleness, "steps": steps,
                     **workload},
        "sim": sim,
    })  # fmt: skip


LAT = {"mean": 30.0, "cv": 0.8}
MECHANISMS = {
    "sync": ({"mode": "sync", "concurrency": 16, "latency": LAT, "train_step_time": 5.0, "seed": 2}, {}),
    "one_step_off": ({"mode": "one_step_off", "concurrency": 32, "latency": LAT, "train_step_time": 5.0,
                      "weight_sync_time": 1.0, "seed": 3}, {}),
    "async_count": ({"mode": "async", "concurrency": 24, "latency": LAT, "train_step_time": 4.0,
                     "weight_sync_time": 0.5, "seed": 4}, {"staleness": 2}),
    "async_drop": ({"mode": "async", "staleness_policy": "drop", "concurrency": 48, "latency": {"mean": 30.0,
                    "cv": 1.5}, "train_step_time": 2.0, "seed": 5}, {"staleness": 1}),
    "filter_zero_adv": ({"mode": "async", "concurrency": 32, "latency": LAT, "train_step_time": 3.0,
                         "filter_zero_adv": True, "pass_rate": {"dist": "mixture", "a": 0.5, "b": 0.5,
                         "always": 0.2, "never": 0.1}, "seed": 6}, {}),
    "oversample_discard": ({"mode": "sync", "concurrency": 64, "latency": LAT, "train_step_time": 5.0,
                            "oversample": {"factor": 2.0, "policy": "discard"}, "seed": 7}, {}),
    "oversample_carry": ({"mode": "async", "concurrency": 64, "latency": LAT, "train_step_time": 3.0,
                          "oversample": {"factor": 1.5, "policy": "carry"}, "seed": 8}, {}),
    "partial_rollout": ({"mode": "async", "concurrency": 64, "latency": LAT, "train_step_time": 3.0,
                         "oversample": {"factor": 2.0, "policy": "partial"}, "update_weights_interval": 3,
                         "abort_on_weight_push": True, "reprefill_fraction": 0.1, "weight_sync_time": 1.0,
                         "seed": 9}, {"staleness": 2}),
    "abort_on_push": ({"mode": "async", "concurrency": 32, "latency": LAT, "train_step_time": 3.0,
                       "abort_on_weight_push": True, "reprefill_fraction": 0.5, "seed": 10}, {}),
    "sandboxes": ({"mode": "async", "concurrency": 40, "latency": LAT, "train_step_time": 3.0,
                   "sandbox": {"start_s": {"mean": 3.0, "cv": 0.5}, "create_rate": 2.0, "max_starting": 8,
                               "account_limit": 36, "start_timeout_s": 20.0, "fail_p": 0.1, "max_retries": 1,
                               "backoff_s": 2.0}, "seed": 11}, {}),
    "tokens_turns_saturation": ({"mode": "async", "concurrency": 32, "latency": {"dist": "empirical",
                                 "values": [10.0, 20.0, 45.0, 90.0]}, "train_step_time": 3.0,
                                 "tokens": {"prompt": 100, "response_mean": 800},
                                 "turns": {"count": 3, "dist": "poisson", "env_s": {"mean": 2.0, "cv": 1.0}},
                                 "saturation": {"engines": 2, "seqs_per_engine": 8}, "seed": 12},
                                {"max_response_tokens": 1500}),
    "fixed_latency_ties": ({"mode": "async", "concurrency": 16, "latency": 10.0, "train_step_time": 2.0,
                            "update_weights_interval": 2, "weight_sync_time": 1.0, "seed": 13}, {}),
    "drain_on_push": ({"mode": "async", "concurrency": 32, "latency": LAT, "train_step_time": 3.0,
                       "drain_on_weight_push": True, "weight_sync_time": 0.5, "seed": 14}, {"staleness": 2}),
    "train_contention": ({"mode": "async", "concurrency": 32, "latency": LAT, "train_step_time": 3.0,
                          "train_contention": 0.25, "seed": 15}, {}),
}  # fmt: skip

GOLDEN = {
    "abort_on_push": "c467235cdaf61923",
    "async_count": "a546d5639d0163db",
    "async_drop": "bef39a0f71f4b516",
    "case1": "d0f814fad9f303c9",
    "case2": "33445a5a68176a13",
    "case3-phase1": "9da8cf79219753c2",
    "case3/256": "15bc04d8978151e4",
    "case3/360": "7bd9388d078a3b34",
    "case3/960": "32ff4f935a355f40",
    "case4": "3a6e6791fec623cb",
    "drain_on_push": "af621f35f06da7f5",
    "filter_zero_adv": "f6dd74773718e214",
    "fixed_latency_ties": "f563bdd72a6f774c",
    "one_step_off": "866ba267c07d3962",
    "oversample_carry": "769eb78827d9492f",
    "oversample_discard": "cef041c4196c5fe9",
    "partial_rollout": "f6b290122d1d7bed",
    "quickstart": "7e406c31485ddf60",
    "sandboxes": "dc8274aa32f2e212",
    "sync": "a189fa6ea8d72e09",
    "tokens_turns_saturation": "d76031a48b951f03",
    "train_contention": "341f2cf796210157",
}


def _reproduce_spec(name: str):
    """`case3/960`: the case3 variant with sim.concurrency = 960; `case1`: the single spec of case1."""
    filename, _, concurrency = name.partition("/")
    with resources.as_file(REPRODUCE / f"{filename}.toml") as path:
        specs = expand(load_spec(path), str(path))
    return next(s for s in specs if not concurrency or s.sim["concurrency"] == int(concurrency))


def _spec(name: str):
    if name == "quickstart":
        return load_spec(EXPERIMENTS / "quickstart.toml")
    if name.startswith("case"):
        return _reproduce_spec(name)
    sim, workload = MECHANISMS[name]
    return mechanism(sim, **workload)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_trace_matches_golden_hash(name: str) -> None:
    trace = simulate_spec(_spec(name))
    assert trace_hash(trace) == GOLDEN[name]


def test_hash_sees_one_changed_timestamp() -> None:
    trace = simulate_spec(_spec("sync"))
    before = trace_hash(trace)
    events = trace.events.copy()
    events.loc[events.index[-1], "t1"] = np.nextafter(events["t1"].iloc[-1], np.inf)
    assert trace_hash(Trace(events, trace.meta)) != before
