"""Pure helpers for the Ray launcher: unwrap a rendered `ray job submit … -- CMD` and build the job's entrypoint."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbed.errors import LaunchError

# `ray job submit` options that take a value, and the ones that do not (Ray's job CLI).
_VALUE_OPTIONS = {
    "--address", "--runtime-env-json", "--runtime-env", "--working-dir", "--entrypoint-num-cpus",
    "--entrypoint-num-gpus", "--entrypoint-memory", "--entrypoint-resources", "--submission-id", "--job-id",
    "--metadata-json", "--headers", "--log-style", "--log-color", "--verify",
}  # fmt: skip
_FLAG_OPTIONS = {"--no-wait", "-v", "--verbose"}
UNREACHABLE_EXIT = 97  # the job's node cannot see the run directory


@dataclass
class RaySubmission:
    """One Ray job: the command it runs and its submission options."""

    argv: list[str]
    address: str | None = None
    runtime_env: dict[str, Any] = field(default_factory=dict)
    entrypoint_num_cpus: float | None = None
    entrypoint_num_gpus: float | None = None
    entrypoint_memory: int | None = None
    entrypoint_resources: dict[str, float] = field(default_factory=dict)
    submission_id: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)


def is_ray_submit(argv: list[str]) -> bool:
    return len(argv) >= 3 and Path(argv[0]).name == "ray" and argv[1:3] == ["job", "submit"]


def unwrap(argv: list[str], cwd: Path) -> RaySubmission:
    """`ray job submit [OPTIONS] -- CMD` -> CMD with the options; any other argv is the command itself."""
    if not is_ray_submit(argv):
        return RaySubmission(argv=list(argv))
    sub = RaySubmission(argv=[])
    rest = argv[3:]
    i = 0
    while i < len(rest):
        token = rest[i]
        if token == "--":
            sub.argv = rest[i + 1 :]
            break
        if not token.startswith("-"):
            sub.argv = rest[i:]
            break
        name, eq, inline = token.partition("=")
        if name in _FLAG_OPTIONS and not eq:
            i += 1
            continue
        if name not in _VALUE_OPTIONS:
            raise LaunchError(f"ray job submit option {name!r} is not understood by benchbed's Ray launcher")
        if eq:
            value = inline
            i += 1
        elif i + 1 < len(rest):
            value = rest[i + 1]
            i += 2
        else:
            raise LaunchError(f"ray job submit option {name!r} needs a value")
        _apply(sub, name, value, cwd)
    if not sub.argv:
        raise LaunchError("ray job submit without a command after '--'")
    return sub


def _apply(sub: RaySubmission, name: str, value: str, cwd: Path) -> None:
    if name == "--address":
        sub.address = value
    elif name == "--runtime-env-json":
        sub.runtime_env = _merge_runtime_env(sub.runtime_env, _json(name, value))
    elif name == "--runtime-env":
        sub.runtime_env = _merge_runtime_env(_yaml_file(cwd / value), sub.runtime_env)
    elif name == "--working-dir":
        sub.runtime_env["working_dir"] = value
    elif name == "--entrypoint-num-cpus":
        sub.entrypoint_num_cpus = float(value)
    elif name == "--entrypoint-num-gpus":
        sub.entrypoint_num_gpus = float(value)
    elif name == "--entrypoint-memory":
        sub.entrypoint_memory = int(value)
    elif name == "--entrypoint-resources":
        sub.entrypoint_resources = {k: float(v) for k, v in _json(name, value).items()}
    elif name in ("--submission-id", "--job-id"):
        sub.submission_id = value
    elif name == "--metadata-json":
        sub.metadata = {k: str(v) for k, v in _json(name, value).items()}
    # --headers, --log-style, --log-color, --verify change how the CLI talks or prints, not the job


def _json(name: str, value: str) -> dict[str, Any]:
    try:
        data = json.loads(value)
    except json.JSONDecodeError as exc:
        raise LaunchError(f"ray job submit {name}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise LaunchError(f"ray job submit {name}: expected a JSON object")
    return data


def _yaml_file(path: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise LaunchError(f"ray job submit --runtime-env {path}: cannot read it ({exc})") from None
    return data or {}


def _merge_runtime_env(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = {**base, **over}
    if "env_vars" in base or "env_vars" in over:
        out["env_vars"] = {**base.get("env_vars", {}), **over.get("env_vars", {})}
    return out


def with_env(runtime_env: dict[str, Any], *envs: dict[str, str]) -> dict[str, Any]:
    """The runtime env with more env_vars layered on (later wins)."""
    merged: dict[str, str] = dict(runtime_env.get("env_vars", {}))
    for env in envs:
        merged.update(env)
    return {**runtime_env, "env_vars": merged} if merged else dict(runtime_env)


def run_dir_check(run_dir: Path) -> str:
    """The shell line a job starts with (Ray entrypoint, sbatch script): exit UNREACHABLE_EXIT, saying why, when the
    node it runs on cannot see the run directory."""
    missing = shlex.quote(
        f"benchbed: run directory {run_dir} is not visible where the job runs; "
        "put --store on a filesystem both sides see"
    )
    return f"test -d {shlex.quote(str(run_dir))} || {{ echo {missing} >&2; exit {UNREACHABLE_EXIT}; }}"


def entrypoint(argv: list[str], run_dir: Path, cwd: str | None, captures: dict[str, list[str]]) -> str:
    """A shell line for the job: check the run directory is visible, cd, record captures, exec the command.

    `cwd` None keeps the job's own working directory (Ray's copy of an uploaded working_dir)."""
    parts = [run_dir_check(run_dir)]
    if cwd is not None:
        parts.append(f"cd {shlex.quote(cwd)} || exit 1")
    for rel, capture in captures.items():
        note = shlex.quote(f"benchbed: could not record {rel} with {capture[0]}")
        parts.append(f"{{ {shlex.join(capture)} > {shlex.quote(str(run_dir / rel))} || echo {note} >&2; }}")
    parts.append(f"exec {shlex.join(argv)}")
    return "; ".join(parts)
