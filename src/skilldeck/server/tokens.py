"""Bearer tokens for a skills server over HTTP: JWTs verified against a JWKS, as an SDK ``TokenVerifier``.

:class:`JwtVerifier` is what ``skilldeck serve --http --jwt-jwks ... --jwt-issuer ... --jwt-audience ...``
plugs into the SDK (``MCPServer(token_verifier=..., auth=AuthSettings(...))``). A token is accepted
only when its signature verifies with a key of the JWKS (picked by the token's ``kid``, with an
asymmetric algorithm bound to that key: RS*, PS*, ES*, EdDSA; never ``HS*`` or ``none``), its
``iss`` is the configured issuer, its ``aud`` names the configured audience, and it has not expired.
Anything else is ``None``, which the SDK answers with ``401``.

The verified claims go into the ``AccessToken`` whole; the policy's ``claims`` mapping (``tenant``,
``roles``) then picks the caller's tenant and roles from them (see
:meth:`skilldeck.server.SkillsExtension.caller`). ``client_id`` comes from ``client_id`` or
``azp``, scopes from ``scope`` (space-separated) or ``scp``.

The JWKS is a file, read once at start, or an ``http(s)`` URL fetched with PyJWT's
``PyJWKClient`` (cached for 5 minutes; an unknown ``kid`` refetches at most every 30 s, so random
key ids cannot make the server hammer the identity provider).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import jwt
from mcp.server.auth.provider import AccessToken

from skilldeck.errors import AuthConfigError

__all__ = ["ALGORITHMS", "MAX_JWKS_FILE_BYTES", "MAX_TOKEN_CHARS", "JwtVerifier"]

logger = logging.getLogger(__name__)

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
"""Signature algorithms accepted; each key verifies only with the algorithm its JWK names (or implies)."""

MAX_TOKEN_CHARS = 16 * 1024
"""Longer bearer tokens are refused before they are parsed."""

MAX_JWKS_FILE_BYTES = 1024 * 1024
"""A JWKS file larger than this is refused at start."""


class JwtVerifier:
    """Verify bearer JWTs against a JWKS file or URL, an issuer and an audience.

    Args:
        jwks: a path to a JWKS file (``{"keys": [...]}``) or an ``http(s)://`` URL serving one.
        issuer: the only accepted ``iss``.
        audience: the accepted ``aud`` value(s); a token must name one of them.
        leeway_s: clock skew tolerated on ``nbf`` and ``iat`` (the SDK checks ``exp`` itself).
        fetch_timeout_s: timeout of one JWKS fetch.

    Raises:
        AuthConfigError: the file is missing, too large, not a JWKS, or holds no usable signing key.
    """

    def __init__(
        self,
        jwks: str,
        *,
        issuer: str,
        audience: str | Sequence[str],
        leeway_s: float = 30.0,
        fetch_timeout_s: float = 10.0,
    ) -> None:
        if not issuer:
            raise AuthConfigError("an issuer is required: tokens from any issuer would otherwise be accepted")
        audiences = [audience] if isinstance(audience, str) else list(audience)
        if not audiences or not all(audiences):
            raise AuthConfigError("an audience is required: tokens issued for other services would be accepted")
        self.issuer = issuer
        self.audiences = audiences
        self.leeway_s = leeway_s
        self.source = jwks
        self._client: jwt.PyJWKClient | None = None
        self._keys: dict[str, jwt.PyJWK] = {}
        if jwks.startswith(("http://", "https://")):
            self._client = jwt.PyJWKClient(jwks, lifespan=300, timeout=fetch_timeout_s, cooldown_duration=30)
        else:
            self._keys = _load_jwks_file(Path(jwks))

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's ``AccessToken`` when it verifies, else ``None`` (the SDK answers 401)."""
        if len(token) > MAX_TOKEN_CHARS:
            logger.info("bearer token refused: longer than %d characters", MAX_TOKEN_CHARS)
            return None
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            if not isinstance(kid, str) or not kid:
                raise jwt.InvalidTokenError("the token has no 'kid' header naming its key")
            key = await self._key(kid)
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=list(ALGORITHMS),
                audience=self.audiences,
                issuer=self.issuer,
                leeway=self.leeway_s,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWKClientConnectionError as exc:
            logger.warning("bearer token refused: the JWKS at %s cannot be fetched (%s)", self.source, exc)
            return None
        except jwt.PyJWTError as exc:
            logger.info("bearer token refused: %s", exc)
            return None
        return _access_token(token, claims)

    async def _key(self, kid: str) -> jwt.PyJWK:
        if self._client is None:
            try:
                return self._keys[kid]
            except KeyError:
                raise jwt.InvalidTokenError(f"no key with kid {kid!r} in the JWKS file") from None
        key = await anyio.to_thread.run_sync(self._client.get_signing_key, kid)  # urllib blocks
        if key.algorithm_name not in ALGORITHMS:
            raise jwt.InvalidTokenError(f"key {kid!r} uses {key.algorithm_name}, not an accepted algorithm")
        return key


def _load_jwks_file(path: Path) -> dict[str, jwt.PyJWK]:
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_JWKS_FILE_BYTES + 1)
    except OSError as exc:
        raise AuthConfigError(f"{path}: JWKS file cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_JWKS_FILE_BYTES:
        raise AuthConfigError(f"{path}: JWKS file is over {MAX_JWKS_FILE_BYTES} bytes; is it the right file?")
    try:
        keys = jwt.PyJWKSet.from_json(data.decode("utf-8")).keys
    except (UnicodeDecodeError, json.JSONDecodeError, jwt.PyJWTError) as exc:
        raise AuthConfigError(f'{path}: not a JWKS ({{"keys": [...]}}): {exc}') from None
    usable = {
        k.key_id: k for k in keys if k.key_id and k.public_key_use in ("sig", None) and k.algorithm_name in ALGORITHMS
    }
    if not usable:
        raise AuthConfigError(
            f"{path}: the JWKS has no signing key with a 'kid' and an asymmetric algorithm ({', '.join(ALGORITHMS)})"
        )
    return usable


def _access_token(token: str, claims: dict[str, Any]) -> AccessToken:
    scope = claims.get("scope")
    scp = claims.get("scp")
    if isinstance(scope, str):
        scopes = scope.split()
    elif isinstance(scp, list):
        scopes = [str(s) for s in scp]
    elif isinstance(scp, str):
        scopes = scp.split()
    else:
        scopes = []
    client_id = claims.get("client_id") or claims.get("azp") or ""
    subject = claims.get("sub")
    exp = claims.get("exp")
    return AccessToken(
        token=token,
        client_id=str(client_id),
        scopes=scopes,
        expires_at=int(exp) if isinstance(exp, int | float) else None,
        subject=str(subject) if subject is not None else None,
        claims=claims,
    )
