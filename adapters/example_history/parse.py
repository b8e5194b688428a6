"""Any history of the loop's keys (its metrics JSONL, or the same keys in W&B, MLflow or TensorBoard) -> the trace,
through the kit: one agg row per mapped key and step, every other number kept as `native.histloop.<key>`."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapters.example_history.discover import HISTORY

from benchbed.adapterkit.histories import History
from benchbed.adapterkit.history_trace import history_trace, read_run_history
from benchbed.adapterkit.keymaps import load_keymap
from benchbed.api import Trace

KEYMAP = load_keymap(Path(__file__).with_name("keymap.toml"))


def parse_path(path: Path) -> Trace:
    return parse_history(read_run_history(path, KEYMAP.framework, (HISTORY,)))


def parse_history(history: History) -> Trace:
    return history_trace(history, KEYMAP, adapter="example_history", mode="sync")
