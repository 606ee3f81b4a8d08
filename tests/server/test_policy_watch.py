"""``serve --policy --watch``: editing the policy file reaches connected clients; a bad edit is refused."""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.server.mcpserver import MCPServer
from mcp_types import ServerNotification

from skilldeck.host._wire import SkillsWire
from skilldeck.server import DirectorySource, SkillsExtension, watch_and_reload
from skilldeck.serving._policy import Policy, load_policy

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


class _ObservedServer(MCPServer[Any]):
    """A real server that notes, each time its tools are listed, the policy its extension has in force."""

    def __init__(self, extension: SkillsExtension) -> None:
        super().__init__("observed", extensions=[extension], middleware=[extension.middleware])
        self.extension = extension
        self.in_force_while_listing: list[Policy | None] = []

    async def list_tools(self) -> Any:
        self.in_force_while_listing.append(self.extension.policy)
        return await super().list_tools()


@pytest.mark.anyio
async def test_a_policy_being_checked_is_never_in_force(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    write_skill(skills, "alpha")
    write_skill(skills, "beta")
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(HIDE_BETA)
    in_force = load_policy(policy_file)
    extension = SkillsExtension(DirectorySource(skills), policy=in_force)
    server = _ObservedServer(extension)
    errors: list[Exception] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            partial(watch_and_reload, extension, server=server, policy_path=policy_file, on_policy_error=errors.append)
        )
        await anyio.sleep(0.5)  # let the watcher start
        policy_file.write_text(BROKEN)
        with anyio.fail_after(15):
            while not errors:
                await anyio.sleep(0.05)
        tg.cancel_scope.cancel()
    assert "skills.nonexistent: no such skill is served" in str(errors[0])
    assert server.in_force_while_listing == [in_force]  # checked while the previous policy stayed in force
    assert extension.policy is in_force
