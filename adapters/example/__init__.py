"""Adapter `example`: the documented template for adding a framework (docs/extending/adapter.md).

A framework integration is this one package and one entry point in pyproject.toml:

    [project.entry-points."benchbed.adapters"]
    example = "benchbed.adapters.example:ExampleAdapter"

The package reads as a key map (keymap.toml), a renderer (render.py) and the parsing only this framework needs
(parse.py); the adapter kit (benchbed/adapterkit/) does the shared chores. The class below declares, for the
contract of `benchbed.adapter.Adapter`:
- `name`, the entry-point name; a spec selects the adapter with `adapter = "example"`;
- `options_model`, the pydantic model (extra="forbid") of the spec's `[example]` table: benchbed validates the
  table when it loads the spec, so `--set example.seed=3` and dotted-path errors work with no edit to benchbed;
- `renderer`, (spec, run_dir) -> the LaunchPlan (argv, env, files) a user would type; pure: no framework import;
- `parser`, a run directory or a native file -> the canonical trace, raising NotThisFrameworkError for anything
  another framework wrote;
- `run_marker`, a file -> the run directory it marks, so `benchbed ingest` lists several runs, never picks one.
Functions are named as "module:function" (".module" is relative to this package) and imported on first use.
tests/conformance/ runs every registered adapter (this one included) through the same checks.
"""

from __future__ import annotations

from benchbed.adapters.example.options import ExampleOptions

from benchbed.adapterkit.adapter import FrameworkAdapter


class ExampleAdapter(FrameworkAdapter):
    """Launches the toy loop (`python -m benchbed.adapters.example.toyloop`) and reads its JSON-lines log."""

    name = "example"
    options_model = ExampleOptions
    renderer = ".render:render_plan"
    parser = ".parse:parse_path"
    run_marker = ".discover:marks_run"
