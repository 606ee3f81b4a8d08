"""``skilldeck gateway``'s configuration, from the outside: the real CLI process and a real client.

A legacy HTTP+SSE entry is spoken; a label given twice, a policy id that matches nothing (of an
upstream connected, or down at start) and a mistyped ``--pin``/``--grant`` are reported;
``--check`` says what each identity would see without serving; ``SIGHUP`` re-reads the files.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from ..server.helpers import CLI, REPO, cli_env, start_gateway, stop
from .gateway_clients_support import check_structured

pytestmark = pytest.mark.anyio

EXAMPLES = REPO / "examples" / "skills"
JOBS_STDIO = "from skilldeck.demo._servers import jobs_server; jobs_server().run()"
DECK = {"command": sys.executable, "args": ["-m", "skilldeck.cli", "serve", str(EXAMPLES)]}
JOBS = {"command": sys.executable, "args": ["-c", JOBS_STDIO]}
SSE_UPSTREAM = """
import uvicorn
from skilldeck.demo._servers import jobs_server
uvicorn.run(jobs_server().sse_app(host="127.0.0.1"), host="127.0.0.1", port=0, log_level="info")
"""
RUNNING = re.compile(r"Uvicorn running on (http://127\.0\.0\.1:\d+)")
WAIT = 60.0
"""Seconds any one thing the gateway is waited for may take (generous: the machine may be loaded)."""


def write(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document, indent=2) if not isinstance(document, str) else document)
    return path


def run_gateway(
    *args: str, timeout: float = 120.0, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``skilldeck gateway ARGS`` to its end (``--check``, or a refusal at start)."""
    return subprocess.run(
        [*CLI, "gateway", *args],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=cli_env(**(env or {})),
        timeout=timeout,
    )


def wait_for_log(log: Path, found: Callable[[str], bool], what: str) -> str:
    deadline = time.monotonic() + WAIT
    while True:
        text = log.read_text(errors="replace")
        if found(text):
            return text
        if time.monotonic() > deadline:
            pytest.fail(f"{what} not seen within {WAIT:.0f}s; the log:\n{text}", pytrace=False)
        time.sleep(0.1)


@pytest.fixture
def sse_upstream(tmp_path: Path) -> Iterator[str]:
    """The demo jobs server on the legacy HTTP+SSE transport (the SDK's ``sse_app``); yields its base URL."""
    log = tmp_path / "sse.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", SSE_UPSTREAM], cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env=cli_env()
        )
    try:
        text = wait_for_log(log, RUNNING.search, "the SSE upstream's startup line")
        match = RUNNING.search(text)
        assert match is not None
        yield match[1]
    finally:
        stop(proc)


# -- the legacy HTTP+SSE transport -------------------------------------------------------------------


async def test_a_legacy_sse_entry_is_spoken_beside_the_others(tmp_path: Path, sse_upstream: str) -> None:
    config = write(
        tmp_path / "mcp.json", {"mcpServers": {"old": {"type": "sse", "url": f"{sse_upstream}/sse"}, "deck": DECK}}
    )
    proc, match = start_gateway(config, tmp_path / "gateway.log")
    try:
        assert match["up"] == match["total"] == "2", (tmp_path / "gateway.log").read_text()
        async with Client(match["url"], cache=None) as c:
            loaded = check_structured("load", await c.call_tool("load", {"ids": ["old/job-search"]}))
            assert [t["name"] for t in loaded["tools"]] == ["old/search_jobs"], loaded
            result = await c.call_tool("call", {"tool": "old/search_jobs", "arguments": {"query": "engineer"}})
            assert not result.is_error, result
            assert "JOB-" in json.dumps(result.structured_content), result
    finally:
        stop(proc)


async def test_an_sse_entry_that_does_not_answer_is_unavailable_and_the_rest_serve(tmp_path: Path) -> None:
    config = write(
        tmp_path / "mcp.json",
        {"mcpServers": {"old": {"type": "sse", "url": "http://127.0.0.1:9/sse", "timeout": 5}, "deck": DECK}},
    )
    proc, match = start_gateway(config, tmp_path / "gateway.log")
    try:
        assert (match["up"], match["total"]) == ("1", "2"), match.group(0)
        assert re.search(r"unavailable \[old\] .+", (tmp_path / "gateway.log").read_text())
    finally:
        stop(proc)


# -- checked at start ----------------------------------------------------------------------------------


def test_a_label_given_twice_stops_the_gateway_naming_both_lines(tmp_path: Path) -> None:
    config = write(
        tmp_path / "mcp.json",
        '{"mcpServers": {\n  "deck": {"command": "a"},\n  "jobs": {"command": "b"},\n  "deck": {"command": "c"}\n}}\n',
    )
    done = run_gateway("--config", str(config), "--check")
    assert done.returncode == 1, done
    assert "mcpServers.deck: server 'deck' is given twice (lines 2 and 4)" in done.stderr, done.stderr


async def test_a_policy_id_of_a_connected_upstream_that_matches_nothing_stops_the_gateway(tmp_path: Path) -> None:
    config = write(tmp_path / "mcp.json", {"mcpServers": {"deck": DECK, "jobs": JOBS}})
    typo = {
        "skills": {
            "deck/pdf-form": {"admit": {"roles": ["admin"]}},  # deck/pdf-forms
            "dock/pdf-forms": {"admit": {"roles": ["admin"]}},  # no such upstream
            "jobs/job-search": {"tools": ["jobs/search_job"]},  # jobs/search_jobs
        },
        "public_tools": ["jobs/get_job"],  # right: no line for it
    }
    policy = write(tmp_path / "policy.json", typo)
    done = run_gateway("--config", str(config), "--policy", str(policy), "--http", "127.0.0.1:0")
    assert done.returncode == 1, done
    lines = [line.strip() for line in done.stderr.splitlines()]
    assert [line for line in lines if line.startswith("skills.") or line.startswith("public_tools")] == [
        "skills.deck/pdf-form: no such skill, prompt, resource or resource template of 'deck' is served "
        "(did you mean 'deck/pdf-forms'?)",
        "skills.dock/pdf-forms: 'dock/pdf-forms' names no configured upstream (ids are LABEL/NAME, the label one "
        "of deck, jobs) (did you mean 'deck/pdf-forms'?)",
        "skills.jobs/job-search.tools: no such tool 'jobs/search_job' (did you mean 'jobs/search_jobs'?)",
    ], done.stderr
    assert "skilldeck gateway:" not in done.stderr  # never served

    # The same policy with the ids spelt right: --check passes, and says the admin-only skill is the admin's.
    right = {
        "skills": {
            "deck/pdf-forms": {"admit": {"roles": ["admin"]}},
            "jobs/job-search": {"tools": ["jobs/search_jobs"]},
        },
        "public_tools": ["jobs/get_job"],
    }
    write(policy, right)
    done = run_gateway(
        "--config", str(config), "--policy", str(policy), "--check", "--pin", "job/get_job", "--grant", "deck:jbos"
    )
    assert done.returncode == 0, done
    skills = len([p for p in EXAMPLES.rglob("SKILL.md")])
    assert done.stdout.splitlines() == [
        f"default identity (subject local; stdio, or no token): deck: {skills - 1} skills, 0 tools; "
        "jobs: 1 skills, 2 tools",
        f"a token with no tenant, roles or scopes: deck: {skills - 1} skills, 0 tools; jobs: 1 skills, 2 tools",
        f"a token with roles=admin: deck: {skills} skills, 0 tools; jobs: 1 skills, 2 tools",
    ], done.stdout
    assert "warning: --pin job/get_job: no upstream is labelled 'job' (did you mean 'jobs'?)" in done.stderr
    assert "warning: --grant deck:jbos: no upstream is labelled 'jbos' (did you mean 'jobs'?)" in done.stderr


def test_check_exits_3_when_an_upstream_is_unavailable(tmp_path: Path) -> None:
    config = write(
        tmp_path / "mcp.json",
        {"mcpServers": {"deck": DECK, "gone": {"command": sys.executable, "args": ["-c", "raise SystemExit('down')"]}}},
    )
    done = run_gateway("--config", str(config), "--check")
    assert done.returncode == 3, done
    assert "unavailable [gone]: " in done.stdout, done.stdout
    assert done.stdout.startswith("anyone (no policy): deck: "), done.stdout


SECRET = "tok-4d1f9c2b7e80a6"
LEAKS = "import sys; sys.stderr.write('auth with ' + sys.argv[1] + chr(10)); raise SystemExit(1)"


def test_a_value_from_the_environment_never_shows_in_a_failure_the_gateway_reports(tmp_path: Path) -> None:
    """An upstream that echoes its token on stderr and exits, and one whose URL holds a token and cannot be
    reached: both are reported unavailable, with the reason, and with ``${VAR}`` where the value was."""
    config = write(
        tmp_path / "mcp.json",
        {
            "mcpServers": {
                "deck": DECK,
                "leaky": {"command": sys.executable, "args": ["-c", LEAKS, "${LEAKY_TOKEN}"]},
                "remote": {"url": "http://127.0.0.1:9/${LEAKY_TOKEN}/mcp", "headers": {"X-Key": "${LEAKY_TOKEN}"}},
            }
        },
    )
    done = run_gateway("--config", str(config), "--check", env={"LEAKY_TOKEN": SECRET})
    assert done.returncode == 3, done
    assert "unavailable [leaky]: " in done.stdout, done.stdout
    assert "auth with ${LEAKY_TOKEN}" in done.stdout, done.stdout  # its stderr, told with the value hidden
    assert "unavailable [remote]: " in done.stdout, done.stdout
    assert SECRET not in done.stdout + done.stderr, done


QUOTED_SECRET = "tok\\4d'1f\"9c%2b 7e"
"""A value with a backslash, both quotes, a percent sign and a space: each escaping writes it otherwise."""
ESCAPES = (
    "import json, shlex, sys, urllib.parse; v = sys.argv[1]; "
    "sys.stderr.write(' '.join([repr(sys.argv), json.dumps(v), shlex.quote(v), urllib.parse.quote(v, safe='')]) + chr(10)); "
    "raise SystemExit(1)"
)


def test_a_value_from_the_environment_is_hidden_however_an_upstream_escapes_it(tmp_path: Path) -> None:
    """An upstream that prints its argv as Python's repr, its token as JSON, shell-quoted and
    percent-encoded on stderr: ``gateway --check`` tells its failure with ``${VAR}`` for every form."""
    config = write(
        tmp_path / "mcp.json",
        {"mcpServers": {"deck": DECK, "leaky": {"command": sys.executable, "args": ["-c", ESCAPES, "${LEAKY_TOKEN}"]}}},
    )
    done = run_gateway("--config", str(config), "--check", env={"LEAKY_TOKEN": QUOTED_SECRET})
    assert done.returncode == 3, done
    assert "unavailable [leaky]: " in done.stdout, done.stdout
    told = done.stdout + done.stderr
    assert told.count("${LEAKY_TOKEN}") >= 4, told  # repr, JSON, shell quoting, percent-encoding
    for form in ("tok\\\\4d", "4d\\'1f", '1f\\"9c', "tok%5C4d", "9c%252b", "%2b 7e", "tok\\4d"):
        assert form not in told, (form, told)


def reloaded(proc: subprocess.Popen[bytes], log: Path, times: int) -> str:
    """Send SIGHUP and wait until the gateway has said ``reloaded:`` ``times`` times in all; its log since the signal."""
    before = log.read_text(errors="replace")
    proc.send_signal(signal.SIGHUP)
    text = wait_for_log(log, lambda t: t.count("reloaded: ") >= times, f"reload number {times}")
    return text[len(before) :]


async def load_and_call(url: str, skill: str, tool: str) -> tuple[list[str], bool]:
    """The skill ids a client (the default identity) is given by loading ``skill`` and ``tool``, and whether
    calling ``tool`` then ran."""
    async with Client(url, cache=None) as c:
        result = await c.call_tool("load", {"ids": [skill, tool]})
        loaded = result.structured_content
        assert isinstance(loaded, dict), result
        assert result.is_error == (not loaded["skills"] and not loaded["tools"]), result  # nothing loaded: an error
        called = await c.call_tool("call", {"tool": tool, "arguments": {"job_id": "JOB-1005"}})
        return [s["id"] for s in loaded["skills"]], not called.is_error


async def test_an_id_of_an_upstream_down_at_start_is_checked_when_it_connects(tmp_path: Path) -> None:
    flag = tmp_path / "up"
    late = f"import os, sys\nif not os.path.exists({str(flag)!r}): sys.exit('not up yet')\n{JOBS_STDIO}"
    config = write(
        tmp_path / "mcp.json",
        {"mcpServers": {"deck": DECK, "notes": {"command": sys.executable, "args": ["-c", late]}}},
    )
    typo = {"skills": {"notes/job-serch": {"admit": {"roles": ["admin"]}}}, "public_tools": ["notes/get_job"]}
    policy = write(tmp_path / "policy.json", typo)
    log = tmp_path / "gateway.log"
    proc, match = start_gateway(config, log, "--policy", str(policy))
    try:
        assert (match["up"], match["total"]) == ("1", "2"), log.read_text()
        assert (
            f"warning: policy {policy}: skills.notes/job-serch: 'notes/job-serch' not checked: upstream 'notes' is "
            "unavailable"
        ) in log.read_text()
        flag.touch()
        said = reloaded(proc, log, 1)  # SIGHUP tries the unavailable upstream again
        assert (
            f"error: policy {policy}: skills.notes/job-serch: no such skill, prompt, resource or resource template "
            "of 'notes' is served (did you mean 'notes/job-search'?)"
        ) in said, said
        assert "error: [notes] kept out of service: the policy names what it does not serve (notes/job-serch)" in said
        # The watcher re-lists the upstream the reload connected while the reload checks it: its own check
        # waits for the reload's verdict, so the upstream kept out is never listed (nor said to be back).
        assert "[notes] back" not in said, said
        # fail closed: nothing of notes is served, its public tool included, and the rest serves
        assert await load_and_call(match["url"], "notes/job-search", "notes/get_job") == ([], False)
        assert (await load_and_call(match["url"], "deck/pdf-forms", "notes/get_job"))[0] == ["deck/pdf-forms"]

        write(policy, {**typo, "skills": {"notes/job-search": {"admit": {"roles": ["admin"]}}}})
        said = reloaded(proc, log, 2)
        assert "the ids of upstream 'notes' are checked" in said, said
        assert "kept out of service" not in said, said
        # served now, under the rule that applies: the admin-only skill is not the default identity's
        assert await load_and_call(match["url"], "notes/job-search", "notes/get_job") == ([], True)
    finally:
        stop(proc)


CRASHES_ONCE = """
import os, sys
from mcp.server.mcpserver import MCPServer

FLAG = sys.argv[1]


async def exit_once(ctx, call_next):
    if ctx.method == "prompts/list" and os.path.exists(FLAG):  # its connection closes under that request
        os.remove(FLAG)
        os._exit(3)
    return await call_next(ctx)


server = MCPServer("greeter", middleware=[exit_once])


@server.prompt()
def greeting() -> str:
    return "hello"


server.run()
"""


def wait_for_file(path: Path, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not path.exists():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} not seen within {WAIT:.0f}s", pytrace=False)
        time.sleep(0.1)


def reload_ended(proc: subprocess.Popen[bytes], log: Path, times: int) -> str:
    """Send SIGHUP and wait until ``times`` reloads in all have ended, done or failed; the log since the signal."""
    before = log.read_text(errors="replace")
    proc.send_signal(signal.SIGHUP)
    ended = lambda t: t.count("reloaded: ") + t.count("reload failed: ") >= times  # noqa: E731
    return wait_for_log(log, ended, f"the end of reload number {times}")[len(before) :]


async def test_a_reload_goes_on_when_an_upstream_it_checks_closes_its_connection(tmp_path: Path) -> None:
    """The reload lists the prompts of an upstream a rule names (to check the policy's ids), and the upstream's
    connection closes under that request (it exits, once): the upstream counts as down for the check, its ids
    are checked when it is back, and the reload ends as any other (before, it ended in "reload failed:
    MCPError: Connection closed", the policy not swapped in)."""
    flag = tmp_path / "exit-on-prompts-list"
    greeter = {"command": sys.executable, "args": ["-c", CRASHES_ONCE, str(flag)]}
    config = write(tmp_path / "mcp.json", {"mcpServers": {"deck": DECK, "greeter": greeter}})
    policy = write(tmp_path / "policy.json", {"skills": {"greeter/greeting": {"admit": {"roles": ["admin"]}}}})
    log = tmp_path / "gateway.log"
    proc, match = start_gateway(config, log, "--policy", str(policy))  # its check lists the prompts: no exit yet
    try:
        assert (match["up"], match["total"]) == ("2", "2"), log.read_text()
        flag.touch()
        write(policy, {"skills": {"greeter/greeting": {"admit": {"roles": ["admin", "ops"]}}}})
        said = reload_ended(proc, log, 1)
        assert "reload failed" not in said, said
        assert "[greeter] could not be listed for the policy check" in said, said
        assert "the new policy is in force" in said, said
        # the upstream exited under the check: the supervisor starts it again, and its ids are checked then
        said = wait_for_log(log, lambda t: "the ids of upstream 'greeter' are checked" in t, "greeter's check")
        assert "[greeter] kept out of service" not in said, said
    finally:
        stop(proc)


LISTS_WHEN_TOLD = """
import sys
from pathlib import Path

import anyio

up, listing, go = (Path(p) for p in sys.argv[1:4])
if not up.exists():
    sys.exit("not up yet")
from mcp.server.mcpserver import MCPServer


async def held(ctx, call_next):
    if ctx.method == "tools/list" and not go.exists():  # the watcher's listing waits for the test
        listing.touch()
        while not go.exists():
            await anyio.sleep(0.05)
    return await call_next(ctx)


server = MCPServer("greeter", middleware=[held])


@server.prompt()
def greeting() -> str:
    return "hello"


@server.tool()
def greet(name: str) -> str:
    return f"hello {name}"


server.run()
"""


async def test_a_reload_leaves_the_check_of_an_upstream_just_back_to_the_watcher(tmp_path: Path) -> None:
    """An upstream down at start comes back (the supervisor) and a reload runs before the watcher has checked
    its ids: the reload leaves them pending for that check, which keeps it out of service (before, the
    reload checked it itself, kept the policy in force over its own error and dropped the pending ids, so
    the upstream was served under a policy naming what it does not serve)."""
    up, listing, go = tmp_path / "up", tmp_path / "listing", tmp_path / "go"
    greeter = {"command": sys.executable, "args": ["-c", LISTS_WHEN_TOLD, str(up), str(listing), str(go)]}
    config = write(tmp_path / "mcp.json", {"mcpServers": {"deck": DECK, "greeter": greeter}})
    policy = write(tmp_path / "policy.json", {"skills": {"greeter/greetin": {"admit": {"roles": ["admin"]}}}})
    log = tmp_path / "gateway.log"
    proc, match = start_gateway(config, log, "--policy", str(policy))
    try:
        assert (match["up"], match["total"]) == ("1", "2"), log.read_text()
        up.touch()  # the supervisor connects it on its next try; the watcher's listing of it then waits
        wait_for_file(listing, "the watcher's listing of greeter")
        said = reload_ended(proc, log, 1)
        assert "reload failed" not in said, said
        assert "the policy in force is kept" not in said, said  # its ids are not this reload's to check
        go.touch()
        said = wait_for_log(log, lambda t: "[greeter] kept out of service" in t, "greeter kept out of service")
        assert "greeter/greetin: no such skill, prompt, resource or resource template of 'greeter'" in said, said
        assert "[greeter] back" not in said, said
    finally:
        stop(proc)


async def test_sighup_swaps_a_good_policy_and_config_in_and_keeps_what_is_in_force_over_a_bad_one(
    tmp_path: Path,
) -> None:
    config = write(tmp_path / "mcp.json", {"mcpServers": {"deck": DECK}})
    policy = write(tmp_path / "policy.json", {"skills": {}})
    log = tmp_path / "gateway.log"
    proc, match = start_gateway(config, log, "--policy", str(policy))
    url = match["url"]
    try:
        assert (await load_and_call(url, "deck/pdf-forms", "jobs/get_job")) == (["deck/pdf-forms"], False)

        # a good policy and a good config: both in force
        write(policy, {"skills": {"deck/pdf-forms": {"admit": {"roles": ["admin"]}}}, "public_tools": ["jobs/get_job"]})
        write(config, {"mcpServers": {"deck": DECK, "jobs": JOBS}})
        said = reloaded(proc, log, 1)
        assert "[jobs] connected" in said, said
        assert "the new policy is in force" in said, said
        assert "reloaded: 2 of 2 servers" in said, said
        assert (await load_and_call(url, "deck/pdf-forms", "jobs/get_job")) == ([], True)

        # a bad policy (a typo that would open the skill to everyone) and a bad config: both kept
        write(policy, {"skills": {"deck/pdf-form": {"admit": {"roles": ["admin"]}}}, "public_tools": ["jobs/get_job"]})
        write(config, '{"mcpServers": {"deck": ')
        said = reloaded(proc, log, 2)
        assert f"error: reload: {config}: not a readable JSON file" in said, said
        assert "the config in force is kept" in said, said
        assert "skills.deck/pdf-form: no such skill, prompt, resource or resource template of 'deck'" in said, said
        assert "error: reload: the policy in force is kept" in said, said
        assert (await load_and_call(url, "deck/pdf-forms", "jobs/get_job")) == ([], True)

        # an upstream removed from the config is no longer served
        write(config, {"mcpServers": {"deck": DECK}})
        said = reloaded(proc, log, 3)
        assert "[jobs] removed" in said, said
        assert "reloaded: 1 of 1 servers" in said, said
        assert (await load_and_call(url, "deck/pdf-forms", "jobs/get_job")) == ([], False)
    finally:
        stop(proc)


async def test_watch_config_re_reads_a_changed_policy_without_a_signal(tmp_path: Path) -> None:
    config = write(tmp_path / "mcp.json", {"mcpServers": {"deck": DECK}})
    policy = write(tmp_path / "policy.json", {"skills": {}})
    log = tmp_path / "gateway.log"
    proc, match = start_gateway(config, log, "--policy", str(policy), "--watch-config")
    try:
        assert (await load_and_call(match["url"], "deck/pdf-forms", "deck/none"))[0] == ["deck/pdf-forms"]
        write(policy, {"skills": {"deck/pdf-forms": {"admit": {"roles": ["admin"]}}}})
        said = wait_for_log(log, lambda t: "reloaded: " in t, "a reload on the policy file's change")
        assert "the new policy is in force" in said, said
        assert (await load_and_call(match["url"], "deck/pdf-forms", "deck/none"))[0] == []
    finally:
        stop(proc)
