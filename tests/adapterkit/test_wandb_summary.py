"""A pasted W&B run summary is refused as what it is, for every adapter whose keys it holds: "a W&B run summary:
final values only, no per-step history" (exit 2, nothing stored), never "not a verl log".

Both forms come from wandb itself (an offline run in a subprocess): the `Run summary:` block it prints when the run
finishes, and its summary as a dict (`run.summary._as_dict()`, the content wandb writes to wandb-summary.json)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchbed.adapter import available_adapters, get_adapter
from benchbed.errors import AdapterError
from benchbed.pipeline import ingest
from benchbed.store import Store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MESSAGE = "a W&B run summary with {whose} keys ({keys}): final values only, no per-step history; ingest the run's"
SCRIPT = """
import json, sys, wandb
keys = json.loads(sys.argv[1])
run = wandb.init(project="summary", mode="offline", dir=sys.argv[2])
for step in range(1, 4):
    run.log({key: 1.5 * step for key in keys}, step=step)
print(json.dumps(run.summary._as_dict()), flush=True)
run.finish()
"""


def identifying_keys() -> dict[str, str]:
    """adapter -> the first key its key map says only that framework logs (adapters with a key map)."""
    out = {}
    for name in available_adapters():
        adapter = get_adapter(name)
        if getattr(adapter, "keymap", None) and adapter._keymap().identify:  # type: ignore[attr-defined]
            out[name] = adapter._keymap().identify[0]  # type: ignore[attr-defined]
    return out


KEYS = identifying_keys()
BLOCK_KEYS = 10  # wandb's printed `Run summary:` block shows ten keys, then `+N ...` for the rest


@pytest.fixture(scope="module")
def summaries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """{"json": wandb-summary.json, "block": the console's Run summary block} of one run logging every key."""
    pytest.importorskip("wandb", reason="the `wandb` extra is not installed")
    root = tmp_path_factory.mktemp("wandb")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(sorted(KEYS.values())), str(root)],
        capture_output=True, text=True, timeout=300, env={"PATH": "/usr/bin:/bin", "HOME": str(root)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (root / "wandb-summary.json").write_text(done.stdout.splitlines()[-1])
    start = done.stderr.index("wandb: Run summary:")
    (root / "summary.txt").write_text(done.stderr[start : done.stderr.index("wandb: \n", start) + 8])
    return {"json": root / "wandb-summary.json", "block": root / "summary.txt"}


def test_the_summaries_are_wandb_s_own() -> None:
    assert {"verl", "slime", "prime_rl"} <= set(KEYS)


@pytest.mark.parametrize("form", ["json", "block"])
@pytest.mark.parametrize("adapter", sorted(KEYS))
def test_every_adapter_whose_keys_it_holds_refuses_it_as_a_summary(
    summaries: dict[str, Path], form: str, adapter: str, tmp_path: Path
) -> None:
    path = summaries[form]
    keys = sorted(KEYS.values())[:BLOCK_KEYS] if form == "block" else json.loads(path.read_text())
    shown = [k for k in keys if not k.startswith("_")]
    listed = ", ".join(shown[:5]) + (" ..." if len(shown) > 5 else "")
    whose = sorted(name for name, key in KEYS.items() if key in shown)
    forks = {get_adapter(name)._keymap().extends for name in whose}  # type: ignore[attr-defined]
    whose = [name for name in whose if name not in forks]  # a fork's keys present: its base leaves them to it
    expected = MESSAGE.format(whose=", ".join(whose), keys=listed)
    with pytest.raises(AdapterError) as caught:
        ingest(path, adapter, Store(tmp_path / "results"))
    assert str(caught.value).startswith(f"{path}: {expected}")
    assert not (tmp_path / "results").exists()


def test_the_cli_exits_2_and_stores_nothing_with_or_without_an_adapter(
    benchbed, summaries: dict[str, Path], tmp_path: Path
) -> None:
    store = tmp_path / "results"
    for extra in ([], ["--adapter", "verl"]):
        done = benchbed("ingest", summaries["json"], *extra, "--store", store)
        assert done.returncode == 2
        assert done.stderr.startswith(f"benchbed: error: {summaries['json']}: a W&B run summary with ")
        assert "final values only, no per-step history" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert not store.exists()


def test_a_log_without_steps_that_ends_in_the_summary_block_is_a_summary(
    summaries: dict[str, Path], tmp_path: Path
) -> None:
    log = tmp_path / "console.log"
    log.write_text("[validate_config] All configuration checks passed successfully!\n" + summaries["block"].read_text())
    with pytest.raises(AdapterError, match=r"a W&B run summary with .*final values only, no per-step history"):
        ingest(log, "verl", Store(tmp_path / "results"))


def test_a_console_log_with_steps_and_the_summary_block_is_still_a_run(
    summaries: dict[str, Path], tmp_path: Path
) -> None:
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "verl" / "verl-0.9.1-v1_sync-notiming", run)
    with (run / "console.log").open("a") as fh:
        fh.write(summaries["block"].read_text())
    (run / "metrics.jsonl").unlink()
    record = ingest(run / "console.log", "verl", Store(tmp_path / "results")).record
    assert record.status == "succeeded" and record.trace_events > 0
