"""prime-rl SFT runs (`uv run sft`, trainer/sft/train.py at 559b447) are trainer-only runs with mode "sft": no
orchestrator, no rollouts, no wait for batches, so none of the RL warnings. The fixture head-559b447-sft is written
by generate.py::write_sft_run in that trainer's formats (configs/sft.json, its six metrics rows per step, its
`Starting SFT trainer` / `Step N | ... | Loss` / `SFT trainer finished!` lines)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from benchbed.adapters.prime_rl.parse import parse_path

from benchbed import keys as K
from benchbed.metrics import compute_metrics

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "prime_rl" / "head-559b447-sft"
TRAINER_LOG = FIXTURE / "logs" / "attempt_1" / "trainer.log"


def keys_of(trace) -> set[str]:
    return set(trace.events["key"])


def agg(trace, key: str) -> dict[int, float]:
    rows = trace.events[trace.events["key"] == key]
    return dict(zip(rows["step"], rows["value"], strict=True))


@pytest.mark.parametrize(
    ("path", "evidence"),
    [
        (FIXTURE, str(FIXTURE / "configs" / "sft.json")),
        (FIXTURE / "metrics.jsonl", f"{FIXTURE / 'metrics.jsonl'}:4: loss/perplexity, which only the SFT trainer logs"),
        (TRAINER_LOG, f"{TRAINER_LOG}:1: 'Starting SFT trainer'"),
    ],
)
def test_an_sft_run_is_trainer_only_with_no_rl_warning(path: Path, evidence: str) -> None:
    trace = parse_path(path)
    assert trace.meta.mode == "sft" and trace.meta.extra["sft_evidence"] == evidence
    assert trace.meta.warnings == [] and trace.meta.partial is False
    assert trace.meta.group_size is None
    assert not [k for k in keys_of(trace) if k.startswith(("generator.", "rollout", "samples.", "groups."))]
    assert K.TRAINER_WAIT not in keys_of(trace)  # the SFT trainer reads its own data: it waits for no batch


def test_the_metrics_file_gives_the_sft_trainer_s_breakdown(gen) -> None:
    trace = parse_path(FIXTURE)
    assert trace.meta.samples_per_step == 32 and trace.meta.extra["max_steps"] == 4
    steps = {k: round(sum(t) + gen.LOOP_OVERHEAD, 6) for k, t in enumerate(gen.SFT_STEPS, 1)}
    assert agg(trace, K.TRAINER_STEP) == steps
    assert agg(trace, K.TRAINER_COMPUTE) == {k: t[0] for k, t in enumerate(gen.SFT_STEPS, 1)}
    assert agg(trace, K.TRAINER_CHECKPOINT) == {1: 0.0, 2: 0.0, 3: 4.0, 4: 0.0}
    metrics = compute_metrics(trace, warmup_steps=1)
    assert "trainer_idle_ratio" not in metrics and "generator_utilization" not in metrics
    assert metrics["step_time_mean_s"].value == pytest.approx((5.6 + 9.6 + 5.1) / 3)
    assert metrics["trainer_compute_ratio"].value == pytest.approx(16.0 / 20.3)


def test_the_console_log_alone_reads_the_steps_and_a_finished_run(tmp_path: Path) -> None:
    trace = parse_path(TRAINER_LOG)
    assert agg(trace, K.TRAINER_STEP) == {1: 6.0, 2: 6.0, 3: 10.0, 4: 5.0}  # format_time's whole seconds
    cut = tmp_path / "trainer.log"
    cut.write_text("".join(TRAINER_LOG.read_text().splitlines(keepends=True)[:-2]))
    assert parse_path(cut).meta.partial is True  # no `SFT trainer finished!`: the run stopped


def test_an_rl_run_beside_it_is_still_an_rl_run(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(FIXTURE.parent / "head-559b447", run, symlinks=True)
    trace = parse_path(run)
    assert trace.meta.mode == "async (max_off_policy_steps)" and "sft_evidence" not in trace.meta.extra
