"""The reference engine on a GPU: the same processes with `device = "cuda"` and a larger model. Runs only where
CUDA is available (weights still travel over gloo, through a CPU staging buffer); with the `gpu` extra, benchbed
samples the real GPUs through NVML during the launch."""

from __future__ import annotations

import pytest

from .refrun import run_ref

torch = pytest.importorskip("torch")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU; this machine has none")
def test_cuda_run_with_a_larger_model(tmp_path_factory):
    model = {"layers": 4, "hidden": 256, "heads": 8, "kv_heads": 4, "experts": 8, "top_k": 2, "expert_hidden": 128}
    ref = {"mode": "async", "in_flight_updates": True, "device": "cuda", "max_new_tokens": 16, "model": model}
    run = run_ref(tmp_path_factory, "gt-cuda", {"steps": 4, "max_staleness": 1, "prompts_per_step": 4}, ref)
    assert run.record.status == "succeeded", run.record.error
    assert run.trace.meta.extra["device"] == "cuda"
    assert run.metric("staleness_max") <= 1
    assert run.metric("trainer_idle_ratio") == pytest.approx(run.summary["trainer_idle_ratio"], abs=0.01)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU; this machine has none")
def test_a_cuda_run_samples_the_real_gpus(tmp_path_factory):
    pytest.importorskip("pynvml", reason="the `gpu` extra (nvidia-ml-py) is not installed")
    from benchbed import keys as K

    ref = {"mode": "sync", "device": "cuda", "max_new_tokens": 16}
    run = run_ref(tmp_path_factory, "gt-cuda-nvml", {"steps": 6}, ref)
    assert run.record.status == "succeeded", run.record.error
    util = run.trace.events[run.trace.events["key"] == K.GPU_UTILIZATION]
    assert len(util) and (util["step"] > 1).any()  # a sample a second, in the window's steps
    assert 0.0 <= run.metric("gpu_busy_ratio") <= 1.0
    assert run.trace.events[run.trace.events["key"] == K.GPU_MEMORY_USED]["value"].max() > 0
