"""A proxied call declares its caller's capabilities upstream, never the gateway's own (issue 25, item 4),
and so does a forwarded prompt, resource read or completion (issue 42, item 7).

On 2026-07-28 a client declares its capabilities on every request, and a server decides from them
what it may ask: a tool that needs sampling answers ``-32021`` to a client without it, and a tool
that asks through ``input_required`` asks only what the client declared. The gateway's host declares
sampling, elicitation and roots on its upstream sessions (so that it can relay questions); each
call it proxies must declare the caller's instead, whichever era the caller speaks (a 2025-11-25
caller's from its ``initialize``). The upstream (:mod:`.transparency_upstream`) is a real SDK
server reached in-process at 2026-07-28; the clients are the official Python SDK client.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    CreateMessageResult,
    InputRequiredResult,
    PromptReference,
    ResourceTemplateReference,
    TextContent,
)

from skilldeck.host._on_behalf import RELAYED_CAPABILITIES, relayed_capabilities

from .gateway_clients_support import client, open_gateway
from .relay_upstream import Asker
from .test_relay_requests import Downstream, opened
from .transparency_upstream import transparency_upstream

pytestmark = [
    pytest.mark.anyio,
    # sampling and roots are deprecated as of 2026-07-28; exercised on purpose
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

ERAS = ["modern", "legacy"]
PINS = [("see", "declared"), ("see", "needs_sampling"), ("see", "ask_what_you_can")]


def text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def relayed(seen: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in seen.items() if key in RELAYED_CAPABILITIES}


CALLERS = {
    "nothing": ({}, {}),
    "sampling only": ({"sampling_callback": "sampling"}, {"sampling": {}}),
    "all three": (
        {"sampling_callback": "sampling", "elicitation_callback": "elicitation", "list_roots_callback": "roots"},
        {"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {"listChanged": True}},
    ),
}


def callbacks(names: dict[str, str]) -> dict[str, Any]:
    me = Downstream("ann")
    return {key: getattr(me, method) for key, method in names.items()}


@pytest.mark.parametrize("caller", list(CALLERS))
@pytest.mark.parametrize("era", ERAS)
async def test_the_upstream_sees_what_the_caller_declared(era: str, caller: str) -> None:
    wanted, expected = CALLERS[caller]
    async with (
        open_gateway({"see": transparency_upstream()}, pinned=PINS, server_requests=True) as gw,
        client(gw, era, **callbacks(wanted)) as c,
    ):
        assert gw.host.connections.connected["see"].protocol_version == "2026-07-28"
        with anyio.fail_after(20):
            result = await c.call_tool("see__declared", {})
            assert not result.is_error, result
            assert relayed(json.loads(text(result))) == expected
            # through the call meta-tool too
            assert not (await c.call_tool("load", {"ids": ["see/declared"]})).is_error
            result = await c.call_tool("call", {"tool": "see/declared", "arguments": {}})
            assert relayed(json.loads(text(result))) == expected


@pytest.mark.parametrize("caller", list(CALLERS))
@pytest.mark.parametrize("era", ERAS)
async def test_a_forwarded_prompt_resource_and_completion_declare_what_the_caller_declared(
    era: str, caller: str
) -> None:
    """``prompts/get``, ``resources/read`` and ``completion/complete`` are sent on the caller's behalf as a
    tool call is: the upstream never hears of a capability the caller lacks (issue 42, item 7)."""
    wanted, expected = CALLERS[caller]
    async with (
        open_gateway({"see": transparency_upstream()}, pinned=PINS, server_requests=True) as gw,
        client(gw, era, **callbacks(wanted)) as c,
    ):
        with anyio.fail_after(20):
            prompt = await c.get_prompt("see__declared_prompt")
            assert relayed(json.loads(prompt.messages[0].content.text)) == expected  # type: ignore[union-attr]
            read = await c.read_resource("upstream://see/see://declared/it")
            assert relayed(json.loads(read.contents[0].text)) == expected  # type: ignore[union-attr]
            reference = ResourceTemplateReference(type="ref/resource", uri="upstream://see/see://declared/{what}")
            completed = await c.complete(reference, {"name": "what", "value": ""})
            assert relayed(json.loads(completed.completion.values[0])) == expected
            completed = await c.complete(
                PromptReference(type="ref/prompt", name="see__declared_prompt"), {"name": "x", "value": ""}
            )
            assert relayed(json.loads(completed.completion.values[0])) == expected


async def test_the_gateway_declares_its_own_capabilities_outside_a_proxied_call() -> None:
    """The host's own requests (listing, reading) still declare the host's capabilities."""
    async with open_gateway({"see": transparency_upstream()}, pinned=PINS, server_requests=True) as gw:
        result = await gw.host.sessions["see"].client.call_tool("declared", {})
        assert set(relayed(json.loads(text(result)))) == set(RELAYED_CAPABILITIES)


async def test_a_modern_caller_without_sampling_gets_the_upstreams_minus_32021_and_nothing_runs() -> None:
    """As the upstream answers such a client directly: ``-32021`` naming ``sampling``, with the upstream's words."""
    async with (
        open_gateway({"see": transparency_upstream()}, pinned=PINS, server_requests=True) as gw,
        client(gw, "modern") as c,
    ):
        with anyio.fail_after(20), pytest.raises(MCPError) as raised:
            await c.call_tool("see__needs_sampling", {})
    error = raised.value.error
    assert error.code == MISSING_REQUIRED_CLIENT_CAPABILITY
    assert "required by resolver" in error.message, error.message  # the upstream's refusal, not the gateway's
    assert (error.data or {}).get("requiredCapabilities") == {"sampling": {}}


async def test_a_legacy_caller_without_sampling_hears_why_in_its_result() -> None:
    """2025-11-25 has no ``-32021``: the model of a legacy caller hears the upstream's reason in the result."""
    async with (
        open_gateway({"see": transparency_upstream()}, pinned=PINS, server_requests=True) as gw,
        client(gw, "legacy") as c,
    ):
        with anyio.fail_after(20):
            result = await c.call_tool("see__needs_sampling", {})
    assert result.is_error, result
    assert "did not declare the sampling capability" in text(result), text(result)


@pytest.mark.parametrize("era", ERAS)
async def test_a_caller_that_declared_only_sampling_is_asked_only_for_a_sample(era: str) -> None:
    """Not the whole call ended with ``-32021`` because the upstream also asked for an elicitation."""
    me = Downstream("ann")
    async with (
        open_gateway({"see": transparency_upstream()}, pinned=PINS, server_requests=True) as gw,
        client(gw, era, sampling_callback=me.sampling) as c,
    ):
        with anyio.fail_after(20):
            if era == "modern":
                first = await c.session.call_tool("see__ask_what_you_can", {}, allow_input_required=True)
                assert isinstance(first, InputRequiredResult), first
                assert set(first.input_requests or {}) == {"word"}
                answer = CreateMessageResult(role="assistant", content=TextContent(type="text", text="w"), model="m")
                done = await c.session.call_tool(
                    "see__ask_what_you_can",
                    {},
                    input_responses={"word": answer},
                    request_state=first.request_state,
                    allow_input_required=True,
                )
                assert text(done) == "answered word", done
            result = await c.call_tool("see__ask_what_you_can", {})  # the SDK's driver answers the rounds
            assert not result.is_error, result
            assert text(result) == "answered word"
    assert me.asked == ["sampling: a word"]


@pytest.mark.parametrize("era", ERAS)
async def test_the_relay_still_refuses_what_an_upstream_asks_beyond_the_declaration(era: str) -> None:
    """A 2025-11-25 upstream's session declared all three capabilities at its handshake, for every
    caller, so it asks regardless: it gets an error for what the caller did not declare, and the caller
    is never asked."""
    asker, me = Asker(), Downstream("ann")
    async with opened(asker, "legacy") as gw, client(gw, era, sampling_callback=me.sampling) as c:
        with anyio.fail_after(20):
            result = await c.call_tool("ask__greet", {})
    assert result.is_error, result
    assert "did not declare the form elicitation" in text(result), text(result)
    assert me.asked == []


def test_only_the_relayed_kinds_change_and_only_to_what_both_declared() -> None:
    own = {"sampling": {}, "elicitation": {"form": {}}, "roots": {"listChanged": True}, "extensions": {"x": {}}}
    assert relayed_capabilities(own, {}) == {"extensions": {"x": {}}}
    caller = {"sampling": {"tools": {}}, "experimental": {"y": {}}, "extensions": {"z": {}}}
    assert relayed_capabilities(own, caller) == {"extensions": {"x": {}}, "sampling": {"tools": {}}}
    # a kind the host does not relay is never claimed, whatever the caller declared
    assert relayed_capabilities({"extensions": {"x": {}}}, {"sampling": {}, "roots": {}}) == {"extensions": {"x": {}}}
