"""Pieces of the rendered TRL scripts shared by the synchronous and asynchronous trainers: local paths checked and
made absolute (never a hub download), the data and reward lines, and the installed-TRL check."""

from __future__ import annotations

import importlib.util
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from benchbed.adapters.trl.launch import version_problem
from benchbed.adapters.trl.options import TESTED_RANGE, TrlOptions, hub_id_hint, looks_like_hub_id

from benchbed.api import AdapterError, SpecError

NEEDS = ("torch", "transformers", "datasets", "trl")


def local_path(path: str, field: str, source: str) -> str:
    """An existing local path, made absolute against the spec's folder (the script runs in the run directory)."""
    p = Path(path).expanduser()
    if not p.is_absolute() and source and Path(source).parent.exists():
        p = Path(source).parent / p
    if not p.exists():
        hint = f"; {hub_id_hint(field, path)}" if looks_like_hub_id(path) else ""
        raise SpecError(f"{source}: {field} {path!r} does not exist on this machine{hint}")
    return str(p.resolve())


def local_ref(ref: str, source: str) -> str:
    where, _, name = ref.rpartition(":")
    return f"{local_path(where, 'trl reference', source)}:{name}" if where.endswith(".py") else ref


def data_line(opts: TrlOptions, source: str, conversational: bool = False) -> str:
    """The expression that makes the training data (arith's prompts as conversations where the trainer takes only
    those)."""
    if opts.data == "arith":
        tail = ", conversational=True" if conversational else ""
        return f"launch.arith_dataset(prompts={opts.prompts}, seed={opts.seed}{tail})"
    return f"launch.local_dataset({local_path(opts.data, 'trl.data', source)!r})"


def rewards_line(opts: TrlOptions, source: str, recorded: bool = True) -> str:
    """The statement that makes the reward functions, recorded per batch (not for the asynchronous trainer: it
    pickles them into its rollout worker's process, and its parser reads TRL's own per-step figures)."""
    rewards = [local_ref(r, source) for r in opts.rewards]
    recorder = "launch.Recorder(tokenizer)" if recorded else "None"
    return (f"recorder = {recorder}\nreward_funcs = launch.reward_functions({rewards!r}, recorder, "
            f"max_starting={opts.sandbox_max_starting}, seed={opts.seed})")  # fmt: skip


def check_installed() -> None:
    """TRL and its stack are installed, in the tested range; otherwise one line saying what to install."""
    missing = [name for name in NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        raise AdapterError(f"the trl adapter needs {', '.join(missing)}: pip install 'benchbed[trl]' "
                           f"(TRL {TESTED_RANGE}, torch pinned to the CPU build)")  # fmt: skip
    try:
        problem = version_problem(version("trl"))
    except PackageNotFoundError:
        problem = f"TRL is not installed: pip install 'benchbed[trl]' ({TESTED_RANGE})"
    if problem:
        raise AdapterError(problem)
