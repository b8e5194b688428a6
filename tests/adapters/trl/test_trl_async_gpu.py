"""TRL's asynchronous GRPO for real: GPU only, opt-in. Set BENCHBED_TRL_ASYNC_MODEL to a local checkpoint directory
and start `VLLM_SERVER_DEV_MODE=1 vllm serve $BENCHBED_TRL_ASYNC_MODEL` (default address http://127.0.0.1:8000, or set
BENCHBED_TRL_VLLM_URL); the test then runs 6 steps through benchbed's pipeline and checks what TRL logged."""

from __future__ import annotations

import importlib.util
import os

import pytest

from benchbed.pipeline import execute
from benchbed.spec import build_spec
from benchbed.store import Store

MODEL = os.environ.get("BENCHBED_TRL_ASYNC_MODEL")


def _cuda() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


OPT_IN = "opt-in: needs CUDA, vllm, BENCHBED_TRL_ASYNC_MODEL and a running `vllm serve`"


@pytest.mark.skipif(not MODEL or not _cuda() or importlib.util.find_spec("vllm") is None, reason=OPT_IN)
def test_async_grpo_runs_and_keeps_its_staleness_bound(tmp_path) -> None:
    url = os.environ.get("BENCHBED_TRL_VLLM_URL", "http://127.0.0.1:8000")
    spec = build_spec({"name": "trl-async", "adapter": "trl", "timeout_s": 1800,
                       "workload": {"prompts_per_step": 4, "group_size": 4, "max_response_tokens": 16, "steps": 6,
                                    "max_staleness": 1},
                       "trl": {"trainer": "async_grpo", "model_path": MODEL, "use_cpu": False,
                               "async_grpo": {"vllm_server_base_url": url}}})  # fmt: skip
    outcome = execute(spec, Store(tmp_path / "store"))
    record = outcome.record
    assert record.status == "succeeded", record.error
    assert record.adapter.mode == "async"
    assert 0.0 <= record.metrics["trainer_idle_ratio"].value <= 1.0
    assert record.metrics["framework_staleness_max"].value <= 1
