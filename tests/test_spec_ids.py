"""Spec ids never change for a spec that did not change: every spec under experiments/ (matrix points included),
the packaged specs and every nightly suite entry keep the id computed by benchbed at be09333 (before the adapter
contract moved into the core), so stored series keep joining their history."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchbed.spec import build_spec, expand, load_spec, load_spec_data

ROOT = Path(__file__).resolve().parents[1]
# spec file -> the spec ids of its matrix points, in matrix order, computed by benchbed at be09333 (a spec edited
# since then is pinned to the id be09333 gives its new content: ref-partial, max_new_tokens 4 -> 16 in d7cff33;
# grpo-cpu-matched gained a [verl] table whose CPU profile be09333 does not know: pinned to the id it has since; the
# verl fully_async and one_step_off study specs gained the rollouter cap, the fetch time, the sync pause and
# validation, and re-derived lengths: pinned to the ids of their new content; the 16:16 and colocated 32-GPU
# specs took back the update_actor times the README first published (volcengine/verl@6f0b21c), re-pinned; the vime
# study's specs and the verl fully_async 30B specs, added after be09333, are pinned to the ids they were added with,
# vime's Setup 1 specs re-pinned when their split took the KL loss's reference forward)
PINNED = {
    "benchbed/data/ref-demo.toml": ["ref-demo-d510ea5e"],
    "experiments/prime-rl-case-study-1.toml": ["prime-rl-case-study-1-1ea3b10c"],
    "experiments/prime-rl-case-study-2.toml": ["prime-rl-case-study-2-6f8a5d8f"],
    "experiments/quickstart.toml": ["quickstart-511b934d"],
    "experiments/ref-async.toml": ["ref-async-d7ab1e98"],
    "experiments/ref-learn.toml": ["ref-learn-493ef7a9", "ref-learn-3c29eb3b"],
    "experiments/trl-learn.toml": ["trl-learn-2d8abbcd", "trl-learn-25b3b8ea"],
    "experiments/ref-one-step-off.toml": ["ref-one-step-off-08a018a1"],
    "experiments/ref-partial.toml": ["ref-partial-3e849ade"],
    "experiments/ref-sync.toml": ["ref-sync-db5b31fd"],
    "experiments/reproduce/semianalysis/case1.toml": ["reproduce-case1-530482bb"],
    "experiments/reproduce/semianalysis/case2.toml": ["reproduce-case2-39276601"],
    "experiments/reproduce/semianalysis/case3-phase1.toml": ["reproduce-case3-phase1-7acc82ff"],
    "experiments/reproduce/semianalysis/case3.toml": [
        "reproduce-case3-41c0c391",
        "reproduce-case3-d534861f",
        "reproduce-case3-c6f884d3",
    ],
    "experiments/reproduce/semianalysis/case4.toml": ["reproduce-case4-708cd231"],
    "experiments/reproduce/verl-fully-async/async-16-16.toml": ["reproduce-verl-async-16-16-d2a34c04"],
    "experiments/reproduce/verl-fully-async/async-30b-96-32.toml": ["reproduce-verl-async-30b-96-32-f5034e0d"],
    "experiments/reproduce/verl-fully-async/async-32-32.toml": ["reproduce-verl-async-32-32-93cfe875"],
    "experiments/reproduce/verl-fully-async/async-64-64.toml": [
        "reproduce-verl-async-64-64-ca73f5e6",
        "reproduce-verl-async-64-64-13375e3e",
        "reproduce-verl-async-64-64-8c03e702",
        "reproduce-verl-async-64-64-a4631674",
    ],
    "experiments/reproduce/verl-fully-async/colocate-128.toml": ["reproduce-verl-colocate-128-b68367ca"],
    "experiments/reproduce/verl-fully-async/colocate-30b-128.toml": ["reproduce-verl-colocate-30b-128-b19f4bcf"],
    "experiments/reproduce/verl-fully-async/colocate-32.toml": ["reproduce-verl-colocate-32-776769fc"],
    "experiments/reproduce/verl-fully-async/colocate-64.toml": ["reproduce-verl-colocate-64-65b70653"],
    "experiments/reproduce/verl-one-step-off/colocate-fsdp2.toml": ["reproduce-verl-1off-colocate-fsdp2-1483b963"],
    "experiments/reproduce/verl-one-step-off/colocate-megatron.toml": [
        "reproduce-verl-1off-colocate-megatron-8f721df0"
    ],
    "experiments/reproduce/verl-one-step-off/one-step-off-fsdp2.toml": ["reproduce-verl-1off-fsdp2-b8df2fa4"],
    "experiments/reproduce/verl-one-step-off/one-step-off-megatron.toml": ["reproduce-verl-1off-megatron-44b477c8"],
    "experiments/reproduce/vime/fully-async-qwen3-4b-setup1.toml": ["reproduce-vime-fully-async-setup1-2df33249"],
    "experiments/reproduce/vime/fully-async.toml": ["reproduce-vime-fully-async-5bd6990c"],
    "experiments/reproduce/vime/sync-qwen3-4b-setup1.toml": ["reproduce-vime-sync-setup1-54485795"],
    "experiments/reproduce/vime/sync.toml": ["reproduce-vime-sync-7a05088e"],
    "experiments/sandbox-nightly.toml": ["sandbox-nightly-local-40f089b6"],
    "experiments/sandbox-scaling-modal.toml": ["sandbox-scaling-modal-4d256849", "sandbox-scaling-modal-cc0ae6ce"],
    "experiments/sandbox-scaling.toml": ["sandbox-scaling-local-1f24e2ff", "sandbox-scaling-local-19c1a28f"],
    "experiments/slime-case-study-4.toml": ["slime-case-study-4-2f04dc60"],
    "experiments/slime-trainer-only.toml": ["slime-trainer-only-17f86745"],
    "experiments/verl-case-study-3.toml": [
        "verl-case-study-3-4bc99cf6",
        "verl-case-study-3-9784cae9",
        "verl-case-study-3-04c3ac1a",
        "verl-case-study-3-9896138c",
    ],
    "experiments/verl-qwen3-30b-a3b-grpo.toml": ["verl-qwen3-30b-a3b-grpo-889d4de8"],
    "experiments/trl-grpo-cpu.toml": ["trl-grpo-cpu-b8fa6b5d"],
    "experiments/grpo-cpu-matched.toml": ["grpo-cpu-matched-123654c6"],
}
# suite file#entry -> the spec ids of the entry's spec with the entry's `set` overrides (computed at be09333)
PINNED_SUITE_ENTRIES = {
    "experiments/nightly-cluster.toml#prime-rl-long-responses": ["prime-rl-case-study-1-1ea3b10c"],
    "experiments/nightly-cluster.toml#prime-rl-tool-use": ["prime-rl-case-study-2-6f8a5d8f"],
    "experiments/nightly-cluster.toml#verl-sandbox-scaling": [
        "verl-case-study-3-4bc99cf6",
        "verl-case-study-3-9784cae9",
        "verl-case-study-3-04c3ac1a",
        "verl-case-study-3-9896138c",
    ],
    "experiments/nightly-cluster.toml#slime-partial-rollouts": ["slime-case-study-4-2f04dc60"],
    "experiments/nightly-cpu.toml#quickstart-async": ["quickstart-a3d1fe70"],
    "experiments/nightly-cpu.toml#quickstart-sync": ["quickstart-13fddcf3"],
    "experiments/nightly-cpu.toml#sandbox-local": ["sandbox-nightly-local-40f089b6"],
    "experiments/nightly-cpu.toml#ref-async": ["ref-async-e7dd4655"],
    "experiments/nightly-cpu.toml#trl-grpo": ["trl-grpo-cpu-b8fa6b5d"],
    "experiments/nightly-cpu.toml#ref-learn": ["ref-learn-493ef7a9", "ref-learn-3c29eb3b"],
    "experiments/nightly-cpu.toml#verl-grpo": ["verl-grpo-cpu-fa947e02"],  # added after be09333: its id when added
}


@pytest.mark.parametrize("path", sorted(PINNED))
def test_spec_ids_of_committed_specs_are_pinned(path: str) -> None:
    spec = load_spec(ROOT / path)
    assert [s.spec_id for s in expand(spec, path)] == PINNED[path]


@pytest.mark.parametrize("key", sorted(PINNED_SUITE_ENTRIES))
def test_spec_ids_of_suite_entries_are_pinned(key: str) -> None:
    suite, name = key.split("#")
    entry = next(e for e in load_spec_data(ROOT / suite)["entry"] if e["name"] == name)
    spec = load_spec((ROOT / suite).parent / entry["spec"], entry.get("set", []))
    assert [s.spec_id for s in expand(spec)] == PINNED_SUITE_ENTRIES[key]


@pytest.mark.parametrize("path", sorted(PINNED))
def test_a_stored_spec_keeps_its_id(path: str) -> None:
    """A record stores the spec as plain data; building the spec again from it gives the same id."""
    for spec in expand(load_spec(ROOT / path), path):
        again = build_spec(spec.model_dump(mode="json"), path)
        assert again.spec_id == spec.spec_id
