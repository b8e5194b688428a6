"""Serve a watched run's live figures on /metrics in Prometheus' text exposition format (version 0.0.4), from a
stdlib HTTP server on a daemon thread: one gauge `benchbed_<figure>` per live figure, labelled by run, framework,
adapter and scope (`window` or `run`), plus `benchbed_step` and `benchbed_alarm` (1 per fired alarm)."""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from benchbed.watch.alarms import Alarm
from benchbed.watch.live import LiveFigures

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def exposition(samples: Mapping[str, list[tuple[dict[str, str], float]]], help_text: Mapping[str, str]) -> str:
    """The text format of `samples` (gauge name -> [(labels, value)]): a HELP and TYPE line per gauge, then its
    samples, names in sorted order."""
    lines = []
    for name in sorted(samples):
        lines.append(f"# HELP {name} {_escape(help_text.get(name, name))}")
        lines.append(f"# TYPE {name} gauge")
        for labels, value in samples[name]:
            inner = ",".join(f'{key}="{_escape(val)}"' for key, val in sorted(labels.items()))
            lines.append(f"{name}{{{inner}}} {_number(value)}")
    return "\n".join(lines) + "\n"


def watch_exposition(figures: LiveFigures, alarms: list[Alarm], labels: Mapping[str, str]) -> str:
    """The gauges of one watched run: each live figure per scope, the last step seen and the fired alarms."""
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    help_text = {}
    for scope, values in figures.figures().items():
        for name, value in values.items():
            samples.setdefault(f"benchbed_{name}", []).append(({**labels, "scope": scope}, value))
            help_text[f"benchbed_{name}"] = f"benchbed watch live figure {name} (scope: window or run)"
    samples["benchbed_step"] = [(dict(labels), float(figures.step_numbers[-1]) if figures.step_numbers else math.nan)]
    help_text["benchbed_step"] = "the last trainer step benchbed watch saw finish"
    if alarms:
        samples["benchbed_alarm"] = [({**labels, "alarm": a.rule.name}, 1.0) for a in alarms]
        help_text["benchbed_alarm"] = "1 for each alarm of benchbed/diagnosis/alarms.toml that fired"
    return exposition(samples, help_text)


class MetricsServer:
    """/metrics on `host:port` (port 0: a free one, see `port`); `publish` replaces what the next scrape reads."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._lock = threading.Lock()
        self._body = b""
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802  # http.server's name
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404, "benchbed serves /metrics only")
                    return
                with server._lock:
                    body = server._body
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002  # scrapes are not news
                return

        self._http = ThreadingHTTPServer((host, port), Handler)
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, name="benchbed-metrics", daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        """The port the server listens on."""
        return int(self._http.server_address[1])

    def publish(self, text: str) -> None:
        """The exposition the next scrape returns."""
        with self._lock:
            self._body = text.encode()

    def close(self) -> None:
        """Stop serving and release the port."""
        self._http.shutdown()
        self._http.server_close()
