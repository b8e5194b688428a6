"""The reference pages are generated from the code: a new metric, CLI option or spec field changes them with no
hand edit, and an undocumented one fails the build."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from gen_cli import cli_markdown, undocumented
from gen_common import DocsError, cell
from gen_keys import keymap_markdown, trace_keys_markdown
from gen_metrics import metrics_markdown
from gen_registry import adapters, keymap_of, readme_markdown
from gen_spec import spec_markdown
from pydantic import BaseModel, Field

from benchbed.cli.main import cli
from benchbed.keys import AGG_PREFIXES, KEYS
from benchbed.metrics import METRICS
from benchbed.metrics.registry import FAMILIES, PRESENTATION, MetricDef, Presentation
from benchbed.spec import ExperimentSpec

ROOT = Path(__file__).resolve().parents[2]


def test_every_cli_command_and_option_is_in_the_reference() -> None:
    page = cli_markdown(cli)
    assert undocumented(cli, "benchbed") == []
    for name in ("run", "simulate", "ingest", "report", "nightly", "compare", "history", "plan", "sandbox run"):
        assert f"\n## benchbed {name}\n" in page or f"\n### benchbed {name}\n" in page, name
    run = page.split("\n## benchbed run\n", 1)[1].split("\n## ", 1)[0]
    assert "| `--launcher NAME` | where to launch:" in run
    nightly = page.split("\n## benchbed nightly\n", 1)[1].split("\n## ", 1)[0]
    for option in cli.get_command(click.Context(cli), "nightly").params:
        if isinstance(option, click.Option):
            assert re.search(rf"^\| `[^`]*{option.opts[-1]}\b", nightly, re.M), option.opts


def test_a_new_option_appears_and_one_without_help_fails_the_build() -> None:
    @click.group()
    def tool() -> None:
        """A tool."""

    @tool.command()
    @click.option("--depth", type=int, default=3, show_default=True, help="how deep to look")
    def scan(depth: int) -> None:
        """Scan things."""

    page = cli_markdown(tool, "tool")
    assert "## tool scan\n\n```text\ntool scan [OPTIONS]\n```\n\nScan things." in page
    assert "| `--depth INTEGER` | how deep to look [default: 3] |" in page

    @tool.command()
    @click.option("--quiet", is_flag=True)
    def lurk(quiet: bool) -> None:
        """Lurk."""

    with pytest.raises(DocsError, match=r"`tool lurk` option --quiet has no help text"):
        cli_markdown(tool, "tool")


def test_every_metric_is_in_the_metric_reference_with_its_unit_direction_and_definition() -> None:
    page = metrics_markdown(METRICS, PRESENTATION)
    direction = {True: "higher", False: "lower", None: "—"}
    for name, metric in METRICS.items():
        headline = "yes" if PRESENTATION[name].headline else ""
        row = f'| <span id="{name}">`{name}`</span> | {cell(metric.unit)} | {direction[metric.higher_is_better]} |'
        assert f"{row} {headline} | {cell(metric.description)} |" in page, name
    families = re.findall(r"^### (.+)$", page, re.M)
    assert [f.lower() for f in families] == list(FAMILIES)


def test_a_new_metric_changes_the_page_and_one_without_definition_fails() -> None:
    metrics = dict(METRICS)
    presentation = {**PRESENTATION, "queue_depth_mean": Presentation("staleness", False, headline=True)}
    metrics["queue_depth_mean"] = MetricDef("queue_depth_mean", "samples", "mean finished, untrained", len)
    page = metrics_markdown(metrics, presentation)
    staleness = page.split("### Staleness", 1)[1].split("###", 1)[0]
    assert (
        '| <span id="queue_depth_mean">`queue_depth_mean`</span> | samples | lower | yes | mean finished' in staleness
    )
    metrics["mystery"] = MetricDef("mystery", "ratio", " ", len)
    with pytest.raises(DocsError, match="mystery"):
        metrics_markdown(metrics, {**presentation, "mystery": Presentation("other", None)})
    del metrics["mystery"]
    metrics["unshown"] = MetricDef("unshown", "ratio", "a metric with no presentation entry", len)
    with pytest.raises(DocsError, match="unshown"):
        metrics_markdown(metrics, presentation)


class _Inner(BaseModel):
    """An inner table."""

    depth: int = Field(2, gt=0, description="how deep")


class _Options(BaseModel):
    """A new adapter's options."""

    inner: _Inner = Field(default_factory=_Inner)
    mode: str = "fast"


def test_spec_fields_come_from_the_pydantic_models() -> None:
    page = spec_markdown(ExperimentSpec, {"newfw": ("newfw", _Options)})
    assert "### `[newfw]`: adapter `newfw` { #newfw }\n\nA new adapter's options." in page
    assert "| `inner` | [_Inner](#newfw-inner) | its table's defaults | — |" in page
    assert "### `[newfw.inner]` { #newfw-inner }" in page
    assert "| `depth` | int | `2` | how deep (> 0) |" in page
    assert '| `mode` | str | `"fast"` | — |' in page
    assert "| `steps` | int | `200` | trainer steps (> 0, ≤ 10000000) |" in page
    for field in ExperimentSpec.model_fields:
        assert f"| `{field}` |" in page


def test_the_spec_reference_has_every_registered_adapters_table() -> None:
    tables = {table: (name, model) for name, table, model in adapters() if model is not None}
    page = spec_markdown(ExperimentSpec, tables)
    assert {"sim", "verl", "slime", "prime_rl", "example"} <= set(tables)
    for table, (name, _) in tables.items():
        assert f"### `[{table}]`: adapter `{name}`" in page


def test_key_maps_are_rendered_from_their_files() -> None:
    keymap = keymap_of("example")
    page = keymap_markdown(keymap)
    assert "Releases (oldest first): `1`." in page
    assert "| `gen` | `trainer.wait` | s | component | 1 | the trainer waits while the batch is generated" in page
    assert len([line for line in page.splitlines() if line.startswith("| `")]) == len(keymap.entries)
    assert keymap_of("sim") is None
    # a key's relation to the step or its process is shown beside the role
    slime = keymap_markdown(keymap_of("slime"))
    nested = "component, within `perf/train_wait_time`, in the next step"
    assert f"| `perf/ref_model_update_time` | `trainer.other` | s | {nested} |" in slime
    assert "| tokens/s | counter, rate over `perf/actor_train_time` |" in slime
    verl = keymap_markdown(keymap_of("verl"))
    assert "| `timing_s/generate_async` | — | s | component, beside the trainer | 0.9 | one_step_off |" in verl
    assert "| `perf/*` | — | — | marker, trainer process |" in keymap_markdown(keymap_of("prime_rl"))


def test_trace_keys_come_from_the_vocabulary() -> None:
    page = trace_keys_markdown(KEYS, AGG_PREFIXES)
    assert len(re.findall(r"^\| `", page, re.M)) == len(KEYS)
    assert "| `rollout.buffered` | a partial rollout waiting in the buffer" in page


def test_the_front_page_is_the_readme_with_links_into_the_site() -> None:
    page = readme_markdown()
    assert "](docs/" not in page
    assert not page.startswith("# ")


def test_the_offline_check_refuses_network_assets_but_not_page_links() -> None:
    from hooks import EXTERNAL_ASSET

    refused = [
        '<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">',
        '<link rel="preconnect" href="https://fonts.gstatic.com" crossorigin>',
        '<link href="//cdn.example/x.css" rel="stylesheet">',
        '<script src="https://unpkg.com/mermaid.min.js"></script>',
        '<img alt="" src="https://example.org/a.png">',
    ]
    allowed = [
        '<link rel="canonical" href="http://127.0.0.1:8000/index.html">',
        '<script src="assets/javascripts/bundle.min.js"></script>',
        '<img alt="" src="../img/report-annotated.png">',
        '<a href="https://ui.perfetto.dev">',
    ]
    assert [bool(EXTERNAL_ASSET.search(tag)) for tag in refused + allowed] == [True] * 5 + [False] * 4


def test_the_extending_pages_show_each_contract_as_the_code_defines_it() -> None:
    from gen_api import api_markdown

    page = api_markdown("benchbed.sandbox.base:SandboxBackend")
    assert page.startswith("`benchbed.sandbox.base.SandboxBackend`: create -> exec* -> close;")
    assert (
        "    async def create(self, spec: SandboxSpec, *, key: str, deadline_s: float, on_step: OnStep) -> Handle: ..."
        in page
    )
    assert "    async def sweep(self, *, final: bool = False) -> int: ..." in page
    adapter = api_markdown("benchbed.adapter:Adapter")
    assert "- `parse`: Read a run directory (or a single native file) into the canonical trace." in adapter
    with pytest.raises(DocsError, match="cannot import it"):
        api_markdown("benchbed.launch.base:NoSuchLauncher")


def test_plug_in_groups_are_listed_from_their_entry_points() -> None:
    from gen_registry import plugins_markdown

    launchers = plugins_markdown("benchbed.launchers")
    assert "| `slurm` | `benchbed.launch.slurm:SlurmLauncher` |" in launchers
    assert "| `local` | `benchbed.sandbox.local:LocalBackend` |" in plugins_markdown("benchbed.sandbox_backends")
    with pytest.raises(DocsError, match="no entry points registered in 'benchbed.nothing'"):
        plugins_markdown("benchbed.nothing")
