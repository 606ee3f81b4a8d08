"""Bearer JWTs for ``skilldeck serve --http``: real keys, a JWKS from a file and from a loopback URL.

The verifier is checked on its own (every way a token must be refused), then end to end: the
``skilldeck serve`` command with ``--policy`` and ``--jwt-*`` over real HTTP, where a refused token
answers 401 and a valid token's tenant and roles (named by the policy's ``claims`` mapping) decide
what the caller sees, in both protocol eras.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from skilldeck.host._wire import SkillsWire
from skilldeck.serving._tokens import MAX_TOKEN_CHARS, AuthConfigError, JwtVerifier

from .helpers import CLI, POST_HEADERS, REPO, cli_env, initialize_request, start_serve, stop, wait_for_startup

ISSUER = "https://auth.example.test"
AUDIENCE = "https://skills.example.test/mcp"


@dataclass
class Keys:
    rsa_key: rsa.RSAPrivateKey
    ec_key: ec.EllipticCurvePrivateKey
    other_key: rsa.RSAPrivateKey  # not in the JWKS

    def jwks(self) -> dict[str, Any]:
        rsa_jwk = json.loads(RSAAlgorithm.to_jwk(self.rsa_key.public_key()))
        ec_jwk = json.loads(ECAlgorithm.to_jwk(self.ec_key.public_key()))
        return {
            "keys": [
                {**rsa_jwk, "kid": "rsa-1", "alg": "RS256", "use": "sig"},
                {**ec_jwk, "kid": "ec-1", "alg": "ES256", "use": "sig"},
            ]
        }


@pytest.fixture(scope="module")
def keys() -> Keys:
    return Keys(
        rsa_key=rsa.generate_private_key(public_exponent=65537, key_size=2048),
        ec_key=ec.generate_private_key(ec.SECP256R1()),
        other_key=rsa.generate_private_key(public_exponent=65537, key_size=2048),
    )


def _token(key: Any, kid: str = "rsa-1", alg: str = "RS256", **claims: Any) -> str:
    now = int(time.time())
    payload = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "iat": now, "exp": now + 600, **claims}
    return jwt.encode({k: v for k, v in payload.items() if v is not None}, key, algorithm=alg, headers={"kid": kid})


@pytest.fixture
def jwks_file(tmp_path: Path, keys: Keys) -> Path:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(keys.jwks()))
    return path


@dataclass
class JwksServer:
    url: str
    hits: list[str]


@pytest.fixture(scope="module")
def jwks_url(keys: Keys) -> Iterator[JwksServer]:
    """A real HTTP server on loopback serving the JWKS at /jwks.json, counting fetches."""
    body = json.dumps(keys.jwks()).encode()
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            status = 200 if self.path == "/jwks.json" else 404
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body) if status == 200 else 0))
            self.end_headers()
            if status == 200:
                self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield JwksServer(f"http://127.0.0.1:{httpd.server_address[1]}/jwks.json", hits)
    finally:
        httpd.shutdown()
        httpd.server_close()


# -- the verifier ----------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("source", ["file", "url"])
async def test_valid_rs256_and_es256_tokens_give_their_claims(
    source: str, keys: Keys, jwks_file: Path, jwks_url: JwksServer
) -> None:
    verifier = JwtVerifier(str(jwks_file) if source == "file" else jwks_url.url, issuer=ISSUER, audience=AUDIENCE)
    rs = await verifier.verify_token(
        _token(keys.rsa_key, org="acme", groups=["user"], scope="mcp skills", azp="support-app")
    )
    assert rs is not None
    assert (rs.subject, rs.client_id, rs.scopes) == ("alice", "support-app", ["mcp", "skills"])
    assert rs.claims is not None
    assert rs.claims["org"] == "acme"
    assert rs.claims["groups"] == ["user"]
    es = await verifier.verify_token(_token(keys.ec_key, kid="ec-1", alg="ES256", sub="bob", aud=[AUDIENCE, "other"]))
    assert es is not None
    assert es.subject == "bob"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _b64(obj: dict[str, Any]) -> str:
    return _b64url(json.dumps(obj).encode())


def _bad_tokens(keys: Keys) -> dict[str, str]:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "mallory", "exp": now + 600}
    pem = keys.rsa_key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    # HS256 "signed" with the RSA public key's PEM as the secret: the classic key-confusion forgery.
    signing_input = f"{_b64({'alg': 'HS256', 'typ': 'JWT', 'kid': 'rsa-1'})}.{_b64(claims)}"
    forged = f"{signing_input}.{_b64url(hmac.new(pem, signing_input.encode(), hashlib.sha256).digest())}"
    unsigned = f"{_b64({'alg': 'none', 'typ': 'JWT', 'kid': 'rsa-1'})}.{_b64(claims)}."
    return {
        "expired": _token(keys.rsa_key, iat=now - 7200, exp=now - 3600),
        "wrong issuer": _token(keys.rsa_key, iss="https://evil.example.test"),
        "wrong audience": _token(keys.rsa_key, aud="https://someone-else.example.test/mcp"),
        "no audience": _token(keys.rsa_key, aud=None),
        "no expiry": _token(keys.rsa_key, exp=None),
        "not yet valid": _token(keys.rsa_key, nbf=now + 3600),
        "bad signature": _token(keys.other_key, kid="rsa-1"),
        "unknown kid": _token(keys.other_key, kid="rsa-2"),
        "no kid": jwt.encode({"iss": ISSUER, "aud": AUDIENCE, "exp": now + 600}, keys.rsa_key, algorithm="RS256"),
        "alg mismatch": _token(keys.rsa_key, kid="ec-1", alg="RS256"),
        "HS256 confusion": forged,
        "alg none": unsigned,
        "garbage": "not.a.jwt",
        "oversize": _token(keys.rsa_key, padding="x" * MAX_TOKEN_CHARS),
    }


@pytest.mark.anyio
@pytest.mark.parametrize("source", ["file", "url"])
async def test_every_bad_token_is_refused(source: str, keys: Keys, jwks_file: Path, jwks_url: JwksServer) -> None:
    verifier = JwtVerifier(str(jwks_file) if source == "file" else jwks_url.url, issuer=ISSUER, audience=AUDIENCE)
    accepted = {name: tok for name, tok in _bad_tokens(keys).items() if await verifier.verify_token(tok) is not None}
    assert accepted == {}


@pytest.mark.anyio
async def test_unknown_kids_do_not_make_the_server_refetch_the_jwks_each_time(keys: Keys, jwks_url: JwksServer) -> None:
    verifier = JwtVerifier(jwks_url.url, issuer=ISSUER, audience=AUDIENCE)
    before = len(jwks_url.hits)
    for i in range(50):
        assert await verifier.verify_token(_token(keys.other_key, kid=f"random-{i}")) is None
    assert await verifier.verify_token(_token(keys.rsa_key)) is not None
    assert len(jwks_url.hits) - before <= 2  # the first fetch, and at most one refresh per cooldown


def test_jwks_that_cannot_be_used_are_refused_at_start(tmp_path: Path) -> None:
    with pytest.raises(AuthConfigError, match="cannot be read"):
        JwtVerifier(str(tmp_path / "missing.json"), issuer=ISSUER, audience=AUDIENCE)
    (tmp_path / "text.json").write_text("hello")
    with pytest.raises(AuthConfigError, match="not a JWKS"):
        JwtVerifier(str(tmp_path / "text.json"), issuer=ISSUER, audience=AUDIENCE)
    (tmp_path / "hmac.json").write_text(json.dumps({"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "h"}]}))
    with pytest.raises(AuthConfigError, match="no signing key"):
        JwtVerifier(str(tmp_path / "hmac.json"), issuer=ISSUER, audience=AUDIENCE)
    (tmp_path / "big.json").write_bytes(b" " * (1024 * 1024 + 1))
    with pytest.raises(AuthConfigError, match="over"):
        JwtVerifier(str(tmp_path / "big.json"), issuer=ISSUER, audience=AUDIENCE)
    with pytest.raises(AuthConfigError, match="audience is required"):
        JwtVerifier(str(tmp_path / "hmac.json"), issuer=ISSUER, audience="")


# -- skilldeck serve over real HTTP ----------------------------------------------------------------

POLICY = """\
claims: {tenant: org, roles: groups}          # the identity provider's claim names
default_identity: {subject: anonymous, tenant: nobody, roles: []}
skills:
  job-search:
    admit: {roles: [user, admin]}
  pdf-forms:
    admit: {tenants: [acme]}
  code-review:
    admit: {roles: [admin]}
  security-review:
    admit: {roles: [admin]}
  refunds:
    instruction_only: true
    admit: [{tenants: [acme]}, {roles: [admin]}]
  git-workflow:
    admit: {roles: [admin]}
  incident-response:
    admit: {roles: [admin]}
  sql-analytics:
    admit: {roles: [admin]}
"""


@dataclass
class Served:
    url: str
    log: Path
    process: subprocess.Popen[bytes]

    def text(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def _serve(tmp_path: Path, *args: str) -> Iterator[Served]:
    log = tmp_path / f"serve-{len(list(tmp_path.glob('serve-*')))}.log"
    proc = start_serve([*CLI, "serve", "examples/skills", *args], log)
    try:
        match = wait_for_startup(proc, log, 30)
        assert not isinstance(match, str), match
        yield Served(match.group(2), log, proc)
    finally:
        stop(proc)


@asynccontextmanager
async def _client(url: str, token: str, mode: str) -> AsyncIterator[SkillsWire]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, follow_redirects=False) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=10, cache=None) as client,
    ):
        yield SkillsWire(client)


async def _names(wire: SkillsWire) -> set[str]:
    return {e["frontmatter"]["name"] for e in (await wire.list_skills())["skills"]}


@contextmanager
def _serve_with_tokens(tmp: Path, policy: str, jwks_url: JwksServer) -> Iterator[Served]:
    """``skilldeck serve --http`` with ``policy``, verifying tokens against ``jwks_url``."""
    (tmp / "policy.yaml").write_text(policy)
    with _serve(
        tmp,
        "--http", "127.0.0.1:0",
        "--policy", str(tmp / "policy.yaml"),
        "--jwt-jwks", jwks_url.url,
        "--jwt-issuer", ISSUER,
        "--jwt-audience", AUDIENCE,
    ) as served:  # fmt: skip
        yield served


@pytest.fixture(scope="module")
def jwt_server(tmp_path_factory: pytest.TempPathFactory, jwks_url: JwksServer) -> Iterator[Served]:
    with _serve_with_tokens(tmp_path_factory.mktemp("jwt-serve"), POLICY, jwks_url) as served:
        yield served


def test_serve_answers_401_to_every_refused_token(jwt_server: Served, keys: Keys) -> None:
    initialize = initialize_request("t")
    headers = POST_HEADERS
    statuses = {}
    with httpx2.Client(timeout=10) as http:
        for name, token in {"no token": None, **_bad_tokens(keys)}.items():
            auth = {"Authorization": f"Bearer {token}"} if token else {}
            statuses[name] = http.post(jwt_server.url, json=initialize, headers={**headers, **auth}).status_code
        valid = http.post(
            jwt_server.url, json=initialize, headers={**headers, "Authorization": f"Bearer {_token(keys.rsa_key)}"}
        )
        metadata = http.get(jwt_server.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"))
    assert statuses == {name: 401 for name in statuses}
    assert valid.status_code == 200
    assert metadata.status_code == 200
    assert metadata.json()["authorization_servers"] == [ISSUER]
    assert "warning" not in jwt_server.text()  # a policy behind token verification, on loopback


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_tokens_tenant_and_roles_drive_the_policy_view(jwt_server: Served, keys: Keys, mode: str) -> None:
    alice = _token(keys.rsa_key, sub="alice", org="acme", groups=["user"])
    bob = _token(keys.ec_key, kid="ec-1", alg="ES256", sub="bob", org="globex", groups="admin")  # space-separated roles
    carol = _token(keys.rsa_key, sub="carol", org="globex", groups=["user"])
    forged = {"dev.skilldeck/roles": ["admin"], "roles": ["admin"], "groups": ["admin"]}
    async with _client(jwt_server.url, alice, mode) as wire:
        assert await _names(wire) == {"job-search", "pdf-forms", "refunds"}
        page = await wire.request("skills/list", {"_meta": forged})  # hints never widen permissions
        assert {e["frontmatter"]["name"] for e in page["skills"]} == {"job-search", "pdf-forms", "refunds"}
    async with _client(jwt_server.url, bob, mode) as wire:
        assert await _names(wire) == {
            "job-search",
            "code-review",
            "security-review",
            "refunds",
            "git-workflow",
            "incident-response",
            "sql-analytics",
        }
    async with _client(jwt_server.url, carol, mode) as wire:
        assert await _names(wire) == {"job-search"}


def test_serve_warns_about_a_policy_without_tokens_and_a_non_loopback_bind(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(POLICY)
    with _serve(tmp_path, "--http", "127.0.0.1:0", "--policy", str(tmp_path / "policy.yaml")) as served:
        lines = [line for line in served.text().splitlines() if line.startswith("warning:")]
    assert len(lines) == 1
    assert "--policy over HTTP without token verification" in lines[0]
    assert "default_identity" in lines[0]
    assert "--jwt-jwks" in lines[0]
    with _serve(tmp_path, "--http", "0.0.0.0:0") as served:
        lines = [line for line in served.text().splitlines() if line.startswith("warning:")]
    assert len(lines) == 1
    assert "binding 0.0.0.0" in lines[0]
    assert "Host/Origin" in lines[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--http", "127.0.0.1:0", "--jwt-jwks", "jwks.json", "--jwt-issuer", ISSUER], "needs --jwt-audience"),
        (["--http", "127.0.0.1:0", "--jwt-issuer", ISSUER], "--jwt-issuer needs --jwt-jwks"),
        (["--jwt-jwks", "jwks.json", "--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE], "needs --http"),
        (
            ["--http", "127.0.0.1:0", "--jwt-jwks", "jwks.json", "--jwt-issuer", "acme", "--jwt-audience", AUDIENCE],
            "must be the authorization server's http(s) URL",
        ),
    ],
)
def test_serve_refuses_incomplete_token_settings(
    tmp_path: Path, jwks_file: Path, args: list[str], message: str
) -> None:
    args = [str(jwks_file) if a == "jwks.json" else a for a in args]
    proc = subprocess.run(
        [*CLI, "serve", "examples/skills", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env=cli_env(),
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 1
    assert message in proc.stderr


@pytest.mark.anyio
async def test_roles_nested_in_the_token_are_read_and_a_misfit_is_said_once(
    tmp_path: Path, keys: Keys, jwks_url: JwksServer
) -> None:
    """Keycloak puts realm roles at ``realm_access.roles``: a policy names that path and they admit. A token
    without it but with roles elsewhere gives a caller without roles and one warning naming where they are."""
    policy = POLICY.replace("roles: groups}", "roles: realm_access.roles}")
    admin = _token(keys.rsa_key, sub="bob", org="globex", realm_access={"roles": ["admin", "offline_access"]})
    elsewhere = _token(keys.rsa_key, sub="dan", org="globex", resource_access={"orders": {"roles": ["admin"]}})
    with _serve_with_tokens(tmp_path, policy, jwks_url) as served:
        async with _client(served.url, admin, "auto") as wire:
            assert "code-review" in await _names(wire)
        for mode in ("auto", "legacy"):  # two sessions, each caller worked out per request
            async with _client(served.url, elsewhere, mode) as wire:
                assert await _names(wire) == set()  # no roles: job-search and the admin skills are hidden
        warnings = [line for line in served.text().splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: the policy's claims do not fit this token: this token has no claim 'realm_access.roles' but "
        "carries roles at resource_access.orders.roles (to read them: claims: {roles: resource_access.orders.roles}) "
        "(said once)"
    ]


def _token_of_length(key: rsa.RSAPrivateKey, length: int) -> str:
    """A valid token of exactly ``length`` characters: a claim and a header field padded to it (a base64url
    segment never has a length of 4k + 1, so one padded segment alone cannot hit every length)."""
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "iat": now, "exp": now + 600}
    base = len(jwt.encode({**claims, "pad": ""}, key, algorithm="RS256", headers={"kid": "rsa-1", "x": ""}))
    for extra in range(4):
        for pad in range(max(0, (length - base) * 3 // 4 - 8), length):
            made = jwt.encode(
                {**claims, "pad": "p" * pad}, key, algorithm="RS256", headers={"kid": "rsa-1", "x": "h" * extra}
            )
            if len(made) >= length:
                if len(made) == length:
                    return made
                break
    raise AssertionError(f"no token of {length} characters")


@pytest.mark.anyio
async def test_a_valid_token_of_exactly_the_limit_is_verified_and_one_character_more_is_refused_for_its_length(
    keys: Keys, jwks_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    verifier = JwtVerifier(str(jwks_file), issuer=ISSUER, audience=AUDIENCE)
    at_limit, over = (
        _token_of_length(keys.rsa_key, MAX_TOKEN_CHARS),
        _token_of_length(keys.rsa_key, MAX_TOKEN_CHARS + 1),
    )
    assert (len(at_limit), len(over)) == (MAX_TOKEN_CHARS, MAX_TOKEN_CHARS + 1)
    caplog.set_level("INFO", logger="skilldeck.serving._tokens")
    accepted = await verifier.verify_token(at_limit)
    assert accepted is not None
    assert await verifier.verify_token(over) is None
    refusals = [r.getMessage() for r in caplog.records if r.name == "skilldeck.serving._tokens"]
    assert refusals == [f"bearer token refused: longer than {MAX_TOKEN_CHARS} characters"]
