"""Secret masking by name: credentials are masked, token counts and limits keep their values."""

from __future__ import annotations

import pytest

from benchbed.secrets import MASK, is_secret_name, redact_mapping
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
