"""Keep credentials out of records, traces, log copies and reports: find secret env values and mask them."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

# TOKEN, KEY, AUTH and PASS only as words of their own (HF_TOKEN, WANDB_KEY, HF_AUTH, DB_PASS), so token counts
# and limits (max_new_tokens, prompt_tokens), keymaps and authors are not taken for credentials.
_SECRET_NAME = re.compile(
    r"(?<![A-Za-z0-9])(?:TOKEN|KEY|AUTH|AUTHORIZATION|PASS)(?![A-Za-z0-9])|SECRET|API_?KEY|PASSWORD|PASSWD"
    r"|CREDENTIAL|PRIVATE_KEY",
    re.IGNORECASE,
)
# The password of a URL's user info (`https://user:sk-...@host`), whatever variable or field holds the URL.
_URL_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)(?P<password>[^/\s@]+)(?=@)")
MASK = "***"


def is_secret_name(name: str) -> bool:
    """True for variable names such as MODAL_TOKEN_ID, PRIME_API_KEY, WANDB_API_KEY, WANDB_KEY, HF_TOKEN, HF_AUTH."""
    return bool(_SECRET_NAME.search(name))


def secret_values(env: Mapping[str, str] | None = None) -> list[str]:
    """Values of secret-named variables long enough to be worth masking, longest first."""
    env = os.environ if env is None else env
    values = {v for k, v in env.items() if is_secret_name(k) and len(v) >= 6}
    return sorted(values, key=len, reverse=True)


def redact(text: str, values: list[str] | None = None) -> str:
    """`text` with every secret value, and every password in a URL, masked."""
    for value in secret_values() if values is None else values:
        text = text.replace(value, MASK)
    return _URL_PASSWORD.sub(rf"\g<head>{MASK}", text) if "://" in text else text


def redact_env(env: Mapping[str, str], values: list[str] | None = None) -> dict[str, str]:
    """The mapping with secret-named variables' values masked, and secret values masked wherever they appear
    in the others (a URL embedding a token), for printing and records."""
    values = secret_values() if values is None else values
    return {k: (MASK if is_secret_name(k) else redact(v, values)) for k, v in env.items()}


def redact_mapping(data: object, values: list[str] | None = None) -> object:
    """A copy of nested dicts/lists with strings under secret-named keys masked and secret values masked inside
    every string (for specs in records): masked by name and by value. Numbers and flags are never credentials, so
    a setting such as verl's `ppo_max_token_len_per_gpu` keeps its value."""
    values = secret_values() if values is None else values
    if isinstance(data, dict):
        return {k: (MASK if is_secret_name(str(k)) and isinstance(v, str) else redact_mapping(v, values))
                for k, v in data.items()}  # fmt: skip
    if isinstance(data, list):
        return [redact_mapping(v, values) for v in data]
    if isinstance(data, str):
        return redact(data, values)
    return data
