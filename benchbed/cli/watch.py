"""`benchbed watch RUN_DIR` and the view of `benchbed run --watch`: follow a run's files while it runs and redraw
its live figures, regime and alarms after each step; when it ends, print the figures benchbed computes post hoc.

On a terminal the view is a rich Live table; elsewhere it is one `watch step=N ...` line per finished step, so a
pipe or a test reads every update."""

from __future__ import annotations

import json
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import click
from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from benchbed.catalog import RECORD_FILENAME, read_record
from benchbed.cli.console import err_console, stdout_console
from benchbed.errors import BenchbedError
from benchbed.watch.alarms import Alarm, run_on_alarm
from benchbed.watch.live import gauge, sparkline, spread
from benchbed.watch.prometheus import MetricsServer, watch_exposition
from benchbed.watch.session import StepRow, Watch, final_metrics

# (column, figure, as idle: shown as 1 - the figure) of a step line and of the terminal table
COLUMNS = (("trainer_idle", "trainer_idle_ratio", False), ("generator_idle", "generator_utilization", True),
           ("staleness_mean", "staleness_mean", False), ("staleness_max", "staleness_max", False),
           ("throughput_sps", "trainer_throughput_sps", False),
           ("zero_adv", "zero_adv_group_fraction", False), ("gpu_busy", "gpu_busy_ratio", False))  # fmt: skip
SHOWN_ROWS = 12
SPARK_WIDTH = 40


def _value(figures: dict[str, float], name: str, idle: bool) -> float:
    value = figures.get(name, math.nan)
    return 1.0 - value if idle else value


def _cell(value: float) -> str:
    return f"{value:.3g}" if math.isfinite(value) else "-"  # NaN: not yet known (the warm-up, no sample yet)


def step_line(row: StepRow) -> str:
    """One finished step as `key=value` fields (the metric window's figures so far), for a non-terminal."""
    fields = [f"step={row.step}", f"step_s={row.step_s:.6g}"]
    fields += [f"{column}={_value(row.run, name, idle):.6g}" for column, name, idle in COLUMNS]
    return "watch " + " ".join(fields) + f" regime={row.regime}"


def spark_table(history: dict[str, list[float]], window_steps: int, width: int = SPARK_WIDTH) -> Table:
    """A sparkline per shown figure: its sliding window's value after each of the last `width` steps, and the whole
    run's figure so far over every step (`width` points picked evenly), so a drift shows beside a recent change."""
    table = Table(box=None, pad_edge=False)
    table.add_column("figure")
    table.add_column(f"last {window_steps} steps, after each of the last {width}")
    table.add_column("whole run, over every step")
    for column, name, idle in COLUMNS:
        window = [1.0 - v if idle else v for v in history.get(f"window.{name}", [])]
        run = [1.0 - v if idle else v for v in history.get(f"run.{name}", [])]
        if any(math.isfinite(v) for v in window + run):
            table.add_row(column.replace("_", " "), sparkline(window, width), sparkline(spread(run, width), width))
    return table


@dataclass
class View:
    """What the watcher shows on `console`: a redrawn table on a terminal, a line per step otherwise."""

    console: Console
    title: str
    rows: deque[StepRow] = field(default_factory=lambda: deque(maxlen=SHOWN_ROWS))
    alarms: list[Alarm] = field(default_factory=list)
    live: Live | None = None

    def __enter__(self) -> View:
        if self.console.is_terminal:
            self.live = Live(console=self.console, auto_refresh=False, transient=False)
            self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.stop()

    def show(self, watch: Watch, rows: list[StepRow], alarms: list[Alarm]) -> None:
        """The steps and alarms of one update."""
        self.rows.extend(rows)
        self.alarms.extend(alarms)
        if self.live is not None:
            self.live.update(self._render(watch), refresh=True)
            return
        for row in rows:
            self.console.print(step_line(row), highlight=False, markup=False, soft_wrap=True)
        for alarm in alarms:
            self.console.print(alarm.line(), highlight=False, markup=False, soft_wrap=True)

    def _render(self, watch: Watch) -> Group:
        table = Table(title=escape(self.title), title_justify="left")
        for column in ("step", "step s", *(c.replace("_", " ") for c, _, _ in COLUMNS), "regime"):
            table.add_column(column, justify="left" if column == "regime" else "right")
        for row in self.rows:
            cells = [_cell(_value(row.run, name, idle)) for _, name, idle in COLUMNS]
            table.add_row(str(row.step), _cell(row.step_s), *cells, row.regime)
        parts: list[object] = [table, spark_table(watch.figures.history, watch.window_steps)]
        busy = watch.figures.figures()["window"]["gpu_busy_ratio"]
        if math.isfinite(busy):  # only a run with GPU samples (NVML during a launch, W&B or MLflow system metrics)
            parts.append(f"GPU busy, last {watch.window_steps} steps: {gauge(busy)} {busy:.0%}")
        parts += [f"[bold red]{escape(a.line())}[/]" for a in self.alarms]
        return Group(*parts)


@dataclass
class Follower:
    """Polls one Watch every `interval` seconds, feeding the view and the /metrics server."""

    watch: Watch
    view: View
    interval: float
    server: MetricsServer | None = None
    labels: dict[str, str] = field(default_factory=dict)
    on_alarm: str | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def poll(self) -> None:
        """One update: read the new bytes, show the new steps and alarms, publish the gauges."""
        rows, alarms = self.watch.update()
        self.view.show(self.watch, rows, alarms)
        for alarm in alarms if self.on_alarm else []:
            failed = run_on_alarm(self.on_alarm, alarm)
            if failed:
                err_console.print(f"[yellow]warning:[/] {escape(failed)}", highlight=False, soft_wrap=True)
        if self.server is not None:
            self.server.publish(watch_exposition(self.watch.figures, self.watch.alarms, self.labels))

    def until_end(self, timeout_s: float | None) -> None:
        """Poll until the run's end is read; a run that has not ended after `timeout_s` is an error."""
        deadline = math.inf if timeout_s is None else time.monotonic() + timeout_s
        while True:
            self.poll()
            if self.watch.ended:
                return
            if time.monotonic() >= deadline:
                raise BenchbedError(f"{self.watch.run_dir}: the run did not end within {timeout_s:g} s (--timeout)")
            time.sleep(self.interval)

    def start(self) -> None:
        """Poll on a daemon thread until `stop`."""
        self._thread = threading.Thread(target=self._loop, name="benchbed-watch", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def stop(self) -> None:
        """Stop the thread, then read what the run wrote last."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.poll()


def _server(port: int | None) -> MetricsServer | None:
    if port is None:
        return None
    try:
        server = MetricsServer("127.0.0.1", port)
    except OSError as exc:
        raise BenchbedError(f"127.0.0.1:{port}: cannot serve /metrics there ({exc.strerror or exc})") from None
    err_console.print(f"prometheus: http://127.0.0.1:{server.port}/metrics", highlight=False, soft_wrap=True)
    return server


@dataclass
class RunWatcher:
    """For `benchbed run --watch`: `start` follows the run directory once the run claims it."""

    adapter: str
    spec_id: str
    interval: float
    console: Console
    warmup_steps: int
    server: MetricsServer | None = None
    on_alarm: str | None = None
    followers: list[Follower] = field(default_factory=list)

    def start(self, run_dir: Path) -> None:
        """Follow `run_dir` on a thread from now on."""
        watch = Watch(run_dir, self.adapter, warmup_steps=self.warmup_steps)
        view = View(self.console, f"watching {self.spec_id}").__enter__()
        labels = {"run": self.spec_id, "framework": watch.framework, "adapter": self.adapter}
        follower = Follower(watch, view, self.interval, self.server, labels, self.on_alarm)
        self.followers.append(follower)
        follower.start()

    def warnings(self) -> list[str]:
        """The alarms that fired (and the reader's warnings), for the record."""
        return [line for follower in self.followers for line in follower.watch.warnings]


@contextmanager
def following(adapter: str, spec_id: str, interval: float, port: int | None, on_alarm: str | None,
              to_stderr: bool, warmup_steps: int) -> Iterator[RunWatcher]:  # fmt: skip
    """A RunWatcher for one launch; on leaving, the last bytes are read and the view and /metrics closed."""
    console = err_console if to_stderr else stdout_console()
    watcher = RunWatcher(adapter, spec_id, interval, console, warmup_steps, _server(port), on_alarm)
    try:
        yield watcher
    finally:
        for follower in watcher.followers:
            follower.stop()
            follower.view.__exit__()
            follower.watch.close()
        if watcher.server is not None:
            watcher.server.close()


def watch_options(command: Callable) -> Callable:
    """--interval, --prometheus-port and --on-alarm, shared by `watch` and `run --watch`."""
    on_alarm = click.option("--on-alarm", metavar="CMD", default=None,
                            help="run the shell command CMD when an alarm fires, with BENCHBED_ALARM (its name), "
                                 "BENCHBED_ALARM_VALUE, _THRESHOLD, _REASON and _LINE in its environment")  # fmt: skip
    command = on_alarm(command)
    command = click.option("--prometheus-port", type=click.IntRange(0, 65535), default=None, metavar="PORT",
                           help="serve the live figures on http://127.0.0.1:PORT/metrics (Prometheus text format; "
                                "gauges benchbed_<figure> labelled run, framework, adapter, scope; 0: a free "
                                "port, printed on stderr)")(command)  # fmt: skip
    return click.option(
        "--interval",
        type=click.FloatRange(min=0.05),
        default=1.0,
        show_default=True,
        help="seconds between updates (each reads only the bytes written since the last)",
    )(command)


def _adapter_of(run_dir: Path, adapter: str | None) -> tuple[str, int, str]:
    """The adapter, warm-up steps and run label: given, else from the run's record.json (a run benchbed stores)."""
    record = read_record(run_dir / RECORD_FILENAME) if (run_dir / RECORD_FILENAME).is_file() else None
    if adapter is None and record is None:
        raise click.UsageError(f"{run_dir}: no {RECORD_FILENAME} here; name the framework that wrote it with --adapter")
    name = adapter or record.adapter.name  # type: ignore[union-attr]
    warmup = int(record.spec.get("warmup_steps", 1)) if record is not None else 1
    return name, warmup, record.spec_id if record is not None else run_dir.name


@click.command(name="watch")
@click.argument("run_dir", metavar="RUN_DIR", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--adapter", "adapter_name", default=None,
              help="framework that writes the run (default: the one its record.json names)")  # fmt: skip
@click.option("--warmup-steps", type=int, default=None,
              help="steps left out of the metric window (default: the record's spec, else 1)")  # fmt: skip
@click.option("--timeout", "timeout_s", type=float, default=None,
              help="give up (exit status 2) when the run has not ended after this many seconds")  # fmt: skip
@watch_options
@click.option("--json", "as_json", is_flag=True,
              help="print the final figures as JSON on stdout ({run_dir, adapter, metrics} with metrics in the "
                   "shape of ingest --json's record); the live view goes to stderr")  # fmt: skip
def watch(run_dir: Path, adapter_name: str | None, warmup_steps: int | None, timeout_s: float | None,
          interval: float, prometheus_port: int | None, on_alarm: str | None, as_json: bool) -> None:  # fmt: skip
    """Follow a running run's files and redraw its live figures after each step, until the run ends.

    Each update reads only what was appended since the last (a truncated or rotated file is read again from its
    start): step time, trainer idle, generator idle, staleness, throughput, zero-advantage groups, the regime of
    the metric window so far, and the alarms of benchbed/diagnosis/alarms.toml as they fire. On a terminal the
    view is a table; elsewhere one `watch step=N ...` line per step. When the run ends, the figures benchbed
    computes from the finished run (as `benchbed ingest` does) are printed. Files that cannot be followed further
    (a damaged W&B `.wandb` log) end the watch with one line naming the file and the byte, exit status 2: at once
    when nothing of them could be read, else when the run is over."""
    adapter, stored_warmup, label = _adapter_of(run_dir, adapter_name)
    warmup = stored_warmup if warmup_steps is None else warmup_steps
    watched = Watch(run_dir, adapter, warmup_steps=warmup)
    server = _server(prometheus_port)
    labels = {"run": label, "framework": watched.framework, "adapter": adapter}
    try:
        with View(err_console if as_json else stdout_console(), f"watching {label}") as view:
            Follower(watched, view, interval, server, labels, on_alarm).until_end(timeout_s)
        if watched.failure is not None:  # e.g. a damaged .wandb file: one line naming it, exit status 2
            raise BenchbedError(watched.failure)
    finally:
        watched.close()
        if server is not None:
            server.close()
    metrics = final_metrics(run_dir, adapter, warmup)
    if as_json:
        doc = {"run_dir": str(run_dir), "adapter": adapter,
               "metrics": {k: m.model_dump(mode="json") for k, m in metrics.items()}}  # fmt: skip
        click.echo(json.dumps(doc, indent=2))
        return
    console = stdout_console()
    table = Table(title=f"{escape(label)}  final figures", title_justify="left")
    for column in ("metric", "value", "unit", "source"):
        table.add_column(column, justify="right" if column == "value" else "left")
    for name, metric in metrics.items():
        table.add_row(name, f"{metric.value:.4g}", metric.unit, metric.source)
    console.print(table)
    for line in watched.warnings:
        console.print(f"[yellow]warning:[/] {escape(line)}", highlight=False)
