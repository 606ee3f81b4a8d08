"""``skilldeck gateway --policy --jwt-jwks``, as a user runs it: two callers' tokens, one gateway process, two upstreams.

The gateway fronts two ``skilldeck serve`` upstreams over stdio (the tenant fixture pack as
``tenant``, the example pack as ``ex``) and verifies bearer JWTs against a JWKS file. Its policy
admits ``tenant/style-guide`` (by its id) and every skill of ``ex`` (by ``ex/*``) to administrators
only. Bob's token carries ``roles: [admin]``, Alice's ``roles: [user]``; both ask the same gateway,
Bob first, over real HTTP with the official Python SDK client.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from mcp import Client
from mcp.shared.exceptions import MCPError

from skilldeck.host._wire import SkillsWire

from ..server.helpers import REPO, start_gateway, stop
from ..server.test_context_aware_http import connect
from .gateway_clients_support import check_structured, refusal

pytestmark = pytest.mark.anyio

ISSUER = "https://auth.example.test"
AUDIENCE = "https://gateway.example.test/mcp"
PACKS = {"tenant": REPO / "tests" / "server" / "fixtures" / "tenant-skills", "ex": REPO / "examples" / "skills"}
ADMINS = "{admit: {roles: [admin]}}"
POLICY = (
    "claims: {tenant: tenant, roles: roles}\n"
    "default_identity: {subject: local, tenant: globex, roles: [admin]}\n"
    f"skills: {{tenant/style-guide: {ADMINS}, ex/*: {ADMINS}}}\n"
)
HIDDEN_PREFIXES = ("skill://tenant/style-guide/", "skill://ex/")


class Running:
    def __init__(self, url: str, key: rsa.RSAPrivateKey) -> None:
        self.url, self.key = url, key

    def token(self, subject: str, role: str) -> str:
        now = int(time.time())
        claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": subject, "iat": now, "exp": now + 600}
        claims |= {"tenant": "acme", "roles": [role]}
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "k-1"})


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    folder = tmp_path_factory.mktemp("gateway-admission")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = {**json.loads(RSAAlgorithm.to_jwk(key.public_key())), "kid": "k-1", "alg": "RS256", "use": "sig"}
    (folder / "jwks.json").write_text(json.dumps({"keys": [jwk]}))
    (folder / "policy.yaml").write_text(POLICY)
    servers = {
        label: {"command": sys.executable, "args": ["-m", "skilldeck.cli", "serve", str(pack)]}
        for label, pack in PACKS.items()
    }
    (folder / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    proc, match = start_gateway(
        folder / "mcp.json",
        folder / "gateway.log",
        "--policy", str(folder / "policy.yaml"),
        "--jwt-jwks", str(folder / "jwks.json"),
        "--jwt-issuer", ISSUER,
        "--jwt-audience", AUDIENCE,
        "--lexical",
        timeout=120,
    )  # fmt: skip
    assert match["up"] == match["total"] == "2", match.group(0)
    try:
        yield Running(match["url"], key)
    finally:
        stop(proc)


async def seen(c: Client) -> dict[str, Any]:
    """What one caller is offered: the ids ``find`` gives, the skill URIs listed, what loading them gives."""
    found = check_structured("find", await c.call_tool("find", {"query": "write in the house style", "limit": 20}))
    uris = {s["uri"] for s in (await SkillsWire(c).list_skills())["skills"]}
    return {"ids": {card["id"] for card in found["cards"]}, "uris": uris}


@pytest.mark.parametrize("era", ["auto", "legacy"])
async def test_a_skill_admitted_to_admins_by_id_or_label_is_hidden_from_another_callers_token(
    gateway: Running, era: str
) -> None:
    async with connect(gateway.url, gateway.token("bob", "admin"), era) as bob:
        admin = await seen(bob)
        loaded = check_structured("load", await bob.call_tool("load", {"ids": ["tenant/style-guide"]}))
        assert [s["id"] for s in loaded["skills"]] == ["tenant/style-guide"], loaded
        body = await bob.read_resource("skill://tenant/style-guide/SKILL.md")
        assert "style-guide" in getattr(body.contents[0], "text", "")
    assert "tenant/style-guide" in admin["ids"], admin
    assert "skill://tenant/style-guide/SKILL.md" in admin["uris"], admin
    assert [u for u in admin["uris"] if u.startswith("skill://ex/")], admin

    async with connect(gateway.url, gateway.token("alice", "user"), era) as alice:
        user = await seen(alice)
        result = await alice.call_tool("load", {"ids": ["tenant/style-guide"]})
        refusal(result, "Refused tenant/style-guide: no card has the id")
        refusal(
            await alice.call_tool("read_skill_file", {"skill": "tenant/style-guide", "path": "SKILL.md"}),
            "'tenant/style-guide' is not a loaded skill",
        )
        for uri in ("skill://tenant/style-guide/SKILL.md", "skill://ex/job-search/SKILL.md"):
            with pytest.raises(MCPError) as hidden:
                await alice.read_resource(uri)
            assert hidden.value.error.code == -32602, hidden.value.error
        listed = {str(r.uri) for r in (await alice.list_resources()).resources}
    assert "tenant/style-guide" not in user["ids"], user
    assert not [i for i in user["ids"] if i.startswith("ex/")], user
    assert not [u for u in user["uris"] | listed if u.startswith(HIDDEN_PREFIXES)], user
    assert "skill://tenant/orders/SKILL.md" in user["uris"], user  # what is admitted to her is listed
