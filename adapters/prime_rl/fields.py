"""The `rl` config field list of a pinned prime-rl commit, from the adapter's upstream snapshot (upstream.json,
refreshed by tools/upstream.py), for checking rendered keys offline."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapterkit.upstream import NameList, upstream_list


def field_list(commit: str) -> NameList:
    """The dotted paths RLConfig accepts at `commit` (`path.*`: any key below `path`)."""
    return upstream_list(Path(__file__).parent, f"prime-rl {commit}")
