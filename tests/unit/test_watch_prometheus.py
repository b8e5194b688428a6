"""The /metrics of a watched run: the text format escaped and typed, and a real Prometheus server (Debian's
`prometheus`, on 127.0.0.1) that scrapes it reads the run's idle ratio back through its query API."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchbed.watch.prometheus import MetricsServer, exposition, watch_exposition
from benchbed.watch.session import Watch

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "ref" / "async-4steps"
LABELS = {"run": "async-4steps", "framework": "benchbed-ref", "adapter": "ref"}


def test_exposition_escapes_labels_and_writes_nan_and_infinities() -> None:
    text = exposition({"benchbed_x": [({"run": 'a"b\\c\nd'}, math.nan), ({"run": "e"}, math.inf)],
                       "benchbed_a": [({}, 0.25)]}, {"benchbed_x": "two\nlines"})  # fmt: skip
    assert text.splitlines() == [
        "# HELP benchbed_a benchbed_a", "# TYPE benchbed_a gauge", "benchbed_a{} 0.25",
        "# HELP benchbed_x two\\nlines", "# TYPE benchbed_x gauge",
        'benchbed_x{run="a\\"b\\\\c\\nd"} NaN', 'benchbed_x{run="e"} +Inf',
    ]  # fmt: skip


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read()


@pytest.fixture
def watched() -> Iterator[tuple[Watch, MetricsServer]]:
    watch = Watch(RUN, "ref", warmup_steps=1)
    watch.update()
    server = MetricsServer("127.0.0.1", 0)
    server.publish(watch_exposition(watch.figures, watch.alarms, LABELS))
    yield watch, server
    server.close()
    watch.close()


@pytest.fixture
def prometheus(tmp_path: Path, watched: tuple[Watch, MetricsServer]) -> Iterator[str]:
    """A Prometheus server scraping the watched run's /metrics every second; its base URL."""
    binary = shutil.which("prometheus")
    if binary is None:
        if os.environ.get("CI"):
            raise RuntimeError("prometheus is not installed (Makefile APT_PACKAGES)")
        pytest.skip("prometheus is not installed (apt-get install prometheus)")
    config = tmp_path / "prometheus.yml"
    config.write_text(json.dumps({  # JSON is YAML
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [{"job_name": "benchbed", "scrape_interval": "1s",
                            "static_configs": [{"targets": [f"127.0.0.1:{watched[1].port}"]}]}],
    }))  # fmt: skip
    port = _free_port()
    log = (tmp_path / "prometheus.log").open("w")
    proc = subprocess.Popen([binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
                             f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=log)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if _get(f"{base}/-/ready"):
                    break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError((tmp_path / "prometheus.log").read_text()[-2000:])
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_a_real_prometheus_scrapes_the_watched_runs_idle_ratio(
    prometheus: str, watched: tuple[Watch, MetricsServer]
) -> None:
    query = 'benchbed_trainer_idle_ratio{scope="run",adapter="ref"}'
    result: list = []
    for _ in range(300):
        answer = json.loads(_get(f"{prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": query})))
        assert answer["status"] == "success"
        result = answer["data"]["result"]
        if result:
            break
        time.sleep(0.1)
    assert len(result) == 1, "no sample scraped within 30 s"
    series = result[0]["metric"]
    assert series == {"__name__": "benchbed_trainer_idle_ratio", "job": "benchbed",
                      "instance": f"127.0.0.1:{watched[1].port}", "scope": "run", **LABELS}  # fmt: skip
    live = watched[0].figures.figures()["run"]["trainer_idle_ratio"]
    assert float(result[0]["value"][1]) == live  # float64 both ways, exactly
    assert live == pytest.approx(0.9667726, abs=1e-6)


def test_the_grafana_dashboard_queries_gauges_the_watcher_serves(watched: tuple[Watch, MetricsServer]) -> None:
    dashboard = json.loads((Path(__file__).resolve().parents[2] / "docs" / "guides" / "grafana-benchbed-watch.json")
                           .read_text())  # fmt: skip
    served = {line.split("{")[0] for line in _get(f"http://127.0.0.1:{watched[1].port}/metrics").decode().splitlines()
              if line and not line.startswith("#")}  # fmt: skip
    queried = {re.match(r"(benchbed_\w+)\{", t["expr"]).group(1) for p in dashboard["panels"] for t in p["targets"]}
    assert len(queried) == len(dashboard["panels"]) == 13
    assert queried <= served, queried - served
