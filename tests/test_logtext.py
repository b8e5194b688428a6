"""Console-log cleaning shared by the parsers."""

from __future__ import annotations

from benchbed.logtext import split_ray_line, strip_ansi


def test_strip_ansi_removes_colours_and_cursor_moves():
    assert strip_ansi("\x1b[32m2026-01-01\x1b[0m | \x1b[1mINFO\x1b[0m\x1b[2K done") == "2026-01-01 | INFO done"
    assert strip_ansi("plain") == "plain"


def test_strip_ansi_removes_hyperlinks_and_window_titles_whole():
    link = "\x1b]8;;https://wandb.ai/run/1\x1b\\view run\x1b]8;;\x1b\\"
    assert strip_ansi(f"step 3 {link} done") == "step 3 view run done"
    assert strip_ansi("\x1b]0;trainer: step 3\x07(TaskRunner pid=7) ok") == "(TaskRunner pid=7) ok"
    assert split_ray_line("\x1b]2;title\x07(TaskRunner pid=7) hi") == ("TaskRunner", "7", "hi")


def test_split_ray_line_returns_actor_pid_and_message():
    line = "\x1b[36m(FullyAsyncTrainer pid=4242, ip=10.0.0.7)\x1b[0m step:3 - x:1 [repeated 2x across cluster]\n"
    assert split_ray_line(line) == ("FullyAsyncTrainer", "4242", "step:3 - x:1")
    assert split_ray_line("(TaskRunner pid=7) hello") == ("TaskRunner", "7", "hello")
    assert split_ray_line("no prefix here") == ("", "", "no prefix here")
