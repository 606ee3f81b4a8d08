"""The client the conformance suite drives in client mode: skilldeck's host, as a user would run it.

``conformance client --command "python conformance_client.py" --scenario NAME`` starts a mock
server (and, for ``auth/*``, an authorization server), then runs ``python conformance_client.py URL``
with ``MCP_CONFORMANCE_SCENARIO`` set, ``MCP_CONFORMANCE_CONTEXT`` holding the scenario's client
credentials where it has any, and ``MCP_CONFORMANCE_PROTOCOL_VERSION`` the era it was asked for.

What this script does is what a skilldeck user does:

1. it writes an ``mcpServers`` file naming ``URL`` as the server ``conformance``, with the
   ``"oauth"`` object the scenario calls for (pre-registered ``clientId``/``clientSecret``, or
   ``"grant": "client_credentials"``), under ``$SKILLDECK_HOME``;
2. for an ``auth/*`` scenario that logs in with the authorization-code flow it runs
   ``skilldeck login conformance --config FILE --no-browser`` and plays the browser: it reads the
   authorization URL the command prints and follows its redirects (the suite's authorization server
   approves at once) back to the command's loopback listener;
3. it opens skilldeck's :class:`~skilldeck.host.Host` on that file (the stored tokens, refreshed as
   the host does while serving), and calls the tools the scenario's context names, else every
   listed tool with arguments made from its input schema, through the host's
   :class:`~skilldeck.select.ToolGate` (which refuses arguments the schema does not accept);
   the preservation scenarios' echo tool is handed the other tool's input schema as the host holds it;
4. when the host says a server needs a (new) login (``run skilldeck login ...``: tokens refused, a
   ``403 insufficient_scope``), it logs in again, once, and goes back to step 3.

The host is opened with ``server_requests=True`` (the hook the gateway relays server requests
through), and this script answers as the person at the host would: an ``elicitation/create`` is
accepted with the form's defaults, ``roots/list`` with no roots, sampling is refused.

The era: with ``MCP_CONFORMANCE_PROTOCOL_VERSION`` at ``2025-11-25`` or older the host is opened in
``mode="legacy"`` (the initialize handshake), else in ``mode="auto"`` (2026-07-28 where the server
speaks it). Exit status 0 once the host is connected (a tool call that fails is reported on stderr:
the suite judges the wire), 1 when the server stays unreachable or the login fails, 10 when it still
needs a login after the second; the suite fails a run whose client exits non-zero unless the
scenario expects the client to give up.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx

LABEL = "conformance"
LOGIN_TIMEOUT = 20.0
"""Seconds ``skilldeck login`` waits for this script's "browser" to come back."""

LOGIN_HINT = "run skilldeck login"
"""How the host says a server needs a (new) login: the user runs the command it names, once."""
LOGIN_AGAIN = 10
"""What :func:`use_host` returns when the host asked for a login."""


class _NoFailure:
    reason = ""


_NO_FAILURE = _NoFailure()

# Scenarios whose client logs in with client credentials (machine to machine): no login step.
CLIENT_CREDENTIALS = {"auth/client-credentials-basic"}
# Scenarios where the suite hands pre-registered credentials for the authorization-code flow.
PRE_REGISTERED = {"auth/pre-registration"}
# The client ID metadata document the suite's authorization server expects a client to name (SEP-991):
# a skilldeck user opts into CIMD with the entry's "clientMetadataUrl".
CIMD = {"auth/basic-cimd": "https://conformance-test.local/client-metadata.json"}


def _skilldeck() -> list[str]:
    script = Path(sys.executable).parent / "skilldeck"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "skilldeck.cli"]


def _oauth(scenario: str, context: dict[str, Any]) -> dict[str, Any]:
    if scenario in CLIENT_CREDENTIALS:
        oauth = {
            "grant": "client_credentials",
            "clientId": context["client_id"],
            "clientSecret": context["client_secret"],
        }
        if context.get("issuer"):
            oauth["issuer"] = context["issuer"]
        return oauth
    if scenario in PRE_REGISTERED:
        return {"clientId": context["client_id"], "clientSecret": context["client_secret"]}
    if scenario in CIMD:
        return {"clientMetadataUrl": CIMD[scenario]}
    return {}


def write_config(home: Path, url: str, scenario: str, context: dict[str, Any]) -> Path:
    entry: dict[str, Any] = {"url": url}
    if scenario.startswith("auth/"):
        entry["oauth"] = _oauth(scenario, context)
    path = home / "conformance-mcp.json"
    path.write_text(json.dumps({"mcpServers": {LABEL: entry}}, indent=2))
    return path


def login(config: Path, env: dict[str, str]) -> None:
    """``skilldeck login conformance --config FILE --no-browser``, with this script as the browser."""
    cmd = [*_skilldeck(), "login", LABEL, "--config", str(config), "--no-browser", "--timeout", str(LOGIN_TIMEOUT)]
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    said: list[str] = []
    for line in proc.stderr:
        said.append(line)
        sys.stderr.write(line)
        match = re.match(r"\s*(https?://\S+)\s*$", line)
        if match and "/callback" not in line:
            _browse(match.group(1))
    code = proc.wait(timeout=LOGIN_TIMEOUT + 10)
    if code != 0:
        raise SystemExit(f"skilldeck login exited {code}")


def _browse(url: str) -> None:
    """Open ``url`` as a browser would: follow redirects up to the loopback callback."""
    with httpx.Client(follow_redirects=True, timeout=10.0) as client:
        try:
            response = client.get(url)
            sys.stderr.write(f"browser: {response.status_code} at {response.url}\n")
        except httpx.HTTPError as exc:  # the login command reports what went wrong
            sys.stderr.write(f"browser: {exc!r}\n")


def _value(schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if "default" in schema:
        return schema["default"]
    if "enum" in schema:
        return schema["enum"][0]
    if kind in ("number", "integer"):
        return 1
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return _arguments(schema)
    return "conformance"


def _arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments a tool's input schema accepts: a value for each required property."""
    properties = schema.get("properties") or {}
    return {name: _value(properties.get(name) or {}) for name in schema.get("required") or []}


def _answer_elicitation(params: Any) -> dict[str, Any]:
    """The person's answer to a form: accepted, each field at the default the form gives (SEP-1034)."""
    schema = getattr(params, "requested_schema", None) or {}
    if not isinstance(schema, dict):
        schema = schema.model_dump(by_alias=True, exclude_none=True)
    properties = schema.get("properties") or {}
    return {name: field["default"] for name, field in properties.items() if "default" in field}


async def answer_server_request(label: str, request: Any) -> Any:
    """What the person at this host answers a server's ``elicitation/create``, ``roots/list`` or sampling."""
    from mcp_types import ElicitResult, ErrorData, ListRootsResult

    method = getattr(request, "method", "")
    if method == "elicitation/create":
        return ElicitResult(action="accept", content=_answer_elicitation(request.params))
    if method == "roots/list":
        return ListRootsResult(roots=[])
    return ErrorData(code=-32601, message=f"{method} is not answered by this client")


def planned_calls(tools: list[Any], context: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls to make: those the scenario's context names, else one per listed tool.

    A tool that takes a ``schema`` object (the preservation scenarios' echo tool) is handed the
    input schema of the other listed tool exactly as the host holds it.
    """
    if isinstance(context.get("toolCalls"), list):
        return [(str(c["name"]), dict(c.get("arguments") or {})) for c in context["toolCalls"]]
    schemas = {t.name: dict(t.tool.get("inputSchema") or {}) for t in tools}
    calls = []
    for name, schema in schemas.items():
        arguments = _arguments(schema)
        if "schema" in arguments and (schema.get("properties") or {}).get("schema", {}).get("type") == "object":
            others = [s for n, s in schemas.items() if n != name]
            arguments["schema"] = others[0] if others else {}
        calls.append((name, arguments))
    return calls


async def use_host(config: Path, legacy: bool, context: dict[str, Any]) -> int:
    from mcp.shared.exceptions import MCPError
    from pydantic import ValidationError

    from skilldeck.ask import call_tool
    from skilldeck.errors import GateRefused
    from skilldeck.host import Host, load_config
    from skilldeck.select import ToolGate

    specs = load_config(str(config), timeout=15.0)
    async with Host(specs, mode="legacy" if legacy else "auto", server_requests=True) as host:
        host.answer_server_requests(answer_server_request)
        for failure in host.failures.values():
            print(f"unreachable: {failure.label}: {failure.reason}", file=sys.stderr)
        if host.failures:
            return LOGIN_AGAIN if any(LOGIN_HINT in f.reason for f in host.failures.values()) else 1
        tools = host.tools(LABEL)
        print(f"{LABEL}: {len(tools)} tools: {', '.join(t.name for t in tools)}")
        gate = ToolGate({LABEL: {t.name: t.tool for t in tools}}, [(LABEL, t.name) for t in tools])
        for name, arguments in planned_calls(tools, context):
            try:
                called = await call_tool(host, gate, name, arguments)
            except GateRefused as exc:  # the host's gate: arguments its input schema refuses are never sent
                print(f"{name}: refused by the host, not sent: {exc}", file=sys.stderr)
                continue
            except MCPError as exc:  # the server's answer: the scenario judges it, not this script
                with anyio.move_on_after(2.0 if "closed" in str(exc).lower() else 0):
                    while LABEL not in host.failures:  # a session the host gave up on says why in its failure
                        await anyio.sleep(0.05)
                if LOGIN_HINT in host.failures.get(LABEL, _NO_FAILURE).reason:
                    print(f"{name}: {host.failures[LABEL].reason}", file=sys.stderr)
                    return LOGIN_AGAIN
                print(f"{name}: the server answered {type(exc).__name__}: {exc}", file=sys.stderr)
                continue
            except ValidationError as exc:  # a result the SDK's types refuse (see docs/conformance.md)
                print(f"{name}: the SDK refused the result: {exc}", file=sys.stderr)
                continue
            print(json.dumps(called, ensure_ascii=False))
        return 0


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: conformance_client.py URL (with MCP_CONFORMANCE_SCENARIO set)", file=sys.stderr)
        return 2
    url = argv[1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "")
    home = Path(os.environ.get("SKILLDECK_HOME") or Path.cwd() / "skilldeck-home")
    home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SKILLDECK_HOME": str(home), "SKILLDECK_KEYRING": "0"}
    os.environ.update(env)
    config = write_config(home, url, scenario, context)
    if scenario.startswith("auth/") and scenario not in CLIENT_CREDENTIALS:
        login(config, env)
    legacy = bool(version) and version < "2026"
    status = anyio.run(use_host, config, legacy, context)
    if status == LOGIN_AGAIN and scenario not in CLIENT_CREDENTIALS:  # as a user would: log in again, once
        login(config, env)
        status = anyio.run(use_host, config, legacy, context)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
