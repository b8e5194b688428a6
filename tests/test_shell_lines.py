"""`--dry-run` prints a script that is safe to paste: values quoted with shlex, files in quoted here-documents,
notes as comments, so a spec value such as `$(touch pwned)` is data, never a command."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from benchbed.adapterkit.handoff import HANDOFF_FILE
from benchbed.adapterkit.hydra import hydra_value
from benchbed.shell import comment, exports, heredoc

HOSTILE = "$(touch pwned1) `touch pwned2` '\"; touch pwned3\nnext line $HOME"


def test_exports_comments_and_heredocs_survive_a_shell_verbatim(tmp_path: Path) -> None:
    target = tmp_path / "dir with space" / "conf.toml"
    text = f'value = "{HOSTILE}"\nBENCHBED_EOF\n'
    script = "\n".join([
        comment(f"note {HOSTILE}"), *exports({"FOO": HOSTILE, "bad;name": HOSTILE}), heredoc(target, text),
        'printf %s "$FOO"',
    ])  # fmt: skip
    out = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == HOSTILE and target.read_text() == text
    assert not list(tmp_path.glob("pwned*"))


def test_a_verl_dry_run_pasted_into_a_shell_runs_only_the_command_shown(benchbed, tmp_path: Path) -> None:
    spec = tmp_path / "v.toml"
    hostile = HOSTILE.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    spec.write_text(
        f'name = "v"\nadapter = "verl"\n[verl]\npython = "echo"\ntrain_files = "{hostile}"\n'
        f'[verl.env]\nFOO = "{hostile}"\n'
    )
    dry = benchbed("run", spec, "--dry-run", "--store", tmp_path / "store")
    assert dry.returncode == 0, dry.stderr
    assert "export FOO='$(touch pwned1)" in dry.stdout
    out = subprocess.run(["bash", "-c", dry.stdout + '\nprintf "\\n%s" "$FOO"'], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.endswith("\n" + HOSTILE)  # the variable holds the value, unexpanded
    assert f"data.train_files={hydra_value(HOSTILE)} " in out.stdout  # echo got the argument verl would
    assert not list(tmp_path.rglob("pwned*"))
    handoff = next((tmp_path / "store").rglob(HANDOFF_FILE))  # the here-document wrote the plan's file verbatim
    assert f"data.train_files={hydra_value(HOSTILE)}" in json.loads(handoff.read_text())["argv"]
