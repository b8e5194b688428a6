"""Real learning on a CPU: experiments/ref-learn.toml's tiny model learns the sandboxed arithmetic task's format in
40 GRPO steps, so synchronous and asynchronous runs are compared on the quality axis, and a nightly suite's
reference band flags a held-back build (a learning rate of 1e-8: the same steps, the same throughput, no learning)
that the throughput gate alone passes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchbed.cli.main import cli
from benchbed.quality import Target

from .refrun import ROOT, engine_available

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
LEARN = ROOT / "experiments" / "ref-learn.toml"


def _trainer_steps(run_dir: Path) -> list[dict]:
    events = map(json.loads, (run_dir / "events" / "trainer.jsonl").read_text().splitlines())
    return sorted((e for e in events if e["ev"] == "step"), key=lambda e: e["step"])


def _runs(store: Path) -> list[tuple[dict, Path]]:
    found = [(json.loads(p.read_text()), p.parent) for p in store.glob("*/ref/*/*/record.json")]
    return sorted(found, key=lambda pair: pair[0]["started_at"])


@pytest.fixture(scope="module")
def learned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """experiments/ref-learn.toml run as a user runs it: sync and async, one store."""
    engine_available()
    store = tmp_path_factory.mktemp("learn") / "store"
    result = CliRunner().invoke(cli, ["run", str(LEARN), "--store", str(store), "--json"])
    assert result.exit_code == 0, result.output
    return store


@pytest.fixture(scope="module")
def untrained(tmp_path_factory: pytest.TempPathFactory) -> list[float]:
    """The synchronous run's step rewards with a learning rate of 1e-8: the same steps and seed, a policy that does
    not move, so its rewards are the untrained policy's."""
    engine_available()
    folder = tmp_path_factory.mktemp("untrained")
    store = folder / "store"
    result = CliRunner().invoke(cli, ["run", str(_sync_only(folder)), "--set", "ref.lr=1e-8", "--store", str(store)])
    assert result.exit_code == 0, result.output
    ((_, run_dir),) = _runs(store)
    return [e["reward_mean"] for e in _trainer_steps(run_dir)]


def test_both_modes_learn_and_reach_the_target_when_their_own_rewards_say(
    learned: Path, untrained: list[float]
) -> None:
    target = Target.parse(re.search(r'target = "([^"]+)"', LEARN.read_text())[1])
    assert target.window == 5
    modes = {}
    for record, run_dir in _runs(learned):
        steps = _trainer_steps(run_dir)
        rewards = [e["reward_mean"] for e in steps]
        assert len(rewards) == len(untrained) == 40
        # learning, not luck: over steps 11-40 (960 rollouts each) the run's mean reward stands above the untrained
        # policy's (a step's mean moves by about 0.03 between batches, a 30-step mean by about 0.006; the runs
        # learn 0.05-0.09 above it)
        assert sum(rewards[10:]) / 30 - sum(untrained[10:]) / 30 >= 0.02, (rewards, untrained)
        # by hand: the first step whose trailing mean of 5 rewards meets the target, and the engine's clock to it
        first = next((i for i in range(4, 40) if sum(rewards[i - 4 : i + 1]) / 5 >= target.value), None)
        metrics = {name: m["value"] for name, m in record["metrics"].items()}
        if first is None:  # the target is near the asynchronous run's edge (see below)
            assert metrics["target_reached"] == 0 and "steps_to_target" not in metrics, (rewards, metrics)
        else:
            assert metrics["target_reached"] == 1 and metrics["steps_to_target"] == steps[first]["step"]
            assert metrics["time_to_target_s"] == pytest.approx(steps[first]["t1"] - steps[0]["t0"], abs=1e-6)
        assert metrics["final_reward_mean"] == pytest.approx(sum(rewards[-10:]) / 10)
        modes[record["spec"]["ref"]["mode"]] = metrics
    assert set(modes) == {"sync", "async"}
    assert modes["sync"]["staleness_mean"] == 0 < modes["async"]["staleness_mean"]
    # The synchronous run's batches do not depend on timing: it reaches the target at the same step on every run.
    # The asynchronous run's do (which batches a weight push makes one version stale is a race between the
    # processes): on a quiet machine it reaches the target (best trailing means 0.325-0.338), but one run on a
    # loaded machine (staleness_mean 0.526, not 0.5) plateaued at 0.25 and its best trailing mean was 0.275.
    assert modes["sync"]["target_reached"] == 1


def test_the_comparison_report_draws_reward_against_time_for_both_modes(learned: Path, tmp_path: Path) -> None:
    run_dirs = [str(run_dir) for _, run_dir in _runs(learned)]
    page = tmp_path / "learn.html"
    result = CliRunner().invoke(cli, ["report", *run_dirs, "-o", str(page)])
    assert result.exit_code == 0, result.output
    found = re.search(r'<section class="compare-plot" id="compare-learning".*?</section>', page.read_text(), re.DOTALL)
    assert found, "the comparison's learning figure is missing"
    figure = found.group(0)
    assert "Training reward against time" in figure and "training reward (mean per step)" in figure
    assert "quality target" in figure and figure.count("(1 run)") == 2  # one legend entry per mode
    # the comparison at matched quality: the run that did not reach the target (see above) is named as such
    reached = [record["metrics"]["target_reached"]["value"] for record, _ in _runs(learned)]
    if min(reached) == 1:
        assert "× sooner than" in figure and "median time to target" in figure
    else:
        assert "not reached in the run (1 run(s))" in figure and "× sooner than" not in figure


def _sync_only(tmp_path: Path) -> Path:
    """ref-learn.toml without its [matrix]: the nightly series of the synchronous run."""
    text = LEARN.read_text()
    spec = tmp_path / "ref-learn-sync.toml"
    spec.write_text(text[: text.index("[matrix]")])
    return spec


def test_a_nightly_reference_band_flags_a_held_back_learning_rate_that_the_throughput_gate_passes(
    tmp_path: Path,
) -> None:
    engine_available()
    _sync_only(tmp_path)
    suite = tmp_path / "suite.toml"
    suite.write_text(
        'name = "learn-nightly"\n[[entry]]\nname = "ref-learn"\nspec = "ref-learn-sync.toml"\nrepeats = 1\n'
        'watch = ["final_reward_mean", "target_reached", "trainer_throughput_sps"]\n'
        "gate = { band = { final_reward_mean = 0.1, target_reached = 0.5, trainer_throughput_sps = 0.5 } }\n"
    )
    store, runner = tmp_path / "store", CliRunner()

    def night(*sets: str) -> dict[str, dict]:
        args = ["nightly", str(suite), "--store", str(store), "--json", "--fail-on", "regression"]
        result = runner.invoke(cli, [*args, *(f"--set={s}" for s in sets)])
        assert result.exit_code in (0, 3), result.output
        return {v["metric"]: v for v in json.loads(result.stdout)["verdicts"]}

    # three trusted nights: the reference (whether each reaches the target is near its edge on a loaded machine)
    reached = [night()["target_reached"]["candidate_median"] for _ in range(3)]
    held_back = night("ref.lr=1e-8")
    assert held_back["final_reward_mean"]["verdict"] == "regression", held_back["final_reward_mean"]
    assert "outside the reference band" in held_back["final_reward_mean"]["reason"]
    assert held_back["target_reached"]["candidate_median"] == 0
    # the band is the trusted nights' range: a miss is a regression only when every trusted night reached the target
    expected = "regression" if min(reached) == 1 else "unchanged"
    assert held_back["target_reached"]["verdict"] == expected, (reached, held_back["target_reached"])
    assert held_back["trainer_throughput_sps"]["verdict"] == "unchanged", held_back["trainer_throughput_sps"]
