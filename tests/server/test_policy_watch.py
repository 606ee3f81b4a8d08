"""``serve --policy --watch``: editing the policy file reaches connected clients; a bad edit is refused."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_types import ServerNotification

from skilldeck.host.wire import SkillsWire

from .helpers import write_skill

HIDE_BETA = "default_identity: {subject: me, roles: [user]}\nskills:\n  beta:\n    admit: {roles: [admin]}\n"
SHOW_ALL = "default_identity: {subject: me, roles: [user]}\nskills:\n  beta: {}\n"
BROKEN = "default_identity: {subject: me, roles: [user]}\nskills:\n  nonexistent: {}\n"


async def uris(wire: SkillsWire) -> list[str]:
    return [s["uri"] for s in (await wire.list_skills())["skills"]]


@pytest.mark.anyio
async def test_policy_edits_apply_live_and_bad_ones_are_refused(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    write_skill(skills, "alpha")
    write_skill(skills, "beta")
    policy = tmp_path / "policy.yaml"
    policy.write_text(HIDE_BETA)
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, ServerNotification) and message.method == "notifications/resources/list_changed":
            changed.set()

    stderr = (tmp_path / "stderr.txt").open("w+")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "skilldeck.cli", "serve", str(skills), "--policy", str(policy), "--watch"],
    )
    from mcp.client.stdio import stdio_client

    async with Client(
        stdio_client(params, errlog=stderr), mode="legacy", cache=None, message_handler=on_message
    ) as client:
        wire = SkillsWire(client)
        assert await uris(wire) == ["skill://alpha/SKILL.md"]
        await anyio.sleep(0.5)  # let the watcher start
        policy.write_text(SHOW_ALL)
        with anyio.fail_after(15):
            await changed.wait()
        assert await uris(wire) == ["skill://alpha/SKILL.md", "skill://beta/SKILL.md"]
        policy.write_text(BROKEN)
        with anyio.fail_after(15):
            while "policy not applied" not in (tmp_path / "stderr.txt").read_text():
                await anyio.sleep(0.1)
        assert await uris(wire) == ["skill://alpha/SKILL.md", "skill://beta/SKILL.md"]  # the previous one stays
    stderr.close()
    assert "skills.nonexistent: no such skill is served" in (tmp_path / "stderr.txt").read_text()
