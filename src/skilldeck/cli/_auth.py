"""``skilldeck serve`` over HTTP: bearer-token verification flags and the warnings printed at start."""

from __future__ import annotations

import argparse
import ipaddress
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skilldeck.serving._api import JwtVerifier

__all__ = ["SDK_PROTECTED_HOSTS", "add_auth_arguments", "serve_auth", "serve_warnings"]

SDK_PROTECTED_HOSTS = ("127.0.0.1", "localhost", "::1")
"""Bind addresses for which the SDK turns on its Host/Origin (DNS rebinding) checks by itself."""


def add_auth_arguments(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "--jwt-jwks",
        metavar="FILE|URL",
        help="verify bearer tokens as JWTs signed by a key of this JWKS (needs --http, --jwt-issuer, --jwt-audience)",
    )
    serve.add_argument("--jwt-issuer", metavar="URL", help="the only accepted 'iss' (the authorization server)")
    serve.add_argument(
        "--jwt-audience", metavar="URL", help="the required 'aud': this server's public URL as tokens name it"
    )


def serve_auth(args: argparse.Namespace) -> tuple[JwtVerifier | None, Any]:
    """The token verifier and SDK ``AuthSettings`` the flags ask for, or ``(None, None)`` without ``--jwt-jwks``.

    Raises:
        AuthConfigError: a flag is missing or unusable (the message names it).
    """
    from skilldeck.errors import AuthConfigError
    from skilldeck.serving._api import JwtVerifier

    given = [f"--jwt-{n}" for n in ("issuer", "audience") if getattr(args, f"jwt_{n}")]
    if not args.jwt_jwks:
        if given:
            raise AuthConfigError(f"{given[0]} needs --jwt-jwks FILE|URL (the keys that sign the tokens)")
        return None, None
    if args.http is None:
        raise AuthConfigError("--jwt-jwks needs --http HOST:PORT: stdio has no bearer tokens")
    if not args.jwt_issuer or not args.jwt_audience:
        missing = "--jwt-issuer" if not args.jwt_issuer else "--jwt-audience"
        raise AuthConfigError(f"--jwt-jwks needs {missing} too: without it, tokens meant for others would pass")
    from mcp.server.auth.settings import AuthSettings
    from pydantic import ValidationError

    verifier = JwtVerifier(args.jwt_jwks, issuer=args.jwt_issuer, audience=args.jwt_audience)
    audience_is_url = args.jwt_audience.startswith(("http://", "https://"))
    try:
        settings = AuthSettings(
            issuer_url=args.jwt_issuer,
            # Published as the protected resource (RFC 9728) so clients find the authorization server.
            resource_server_url=args.jwt_audience if audience_is_url else None,
            validate_token_resource=False,  # the verifier checks 'aud' itself
            required_scopes=None,
        )
    except ValidationError:
        raise AuthConfigError(
            f"--jwt-issuer {args.jwt_issuer!r} must be the authorization server's http(s) URL, as in the tokens' 'iss'"
        ) from None
    return verifier, settings


def serve_warnings(args: argparse.Namespace, *, gateway: bool = False) -> list[str]:
    """One line per risky choice of ``serve`` or the ``gateway``: a policy over HTTP without tokens, a
    gateway over HTTP without tokens (its anonymous callers share activations), a non-loopback bind."""
    if args.http is None:
        return []
    warnings = []
    if gateway and not args.jwt_jwks:
        warnings.append(
            "the gateway over HTTP without token verification: 2026-07-28 callers that send no conversation id "
            "(_meta dev.skilldeck/conversation) share one activation, so one caller's load activates tools for "
            "all of them; add --jwt-jwks, --jwt-issuer and --jwt-audience"
        )
        if getattr(args, "no_learning", False) or getattr(args, "check", False):
            pass  # nothing is learned
        elif getattr(args, "learn_anonymous", False):
            warnings.append(
                "--learn-anonymous: callers without a token teach the usage ledger as one untrusted caller (at most "
                "half of a card's questions once a caller with a token taught it, never trusted)"
            )
        else:
            warnings.append(
                "learning from use is off for callers without a token (anyone could teach it anything): add "
                "--jwt-jwks, --jwt-issuer and --jwt-audience, or --learn-anonymous to let them teach as one "
                "untrusted caller"
            )
    if args.policy and not args.jwt_jwks:
        warnings.append(
            "--policy over HTTP without token verification: every caller gets the policy's default_identity; "
            "add --jwt-jwks, --jwt-issuer and --jwt-audience"
        )
    host = args.http[0]
    if host not in SDK_PROTECTED_HOSTS:
        where = (
            "reachable beyond this machine" if not _is_loopback(host) else "a loopback address the SDK does not know"
        )
        warnings.append(
            f"binding {host} ({where}): the SDK's Host/Origin (DNS rebinding) checks are off; "
            "put it behind a proxy that checks them, or bind 127.0.0.1"
        )
    return warnings


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
