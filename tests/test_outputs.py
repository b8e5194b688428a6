"""benchbed.outputs, the one file writer: atomic replace of regular files, devices and symlinks never replaced,
errors that name the user's path, no temp file left behind whatever fails (ENOSPC included), unique temp names."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import subprocess
import threading
from pathlib import Path

import pytest

from benchbed.errors import OutputError
from benchbed.outputs import check_output, open_output, write_output

FULL = os.makedev(1, 7)  # the kernel's /dev/full: every write fails with ENOSPC
NULL = os.makedev(1, 3)


def device(path: Path, dev: int) -> Path:
    """A character device node of our own (never the system's /dev/null), so a test cannot break the machine."""
    os.mknod(path, stat.S_IFCHR | 0o666, dev)
    return path


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def full_disk_under(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every os.write to a file under `folder` fails with ENOSPC, as on a full disk (the OS boundary)."""
    real_write = os.write

    def write(fd: int, data: bytes) -> int:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = ""
        if target.startswith(str(folder)):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)


def test_regular_file_is_replaced_whole_with_the_umask_mode(tmp_path: Path) -> None:
    target = tmp_path / "page.html"
    target.write_text("old")
    os.chmod(target, 0o640)
    write_output(target, "new ✓")
    assert target.read_text(encoding="utf-8") == "new ✓"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # an existing file keeps its mode
    fresh = write_output(tmp_path / "sub" / "fresh.json", b"{}")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~mask
    assert leftovers(tmp_path) == [] and leftovers(tmp_path / "sub") == []


def test_symlink_is_written_through_to_its_target(tmp_path: Path) -> None:
    real = tmp_path / "real" / "junit.xml"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "link.xml"
    link.symlink_to(real)
    write_output(link, "<testsuites/>")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "<testsuites/>"
    dangling = tmp_path / "dangling.xml"
    dangling.symlink_to(tmp_path / "real" / "new.xml")
    write_output(dangling, "x")
    assert dangling.is_symlink() and (tmp_path / "real" / "new.xml").read_text() == "x"


def test_a_device_is_written_in_place_never_replaced(tmp_path: Path) -> None:
    null = device(tmp_path / "null", NULL)
    write_output(null, "x" * 100_000)
    assert stat.S_ISCHR(null.stat().st_mode) and null.stat().st_rdev == NULL
    assert leftovers(tmp_path) == []


def test_a_full_device_reports_enospc_naming_the_path_and_stays_a_device(tmp_path: Path) -> None:
    full = device(tmp_path / "full", FULL)
    with pytest.raises(OutputError) as caught:
        write_output(full, "<testsuites/>")
    assert str(caught.value) == f"{full}: cannot write (No space left on device)"
    assert stat.S_ISCHR(full.stat().st_mode) and full.stat().st_rdev == FULL
    assert leftovers(tmp_path) == []


def test_full_disk_names_the_file_keeps_the_old_one_and_leaves_no_temp(tmp_path, monkeypatch) -> None:
    target = tmp_path / "out.json"
    target.write_text("previous")
    full_disk_under(tmp_path, monkeypatch)
    with pytest.raises(OutputError) as caught:
        write_output(target, "y" * (3 << 20))
    assert str(caught.value) == f"{target}: cannot write (No space left on device)"
    assert target.read_text() == "previous"
    assert leftovers(tmp_path) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root (the os.write test above covers the rest)")
def test_a_real_full_tmpfs(tmp_path: Path) -> None:
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(tiny)], capture_output=True).returncode:
        pytest.skip("this container may not mount a tmpfs")
    try:
        with pytest.raises(OutputError, match=rf"^{tiny}/trace.csv: cannot write \(No space left on device\)$"):
            write_output(tiny / "trace.csv", b"z" * (1 << 20))
        assert list(tiny.iterdir()) == []
    finally:
        subprocess.run(["umount", str(tiny)], check=True)


def test_an_error_inside_the_block_leaves_the_target_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "trace.parquet"
    target.write_text("kept")
    with pytest.raises(KeyboardInterrupt), open_output(target) as fh:
        fh.write(b"half")
        raise KeyboardInterrupt
    assert target.read_text() == "kept" and leftovers(tmp_path) == []


def test_two_writers_never_share_a_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "page.html"
    inside = threading.Barrier(2)
    temps: list[set[str]] = []

    def writer(text: bytes) -> None:
        with open_output(target) as fh:
            fh.write(text)
            fh.flush()
            inside.wait()  # both temp files exist now
            temps.append(set(leftovers(tmp_path)))
            inside.wait()

    threads = [threading.Thread(target=writer, args=(bytes([65 + i]) * 100_000,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(temps[0]) == 2 and temps[0] == temps[1]
    assert target.read_bytes() in (b"A" * 100_000, b"B" * 100_000)
    assert leftovers(tmp_path) == []


def test_a_directory_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match=rf"^{tmp_path}: is a directory; expected a file path$"):
        write_output(tmp_path, "x")
    with pytest.raises(OutputError, match=rf"^{tmp_path}: is a directory"):
        check_output(tmp_path)


def test_check_output_refuses_unwritable_places_naming_the_users_path(tmp_path: Path) -> None:
    check_output(tmp_path / "new" / "deeper" / "junit.xml")  # missing folders are created at write time
    assert not (tmp_path / "new").exists() and leftovers(tmp_path) == []
    with pytest.raises(OutputError, match=r"^/proc/junit.xml: cannot write \("):
        check_output(Path("/proc/junit.xml"))
    plain = tmp_path / "plain"
    plain.write_text("")
    with pytest.raises(OutputError, match=rf"^{plain}/x.xml: cannot write \(Not a directory\)$"):
        check_output(plain / "x.xml")


def test_an_unwritable_folder_error_names_the_users_path_not_a_temp(tmp_path: Path) -> None:
    with pytest.raises(OutputError) as caught:
        write_output(Path("/proc/junit.xml"), "x")
    assert str(caught.value).startswith("/proc/junit.xml: cannot write (") and ".tmp" not in str(caught.value)


def test_an_oserror_about_another_file_passes_through(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as caught, open_output(tmp_path / "out") as fh:
        fh.write((tmp_path / "missing-input").read_bytes())
    assert caught.value.filename == str(tmp_path / "missing-input")
    assert leftovers(tmp_path) == []


# --- every writer goes through it: on a full disk each names its file and leaves nothing behind ---------------


def test_the_store_and_trace_writers_on_a_full_disk(benchbed, tmp_path, monkeypatch) -> None:
    from benchbed.store import read_record, write_record
    from benchbed.trace import read_trace

    run_dir = stored_run_dir(benchbed, tmp_path / "store")
    record, trace = read_record(run_dir), read_trace(run_dir)
    before = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    full_disk_under(run_dir, monkeypatch)
    started = record.model_copy(update={"status": "started"})  # a final record falls back to an in-place rewrite
    with pytest.raises(OutputError, match=rf"^{run_dir}/record.json: cannot write \(No space left on device\)$"):
        write_record(run_dir, started)
    with pytest.raises(OutputError, match=rf"^{run_dir}/trace.parquet: cannot write \(No space left on device\)$"):
        trace.write(run_dir)
    assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()} == before


def stored_run_dir(benchbed, store: Path) -> Path:
    result = benchbed("simulate", QUICKSTART, "--set", "workload.steps=20", "--store", store)
    assert result.returncode == 0, result.stderr
    return next(store.glob("*/sim/*/*"))


REPO = Path(__file__).resolve().parents[1]
QUICKSTART = REPO / "experiments" / "quickstart.toml"


@pytest.fixture(scope="module")
def two_runs(benchbed, tmp_path_factory) -> tuple[Path, Path, Path]:
    store = tmp_path_factory.mktemp("store")
    first = stored_run_dir(benchbed, store)
    result = benchbed("simulate", QUICKSTART, "--set", "workload.steps=20", "--set", "sim.seed=7", "--store", store)
    assert result.returncode == 0, result.stderr
    second = next(p for p in store.glob("*/sim/*/*") if p != first)
    return store, first, second


def suite_file(folder: Path) -> Path:
    suite = folder / "suite.toml"
    suite.write_text(f'name = "s"\n[[entry]]\nname = "q"\nspec = "{QUICKSTART}"\nset = ["workload.steps=20"]\n')
    return suite


COMMANDS = {  # command line with OUT for the output path
    "export perfetto": lambda s, a, b: ["export", a, "-o", "OUT"],
    "export csv": lambda s, a, b: ["export", a, "--format", "csv", "-o", "OUT"],
    "export parquet": lambda s, a, b: ["export", a, "--format", "parquet", "-o", "OUT"],
    "report": lambda s, a, b: ["report", a, "-o", "OUT"],
    "calibrate": lambda s, a, b: ["calibrate", a, "-o", "OUT"],
    "plan": lambda s, a, b: [
        "plan",
        QUICKSTART,
        "--set",
        "workload.steps=10",
        "--target",
        "trainer_idle_ratio<=0.9",
        "--vary",
        "sim.concurrency",
        "--range",
        "32:40",
        "-o",
        "OUT",
    ],
    "compare junit": lambda s, a, b: ["compare", a, "--vs", b, "--junit", "OUT"],
    "history page": lambda s, a, b: ["history", "--store", s, "-o", "OUT"],
}


@pytest.mark.parametrize("name", ["compare junit", "export csv", "plan"])  # in place: one branch for all writers
def test_a_writer_on_a_full_device_names_it_and_leaves_it_a_device(benchbed, name, two_runs, tmp_path) -> None:
    store, first, second = two_runs
    full = device(tmp_path / "full", FULL)
    argv = [str(full) if a == "OUT" else a for a in COMMANDS[name](store, first, second)]
    result = benchbed(*argv)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == f"benchbed: error: {full}: cannot write (No space left on device)"
    assert stat.S_ISCHR(full.stat().st_mode) and leftovers(tmp_path) == []


@pytest.fixture
def full_tmpfs(tmp_path: Path):
    """A real filesystem with no space left (root only: it mounts a 64 KiB tmpfs and fills it)."""
    folder = tmp_path / "full-fs"
    folder.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
                                           capture_output=True).returncode:  # fmt: skip
        pytest.skip("needs root and a mountable tmpfs; the device and os.write tests cover the same paths")
    try:
        with contextlib.suppress(OSError), open(folder / "filler", "wb") as fh:
            while True:
                fh.write(b"\0" * 4096)
                fh.flush()
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_writer_on_a_full_disk_names_the_file_and_leaves_no_temp(benchbed, name, two_runs, full_tmpfs) -> None:
    store, first, second = two_runs
    out = full_tmpfs / "out.file"
    argv = [str(out) if a == "OUT" else a for a in COMMANDS[name](store, first, second)]
    result = benchbed(*argv)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == f"benchbed: error: {out}: cannot write (No space left on device)"
    assert sorted(p.name for p in full_tmpfs.iterdir()) == ["filler"]


def test_nightly_refuses_an_unwritable_junit_or_page_before_the_first_run(benchbed, tmp_path) -> None:
    store = tmp_path / "store"
    suite = suite_file(tmp_path)
    for option in ("--junit", "-o"):
        result = benchbed("nightly", suite, "--store", store, option, "/proc/nightly/junit.xml")
        assert result.returncode == 2
        assert result.stderr.startswith("benchbed: error: /proc/nightly/junit.xml: cannot write (")
        assert ".tmp" not in result.stderr and not store.exists()  # nothing ran
