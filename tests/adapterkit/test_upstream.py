"""The one upstream snapshot format (benchbed.adapterkit.upstream) and its tool (tools/upstream.py): every adapter's
snapshot loads and is in the one layout, a malformed one is one line naming the file, open subtrees accept the keys
below them, and `refresh` rewrites one list from a checkout, keeping the others."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import upstream  # tools/, on pytest's pythonpath

from benchbed.adapterkit.upstream import FORMAT, NameList, load_snapshot, snapshot_text, upstream_list
from benchbed.errors import AdapterError

ROOT = Path(__file__).resolve().parents[2]


def test_every_snapshot_loads_and_is_in_the_one_layout() -> None:
    lists = {path.parent.name: list(load_snapshot(path)) for path in (ROOT / "adapters").glob("*/upstream.json")}
    assert lists == {
        "nemo_rl": ["keys"],
        "open_instruct": ["keys"],
        "prime_rl": ["prime-rl 559b447"],
        "rllm": ["keys"],
        "skyrl": ["keys"],
        "slime": ["slime v0.3.1", "slime 624b824", "megatron"],
    }
    assert upstream.check(ROOT) == []
    assert upstream.main(["check"]) == 0


def test_an_open_subtree_accepts_the_keys_below_it() -> None:
    names = NameList("o/r@abc: test", ("a", "a.b", "c.*"))
    assert names.unknown(["a", "a.b", "c.d", "c.d.e", "a.c", "c", "cd.e"]) == ["a.c", "c", "cd.e"]
    prime = upstream_list(ROOT / "adapters" / "prime_rl", "prime-rl 559b447")
    assert prime.accepts("slurm.job_name") and not prime.accepts("orchestrator.max_async_level")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"format": "other", "lists": {}}', r'upstream.json: expected \{"format": "benchbed upstream snapshot 1"'),
        ('{"format": "%s", "lists": {"k": {"names": []}}}', r"list 'k' should hold exactly `source` and `names`"),
        ('{"format": "%s", "lists": {"k": {"source": "x", "names": []}}}', r"list 'k': source should read"),
        ('{"format": "%s", "lists": {"k": {"source": "o/r@1: x", "names": ["b", "a"]}}}', r"sorted, each once"),
        ('{"format": "%s",\n "lists": }', r"upstream.json:2: not valid JSON"),
    ],
)
def test_a_malformed_snapshot_is_one_line_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "upstream.json"
    path.write_text(text.replace("%s", FORMAT))
    with pytest.raises(AdapterError, match=message) as caught:
        load_snapshot(path)
    assert str(caught.value).startswith(str(path)) and "\n" not in str(caught.value)
    assert upstream.check(tmp_path) == []  # check reads adapters/*/upstream.json only
    (tmp_path / "adapters" / "x").mkdir(parents=True)
    shutil.copy(path, tmp_path / "adapters" / "x" / "upstream.json")
    (problem,) = upstream.check(tmp_path)
    assert problem.startswith(str(tmp_path / "adapters" / "x" / "upstream.json"))


def test_refresh_rewrites_one_list_from_a_checkout(tmp_path: Path) -> None:
    checkout = tmp_path / "nemo-rl"
    (checkout / "examples" / "configs").mkdir(parents=True)
    (checkout / "examples" / "configs" / "grpo_math_1B.yaml").write_text(
        "grpo:\n  num_steps: 3\n  seed: 1\nlogger: {}\n"
    )
    (tmp_path / "adapters" / "nemo_rl").mkdir(parents=True)
    path = tmp_path / "adapters" / "nemo_rl" / "upstream.json"
    kept = {"other": NameList("o/r@1: kept", ("x",))}
    path.write_text(snapshot_text(kept))
    source = "NVIDIA-NeMo/RL@abc1234: every dotted key of examples/configs/grpo_math_1B.yaml"
    argv = ["--root", str(tmp_path), "refresh", "nemo_rl", "keys", "--source", source, str(checkout)]
    assert upstream.main(argv) == 0
    load_snapshot.cache_clear()
    lists = load_snapshot(path)
    assert lists == {**kept, "keys": NameList(source, ("grpo", "grpo.num_steps", "grpo.seed", "logger"))}
    assert upstream.check(tmp_path) == []
    assert upstream.main(["--root", str(tmp_path), "refresh", "nemo_rl", "flags", "--source", source, "x"]) == 2
