"""Adapter `example_history`: the template for a framework whose runs are per-step key/value histories (what W&B,
MLflow, TensorBoard or a metrics JSONL keep). Its key map (keymap.toml) says what each key is; the adapter kit
reads the history (`benchbed.adapterkit.histories`) and turns mapped keys into trace rows (parse.py)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from benchbed.adapterkit.adapter import HistoryAdapter


class HistoryLoopOptions(BaseModel):
    """The spec's `[example_history]` table."""

    model_config = ConfigDict(extra="forbid")

    update_s: float = Field(3.0, gt=0, description="seconds of training per step the loop reports")
    seed: int = Field(0, ge=0, description="random seed of the loop's rewards and generation times")


class ExampleHistoryAdapter(HistoryAdapter):
    """Launches a loop that logs one history row per step (histloop.py) and reads any history of its keys."""

    name = "example_history"
    options_model = HistoryLoopOptions
