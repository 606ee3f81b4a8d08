"""A 2026-07-28 listener hears of a change only when its caller may see a skill the change concerns.

The server runs in process under a policy whose default identity (tenant ``acme``) is not admitted
to the skill ``secret``; its listener must not learn that ``secret`` changed, and must still hear of
a change to a skill it sees, of a removed skill it saw, and of a policy change. The events carry
the names over the Redis channel too (``encode_event``/``decode_event``), so every replica scopes
them the same way.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server.subscriptions import ResourcesListChanged, ToolsListChanged

from skilldeck.server import create_server
from skilldeck.serving._policy import parse_policy
from skilldeck.serving._redis_bus import decode_event, encode_event
from skilldeck.serving._scoping import (
    MAX_SCOPED_NAMES,
    ScopedResourcesListChanged,
    ScopedToolsListChanged,
    event_names,
    scoped_events,
)

from .helpers import write_skill

pytestmark = pytest.mark.anyio

POLICY = {
    "default_identity": {"subject": "desk", "tenant": "acme"},
    "skills": {"secret": {"admit": [{"tenant": "other"}]}},
}


async def heard(sub: Any) -> int:
    """How many events are waiting on ``sub`` (in process, a publish has queued them by the time reload returns)."""
    count = 0
    while True:
        with anyio.move_on_after(0.5):
            await sub.__anext__()
            count += 1
            continue
        return count


async def only_what_acme_sees_is_heard(root: Path, ext: Any, sub: Any) -> None:
    """A change to ``secret`` (which acme may not see) is not heard on ``sub``; one to ``one`` (which it may) is."""
    write_skill(root, "secret", description="Changed where acme cannot see.")
    assert (await ext.reload()).changed == ("skill://secret/SKILL.md",)
    assert await heard(sub) == 0  # the change concerns only a skill acme may not see
    write_skill(root, "one", description="Changed where acme can see.")
    assert (await ext.reload()).changed == ("skill://one/SKILL.md",)
    assert await heard(sub) == 1


async def test_a_listener_hears_only_changes_its_caller_may_see(tmp_path: Path) -> None:
    write_skill(tmp_path, "one")
    write_skill(tmp_path, "secret")
    server, ext = create_server(tmp_path, policy=parse_policy(POLICY))
    async with Client(server, mode="auto", cache=None) as client, client.listen(resources_list_changed=True) as sub:
        await only_what_acme_sees_is_heard(tmp_path, ext, sub)

        shutil.rmtree(tmp_path / "one")
        assert (await ext.reload()).removed == ("skill://one/SKILL.md",)
        assert await heard(sub) == 1  # a skill it saw went away

        await ext.set_policy(None)  # a policy change concerns everyone
        assert await heard(sub) == 1


async def test_without_a_policy_every_listener_hears_every_change(tmp_path: Path) -> None:
    write_skill(tmp_path, "secret")
    server, ext = create_server(tmp_path)
    async with Client(server, mode="auto", cache=None) as client, client.listen(resources_list_changed=True) as sub:
        write_skill(tmp_path, "secret", description="Changed.")
        assert await ext.reload()
        assert await heard(sub) == 1


async def test_a_stream_opened_before_a_policy_applied_is_scoped_by_it(tmp_path: Path) -> None:
    write_skill(tmp_path, "one")
    write_skill(tmp_path, "secret")
    server, ext = create_server(tmp_path)
    async with Client(server, mode="auto", cache=None) as client, client.listen(resources_list_changed=True) as sub:
        await ext.set_policy(parse_policy(POLICY))
        assert await heard(sub) == 1  # the policy change itself concerns everyone
        await only_what_acme_sees_is_heard(tmp_path, ext, sub)  # judged under the policy in force now


def test_scoped_events_keep_their_names_across_the_redis_channel() -> None:
    resources, tools = scoped_events({"a", "b"}, tools=True)
    assert isinstance(resources, ScopedResourcesListChanged)
    assert isinstance(tools, ScopedToolsListChanged)
    for event in (resources, tools):
        back = decode_event(encode_event(event))
        assert back is not None
        assert (type(back), event_names(back)) == (type(event), frozenset({"a", "b"}))
    # unscoped stays unscoped; too many names, or names too long for one message, tell everyone
    assert type(decode_event(encode_event(ResourcesListChanged()))) is ResourcesListChanged
    at_bound = {f"s-{i}" for i in range(MAX_SCOPED_NAMES)}  # N names: still scoped, across the channel too
    for event in scoped_events(at_bound, tools=True):
        assert event_names(event) == at_bound
        assert event_names(decode_event(encode_event(event))) == at_bound  # type: ignore[arg-type]
    many = {f"skill-{i}" for i in range(MAX_SCOPED_NAMES + 1)}  # N+1: everyone is told
    assert [type(e) for e in scoped_events(many, tools=True)] == [ResourcesListChanged, ToolsListChanged]
    long = {f"{i:02d}" + "x" * 100 for i in range(MAX_SCOPED_NAMES)}
    assert event_names(decode_event(encode_event(scoped_events(long, tools=False)[0]))) is None  # type: ignore[arg-type]
