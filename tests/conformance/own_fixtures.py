"""Which inputs each adapter must read (its own fixtures) and, by the same token, every other adapter must refuse.

Frameworks with committed fixtures list them here by pattern under tests/fixtures/; the simulator and
sandbox-bench write benchbed traces themselves, so their runs are produced by their own code at test time
(see conftest.py). A registered adapter with neither fails the suite: conformance needs something to read."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# adapter -> glob patterns under tests/fixtures/ of runs (directories or single files) that it wrote
COMMITTED: dict[str, tuple[str, ...]] = {
    "verl": ("verl/verl-*",),
    "prime_rl": ("prime_rl/head-*", "prime_rl/v0.*", "prime_rl/*.log"),
    "slime": ("slime/sync_colocated_*", "slime/async_*", "slime/fully_async_*", "slime/tb_only_*", "slime/sft_*"),
    "example": ("example/*",),
    "example_history": ("example_history/*",),  # made by histloop.py (the render of its spec), 6 steps
    "ref": ("ref/*",),  # made by `benchbed run benchbed/data/ref-demo.toml --set workload.steps=4`
    "trl": ("trl/*",),  # made by `benchbed run experiments/trl-grpo-cpu.toml`; logs and W&B debug files left out
    "areal": ("areal/grpo-*", "areal/console/*.log"),  # AReaL's own tracers and logger (areal/make_*.py), 6 steps
    "nemo_rl": ("nemo_rl/*-steps", "nemo_rl/console/*.log"),  # make_fixtures.py (a real SummaryWriter); a console log
    "skyrl": ("skyrl/*-steps",),  # made by make_fixtures.py beside them (real wandb offline; README.md there)
    "openrlhf": ("openrlhf/sync-*", "openrlhf/async-*"),  # tracker histories written by make_fixtures.py beside them
    "roll": ("roll/async-*", "roll/sync-*", "roll/console/*.log"),  # histories and console logs: make_*.py there
    "open_instruct": ("open_instruct/*-steps",),  # made by make_fixtures.py beside them (real wandb offline; README.md)
    "rllm": ("rllm/*-steps",),  # made by make_fixtures.py beside them (real wandb offline; README.md there)
    "miles": ("miles/*-steps",),  # dashboard folders written by make_fixtures.py beside them (README.md there)
    "tinker_cookbook": ("tinker_cookbook/*-steps",),  # log folders written by make_fixtures.py beside them
}
GENERATED = ("sim", "sandbox")  # runs produced at test time by the adapter's own launch


def committed(adapter: str) -> list[Path]:
    return sorted({p for pattern in COMMITTED.get(adapter, ()) for p in FIXTURES.glob(pattern) if p.name[0] != "."})
