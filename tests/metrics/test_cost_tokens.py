"""cost_per_mtok from ingested framework runs: token counts read from each adapter's artifacts, and the price and
GPU counts given to `benchbed ingest`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchbed.cli.main import cli
from benchbed.metrics.context import MetricContext
from benchbed.metrics.cost import trained_tokens
from benchbed.pipeline import ingest
from benchbed.store import RECORD_FILENAME, Store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PRICE = 2.0
RESOURCES = {"trainer_gpus": 8, "generator_gpus": 8, "price_per_gpu_hour": PRICE}


def dollars_per_mtok(gpus: int, window_s: float, tokens: float) -> float:
    return gpus * PRICE * window_s / 3600 / (tokens / 1e6)


@pytest.mark.parametrize(
    ("adapter", "fixture", "tokens", "window_s"),
    [
        # 39 episodes trained in steps 2-6, each one call of 12 prompt + 12 completion tokens (generate.py)
        ("prime_rl", "prime_rl/head-559b447", 39 * 24, 167.0),
        # perf/total_num_tokens of steps 2-6 (metrics.jsonl): 372 + 349 + 372 + 374 + 352
        ("verl", "verl/verl-0.9.1-v1_sync", 1819, None),
        # 15 dumped samples trained in steps 2-3, each 3 tokens of which response_length = 2
        ("slime", "slime/fully_async_swe", 15 * 3, 100.0),
    ],
)
def test_ingested_run_has_trained_tokens_and_cost_per_mtok(
    tmp_path: Path, adapter: str, fixture: str, tokens: int, window_s: float | None
) -> None:
    outcome = ingest(FIXTURES / fixture, adapter, Store(tmp_path), resources=RESOURCES)
    assert outcome.trace is not None
    ctx = MetricContext(outcome.trace, warmup_steps=1)
    assert trained_tokens(ctx) == tokens
    window = ctx.window_seconds
    assert window is not None
    if window_s is not None:
        assert window[0] == pytest.approx(window_s)
    expected = dollars_per_mtok(16, window[0], tokens)
    assert outcome.record.metrics["cost_per_mtok"].value == pytest.approx(expected)
    assert outcome.record.spec["resources"] == RESOURCES


def test_prime_rl_multi_turn_prompt_tokens_are_counted_once() -> None:
    """Each call's prompt repeats the history: only what it adds beyond the previous call's sequence is new input
    (cache reads included), and every completion counts."""
    from benchbed.adapters.prime_rl.episodes import episode_tokens

    calls = [
        {"usage": {"prompt_tokens": 100, "completion_tokens": 20}},
        {"usage": {"prompt_tokens": 30, "cached_input_tokens": 120, "completion_tokens": 10}},  # 150 = 120 + 30 new
        {"usage": None},
    ]
    assert episode_tokens([{"calls": calls}, {"calls": [{"usage": {"prompt_tokens": 5, "completion_tokens": 1}}]}]) == (
        100 + 30 + 5,
        20 + 10 + 1,
    )
    assert episode_tokens([{"calls": [{"usage": None}]}]) == (-1, -1)


def test_slime_console_run_takes_tokens_from_the_actor_train_rate(tmp_path: Path) -> None:
    """Without dumps, a step's tokens are perf/actor_train_tok_per_s × perf/actor_train_time (14 s per step)."""
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "slime" / "sync_colocated_624b824", run)
    log = run / "run.log"
    text = log.read_text()
    assert text.count("'perf/actor_train_time': 14.0") == 4
    log.write_text(text.replace("'perf/actor_train_time': 14.0", "'perf/actor_train_tok_per_s': 1500.0, "
                                                                 "'perf/actor_train_time': 14.0"))  # fmt: skip
    outcome = ingest(run, "slime", Store(tmp_path / "store"), resources={**RESOURCES, "colocated": True})
    assert outcome.trace is not None
    per_step = outcome.trace.of("samples.trained_tokens")
    assert per_step["value"].tolist() == [21000.0] * 4
    ctx = MetricContext(outcome.trace, warmup_steps=1)
    assert trained_tokens(ctx) == 3 * 21000
    window = ctx.window_seconds
    assert window is not None
    assert outcome.record.metrics["cost_per_mtok"].value == pytest.approx(dollars_per_mtok(8, window[0], 63000))


def test_cost_per_mtok_needs_every_window_step_counted(tmp_path: Path) -> None:
    """Per-step counts missing for one window step: no cost per token rather than one over too few tokens."""
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "verl" / "verl-0.9.1-v1_sync", run)
    metrics = run / "metrics.jsonl"
    rows = [json.loads(line) for line in metrics.read_text().splitlines()]
    for row in rows:
        if row.get("step") == 4:
            del row["data"]["perf/total_num_tokens"]
    metrics.write_text("".join(json.dumps(r) + "\n" for r in rows))
    outcome = ingest(run, "verl", Store(tmp_path / "store"), resources=RESOURCES)
    assert "cost_per_step" in outcome.record.metrics
    assert "cost_per_mtok" not in outcome.record.metrics


def test_ingest_cli_takes_price_and_gpus(tmp_path: Path) -> None:
    fixture = str(FIXTURES / "prime_rl" / "head-559b447")
    runner = CliRunner()
    args = ["ingest", fixture, "--adapter", "prime_rl", "--store", str(tmp_path), "--json"]
    ok = runner.invoke(cli, [*args, "--price-per-gpu-hour", "2", "--trainer-gpus", "8", "--generator-gpus", "8"])
    assert ok.exit_code == 0, ok.output
    record = json.loads(ok.output)
    assert record["spec"]["resources"] == RESOURCES
    assert record["metrics"]["cost_per_mtok"]["value"] == pytest.approx(dollars_per_mtok(16, 167.0, 936))
    missing = runner.invoke(cli, [*args, "--price-per-gpu-hour", "2"])
    assert missing.exit_code == 2
    assert "--trainer-gpus" in missing.output
    assert len(list(tmp_path.rglob(RECORD_FILENAME))) == 1  # the refused ingest stored nothing
