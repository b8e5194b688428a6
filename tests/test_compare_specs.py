"""The framework comparison (experiments/compare/): one spec per framework adapter, every one on the same workload
and the same GPUs, each valid for its adapter (its table checked by the adapter's options model when loaded)."""

from __future__ import annotations

from pathlib import Path

from benchbed.spec import load_spec

COMPARE = Path(__file__).resolve().parents[1] / "experiments" / "compare"
FRAMEWORKS = ("verl", "slime", "prime_rl", "trl", "areal", "nemo_rl", "skyrl", "openrlhf", "roll")
FRAMEWORKS += ("open_instruct", "rllm", "miles", "tinker_cookbook")


def test_every_framework_runs_the_same_workload_on_the_same_gpus() -> None:
    specs = {path.stem: load_spec(path) for path in sorted(COMPARE.glob("*.toml"))}
    assert {name: spec.adapter for name, spec in specs.items()} == {name: name for name in specs}
    assert sorted(specs) == sorted(FRAMEWORKS)
    workloads = {spec.workload.model_dump_json() for spec in specs.values()}
    resources = {spec.resources.model_dump_json() for spec in specs.values()}
    assert len(workloads) == 1 and len(resources) == 1
    spec = next(iter(specs.values()))
    assert (spec.workload.model, spec.workload.prompts_per_step, spec.workload.group_size) == (
        "Qwen/Qwen3-30B-A3B", 64, 8)  # fmt: skip
    assert (spec.workload.max_staleness, spec.resources.trainer_gpus, spec.resources.generator_gpus) == (1, 16, 16)
