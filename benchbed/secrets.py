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


# `name=value` (an argparse Namespace's repr, `KEY=VALUE` on a command line; `pkg==1.0` is none), `'name': 'value'`
# (a dict's repr, JSON) and `--name value` (a command line) inside a string: how a credential hides in a config.
_PAIR = re.compile(
    r"""(?P<name>[A-Za-z_][\w.-]*)\s*(?<![=<>!~])=(?!=)\s*(?P<value>'[^']*'|"[^"]*"|[^\s,()\[\]{}'"]+)"""
    r"""|['"](?P<dname>[^'"\s]+)['"]\s*:\s*(?P<dvalue>'[^']*'|"[^"]*")"""
    r"""|(?<![\w-])--(?P<flag>[A-Za-z_][\w.-]*)\s+(?P<fvalue>[^\s'"-]\S*)"""
)
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_FIELD = re.compile(r"[a-z]+(?:_[a-z]+)*")  # a dataset field's name: verl's `prompt_key: prompt`, OpenRLHF's input_key
_NOT_CREDENTIALS = frozenset({"None", "null", "True", "False", "true", "false", "MISSING", "???"})


def _credential(name: str, value: str) -> bool:
    """Whether `value`, found under the secret-like `name`, may be a credential: not a short string, a number, a
    flag, None or a path, nor a lower-case field name under a `*key` name (verl's `data.prompt_key: prompt`)."""
    value = value.strip()
    if len(value) < 6 or value in _NOT_CREDENTIALS or value.startswith(("/", "~/", "./")) or _NUMBER.fullmatch(value):
        return False
    return not (_FIELD.fullmatch(value) and name.lower().endswith("key"))


def find_secrets(data: object, where: str, found: dict[str, str] | None = None) -> dict[str, str]:
    """Credentials a run's own config or metadata holds, as {value: where it was found (a key path, never the
    value)}: strings under secret-named keys, `name=value`, `'name': 'value'` and `--name value` pairs with secret
    names inside strings (argparse Namespace reprs, dict reprs, command lines), and passwords in URLs."""
    found = {} if found is None else found

    def add(value: str, place: str) -> None:
        found.setdefault(value.strip(), place)

    def scan(text: str, place: str) -> None:
        for match in _PAIR.finditer(text):
            name = match["name"] or match["dname"] or match["flag"]
            value = (match["value"] or match["dvalue"] or match["fvalue"]).strip("'\"")
            if is_secret_name(name) and _credential(name, value):
                add(value, f"{place}: {name}=")
        for match in _URL_PASSWORD.finditer(text):
            if len(match["password"]) >= 6:
                add(match["password"], f"{place}: a URL's password")

    def walk(node: object, path: str, name: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                key = str(key)  # wandb's config.yaml keeps each entry as {value: ..., desc: ...}: the entry names it
                walk(value, f"{path}.{key}" if path else key, name if key in ("value", "desc") else key)
        elif isinstance(node, list | tuple):
            for item in node:
                walk(item, path, name)
            if node and all(isinstance(item, str) for item in node):
                scan(" ".join(node), f"{where} {path}".strip())  # an argv list: `--key`, `VALUE` as two items
        elif isinstance(node, str):
            if is_secret_name(name) and _credential(name, node):
                add(node, f"{where} {path}".strip())
            scan(node, f"{where} {path}".strip())

    walk(data, "", "")
    return found


def redact_values(data: object, values: list[str]) -> object:
    """A copy of nested dicts/lists with `values` (and URL passwords) masked inside every string, keys kept."""
    if isinstance(data, dict):
        return {k: redact_values(v, values) for k, v in data.items()}
    if isinstance(data, list):
        return [redact_values(v, values) for v in data]
    return redact(data, values) if isinstance(data, str) else data


def refuse_secret_env(env: dict[str, str]) -> dict[str, str]:
    """`env` unchanged; ValueError naming the variables that look like secrets (for an options model's `env`)."""
    secret = sorted(k for k in env if is_secret_name(k))
    if secret:
        raise ValueError(f"{secret} look like secrets: they must come from the cluster's own environment, never "
                         "from a spec (specs are stored with every record)")  # fmt: skip
    return env
