"""Where a verifier's keys come from, when they rotate and when their source breaks or turns hostile.

A JWKS file rewritten while the server runs (a key revoked, a key added, a broken file); a JWKS URL
on a real loopback HTTP server that answers well, answers 100 MiB, hangs, fails or redirects. Time
is a clock the test moves; fetches are counted by the server that answers them.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from skilldeck.errors import JwksUnavailable
from skilldeck.serving._jwks import MAX_JWKS_BYTES, JwksUrl, parse_jwks
from skilldeck.serving._tokens import JwtVerifier

ISSUER = "https://auth.example.test"
AUDIENCE = "https://skills.example.test/mcp"

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def old_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def jwks(*pairs: tuple[str, rsa.RSAPrivateKey], use: str = "sig") -> dict[str, Any]:
    return {
        "keys": [
            {**json.loads(RSAAlgorithm.to_jwk(key.public_key())), "kid": kid, "alg": "RS256", "use": use}
            for kid, key in pairs
        ]
    }


def token(key: rsa.RSAPrivateKey, kid: str | None) -> str:
    """A valid token signed with ``key``, naming ``kid`` in its header (``None``: no ``kid`` at all)."""
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "iat": now, "exp": now + 600}
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid} if kid is not None else None)


def unnamed(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with the ``kid`` of every key taken out."""
    return {"keys": [{k: v for k, v in key.items() if k != "kid"} for key in document["keys"]]}


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def on_a_clock(provider: IdentityProvider) -> tuple[Clock, JwksUrl, JwtVerifier]:
    """A verifier of ``provider``'s JWKS whose time is a clock the test moves."""
    clock = Clock()
    source = JwksUrl(provider.url, clock=clock)
    return clock, source, JwtVerifier(source, issuer=ISSUER, audience=AUDIENCE)


# -- a file ----------------------------------------------------------------------------------------


def rewrite(path: Path, content: str) -> None:
    """Write ``content`` and move the modification time on, so the change is seen whatever the file system's clock."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(content)
    os.utime(path, ns=(before + 2_000_000_000, before + 2_000_000_000))


async def test_a_rotated_jwks_file_takes_effect_without_a_restart(
    tmp_path: Path, old_key: rsa.RSAPrivateKey, new_key: rsa.RSAPrivateKey
) -> None:
    path = tmp_path / "jwks.json"
    rewrite(path, json.dumps(jwks(("old", old_key))))
    verifier = JwtVerifier(str(path), issuer=ISSUER, audience=AUDIENCE)
    assert await verifier.verify_token(token(old_key, "old")) is not None
    assert await verifier.verify_token(token(new_key, "new")) is None  # not published yet
    rewrite(path, json.dumps(jwks(("new", new_key))))  # the old key revoked, the new one published
    assert await verifier.verify_token(token(old_key, "old")) is None
    assert await verifier.verify_token(token(new_key, "new")) is not None


async def test_a_token_without_a_kid_is_verified_with_the_one_key_of_a_set_and_refused_when_there_are_two(
    tmp_path: Path, old_key: rsa.RSAPrivateKey, new_key: rsa.RSAPrivateKey, caplog: pytest.LogCaptureFixture
) -> None:
    """A kid is how a token picks its key among several; with one key there is nothing to pick (as FastMCP's
    verifier has it). The signature, issuer, audience and expiry are checked as for any token."""
    path = tmp_path / "jwks.json"
    rewrite(path, json.dumps(unnamed(jwks(("x", old_key)))))  # one key, published without a kid
    verifier = JwtVerifier(str(path), issuer=ISSUER, audience=AUDIENCE)
    assert await verifier.verify_token(token(old_key, None)) is not None
    assert await verifier.verify_token(token(old_key, "")) is not None  # an empty kid names no key either
    assert await verifier.verify_token(token(new_key, None)) is None  # the one key did not sign it
    with pytest.raises(jwt.InvalidTokenError, match="no signing key with kid 'x' in the JWKS file"):
        await verifier.keys.key("x")  # a kid never names a key published without one
    rewrite(path, json.dumps(jwks(("old", old_key))))  # one named key: a token without a kid picks it too
    assert await verifier.verify_token(token(old_key, None)) is not None
    rewrite(path, json.dumps(jwks(("old", old_key), ("new", new_key))))  # two keys: the token must name one
    assert await verifier.verify_token(token(old_key, None)) is None
    assert await verifier.verify_token(token(new_key, None)) is None
    with pytest.raises(jwt.InvalidTokenError, match="has no 'kid' header and the JWKS file holds 2 signing keys"):
        await verifier.keys.key(None)
    assert await verifier.verify_token(token(new_key, "new")) is not None
    rewrite(path, json.dumps(unnamed(jwks(("x", new_key)))))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="skilldeck.serving._jwks"):
        assert await verifier.verify_token(token(new_key, None)) is not None
    assert [r.getMessage() for r in caplog.records] == ["JWKS file re-read: 1 signing keys (one without a kid)"]


async def test_keys_without_a_kid_are_used_only_alone(old_key: rsa.RSAPrivateKey, new_key: rsa.RSAPrivateKey) -> None:
    """Beside a named key, a key without a kid could never be picked: it is left out. Two keys without one
    could never be told apart: a set of only those is refused, as a set with no signing key is."""
    one_of_each = {"keys": jwks(("new", new_key))["keys"] + unnamed(jwks(("x", old_key)))["keys"]}
    assert set(parse_jwks(json.dumps(one_of_each).encode(), "test")) == {"new"}
    assert set(parse_jwks(json.dumps(unnamed(jwks(("x", old_key)))).encode(), "test")) == {""}
    with pytest.raises(JwksUnavailable, match=r"no signing key with a 'kid' \(or a single one without\)"):
        parse_jwks(json.dumps(unnamed(jwks(("x", old_key), ("y", new_key)))).encode(), "test")


async def test_a_url_that_comes_to_publish_a_second_key_refuses_tokens_without_a_kid_from_then_on(
    provider: IdentityProvider, old_key: rsa.RSAPrivateKey, new_key: rsa.RSAPrivateKey
) -> None:
    clock, source, verifier = on_a_clock(provider)
    for _ in range(3):  # the set is fresh: fetched once
        assert await verifier.verify_token(token(old_key, None)) is not None
    provider.body = json.dumps(jwks(("old", old_key), ("new", new_key))).encode()  # a rotation begins
    assert await verifier.verify_token(token(old_key, None)) is not None  # until the set is fetched again
    clock.now += source.lifespan
    assert await verifier.verify_token(token(old_key, None)) is None
    with pytest.raises(jwt.InvalidTokenError, match="holds 2 signing keys"):
        await source.key(None)
    assert await verifier.verify_token(token(old_key, "old")) is not None
    assert provider.hits == ["ok", "ok"]


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("not json", "not a JWKS"),
        (json.dumps({"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "h"}]}), "no signing key"),
        ("x" * (MAX_JWKS_BYTES + 1), f"over {MAX_JWKS_BYTES} bytes"),
    ],
    ids=["garbage", "no-signing-key", "too-large"],
)
async def test_a_broken_new_jwks_file_keeps_the_old_keys_and_says_so_once(
    tmp_path: Path, old_key: rsa.RSAPrivateKey, caplog: pytest.LogCaptureFixture, content: str, said: str
) -> None:
    path = tmp_path / "jwks.json"
    rewrite(path, json.dumps(jwks(("old", old_key))))
    verifier = JwtVerifier(str(path), issuer=ISSUER, audience=AUDIENCE)
    rewrite(path, content)
    caplog.set_level(logging.WARNING, logger="skilldeck.serving._jwks")
    for _ in range(5):
        assert await verifier.verify_token(token(old_key, "old")) is not None
    lines = [r.getMessage() for r in caplog.records if r.name == "skilldeck.serving._jwks"]
    assert len(lines) == 1, lines
    assert "the 1 keys read before stay" in lines[0], lines[0]
    assert said in lines[0], lines[0]


# -- a URL -----------------------------------------------------------------------------------------


@dataclass
class IdentityProvider:
    """A real HTTP server on loopback whose ``/jwks.json`` answers as ``mode`` says, counting requests."""

    url: str = ""
    mode: str = "ok"
    body: bytes = b""
    hits: list[str] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    sent: int = 0
    """Bytes of the huge body written before the client hung up."""


@pytest.fixture
def provider(old_key: rsa.RSAPrivateKey) -> Iterator[IdentityProvider]:
    idp = IdentityProvider(body=json.dumps(jwks(("old", old_key))).encode())

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            idp.hits.append(idp.mode)
            if idp.mode == "hang":
                idp.release.wait(30)
                return
            if idp.mode == "redirect":
                self.send_response(302)
                self.send_header("Location", "/elsewhere.json")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if idp.mode == "error":
                self.send_response(500)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            huge = idp.mode == "huge"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(100 * 1024 * 1024 if huge else len(idp.body)))
            self.end_headers()
            try:
                if huge:  # 100 MiB, a chunk at a time, until the client hangs up
                    chunk = b" " * 65_536
                    for _ in range(1_600):
                        self.wfile.write(chunk)
                        idp.sent += len(chunk)
                else:
                    self.wfile.write(idp.body)
            except OSError:
                pass

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    idp.url = f"http://127.0.0.1:{httpd.server_address[1]}/jwks.json"
    try:
        yield idp
    finally:
        idp.release.set()
        httpd.shutdown()
        httpd.server_close()


async def test_a_huge_jwks_is_cut_off_at_the_cap_and_not_fetched_again_before_the_cooldown(
    provider: IdentityProvider, old_key: rsa.RSAPrivateKey, caplog: pytest.LogCaptureFixture
) -> None:
    provider.mode = "huge"
    clock = Clock()
    source = JwksUrl(provider.url, timeout=30, clock=clock)
    verifier = JwtVerifier(source, issuer=ISSUER, audience=AUDIENCE)
    caplog.set_level(logging.WARNING, logger="skilldeck.serving._jwks")
    for _ in range(20):  # each token used to refetch the whole 100 MiB
        assert await verifier.verify_token(token(old_key, "old")) is None
    assert provider.hits == ["huge"]
    lines = [r.getMessage() for r in caplog.records if r.name == "skilldeck.serving._jwks"]
    assert len(lines) == 1, lines
    assert f"over {MAX_JWKS_BYTES} bytes" in lines[0], lines[0]
    provider.mode = "ok"
    clock.now += source.cooldown - 1
    assert await verifier.verify_token(token(old_key, "old")) is None  # still cooling down
    clock.now += 1
    assert await verifier.verify_token(token(old_key, "old")) is not None
    assert provider.hits == ["huge", "ok"]


async def test_a_hanging_jwks_endpoint_costs_one_fetch_and_holds_up_no_token(
    provider: IdentityProvider, old_key: rsa.RSAPrivateKey
) -> None:
    provider.mode = "hang"
    source = JwksUrl(provider.url, timeout=5.0, wait=0.2)
    verifier = JwtVerifier(source, issuer=ISSUER, audience=AUDIENCE)
    answers: list[object] = []
    before_the_fetch_ended: list[bool] = []

    async def verify() -> None:
        answers.append(await verifier.verify_token(token(old_key, "old")))
        before_the_fetch_ended.append(source._in_flight is not None)

    with anyio.fail_after(30):  # bounded by the fetch timeout, not by the endpoint
        async with anyio.create_task_group() as tg:
            for _ in range(50):
                tg.start_soon(verify)
    assert answers == [None] * 50
    assert source.fetches == 1
    assert provider.hits == ["hang"]
    # every token, the one whose request started the fetch included, is judged without waiting it out
    assert before_the_fetch_ended.count(True) == 50, before_the_fetch_ended


async def test_the_last_good_keys_stay_while_refreshing_fails(
    provider: IdentityProvider, old_key: rsa.RSAPrivateKey, caplog: pytest.LogCaptureFixture
) -> None:
    clock, source, verifier = on_a_clock(provider)
    assert await verifier.verify_token(token(old_key, "old")) is not None
    provider.mode = "error"
    caplog.set_level(logging.WARNING, logger="skilldeck.serving._jwks")
    clock.now += source.lifespan  # the set is due for a refresh, which fails
    for _ in range(10):
        assert await verifier.verify_token(token(old_key, "old")) is not None
    assert provider.hits == ["ok", "error"]
    clock.now += source.cooldown
    assert await verifier.verify_token(token(old_key, "old")) is not None
    assert provider.hits == ["ok", "error", "error"]
    provider.mode = "ok"
    clock.now += source.cooldown
    assert await verifier.verify_token(token(old_key, "old")) is not None
    assert provider.hits == ["ok", "error", "error", "ok"]
    lines = [r.getMessage() for r in caplog.records if r.name == "skilldeck.serving._jwks"]
    assert len(lines) == 2, lines
    assert "answered HTTP 500" in lines[0], lines
    assert "the 1 keys fetched before stay" in lines[0], lines
    assert "fetched again: 1 signing keys" in lines[1], lines


async def test_a_redirect_is_not_followed(provider: IdentityProvider, old_key: rsa.RSAPrivateKey) -> None:
    provider.mode = "redirect"
    source = JwksUrl(provider.url)
    assert await JwtVerifier(source, issuer=ISSUER, audience=AUDIENCE).verify_token(token(old_key, "old")) is None
    assert provider.hits == ["redirect"]
    with pytest.raises(jwt.PyJWKClientConnectionError, match="answered HTTP 302"):
        await source.key("old")


async def test_an_encryption_key_never_verifies_a_token(provider: IdentityProvider, old_key: rsa.RSAPrivateKey) -> None:
    with pytest.raises(JwksUnavailable, match="no signing key"):
        parse_jwks(json.dumps(jwks(("old", old_key), use="enc")).encode(), "test")
    provider.body = json.dumps(jwks(("old", old_key), use="enc")).encode()
    verifier = JwtVerifier(provider.url, issuer=ISSUER, audience=AUDIENCE)
    assert await verifier.verify_token(token(old_key, "old")) is None


async def test_beside_a_signing_key_an_encryption_key_is_left_out(
    provider: IdentityProvider, old_key: rsa.RSAPrivateKey, new_key: rsa.RSAPrivateKey
) -> None:
    """A JWKS holding a signing key and an encryption key (``use: enc``, as real ones do): only the signing key
    is kept, and a token naming the encryption key's kid (signed with its private half) is refused as signed
    with no key, while one from the signing key is taken. A key without ``use`` signs."""
    mixed = {"keys": jwks(("new", new_key))["keys"] + jwks(("old", old_key), use="enc")["keys"]}
    assert set(parse_jwks(json.dumps(mixed).encode(), "test")) == {"new"}
    unmarked = {"keys": [{k: v for k, v in key.items() if k != "use"} for key in jwks(("old", old_key))["keys"]]}
    assert set(parse_jwks(json.dumps(unmarked).encode(), "test")) == {"old"}
    provider.body = json.dumps(mixed).encode()
    verifier = JwtVerifier(provider.url, issuer=ISSUER, audience=AUDIENCE)
    assert await verifier.verify_token(token(old_key, "old")) is None
    accepted = await verifier.verify_token(token(new_key, "new"))
    assert accepted is not None
    with pytest.raises(jwt.InvalidTokenError, match="no signing key with kid 'old'"):
        await JwksUrl(provider.url).key("old")


async def test_a_huge_jwks_endpoint_is_read_only_to_the_cap_not_to_its_end(
    provider: IdentityProvider, old_key: rsa.RSAPrivateKey
) -> None:
    """The cap is checked on each chunk as it comes: the fetch hangs up a little past it (what the sockets'
    buffers held), and never reads the 100 MiB the endpoint offers before refusing them."""
    provider.mode = "huge"
    verifier = JwtVerifier(JwksUrl(provider.url, timeout=30, clock=Clock()), issuer=ISSUER, audience=AUDIENCE)
    assert await verifier.verify_token(token(old_key, "old")) is None
    assert provider.hits == ["huge"]
    assert provider.sent < 48 * 1024 * 1024, f"{provider.sent:,} bytes sent before the client hung up"


def padded(document: dict[str, Any], size: int) -> bytes:
    """``document`` as JSON followed by spaces, ``size`` bytes in all."""
    data = json.dumps(document).encode()
    return data + b" " * (size - len(data))


async def test_a_jwks_of_exactly_the_cap_is_used_and_one_byte_more_is_refused(
    tmp_path: Path, provider: IdentityProvider, old_key: rsa.RSAPrivateKey
) -> None:
    document = jwks(("old", old_key))
    at_cap, over = padded(document, MAX_JWKS_BYTES), padded(document, MAX_JWKS_BYTES + 1)
    assert set(parse_jwks(at_cap, "test")) == {"old"}
    with pytest.raises(JwksUnavailable, match=f"test: the JWKS is over {MAX_JWKS_BYTES} bytes"):
        parse_jwks(over, "test")
    path = tmp_path / "jwks.json"  # a file: read up to the cap and one byte more
    path.write_bytes(at_cap)
    assert await JwtVerifier(str(path), issuer=ISSUER, audience=AUDIENCE).verify_token(token(old_key, "old"))
    provider.body = at_cap  # a URL: the cap counted on the chunks as they come
    assert await JwtVerifier(JwksUrl(provider.url, clock=Clock()), issuer=ISSUER, audience=AUDIENCE).verify_token(
        token(old_key, "old")
    )
    provider.body = over
    source = JwksUrl(provider.url, clock=Clock())
    with pytest.raises(jwt.PyJWKClientConnectionError, match=f"the JWKS is over {MAX_JWKS_BYTES} bytes; refused"):
        await source.key("old")
