"""A real OAuth 2.1 authorization server and protected MCP server on loopback, for the OAuth tests.

Built from the SDK's own server side (``mcp.server.auth``): its metadata, ``/authorize``,
``/token``, ``/register`` and ``/revoke`` handlers, its bearer middleware answering 401 with
``WWW-Authenticate`` and its protected-resource metadata, over :class:`Provider`, an in-memory
provider that approves every authorization at once (the person who would click "allow" is the test).

What a test makes happen is driven by calls, never by waiting: :meth:`Provider.expire_access_tokens`
(the resource server refuses every access token issued so far, as after their expiry),
:meth:`Provider.revoke_all` (refresh tokens too), and counts of what the client did (registrations,
authorizations, refreshes, client-credentials grants). The SDK's token endpoint knows no
``client_credentials`` grant, so :func:`oauth_app` answers that grant itself, for the one client
registered beforehand (:data:`MACHINE_ID` / :data:`MACHINE_SECRET`).
"""

from __future__ import annotations

import base64
import json
import secrets
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from .hostile_http import App, Receive, Scope, Send, read_body, replaying, serving_in_thread

SCOPE = "mcp:read"
MACHINE_ID = "machine"
MACHINE_SECRET = "machine-secret-0123"


@dataclass
class Provider:
    """An in-memory authorization server that approves every request for :data:`SCOPE`."""

    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    access: dict[str, AccessToken] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)
    registrations: int = 0
    authorizations: int = 0
    refreshes: int = 0
    machine_grants: int = 0
    expires_in: int = 3600
    granted: list[str] | None = None
    """Scopes every token from now on is issued with, whatever was asked (fewer than the server requires: step-up)."""

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.registrations += 1
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        self.authorizations += 1
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        found = self.codes.get(code)
        return found if found is not None and found.client_id == client.client_id else None

    def issue(self, client_id: str, scopes: list[str], resource: str | None, *, refresh: bool = True) -> OAuthToken:
        scopes = self.granted if self.granted is not None else scopes
        access = "at-" + secrets.token_urlsafe(16)
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=int(time.time()) + 3600, resource=resource
        )
        refresh_token = None
        if refresh:
            refresh_token = "rt-" + secrets.token_urlsafe(16)
            self.refresh[refresh_token] = RefreshToken(
                token=refresh_token, client_id=client_id, scopes=scopes, resource=resource
            )
        return OAuthToken(
            access_token=access, expires_in=self.expires_in, scope=" ".join(scopes), refresh_token=refresh_token
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self.issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refreshes += 1
        self.refresh.pop(refresh_token.token, None)  # rotated
        return self.issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self.access.get(token)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def expire_access_tokens(self) -> None:
        """Every access token issued so far is refused from now on, as once they expire."""
        self.access.clear()

    def revoke_all(self) -> None:
        """Every token issued so far, refresh tokens too, is refused from now on."""
        self.access.clear()
        self.refresh.clear()

    def add_machine_client(self) -> None:
        self.clients[MACHINE_ID] = OAuthClientInformationFull(
            client_id=MACHINE_ID,
            client_secret=MACHINE_SECRET,
            redirect_uris=None,
            grant_types=["client_credentials"],
            token_endpoint_auth_method="client_secret_basic",
            scope=SCOPE,
        )

    def machine_grant(self, authorization: str, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """The token endpoint's answer to a ``client_credentials`` grant (client_secret_basic)."""
        try:
            client_id, _, secret = base64.b64decode(authorization.removeprefix("Basic ")).decode().partition(":")
        except ValueError:
            return 401, {"error": "invalid_client"}
        client = self.clients.get(client_id)
        if client is None or client.client_secret != secret or "client_credentials" not in (client.grant_types or []):
            return 401, {"error": "invalid_client"}
        self.machine_grants += 1
        token = self.issue(client_id, (form.get("scope") or SCOPE).split(), form.get("resource"), refresh=False)
        return 200, token.model_dump(exclude_none=True)


def oauth_app(provider: Provider, base: str) -> App:
    """The protected MCP server at ``base/mcp``, its authorization server at ``base``."""
    server = MCPServer(
        "protected",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=[SCOPE]),
            revocation_options=RevocationOptions(enabled=True),
            required_scopes=[SCOPE],
            validate_token_resource=False,
        ),
    )

    @server.tool()
    def whoami() -> str:
        """Says the caller got in."""
        return "in"

    inner = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/token":
            await inner(scope, receive, send)
            return
        body = await read_body(receive)
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        if form.get("grant_type") != "client_credentials":
            await inner(scope, replaying(body, receive), send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        status, answer = provider.machine_grant(headers.get("authorization", ""), form)
        json_headers = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]
        await send({"type": "http.response.start", "status": status, "headers": json_headers})
        await send({"type": "http.response.body", "body": json.dumps(answer).encode()})

    return app


@contextmanager
def oauth_server(provider: Provider) -> Iterator[str]:
    """The protected MCP server on a free loopback port, in a thread of its own; yields its ``/mcp`` URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    try:
        with serving_in_thread(oauth_app(provider, base), "/mcp", sock) as url:
            yield url
    finally:
        sock.close()


__all__ = ["MACHINE_ID", "MACHINE_SECRET", "SCOPE", "Provider", "oauth_app", "oauth_server"]
