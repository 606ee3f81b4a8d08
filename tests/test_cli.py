"""``skilldeck serve``: startup line, refused skills reported, the good ones served."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from queue import Empty, Queue

import pytest
from mcp import Client

from skilldeck.cli import main
from skilldeck.host.wire import SkillsWire

from .server.helpers import write_skill


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
        proc.terminate()
        proc.wait(timeout=10)


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
CLI = [sys.executable, "-m", "skilldeck.cli"]


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
    assert result.stderr.strip() == ""
