"""Two callers on one gateway: what a policy admits to one is neither found, loaded, read, listed nor called by the other.

The gateway is served over streamable HTTP on loopback with a real ``TokenVerifier`` (bearer tokens
map to ``AccessToken`` s), so every request is answered for the caller its token names, as with
``skilldeck gateway --jwt-jwks``: Alice (tenant ``acme``, ``roles: [user]``) and Bob (tenant
``globex``, ``roles: [admin]``), each on their own connection to the same gateway process. The
policy's default identity is an administrator, so a caller taken for the default one (or for the
other caller) shows up as seeing too much. Bob always asks first: the gateway has then built his
audience's index, and Alice's answers show whether she is given it.

Upstreams are real in-process ``MCPServer`` s that record every request they receive; the tests
count the ``tools/call`` requests that reached them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.shared.exceptions import MCPError

from skilldeck.gateway import GatewayService, create_gateway
from skilldeck.host import Host, InProcessServer, ServerSpec
from skilldeck.host._wire import SkillsWire
from skilldeck.serving._audit import NOT_GRANTED
from skilldeck.serving._policy import load_policy
from skilldeck.serving._runner import run_http

from ..host.hostile import HostileServer
from ..server.test_context_aware_http import StaticTokenVerifier, connect
from .gateway_clients_support import ToolSkill, check_structured, jobs_upstream, recording_upstream, refusal, tool_calls

pytestmark = pytest.mark.anyio

ERAS = ["auto", "legacy"]
ALICE = "tok-alice-acme-user"
BOB = "tok-bob-globex-admin"
TOKENS = {
    ALICE: AccessToken(
        token=ALICE, client_id="app", scopes=["mcp"], subject="alice", claims={"tenant": "acme", "roles": ["user"]}
    ),
    BOB: AccessToken(
        token=BOB, client_id="app", scopes=["mcp"], subject="bob", claims={"tenant": "globex", "roles": ["admin"]}
    ),
}

POLICY = """\
claims: {tenant: tenant, roles: roles}
default_identity: {subject: local, tenant: globex, roles: [admin]}
skills:
  jobs/job-search:
    admit: {roles: [admin]}
    tools: [jobs/search_jobs]
  notes/*:
    admit: {roles: [admin]}
  files/file-help:
    tools: [files/read_file, files/write_file]
    routes:
      - when: {roles: [admin]}
        allow: all
      - when: {roles: [user]}
        allow: [files/read_file]
"""


def notes_upstream() -> HostileServer:
    """``notes``: the ``meeting-notes`` skill (naming ``list_notes``) and that tool."""

    def list_notes(week: int) -> str:
        """List the meeting notes of one week."""
        return f"notes of week {week}"

    skill = ToolSkill("meeting-notes", "list_notes", "Summarise the meeting notes of a week.")
    return recording_upstream("notes", skill, tools=[list_notes])


def file_help_upstream() -> HostileServer:
    """``files``: the ``file-help`` skill naming ``read_file`` and ``write_file``, and both tools."""

    def read_file(path: str) -> str:
        """Read a text file from the shared store."""
        return f"contents of {path}"

    def write_file(path: str, content: str) -> str:
        """Write a text file to the shared store."""
        return f"wrote {len(content)} characters to {path}"

    skill = ToolSkill("file-help", "read_file write_file", "Read and write text files in the shared store.")
    return recording_upstream("files", skill, tools=[read_file, write_file])


@dataclass
class Served:
    url: str
    service: GatewayService
    upstreams: dict[str, HostileServer]


@asynccontextmanager
async def serving(tmp_path: Path, policy: str = POLICY) -> AsyncIterator[Served]:
    """The gateway over jobs, notes and files, under ``policy``, on a free loopback port with token verification."""
    path = tmp_path / "policy.yaml"
    path.write_text(policy)
    upstreams = {"jobs": jobs_upstream(), "notes": notes_upstream(), "files": file_help_upstream()}
    specs = [ServerSpec(label, InProcessServer(u.server), timeout=10) for label, u in upstreams.items()]
    async with Host(specs) as host:
        service = GatewayService(host, policy=load_policy(path), encoder=None)
        server, _ = create_gateway(
            service,
            token_verifier=StaticTokenVerifier(TOKENS),
            auth=AuthSettings(
                issuer_url="https://auth.example.test",
                resource_server_url="http://127.0.0.1/mcp",
                validate_token_resource=False,
                required_scopes=None,
            ),
        )
        async with anyio.create_task_group() as tg:
            ready: list[str] = []
            tg.start_soon(lambda: run_http(server, port=0, on_ready=ready.append))
            with anyio.fail_after(10):
                while not ready:
                    await anyio.sleep(0.02)
            yield Served(ready[0], service, upstreams)
            tg.cancel_scope.cancel()


async def card_ids(c: Client, query: str) -> set[str]:
    found = check_structured("find", await c.call_tool("find", {"query": query, "limit": 20}))
    return {card["id"] for card in found["cards"]}


async def skill_uris(c: Client) -> set[str]:
    return {s["uri"] for s in (await SkillsWire(c).list_skills())["skills"]}


HIDDEN = ("jobs/job-search", "notes/meeting-notes")  # by its own id, and by the rule notes/*
HIDDEN_URIS = ("skill://jobs/job-search/SKILL.md", "skill://notes/meeting-notes/SKILL.md")


@pytest.mark.parametrize("era", ERAS)
async def test_a_skill_admitted_to_admins_is_hidden_from_a_user_by_id_by_label_rule_and_by_uri(
    tmp_path: Path, era: str
) -> None:
    async with serving(tmp_path) as gw:
        async with connect(gw.url, BOB, era) as bob:
            assert set(HIDDEN) <= await card_ids(bob, "search job postings and summarise meeting notes")
            loaded = check_structured("load", await bob.call_tool("load", {"ids": list(HIDDEN)}))
            assert [s["id"] for s in loaded["skills"]] == list(HIDDEN), loaded
            read = check_structured(
                "read_skill_file", await bob.call_tool("read_skill_file", {"skill": HIDDEN[0], "path": "SKILL.md"})
            )
            assert "job-search" in read["text"], read
            assert set(HIDDEN_URIS) <= await skill_uris(bob)
            body = await bob.read_resource(HIDDEN_URIS[1])
            assert "meeting-notes" in getattr(body.contents[0], "text", ""), body
        async with connect(gw.url, ALICE, era) as alice:
            ids = await card_ids(alice, "search job postings and summarise meeting notes")
            assert not set(HIDDEN) & ids, ids
            assert "files/file-help" in ids, ids  # what is admitted to her is found
            for skill in HIDDEN:  # what Bob loaded is his: before she loads anything, and after
                text = refusal(
                    await alice.call_tool("read_skill_file", {"skill": skill, "path": "SKILL.md"}),
                    "is not a loaded skill",
                )
                assert "(loaded: none)" in text, text
            result = await alice.call_tool("load", {"ids": list(HIDDEN)})
            assert "Refused jobs/job-search: no card has the id" in refusal(result, "no card has the id")
            assert isinstance(result.structured_content, dict)
            assert [r["id"] for r in result.structured_content["refused"]] == list(HIDDEN)
            for skill in HIDDEN:
                text = refusal(
                    await alice.call_tool("read_skill_file", {"skill": skill, "path": "SKILL.md"}),
                    "is not a loaded skill",
                )
                assert "(loaded: none)" in text, text
            uris = await skill_uris(alice)
            assert "skill://files/file-help/SKILL.md" in uris, uris
            assert not {u for u in uris if u.startswith(("skill://jobs/", "skill://notes/"))}, uris
            listed = {str(r.uri) for r in (await alice.list_resources()).resources}
            assert not {u for u in listed if u.startswith(("skill://jobs/", "skill://notes/"))}, listed
            for uri in HIDDEN_URIS:
                with pytest.raises(MCPError) as hidden:
                    await alice.read_resource(uri)
                assert hidden.value.error.code == -32602, hidden.value.error
                with pytest.raises(MCPError) as hidden:
                    await SkillsWire(alice).get_skill(uri)
                assert hidden.value.error.code == -32602, hidden.value.error
            text = refusal(
                await alice.call_tool("call", {"tool": "jobs/search_jobs", "arguments": {"query": "python"}}),
                "never listed a tool named 'search_jobs'",
            )
            assert "active tools: none" in text, text
    assert tool_calls(gw.upstreams["jobs"]) == []


async def test_a_call_of_a_tool_the_policy_hides_is_an_audited_policy_refusal(tmp_path: Path) -> None:
    """The caller's gate lists only what the policy routes to it, so a hidden tool is refused there (and the
    caller learns no more than for a tool that does not exist); the audit records it as a policy decision."""
    async with serving(tmp_path) as gw:
        async with connect(gw.url, BOB, "auto") as bob:
            loaded = check_structured("load", await bob.call_tool("load", {"ids": ["files/file-help"]}))
            assert [t["name"] for t in loaded["tools"]] == ["files/read_file", "files/write_file"], loaded
            written = await bob.call_tool(
                "call", {"tool": "files/write_file", "arguments": {"path": "a", "content": "b"}}
            )
            assert not written.is_error, written
        async with connect(gw.url, ALICE, "legacy") as alice:
            loaded = check_structured("load", await alice.call_tool("load", {"ids": ["files/file-help"]}))
            assert [t["name"] for t in loaded["tools"]] == ["files/read_file"], loaded
            assert [(r["id"], r["reason"]) for r in loaded["refused"]] == [
                ("files/write_file", "files/write_file is hidden by the policy (no rule routes it to you)")
            ], loaded
            for name in ("files/write_file", "jobs/delete_job"):  # routed to admins only; routed to no one
                refusal(
                    await alice.call_tool("call", {"tool": name, "arguments": {"path": "a", "content": "b"}}),
                    f"never listed a tool named {name.partition('/')[2]!r}",
                )
            refusal(await alice.call_tool("files__write_file", {"path": "a", "content": "b"}), "never listed")
            bare = {"tool": "write_file", "arguments": {"path": "a", "content": "b"}}  # by the bare name
            refusal(await alice.call_tool("call", bare), "no server lists a tool named 'write_file'")
            refusal(await alice.call_tool("call", {"tool": "files/no_such_tool", "arguments": {}}), "never listed")
            assert not (await alice.call_tool("files__read_file", {"path": "a"})).is_error
    records = [(r["subject"], r["tool"], r["decision"], r["reason"]) for r in gw.service.audit.records]
    assert records == [
        ("bob", "files/write_file", "allowed", "granted"),
        ("alice", "files/write_file", "refused", NOT_GRANTED),
        ("alice", "jobs/delete_job", "refused", NOT_GRANTED),
        ("alice", "files/write_file", "refused", NOT_GRANTED),
        ("alice", "files/write_file", "refused", NOT_GRANTED),
        ("alice", "files/read_file", "allowed", "granted"),
    ], records  # a tool no upstream lists is no policy decision: not audited
    assert {r["roles"][0] for r in gw.service.audit.refused()} == {"user"}
    assert [p["name"] for p in tool_calls(gw.upstreams["files"])] == ["write_file", "read_file"]
    assert tool_calls(gw.upstreams["jobs"]) == []


async def test_each_audience_gets_its_own_index_and_routes_whoever_asks_first(tmp_path: Path) -> None:
    """Alice asks first this time: Bob's answers must not be hers (nor hers his), and their activations stay apart."""
    async with serving(tmp_path) as gw:
        async with connect(gw.url, ALICE, "auto") as alice, connect(gw.url, BOB, "auto") as bob:
            assert not set(HIDDEN) & await card_ids(alice, "search job postings and summarise meeting notes")
            assert set(HIDDEN) <= await card_ids(bob, "search job postings and summarise meeting notes")
            for c in (alice, bob):
                check_structured("load", await c.call_tool("load", {"ids": ["files/file-help"]}))
            arguments = {"path": "a", "content": "b"}
            refusal(await alice.call_tool("call", {"tool": "files/write_file", "arguments": arguments}), "never listed")
            assert not (await bob.call_tool("call", {"tool": "files/write_file", "arguments": arguments})).is_error
            check_structured("load", await bob.call_tool("load", {"ids": ["jobs/job-search"]}))
            refusal(
                await alice.call_tool("call", {"tool": "jobs/search_jobs", "arguments": {"query": "x"}}),
                "never listed a tool named 'search_jobs'",
            )
            assert not (await bob.call_tool("call", {"tool": "jobs/search_jobs", "arguments": {"query": "x"}})).is_error
        assert len(gw.service.indexes) == 2
    assert [p["name"] for p in tool_calls(gw.upstreams["files"])] == ["write_file"]
    assert [p["name"] for p in tool_calls(gw.upstreams["jobs"])] == ["search_jobs"]
