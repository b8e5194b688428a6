"""Real learning with TRL on a CPU: experiments/trl-learn.toml's tiny Qwen3 learns 8 arithmetic prompts in 120 GRPO
steps, on-policy and with TRL's off-policy reuse (steps_per_generation = 2), and the learning metrics agree with a
hand computation from the rewards TRL itself logged (trainer_state.json's log_history)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchbed.cli.main import cli
from benchbed.quality import Target
from benchbed.trace import read_trace

pytest.importorskip("trl", reason="TRL is not installed (pip install 'benchbed[trl]')")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
LEARN = Path(__file__).resolve().parents[3] / "experiments" / "trl-learn.toml"


@pytest.fixture(scope="module")
def learned(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[dict, Path]]:
    """experiments/trl-learn.toml run as a user runs it: both settings of its matrix, one store."""
    store = tmp_path_factory.mktemp("trl-learn") / "store"
    result = CliRunner().invoke(cli, ["run", str(LEARN), "--store", str(store), "--json"])
    assert result.exit_code == 0, result.output
    runs = [(json.loads(p.read_text()), p.parent) for p in store.glob("*/trl/*/*/record.json")]
    return sorted(runs, key=lambda pair: pair[0]["spec"]["trl"]["steps_per_generation"])


def test_both_settings_learn_and_reach_the_target_when_trls_own_rewards_say(learned) -> None:
    target = Target.parse(re.search(r'target = "([^"]+)"', LEARN.read_text())[1])
    assert target.window == 10 and [r["spec"]["trl"]["steps_per_generation"] for r, _ in learned] == [1, 2]
    for record, run_dir in learned:
        logged = [e for e in json.loads((run_dir / "trainer_state.json").read_text())["log_history"] if "reward" in e]
        steps, rewards = [e["step"] for e in logged], [e["reward"] for e in logged]
        # TRL logs the reward once per generated batch: every step on-policy, every other step with reuse
        assert len(rewards) == 120 // record["spec"]["trl"]["steps_per_generation"]
        quarter = len(rewards) // 4
        gain = sum(rewards[-quarter:]) / quarter - sum(rewards[:quarter]) / quarter
        assert gain >= 0.04, rewards  # a real upward curve
        metrics = {name: m["value"] for name, m in record["metrics"].items()}
        assert metrics["reward_gain"] == pytest.approx(gain)
        assert metrics["final_reward_mean"] == pytest.approx(sum(rewards[-quarter:]) / quarter)
        # by hand: the first logged step whose trailing mean of 10 logged rewards meets the target
        first = next(i for i in range(9, len(rewards)) if sum(rewards[i - 9 : i + 1]) / 10 >= target.value)
        assert metrics["target_reached"] == 1 and metrics["steps_to_target"] == steps[first]
        spans = read_trace(run_dir / "trace.parquet").of("trainer.step")
        spans = spans[spans["kind"] == "span"]
        reached_at = float(spans[spans["step"] == steps[first]]["t1"].max()) - float(spans["t0"].min())
        assert metrics["time_to_target_s"] == pytest.approx(reached_at)
    on_policy, reuse = ({n: m["value"] for n, m in r["metrics"].items()} for r, _ in learned)
    assert on_policy["staleness_mean"] == 0 < reuse["staleness_mean"]  # every other step trains a stale batch


def test_the_report_says_which_setting_reaches_the_target_sooner(learned, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["report", *(str(d) for _, d in learned), "-o", str(page)])
    assert result.exit_code == 0, result.output
    found = re.search(r'<section class="compare-plot" id="compare-learning".*?</section>', page.read_text(), re.DOTALL)
    assert found, "the comparison's learning figure is missing"
    assert re.search(r"reaches quality\.reward_mean&gt;=0\.35 over 10 [\d.]+× sooner than", found.group(0)), (
        found.group(0)[-2000:]
    )
