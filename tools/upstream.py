"""Check and refresh the upstream snapshots (adapters/*/upstream.json, the format of benchbed.adapterkit.upstream).

    python tools/upstream.py check
    python tools/upstream.py refresh ADAPTER LIST --source "OWNER/REPO@COMMIT: what was read" CHECKOUT [CHECKOUT ...]

`check` reads every snapshot through the kit's loader and says, one line each, which is malformed or not written
in the one layout (exit 1). `refresh` reads the names of one list from checkouts of the framework at the commit
(nothing of theirs is imported but slime's and Megatron-LM's argument parsers) and rewrites that list:

| adapter       | LIST                         | CHECKOUT(s)                                              |
|---------------|------------------------------|----------------------------------------------------------|
| nemo_rl       | keys                         | NeMo-RL                                                  |
| skyrl         | keys                         | SkyRL                                                    |
| open_instruct | keys                         | open-instruct                                            |
| rllm          | keys                         | rLLM                                                     |
| prime_rl      | prime-rl COMMIT              | prime-rl, its deps/verifiers, more package roots         |
| slime         | slime VERSION, megatron      | slime, Megatron-LM (needs torch)                         |
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from nemo_rl_skyrl_keys import nemo_rl_keys, skyrl_fields
from open_instruct_rllm_keys import open_instruct_flags, rllm_keys

from benchbed.adapterkit.upstream import SNAPSHOT_FILE, NameList, load_snapshot, snapshot_text
from benchbed.errors import AdapterError

ROOT = Path(__file__).resolve().parents[1]
Extractor = Callable[[list[Path]], list[str]]


def _prime_rl(checkouts: list[Path]) -> list[str]:
    from prime_rl_fields import extract

    return extract(checkouts[0], checkouts[1], checkouts[2:])


def _slime_parser(kind: str) -> Extractor:
    def read(checkouts: list[Path]) -> list[str]:
        from slime_argnames import option_strings

        return option_strings(checkouts[0], checkouts[1], kind)

    return read


def extractor(adapter: str, list_name: str) -> tuple[Extractor, int]:
    """How the list's names are read, and how many checkouts that takes at least; KeyError for an unknown list."""
    single = {"nemo_rl": nemo_rl_keys, "skyrl": skyrl_fields, "open_instruct": open_instruct_flags, "rllm": rllm_keys}
    if adapter in single and list_name == "keys":
        read = single[adapter]
        return (lambda checkouts: read(checkouts[0])), 1
    if adapter == "prime_rl" and list_name.startswith("prime-rl "):
        return _prime_rl, 2
    if adapter == "slime" and (list_name == "megatron" or list_name.startswith("slime ")):
        return _slime_parser("megatron" if list_name == "megatron" else "slime"), 2
    raise KeyError(f"{adapter}: no extractor for list {list_name!r} (see tools/upstream.py's table)")


def check(root: Path) -> list[str]:
    """One line per snapshot under root/adapters that is malformed or not in the one layout; none when all are."""
    problems = []
    for path in sorted((root / "adapters").glob(f"*/{SNAPSHOT_FILE}")):
        try:
            lists = load_snapshot(path)
        except AdapterError as exc:
            problems.append(str(exc))
            continue
        if path.read_text() != snapshot_text(lists):
            problems.append(f"{path}: not in the one layout; rewrite it with `tools/upstream.py refresh`")
    return problems


def refresh(root: Path, adapter: str, list_name: str, source: str, checkouts: list[Path]) -> Path:
    """Rewrite one list of the adapter's snapshot from the checkouts (other lists kept, the file created if new)."""
    read, needed = extractor(adapter, list_name)
    if "@" not in source:
        raise SystemExit(f"--source {source!r}: expected 'OWNER/REPO@COMMIT: what was read'")
    if len(checkouts) < needed:
        raise SystemExit(f"{adapter} {list_name!r}: needs {needed} checkout(s), got {len(checkouts)}")
    path = root / "adapters" / adapter / SNAPSHOT_FILE
    lists = dict(load_snapshot(path)) if path.exists() else {}
    lists[list_name] = NameList(source, tuple(sorted(set(read(checkouts)))))
    load_snapshot.cache_clear()
    path.write_text(snapshot_text(lists))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this one)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("check", help="every snapshot loads and is in the one layout")
    fresh = commands.add_parser("refresh", help="rewrite one list from checkouts at the commit")
    fresh.add_argument("adapter")
    fresh.add_argument("list_name", metavar="LIST")
    fresh.add_argument("--source", required=True, help='"OWNER/REPO@COMMIT: what was read"')
    fresh.add_argument("checkouts", nargs="+", type=Path)
    args = parser.parse_args(argv)
    if args.command == "check":
        problems = check(args.root)
        print("\n".join(problems) or "every upstream snapshot loads and is in the one layout")
        return 1 if problems else 0
    try:
        path = refresh(args.root, args.adapter, args.list_name, args.source, args.checkouts)
    except (KeyError, AdapterError) as exc:
        print(str(exc).strip("'\""), file=sys.stderr)
        return 2
    print(f"{path}: {args.list_name} refreshed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
