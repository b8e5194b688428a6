"""MkDocs hooks: fill the reference from the code and refuse a site that no longer matches it.

A page asks for generated content with a marker comment, `<!-- benchbed:NAME [ARG] -->`, replaced when the site is
built: `cli`, `metrics`, `trace-keys`, `rollout-statuses`, `sandbox-failure-reasons`, `spec`, `adapters`,
`keymap ADAPTER`, `api module:Class` (a class's contract: docstring and method signatures), `plugins GROUP` (the
entry points registered in a group), `readme`. The build fails (strict or not) when a marker is unknown, a CLI
option or metric is undocumented, a registered adapter has no page under frameworks/ (or its page does not show
its key map), or a built page loads an asset from the network (the site must work offline)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gen_api import api_markdown
from gen_cli import cli_markdown
from gen_common import DocsError
from gen_keys import keymap_markdown, trace_keys_markdown, vocabulary_markdown
from gen_metrics import metrics_markdown
from gen_registry import adapter_pages, adapters, keymap_of, launcher_tables, plugins_markdown, readme_markdown
from gen_spec import spec_markdown
from mkdocs.exceptions import PluginError

MARKER = re.compile(r"<!--\s*benchbed:([a-z-]+)(?:[ \t]+([^\s>]+))?\s*-->")
# A script, image or frame from another host, or a stylesheet, icon or font link (preload, preconnect) to one; a
# canonical or alternate link only names a page (mkdocs serve writes the canonical URL with its 127.0.0.1 address).
EXTERNAL_ASSET = re.compile(
    r"<(?:script|img|iframe)[^>]*\ssrc=\"(?:https?:)?//"
    r"|<link(?![^>]*\srel=\"(?:canonical|alternate|prev|next)\")[^>]*\shref=\"(?:https?:)?//"
)


def _generated(name: str, arg: str | None, page_path: str) -> str:
    """The Markdown a marker stands for; DocsError for an unknown marker or one missing its argument."""
    if name == "cli":
        from benchbed.cli.main import cli

        return cli_markdown(cli)
    if name == "metrics":
        from benchbed.metrics import METRICS
        from benchbed.metrics.registry import PRESENTATION

        return metrics_markdown(METRICS, PRESENTATION)
    if name == "trace-keys":
        from benchbed.keys import AGG_PREFIXES, KEYS

        return trace_keys_markdown(KEYS, AGG_PREFIXES)
    if name in ("rollout-statuses", "sandbox-failure-reasons"):
        from benchbed import keys

        words = keys.ROLLOUT_STATUSES if name == "rollout-statuses" else keys.SANDBOX_FAILURE_REASONS
        return vocabulary_markdown(words)
    if name == "spec":
        from benchbed.spec import ExperimentSpec

        tables = {table: (adapter, model) for adapter, table, model in adapters() if model is not None}
        return spec_markdown(ExperimentSpec, tables, launcher_tables())
    if name == "adapters":
        return adapter_pages(page_path)
    if name == "keymap":
        if not arg:
            raise DocsError(f"{page_path}: `benchbed:keymap` needs the adapter's name")
        keymap = keymap_of(arg)
        if keymap is None:
            return f"`{arg}` has no key map: it writes the canonical trace itself, so there is nothing to translate.\n"
        return keymap_markdown(keymap)
    if name == "api":
        if not arg:
            raise DocsError(f"{page_path}: `benchbed:api` needs a class, `module:Class`")
        return api_markdown(arg)
    if name == "plugins":
        if not arg:
            raise DocsError(f"{page_path}: `benchbed:plugins` needs an entry-point group")
        return plugins_markdown(arg)
    if name == "readme":
        return readme_markdown()
    raise DocsError(f"{page_path}: unknown marker `benchbed:{name}`")


def on_files(files: Any, config: Any) -> Any:
    """Every registered adapter needs its page, and that page must show the adapter's key map."""
    docs = Path(config["docs_dir"])
    problems = []
    for adapter, _, _ in adapters():
        page = docs / "frameworks" / f"{adapter}.md"
        if not page.exists():
            problems.append(f"adapter {adapter!r} has no page {page} (what it launches, what it reads, known gaps)")
        elif f"benchbed:keymap {adapter}" not in page.read_text():
            problems.append(f"{page}: no `<!-- benchbed:keymap {adapter} -->` marker for its key map table")
    if problems:
        raise PluginError("; ".join(problems))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace each marker with what the code says now."""
    where = page.file.src_uri
    try:
        return MARKER.sub(lambda m: _generated(m.group(1), m.group(2), where), markdown)
    except DocsError as exc:
        raise PluginError(str(exc)) from None


def on_post_build(config: Any) -> None:
    """Refuse a page that loads a script, style or image from the network: the site must work offline."""
    site = Path(config["site_dir"])
    offenders = [str(p.relative_to(site)) for p in site.rglob("*.html") if EXTERNAL_ASSET.search(p.read_text())]
    if offenders:
        raise PluginError(f"pages load assets from the network (the site must work offline): {', '.join(offenders)}")
