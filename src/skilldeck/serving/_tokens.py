"""Bearer tokens for a skills server over HTTP: JWTs verified against a JWKS, as an SDK ``TokenVerifier``.

:class:`JwtVerifier` is what ``skilldeck serve --http --jwt-jwks ... --jwt-issuer ... --jwt-audience ...``
plugs into the SDK (``MCPServer(token_verifier=..., auth=AuthSettings(...))``). A token is accepted
only when its signature verifies with a key of the JWKS (picked by the token's ``kid``, or the
JWKS's one key for a token without a ``kid``, with an asymmetric algorithm bound to that key: RS*, PS*, ES*, EdDSA; never ``HS*`` or ``none``), its
``iss`` is the configured issuer, its ``aud`` names the configured audience, and it has not expired.
Anything else is ``None``, which the SDK answers with ``401``.

The verified claims go into the ``AccessToken`` whole; the policy's ``claims`` mapping (``tenant``,
``roles``) then picks the caller's tenant and roles from them (see
:meth:`skilldeck.server.SkillsExtension.caller`). ``client_id`` comes from ``client_id`` or
``azp``, scopes from ``scope`` (space-separated) or ``scp``.

The JWKS is a file, re-read when it changes, or an ``http(s)`` URL fetched with bounds (kept for
5 minutes; an unknown ``kid`` refetches at most every 30 s, so random key ids cannot make the
server hammer the identity provider): see :mod:`skilldeck.serving._jwks`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import jwt
from mcp.server.auth.provider import AccessToken

from skilldeck.errors import AuthConfigError
from skilldeck.serving._jwks import ALGORITHMS, MAX_JWKS_BYTES, JwksFile, JwksSource, JwksUrl

__all__ = ["ALGORITHMS", "MAX_JWKS_FILE_BYTES", "MAX_TOKEN_CHARS", "AuthConfigError", "JwtVerifier"]

logger = logging.getLogger(__name__)

MAX_TOKEN_CHARS = 16 * 1024
"""Longer bearer tokens are refused before they are parsed."""

MAX_JWKS_FILE_BYTES = MAX_JWKS_BYTES
"""A JWKS file larger than this is refused at start (and not used if it grows so later)."""


class JwtVerifier:
    """Verify bearer JWTs against a JWKS file or URL, an issuer and an audience.

    Args:
        jwks: a path to a JWKS file (``{"keys": [...]}``), an ``http(s)://`` URL serving one, or a
            :class:`~skilldeck.serving._jwks.JwksSource` of your own.
        issuer: the only accepted ``iss``.
        audience: the accepted ``aud`` value(s); a token must name one of them.
        leeway_s: clock skew tolerated on ``nbf`` and ``iat`` (the SDK checks ``exp`` itself).
        fetch_timeout_s: timeout of one JWKS fetch.

    Raises:
        AuthConfigError: the file is missing, too large, not a JWKS, or holds no usable signing key.
    """

    def __init__(
        self,
        jwks: str | JwksSource,
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
        self.keys: JwksSource
        if not isinstance(jwks, str):
            self.keys = jwks
        elif jwks.startswith(("http://", "https://")):
            self.keys = JwksUrl(jwks, timeout=fetch_timeout_s)
        else:
            self.keys = JwksFile(jwks)
        self.source = self.keys.source

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's ``AccessToken`` when it verifies, else ``None`` (the SDK answers 401)."""
        if len(token) > MAX_TOKEN_CHARS:
            logger.info("bearer token refused: longer than %d characters", MAX_TOKEN_CHARS)
            return None
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            if kid is not None and not isinstance(kid, str):
                raise jwt.InvalidTokenError("the token's 'kid' header is not a string")
            key = await self.keys.key(kid or None)  # none (or empty): the JWKS's one key, if it has one
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=list(ALGORITHMS),
                audience=self.audiences,
                issuer=self.issuer,
                leeway=self.leeway_s,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWKClientConnectionError as exc:  # the source said why, once
            logger.info("bearer token refused: no JWKS from %s yet (%s)", self.source, exc)
            return None
        except jwt.PyJWTError as exc:
            logger.info("bearer token refused: %s", exc)
            return None
        return _access_token(token, claims)


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
