"""The official Python SDK 1.x client (mcp 1.30, the release most Python hosts still run) against
``skilldeck serve --http``: it initialises (2025-11-25), reads a text and a binary skill file byte for
byte, and hears ``notifications/resources/list_changed`` when a skill is added, with the server's
default JSON replies and with ``--sse-responses``. The client runs from the venv that holds
``mcp-server-time`` (it needs mcp 1.x; the project venv keeps mcp 2.3), driven by ``sdk1_client.py``.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ..server.helpers import CLI, REPO, start_serve, stop, wait_for_startup, write_skill

pytestmark = pytest.mark.thirdparty

CLIENT = Path(__file__).with_name("sdk1_client.py")


@pytest.mark.parametrize("framing", ["json", "sse"])
def test_python_sdk1_client_reads_skills_and_hears_changes(
    time_server_python: Path, tmp_path: Path, framing: str
) -> None:
    pack = tmp_path / "pack"
    shutil.copytree(REPO / "examples" / "skills", pack)
    log = tmp_path / "serve.log"
    extra = ["--sse-responses"] if framing == "sse" else []
    proc = start_serve([*CLI, "serve", str(pack), "--http", "127.0.0.1:0", "--watch", *extra], log)
    try:
        match = wait_for_startup(proc, log, 60)
        assert not isinstance(match, str), match
        client = subprocess.Popen(
            [str(time_server_python), str(CLIENT), match.group(2)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert client.stdout is not None
            first = client.stdout.readline()
            assert first, f"the 1.x client ended early:\n{client.stderr.read() if client.stderr else ''}"
            ready = json.loads(first)["ready"]
            assert ready["protocol"] == "2025-11-25"
            assert "io.modelcontextprotocol/skills" in ready["extensions"], ready
            assert ready["skill_md"] == (pack / "job-search" / "SKILL.md").read_text(encoding="utf-8")
            logo = (pack / "pdf-forms" / "assets" / "logo.png").read_bytes()
            assert base64.b64decode(ready["logo_b64"]) == logo
            write_skill(pack, "added-while-connected")
            out, err = client.communicate(timeout=60)
        finally:
            if client.poll() is None:
                client.kill()
                client.wait()
        assert client.returncode == 0, err
        assert json.loads(out.strip().splitlines()[-1]) == {"list_changed": True}, out
    finally:
        stop(proc)
