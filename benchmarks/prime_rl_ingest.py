"""Speed of `PrimeRLAdapter.parse` on a large HEAD-era run: wall time and peak RSS of the ingesting process.

    .venv/bin/python benchmarks/prime_rl_ingest.py [--steps 200] [--episodes 100000] [--tokens 128] [--keep DIR]

Writes a synthetic run directory in the 559b447 formats (metrics.jsonl with interleaved trainer/orchestrator rows,
rollouts/step_N/train/{all,effective}/traces.jsonl built by the fixture generator's `episode_record`), then parses
it in a fresh subprocess so the peak RSS is the ingest's alone. Target (issue 4): < 20 s and < 2 GiB.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = ROOT / "tests" / "fixtures" / "prime_rl" / "generate.py"

INGEST = """
import json, resource, sys, time
t = time.perf_counter()
from benchbed.adapters.prime_rl import PrimeRLAdapter
trace = PrimeRLAdapter().parse(sys.argv[1])
parse_s = time.perf_counter() - t
from benchbed.metrics import compute_metrics
metrics = compute_metrics(trace)
total_s = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"parse_s": parse_s, "parse_and_metrics_s": total_s, "events": len(trace.events),
                  "rollouts": int((trace.events["key"] == "rollout").sum()), "peak_rss_kib": rss,
                  "trainer_idle_ratio": metrics["trainer_idle_ratio"].value}))
"""


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("prime_rl_fixture_generator", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def write_run(run: Path, steps: int, episodes: int, tokens: int) -> int:
    """A synthetic run; returns the bytes written to traces.jsonl files."""
    gen = load_generator()
    rng = random.Random(0)
    timers = [(rng.uniform(5, 40), 0.4, 20.0, 3.0, 0.0) for _ in range(steps)]
    sim = gen.Sim.build(timers)
    per_step = episodes // steps
    (run / "configs").mkdir(parents=True)
    (run / "configs" / "orchestrator.json").write_text(
        json.dumps({"batch_size": per_step, "group_size": 16, "max_off_policy_steps": 8, "max_steps": steps})
    )
    rows = []
    written = 0
    for k in range(1, steps + 1):
        folder = run / "rollouts" / f"step_{k}" / "train"
        (folder / "all").mkdir(parents=True)
        (folder / "effective").mkdir(parents=True)
        window = []
        for i in range(per_step):
            start = sim.ship[k - 1] - rng.uniform(20, 60)
            duration = sim.ship[k - 1] - start - 0.5
            e = gen.EpisodeSpec(
                step=k,
                group=f"g{k}-{i // 16}",
                index=i % 16,
                t_start=start,
                duration=duration,
                boot_s=rng.uniform(2, 10),
                reward=float(rng.random() < 0.5),
                v_start=sim.version_at(start),
                v_end=sim.version_at(start + duration),
                tokens=tokens,
            )
            window.append(e)
        with (
            (folder / "all" / "traces.jsonl").open("w") as all_fh,
            (folder / "effective" / "traces.jsonl").open("w") as eff_fh,
        ):
            for e in window:
                line = gen.dump_record(gen.episode_record(e))
                all_fh.write(line)
                written += len(line)
                if e.index != 15:
                    eff_fh.write(line)
                    written += len(line)
        rows.append((sim.ship[k - 1] + 0.2, gen.orchestrator_row(k, sim, window, window, 0, 0.0)))
        rows += [(r["time"], r) for r in gen.trainer_rows(k, timers[k - 1], sim.t_end[k - 1])]
    rows.sort(key=lambda r: r[0])
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for _, r in rows))
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--tokens", type=int, default=128, help="prompt and completion tokens per episode record")
    parser.add_argument("--keep", type=Path, help="write the run here and keep it; reused if it already holds one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = args.keep or Path(tmp) / "run"
        t = time.perf_counter()
        if (run / "metrics.jsonl").exists():  # a run kept by an earlier --keep: measure the ingest only
            written = sum(p.stat().st_size for p in run.glob("rollouts/step_*/train/*/traces.jsonl"))
        else:
            written = write_run(run, args.steps, args.episodes, args.tokens)
        gen_s = time.perf_counter() - t
        proc = subprocess.run([sys.executable, "-c", INGEST, str(run)], capture_output=True, text=True, check=False)
        if proc.returncode:
            sys.stderr.write(proc.stderr)
            return proc.returncode
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    child_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result |= {
        "steps": args.steps,
        "episodes": args.episodes,
        "traces_bytes": written,
        "generate_s": gen_s,
        "peak_rss_gib": round(child_rss / 2**20, 3),
        "load_average_1m": os.getloadavg()[0],
    }
    print(json.dumps(result, indent=1))
    ok = result["parse_s"] < 20 and child_rss < 2 * 2**20
    print(
        f"parse {result['parse_s']:.1f} s, peak RSS {result['peak_rss_gib']:.2f} GiB: "
        f"{'within' if ok else 'OVER'} the 20 s / 2 GiB target"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
