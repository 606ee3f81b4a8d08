"""``skilldeck serve``: startup line, refused skills reported, the good ones served."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from queue import Empty, Queue

import pytest
from mcp import Client

from skilldeck.cli import main
from skilldeck.host._wire import SkillsWire

from .server.helpers import CLI, POST_HEADERS, cli_env, initialize_request, stop, write_skill


@pytest.mark.anyio
async def test_serve_http_reports_bad_skills_and_serves_good_ones(tmp_path: Path) -> None:
    write_skill(tmp_path, "good")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: not-bad\ndescription: x\n---\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "skilldeck.cli", "serve", str(tmp_path), "--http", "127.0.0.1:0"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        lines: list[str] = []
        queue: Queue[str] = Queue()
        assert proc.stderr is not None
        threading.Thread(target=lambda: [queue.put(x) for x in proc.stderr], daemon=True).start()  # type: ignore[union-attr]
        deadline = time.monotonic() + 20
        url = None
        while time.monotonic() < deadline and url is None:
            try:
                line = queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except Empty:
                break
            lines.append(line)
            match = re.search(r"serving (\d+) skills from .* at (http://\S+)", line)
            if match:
                assert match.group(1) == "1"
                url = match.group(2)
        assert url, "".join(lines)
        refused = [line for line in lines if line.startswith("refused")]
        assert refused
        assert str(bad / "SKILL.md") in refused[0]
        assert "must equal its folder name 'bad'" in refused[0]
        async with Client(url, cache=None) as client:
            page = await SkillsWire(client).list_skills()
            assert [s["uri"] for s in page["skills"]] == ["skill://good/SKILL.md"]
    finally:
        stop(proc)


def test_serve_rejects_bad_arguments(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as info:
        main(["serve", str(tmp_path), "--http", "nonsense"])
    assert info.value.code == 2
    assert "HOST:PORT" in capsys.readouterr().err
    assert main(["serve", str(tmp_path / "missing")]) == 1
    assert "is not a folder" in capsys.readouterr().err


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "serve" in capsys.readouterr().err


EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "skills"
WIDE = cli_env()


def test_serve_on_a_port_in_use_says_so_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [*CLI, "serve", str(EXAMPLES), "--http", f"127.0.0.1:{port}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode != 0
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert f"port {port} on 127.0.0.1 is in use" in lines[0]
    assert "pick another port" in lines[0]


def _with_stdout_closed(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run the CLI with a standard output nobody reads (as ``… | head -1`` leaves it)."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the first write breaks the pipe
    try:
        return subprocess.run([*CLI, *argv], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "argv",
    [
        ["skills", "--json", "--", *CLI, "serve", str(EXAMPLES)],  # plain print
        ["skills", "--", *CLI, "serve", str(EXAMPLES)],  # rich tables
        ["ask", "Find senior Java roles in Costa Rica"],  # rich, after a decision
    ],
    ids=["skills-json", "skills-table", "ask"],
)
def test_a_closed_stdout_ends_quietly_with_141(argv: list[str]) -> None:
    result = _with_stdout_closed(argv)
    assert result.returncode == 141, result.stderr
    assert "Traceback" not in result.stderr
    assert "BrokenPipeError" not in result.stderr
    # nothing but what the stdio server itself said (passed on under its label)
    assert all("(stderr):" in line for line in result.stderr.splitlines()), result.stderr


def test_serve_says_when_it_finds_no_skills_and_why_a_lowercase_skill_md_is_not_one(tmp_path: Path) -> None:
    lower = tmp_path / "notes"
    lower.mkdir()
    (lower / "skill.md").write_text("---\nname: notes\ndescription: x\n---\n")
    result = subprocess.run(
        [*CLI, "serve", str(tmp_path)], input="", capture_output=True, text=True, timeout=60, env=WIDE
    )
    assert result.returncode == 0
    lines = result.stderr.splitlines()
    assert f"refused {lower / 'skill.md'}: not a skill: the file must be named SKILL.md" in lines[0]
    assert lines[1].startswith(f"warning no skills found in {tmp_path}: a skill is a folder holding a SKILL.md")
    assert "serving 0 skills" in lines[2]


def test_skills_passes_on_what_a_stdio_server_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_skill(tmp_path, "good")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: not-bad\ndescription: x\n---\n")
    assert main(["skills", "--", *CLI, "serve", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "python/good" in captured.out  # the label of a stdio server is its command
    err = [line for line in captured.err.splitlines() if "(stderr):" in line]
    assert any(f"refused {bad / 'SKILL.md'}: 'name' 'not-bad' must equal its folder name 'bad'" in e for e in err)


POLICY_HIDE = (
    "default_identity: {subject: me, tenant: acme, roles: [user]}\nskills:\n  beta:\n    admit: {roles: [admin]}\n"
)
POLICY_SHOW = "default_identity: {subject: me, tenant: acme, roles: [user]}\nskills:\n  beta: {}\n"


def test_serve_counts_what_the_policy_leaves_and_logs_a_policy_applied_live(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    write_skill(skills, "alpha")
    write_skill(skills, "beta")
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY_HIDE)
    log = tmp_path / "stderr.txt"
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            [*CLI, "serve", str(skills), "--policy", str(policy), "--watch"],
            stdin=subprocess.PIPE,  # held open: the stdio server runs until it closes
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=WIDE,
        )
    try:

        def wait_for(text: str) -> str:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                found = [line for line in log.read_text().splitlines() if text in line]
                if found:
                    return found[0]
                assert proc.poll() is None, log.read_text()
                time.sleep(0.1)
            raise AssertionError(f"no {text!r} line in:\n{log.read_text()}")

        startup = wait_for("skilldeck: serving")
        assert "serving 2 skills" in startup
        assert "policy: the default identity (tenant acme, roles user) sees 1 of 2" in startup
        time.sleep(1.0)  # let the watcher start
        policy.write_text(POLICY_SHOW)
        applied = wait_for("policy applied:")
        assert (
            applied == f"policy applied: {policy} (policy: the default identity (tenant acme, roles user) sees 2 of 2)"
        )
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_version_flag_names_the_installed_package(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"skilldeck {metadata.version('skilldeck')}"


def _post(url: str, body: dict[str, object], headers: dict[str, str] | None = None) -> dict[str, object]:
    """One raw JSON-RPC POST; the answer whether it comes as JSON or as one SSE event."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={**POST_HEADERS, **(headers or {})},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
        if response.headers["content-type"].startswith("text/event-stream"):
            text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    message = json.loads(text)
    assert isinstance(message, dict)
    return message["result"]


def test_server_info_carries_the_package_version_in_both_eras_raw() -> None:
    proc = subprocess.Popen(
        [*CLI, "serve", str(EXAMPLES), "--http", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=WIDE,
    )
    try:
        assert proc.stderr is not None
        url = None
        for line in proc.stderr:  # the startup line comes once the port is bound
            match = re.search(r"serving \d+ skills from .* at (http://\S+)", line)
            if match:
                url = match.group(1)
                break
        assert url, "no startup line"
        expected = {"name": "skilldeck", "version": metadata.version("skilldeck")}
        legacy = _post(url, initialize_request("raw", "1"))
        assert legacy["protocolVersion"] == "2025-11-25"
        assert legacy["serverInfo"] == expected
        # the declaration stands in both places a legacy host may look (see docs/skills-server.md, "Legacy hosts")
        capabilities = legacy["capabilities"]
        assert isinstance(capabilities, dict)
        assert capabilities["extensions"] == {"io.modelcontextprotocol/skills": {"directoryRead": True}}
        assert capabilities["experimental"] == {"io.modelcontextprotocol/skills": {"directoryRead": True}}
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        modern = _post(
            url,
            {"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {"_meta": meta}},
            {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"},
        )
        assert modern["_meta"] == {"io.modelcontextprotocol/serverInfo": expected}  # type: ignore[comparison-overlap]
    finally:
        stop(proc)


def test_every_command_runs_through_its_own_handler() -> None:
    import argparse

    from skilldeck.cli import _build_parser

    parser = _build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(commands.choices) == {
        "serve",
        "demo",
        "skills",
        "load",
        "ask",
        "select",
        "snapshot",
        "gateway",
        "servers",
        "clients",
        "history",
        "login",
        "logout",
        "validate",
        "new",
    }
    for name, sub in commands.choices.items():
        assert callable(sub.get_default("handler")), name
        assert sub.description, f"skilldeck {name} --help has no description line"
        assert sub.description in " ".join(sub.format_help().split()), name


def test_stdio_command_after_double_dash_is_split_by_the_parser() -> None:
    from skilldeck.cli import _build_parser

    args = _build_parser().parse_args(["load", "--all-files", "--", "srv", "--flag", "--", "x"])
    assert (args.server, args.skill, args.server_command) == (None, None, ["srv", "--flag", "--", "x"])
    assert _build_parser().parse_args(["skills", "http://h/mcp"]).server_command is None


def test_errors_map_to_exit_codes_in_one_place() -> None:
    from skilldeck.cli._exits import ExitCode, exit_for
    from skilldeck.errors import (
        BudgetExceeded,
        ConfigError,
        CrossOriginRead,
        DynamicSkillRefused,
        EntryError,
        NotApproved,
        SkillError,
        ToolNotActive,
        VerificationError,
    )

    digest = VerificationError("digest mismatch", uri="skill://a/SKILL.md", check="digest", label="docs")
    assert exit_for(digest) == (ExitCode.VERIFICATION, "verification failed (digest)")
    assert exit_for(BudgetExceeded("over", label="docs"))[0] == ExitCode.BUDGET == 5
    for refused in (NotApproved("no"), CrossOriginRead("no"), DynamicSkillRefused("no")):
        assert exit_for(refused) == (ExitCode.REFUSED, "refused")
    assert exit_for(ToolNotActive("no")) == (ExitCode.REFUSED, "refused by the tool gate")
    for other in (ConfigError("bad"), EntryError("bad", label="docs"), SkillError("bad")):
        assert exit_for(other) == (ExitCode.INPUT, "error")
    assert [int(c) for c in (ExitCode.OK, ExitCode.USAGE, ExitCode.UNREACHABLE, ExitCode.BROKEN_PIPE)] == [0, 2, 3, 141]


def test_serve_watch_reports_a_new_broken_skill_at_once_and_announces_it_served_when_fixed(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    write_skill(skills, "alpha")
    log = tmp_path / "stderr.txt"
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            [*CLI, "serve", str(skills), "--watch"],
            stdin=subprocess.PIPE,  # held open: the stdio server runs until it closes
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=WIDE,
        )
    try:

        def wait_for(text: str, *, then: Callable[[], object] = lambda: None) -> list[str]:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                lines = log.read_text().splitlines()
                if any(text in line for line in lines):
                    return lines
                assert proc.poll() is None, log.read_text()
                then()
                time.sleep(0.2)
            raise AssertionError(f"no {text!r} line in:\n{log.read_text()}")

        def wait_for_count(text: str, count: int) -> list[str]:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                lines = log.read_text().splitlines()
                if sum(text in line for line in lines) >= count:
                    return lines
                assert proc.poll() is None, log.read_text()
                time.sleep(0.2)
            raise AssertionError(f"fewer than {count} {text!r} lines in:\n{log.read_text()}")

        wait_for("skilldeck: serving 1 skills")
        probe = 0

        def touch() -> None:  # until the watcher is armed, each write is a new skill it may not see
            nonlocal probe
            probe += 1
            write_skill(skills, f"probe-{probe}")

        wait_for("reloaded: ", then=touch)
        broken = skills / "typo"
        broken.mkdir()
        (broken / "SKILL.md").write_text("---\nname: typo\ndescription: [oops\n---\n")  # nothing served changes
        lines = wait_for(f"refused {broken / 'SKILL.md'}: frontmatter is not valid YAML")
        assert sum(f"refused {broken / 'SKILL.md'}" in line for line in lines) == 1
        write_skill(skills, "beta")  # another skill's save reloads the pack: the refusal is not said again
        lines = wait_for("served skill://beta/SKILL.md")
        assert sum(f"refused {broken / 'SKILL.md'}" in line for line in lines) == 1, lines
        (broken / "SKILL.md").write_text("---\nname: typo\ndescription: [still oops\n---\n")  # saved again, broken
        lines = wait_for_count(f"refused {broken / 'SKILL.md'}", 2)
        (broken / "SKILL.md").write_text("---\nname: typo\ndescription: Fixed now.\n---\n")
        lines = wait_for("served skill://typo/SKILL.md")
        assert sum(f"refused {broken / 'SKILL.md'}" in line for line in lines) == 2  # not repeated once fixed
    finally:
        stop(proc)


def test_help_describes_serve_every_option_of_ask_select_snapshot_and_the_timeout_default() -> None:
    import argparse

    from skilldeck.cli import _build_parser

    commands = next(a for a in _build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert "Publish the skills of folders" in (commands["serve"].description or "")
    for name in ("ask", "select", "snapshot", "validate", "new"):
        missing = [a.dest for a in commands[name]._actions if not a.help]
        assert missing == [], (name, missing)
    for name in ("skills", "load"):
        (timeout,) = [a for a in commands[name]._actions if "--timeout" in a.option_strings]
        assert "(default 30)" in (timeout.help or ""), timeout.help
    redis = {
        name: next(a.help or "" for a in commands[name]._actions if "--redis" in a.option_strings)
        for name in ("serve", "gateway")
    }
    assert "fan change events out" in redis["serve"]
    assert "fan" not in redis["gateway"]  # each gateway replica follows its upstreams itself
    assert "share activations" in redis["gateway"]


def test_serve_with_log_format_json_prints_its_start_a_refused_skill_and_a_refused_request_as_json(
    tmp_path: Path,
) -> None:
    from .server.helpers import start_serve, wait_for_startup

    pack = tmp_path / "pack"
    write_skill(pack, "fine")
    (pack / "broken").mkdir()
    (pack / "broken" / "SKILL.md").write_text("no frontmatter\n")
    log = tmp_path / "serve.log"
    proc = start_serve([*CLI, "serve", str(pack), "--http", "127.0.0.1:0", "--log-format", "json"], log)
    try:
        found = wait_for_startup(proc, log, 60)
        assert not isinstance(found, str), found
        url = found.group(2).split('"', 1)[0]
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
        request = urllib.request.Request(url, data=body, headers={**POST_HEADERS, "Host": "evil"}, method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 421
        deadline = time.monotonic() + 30
        while "Invalid Host header" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
    finally:
        stop(proc)
    lines = [json.loads(line) for line in log.read_text().splitlines()]  # every line, or this fails
    levels = [(line["level"], line["message"].split(" ")[0]) for line in lines]
    assert ("warning", "refused") in levels, levels  # the broken skill, as the text form's yellow "refused"
    assert ("info", "skilldeck:") in levels, levels  # the start line
    assert ("warning", "Invalid") in levels, levels  # the SDK's record of the wrong Host header
