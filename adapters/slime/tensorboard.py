"""slime's step axes in TensorBoard scalars (the event files are read by benchbed.adapterkit.histories.tensorboard)."""

from __future__ import annotations

from benchbed.adapterkit.histories.tensorboard import ScalarDict


def split_axes(entry: ScalarDict) -> tuple[dict[str, float], dict[str, float]]:
    """Split one step's scalars by slime's step axes: (train/* on train/step, everything else on rollout/step)."""
    train = {k: v for k, v in entry.values.items() if k.startswith("train/")}
    other = {k: v for k, v in entry.values.items() if not k.startswith("train/")}
    return train, other
