"""The slime arguments the parser needs (batch shape, loop, placement), from a launch argv or Megatron's printout."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class RunArgs:
    """Known slime arguments of a run; None where unknown. `source` says where they came from."""

    num_rollout: int | None = None
    rollout_batch_size: int | None = None
    n_samples_per_prompt: int | None = None
    global_batch_size: int | None = None
    update_weights_interval: int | None = None
    colocate: bool | None = None
    partial_rollout: bool | None = None
    train_script: str | None = None
    rollout_function_path: str | None = None
    over_sampling_batch_size: int | None = None
    rollout_num_gpus: int | None = None
    debug_rollout_only: bool | None = None
    wandb_always_use_train_step: bool | None = None
    load_debug_rollout_data: str | None = None
    sglang_server_concurrency: int | None = None
    rollout_num_gpus_per_engine: int | None = None
    loss_type: str | None = None  # `sft_loss` marks an SFT run (scripts/run-*-sft.sh at 624b824)
    sources: list[str] = field(default_factory=list)

    def merge(self, other: RunArgs) -> RunArgs:
        """Fields of self, filled from other where self does not know them."""
        out = RunArgs(sources=self.sources + [s for s in other.sources if s not in self.sources])
        for name in _FIELDS:
            mine = getattr(self, name)
            setattr(out, name, mine if mine is not None else getattr(other, name))
        return out


_INT = (
    "num_rollout",
    "rollout_batch_size",
    "n_samples_per_prompt",
    "global_batch_size",
    "update_weights_interval",
    "over_sampling_batch_size",
    "rollout_num_gpus",
    "sglang_server_concurrency",
    "rollout_num_gpus_per_engine",
)
_BOOL = ("colocate", "partial_rollout", "debug_rollout_only", "wandb_always_use_train_step")
_STR = ("rollout_function_path", "load_debug_rollout_data", "loss_type")
_FIELDS = _INT + _BOOL + _STR + ("train_script",)


def from_argv(argv: list[str], source: str) -> RunArgs:
    """Read a `python3 train.py --flag value ...` command line (as rendered by benchbed or typed by a user)."""
    args = RunArgs(sources=[source])
    for token in argv:
        name = Path(token).name
        if name in ("train.py", "train_async.py"):
            args.train_script = name
    options = split_options(argv)
    if args.train_script is not None:  # a whole command line: an absent flag is off
        for key in _BOOL:
            setattr(args, key, any(name == f"--{key.replace('_', '-')}" for name, _ in options))
    for name, nxt in options:
        key = name[2:].replace("-", "_")
        if key in _BOOL:
            setattr(args, key, True)
        elif key in _INT and nxt is not None:
            try:
                setattr(args, key, int(nxt))
            except ValueError:
                continue
        elif key in _STR and nxt is not None:
            setattr(args, key, nxt)
    return args


def split_options(argv: list[str]) -> list[tuple[str, str | None]]:
    """(option, value) for each `--option` of argv, as argparse reads them: `--flag=value` carries its value,
    `--flag value` takes the next token (None at the end; a flag's next token may be another option)."""
    out: list[tuple[str, str | None]] = []
    for i, token in enumerate(argv):
        if not token.startswith("--"):
            continue
        name, eq, value = token.partition("=")
        out.append((name, value) if eq else (name, argv[i + 1] if i + 1 < len(argv) else None))
    return out


def from_megatron_block(values: dict[str, str], source: str) -> RunArgs:
    """Read Megatron's `---- arguments ----` printout (name ...... value), which includes slime's own arguments."""
    args = RunArgs(sources=[source])
    for key in _INT:
        raw = values.get(key)
        if raw is not None and raw.lstrip("-").isdigit():
            setattr(args, key, int(raw))
    for key in _BOOL:
        raw = values.get(key)
        if raw in ("True", "False"):
            setattr(args, key, raw == "True")
    for key in _STR:
        raw = values.get(key)
        if raw is not None and raw != "None":
            setattr(args, key, raw)
    return args


def from_config(values: dict[str, Any], source: str) -> RunArgs:
    """Read slime's arguments as its W&B run's config holds them (slime logs `args.__dict__`: typed values)."""
    args = RunArgs(sources=[source])
    for key in _INT:
        value = values.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            setattr(args, key, value)
    for key in _BOOL:
        if isinstance(values.get(key), bool):
            setattr(args, key, values[key])
    for key in _STR:
        if isinstance(values.get(key), str):
            setattr(args, key, values[key])
    return args
