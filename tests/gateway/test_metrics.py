"""``--metrics``: the gateway's Prometheus metrics, scraped by a real Prometheus server and read by its query API.

One gateway (in front of the demo jobs server, lexical ranking) runs for the module. A scripted
session (find → load → call → refusals) is sent as raw 2026-07-28 requests; the series are read
from ``/metrics`` directly and, in the acceptance test, through Prometheus's ``/api/v1/query``
after it scraped the gateway (Debian's ``prometheus`` binary, on loopback, a short scrape interval).
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from skilldeck.serving._metrics import LATENCY_BUCKETS

from ..server.helpers import POST_HEADERS, initialize_request, start_gateway, stop
from .test_gateway_config import JOBS, write
from .test_supervision import CRASHY

MODERN = "2026-07-28"
PROMETHEUS = shutil.which("prometheus") or next(
    (p for p in ("/usr/bin/prometheus", "/usr/sbin/prometheus") if Path(p).exists()), None
)
METRICS_LINE = re.compile(r"metrics at (http://\S+/metrics)")


class Gateway:
    def __init__(self, url: str, metrics: str) -> None:
        self.url = url
        self.metrics = metrics
        self.ids = 0

    def request(
        self, method: str, params: dict[str, Any] | None = None, extra_headers: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """One raw 2026-07-28 request; the JSON-RPC response (a result or an error)."""
        self.ids += 1
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "metrics-test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        body = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": {**(params or {}), "_meta": meta}}
        headers = {**POST_HEADERS, "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        if "name" in (params or {}):
            headers["Mcp-Name"] = str((params or {})["name"])
        headers.update(extra_headers or {})
        request = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                text = response.read().decode()
                if response.headers["content-type"].startswith("text/event-stream"):
                    text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
        except urllib.error.HTTPError as exc:
            text = exc.read().decode()
            assert text, f"{method}: HTTP {exc.code} with no body"
        answer = json.loads(text)
        assert isinstance(answer, dict), answer
        return answer

    def legacy_session(self) -> str:
        """A legacy (2025-11-25) session opened with ``initialize`` (and ``notifications/initialized``); its id."""
        request = urllib.request.Request(
            self.url, data=json.dumps(initialize_request()).encode(), headers=POST_HEADERS, method="POST"
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            session = str(response.headers["mcp-session-id"])
            response.read()
        self.legacy(session, "notifications/initialized")
        return session

    def legacy(
        self,
        session: str,
        method: str,
        params: dict[str, Any] | None = None,
        extra_headers: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """One request (or, for ``notifications/...``, a notification) on a legacy session; the response."""
        self.ids += 1
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        if not method.startswith("notifications/"):
            body["id"] = self.ids
        headers = {**POST_HEADERS, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
        headers.update(extra_headers or {})
        request = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=60) as response:
            text = response.read().decode()
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                # the first event may be a priming one (an id and no data, for resumption): skip it
                text = next(
                    (line[5:] for line in text.splitlines() if line.startswith("data:") and line[5:].strip()), ""
                )
        answer = json.loads(text) if text.strip() else {}
        assert isinstance(answer, dict), answer
        return answer

    def tool(self, name: str, arguments: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
        answer = self.request("tools/call", {"name": name, "arguments": arguments}, headers)
        assert "result" in answer, answer
        result = answer["result"]
        assert isinstance(result, dict)
        return result

    def scrape(self) -> dict[str, float]:
        """Every sample of ``/metrics``: ``name{labels}`` → value."""
        with urllib.request.urlopen(self.metrics, timeout=30) as response:
            text = response.read().decode()
        samples = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                series, _, value = line.rpartition(" ")
                samples[series] = float(value)
        return samples


@contextmanager
def gateway_with_metrics(tmp: Path, servers: dict[str, Any]) -> Iterator[Gateway]:
    """``skilldeck gateway --lexical --metrics 127.0.0.1:0`` in front of ``servers`` (an ``mcpServers`` table)."""
    config = write(tmp / "servers.json", {"mcpServers": servers})
    log = tmp / "gateway.log"
    proc, found = start_gateway(config, log, "--lexical", "--metrics", "127.0.0.1:0")
    try:
        metrics = METRICS_LINE.search(log.read_text())
        assert metrics is not None, log.read_text()
        yield Gateway(found.group("url"), metrics.group(1))
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    with gateway_with_metrics(tmp_path_factory.mktemp("metrics"), {"jobs": JOBS}) as running:
        yield running


def scripted_session(gateway: Gateway) -> None:
    """find → load → call, then a call of a tool not loaded and one of a tool no upstream lists."""
    found = gateway.tool("find", {"query": "search job postings by skill and city"})["structuredContent"]
    assert not found["abstain"], found
    loaded = gateway.tool("load", {"ids": ["jobs/search_jobs"]})["structuredContent"]
    assert [t["name"] for t in loaded["tools"]] == ["jobs/search_jobs"], loaded
    called = gateway.tool("call", {"tool": "jobs/search_jobs", "arguments": {"query": "python"}})
    assert not called.get("isError"), called
    not_active = gateway.tool("call", {"tool": "jobs/get_job", "arguments": {"job_id": "1"}})
    assert not_active.get("isError"), not_active
    unknown = gateway.tool("call", {"tool": "jobs/no_such_tool", "arguments": {}})
    assert unknown.get("isError"), unknown


def series(samples: dict[str, float]) -> set[str]:
    return set(samples)


def value(samples: dict[str, float], name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    total = 0.0
    for key, v in samples.items():
        metric, _, rest = key.partition("{")
        if metric != name:
            continue
        pairs = dict(re.findall(r'(\w+)="([^"]*)"', rest))
        if all(pairs.get(k) == want for k, want in labels.items()):
            total += v
    return total


def test_the_scripted_session_is_counted_by_outcome_and_reason(gateway: Gateway) -> None:
    before = gateway.scrape()
    scripted_session(gateway)
    after = gateway.scrape()

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("skilldeck_find_total", outcome="answered", ranker="lexical") == 1
    assert grew("skilldeck_find_confidence_count", ranker="lexical") == 1
    assert grew("skilldeck_loads_total", outcome="loaded") == 1
    assert grew("skilldeck_load_activated_total", kind="tool") == 1
    assert grew("skilldeck_calls_total", upstream="jobs", tool="search_jobs", outcome="ok") == 1
    assert grew("skilldeck_call_seconds_count", upstream="jobs") == 1
    assert grew("skilldeck_call_refusals_total", reason="tool_not_active") == 1
    assert grew("skilldeck_call_refusals_total", reason="tool_not_listed") == 1
    assert grew("skilldeck_requests_total", method="tools/call", era=MODERN) == 5
    assert grew("skilldeck_request_seconds_count", method="tools/call", era=MODERN) == 5
    assert value(after, "skilldeck_upstream_up", upstream="jobs") == 1
    assert value(after, "skilldeck_activations") == 1  # anonymous callers share one activation
    assert value(after, "skilldeck_indexes") == 1  # one audience, every upstream up
    assert value(after, "skilldeck_index_vectors") == 0  # --lexical: no card vectors to encode
    assert value(after, "skilldeck_upstream_restarts_total", upstream="jobs") == 0


def test_a_flood_of_unknown_tools_and_methods_adds_no_series(gateway: Gateway) -> None:
    scripted_session(gateway)  # every series the session makes exists
    gateway.request("no/such-method-0")
    gateway.request("tools/call", {"name": "not-a-meta-tool-0", "arguments": {}})
    before = gateway.scrape()
    for n in range(1, 41):
        gateway.tool("call", {"tool": f"jobs/made-up-{n}", "arguments": {}})
        gateway.tool("call", {"tool": f"nowhere-{n}/tool", "arguments": {}})
        gateway.request(f"no/such-method-{n}")
        gateway.request("tools/call", {"name": f"not-a-meta-tool-{n}", "arguments": {}})
    after = gateway.scrape()
    assert series(after) == series(before), sorted(series(after) ^ series(before))
    assert (
        value(after, "skilldeck_requests_total", method="other")
        - value(before, "skilldeck_requests_total", method="other")
        == 40
    )
    # the made-up names, through `call` or as tools/call names (a loaded tool is called by its own name)
    assert value(after, "skilldeck_call_refusals_total") - value(before, "skilldeck_call_refusals_total") == 120


# -- a real Prometheus server ---------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def prometheus(tmp_path: Path, gateway: Gateway) -> Iterator[str]:
    if PROMETHEUS is None:
        pytest.skip("prometheus is not installed (Debian: apt-get install -y prometheus)")
    target = urllib.parse.urlsplit(gateway.metrics).netloc
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: skilldeck\n    metrics_path: /metrics\n"
        f"    static_configs:\n      - targets: ['{target}']\n"
    )
    port = free_port()
    log = (tmp_path / "prometheus.log").open("wb")
    proc = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)
        log.close()


def query(prometheus: str, promql: str) -> list[dict[str, Any]]:
    url = f"{prometheus}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
    with urllib.request.urlopen(url, timeout=10) as response:
        answer = json.loads(response.read())
    assert answer["status"] == "success", answer
    result = answer["data"]["result"]
    assert isinstance(result, list)
    return result


def wait_for(prometheus: str, promql: str, want: float, seconds: float = 90.0) -> list[dict[str, Any]]:
    """The query's result once its first sample is ``want`` (the scrapes after the session), else fail."""
    deadline = time.monotonic() + seconds
    result: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        try:
            result = query(prometheus, promql)
        except OSError:  # not listening yet
            result = []
        if result and float(result[0]["value"][1]) == want:
            return result
        time.sleep(0.5)
    pytest.fail(f"{promql}: wanted {want}, Prometheus answered {result}")


@pytest.mark.timeout(240)
def test_prometheus_scrapes_the_gateway_after_a_scripted_session(gateway: Gateway, prometheus: str) -> None:
    before = gateway.scrape()
    scripted_session(gateway)
    after = gateway.scrape()  # what the gateway counts now; Prometheus must read the same values

    def expect(promql: str, name: str, **labels: str) -> None:
        wait_for(prometheus, promql, value(after, name, **labels))

    expect('sum(skilldeck_find_total{outcome="answered",ranker="lexical"})', "skilldeck_find_total", outcome="answered")
    expect('sum(skilldeck_loads_total{outcome="loaded"})', "skilldeck_loads_total", outcome="loaded")
    expect(
        'skilldeck_calls_total{upstream="jobs",tool="search_jobs",outcome="ok"}',
        "skilldeck_calls_total",
        upstream="jobs",
        tool="search_jobs",
        outcome="ok",
    )
    expect(
        'skilldeck_call_refusals_total{reason="tool_not_active"}',
        "skilldeck_call_refusals_total",
        reason="tool_not_active",
    )
    expect('skilldeck_upstream_up{upstream="jobs"}', "skilldeck_upstream_up", upstream="jobs")
    expect(
        'sum(skilldeck_requests_total{method="tools/call",era="2026-07-28",outcome="ok"})',
        "skilldeck_requests_total",
        method="tools/call",
        era=MODERN,
        outcome="ok",
    )
    assert value(after, "skilldeck_calls_total", outcome="ok") > value(before, "skilldeck_calls_total", outcome="ok")
    # a histogram Prometheus can take a quantile of: the upstream's call latency, under a minute
    latency = wait_for(prometheus, 'count(skilldeck_call_seconds_bucket{upstream="jobs"})', len(LATENCY_BUCKETS) + 1)
    assert latency
    (p99,) = query(prometheus, 'histogram_quantile(0.99, sum by (le) (skilldeck_call_seconds_bucket{upstream="jobs"}))')
    assert 0 < float(p99["value"][1]) < 60, p99
    (up,) = query(prometheus, 'up{job="skilldeck"}')
    assert up["value"][1] == "1", up


def test_an_upstream_lost_and_back_is_down_then_up_with_one_restart_and_its_change_time(tmp_path: Path) -> None:
    hold = tmp_path / "hold"
    crashy = {"command": sys.executable, "args": ["-c", CRASHY, str(hold)]}
    with gateway_with_metrics(tmp_path, {"crashy": crashy}) as gateway:
        assert value(gateway.scrape(), "skilldeck_upstream_last_change_timestamp_seconds", upstream="crashy") == 0
        gateway.tool("load", {"ids": ["crashy/crash"]})
        hold.write_text("held down")  # it cannot start again until the file goes
        started = time.time()
        gateway.tool("call", {"tool": "crashy/crash", "arguments": {}})
        down = poll(gateway, lambda s: value(s, "skilldeck_upstream_up", upstream="crashy") == 0, "down")
        assert value(down, "skilldeck_upstream_restarts_total", upstream="crashy") == 0
        hold.unlink()
        back = poll(gateway, lambda s: value(s, "skilldeck_upstream_up", upstream="crashy") == 1, "back up")
        back = poll(gateway, lambda s: value(s, "skilldeck_upstream_restarts_total", upstream="crashy") == 1, "counted")
        assert value(back, "skilldeck_upstream_last_change_timestamp_seconds", upstream="crashy") >= started


def poll(gateway: Gateway, holds: Any, what: str) -> dict[str, float]:
    """Scrape until ``holds`` of the samples (60 s at most, for a loaded machine); the samples then."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        samples = gateway.scrape()
        if holds(samples):
            return samples
        time.sleep(0.2)
    pytest.fail(f"the upstream was not {what} within 60 s")
