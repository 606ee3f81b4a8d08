"""Real gateways with ``--console`` for the console's tests: one open (no tokens, no policy), one behind tokens and a policy.

Each is the real CLI process in front of three real upstreams: the example skills (``serve``), the
demo jobs server, and a hostile one whose tool description is markup (``<script>``, an ``onerror``
image) that must reach the page as text (the open one has a fourth, which exits when asked). Tokens are JWTs signed with a key of a JWKS file written
here; the policy admits ``deck/pdf-forms`` to administrators only, routes the jobs tools through
``jobs/job-search``, and makes the hostile tool public.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from ..server.helpers import REPO, start_gateway, stop

ISSUER = "https://id.example.test"
AUDIENCE = "https://gateway.example.test/mcp"
HOSTILE_DESCRIPTION = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">Probe the wire'
HOSTILE = f"""
from mcp.server.mcpserver import MCPServer
server = MCPServer("hostile")

@server.tool(description={HOSTILE_DESCRIPTION!r})
def probe(text: str) -> str:
    return text

server.run()
"""
FLAKY = """
import os
from mcp.server.mcpserver import MCPServer
server = MCPServer("flaky")

@server.tool()
def exit_now() -> str:
    \"\"\"End this server at once (the gateway starts it again).\"\"\"
    os._exit(3)

server.run()
"""
DECK = {"command": sys.executable, "args": ["-m", "skilldeck.cli", "serve", str(REPO / "examples" / "skills")]}
JOBS = {
    "command": sys.executable,
    "args": ["-c", "from skilldeck.demo._servers import jobs_server; jobs_server().run()"],
}
POLICY = {
    "skills": {
        "deck/pdf-forms": {"admit": {"roles": ["admin"]}},
        "jobs/job-search": {"tools": ["jobs/search_jobs", "jobs/get_job"]},
    },
    "public_tools": ["hostile/probe"],
}


@dataclass(frozen=True)
class Gateway:
    """A running ``skilldeck gateway --console``: its MCP URL and console URL, and tokens when it verifies them."""

    url: str
    log: Path
    key: rsa.RSAPrivateKey | None = None

    @property
    def console(self) -> str:
        return self.url.removesuffix("/mcp") + "/console"

    def token(self, subject: str, tenant: str, roles: list[str], **claims: Any) -> str:
        assert self.key is not None, "this gateway verifies no tokens"
        now = int(time.time())
        payload = {"iss": ISSUER, "aud": AUDIENCE, "sub": subject, "tenant": tenant, "roles": roles, "iat": now}
        return jwt.encode({**payload, "exp": now + 3600, **claims}, self.key, algorithm="RS256", headers={"kid": "k1"})


def _config(folder: Path, **more: Any) -> Path:
    config = folder / "mcp.json"
    hostile = {"command": sys.executable, "args": ["-c", HOSTILE]}
    config.write_text(json.dumps({"mcpServers": {"deck": DECK, "jobs": JOBS, "hostile": hostile, **more}}))
    return config


def _all_up(match: Any) -> bool:
    return match["up"] == match["total"]


@pytest.fixture(scope="session")
def open_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """``gateway --console`` with no token verifier and no policy: every viewer is the default identity.

    A fourth upstream, ``flaky``, exits when its pinned tool ``exit_now`` is called (and is started again).
    """
    folder = tmp_path_factory.mktemp("console-open")
    log = folder / "gateway.log"
    config = _config(folder, flaky={"command": sys.executable, "args": ["-c", FLAKY]})
    flags = ["--console", "--lexical", "--pin", "flaky/exit_now"]
    proc, found = start_gateway(config, log, *flags, ready=_all_up, timeout=120)
    try:
        yield Gateway(found["url"], log)
    finally:
        stop(proc)


def signing_key(folder: Path) -> tuple[rsa.RSAPrivateKey, list[str]]:
    """A new RSA key, its JWKS written in ``folder``, and the flags that verify tokens it signs."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
    (folder / "jwks.json").write_text(json.dumps({"keys": [{**jwk, "kid": "k1", "alg": "RS256", "use": "sig"}]}))
    return key, ["--jwt-jwks", str(folder / "jwks.json"), "--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE]


@pytest.fixture(scope="session")
def jwt_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """``gateway --console`` behind JWTs (a JWKS file) and :data:`POLICY`."""
    folder = tmp_path_factory.mktemp("console-jwt")
    key, auth = signing_key(folder)
    (folder / "policy.json").write_text(json.dumps(POLICY))
    log = folder / "gateway.log"
    flags = ["--console", "--lexical", "--policy", str(folder / "policy.json")]
    proc, found = start_gateway(_config(folder), log, *flags, *auth, ready=_all_up, timeout=120)
    try:
        yield Gateway(found["url"], log, key)
    finally:
        stop(proc)
