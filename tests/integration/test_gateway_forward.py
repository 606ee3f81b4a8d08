"""``server-everything``'s resources, templates, prompts and completions through ``skilldeck gateway``.

The gateway is started as a user would (``skilldeck gateway --config mcp.json --http 127.0.0.1:0``)
in front of ``@modelcontextprotocol/server-everything`` from npm (a 2025-11-25 server with static
resources, two resource templates, four prompts and completions). One module-scoped gateway
serves every test.

* the Python SDK client in both eras: every resource and template listed as
  ``upstream://everything/...``, a static resource and a template's expansion read, each prompt
  listed as ``everything__NAME``, a prompt got (its embedded resource under the gateway's URI),
  completions of a prompt argument (with a context argument) and of a template variable;
* MCP Inspector 2.12 CLI in both ``--protocol-era``\\ s: ``resources/list``,
  ``resources/templates/list``, ``resources/read``, ``prompts/list`` and ``prompts/get``; a pinned
  long-running tool called through the gateway, and (2025-11-25) ``logging/setLevel`` forwarded;
  a pinned tool that samples, called by Inspector (which declares no sampling): the upstream's
  question is refused to it and the call ends, never hangs;
* a pinned tool whose result links to resources: each link names the gateway's URI, and the Python
  client reads it through the gateway.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from mcp.client import Client
from mcp_types import (
    BlobResourceContents,
    PromptReference,
    ResourceLink,
    ResourceTemplateReference,
    TextResourceContents,
)

from ..server.helpers import start_gateway, stop

pytestmark = [pytest.mark.thirdparty, pytest.mark.anyio]

ERAS = ["modern", "legacy"]
ARCHITECTURE = "upstream://everything/demo://resource/static/document/architecture.md"
TEXT_TEMPLATE = "upstream://everything/demo://resource/dynamic/text/{resourceId}"
LONG_RUNNING = "trigger-long-running-operation"
SAMPLING = "trigger-sampling-request"
LINKS = "get-resource-links"
PROMPTS = {
    "everything__simple-prompt",
    "everything__args-prompt",
    "everything__completable-prompt",
    "everything__resource-prompt",
}


@pytest.fixture(scope="module")
def gateway(npx: str, npm_server_specs: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("gateway-forward")
    npm_env = {"npm_config_yes": "true", "npm_config_loglevel": "error", "npm_config_update_notifier": "false"}
    everything = {"command": npx, "args": ["-y", npm_server_specs["everything"]], "env": npm_env, "timeout": 120}
    path = tmp / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"everything": everything}}))
    log_path = tmp / "gateway.log"
    pins = ["--pin", f"everything/{LONG_RUNNING}", "--pin", f"everything/{SAMPLING}", "--pin", f"everything/{LINKS}"]
    proc, match = start_gateway(path, log_path, *pins, timeout=240)
    try:
        assert (match["up"], match["total"]) == ("1", "1"), log_path.read_text(errors="replace")
        yield match["url"]
        assert proc.poll() is None, f"the gateway exited during the tests:\n{log_path.read_text(errors='replace')}"
    finally:
        stop(proc)


def client(url: str, era: str) -> Client:
    return Client(url, mode="auto" if era == "modern" else "legacy", cache=None)


def inspector_for(run_npx: Any, inspector_cmd: list[str], url: str, era: str) -> Callable[..., dict[str, Any]]:
    """Inspector 2.12 CLI against ``url`` in ``era``: each call's JSON ``result`` (the run must succeed)."""

    def inspector(*args: str) -> dict[str, Any]:
        result = run_npx(*inspector_cmd, url, "--transport", "http", "--protocol-era", era, "--format", "json", *args)
        assert result.returncode == 0, result.describe()
        payload: dict[str, Any] = json.loads(result.stdout)["result"]
        return payload

    return inspector


@pytest.mark.parametrize("era", ERAS)
async def test_the_links_of_a_tool_result_are_read_through_the_gateway(gateway: str, era: str) -> None:
    async with client(gateway, era) as c:
        result = await c.call_tool(f"everything__{LINKS}", {"count": 2})
        assert not result.is_error, result.content
        links = [block for block in result.content if isinstance(block, ResourceLink)]
        assert len(links) == 2, result.content
        for link in links:
            assert link.uri.startswith("upstream://everything/demo://resource/dynamic/"), link.uri
            [content] = (await c.read_resource(link.uri)).contents
            assert content.uri == link.uri
            assert isinstance(content, TextResourceContents | BlobResourceContents)


@pytest.mark.parametrize("era", ERAS)
async def test_python_client_reads_server_everythings_resources(gateway: str, era: str) -> None:
    async with client(gateway, era) as c:
        resources = (await c.list_resources()).resources
        uris = [r.uri for r in resources]
        assert ARCHITECTURE in uris, uris
        assert all(u.startswith("upstream://everything/demo://") for u in uris), uris
        assert all((r.meta or {}).get("dev.skilldeck/server") == "everything" for r in resources)
        templates = [t.uri_template for t in (await c.list_resource_templates()).resource_templates]
        assert TEXT_TEMPLATE in templates, templates

        [document] = (await c.read_resource(ARCHITECTURE)).contents
        assert isinstance(document, TextResourceContents)
        assert document.uri == ARCHITECTURE
        assert document.text.strip()
        expanded = TEXT_TEMPLATE.replace("{resourceId}", "3")
        [text] = (await c.read_resource(expanded)).contents
        assert isinstance(text, TextResourceContents)
        assert (text.uri, text.text.startswith("Resource 3")) == (expanded, True), text


@pytest.mark.parametrize("era", ERAS)
async def test_python_client_gets_server_everythings_prompts_and_completions(gateway: str, era: str) -> None:
    async with client(gateway, era) as c:
        assert {p.name for p in (await c.list_prompts()).prompts} == PROMPTS
        args = await c.get_prompt("everything__args-prompt", {"city": "Paris"})
        assert [m.content.text for m in args.messages if m.content.type == "text"] == ["What's weather in Paris?"]
        embedded = await c.get_prompt("everything__resource-prompt", {"resourceType": "Text", "resourceId": "2"})
        resources = [m.content.resource for m in embedded.messages if m.content.type == "resource"]
        assert [r.uri for r in resources] == [TEXT_TEMPLATE.replace("{resourceId}", "2")]

        team = PromptReference(type="ref/prompt", name="everything__completable-prompt")
        department = await c.complete(team, {"name": "department", "value": "E"})
        assert department.completion.values == ["Engineering"]
        names = await c.complete(team, {"name": "name", "value": ""}, {"department": "Engineering"})
        assert names.completion.values == ["Alice", "Bob", "Charlie"]
        template = ResourceTemplateReference(type="ref/resource", uri=TEXT_TEMPLATE)
        assert (await c.complete(template, {"name": "resourceId", "value": "1"})).completion.values == ["1"]


@pytest.mark.parametrize("era", ERAS)
def test_inspector_lists_reads_and_gets_through_the_gateway(
    run_npx: Any, inspector_cmd: list[str], gateway: str, era: str
) -> None:
    inspector = inspector_for(run_npx, inspector_cmd, gateway, era)

    resources = inspector("--method", "resources/list")["resources"]
    assert ARCHITECTURE in [r["uri"] for r in resources], resources
    templates = inspector("--method", "resources/templates/list")["resourceTemplates"]
    assert TEXT_TEMPLATE in [t["uriTemplate"] for t in templates], templates
    [read] = inspector("--method", "resources/read", "--uri", ARCHITECTURE)["contents"]
    assert read["uri"] == ARCHITECTURE
    assert read["text"].strip()
    prompts = inspector("--method", "prompts/list")["prompts"]
    assert {p["name"] for p in prompts} == PROMPTS
    got = inspector(
        "--method", "prompts/get", "--prompt-name", "everything__args-prompt", "--prompt-args", "city=Paris"
    )  # fmt: skip
    assert got["messages"] == [{"role": "user", "content": {"type": "text", "text": "What's weather in Paris?"}}]
    assert got["_meta"]["dev.skilldeck/server"] == "everything"


@pytest.mark.parametrize("era", ERAS)
def test_inspector_calls_a_pinned_upstream_tool_and_sets_the_log_level(
    run_npx: Any, inspector_cmd: list[str], gateway: str, era: str
) -> None:
    inspector = inspector_for(run_npx, inspector_cmd, gateway, era)

    listed = [t["name"] for t in inspector("--method", "tools/list")["tools"]]
    pinned = f"everything__{LONG_RUNNING}"
    assert [name for name in listed if name.startswith("everything__")] == [
        pinned,
        f"everything__{SAMPLING}",
        f"everything__{LINKS}",
    ]
    assert {"find", "load", "read_skill_file", "call"} <= set(listed), listed
    called = inspector(
        "--method", "tools/call", "--tool-name", pinned, "--tool-args-json", '{"duration": 1, "steps": 2}'
    )
    assert not called.get("isError"), called
    assert "Long running operation completed" in json.dumps(called["content"]), called
    if era == "legacy":  # logging/setLevel is a 2025-11-25 request; the gateway keeps it and forwards it upstream
        assert inspector("--method", "logging/setLevel", "--log-level", "debug") == {}


@pytest.mark.parametrize("era", ERAS)
def test_inspector_without_sampling_gets_the_upstreams_question_refused_not_a_hang(
    run_npx: Any, inspector_cmd: list[str], gateway: str, era: str
) -> None:
    """Inspector's CLI declares no sampling: the question server-everything asks during the call is refused
    to it, and the call ends with what the upstream made of the refusal."""
    result = run_npx(
        *inspector_cmd, gateway, "--transport", "http", "--protocol-era", era, "--format", "json",
        "--method", "tools/call", "--tool-name", f"everything__{SAMPLING}", "--tool-args-json", '{"prompt": "hi"}',
    )  # fmt: skip
    assert result.returncode == 5, result.describe()  # Inspector's exit code for a tool result with isError
    called = json.loads(result.stdout)["result"]
    assert called["isError"] is True, called
    [text] = [c["text"] for c in called["content"]]
    assert "sampling/createMessage refused" in text, called
    assert "did not declare the sampling capability" in text, called
