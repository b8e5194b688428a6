"""`benchbed reproduce`: a registry of published studies, each a folder of specs derived from its published
configuration (experiments/reproduce/STUDY/*.toml); every case is simulated and each reproduced quantity is
compared with the published figure.

The specs ship as package data: benchbed/data/reproduce is a link to experiments/reproduce (one copy in the
repository), which a wheel stores as files, so an installed benchbed reads them through importlib.resources."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
import tomllib

from benchbed import keys as K
from benchbed.errors import SpecError
from benchbed.metrics import compute_metrics
from benchbed.registry import Registry
from benchbed.sim import simulate_spec
from benchbed.spec import ExperimentSpec, build_spec, expand, load_spec
from benchbed.trace import Trace

EXPERIMENTS = resources.files("benchbed") / "data" / "reproduce"
SEMIANALYSIS_FILES: dict[str, tuple[str, ...]] = {
    "case1": ("case1.toml",),
    "case2": ("case2.toml",),
    "case3": ("case3-phase1.toml", "case3.toml"),
    "case4": ("case4.toml",),
}
# Tinker's steady average per million tokens: the Tinker TCO table of SemiAnalysis, "RL Systems Mind the Gap"
# (2026-06-16, newsletter.semianalysis.com/p/rl-systems-mind-the-gap-matching): its paywalled part, as transcribed by a
# third party, not confirmed against the article
TINKER_PER_MTOK = 3.34
IDLE_TOLERANCE = 0.05
FIT_TOLERANCE = 0.005  # out of sample: the synchronous baseline's step within 0.5% of its published value
FIT_STEPS = 6  # secant steps at most


@dataclass
class Row:
    """One reproduced quantity beside its published value."""

    case: str
    quantity: str
    published: float | list[float] | str
    reproduced: float
    tolerance: str
    ok: bool
    kind: str  # prediction: the published value was not an input; consistency: it was (directly or derived)
    inputs: list[str] = field(default_factory=list)
    published_quality: str = ""  # the accuracy the published run reached: published data, never simulated

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CaseRun:
    """One simulated variant of a case: its spec, trace and metric values."""

    spec: ExperimentSpec
    trace: Trace
    metrics: dict[str, float]
    run_dir: Path | None = None


Simulate = Callable[[ExperimentSpec], CaseRun]


def simulate_in_process(spec: ExperimentSpec) -> CaseRun:
    trace = simulate_spec(spec)
    values = {k: v.value for k, v in compute_metrics(trace, warmup_steps=spec.warmup_steps).items()}
    return CaseRun(spec, trace, values)


def case_specs(case: str, overrides: tuple[str, ...] = ()) -> list[ExperimentSpec]:
    """The case's specs (`STUDY/CASE`, or a SemiAnalysis case by its bare id), matrix expanded, with `--set`-style
    overrides applied."""
    study, name = resolve(case)[0]
    specs: list[ExperimentSpec] = []
    for filename in studies()[study].cases[name]:
        with resources.as_file(studies()[study].files / filename) as path:
            specs.extend(expand(load_spec(path, overrides), str(path)))
    return specs


def _near(case: str, quantity: str, published: float, reproduced: float, rel: float, kind: str,
          inputs: list[str]) -> Row:  # fmt: skip
    ok = abs(reproduced - published) <= rel * abs(published)
    return Row(case, quantity, published, reproduced, f"±{rel:.0%}", ok, kind, inputs)


def _idle(case: str, quantity: str, published: float | list[float], reproduced: float, kind: str,
          inputs: list[str]) -> Row:  # fmt: skip
    lo, hi = (published, published) if isinstance(published, float) else published
    ok = lo - IDLE_TOLERANCE <= reproduced <= hi + IDLE_TOLERANCE
    return Row(case, quantity, published, reproduced, f"±{IDLE_TOLERANCE:.2f}", ok, kind, inputs)


def _cost_rows(case: str, run: CaseRun, published: float, framework: str) -> list[Row]:
    price = float(run.spec.resources.price_per_gpu_hour or 0.0)
    cost = run.metrics["cost_per_mtok"]
    implied = published / cost * price
    tinker_price = TINKER_PER_MTOK / cost * price
    return [
        _near(case, f"{framework} $/Mtok at ${price:.2f}/GPU-h (published figure implies ${implied:.2f}/GPU-h)",
              published, cost, 0.10, "consistency", ["resources.price_per_gpu_hour (assumed)", "step time",
              "sim.tokens"]),
        _near(case, f"{framework} cost / Tinker ${TINKER_PER_MTOK}/Mtok (Tinker matches at ${tinker_price:.2f}/GPU-h)",
              round(published / TINKER_PER_MTOK, 2), cost / TINKER_PER_MTOK, 0.10, "consistency",
              ["resources.price_per_gpu_hour (assumed)", "Tinker TCO table"]),
    ]  # fmt: skip


def rows_case1(runs: list[CaseRun]) -> list[Row]:
    (run,) = runs
    m = run.metrics
    discard = m["wasted_generation_fraction"]
    return [
        _idle("case1", "trainer idle", 0.30, m["trainer_idle_ratio"], "prediction",
              ["sim.train_step_time (2.75/s)", "sim.concurrency (1.95/s)", "sim.oversample.factor (60%)"]),
        _near("case1", "trainer samples/s (capacity)", 2.75, m["trainer_capacity_sps"], 0.05, "consistency",
              ["sim.train_step_time"]),
        _near("case1", "generator samples/s (delivered to the trainer)", 1.95, m["trainer_throughput_sps"], 0.10,
              "consistency", ["sim.concurrency", "sim.latency", "sim.oversample"]),
        Row("case1", "discarded / dispatched rollouts", "up to 0.60", discard, "0.30-0.62", 0.30 <= discard <= 0.62,
            "consistency", ["sim.oversample.factor"]),
        *_cost_rows("case1", run, 6.90, "prime-rl"),
    ]  # fmt: skip


def rows_case2(runs: list[CaseRun]) -> list[Row]:
    (run,) = runs
    m = run.metrics
    ratio = m["trainer_capacity_sps"] / m["effective_generator_throughput_sps"]
    zero = m["zero_adv_group_fraction"]
    return [
        _idle("case2", "trainer idle", 0.74, m["trainer_idle_ratio"], "prediction",
              ["sim.concurrency (5x)", "sim.weight_sync_time (assumed)", "sim.train_step_time (assumed)"]),
        _near("case2", "trainer consumption / delivered rate", 5.0, ratio, 0.10, "consistency",
              ["sim.concurrency", "sim.latency", "sim.turns"]),
        Row("case2", "zero-advantage groups (55% of problems solved 100%)", "at least 0.55", zero, ">= 0.55",
            zero >= 0.55, "consistency", ["sim.pass_rate.always"]),
    ]  # fmt: skip


def slowest_sandbox_start_s(trace: Trace) -> float:
    """Longest wait of a sample for its sandbox: first sandbox.queue/start row to the end of its last attempt."""
    rows = trace.events[trace.events["key"].isin((K.SANDBOX_QUEUE, K.SANDBOX_START))]
    if not len(rows):
        return 0.0
    per_sample = rows.groupby("sample", observed=True).agg(t0=("t0", "min"), t1=("t1", "max"))
    return float((per_sample["t1"] - per_sample["t0"]).max())


def rows_case3(runs: list[CaseRun]) -> list[Row]:
    by_c = {run.spec.adapter_table("sim")["concurrency"]: run for run in runs}
    rows = []
    for c in (96, 256, 360):
        rows.append(
            _idle(
                "case3",
                f"trainer idle at {c} concurrent rollouts",
                [0.30, 0.60],
                by_c[c].metrics["trainer_idle_ratio"],
                "consistency",
                ["sim.latency.mean (derived from the idle range)", "sim.saturation", "sim.train_step_time"],
            )
        )
    fail_960 = by_c[960].metrics["sandbox_init_failure_rate"]
    fail_96 = by_c[96].metrics["sandbox_init_failure_rate"]
    sandbox_inputs = ["sim.sandbox.create_rate (PR #47)", "sim.sandbox.start_timeout_s (PR #47)"]
    rows.append(
        Row(
            "case3",
            "sandbox init failure rate at 960 (init dead)",
            "> 0",
            fail_960,
            "> 0.01",
            fail_960 > 0.01,
            "prediction",
            sandbox_inputs,
        )
    )
    rows.append(
        Row(
            "case3",
            "sandbox init failure rate at 96",
            0.0,
            fail_96,
            "< 0.005",
            fail_96 < 0.005,
            "prediction",
            sandbox_inputs,
        )
    )
    slowest = slowest_sandbox_start_s(by_c[960].trace) / 3600
    rows.append(Row("case3", "slowest sandbox start at 960 (hours: queue, attempts, backoff)", 1.0, slowest,
                    "0.5-1.5 h", 0.5 <= slowest <= 1.5, "consistency",
                    ["sim.sandbox.max_retries (derived from the 1-hour figure)", "sim.sandbox.start_timeout_s (PR #47)",
                     "sim.sandbox.backoff_s (assumed)"]))  # fmt: skip
    truncated = [by_c[c].metrics["response_truncated_fraction"] for c in (96, 256, 360)]
    mean_truncated = float(np.mean(truncated))
    rows.append(
        Row(
            "case3",
            "samples hitting the 128K cap",
            [0.03, 0.08],
            mean_truncated,
            "0.03-0.08",
            0.03 <= mean_truncated <= 0.08,
            "consistency",
            ["sim.tokens.response_mean"],
        )
    )
    return rows


def rows_case4(runs: list[CaseRun]) -> list[Row]:
    (run,) = runs
    m = run.metrics
    buffered = run.trace.of(K.SAMPLES_PARTIAL_BUFFERED).set_index("step")["value"]
    interval = int(run.spec.adapter_table("sim")["update_weights_interval"])
    steady = buffered[buffered.index > run.spec.warmup_steps]
    after_push = steady[steady.index % interval == 1]
    rise = float(after_push.mean() / max(steady[steady.index % interval != 1].mean(), 1e-9))
    return [
        _idle("case4", "trainer idle", 0.60, m["trainer_idle_ratio"], "consistency",
              ["sim.concurrency (derived from the idle)", "sim.train_step_time"]),
        Row("case4", "buffered partials after a weight push / other steps", "rises after steps 5, 10, 15", rise,
            "> 1.5x", rise > 1.5, "prediction",
            ["sim.update_weights_interval", "sim.abort_on_weight_push", "sim.oversample.policy"]),
        *_cost_rows("case4", run, 16.23, "slime"),
    ]  # fmt: skip


SEMIANALYSIS_ROWS: dict[str, Callable[[list[CaseRun]], list[Row]]] = {
    "case1": rows_case1, "case2": rows_case2, "case3": rows_case3, "case4": rows_case4,
}  # fmt: skip


def published(study: str) -> dict[str, Any]:
    """The study's table of published quantities (experiments/reproduce/STUDY/published.toml)."""
    return tomllib.loads((EXPERIMENTS / study / "published.toml").read_text())


def version_step_s(run: CaseRun) -> float:
    """Mean seconds per weight push after the warm-up: trainer step time x steps per push."""
    steps = run.trace.of(K.TRAINER_STEP)
    steady = steps[steps["step"] > run.spec.warmup_steps]
    interval = int(run.spec.sim.get("update_weights_interval", 1))
    return float((steady["t1"] - steady["t0"]).mean()) * interval


def _verl_scale(gpus: int, runs: list[CaseRun]) -> list[Row]:
    """Colocated step time (consistency) and the fully async speedup at 400 steps (prediction) on `gpus` GPUs."""
    q, accuracy = published("verl-fully-async")["quantities"], published("verl-fully-async")["quality"]
    case = f"verl-fully-async/{gpus}-gpus"
    colocated = _by_mode(runs, "sync")
    asynchronous = next(run for run in runs if run.spec.sim.get("staleness_threshold") == 0.5)
    sync_s, async_s = version_step_s(colocated), version_step_s(asynchronous)
    split = f"{gpus // 2}:{gpus // 2}"
    inputs = [
        "sim.train_step_time (update_actor)",
        "sim.staleness_threshold",
        "sim.max_groups_in_flight",
        "sim.fetch_s_per_sample",
        "response-length distribution",
    ]
    return [
        _near(case, f"colocated sync step time, {gpus} GPUs (s)", q[f"colocate_step_{gpus}"], sync_s, 0.10,
              "consistency", ["sim.train_step_time (old_log_prob + update_actor)", "sim.weight_sync_time (the rest)",
                              "sim.saturation (derived from gen at 32 vs 128 GPUs)", "response cap"]),
        replace(_near(case, f"speedup, fully async {split} over colocated sync, 400 steps", q[f"speedup_{gpus}_400"],
                      sync_s / async_s, 0.15, "prediction", inputs),
                published_quality=f"colocated {accuracy[f'colocate_{gpus}']}; fully async {accuracy[f'async_{gpus}']}"),
    ]  # fmt: skip


def rows_verl_128(runs: list[CaseRun]) -> list[Row]:
    """128 GPUs: the speedup at 100 and 400 steps, the trainer's idle, and the staleness ablation's times."""
    q = published("verl-fully-async")["quantities"]
    case = "verl-fully-async/128-gpus"
    rows = _verl_scale(128, runs)
    by_threshold = {run.spec.sim["staleness_threshold"]: run for run in runs if run.spec.sim["mode"] == "async"}
    colocated = _by_mode(runs, "sync")
    ratio = version_step_s(colocated) / version_step_s(by_threshold[0.5])
    rows.append(
        _near(
            case,
            "speedup, fully async 64:64 over colocated sync, 100 steps",
            q["speedup_128_100"],
            ratio,
            0.15,
            "prediction",
            ["as the 400-step row (the simulator's lengths do not drift)"],
        )
    )
    rows.append(
        _idle(
            case,
            "trainer idle, fully async 64:64 (gen / step)",
            q["trainer_idle_64_64"],
            by_threshold[0.5].metrics["trainer_idle_ratio"],
            "prediction",
            [
                "sim.train_step_time (update_actor)",
                "sim.fetch_s_per_sample (the 30B run's gen)",
                "sim.max_groups_in_flight",
                "response-length distribution",
            ],
        )
    )
    hours = {t: version_step_s(run) * 400 / 3600 for t, run in by_threshold.items()}
    accuracy = published("verl-fully-async")["quality"]
    for threshold, key in (
        (0.0, "hours_stale_0"),
        (0.1, "hours_stale_01"),
        (0.3, "hours_stale_03"),
        (0.5, "hours_stale_05"),
    ):
        row = _near(
            case,
            f"hours for 400 steps at staleness_threshold {threshold}",
            q[key],
            hours[threshold],
            0.15,
            "prediction",
            ["sim.staleness_threshold", "response-length distribution"],
        )
        rows.append(replace(row, published_quality=accuracy[key.replace("hours_", "")]))
    flat = hours[0.5] / hours[0.3]
    fastest = min(hours, key=hours.__getitem__)
    rows.append(
        Row(
            case,
            "staleness curve: fastest at 0.3-0.5 and flat there (hours at 0.5 / hours at 0.3)",
            "1.00 (17h22m / 17h20m)",
            flat,
            "0.95-1.05, fastest at 0.3 or 0.5",
            0.95 <= flat <= 1.05 and fastest in (0.3, 0.5),
            "prediction",
            ["sim.staleness_threshold", "response-length distribution"],
        )
    )
    return rows  # fmt: skip


def push_end_s(run: CaseRun, pushes: int) -> float:
    """Seconds from the run's start to the end of its `pushes`-th weight push (the step that makes it): a published
    total time at that many steps, warm-up included."""
    ends = run.trace.of(K.TRAINER_STEP)["t1"].to_numpy()
    return float(ends[pushes * int(run.spec.sim.get("update_weights_interval", 1)) - 1])


def rows_verl_30b(runs: list[CaseRun]) -> list[Row]:
    """Qwen3-30B-A3B, both runs simulated for the whole 400 steps with the trainer compute drifting by blocks of 100
    (derived from the colocated totals): the colocated step and total at 100 steps and the fully async trainer's gen
    share (consistency: inputs, directly or through the drift), the fully async totals at 100 and 400 steps and the
    speedups at 100, 200, 300 and 400 steps (predictions)."""
    q, accuracy = published("verl-fully-async")["quantities"], published("verl-fully-async")["quality"]
    case = "verl-fully-async/30b-a3b"
    colocated, asynchronous = _by_mode(runs, "sync"), _by_mode(runs, "async")
    inputs = [
        "sim.train_step_time (ref + update_actor)",
        "sim.train_time_drift (derived from the colocated totals)",
        "sim.weight_sync_time (the step's rest + the checkpoint-engine table's 15.76 s)",
        "sim.fetch_s_per_sample (this run's gen)",
        "sim.validation",
        "response-length distribution",
    ]
    quality = f"colocated {accuracy['colocate_30b']}; fully async {accuracy['async_30b']}"
    speedups = [
        replace(
            _near(
                case,
                f"speedup, fully async 96:32 over colocated sync, {n} steps",
                q[f"speedup_30b_{n}"],
                push_end_s(colocated, n) / push_end_s(asynchronous, n),
                0.15,
                "prediction",
                inputs,
            ),
            published_quality=quality if n == 400 else "",
        )
        for n in (100, 200, 300, 400)
    ]
    return [
        _near(case, "colocated sync step time, Qwen3-30B-A3B, 128 GPUs (s)", q["colocate_step_30b"],
              version_step_s(colocated), 0.10, "consistency",
              ["sim.train_step_time (old_log_prob + ref + update_actor)", "sim.weight_sync_time (the rest)",
               "sim.train_time_drift (mean 1.000)", "response cap"]),
        _near(case, "hours for 100 steps, colocated sync", q["hours_30b_colocate_100"],
              push_end_s(colocated, 100) / 3600, 0.10, "consistency",
              ["sim.train_time_drift (derived from this total)", "sim.train_step_time", "response cap"]),
        _idle(case, "trainer gen share, fully async 96:32 (gen / step)", q["trainer_idle_30b"],
              asynchronous.metrics["trainer_idle_ratio"], "consistency",
              ["sim.fetch_s_per_sample (this row's own gen)", "sim.validation"]),
        _near(case, "hours for 100 steps, fully async 96:32", q["hours_30b_async_100"],
              push_end_s(asynchronous, 100) / 3600, 0.15, "prediction", inputs),
        _near(case, "hours for 400 steps, fully async 96:32", q["hours_30b_async_400"],
              push_end_s(asynchronous, 400) / 3600, 0.15, "prediction", inputs),
        *speedups,
    ]  # fmt: skip


def _verl_one_step_off(engine: str, runs: list[CaseRun]) -> list[Row]:
    """Colocated step (consistency), one-step-off step and the total-time gain (predictions) for one engine."""
    q = published("verl-one-step-off")["quantities"]
    case, key = f"verl-one-step-off/{engine.lower()}", engine.lower()
    colocated = _by_mode(runs, "sync")
    overlapped = _by_mode(runs, "one_step_off")
    sync_s, overlap_s = version_step_s(colocated), version_step_s(overlapped)
    inputs = [
        "sim.latency (its generate_sequences on 4 GPUs)",
        "sim.train_step_time (old_log_prob + update_actor + the colocated run's rest)",
    ]
    return [
        _near(case, f"colocated sync step time, {engine} (s)", q[f"colocate_step_{key}"], sync_s, 0.10, "consistency",
              ["sim.train_step_time", "sim.weight_sync_time (the rest)", "sim.latency (generate_sequences)"]),
        _near(case, f"one-step-off step time, {engine} (s)", q[f"step_{key}"], overlap_s, 0.15, "prediction", inputs),
        _near(case, f"one-step-off gain in total time, {engine}", q[f"gain_{key}"], sync_s / overlap_s, 0.15,
              "prediction", inputs),
    ]  # fmt: skip


@dataclass(frozen=True)
class Study:
    """A published study: its cases (spec files in `folder`, by default experiments/reproduce/NAME/) and how each
    case's rows are made."""

    name: str
    title: str
    cases: dict[str, tuple[str, ...]]
    rows: dict[str, Callable[[list[CaseRun]], list[Row]]]
    folder: Any = None  # a Path or importlib Traversable holding the case files; None: the study's folder here

    @property
    def files(self) -> Any:
        """Where the study's spec files are."""
        return EXPERIMENTS / self.name if self.folder is None else self.folder


def _areal(size: str, runs: list[CaseRun]) -> list[Row]:
    """AReaL v0.3: synchronous hours (consistency), asynchronous hours and speedup at eta = 4 (predictions), and the
    interruptible-generation ablation's gain in generation throughput (prediction)."""
    q = published("areal")["quantities"]
    case, key = f"areal/{size}", size.replace(".", "")
    sync = _by_mode(runs, "sync")
    interrupting = next(run for run in runs if run.spec.sim.get("abort_on_weight_push"))
    plain = next(run for run in runs if run.spec.sim["mode"] == "async" and not run.spec.sim["abort_on_weight_push"])
    sync_h, async_h = version_step_s(sync) * 250 / 3600, version_step_s(interrupting) * 250 / 3600
    gain = interrupting.metrics["generator_throughput_sps"] / plain.metrics["generator_throughput_sps"]
    lengths = "tokens per step (the paper's Fig. 5c throughput x Table 1 step; 7B assumed the 1.5B's)"
    trainer = {
        "1.5b": "sim.train_step_time (FLOPs at an assumed MFU 0.343)",
        "7b": "sim.train_step_time (FLOPs at MFU 0.3581: the 1.5B's 0.343 x AReaL's published training rates)",
    }[size]
    accuracy = published("areal")["quality"]
    return [
        replace(_near(case, f"synchronous hours for 250 steps, {size.upper()}", q[f"sync_hours_{key}"], sync_h, 0.10,
                      "consistency", ["the step time is derived from this figure"]),
                published_quality=accuracy[f"sync_{key}"]),
        replace(_near(case, f"asynchronous hours for 250 steps, {size.upper()} (eta 4)", q[f"async_hours_{key}"],
                      async_h, 0.15, "prediction", [trainer, "resources (3:1 split, published)", lengths]),
                published_quality=accuracy[f"async_{key}"]),
        _near(case, f"speedup, asynchronous over synchronous AReaL, {size.upper()}", q[f"speedup_{key}"],
              sync_h / async_h, 0.15, "prediction", [trainer, "resources (3:1 split, published)", lengths]),
        _near(case, f"interruptible generation: generation throughput gain, {size.upper()}", q[f"interrupt_gain_{key}"],
              gain, 0.05, "prediction", ["sim.abort_on_weight_push", "sim.drain_on_weight_push (the blog's baseline)",
                                         "sim.decode (model bytes)", "sim.decode.reprefill_s_per_token"]),
    ]  # fmt: skip


def _nemo_rl(model: str, runs: list[CaseRun]) -> list[Row]:
    """NeMo RL v0.6: the on-policy step (consistency), the 1-step-off step and its gain over on policy (predictions)."""
    q = published("nemo-rl")["quantities"]
    case = f"nemo-rl/{model}"
    on_policy = _by_mode(runs, "sync")
    off = _by_mode(runs, "async")
    on_s, off_s = version_step_s(on_policy), version_step_s(off)
    split = "generation and training halves of the step (assumed)"
    admission = "sim.mode async: NeMo RL's admission (weights v serve step v + 1, one batch in flight)"
    return [
        _near(case, f"on-policy step time, {model} (s)", q[f"on_policy_step_{model}"], on_s, 0.10, "consistency",
              ["the step is an input", split]),
        _near(case, f"1-step-off step time, {model} (s)", q[f"off_step_{model}"], off_s, 0.15, "prediction",
              ["the on-policy step on half the GPUs", split, admission, "response-length distribution"]),
        _near(case, f"1-step-off gain over on policy, {model}", q[f"gain_{model}"], on_s / off_s, 0.15, "prediction",
              ["the on-policy step on half the GPUs", split, admission]),
    ]  # fmt: skip


NEMO_RL_MODELS = ("qwen3-30b-a3b", "deepseek-v3", "qwen3-235b")
STUDIES: dict[str, Study] = {
    "semianalysis": Study(
        "semianalysis", "SemiAnalysis, RL Systems Mind the Gap: four case studies (2026-06-16)",
        SEMIANALYSIS_FILES, SEMIANALYSIS_ROWS,
    ),
    "verl-fully-async": Study(
        "verl-fully-async",
        "verl fully_async_policy README: Qwen2.5-Math-7B DAPO and Qwen3-30B-A3B GRPO, colocated sync vs fully async",
        {"128-gpus": ("colocate-128.toml", "async-64-64.toml"), "64-gpus": ("colocate-64.toml", "async-32-32.toml"),
         "32-gpus": ("colocate-32.toml", "async-16-16.toml"),
         "30b-a3b": ("colocate-30b-128.toml", "async-30b-96-32.toml")},
        {"128-gpus": rows_verl_128, "64-gpus": lambda runs: _verl_scale(64, runs),
         "32-gpus": lambda runs: _verl_scale(32, runs), "30b-a3b": rows_verl_30b},
    ),
    "verl-one-step-off": Study(
        "verl-one-step-off", "verl one_step_off_policy README: Qwen2.5-Math-7B DAPO, 16 H20, colocated vs one step off",
        {"fsdp2": ("colocate-fsdp2.toml", "one-step-off-fsdp2.toml"),
         "megatron": ("colocate-megatron.toml", "one-step-off-megatron.toml")},
        {"fsdp2": lambda runs: _verl_one_step_off("FSDP2", runs),
         "megatron": lambda runs: _verl_one_step_off("Megatron", runs)},
    ),
    "areal": Study(
        "areal", "AReaL v0.3 (arXiv 2505.24298): R1-Distill-Qwen math RL, sync vs async AReaL (eta 4), 250 steps",
        {"1.5b": ("sync-1.5b.toml", "async-1.5b.toml", "async-1.5b-no-interrupt.toml"),
         "7b": ("sync-7b.toml", "async-7b.toml", "async-7b-no-interrupt.toml")},
        {"1.5b": lambda runs: _areal("1.5b", runs), "7b": lambda runs: _areal("7b", runs)},
    ),
    "nemo-rl": Study(
        "nemo-rl", "NeMo RL v0.6 performance summary: GRPO on H100, on policy vs 1-step off",
        {model: (f"on-policy-{model}.toml", f"one-step-off-{model}.toml") for model in NEMO_RL_MODELS},
        {model: partial(_nemo_rl, model) for model in NEMO_RL_MODELS},
    ),
}  # fmt: skip
ALIASES = {case: f"semianalysis/{case}" for case in SEMIANALYSIS_FILES}  # the ids from before studies


def _by_name(runs: list[CaseRun], suffix: str) -> CaseRun:
    """The run whose spec name ends with `suffix` (a study's specs are named reproduce-STUDY-VARIANT)."""
    return next(run for run in runs if run.spec.name.endswith(suffix))


def _by_mode(runs: list[CaseRun], mode: str) -> CaseRun:
    """The run whose spec simulates `sim.mode` = `mode`."""
    return next(run for run in runs if run.spec.sim["mode"] == mode)


def rollout_s(run: CaseRun) -> float:
    """Mean seconds per step the trainer waited for its batch after the warm-up: a colocated run's rollout time."""
    steps = run.trace.of(K.TRAINER_STEP)
    steady = steps[steps["step"] > run.spec.warmup_steps]
    ready = run.trace.of(K.TRAINER_WAIT)
    waits = ready[ready["step"] > run.spec.warmup_steps]
    return float((waits["t1"] - waits["t0"]).sum() / max(len(steady), 1))


def _vime_steps(case: str, q: dict[str, Any], runs: list[CaseRun], inputs: list[str]) -> list[Row]:
    """A vime#358 setup's sync step (consistency), fully async step and speedup (predictions)."""
    sync_s, async_s = version_step_s(_by_mode(runs, "sync")), version_step_s(_by_mode(runs, "async"))
    return [
        _near(case, "sync step time (s)", q["sync_step"], sync_s, 0.10, "consistency", inputs),
        _near(case, "fully async step time (s)", q["async_step"], async_s, 0.15, "prediction", inputs),
        _near(case, "speedup, fully async over sync", q["speedup"], sync_s / async_s, 0.15, "prediction", inputs),
    ]


def rows_vime(runs: list[CaseRun]) -> list[Row]:
    """vime#358 Setup 2: the sync step (consistency), the fully async step, its wait and the speedup (predictions)."""
    q, case = published("vime")["quantities"], "vime/qwen3-4b"
    inputs = [
        "sim.train_step_time (sync train_time)",
        "sim.train_contention (async / sync train_time)",
        "sim.latency (sync train_wait, cap-bound)",
        "response shape",
    ]
    return [
        *_vime_steps(case, q, runs, inputs),
        _idle(case, "trainer wait share, fully async", q["async_train_wait_share"],
              _by_mode(runs, "async").metrics["trainer_idle_ratio"], "prediction", inputs),
    ]  # fmt: skip


def rows_vime_setup1(runs: list[CaseRun]) -> list[Row]:
    """vime#358 Setup 1 (8 x 4, 1k cap): the sync step (consistency), the fully async step and the speedup
    (predictions); its train_wait and train_time rows are unread, so the step's split (with the KL loss's reference
    forward, 1.25 x the training) and the contention are Setup 2's."""
    inputs = [
        "sim.train_step_time (sync step x Setup 2's train : wait, assumed, with the KL loss's 1.25 x, derived)",
        "sim.train_contention (Setup 2's, assumed)",
        "sim.latency (the rest of the sync step, cap-bound)",
        "response shape",
    ]
    return _vime_steps("vime/qwen3-4b-setup1", published("vime")["quantities"]["setup1"], runs, inputs)


def weight_sync_total_s(run: CaseRun) -> float:
    """Seconds of trainer.weight_sync over the whole run."""
    rows = run.trace.of(K.TRAINER_WEIGHT_SYNC)
    return float((rows["t1"] - rows["t0"]).sum())


def rows_marin(runs: list[CaseRun]) -> list[Row]:
    """Marin #8936: weight-sync seconds over 20 updates, synchronous (consistency) and asynchronous (prediction)."""
    q, case = published("marin")["quantities"], "marin/qwen-gsm8k"
    sync, asynchronous = _by_name(runs, "-sync"), _by_name(runs, "-async")
    return [
        _near(case, "weight sync over 20 updates, synchronous (s)", q["sync_weight_sync_total"],
              weight_sync_total_s(sync), 0.10, "consistency", ["sim.weight_sync_time (48.79 / 20)"]),
        _near(case, "weight sync over 20 updates, asynchronous, with its pauses (s)", q["async_weight_sync_total"],
              weight_sync_total_s(asynchronous), 0.15, "prediction",
              ["sim.weight_sync_time (the sync transfer + the client's published 5 s wait before a pause)"]),
    ]  # fmt: skip


def _seer(model: str, runs: list[CaseRun]) -> list[Row]:
    """Seer's synchronous baseline: the rollout share of an iteration (consistency) and the share of rollout time the
    last tenth of requests takes (prediction: "up to 50%")."""
    q, case = published("seer")["quantities"], f"seer/{model}"
    (run,) = runs
    key = model.replace("-", "_")
    rollout = rollout_s(run) / version_step_s(run)
    tail = run.metrics["rollout_tail_share"]
    return [
        _near(case, "rollout share of a synchronous iteration", q[f"rollout_share_{key}"], rollout, 0.10,
              "consistency", ["sim.train_step_time, sim.weight_sync_time (Table 1 shares, unconfirmed)"]),
        Row(case, "share of rollout time taken by the last 10% of requests", f"up to {q['tail_share_max']:.2f}", tail,
            "0.25-0.55", 0.25 <= tail <= 0.55, "prediction",
            ["response-length shape (p99 = 10 x median at the cap)", "workload.max_response_tokens"]),
    ]  # fmt: skip


def rows_april(runs: list[CaseRun]) -> list[Row]:
    """APRIL: rollout throughput of active partial rollout over the baseline, against each dataset's published gain
    (one response-length shape for all three datasets, so one simulated gain). slime's throughput is a round's
    completion tokens over its rollout time; nothing is discarded, so in steady state a round generates on average
    the tokens of the batch it trains and the tokens-per-second ratio is the rollout-time ratio. The off-policy row
    is slime's off_policy_ratio counted as slime counts it, round by round (`off_policy_ratio`)."""
    q, case = published("april")["quantities"], "april/qwen3-4b"
    gain = rollout_s(_by_name(runs, "-baseline")) / rollout_s(_by_name(runs, "-partial"))
    inputs = [
        "sim.oversample (2x, partial, requeue_in_quota)",
        "sim.decode",
        "sim.reprefill_fraction",
        "response-length shape (p99 at Qwen3's 38,912, one for all datasets)",
    ]
    off_inputs = [
        "sim.oversample (2x, partial)",
        "response-length shape",
        "slime's per-round count (samples.off_policy_tokens, samples.decoded_tokens)",
    ]
    return [
        _near(case, f"rollout throughput gain, {label}", q[key], gain, 0.15, "prediction", inputs)
        for key, label in (("gain_dapo_math_17k", "DAPO-Math-17k"), ("gain_deepscaler", "DeepScaleR"),
                           ("gain_deepmath_103k", "DeepMath-103K"))
    ] + [_near(case, "off-policy share of a round's tokens (slime's off_policy_ratio)", q["off_policy_ratio"],
               off_policy_ratio(_by_name(runs, "-partial")), 0.15, "prediction", off_inputs)]  # fmt: skip


def off_policy_ratio(run: CaseRun) -> float:
    """slime's off_policy_ratio, the mean over the rounds after the warm-up of each round's figure (slime logs one a
    rollout, and the FAQ's "about 40%" is the share "in one round"): `round_off_policy_ratios`."""
    ratios = round_off_policy_ratios(run.trace)
    return float(ratios[ratios.index > run.spec.warmup_steps].mean())


def round_off_policy_ratios(trace: Trace) -> pd.Series:
    """slime's off_policy_ratio of each round (one round, one step: colocated), by step: off / (total + off), off the
    previous segment's tokens of each sample resumed in the round, total the completion tokens of every request
    that returned in it, aborted ones included (generate, abort and generate_rollout_async in
    slime/rollout/sglang_example.py; log_partial_rollout_data in slime/backends/megatron_utils/data.py, both at
    RLsys-Foundation/APRIL@a72b585)."""
    off = trace.of(K.SAMPLES_OFF_POLICY_TOKENS).set_index("step")["value"]
    total = trace.of(K.SAMPLES_DECODED_TOKENS).set_index("step")["value"]
    return off / (total + off)


def rows_arrol(runs: list[CaseRun]) -> list[Row]:
    """ARRoL: training speedup of early pruning over the synchronous baseline ("up to 1.7x": a gain, at most 1.7x)."""
    q, case = published("arrol")["quantities"], "arrol/sync-7b"
    speedup = version_step_s(_by_name(runs, "-baseline")) / version_step_s(_by_name(runs, "-pruned"))
    top = q["speedup_max"] * 1.15
    return [
        Row(case, "training speedup from early pruning", f"up to {q['speedup_max']}", speedup, f"1.0-{top:.2f}",
            1.0 < speedup <= top, "prediction",
            ["sim.early_prune (fraction and point ASSUMED)", "baseline step (verl's colocated 7B DAPO step)"]),
    ]  # fmt: skip


STUDIES.update(
    {
        "vime": Study("vime", "vime #358 (Setups 2 and 1): Qwen3-4B GRPO on 2 + 2 NPUs, sync vs fully async",
                      {"qwen3-4b": ("sync.toml", "fully-async.toml"),
                       "qwen3-4b-setup1": ("sync-qwen3-4b-setup1.toml", "fully-async-qwen3-4b-setup1.toml")},
                      {"qwen3-4b": rows_vime, "qwen3-4b-setup1": rows_vime_setup1}),
        "marin": Study("marin", "Marin #8936: Qwen/GSM8K, 20 updates, weight sync under sync and async RL",
                       {"qwen-gsm8k": ("sync.toml", "async.toml")}, {"qwen-gsm8k": rows_marin}),
        "seer": Study("seer", "Seer (arXiv 2511.14617): synchronous rollout shares and the last tenth of requests",
                      {"moonlight": ("moonlight.toml",), "qwen2-vl-72b": ("qwen2-vl-72b.toml",)},
                      {"moonlight": partial(_seer, "moonlight"), "qwen2-vl-72b": partial(_seer, "qwen2-vl-72b")}),
        "april": Study("april", "APRIL README: Qwen3-4B on one 8-GPU node, active partial rollouts",
                       {"qwen3-4b": ("baseline.toml", "partial.toml")}, {"qwen3-4b": rows_april}),
        "arrol": Study("arrol", "ARRoL (arXiv 2603.24840): early rollout pruning, synchronous GRPO/DAPO",
                       {"sync-7b": ("baseline.toml", "pruned.toml")}, {"sync-7b": rows_arrol}),
    }
)  # fmt: skip
STUDY_REGISTRY: Registry[Study] = Registry(
    "benchbed.studies", "study", (lambda obj: isinstance(obj, Study), "a benchbed.api.Study"), SpecError
)
for _study in STUDIES.values():
    STUDY_REGISTRY.register(_study.name, _study)


def studies() -> dict[str, Study]:
    """Every registered study: benchbed's own in their order, then those outside packages register, by name."""
    return {**STUDIES, **{name: STUDY_REGISTRY.load(name) for name in STUDY_REGISTRY.names() if name not in STUDIES}}


def study_of(case: str) -> str:
    """The study a row's case belongs to (SemiAnalysis rows carry their bare case ids)."""
    return case.partition("/")[0] if "/" in case else "semianalysis"


def assumptions(study: str) -> list[str]:
    """Every ASSUMED line of the study's specs (`file: field = value  # why`), each once, in file order."""
    lines: list[str] = []
    for name in dict.fromkeys(f for files in studies()[study].cases.values() for f in files):
        for line in (studies()[study].files / name).read_text().splitlines():
            code, _, why = line.partition("#")
            if "ASSUMED" in why and code.strip():
                entry = f"{name}: {code.strip()}  # {why.strip()}"
                if entry not in lines:
                    lines.append(entry)
    return lines


def resolve(target: str) -> list[tuple[str, str]]:
    """`all`, `STUDY`, `STUDY/CASE` or a bare SemiAnalysis case id -> (study, case) pairs, in registry order."""
    known = studies()
    if target == "all":
        return [(study.name, case) for study in known.values() for case in study.cases]
    target = ALIASES.get(target, target)
    study, _, case = target.partition("/")
    if study in known and (not case or case in known[study].cases):
        return [(study, name) for name in known[study].cases if not case or name == case]
    choices = ", ".join(["all", *known, *(f"{s.name}/{c}" for s in known.values() for c in s.cases), *ALIASES])
    raise SpecError(f"unknown study or case {target!r}; expected one of: {choices}")


def with_latency_scale(spec: ExperimentSpec, scale: float) -> ExperimentSpec:
    """The spec with its mean LLM latency (sim.latency.mean) multiplied by `scale`."""
    data = spec.model_dump(mode="json")
    data["sim"]["latency"]["mean"] *= scale
    return build_spec(data, f"{spec.source} (sim.latency.mean x {scale:.4f})")


def _baseline_error(rows: list[Row]) -> float:
    """Relative error of the case's first consistency row (the synchronous baseline's published step or hours)."""
    row = next(row for row in rows if row.kind == "consistency")
    return row.reproduced / float(cast(float, row.published)) - 1.0


def out_of_sample(study: str, case: str, runs: list[CaseRun], rows: list[Row], simulate: Simulate) -> list[Row]:
    """Fit one scale on every variant's mean LLM latency so that the synchronous baseline reproduces its own
    published step (secant steps on the baseline alone, to within FIT_TOLERANCE), then simulate the other variants
    with it: their predictions, out of sample. Cases without a synchronous variant and one other give none."""
    if study == "semianalysis" or len(runs) < 2:
        return []
    sync = [i for i, run in enumerate(runs) if run.spec.sim.get("mode") == "sync"]
    if len(sync) != 1:
        return []
    i, make_rows = sync[0], studies()[study].rows[case]
    points, baselines = [(1.0, _baseline_error(rows))], {1.0: runs[i]}
    scale = 1.0 / (1.0 + points[0][1])
    for _ in range(FIT_STEPS):
        if abs(points[-1][1]) <= FIT_TOLERANCE:
            break
        baselines[scale] = simulate(with_latency_scale(runs[i].spec, scale))
        points.append((scale, _baseline_error(make_rows([*runs[:i], baselines[scale], *runs[i + 1 :]]))))
        (s0, e0), (s1, e1) = points[-2:]
        scale = s1 - e1 * (s1 - s0) / (e1 - e0) if e1 != e0 else s1
    fitted = min(points, key=lambda point: abs(point[1]))[0]
    fit_runs = [  # at a scale of 1 the variants are the in-sample runs (the simulator is deterministic)
        baselines[fitted] if j == i else run if fitted == 1.0 else simulate(with_latency_scale(run.spec, fitted))
        for j, run in enumerate(runs)
    ]
    label = f"out of sample: sim.latency.mean x {fitted:.3f}, fitted on the synchronous baseline"
    return [
        replace(row, kind="out-of-sample", inputs=[label, *row.inputs])
        for row in make_rows(fit_runs)
        if row.kind == "prediction"
    ]


def reproduce(targets: list[str], simulate: Simulate = simulate_in_process, overrides: tuple[str, ...] = (),
              progress: Callable[[str], None] | None = None) -> list[Row]:  # fmt: skip
    """Simulate every variant of each selected case and return its table rows, then its out-of-sample rows."""
    selected = list(dict.fromkeys(pair for target in targets for pair in resolve(target)))
    rows: list[Row] = []
    for study, case in selected:
        runs = []
        for spec in case_specs(f"{study}/{case}", overrides):
            if progress is not None:
                progress(f"{study}/{case}: {spec.name} {spec.variant or ''}".strip())
            runs.append(simulate(spec))
        case_rows = studies()[study].rows[case](runs)
        rows.extend(case_rows)
        rows.extend(out_of_sample(study, case, runs, case_rows, simulate))
    return rows
