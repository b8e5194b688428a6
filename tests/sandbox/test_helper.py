"""The compiled spawn helper: built into a cache, refuses bad arguments, and is optional."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from benchbed.sandbox import helper


def test_builds_and_rejects_bad_arguments(tmp_path):
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler here")
    binary, why = helper.build(tmp_path)
    assert binary is not None and why == ""
    out = subprocess.run([str(binary), "holder", "-", "-"], capture_output=True, text=True)
    assert out.returncode == 2 and "usage" in out.stderr
    out = subprocess.run([str(binary), "enter", "-", "-", "1", "--", "true"], capture_output=True, text=True)
    assert out.returncode == 2 and "bad arguments" in out.stderr  # the uid is missing
    out = subprocess.run([str(binary), "holder", "-", "7:notanumber", "/x", "s", "o", "0", "--", "true"],
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 122 and "7:notanumber" in out.stderr
    out = subprocess.run([str(binary), "holder", "/nonexistent/cg", "-", "/x", "s", "o", "0", "--", "true"],
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 121 and "/nonexistent/cg" in out.stderr  # a cgroup that cannot be joined
    assert helper.build(tmp_path) == (binary, "")  # cached


def test_wait_mode_says_ready_holds_no_fd_and_ends_with_its_stdin(tmp_path):
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler here")
    binary, _ = helper.build(tmp_path)
    extra = os.open(binary, os.O_RDONLY)  # what the sandbox's payload is run from
    proc = subprocess.Popen([str(binary), "wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, pass_fds=(extra,))
    os.close(extra)
    assert proc.stdout.readline() == b"R\n"
    assert sorted(os.listdir(f"/proc/{proc.pid}/fd")) == ["0", "1", "2"]
    assert proc.poll() is None  # blocks while its stdin is open
    proc.stdin.close()
    assert proc.wait(timeout=10) == 0
    proc.stdout.close()


def test_without_a_compiler_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(helper.shutil, "which", lambda name: None)
    binary, why = helper.build(tmp_path)
    assert binary is None and "no C compiler" in why
