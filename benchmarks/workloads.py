"""Synthetic inputs for the benchmarks, written in each framework's on-disk format, plus the baselines' helpers.

Each writer is deterministic for its arguments, so two machines benchmark the same bytes."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"


def load_module(path: Path, name: str) -> ModuleType:
    """Import a fixture generator by path (they live beside the fixtures, not in a package)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------------------------------ verl
def verl_base_record() -> dict[str, float]:
    """One step's keys from the committed verl 0.9.1 fixture (produced by verl's own Tracking logger)."""
    fixture = FIXTURES / "verl" / "verl-0.9.1-v1_sync" / "metrics.jsonl"
    for line in fixture.read_text().splitlines():
        data = json.loads(line)["data"]
        if "timing_s/step" in data:
            return {k: v for k, v in data.items() if isinstance(v, (int, float))}
    raise RuntimeError(f"{fixture}: no step with timing_s/step; regenerate the verl fixtures")


def write_verl_jsonl(path: Path, steps: int, width: int, seed: int = 0) -> int:
    """A V1 sync run in verl's file-logger format, padded with per-layer MoE keys to `width` keys per step."""
    rng = random.Random(seed)
    base = verl_base_record()
    layer_keys = [f"rollout/moe/max_vio/layer_{i}" for i in range(max(0, width - len(base)))]
    with path.open("w") as fh:
        for step in range(1, steps + 1):
            data = {k: v * rng.uniform(0.9, 1.1) if isinstance(v, float) else v for k, v in base.items()}
            data["training/global_step"] = step
            data.update({k: rng.random() for k in layer_keys})
            fh.write(json.dumps({"step": step, "data": data}, separators=(",", ":")) + "\n")
    return len(base) + len(layer_keys)


# -------------------------------------------------------------------------------------------------- prime-rl
def write_prime_rl_run(run: Path, steps: int, episodes: int, tokens: int = 128) -> None:
    """A HEAD-era (559b447) run: metrics.jsonl with interleaved trainer/orchestrator rows and per-step
    rollouts/step_N/train/{all,effective}/traces.jsonl episode records from the fixture generator."""
    gen = load_module(FIXTURES / "prime_rl" / "generate.py", "prime_rl_fixture_generator")
    rng = random.Random(0)
    timers = [(rng.uniform(5, 40), 0.4, 20.0, 3.0, 0.0) for _ in range(steps)]
    sim = gen.Sim.build(timers)
    per_step = episodes // steps
    (run / "configs").mkdir(parents=True)
    (run / "configs" / "orchestrator.json").write_text(
        json.dumps({"batch_size": per_step, "group_size": 16, "max_off_policy_steps": 8, "max_steps": steps})
    )
    rows: list[tuple[float, dict[str, Any]]] = []
    for k in range(1, steps + 1):
        folder = run / "rollouts" / f"step_{k}" / "train"
        (folder / "all").mkdir(parents=True)
        (folder / "effective").mkdir(parents=True)
        window = []
        for i in range(per_step):
            start = sim.ship[k - 1] - rng.uniform(20, 60)
            duration = sim.ship[k - 1] - start - 0.5
            window.append(gen.EpisodeSpec(
                step=k, group=f"g{k}-{i // 16}", index=i % 16, t_start=start, duration=duration,
                boot_s=rng.uniform(2, 10), reward=float(rng.random() < 0.5), v_start=sim.version_at(start),
                v_end=sim.version_at(start + duration), tokens=tokens,
            ))  # fmt: skip
        with (folder / "all" / "traces.jsonl").open("w") as all_fh, \
                (folder / "effective" / "traces.jsonl").open("w") as eff_fh:  # fmt: skip
            for e in window:
                line = gen.dump_record(gen.episode_record(e))
                all_fh.write(line)
                if e.index != 15:
                    eff_fh.write(line)
        rows.append((sim.ship[k - 1] + 0.2, gen.orchestrator_row(k, sim, window, window, 0, 0.0)))
        rows += [(r["time"], r) for r in gen.trainer_rows(k, timers[k - 1], sim.t_end[k - 1])]
    rows.sort(key=lambda r: r[0])
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for _, r in rows))


def jsonl_files(run: Path) -> list[Path]:
    """Every JSONL file a prime-rl ingest reads: metrics.jsonl and each traces.jsonl."""
    return [run / "metrics.jsonl", *sorted(run.glob("rollouts/step_*/train/*/traces.jsonl"))]


# ----------------------------------------------------------------------------------------------------- slime
SLIME_TIMERS = {"sleep": 4.0, "update_weights": 2.0, "wake_up": 2.0, "data_preprocess": 0.5, "train_wait": 60.0,
                "ref_log_probs": 3.0, "log_probs": 2.0, "actor_train": 14.0, "train": 20.0}  # fmt: skip


def write_slime_run(out: Path, steps: int) -> Path:
    """A 624b824-style run: per step a rollout perf dict, trainer Timer lines, rollout/step/perf dicts, engine
    noise; TensorBoard events written by a real SummaryWriter. Returns the console log's path."""
    f = load_module(FIXTURES / "slime" / "make_fixtures.py", "slime_make_fixtures")
    site = f.SITES["624b824"]
    lines = f.args_block({"rollout_batch_size": 32, "n_samples_per_prompt": 8, "global_batch_size": 256,
                          "colocate": True, "update_weights_interval": 1})  # fmt: skip
    pairs = []
    t = 5.0
    timers = SLIME_TIMERS
    for rid in range(steps):
        rollout = f.rollout_perf(40.0, {"0": rid % 3, "1": rid % 2})
        trainer = f.trainer_perf(timers)
        pairs.append((rollout, trainer))
        end = t + timers["train_wait"] + timers["train"]
        lines.append(f.line(f.ROLLOUT, end - 25, site["rollout_perf"], f"perf {rid}: {rollout}"))
        for name in ("wake_up", "data_preprocess", "train_wait", "ref_log_probs", "log_probs", "actor_train"):
            lines.append(f.line(f.TRAINER, end - 20, "timer.py:24", f"Timer {name} start"))
            lines.append(f.line(f.TRAINER, end - 2, "timer.py:32", f"Timer {name} end (elapsed: {timers[name]:.1f}s)"))
        stats = {"rollout/log_probs": -0.41, "rollout/raw_reward": 0.5, "rollout/advantages": 0.0}
        lines.append(f.line(f.TRAINER, end - 15, site["trainer_rollout"], f"rollout {rid}: {stats}"))
        for k in range(2):
            step_dict = {"train/loss": 0.01, "train/grad_norm": 0.2, "train/global_batch_size": 128,
                         "train/step": 2 * rid + k}  # fmt: skip
            lines.append(f.line(f.TRAINER, end - 5, site["step"], f"step {2 * rid + k}: {step_dict}"))
        lines.append(f.line(f.TRAINER, end, site["trainer_perf"], f"perf {rid}: {trainer}"))
        lines.append("[2026-04-15 07:59:01 TP0] Decode batch. #running-req: 31, #token: 118232, gen throughput: 2412")
        t = end
    out.mkdir(parents=True, exist_ok=True)
    (out / "run.log").write_text("\n".join(lines) + "\n")
    f.write_tensorboard(out / "tensorboard", pairs)
    return out / "run.log"


# ----------------------------------------------------------------------------------------------- simulator
def sim_spec(samples: int) -> dict[str, Any]:
    """A generation-bound async run with B = 512 (32 prompts x 16) and enough steps for `samples`."""
    return {
        "name": f"speed-{samples}",
        "adapter": "sim",
        "workload": {"prompts_per_step": 32, "group_size": 16, "max_staleness": 4, "steps": max(1, samples // 512)},
        "sim": {"mode": "async", "concurrency": 1024, "latency": {"mean": 60.0, "cv": 0.6}, "train_step_time": 20.0,
                "pass_rate": {"dist": "beta", "a": 0.6, "b": 0.6}},
    }  # fmt: skip


# ------------------------------------------------------------------------------------------------------ store
EPOCH = datetime(2008, 1, 1, tzinfo=timezone.utc)  # night 0; a night a day after it, a repeat a minute apart


def write_store(root: Path, machines: int, entries: int, nights: int, repeats: int = 3) -> int:
    """A results store of nightly-suite records (machines × entries × nights × repeats), written from one record
    as JSON text with ids substituted (no simulation, no validation per record), plus each machine's catalog index
    built from the same records with the catalog's own row function, as benchbed's writers leave it."""
    import pyarrow as pa

    from benchbed.catalog import SCHEMA, Catalog, _Index, _spec_dirs, catalog_row
    from benchbed.record import AdapterInfo, BenchbedInfo, MachineInfo, MetricValue, RunRecord, SuiteInfo

    rng = random.Random(0)
    metrics = ("trainer_idle_ratio", "generator_utilization", "staleness_mean", "trainer_throughput_sps",
               "zero_adv_group_fraction", "step_time_mean_s")  # fmt: skip
    written = 0
    for m in range(machines):
        rows = []
        for e in range(entries):
            for night in range(nights):
                for rep in range(repeats):
                    record = RunRecord(
                        spec={"name": f"entry{e}"}, spec_id=f"entry{e}-{e:08x}", repeat=rep, status="succeeded",
                        adapter=AdapterInfo(name="sim", framework="benchbed-sim", mode="async"),
                        benchbed=BenchbedInfo(version="0.1.0", commit="c0ffee" * 6),
                        machine=MachineInfo(name=f"machine{m}", host="h", os="Linux", cpu="c", cpu_count=2,
                                            python="3.11"),
                        started_at=(EPOCH + timedelta(days=night, minutes=rep)).isoformat(),
                        suite=SuiteInfo(name="nightly-cpu", entry=f"entry{e}", night=f"n{night:04d}",
                                        watch=["trainer_idle_ratio", "staleness_mean"]),
                        metrics={k: MetricValue(value=rng.random(), unit="ratio") for k in metrics},
                    )  # fmt: skip
                    rel = f"machine{m}/sim/{record.spec_id}/{night:05d}T{rep:02d}-c0ffee00"
                    (root / rel).mkdir(parents=True)
                    (root / rel / "record.json").write_text(record.model_dump_json())
                    rows.append(catalog_row(rel, record))
                    written += 1
        catalog = Catalog(root)
        catalog.dir.mkdir(parents=True, exist_ok=True)
        index = _Index(rows=pa.Table.from_pylist(rows, schema=SCHEMA), dirs=_spec_dirs(root / f"machine{m}"))
        catalog._store(f"machine{m}", index)
    return written
