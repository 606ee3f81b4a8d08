"""What an outsider can make a skilldeck server spend, measured before and after the hardening.

Run from the repository root::

    .venv/bin/python bench/hardening.py                      # every item, this checkout only
    .venv/bin/python bench/hardening.py --baseline 605f7af   # the same run on that commit too
    .venv/bin/python bench/hardening.py variants --quick     # one item, a smaller catalog

Items (each measured in fresh subprocesses, so memory figures are not mixed up):

* ``variants`` — locale hints under a policy. An in-process server (``create_server`` with a
  policy) and an in-process SDK client: 200 ``skills/list`` requests all with the locale ``en``,
  then, in a new process, 200 requests each with a different (valid, unconfigured) locale tag.
  p50/p95 latency and the process RSS after each.
* ``sessions`` — legacy sessions over HTTP. ``skilldeck serve PACK --http`` in a subprocess, N
  idle legacy sessions opened by hand (``initialize`` + ``notifications/initialized``, no GET
  stream), then the server's RSS and whether one more legacy client gets in (its HTTP status).
* ``resources-list`` — ``resources/list`` paging over HTTP at a large catalog: the server's CPU
  time per page (from ``/proc``), then the ``skills/list`` p50 of one probe client while ten
  clients loop over ``resources/list``.

The catalog is generated in a temporary folder: ``--skills`` skills (10,000 by default), each a
``SKILL.md`` and a ``references/guide.md``. With ``--baseline REF`` the same measurements run on
the ``src/`` of that commit (``git archive``) in the same run, and both are reported side by side.
Results: a table on stdout and ``bench/results/hardening.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO / "bench"))  # appended: never shadows a package

from _common import stop  # noqa: E402

DEFAULT_OUTPUT = REPO / "bench" / "results" / "hardening.json"
ITEMS = ("variants", "sessions", "resources-list")
LEGACY = "2025-11-25"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
STARTUP_LINE = re.compile(r"skilldeck: serving (\d+) skills from .* at (http://\S+)")

POLICY = """\
default_identity: {subject: bench, tenant: acme, roles: [user]}
skills:
  skill-00000:
    variables:
      - when: {tenants: [acme]}
        set: {brand: Acme}
  skill-00001:
    admit: {roles: [admin]}
"""


# -- helpers shared by the parent and the workers ----------------------------------------------------


def rss_mb(pid: int | str = "self") -> dict[str, float]:
    """Resident and peak resident memory of a process, in MB (Linux ``/proc``)."""
    found: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found["rss_mb" if key == "VmRSS" else "peak_rss_mb"] = round(int(value.split()[0]) / 1024, 1)
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def make_pack(root: Path, skills: int) -> Path:
    """``skills`` skills, each a SKILL.md (with {{ brand }} / {{ locale }} placeholders) and one reference."""
    guide = ("Step {{ brand }}: read the form, check every field, then file it.\n" * 16).encode()
    for i in range(skills):
        name = f"skill-{i:05d}"
        folder = root / name
        (folder / "references").mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: Handles case {i} for the {{{{ brand }}}} desk.\n---\n"
            f"# {name}\nAnswer in {{{{ locale }}}}. See references/guide.md.\n"
        )
        (folder / "references" / "guide.md").write_bytes(guide)
    return root


# -- workers (run in a subprocess with PYTHONPATH pointing at the code under test) ------------------


async def worker_variants(pack: str, policy: str, locales: int, requests: int) -> dict[str, Any]:
    from mcp import Client

    from skilldeck.host._wire import SkillsWire
    from skilldeck.server import create_server
    from skilldeck.serving._policy import load_policy

    server, _ = create_server(pack, policy=load_policy(policy))
    before = rss_mb()
    tags = ["en"] if locales == 1 else [f"{chr(97 + i // 26 % 26)}{chr(97 + i % 26)}-r{i:04d}" for i in range(locales)]
    async with Client(server, mode="auto", cache=None) as client:
        wire = SkillsWire(client)
        warm = await wire.request("skills/list", {"_meta": {"dev.skilldeck/locale": "en"}})
        assert warm["skills"], warm
        times: list[float] = []
        for i in range(requests):
            meta = {"dev.skilldeck/locale": tags[i % len(tags)]}
            start = time.perf_counter()
            result = await wire.request("skills/list", {"_meta": meta})
            times.append((time.perf_counter() - start) * 1000)
            assert len(result["skills"]) == 50, result
    return {
        "locales": len(tags),
        "requests": requests,
        "p50_ms": round(statistics.median(times), 2),
        "p95_ms": round(percentile(times, 0.95), 2),
        "rss_before_mb": before["rss_mb"],
        **rss_mb(),
    }


def run_worker(src: Path, item: str, args: list[str]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [sys.executable, str(Path(__file__).resolve()), "_worker", item, *args]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"worker failed: {shlex.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- HTTP measurements (the parent drives a `skilldeck serve --http` subprocess) ----------------------


class Served:
    """``python -m skilldeck.cli serve PACK --http 127.0.0.1:0`` run from ``src``; stopped on exit."""

    def __init__(self, src: Path, pack: Path, extra: list[str] | None = None) -> None:
        self.log = tempfile.NamedTemporaryFile(prefix="skilldeck-bench-", suffix=".log", delete=False)  # noqa: SIM115
        env = {**os.environ, "PYTHONPATH": str(src), "COLUMNS": "400", "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
        cmd = [sys.executable, "-m", "skilldeck.cli", "serve", str(pack), "--http", "127.0.0.1:0", *(extra or [])]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            text = Path(self.log.name).read_text(errors="replace")
            if match := STARTUP_LINE.search(text):
                self.url = match.group(2)
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {text}")
            time.sleep(0.2)
        raise RuntimeError("server did not start")

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *_: object) -> None:
        stop(self.proc, 20)
        Path(self.log.name).unlink(missing_ok=True)


def _sse_json(body: bytes) -> dict[str, Any]:
    text = body.decode()
    if text.lstrip().startswith("{"):
        return json.loads(text)
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    return json.loads(data[-1])


async def open_session(http: Any, url: str) -> str | int:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
    }
    reply = await http.post(url, json=init, headers=HEADERS)
    if reply.status_code != 200:
        return int(reply.status_code)
    session = reply.headers["mcp-session-id"]
    await http.post(
        url,
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        headers={**HEADERS, "mcp-session-id": session, "mcp-protocol-version": LEGACY},
    )
    return str(session)


async def call(http: Any, url: str, session: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    reply = await http.post(
        url,
        json={"jsonrpc": "2.0", "id": 2, "method": method, "params": params},
        headers={**HEADERS, "mcp-session-id": session, "mcp-protocol-version": LEGACY},
    )
    reply.raise_for_status()
    result = _sse_json(reply.content)
    if "result" not in result:
        raise RuntimeError(f"{method}: {result}")
    return result["result"]


async def measure_sessions(src: Path, pack: Path, opens: int) -> dict[str, Any]:
    import httpx2

    with Served(src, pack) as served:
        start_rss = rss_mb(served.proc.pid)["rss_mb"]
        statuses: dict[str, int] = {}
        limits = httpx2.Limits(max_connections=16, max_keepalive_connections=16)
        async with httpx2.AsyncClient(timeout=60, limits=limits) as http:
            queue = iter(range(opens))

            async def opener() -> None:
                for _ in queue:
                    got = await open_session(http, served.url)
                    key = "opened" if isinstance(got, str) else str(got)
                    statuses[key] = statuses.get(key, 0) + 1

            began = time.monotonic()
            await asyncio.gather(*(opener() for _ in range(8)))
            took = time.monotonic() - began
            after = rss_mb(served.proc.pid)
            newcomer = await open_session(http, served.url)
            newcomer_status = 200 if isinstance(newcomer, str) else newcomer
            listed = None
            if isinstance(newcomer, str):
                listed = len((await call(http, served.url, newcomer, "skills/list", {}))["skills"])
    return {
        "opens": opens,
        "open_results": statuses,
        "open_seconds": round(took, 1),
        "server_rss_start_mb": start_rss,
        "server_rss_after_mb": after["rss_mb"],
        "server_peak_rss_mb": after["peak_rss_mb"],
        "new_legacy_client_status": newcomer_status,
        "new_legacy_client_listed": listed,
    }


async def measure_resources_list(src: Path, pack: Path, pages: int, loop_seconds: float) -> dict[str, Any]:
    import httpx2

    with Served(src, pack) as served:
        url = served.url
        async with httpx2.AsyncClient(timeout=120) as http:
            session = await open_session(http, url)
            assert isinstance(session, str)
            first = await call(http, url, session, "resources/list", {})
            cursor = first.get("nextCursor")
            cpu0, times = cpu_seconds(served.proc.pid), []
            for _ in range(pages):
                start = time.perf_counter()
                page = await call(http, url, session, "resources/list", {"cursor": cursor})
                times.append((time.perf_counter() - start) * 1000)
                cursor = page.get("nextCursor") or first.get("nextCursor")
            cpu_per_page = (cpu_seconds(served.proc.pid) - cpu0) / pages * 1000

            async def probe(seconds: float) -> list[float]:
                probe_session = await open_session(http, url)
                assert isinstance(probe_session, str)
                lat: list[float] = []
                end = time.monotonic() + seconds
                while time.monotonic() < end:
                    start = time.perf_counter()
                    await call(http, url, probe_session, "skills/list", {})
                    lat.append((time.perf_counter() - start) * 1000)
                return lat

            alone = await probe(loop_seconds)
            stop = asyncio.Event()

            async def looper() -> None:
                own = await open_session(http, url)
                assert isinstance(own, str)
                cur = None
                while not stop.is_set():
                    got = await call(http, url, own, "resources/list", {"cursor": cur} if cur else {})
                    cur = got.get("nextCursor")

            loopers = [asyncio.create_task(looper()) for _ in range(10)]
            await asyncio.sleep(1.0)
            loaded = await probe(loop_seconds)
            stop.set()
            await asyncio.gather(*loopers)
    return {
        "pages": pages,
        "server_cpu_ms_per_page": round(cpu_per_page, 2),
        "page_p50_ms": round(statistics.median(times), 2),
        "probe_skills_list_p50_ms_alone": round(statistics.median(alone), 2),
        "probe_skills_list_p50_ms_with_10_resources_list_loops": round(statistics.median(loaded), 2),
    }


# -- the parent -------------------------------------------------------------------------------------


def checkout(ref: str, into: Path) -> Path:
    """The ``src/`` of ``ref``, unpacked under ``into``."""
    archive = into / "src.tar"
    subprocess.run(["git", "-C", str(REPO), "archive", "-o", str(archive), ref, "src"], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def codes_under_test(baseline: str | None, work: Path) -> dict[str, Path]:
    """Label to ``src/`` of each code measured: ``baseline`` (unpacked under ``work``) first if given, then ours."""
    codes = {"this checkout": REPO / "src"}
    if baseline:
        (work / "baseline").mkdir()
        codes = {f"baseline {baseline}": checkout(baseline, work / "baseline"), **codes}
    return codes


def measure(item: str, src: Path, pack: Path, policy: Path, quick: bool) -> dict[str, Any]:
    if item == "variants":
        requests = "200"
        one = run_worker(src, item, [str(pack), str(policy), "1", requests])
        many = run_worker(src, item, [str(pack), str(policy), "200", requests])
        return {
            "one_locale": one,
            "200_locales": many,
            "p50_ratio": round(many["p50_ms"] / one["p50_ms"], 2),
            "rss_ratio": round(many["rss_mb"] / one["rss_mb"], 2),
        }
    if item == "sessions":
        return asyncio.run(measure_sessions(src, pack, 1_200 if quick else 10_050))
    return asyncio.run(measure_resources_list(src, pack, 20 if quick else 50, 3.0 if quick else 5.0))


def write_report(
    output: Path,
    script: str,
    settings: dict[str, Any],
    started: float,
    load_at_start: tuple[float, float, float],
    results: dict[str, Any],
) -> None:
    """The run's command, date, machine, settings and results into ``output`` (JSON); the results on stdout."""
    report = {
        "command": shlex.join([script, *sys.argv[1:]]),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "loadavg_at_start": load_at_start,
        },
        "settings": settings,
        "seconds": round(time.monotonic() - started, 1),
        "results": results,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(results, indent=2))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_worker":
        item, rest = sys.argv[2], sys.argv[3:]
        assert item == "variants"
        pack_dir, policy_file, locales, requests = rest
        print(json.dumps(asyncio.run(worker_variants(pack_dir, policy_file, int(locales), int(requests)))))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("items", nargs="*", metavar="ITEM", help=f"any of {', '.join(ITEMS)} (default: all)")
    parser.add_argument("--baseline", metavar="REF", help="also measure the src/ of this git commit")
    parser.add_argument("--skills", type=int, default=10_000, help="skills in the generated catalog")
    parser.add_argument("--quick", action="store_true", help="1,000 skills, 1,200 session opens, fewer pages")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args()
    items = args.items or list(ITEMS)
    if unknown := set(items) - set(ITEMS):
        parser.error(f"unknown item {sorted(unknown)[0]!r} (choose from {', '.join(ITEMS)})")
    skills = 1_000 if args.quick else args.skills
    started = time.monotonic()
    load_at_start = os.getloadavg()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="skilldeck-hardening-") as tmp:
        work = Path(tmp)
        codes = codes_under_test(args.baseline, work)
        print(f"generating {skills} skills ...", file=sys.stderr)
        pack = make_pack(work / "pack", skills)
        policy = work / "policy.yaml"
        policy.write_text(POLICY)
        for item in items:
            results[item] = {}
            for label, src in codes.items():
                print(f"{item}: {label} ...", file=sys.stderr)
                served = REPO / "examples" / "skills" if item == "sessions" else pack
                results[item][label] = measure(item, src, served, policy, args.quick)
                print(json.dumps(results[item][label]), file=sys.stderr)
    write_report(
        args.output, "bench/hardening.py", {"skills": skills, "quick": args.quick}, started, load_at_start, results
    )


if __name__ == "__main__":
    main()
