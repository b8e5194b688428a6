"""Adapter `example`: the documented template for adding a framework (README "Adding an adapter").

A framework integration is this one package and one entry point in pyproject.toml:

    [project.entry-points."benchbed.adapters"]
    example = "benchbed.adapters.example:ExampleAdapter"

The class below has the contract of `benchbed.adapters.base.Adapter`:
- `name`, the entry-point name; a spec selects the adapter with `adapter = "example"`;
- `options_model`, the pydantic model (extra="forbid") of the spec's `[example]` table: benchbed validates the
  table when it loads the spec, so `--set example.seed=3` and dotted-path errors work with no edit to benchbed;
- `render(spec, run_dir)`: the LaunchPlan (argv, env, files) a user would type, pure: no framework import;
- `parse(path)`: a run directory or a native file into the canonical trace, raising NotThisFrameworkError for
  anything another framework wrote;
- optionally `find_runs(path)`: the run directories under a path, so `benchbed ingest` never picks one silently.
tests/conformance/ runs every registered adapter (this one included) through the same checks.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchbed.adapters.base import LaunchPlan
from benchbed.adapters.example.logformat import FORMAT, LOG
from benchbed.adapters.example.options import ExampleOptions

from benchbed import keys as K
from benchbed.errors import AdapterError, NotThisFrameworkError
from benchbed.runs import by_name, runs_under
from benchbed.trace import Trace, TraceBuilder, TraceMeta

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

if TYPE_CHECKING:
    from benchbed.spec import ExperimentSpec

TIMERS: dict[str, str] = tomllib.loads((Path(__file__).with_name("keymap.toml")).read_text())["timers"]


class ExampleAdapter:
    """Launches the toy loop (`python -m benchbed.adapters.example.toyloop`) and reads its JSON-lines log."""

    name = "example"
    options_model = ExampleOptions

    def render(self, spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
        opts = ExampleOptions.model_validate(spec.adapter_table(self.name))
        w = spec.workload
        argv = [sys.executable, "-m", "benchbed.adapters.example.toyloop", "--steps", str(w.steps),
                "--prompts", str(w.prompts_per_step), "--group-size", str(w.group_size), "--seed", str(opts.seed),
                "--update-s", str(opts.update_s), "--sync-s", str(opts.sync_s), "--out", LOG]  # fmt: skip
        return LaunchPlan(argv=argv, timeout_s=spec.timeout_s, description=f"toy loop, {w.steps} steps")

    def parse(self, path: Path) -> Trace:
        log = _log_file(Path(path))
        header, records = _read(log)
        builder = TraceBuilder()
        groups: dict[str, Group] = {}
        warnings: list[str] = []
        for n, rec in records:
            try:
                if rec["kind"] == "sample":
                    _add_sample(builder, rec)
                    groups.setdefault(rec["group"], Group()).add(rec)
                elif rec["kind"] == "step":
                    _add_step(builder, rec, warnings)
            except (KeyError, TypeError) as exc:
                raise AdapterError(f"{log}:{n}: {rec.get('kind', '?')} record without field {exc}") from None
        for name, group in groups.items():
            builder.point(K.ROLLOUT_GROUP, group.end, step=group.step, group=name, value=group.reward_std(),
                          status="ok", actor="generator")  # fmt: skip
        meta = TraceMeta(adapter=self.name, framework="toyloop", framework_version=str(header.get("version", "")),
                         mode="sync", group_size=header.get("group_size"), sources=[str(log)],
                         warnings=warnings)  # fmt: skip
        return builder.build(meta)

    def find_runs(self, path: Path) -> list[Path]:
        return runs_under(Path(path), by_name((LOG,)))


def _log_file(path: Path) -> Path:
    log = path / LOG if path.is_dir() else path
    if not log.is_file():
        raise NotThisFrameworkError(f"not an example run: {path} has no {LOG}")
    return log


def _read(log: Path) -> tuple[dict[str, Any], list[tuple[int, dict[str, Any]]]]:
    """The header and the (line number, record) pairs; NotThisFrameworkError unless line 1 is the header."""
    with log.open("rb") as fh:
        first = fh.readline()
        try:
            header = json.loads(first)
        except ValueError:
            header = None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise NotThisFrameworkError(f"not an example run: {log} line 1 is not a {FORMAT} header")
        records = []
        for n, line in enumerate(fh, start=2):
            try:
                records.append((n, json.loads(line)))
            except ValueError as exc:
                raise AdapterError(f"{log}:{n}: not a JSON record ({exc})") from None
    return header, records


def _add_sample(builder: TraceBuilder, rec: dict[str, Any]) -> None:
    v_train = rec["trained_by_version"]
    builder.span(K.ROLLOUT, rec["begin"], rec["end"], step=v_train + 1, sample=rec["id"], group=rec["group"],
                 v_start=rec["policy_version"], v_end=rec["policy_version"], v_train=v_train, status="ok",
                 value=rec["reward"], actor="generator")  # fmt: skip


def _add_step(builder: TraceBuilder, rec: dict[str, Any], warnings: list[str]) -> None:
    step, t = rec["step"], rec["begin"]
    builder.span(K.TRAINER_STEP, rec["begin"], rec["end"], step=step, actor="trainer")
    for native, seconds in rec["timers"].items():  # the timers run one after another, in the logged order
        key = TIMERS.get(native)
        if key is None:
            warnings.append(f"step {step}: timer {native!r} is not in keymap.toml; left out")
            continue
        builder.span(key, t, t + seconds, step=step, actor="trainer")
        t += seconds


@dataclass
class Group:
    """A GRPO group's samples as they are read: rewards, when its last sample ended, the step that trained it."""

    rewards: list[float] = field(default_factory=list)
    end: float = 0.0
    step: int = -1

    def add(self, rec: dict[str, Any]) -> None:
        self.rewards.append(float(rec["reward"]))
        self.end = max(self.end, rec["end"])
        self.step = rec["trained_by_version"] + 1

    def reward_std(self) -> float:
        mean = sum(self.rewards) / len(self.rewards)
        return (sum((r - mean) ** 2 for r in self.rewards) / len(self.rewards)) ** 0.5
