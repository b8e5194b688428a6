"""Each suite entry's diagnosis tonight and on its previous night, from the metric values the catalog holds, so a
nightly summary opens with the regimes and says when one changed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from benchbed.diagnosis.rules import diagnose_metrics


@dataclass(frozen=True)
class EntryRegime:
    """An entry's regime and flags tonight (the most common over its repeats) and on the night before."""

    entry: str
    regime: str
    flags: tuple[str, ...]
    previous: str | None

    @property
    def changed(self) -> bool:
        return self.previous is not None and self.previous != self.regime

    def to_json(self) -> dict[str, object]:
        return {"entry": self.entry, "regime": self.regime, "flags": list(self.flags), "previous": self.previous,
                "changed": self.changed}  # fmt: skip

    def sentence(self) -> str:
        text = f"{self.entry}: {self.regime.replace('_', '-')}"
        if self.flags:
            text += " (" + ", ".join(flag.replace("_", " ") for flag in self.flags) + ")"
        if self.changed and self.previous is not None:
            text += f"; the diagnosis changed from {self.previous.replace('_', '-')} to {self.regime.replace('_', '-')}"
        return text


def _night_diagnoses(rows: pd.DataFrame) -> list[tuple[str, str, tuple[str, ...]]]:
    """(night, regime, flags) per night of one entry, in the order the nights ran; the majority over repeats."""
    out = []
    for night, runs in rows.groupby("night", sort=False):
        diagnoses = [
            diagnose_metrics(dict(zip(run["metric"], run["value"], strict=True)))
            for _, run in runs.groupby("run_id", sort=False)
        ]
        regime = Counter(d.regime for d in diagnoses).most_common(1)[0][0]
        flags = Counter(flag for d in diagnoses for flag in d.flags)
        majority = tuple(flag for flag, n in flags.items() if 2 * n > len(diagnoses))
        out.append((str(night), regime, majority))
    return out


def entry_regimes(points: pd.DataFrame, entries: Sequence[str], night: str) -> list[EntryRegime]:
    """The regime of each entry that ran `night`, with the regime of its last night before it. Only those two
    nights are diagnosed, however long the entry's history is."""
    out = []
    for entry in entries:
        rows = points[points["entry"] == entry]
        ran = [str(n) for n in rows["night"].unique()]  # the entry's nights in the order they ran
        if night not in ran:
            continue
        i = ran.index(night)
        nights = _night_diagnoses(rows[rows["night"].isin(ran[max(0, i - 1) : i + 1])])
        _, regime, flags = nights[-1]
        out.append(EntryRegime(entry, regime, flags, nights[0][1] if i > 0 else None))
    return out
