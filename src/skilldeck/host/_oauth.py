"""OAuth 2.1 to remote MCP servers, through the SDK's client (``mcp.client.auth``).

The SDK's :class:`~mcp.client.auth.OAuthClientProvider` does the protocol: protected-resource and
authorization-server metadata discovery, dynamic client registration or a client ID metadata
document, PKCE, the scopes of a ``WWW-Authenticate`` challenge or ``scopes_supported``, step-up on
``insufficient_scope``, refresh. This module gives it what the host decides:

* **where tokens live**: the user's credential store (:mod:`skilldeck.host._credentials`), read
  afresh each time a connection is made, so that a ``skilldeck login`` in another terminal is picked
  up by the next retry of a running gateway; the access token's expiry is kept as a time of day, so
  a token read back after a restart is refreshed before it is sent;
* **that serving never waits for a person**: the provider :func:`auth_for` gives the host and the
  gateway refreshes what it can and otherwise raises :class:`~skilldeck.errors.LoginRequired` at
  once, whose message names the command to run (``skilldeck login LABEL --config FILE``); a server
  that answers 401 while nothing is stored for it gets the same answer, without registering a
  client first; one that answers ``403 insufficient_scope`` too, and the scopes it asked for, with
  those granted, are kept in the store for the next login to ask for (SEP-2350's union);
* **the login itself** (:func:`login`): a loopback listener on ``127.0.0.1`` bound first, its
  ``/callback`` the redirect URI; the authorization URL handed to ``show`` (printed, and opened in a
  browser); one callback awaited, bounded in time and size, whose ``state`` must be the one sent
  (anything else is answered 400 and the listener goes on waiting); a stored registration made for
  another redirect URI is dropped, so the client registers again;
* **client credentials** (``"grant": "client_credentials"``): the SDK's
  :class:`~mcp.client.auth.extensions.client_credentials.ClientCredentialsOAuthProvider`, with the
  tokens it gets kept in the same store; such an entry never needs a login.

The provider offers no hooks for this: the host overrides and calls its private methods, as
``docs/sdk-workarounds.md#oauth`` lists; ``tests/sdk`` pins their shape.
"""

from __future__ import annotations

import contextlib
import logging
import shlex
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
import anyio.to_thread
import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError, TokenStorage
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.auth.oauth2 import OAuthContext
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    create_oauth_metadata_request,
    extract_field_from_www_auth,
    extract_scope_from_www_auth,
    handle_auth_metadata_response,
    handle_protected_resource_response,
    union_scopes,
    validate_metadata_issuer,
)
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from mcp.shared.auth_utils import calculate_token_expiry
from pydantic import AnyUrl, ValidationError

from skilldeck.errors import LoginFailed, LoginRequired
from skilldeck.host._config import HttpServer, OAuthSettings, ServerSpec
from skilldeck.host._credentials import CredentialStore

__all__ = ["LOGIN_TIMEOUT", "StoredCredentials", "auth_for", "login", "login_command", "logout"]

LOGIN_TIMEOUT = 300.0
"""Seconds ``skilldeck login`` waits for the browser to come back to the loopback listener."""

CLIENT_NAME = "skilldeck"
"""The client name a dynamic registration gives (what an authorization server shows on its consent page)."""

_CALLBACK_PATH = "/callback"
_MAX_CALLBACK_BYTES = 16 * 1024
"""Bytes the request line and headers of one callback may take; a longer request is refused."""
_CALLBACK_READ_TIMEOUT = 10.0
"""Seconds one connection to the listener has to send its request."""
_SERVING_REDIRECT = "http://127.0.0.1/callback"
"""The redirect URI given in client metadata while serving, where no redirect ever happens."""

logger = logging.getLogger(__name__)

E = TypeVar("E", bound=BaseException)


def login_command(spec: ServerSpec) -> str:
    """``skilldeck login LABEL --config FILE``: what to run for ``spec``'s server, quoted for a shell."""
    if spec.source is None and isinstance(spec.transport, HttpServer):
        return shlex.join(["skilldeck", "login", spec.transport.url])
    return shlex.join(["skilldeck", "login", spec.label, *(["--config", spec.source] if spec.source else [])])


def _needs_login(spec: ServerSpec, why: str = "") -> LoginRequired:
    command = login_command(spec)
    said = f" ({why})" if why else ""
    return LoginRequired(f"needs a login{said}: run {command}", label=spec.label, command=command)


class StoredCredentials(TokenStorage):
    """The SDK's token storage over one server's record in a :class:`CredentialStore`.

    Every call reads or writes the store (in a worker thread: a keyring may block), so that what
    another process stored is what is used.
    """

    def __init__(self, store: CredentialStore, server: str) -> None:
        self.store = store
        self.server = server

    async def record(self) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(self.store.load, self.server) or {}

    async def _update(self, **fields: Any) -> None:
        record = await self.record()
        record.update(fields)
        await anyio.to_thread.run_sync(self.store.save, self.server, record)

    async def get_tokens(self) -> OAuthToken | None:
        raw = (await self.record()).get("tokens")
        try:
            return OAuthToken.model_validate(raw) if raw is not None else None
        except ValidationError:
            return None

    async def expires_at(self) -> float | None:
        """When the stored access token expires (``time.time()``), or ``None`` when it did not say."""
        at = (await self.record()).get("expires_at")
        return float(at) if isinstance(at, int | float) and not isinstance(at, bool) else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await self._update(
            tokens=tokens.model_dump(mode="json", exclude_none=True),
            expires_at=calculate_token_expiry(tokens.expires_in),
            saved_at=time.time(),
        )

    async def remember(self, context: OAuthContext) -> None:
        """Keep the metadata the flow discovered: a refresh after a restart goes to the right token endpoint."""
        found: dict[str, Any] = {}
        if context.oauth_metadata is not None:
            found["authorization_server"] = context.oauth_metadata.model_dump(mode="json", exclude_none=True)
        if context.protected_resource_metadata is not None:
            found["resource"] = context.protected_resource_metadata.model_dump(mode="json", exclude_none=True)
        if found:
            await self._update(metadata=found)

    async def restore(self, context: OAuthContext) -> None:
        """Put back into ``context`` the metadata :meth:`remember` kept."""
        found = (await self.record()).get("metadata")
        if not isinstance(found, dict):
            return
        try:
            if "authorization_server" in found:
                context.oauth_metadata = OAuthMetadata.model_validate(found["authorization_server"])
            if "resource" in found:
                context.protected_resource_metadata = ProtectedResourceMetadata.model_validate(found["resource"])
        except ValidationError:
            return
        if context.oauth_metadata is not None:
            context.auth_server_url = str(context.oauth_metadata.issuer)

    async def step_up(self) -> str | None:
        """The scopes a server asked for more of (``403 insufficient_scope``) since the last login, or ``None``."""
        wanted = (await self.record()).get("step_up")
        return wanted if isinstance(wanted, str) and wanted else None

    async def set_step_up(self, scope: str | None) -> None:
        await self._update(step_up=scope)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        raw = (await self.record()).get("client")
        try:
            return OAuthClientInformationFull.model_validate(raw) if raw is not None else None
        except ValidationError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self._update(client=client_info.model_dump(mode="json", exclude_none=True))


def _configured_client(settings: OAuthSettings, redirect_uri: str | None) -> OAuthClientInformationFull | None:
    """The client registered beforehand that the entry names (``clientId``), or ``None``."""
    if settings.client_id is None:
        return None
    return OAuthClientInformationFull(
        client_id=settings.client_id,
        client_secret=settings.client_secret,
        redirect_uris=[AnyUrl(redirect_uri)] if redirect_uri else None,
        token_endpoint_auth_method="client_secret_basic" if settings.client_secret else "none",
        grant_types=["authorization_code", "refresh_token"],
        scope=settings.scope,
    )


def _insufficient_scope(response: httpx2.Response) -> bool:
    challenge = response.headers.get("www-authenticate", "")
    return response.status_code == 403 and "insufficient_scope" in challenge


class _Browser:
    """What ``login`` hands the provider: where the person is sent, and how their return is awaited."""

    def __init__(self, redirect_uri: str, show: Callable[[str], Awaitable[None]], callback: _Callback) -> None:
        self.redirect_uri = redirect_uri
        self.show = show
        self.callback = callback


class _HostOAuth(OAuthClientProvider):
    """The authorization-code provider: from stored tokens while serving, interactive for ``login``."""

    def __init__(self, spec: ServerSpec, server: HttpServer, storage: StoredCredentials, browser: _Browser | None):
        settings = server.oauth or OAuthSettings()
        redirect = browser.redirect_uri if browser is not None else _SERVING_REDIRECT
        metadata = OAuthClientMetadata(
            client_name=CLIENT_NAME,
            redirect_uris=[AnyUrl(redirect)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
            scope=settings.scope,
        )
        super().__init__(
            server.url,
            metadata,
            storage,
            redirect_handler=browser.show if browser is not None else self._no_person,
            callback_handler=browser.callback.wait if browser is not None else self._no_person,
            client_metadata_url=settings.client_metadata_url,
        )
        self._spec = spec
        self._settings = settings
        self._stored = storage
        self._browser = browser
        self._confirmed = False
        """Whether the authorization server metadata held was found in this process (not read from the store)."""

    async def _no_person(self, *_: object) -> Any:
        raise _needs_login(self._spec)

    async def _initialize(self) -> None:
        client = _configured_client(self._settings, self._browser.redirect_uri if self._browser else None)
        stored = await self._stored.get_client_info()
        if client is None and stored is not None:
            fits = self._browser is None or self._browser.redirect_uri in {str(u) for u in stored.redirect_uris or []}
            client = stored if fits else None  # registered for another loopback port: register again
        self.context.client_info = client
        if self._browser is None:  # serving: the stored tokens, and where they came from; a login starts afresh
            self.context.current_tokens = await self._stored.get_tokens()
            self.context.token_expiry_time = await self._stored.expires_at()
            await self._stored.restore(self.context)
        else:
            self.context.clear_tokens()
        self._initialized = True

    def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if self._browser is not None:
            return super()._auth_flow(request)
        return self._serving_flow(request)

    def _expired(self) -> bool:
        """Whether the tokens held are past their time and can be refreshed."""
        held = self.context.current_tokens is not None and self.context.client_info is not None
        return held and not self.context.is_token_valid() and self.context.can_refresh_token()

    def _challenged(self, response: httpx2.Response) -> str | None:
        """The scopes a ``403 insufficient_scope`` asks for: those of the challenge, else those the server lists."""
        metadata = self.context.protected_resource_metadata
        listed = " ".join(metadata.scopes_supported) if metadata and metadata.scopes_supported else None
        return extract_scope_from_www_auth(response) or listed

    def _wanted(self, response: httpx2.Response) -> str:
        """Words for what a ``403 insufficient_scope`` asks for."""
        described = extract_field_from_www_auth(response, "error_description")
        return self._challenged(response) or described or "not said"

    async def _refreshed(self, response: httpx2.Response) -> None:
        """Take the answer to a refresh (the caller holds the lock), or raise :class:`LoginRequired`.

        A refused refresh token may have been rotated by another process sharing the store (a gateway
        and a ``skilldeck skills`` at once): tokens stored since are taken instead.
        """
        used = self.context.current_tokens.refresh_token if self.context.current_tokens else None
        if response.status_code == 200 and await self._handle_refresh_response(response):
            return
        stored = await self._stored.get_tokens()
        if stored is not None and stored.refresh_token not in (None, used):
            self.context.current_tokens = stored
            self.context.token_expiry_time = await self._stored.expires_at()
            return
        self.context.clear_tokens()
        raise _needs_login(self._spec, f"the refresh token was refused (HTTP {response.status_code})")

    async def _refresh_steps(self) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """A refresh (the caller holds the lock): the requests to send, each given its response.

        The token endpoint is the one the server's metadata names, found again before the first refresh
        of the process: the one kept in the store is only a cache, and a record rewritten to name
        another endpoint would send it the refresh token (and a configured client secret).
        """
        if not self._confirmed:
            stored = self.context.oauth_metadata
            for url in build_protected_resource_metadata_discovery_urls(None, self.context.server_url):
                prm = await handle_protected_resource_response((yield create_oauth_metadata_request(url)))
                if prm is not None:
                    await self._validate_resource_match(prm)
                    self.context.protected_resource_metadata = prm
                    self.context.auth_server_url = self._select_authorization_server(
                        [str(server) for server in prm.authorization_servers]
                    )
                    break
            found = None
            urls = build_oauth_authorization_server_metadata_discovery_urls(
                self.context.auth_server_url, self.context.server_url
            )
            for url in urls:
                ok, found = await handle_auth_metadata_response((yield create_oauth_metadata_request(url)))
                if not ok or found is not None:
                    break
            if found is None:
                raise ConnectionError(
                    f"{self._spec.label}: its authorization server's metadata could not be read, so its tokens were "
                    "not refreshed (a refresh goes only to the token endpoint that metadata names); try again"
                )
            validate_metadata_issuer(found, self._expected_issuer())
            if stored is not None and str(stored.token_endpoint) != str(found.token_endpoint):
                logger.warning(
                    "the stored token endpoint of %s (%s) is not the one its authorization server names (%s): "
                    "refreshing at the one named, and keeping it",
                    self._spec.label,
                    stored.token_endpoint,
                    found.token_endpoint,
                )
            self.context.oauth_metadata = found
            self._confirmed = True
            await self._stored.remember(self.context)
        await self._refreshed((yield await self._refresh_token()))

    async def _serving_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The stored tokens, refreshed when they expire or are refused; never the interactive flow."""
        if not self._initialized or self._expired():  # else no lock: taking one costs each request two loop turns
            async with self.context.lock:
                if not self._initialized:
                    await self._initialize()
                if self._expired():  # still: no other request refreshed them meanwhile
                    steps = self._refresh_steps()
                    step = await anext(steps)
                    with contextlib.suppress(StopAsyncIteration):
                        while True:
                            step = await steps.asend((yield step))
        if self.context.current_tokens is not None and self.context.client_info is not None:
            self._add_auth_header(request)
        sent = request.headers.get("authorization")
        response = yield request
        if _insufficient_scope(response):
            await self._remember_step_up(response)
            raise _needs_login(self._spec, f"the server asks for more scope: {self._wanted(response)}")
        if response.status_code != 401:
            return
        if sent is None:  # no login yet: a challenge is answered with the command, never with a registration
            raise _needs_login(self._spec, "no stored tokens")
        async with self.context.lock:
            current = self.context.current_tokens
            if current is None or f"Bearer {current.access_token}" == sent:  # not refreshed by another request since
                if not self.context.can_refresh_token():
                    raise _needs_login(self._spec, "the stored tokens were refused")
                steps = self._refresh_steps()
                step = await anext(steps)
                with contextlib.suppress(StopAsyncIteration):
                    while True:
                        step = await steps.asend((yield step))
            self._add_auth_header(request)
        yield request

    async def _remember_step_up(self, response: httpx2.Response) -> None:
        """Keep what a ``403 insufficient_scope`` asks for, with what was granted, for the next login (SEP-2350)."""
        challenged = self._challenged(response)
        if challenged is None:
            return
        granted = self.context.current_tokens.scope if self.context.current_tokens else None
        await self._stored.set_step_up(union_scopes(union_scopes(await self._stored.step_up(), granted), challenged))

    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        """The login's authorization request, asking also for the scopes a server asked more of since the last."""
        if self._browser is not None and self._settings.scope is None:
            wanted = await self._stored.step_up()
            self.context.client_metadata.scope = union_scopes(self.context.client_metadata.scope, wanted)
        return await super()._perform_authorization_code_grant()

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        await super()._handle_token_response(response)
        await self._stored.remember(self.context)  # the token endpoint to refresh at, after a restart too
        if self._browser is not None:  # a login: what a step-up asked for was asked for now
            await self._stored.set_step_up(None)


class _ClientCredentials(ClientCredentialsOAuthProvider):
    """Machine to machine: the SDK's client-credentials provider, its tokens kept in the store."""

    def __init__(self, server: HttpServer, settings: OAuthSettings, storage: StoredCredentials) -> None:
        assert settings.client_id is not None  # the config's check
        assert settings.client_secret is not None
        super().__init__(
            server.url,
            storage,
            settings.client_id,
            settings.client_secret,
            scope=settings.scope,
            issuer=settings.issuer,
        )
        self._stored = storage

    async def _initialize(self) -> None:
        await super()._initialize()
        self.context.token_expiry_time = await self._stored.expires_at()


def auth_for(spec: ServerSpec, store: CredentialStore) -> httpx2.Auth | None:
    """The OAuth a connection to ``spec`` made while serving uses, or ``None`` when its entry has none.

    It never waits for a person: where a login is needed it raises :class:`LoginRequired`.
    """
    server = spec.transport
    if not isinstance(server, HttpServer) or server.oauth is None or _authorized(server):
        return None
    storage = StoredCredentials(store, server.url)
    if server.oauth.grant == "client_credentials":
        return _ClientCredentials(server, server.oauth, storage)
    return _HostOAuth(spec, server, storage, None)


def _authorized(server: HttpServer) -> bool:
    """Whether the entry sends an ``Authorization`` header of its own (then OAuth stays out of the way)."""
    return any(name.lower() == "authorization" for name in server.headers)


def logout(spec: ServerSpec, store: CredentialStore) -> bool:
    """Forget the tokens and client registration stored for ``spec``'s server; whether there were any."""
    server = spec.transport
    if not isinstance(server, HttpServer):
        raise LoginFailed(f"{spec.label} is not an HTTP server: there is nothing to log out of")
    return store.delete(server.url)


class _Callback:
    """The loopback listener a login's redirect comes back to: one good callback is awaited."""

    def __init__(self, listener: anyio.abc.Listener[anyio.abc.SocketStream], port: int) -> None:
        self.listener = listener
        self.redirect_uri = f"http://127.0.0.1:{port}{_CALLBACK_PATH}"
        self.expected_state: str | None = None
        self._result: AuthorizationCodeResult | None = None
        self._error: str | None = None
        self._done = anyio.Event()

    def expect(self, authorization_url: str) -> None:
        """Take the ``state`` the authorization URL carries: only a callback with it is accepted."""
        states = parse_qs(urlsplit(authorization_url).query).get("state", [])
        self.expected_state = states[0] if states else None

    async def wait(self) -> AuthorizationCodeResult:
        await self._done.wait()
        if self._result is None:
            raise LoginFailed(self._error or "the login was not completed")
        return self._result

    async def serve(self) -> None:
        async with self.listener:
            await self.listener.serve(self._one)

    async def _one(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            try:
                with anyio.fail_after(_CALLBACK_READ_TIMEOUT):
                    head = await _read_head(stream)
            except (TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                return
            if head is None:
                await _answer(stream, 431, "Request too large.")
                return
            status, page = self._judge(head)
            await _answer(stream, status, page)

    def _judge(self, head: bytes) -> tuple[int, str]:
        """The answer to one request, and the login's outcome when it is the callback awaited."""
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        method, _, rest = line.partition(" ")
        parts = urlsplit(rest.rpartition(" ")[0] or rest)
        if method != "GET" or parts.path != _CALLBACK_PATH:
            return 404, "Not found."
        if self._done.is_set():
            return 409, "This login is already over; you can close this tab."
        query = {k: v[0] for k, v in parse_qs(parts.query).items() if v}
        if self.expected_state is None or query.get("state") != self.expected_state:
            return 400, "This callback is not the one awaited (its state does not match); nothing was done."
        return self._take(query)

    def _take(self, query: dict[str, str]) -> tuple[int, str]:
        """The outcome of the awaited callback (its state checked): a code, or the authorization server's refusal."""
        if "error" in query:
            detail = query.get("error_description", "")
            self._error = f"the authorization server refused: {query['error']}" + (f" ({detail})" if detail else "")
            self._done.set()
            return 400, f"Login refused: {query['error']}. You can close this tab."
        if not query.get("code"):
            return 400, "The callback carries no authorization code."
        self._result = AuthorizationCodeResult(code=query["code"], state=query["state"], iss=query.get("iss"))
        self._done.set()
        return 200, "Logged in to the MCP server; you can close this tab and return to skilldeck."


async def _read_head(stream: anyio.abc.SocketStream) -> bytes | None:
    """The request line and headers, or ``None`` when they pass the limit."""
    head = b""
    while b"\r\n\r\n" not in head:
        if len(head) > _MAX_CALLBACK_BYTES:
            return None
        head += await stream.receive(4096)
    return head if head.index(b"\r\n\r\n") <= _MAX_CALLBACK_BYTES else None


async def _answer(stream: anyio.abc.SocketStream, status: int, text: str) -> None:
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 409: "Conflict", 431: "Request Header Fields Too Large"}
    body = f"<!doctype html><title>skilldeck login</title><p>{text}</p>\n".encode()
    head = (
        f"HTTP/1.1 {status} {reason[status]}\r\nContent-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
    ).encode()
    with contextlib.suppress(anyio.BrokenResourceError, OSError):
        await stream.send(head + body)


async def login(
    spec: ServerSpec,
    store: CredentialStore,
    show: Callable[[str], Awaitable[None] | None],
    connect: Callable[[ServerSpec, httpx2.Auth], Awaitable[None]],
    *,
    timeout: float = LOGIN_TIMEOUT,  # noqa: ASYNC109 - the wait for a person alone, not the whole call
) -> bool:
    """Run the authorization-code flow once for ``spec`` and store the tokens; whether a login was asked for.

    ``show(url)`` sends the person to the authorization URL (prints it, opens a browser);
    ``connect(spec, auth)`` opens a session through ``auth`` and closes it
    (:func:`skilldeck.host._connect.connect_once`). ``False``: the server let the session open without a login, and nothing
    was stored.

    Raises:
        LoginFailed: no callback within ``timeout`` seconds, the authorization server refused, or the flow failed.
    """
    server = _login_target(spec)
    assert server.oauth is not None  # checked there
    try:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=server.oauth.callback_port or 0)
    except OSError as exc:
        raise LoginFailed(f"cannot listen on 127.0.0.1 for the login's callback: {exc.strerror or exc}") from None
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    callback = _Callback(listener, port)
    shown = anyio.Event()

    async def send_person(url: str) -> None:
        callback.expect(url)
        shown.set()
        said = show(url)
        if said is not None:
            await said

    async def wait_for_person() -> AuthorizationCodeResult:
        try:
            with anyio.fail_after(timeout):
                return await callback.wait()
        except TimeoutError:
            raise LoginFailed(f"no login within {timeout:g} s (the browser never came back)") from None

    browser = _Browser(callback.redirect_uri, send_person, callback)
    storage = StoredCredentials(store, server.url)
    provider = _HostOAuth(spec, server, storage, browser)
    provider.context.callback_handler = wait_for_person
    ended: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(callback.serve)
        try:
            await connect(spec, provider)
        except Exception as exc:  # raised below, out of the task group (which would wrap it)
            ended = exc
        finally:
            tg.cancel_scope.cancel()
    if ended is not None:
        raise _login_error(spec, ended) from None
    return shown.is_set()


def _login_target(spec: ServerSpec) -> HttpServer:
    """The HTTP server of ``spec`` when a person's login is what it takes; else :class:`LoginFailed` saying why not."""
    server = spec.transport
    if not isinstance(server, HttpServer):
        raise LoginFailed(f"{spec.label} is a {spec.kind} server: OAuth is for HTTP servers")
    if server.oauth is None or _authorized(server):
        raise LoginFailed(
            f'{spec.label} has OAuth turned off (an Authorization header, or "oauth": false in its entry)'
        )
    if server.oauth.grant == "client_credentials":
        raise LoginFailed(f"{spec.label} logs in with client credentials by itself: there is nothing to run")
    return server


def _login_error(spec: ServerSpec, ended: Exception) -> Exception:
    """What a login that ended with ``ended`` raises: the :class:`LoginFailed` or OAuth error inside it, else itself."""
    failed = _found(ended, LoginFailed)
    if failed is not None:
        return failed
    flow = _found(ended, OAuthFlowError)
    if flow is not None:
        return LoginFailed(f"the OAuth flow failed: {spec.redact(str(flow))}")
    return ended


def _found(exc: BaseException, kind: type[E]) -> E | None:
    """The first ``kind`` in ``exc``, the groups it holds, or what it was raised from."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, kind):
            return current
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return None
