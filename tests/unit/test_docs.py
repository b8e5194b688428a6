"""The README stays true: every metric is documented, and the Quickstart has exactly the two commands."""

from __future__ import annotations

import re
from pathlib import Path

from benchbed.metrics import METRICS

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_every_registered_metric_is_defined_in_the_readme():
    table = README.split("## Metric definitions", 1)[1].split("\n## ", 1)[0]
    suffixes = "_ratio|_sps|_s|_mean|_p50|_p99|_max|_fraction|_rate|_gap|_utilization|_step|_mtok"
    documented = set(re.findall(rf"\b[a-z_0-9]+(?:{suffixes})\b", table))
    assert set(METRICS) <= documented, sorted(set(METRICS) - documented)


def test_quickstart_has_exactly_two_commands_that_exist_in_the_makefile():
    quickstart = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = quickstart.split("```bash", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["make demo", "make test"]
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
