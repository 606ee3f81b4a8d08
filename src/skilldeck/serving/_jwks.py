"""Where a token verifier's keys come from: a JWKS file that is re-read when it changes, or a URL fetched
with bounds.

Keys are rotated while a server runs: a key is added before tokens are signed with it, and one that
leaked is removed. Both sources follow that without a restart, and neither lets a broken or hostile
source take the keys away or the server down:

* :class:`JwksFile` looks at the file's size and modification time before each use (one ``stat``)
  and reads it again when either changed. A new file that does not parse, or holds no usable key,
  leaves the last good set in force, said once in a line per change.
* :class:`JwksUrl` fetches with a body cap (:data:`MAX_JWKS_BYTES`), a timeout on the whole fetch,
  no redirects, and one fetch in flight, on a thread of its own, that every token waits for at most
  ``wait`` seconds. A set is kept for ``lifespan``
  seconds; a token naming an unknown key refetches at most once per ``cooldown``; a fetch that
  fails is not tried again for ``cooldown`` seconds, and the last good set stays in force
  meanwhile.

Both keep only signing keys (``use`` ``sig`` or unset) with an asymmetric algorithm of
:data:`ALGORITHMS` that have a ``kid``, or the one such key of a set that holds only one. A token
picks its key by its ``kid`` header; a token without one is verified with the set's key when the set
holds exactly one (as FastMCP's verifier does), and refused, saying so, when it holds more.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import anyio
import httpx2
import jwt

from skilldeck.errors import JwksUnavailable

__all__ = [
    "ALGORITHMS",
    "MAX_JWKS_BYTES",
    "JwksFile",
    "JwksSource",
    "JwksUrl",
    "parse_jwks",
    "pick_key",
]

logger = logging.getLogger(__name__)

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
"""Signature algorithms accepted; each key verifies only with the algorithm its JWK names (or implies)."""

_POLL = 0.02
"""Seconds between looks at a fetch under way."""

MAX_JWKS_BYTES = 1024 * 1024
"""A JWKS (file or fetched body) larger than this is refused."""


class JwksSource(Protocol):
    """What :class:`~skilldeck.serving._tokens.JwtVerifier` asks of its keys."""

    source: str

    async def key(self, kid: str | None) -> jwt.PyJWK:
        """The signing key named ``kid`` (``None``: the set's one key); raises :class:`jwt.InvalidTokenError`
        when there is none."""
        ...


def parse_jwks(data: bytes, where: str) -> dict[str, jwt.PyJWK]:
    """The usable signing keys of a JWKS document, by ``kid`` (``""``: the set's one key, which has none).

    Raises:
        JwksUnavailable: over :data:`MAX_JWKS_BYTES`, not a JWKS, or no usable signing key in it.
    """
    if len(data) > MAX_JWKS_BYTES:
        raise JwksUnavailable(f"{where}: the JWKS is over {MAX_JWKS_BYTES} bytes; is it the right document?")
    try:
        keys = jwt.PyJWKSet.from_json(data.decode("utf-8")).keys
    except (UnicodeDecodeError, json.JSONDecodeError, jwt.PyJWTError) as exc:
        raise JwksUnavailable(f'{where}: not a JWKS ({{"keys": [...]}}): {exc}') from None
    signing = [k for k in keys if k.public_key_use in ("sig", None) and k.algorithm_name in ALGORITHMS]
    if len(signing) == 1 and not signing[0].key_id:  # one key: a token needs no kid to pick it
        return {"": signing[0]}
    usable = {k.key_id: k for k in signing if k.key_id}
    if not usable:
        raise JwksUnavailable(
            f"{where}: the JWKS has no signing key with a 'kid' (or a single one without) and an asymmetric "
            f"algorithm ({', '.join(ALGORITHMS)})"
        )
    return usable


def pick_key(keys: dict[str, jwt.PyJWK], kid: str | None, where: str) -> jwt.PyJWK:
    """The key of ``keys`` named ``kid``; for ``None``, the set's key when it holds one.

    Raises:
        jwt.InvalidTokenError: no key has that ``kid``, or the token names none and the set holds several.
    """
    if not keys:  # a first fetch that has not come back yet
        raise jwt.InvalidTokenError(f"the JWKS {where} holds no signing key yet")
    if kid is None:
        if len(keys) == 1:
            return next(iter(keys.values()))
        raise jwt.InvalidTokenError(
            f"the token has no 'kid' header and the JWKS {where} holds {len(keys)} signing keys: "
            "the issuer must name the key that signed it"
        )
    found = keys.get(kid) if kid else None
    if found is None:
        raise jwt.InvalidTokenError(f"no signing key with kid {kid!r} in the JWKS {where}")
    return found


class JwksFile:
    """A JWKS file, re-read when its size or modification time changes (see the module docs).

    Raises:
        JwksUnavailable: at start, the file is missing, too large, not a JWKS, or holds no usable key.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.source = str(path)
        self._seen: tuple[int, int] | None = None
        self._keys = self._read()

    def _stamp(self) -> tuple[int, int] | None:
        try:
            info = self.path.stat()
        except OSError:
            return None
        return info.st_mtime_ns, info.st_size

    def _read(self) -> dict[str, jwt.PyJWK]:
        self._seen = self._stamp()
        try:
            with self.path.open("rb") as fh:
                data = fh.read(MAX_JWKS_BYTES + 1)
        except OSError as exc:
            raise JwksUnavailable(f"{self.path}: JWKS file cannot be read ({exc.strerror or exc})") from None
        return parse_jwks(data, str(self.path))

    def keys(self) -> dict[str, jwt.PyJWK]:
        """The key set in force: re-read first if the file changed since it was last read."""
        stamp = self._stamp()
        if stamp is not None and stamp != self._seen:
            try:
                self._keys = self._read()
            except JwksUnavailable as exc:
                logger.warning(
                    "JWKS file changed but is not used, the %d keys read before stay: %s", len(self._keys), exc
                )
            else:
                logger.warning(
                    "JWKS file re-read: %d signing keys (%s)",
                    len(self._keys),
                    ", ".join(k or "one without a kid" for k in sorted(self._keys)),
                )
        return self._keys

    async def key(self, kid: str | None) -> jwt.PyJWK:
        return pick_key(self.keys(), kid, "file")


class JwksUrl:
    """A JWKS fetched from an ``http(s)`` URL, with bounds (see the module docs).

    Args:
        url: where the JWKS is served.
        timeout: seconds one whole fetch may take (connecting, the answer, the body).
        wait: seconds a token waits for a fetch (it runs apart, on a thread of its own); past that the
            token is judged on the keys held now (an unknown key: refused), so a slow or hanging
            identity provider holds up no request longer than this.
        lifespan: seconds a fetched set is used before it is fetched again.
        cooldown: seconds between fetches for unknown keys, and after a failed fetch.
        clock: seconds, monotonic (for tests).
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 10.0,
        wait: float = 1.0,
        lifespan: float = 300.0,
        cooldown: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.source = url
        self.timeout = timeout
        self.wait = wait
        self.lifespan = lifespan
        self.cooldown = cooldown
        self._clock = clock
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched: float | None = None
        """When the set in force was fetched."""
        self._tried: float | None = None
        """When the last fetch began."""
        self._failure: str | None = None
        """Why the last fetch failed; ``None`` after a good one."""
        self._in_flight: threading.Event | None = None
        """Set when the fetch under way ends; ``None`` while none runs."""
        self.fetches = 0
        """Fetches begun (one shared by all who waited for it counts once)."""

    async def key(self, kid: str | None) -> jwt.PyJWK:
        now = self._clock()
        fresh = self._fetched is not None and now - self._fetched < self.lifespan
        if not (fresh and (kid in self._keys if kid is not None else self._keys)):
            await self._refresh(now)
        if self._failure is not None and not self._keys:
            raise jwt.PyJWKClientConnectionError(self._failure)
        return pick_key(self._keys, kid, f"at {self.source}")

    async def _refresh(self, now: float) -> None:
        """Start a fetch unless one runs or the cooldown holds, and wait at most :attr:`wait` for it.

        The fetch runs on a thread of its own, apart from any request: the token that started it is
        held up no longer than the others, and a hanging identity provider costs each at most ``wait``.
        """
        done = self._in_flight
        if done is None:
            if self._tried is not None and now - self._tried < self.cooldown:
                return  # at most one fetch per cooldown, failed or for an unknown key
            self._tried = now
            self.fetches += 1
            self._in_flight = done = threading.Event()
            threading.Thread(target=self._fetch_apart, args=(done,), name="jwks-fetch", daemon=True).start()
        waited = 0.0
        while not done.is_set() and waited < self.wait:  # a thread's event: looked at, not awaited
            await anyio.sleep(_POLL)
            waited += _POLL

    def _fetch_apart(self, done: threading.Event) -> None:
        """One fetch, on its own thread and event loop; its outcome replaces the key set (or says why not)."""
        try:
            keys = anyio.run(self._fetch)
        except JwksUnavailable as exc:
            if self._failure is None:
                kept = f"the {len(self._keys)} keys fetched before stay" if self._keys else "no keys to use meanwhile"
                logger.warning("JWKS fetch failed, next try in %gs (%s): %s", self.cooldown, kept, exc)
            self._failure = str(exc)
        except Exception as exc:  # a fault of the fetch itself: said like a failed fetch
            self._failure = f"{self.source} cannot be fetched: {type(exc).__name__}: {exc}"
            logger.warning("JWKS fetch failed, next try in %gs: %s", self.cooldown, self._failure)
        else:
            if self._failure is not None:
                logger.warning("JWKS fetched again: %d signing keys", len(keys))
            self._keys, self._fetched, self._failure = keys, self._clock(), None
        finally:
            self._in_flight = None
            done.set()

    async def _fetch(self) -> dict[str, jwt.PyJWK]:
        body = bytearray()
        try:
            with anyio.fail_after(self.timeout):
                async with (
                    httpx2.AsyncClient(timeout=self.timeout, follow_redirects=False) as client,
                    client.stream("GET", self.source, headers={"Accept": "application/json"}) as response,
                ):
                    if response.status_code != 200:
                        raise JwksUnavailable(f"{self.source} answered HTTP {response.status_code}, not a JWKS")
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) > MAX_JWKS_BYTES:
                            raise JwksUnavailable(f"{self.source}: the JWKS is over {MAX_JWKS_BYTES} bytes; refused")
        except TimeoutError:
            raise JwksUnavailable(f"{self.source} did not answer within {self.timeout:g}s") from None
        except httpx2.HTTPError as exc:
            raise JwksUnavailable(f"{self.source} cannot be fetched: {exc or type(exc).__name__}") from None
        return parse_jwks(bytes(body), self.source)
