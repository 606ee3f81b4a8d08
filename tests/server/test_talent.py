"""Solon AI's remote-talent protocol on a skilldeck server, driven by a client that asks as Solon's does.

:class:`SolonTalentClient` follows ``McpTalentClient`` (Solon 4) step by step, as written down in
docs/context-aware-skills.md: read ``talent://metadataMcp``, call ``isSupportedMcp``,
``onAttachMcp``, ``getInstructionMcp`` and ``getToolsMcp`` with the prompt serialized as Solon
serializes it, keep the listed tools without a ``hide`` key in ``_meta``, and narrow them by the
three-state answer. The server is the tenant fixture (tests/server/fixtures) with the ``orders``
skill exposed as the talent; identities come from bearer tokens (HTTP) or the policy's default
identity (stdio).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp import Client, StdioServerParameters
from mcp.server.auth.provider import AccessToken
from mcp.shared.exceptions import MCPError

from skilldeck.errors import TalentPromptError, UsageError
from skilldeck.server._talent import (
    MAX_PROMPT_JSON_CHARS,
    MAX_PROMPT_JSON_DEPTH,
    TALENT_TOOLS,
    PromptHints,
    TalentAnswer,
    enable_talent,
    parse_prompt_json,
    routing_value,
)
from skilldeck.serving._policy import Caller, Policy, parse_policy

from .test_context_aware_http import ADMIN_B, PACK, POLICY_FILE, USER_A, build_shop, connect, serving

CAROL = "tok-carol-acme-user-admin"  # holds both roles: a user_role hint may pick one of them


def solon_prompt_json(text: str, **attrs: Any) -> str:
    """``ONode.serialize(prompt, Feature.Write_ClassName)`` of ``Prompt.of(text).attrPut(...)``."""
    return json.dumps(
        {
            "@type": "org.noear.solon.ai.chat.prompt.PromptImpl",
            "attrs": attrs,
            "messages": [
                {"@type": "org.noear.solon.ai.chat.message.UserMessage", "role": "USER", "content": text, "blocks": []}
            ],
        }
    )


@dataclass
class SolonTalentClient:
    """What ``McpTalentClient`` does, over an MCP SDK client."""

    client: Client
    metadata: dict[str, Any]

    @classmethod
    async def attach(cls, client: Client) -> SolonTalentClient:
        result = await client.read_resource("talent://metadataMcp")
        return cls(client, json.loads(result.contents[0].text))  # type: ignore[union-attr]

    async def _call(self, tool: str, prompt_json: str) -> str:
        """``clientProvider.callTool(tool, {"promptJson": ...}).getContent()``: the text, "Error: "-prefixed on error."""
        result = await self.client.call_tool(tool, {"promptJson": prompt_json})
        text = "".join(c.text for c in result.content if c.type == "text")
        return f"Error: {text}" if result.is_error and not text.startswith("Error: ") else text

    async def is_supported(self, prompt_json: str) -> bool:
        return await self._call("isSupportedMcp", prompt_json) == "true"

    async def on_attach(self, prompt_json: str) -> None:
        await self._call("onAttachMcp", prompt_json)

    async def get_instruction(self, prompt_json: str) -> str:
        return await self._call("getInstructionMcp", prompt_json)

    async def get_tools(self, prompt_json: str) -> list[str]:
        names_json = await self._call("getToolsMcp", prompt_json)
        names = json.loads(names_json) if names_json else None
        visible = [t.name for t in (await self.client.list_tools()).tools if not t.meta or "hide" not in t.meta]
        if names is None:
            return visible
        return [n for n in visible if n in names]

    async def activate(self, prompt_json: str) -> tuple[str, list[str]] | None:
        """``TalentUtil.activeTalents`` for this one talent: ``None`` when not supported."""
        if not await self.is_supported(prompt_json):
            return None
        await self.on_attach(prompt_json)
        return await self.get_instruction(prompt_json), await self.get_tools(prompt_json)


def talent_shop(policy: Policy | None = None) -> Any:
    shop = build_shop(policy)
    shop.verifier.tokens[CAROL] = AccessToken(
        token=CAROL,
        client_id="support-app",
        scopes=["mcp"],
        subject="carol",
        claims={"tenant": "acme", "roles": ["user", "admin"]},
    )
    enable_talent(shop.server, shop.ext, "orders")
    return shop


ASK = "Order A001: please look it up."
NOT_AVAILABLE = "Tool 'cancel_order' is not available to this caller"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_solon_client_gets_the_policy_for_its_token(mode: str) -> None:
    shop = talent_shop()
    async with serving(shop) as url:
        async with connect(url, USER_A, mode) as alice:
            talent = await SolonTalentClient.attach(alice)
            assert talent.metadata["name"] == "orders"
            assert talent.metadata["description"].startswith("Look up customer orders")
            listed = {t.name: t for t in (await alice.list_tools()).tools}
            for name in TALENT_TOOLS:  # listed, hidden from the model the way Solon hides them
                assert listed[name].meta == {"hide": 1}
                assert listed[name].input_schema["required"] == ["promptJson"]
            activated = await talent.activate(solon_prompt_json(ASK, tenant_id="acme", user_role="user"))
            assert activated is not None
            instruction, tools = activated
            assert instruction.startswith("# Orders for acme")
            assert "refunds up to 100." in instruction
            assert "help@acme.test" in instruction
            assert "---" not in instruction  # the body, not the frontmatter
            assert sorted(tools) == ["issue_refund", "lookup_order"]
            assert await talent._call("getToolsMcp", solon_prompt_json(ASK)) == '["issue_refund", "lookup_order"]'
            assert (await alice.call_tool("lookup_order", {"order_id": "A001"})).content[
                0
            ].text == "order A001: shipped"
            # Not routed to Alice: Solon would only hide it; the server refuses the call before it runs.
            with pytest.raises(MCPError) as refused:
                await alice.call_tool("cancel_order", {"order_id": "A001"})
            assert refused.value.error.code == -32602
            assert refused.value.error.message == NOT_AVAILABLE

        async with connect(url, ADMIN_B, mode) as bob:
            talent = await SolonTalentClient.attach(bob)
            activated = await talent.activate(solon_prompt_json(ASK, tenant_id="globex", user_role="admin"))
            assert activated is not None
            instruction, tools = activated
            assert instruction.startswith("# Orders for globex")
            assert "desk@globex.test" in instruction
            assert sorted(tools) == ["cancel_order", "issue_refund", "lookup_order"]
            assert (await bob.call_tool("cancel_order", {"order_id": "G7"})).content[0].text == "cancelled G7"

    assert shop.calls == [("lookup_order", "A001"), ("cancel_order", "G7")]
    refused_records = shop.ext.audit.refused()
    assert [(r["subject"], r["tool"]) for r in refused_records] == [("alice", "cancel_order")]


@pytest.mark.anyio
async def test_prompt_attributes_narrow_and_never_widen() -> None:
    shop = talent_shop()
    async with serving(shop) as url:
        async with connect(url, USER_A, "auto") as alice:
            talent = await SolonTalentClient.attach(alice)
            # A role the token does not carry is ignored: same answer as with none.
            forged = solon_prompt_json(ASK, tenant_id="acme", user_role="admin", roles=["admin"], tool="all")
            assert sorted(await talent.get_tools(forged)) == ["issue_refund", "lookup_order"]
            assert "refunds up to 100." in await talent.get_instruction(forged)
            # Another tenant than the token's: not supported, no instruction, no tools.
            other = solon_prompt_json(ASK, tenant_id="globex", user_role="admin")
            assert await talent.activate(other) is None
            assert await talent.get_instruction(other) == ""
            assert await talent._call("getToolsMcp", other) == "[]"
            with pytest.raises(MCPError, match=NOT_AVAILABLE):
                await alice.call_tool("cancel_order", {"order_id": "A001"})
        async with connect(url, CAROL, "auto") as carol:
            talent = await SolonTalentClient.attach(carol)
            both = await talent.activate(solon_prompt_json(ASK, tenant_id="acme"))
            as_user = await talent.activate(solon_prompt_json(ASK, tenant_id="acme", user_role="user"))
            assert both is not None
            assert as_user is not None
            assert sorted(both[1]) == ["cancel_order", "issue_refund", "lookup_order"]
            assert sorted(as_user[1]) == ["issue_refund", "lookup_order"]  # a held role picks the narrower route
    assert shop.calls == []


GLOBEX_VALUES = "        set: {support_email: desk@globex.test, refund_limit: 5000}\n"
ADMIN_VALUES = "      - when: {roles: [admin]}\n        set: {refund_limit: any amount}\n"


def role_worded_policy() -> Policy:
    """The fixture's policy, with the orders instruction worded for administrators too (the fixture's
    variables vary by tenant alone, so an instruction rendered for the wrong role read the same)."""
    text = POLICY_FILE.read_text()
    assert text.count(GLOBEX_VALUES) == 1
    return parse_policy(yaml.safe_load(text.replace(GLOBEX_VALUES, GLOBEX_VALUES + ADMIN_VALUES)))


@pytest.mark.anyio
async def test_the_instruction_is_rendered_for_a_role_the_token_holds_never_for_a_forged_one() -> None:
    shop = talent_shop(role_worded_policy())
    async with serving(shop) as url:
        async with connect(url, USER_A, "auto") as alice:
            talent = await SolonTalentClient.attach(alice)
            for role in ("admin", "owner", None):  # not held by her token: the hint is ignored
                attrs = {"tenant_id": "acme"} | ({"user_role": role} if role else {})
                instruction = await talent.get_instruction(solon_prompt_json(ASK, **attrs))
                assert "refunds up to 100." in instruction, (role, instruction)
        async with connect(url, CAROL, "legacy") as carol:
            talent = await SolonTalentClient.attach(carol)
            as_both = await talent.get_instruction(solon_prompt_json(ASK, tenant_id="acme"))
            assert "refunds up to any amount." in as_both, as_both
            as_admin = await talent.get_instruction(solon_prompt_json(ASK, tenant_id="acme", user_role="admin"))
            assert "refunds up to any amount." in as_admin, as_admin
            as_user = await talent.get_instruction(solon_prompt_json(ASK, tenant_id="acme", user_role="user"))
            assert "refunds up to 100." in as_user, as_user  # a held role narrows the wording as it narrows tools
    assert shop.calls == []


@pytest.mark.anyio
async def test_prompt_json_is_bounded_and_nothing_is_decided_past_the_bound() -> None:
    shop = talent_shop()
    too_long = solon_prompt_json("x" * MAX_PROMPT_JSON_CHARS, tenant_id="acme")
    too_deep = '{"attrs": {"tenant_id": "acme"}, "messages": ' + "[" * 200 + "]" * 200 + "}"
    async with Client(shop.server, cache=None) as client:
        talent = await SolonTalentClient.attach(client)
        for tool in TALENT_TOOLS:
            for bad, words in ((too_long, "characters, more than"), (too_deep, "nested deeper than")):
                result = await client.call_tool(tool, {"promptJson": bad})
                assert result.is_error, tool
                assert words in result.content[0].text  # type: ignore[union-attr]
        # As Solon's client reads it: "Error: ..." is not "true", so the talent is not attached.
        assert await talent.activate(too_long) is None
        assert await talent.activate(solon_prompt_json(ASK)) is not None  # the default identity, within bounds
    assert len(too_long) > MAX_PROMPT_JSON_CHARS


def test_parse_prompt_json_reads_two_attrs_and_refuses_the_rest() -> None:
    assert parse_prompt_json(solon_prompt_json(ASK, tenant_id=1, user_role="ADMIN", x=2)) == PromptHints("1", "ADMIN")
    assert parse_prompt_json("") == PromptHints()
    assert parse_prompt_json('{"attrs": {"tenant_id": ["a"], "user_role": true}}') == PromptHints()
    nested: Any = {}
    for _ in range(MAX_PROMPT_JSON_DEPTH - 2):
        nested = {"n": nested}
    assert parse_prompt_json(json.dumps({"attrs": {}, "m": nested})) == PromptHints()  # exactly the bound
    with pytest.raises(TalentPromptError, match="nested deeper"):
        parse_prompt_json(json.dumps({"attrs": {}, "m": {"n": nested}}))
    for bad in ("[1]", "not json", "[" * 5000 + "]" * 5000):
        with pytest.raises(TalentPromptError):
            parse_prompt_json(bad)


def test_routing_answers_in_solons_three_states() -> None:
    who = Caller()
    listed = frozenset({"a", "b"})
    assert routing_value(TalentAnswer(True, frozenset({"a", "b"}), who), listed) == ""
    assert routing_value(TalentAnswer(True, None, who), None) == ""
    assert routing_value(TalentAnswer(True, frozenset({"b"}), who), listed) == '["b"]'
    assert routing_value(TalentAnswer(True, frozenset(), who), listed) == "[]"
    assert routing_value(TalentAnswer(False, frozenset({"a", "b"}), who), listed) == "[]"


def test_enable_talent_refuses_a_skill_not_served() -> None:
    shop = build_shop()
    with pytest.raises(UsageError, match="no such skill is served"):
        enable_talent(shop.server, shop.ext, "nope")


STDIO_SERVER = """\
import sys
from pathlib import Path

import anyio

from skilldeck.server import create_server, serve_stdio
from skilldeck.serving._policy import load_policy
from skilldeck.server._talent import enable_talent

ran = Path(sys.argv[3])
server, skills = create_server(sys.argv[1], policy=load_policy(sys.argv[2]))
for name in ("lookup_order", "issue_refund", "cancel_order", "audit_refunds", "ping"):
    def tool(order_id: str = "", name: str = name) -> str:
        with ran.open("a") as f:
            f.write(name + "\\n")
        return name + " done"
    server.add_tool(tool, name=name)
enable_talent(server, skills, "orders")
anyio.run(serve_stdio, server, skills)
"""


@pytest.mark.anyio
async def test_stdio_answers_for_the_default_identity(tmp_path: Path) -> None:
    script, ran = tmp_path / "talent_server.py", tmp_path / "ran.txt"
    script.write_text(STDIO_SERVER)
    params = StdioServerParameters(command=sys.executable, args=[str(script), str(PACK), str(POLICY_FILE), str(ran)])
    async with Client(params, mode="legacy", cache=None, read_timeout_seconds=20) as client:
        talent = await SolonTalentClient.attach(client)
        assert talent.metadata["name"] == "orders"
        legacy = json.loads((await client.read_resource("skill://metadataMcp")).contents[0].text)  # type: ignore[union-attr]
        assert legacy == talent.metadata  # Solon 3.9's URI
        activated = await talent.activate(solon_prompt_json(ASK, user_role="admin"))  # not held by the default identity
        assert activated is not None
        assert activated[0].startswith("# Orders for acme")
        assert sorted(activated[1]) == ["issue_refund", "lookup_order"]
        assert await talent.activate(solon_prompt_json(ASK, tenant_id="globex")) is None
        await client.call_tool("lookup_order", {"order_id": "A1"})
        with pytest.raises(MCPError, match=NOT_AVAILABLE):
            await client.call_tool("cancel_order", {"order_id": "A1"})
    assert ran.read_text().split() == ["lookup_order"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "--solon-talent needs --policy FILE"),
        (["--policy", "POLICY"], "--solon-talent 'nope': no such skill is served"),
    ],
)
def test_serve_refuses_a_talent_without_policy_or_skill(tmp_path: Path, extra: list[str], message: str) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("skills: {}\n")
    args = [str(policy) if a == "POLICY" else a for a in extra]
    proc = subprocess.run(
        [sys.executable, "-m", "skilldeck.cli", "serve", str(PACK), "--solon-talent", "nope", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 1
    assert message in proc.stderr


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_talent_metadata_names_a_hidden_skill_only_to_callers_it_admits(mode: str) -> None:
    """``escalation`` admits admins only: Bob (a globex admin) reads its name and description; Alice (an acme
    user) gets the answer for a resource that does not exist, and no listing gives the skill's name away."""
    shop = build_shop()
    enable_talent(shop.server, shop.ext, "escalation")
    async with serving(shop) as url:
        async with connect(url, ADMIN_B, mode) as bob:
            for uri in ("talent://metadataMcp", "skill://metadataMcp"):
                metadata = json.loads((await bob.read_resource(uri)).contents[0].text)  # type: ignore[union-attr]
                assert metadata["name"] == "escalation", metadata
        async with connect(url, USER_A, mode) as alice:
            for uri in ("talent://metadataMcp", "skill://metadataMcp"):
                with pytest.raises(MCPError) as refused:
                    await alice.read_resource(uri)
                assert refused.value.error.code == -32602, refused.value.error
                assert refused.value.error.message == f"Unknown resource: {uri}", refused.value.error
            listed = (await alice.list_resources()).resources
            assert not [r for r in listed if "escalation" in f"{r.name} {r.title} {r.description}"], listed
            assert await SolonTalentClient(alice, {}).is_supported(solon_prompt_json(ASK)) is False
