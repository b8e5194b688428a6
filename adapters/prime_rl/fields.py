"""The `rl` config field list of the pinned prime-rl commit (extracted by tools/prime_rl_fields.py), and key checks."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

FIELDS_DIR = Path(__file__).parent


@dataclass(frozen=True)
class FieldList:
    """Dotted paths accepted by prime-rl's RLConfig; `open_prefixes` accept any key below them."""

    commit: str
    fields: frozenset[str]
    open_prefixes: tuple[str, ...]

    def accepts(self, key: str) -> bool:
        return key in self.fields or any(key.startswith(p) for p in self.open_prefixes)

    def unknown(self, keys: list[str]) -> list[str]:
        return [k for k in keys if not self.accepts(k)]


@lru_cache(maxsize=4)
def field_list(commit: str) -> FieldList:
    path = FIELDS_DIR / f"fields_{commit}.json"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no field list for prime-rl commit {commit}; run tools/prime_rl_fields.py")
    doc = json.loads(path.read_text())
    fields = doc["fields"]
    opens = tuple(sorted(f[:-1] for f in fields if f.endswith(".*")))
    return FieldList(doc["prime_rl_commit"], frozenset(f for f in fields if not f.endswith(".*")), opens)
