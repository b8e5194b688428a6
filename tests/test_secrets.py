"""Secret masking by name: credentials are masked, token counts and limits keep their values."""

from __future__ import annotations

from argparse import Namespace

import pytest

from benchbed.secrets import MASK, find_secrets, is_secret_name, redact, redact_env, redact_mapping, redact_values
from benchbed.spec import build_spec


@pytest.mark.parametrize("name", ["HF_TOKEN", "MODAL_TOKEN_ID", "access_token", "GITHUB_TOKEN", "WANDB_API_KEY",
                                  "OPENAI_APIKEY", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD"])  # fmt: skip
def test_credential_names_are_secret(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["max_new_tokens", "max_response_tokens", "prompt_tokens", "tokenizer", "tokens"])
def test_token_counts_are_not_secret(name: str) -> None:
    assert not is_secret_name(name)


def test_a_spec_keeps_its_token_limits_and_numbers_while_credentials_are_masked() -> None:
    spec = build_spec({"name": "t", "adapter": "sim", "workload": {"max_response_tokens": 8192}})
    data = spec.model_dump(mode="json")
    data["verl"] = {"ppo_max_token_len_per_gpu": 16384, "env": {"HF_TOKEN": "hf_abcdefgh"}}
    masked = redact_mapping(data)
    assert masked["workload"]["max_response_tokens"] == 8192
    assert masked["verl"]["ppo_max_token_len_per_gpu"] == 16384
    assert masked["verl"]["env"]["HF_TOKEN"] == MASK


@pytest.mark.parametrize("name", ["WANDB_KEY", "HF_AUTH", "PROXY_AUTHORIZATION", "DB_PASS", "ssh_key"])
def test_credentials_under_short_names_are_secret(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["keymap", "KEYMAP", "author", "passes", "n_keys", "passthrough"])
def test_words_that_merely_contain_key_auth_or_pass_are_not(name: str) -> None:
    assert not is_secret_name(name)


def test_a_password_in_any_url_is_masked_wherever_it_appears() -> None:
    text = "push to https://u:sk-live-0123456789@hub.example.com/x, then http://head:8265/ and s3://bucket/key"
    assert redact(text, []) == "push to https://u:***@hub.example.com/x, then http://head:8265/ and s3://bucket/key"
    data = {"verl": {"overrides": {"data.url": "postgres://bob:p4ss@db:5432/x"}}, "n": 3}
    assert redact_mapping(data, []) == {"verl": {"overrides": {"data.url": "postgres://bob:***@db:5432/x"}}, "n": 3}
    assert redact_env({"HF_ENDPOINT": "https://user:hf_abc@hub", "WANDB_KEY": "abcdefgh"}, []) == {
        "HF_ENDPOINT": "https://user:***@hub", "WANDB_KEY": MASK,
    }  # fmt: skip


def test_an_exported_secret_never_reaches_the_runs_files(benchbed, tmp_path) -> None:
    from pathlib import Path

    quickstart = Path(__file__).resolve().parents[1] / "experiments" / "quickstart.toml"
    key, auth = "wk-0123456789abcdef", "hfa-9876543210"
    spec = tmp_path / "s.toml"
    text = quickstart.read_text().replace('model = "Qwen/Qwen3-30B-A3B"', f'model = "{key}/Qwen3"')
    spec.write_text(
        text.replace('description = "generation-bound', 'description = "https://u:pw-123456@hub generation-bound')
    )
    store = tmp_path / "store"
    run = benchbed("simulate", spec, "--set", "workload.steps=10", "--store", store,
                   env={"WANDB_KEY": key, "HF_AUTH": auth})  # fmt: skip
    assert run.returncode == 0, run.stderr
    run_dir = next(store.rglob("record.json")).parent
    for path in (p for p in run_dir.rglob("*") if p.is_file()):
        data = path.read_bytes()
        assert key.encode() not in data and b"pw-123456" not in data, path
    assert '"model": "***/Qwen3"' in (run_dir / "sim-spec.json").read_text()
    assert '"description": "https://u:***@hub generation-bound' in (run_dir / "sim-spec.json").read_text()


def test_credentials_a_run_config_holds_are_found_with_where_they_are() -> None:
    """OpenRLHF's nested args as W&B keeps them (a Namespace repr), a config entry, an argv list, a dict repr and a
    URL password: each value found, named by its key path, never by its value."""
    args = Namespace(wandb=Namespace(key="fake-wb-0123456789"), input_key="prompt", max_token_len=163840)
    config = {
        "args": repr(args),
        "trainer": {"wandb_api_key": "fake-api-42abc", "wandb_proxy": "http://u:pw-fake99@proxy:3128"},
        "data": {"prompt_key": "prompt", "reward_fn_key": "data_source", "ppo_max_token_len_per_gpu": 16384},
        "argv": ["train.py", "--logger.wandb.key", "fake-cli-777x", "--hf_token=fake-hf-555y", "--lr", "1e-5"],
        "repr": "{'api_key': 'fake-dict-321z', 'token_path': '/home/u/.cache/token'}",
        "requirements": "google-auth==2.63.0\nhf-token-helper==1.0.0",
        "value_entry": {"HF_TOKEN": {"desc": None, "value": "fake-yaml-123q"}},
    }
    assert find_secrets(config, "config") == {
        "fake-wb-0123456789": "config args: key=",
        "fake-api-42abc": "config trainer.wandb_api_key",
        "pw-fake99": "config trainer.wandb_proxy: a URL's password",
        "fake-cli-777x": "config argv: logger.wandb.key=",
        "fake-hf-555y": "config argv: hf_token=",
        "fake-dict-321z": "config repr: api_key=",
        "fake-yaml-123q": "config value_entry.HF_TOKEN.value",
    }


def test_redact_values_masks_inside_strings_and_keeps_keys_and_numbers() -> None:
    data = {"args": "namespace(key='fake-wb-0123456789')", "n": [163840, "x fake-wb-0123456789"], "data_key": "prompt"}
    assert redact_values(data, ["fake-wb-0123456789"]) == {
        "args": f"namespace(key='{MASK}')", "n": [163840, f"x {MASK}"], "data_key": "prompt"}  # fmt: skip
