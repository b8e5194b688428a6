"""Parse the toy loop's JSON-lines log into the canonical trace, with the adapter kit doing the shared chores:
tolerant line reading, the key map and its release, group statistics."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbed.adapters.example.logformat import FORMAT, LOG

from benchbed.adapterkit.groups import reward_std
from benchbed.adapterkit.keymaps import load_keymap
from benchbed.adapterkit.lines import JsonLines, first_json_object
from benchbed.api import AdapterError, NotThisFrameworkError, Trace, TraceBuilder, TraceMeta
from benchbed.api import keys as K

KEYMAP = load_keymap(Path(__file__).with_name("keymap.toml"))


def parse_path(path: Path) -> Trace:
    """A run directory (or the log itself) as a trace; NotThisFrameworkError unless line 1 is the toy loop's header."""
    log = path / LOG if path.is_dir() else path
    if not log.is_file():
        raise NotThisFrameworkError(f"not an example run: {path} has no {LOG}")
    header = _header(log)
    release, _ = KEYMAP.nearest(str(header.get("version", "")))
    timers = KEYMAP.mapping(release, "component")
    builder = TraceBuilder()
    groups: dict[str, ParsedGroup] = {}
    warnings: list[str] = []
    for n, rec in JsonLines(log, warnings):
        if n == 1:
            continue  # the header
        try:
            if rec["kind"] == "sample":
                _add_sample(builder, rec)
                groups.setdefault(rec["group"], ParsedGroup()).add(rec)
            elif rec["kind"] == "step":
                _add_step(builder, rec, timers, warnings)
            else:
                warnings.append(f"{log}:{n}: skipped record of unknown kind {rec['kind']!r}")
        except (KeyError, TypeError) as exc:
            raise AdapterError(f"{log}:{n}: {rec.get('kind', '?')} record without field {exc}") from None
    for name, group in groups.items():
        builder.point(K.ROLLOUT_GROUP, group.end, step=group.step, group=name, value=reward_std(group.rewards),
                      status="ok", actor="generator")  # fmt: skip
    meta = TraceMeta(adapter="example", framework="toyloop", framework_version=str(header.get("version", "")),
                     mode="sync", group_size=header.get("group_size"), sources=[str(log)],
                     warnings=warnings)  # fmt: skip
    return builder.build(meta)


def _header(log: Path) -> dict[str, Any]:
    header = first_json_object(log)
    if header is None or header.get("format") != FORMAT:
        raise NotThisFrameworkError(f"not an example run: {log} line 1 is not a {FORMAT} header")
    return header


def _add_sample(builder: TraceBuilder, rec: dict[str, Any]) -> None:
    v_train = rec["trained_by_version"]
    builder.span(K.ROLLOUT, rec["begin"], rec["end"], step=v_train + 1, sample=rec["id"], group=rec["group"],
                 v_start=rec["policy_version"], v_end=rec["policy_version"], v_train=v_train, status="ok",
                 value=rec["reward"], actor="generator")  # fmt: skip


def _add_step(builder: TraceBuilder, rec: dict[str, Any], timers: dict[str, str], warnings: list[str]) -> None:
    step, t = rec["step"], rec["begin"]
    builder.span(K.TRAINER_STEP, rec["begin"], rec["end"], step=step, actor="trainer")
    for native, seconds in rec["timers"].items():  # the timers run one after another, in the logged order
        key = timers.get(native)
        if key is None:
            warnings.append(f"step {step}: timer {native!r} is not in keymap.toml; left out")
            continue
        builder.span(key, t, t + seconds, step=step, actor="trainer")
        t += seconds


@dataclass
class ParsedGroup:
    """A GRPO group's samples as they are read: rewards, when its last sample ended, the step that trained it."""

    rewards: list[float] = field(default_factory=list)
    end: float = 0.0
    step: int = -1

    def add(self, rec: dict[str, Any]) -> None:
        self.rewards.append(float(rec["reward"]))
        self.end = max(self.end, rec["end"])
        self.step = rec["trained_by_version"] + 1
