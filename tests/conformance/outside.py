"""A third-party adapter package built in a temporary directory, outside benchbed's tree, and registered the way an
installer registers one: the package plus a `.dist-info` whose entry_points.txt names it in `benchbed.adapters`."""

from __future__ import annotations

import textwrap
from pathlib import Path

NAME = "outsider"
PACKAGE = "outsider_bench"

SOURCE = '''
"""An adapter that knows nothing of benchbed's internals beyond its public contract."""

import json
import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from benchbed.adapter import Adapter, LaunchPlan
from benchbed.errors import NotThisFrameworkError
from benchbed.trace import TraceBuilder, TraceMeta

LOG = "outsider.jsonl"
PROGRAM = (
    "import json, sys\\n"
    "steps, step_s = int(sys.argv[1]), float(sys.argv[2])\\n"
    "with open('outsider.jsonl', 'w') as f:\\n"
    "    for k in range(1, steps + 1):\\n"
    "        f.write(json.dumps({'step': k, 't0': (k - 1) * step_s, 't1': k * step_s}) + '\\\\n')\\n"
)


class OutsiderOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    step_s: float = Field(2.0, gt=0, description="seconds per logged step")
    label: str = "outside"


class OutsiderAdapter(Adapter):
    name = "outsider"
    options_model = OutsiderOptions

    def render(self, spec, run_dir):
        opts = spec.adapter_options()
        argv = [sys.executable, "-c", PROGRAM, str(spec.workload.steps), str(opts.step_s)]
        return LaunchPlan(argv=argv, timeout_s=spec.timeout_s, description=f"outsider {opts.label}")

    def parse(self, path):
        path = Path(path)
        log = path / LOG if path.is_dir() else path
        if log.name != LOG or not log.is_file():
            raise NotThisFrameworkError(f"not an outsider run: {path} has no {LOG}")
        builder = TraceBuilder()
        for line in log.read_text().splitlines():
            row = json.loads(line)
            builder.span("trainer.step", row["t0"], row["t1"], step=row["step"], actor="trainer")
            builder.span("trainer.compute", row["t0"], row["t1"], step=row["step"], actor="trainer")
        return builder.build(TraceMeta(adapter="outsider", framework="outsider", sources=[str(log)]))
'''


def build(site: Path) -> Path:
    """Write the package and its .dist-info into `site` (a directory to put on sys.path); returns `site`."""
    package = site / PACKAGE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(SOURCE))
    info = site / f"{PACKAGE}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[benchbed.adapters]\n{NAME} = {PACKAGE}:OutsiderAdapter\n")
    (info / "RECORD").write_text("")
    return site
