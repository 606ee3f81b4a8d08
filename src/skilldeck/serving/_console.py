"""The console page (``--console``): a read-only look inside ``serve`` or the gateway, at ``/console``.

What a :class:`ConsoleSource` says is rendered on the server from the templates beside this module
(Jinja2, every value escaped: upstream names, descriptions and questions are anyone's text), with a
little plain JavaScript for the search box and the live decisions; every asset is served from the
package (no CDN), and a Content-Security-Policy lets the page run only its own script.

Routes (``GET`` and ``HEAD`` only; nothing here changes anything):

* ``/console``: the page. Without a token verifier it shows the view of the policy's default
  identity (whoever asks over HTTP is that identity), with a banner saying so; with one, it asks
  for a bearer token, and the script fetches the view below with it.
* ``/console/view``: the upstreams, the catalog, and the search box, as the viewer may see them;
* ``/console/find?q=...``: the ranked cards ``find`` gives the viewer for ``q`` (gateway only);
* ``/console/events``: the decisions as they happen (server-sent events), those made for the
  viewer's audience only.

Live decisions come from the logs' listeners (:meth:`~skilldeck._records.JsonLinesLog.subscribe`),
which run on the recording thread inside the request that decided: the caller is worked out there
from the request's verified token, as the decision itself was, and a record is streamed only to
viewers of the same audience (tenant, roles and scopes). A record made outside any request while a
verifier is configured is streamed to nobody. Each viewer has a bounded queue; a viewer whose queue
is full is dropped (told so, and its stream ends) rather than ever holding up a decision, and at
most ``max_viewers`` streams are open at once.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

import anyio
from jinja2 import Environment, FileSystemLoader, select_autoescape
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse
from starlette.routing import Route, Router
from starlette.types import ASGIApp, Receive, Scope, Send

from skilldeck._records import JsonLinesLog
from skilldeck.serving._policy import Caller, Policy, caller_for
from skilldeck.skill import SkillEntry, SkillResource

__all__ = [
    "CONSOLE_PATH",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_STRING_BYTES",
    "MAX_TOKEN_CHARS",
    "CatalogView",
    "Console",
    "ConsoleSource",
    "SkillRow",
    "ToolRow",
    "UpstreamRow",
    "console_url",
    "with_console",
]

CONSOLE_PATH: Final = "/console"
MAX_QUERY_CHARS: Final = 2_000
"""The longest search a viewer may run: what ``find`` itself takes."""
MAX_QUERY_STRING_BYTES: Final = 32 * 1024
"""A longer query string is refused before it is parsed (2,000 characters percent-encoded fit)."""
MAX_TOKEN_CHARS: Final = 16 * 1024
"""A longer bearer token is refused before it reaches the verifier (as ``serve --jwt-jwks`` refuses one)."""
DEFAULT_MAX_VIEWERS: Final = 16
"""Live-decision streams open at once; one more is answered ``503``."""
DEFAULT_VIEWER_QUEUE: Final = 256
"""Records waiting for one viewer; a viewer that falls this far behind is dropped."""
DEFAULT_RECENT: Final = 100
"""Records kept to show a viewer who just opened the page."""

_LOOPBACK_HOSTS: Final = ("127.0.0.1", "localhost", "::1")
_LOOPBACK: Final = TransportSecuritySettings(  # what the SDK guards /mcp with on a loopback address
    enable_dns_rebinding_protection=True,
    allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
    allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
)
_TEMPLATES: Final = Path(__file__).with_name("console")
_STATIC: Final = {
    "console.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
_SECURITY_HEADERS: Final = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


@dataclass(frozen=True)
class UpstreamRow:
    """One upstream server as the console shows it."""

    label: str
    up: bool
    tools: int
    skills: int
    last_change: str | None = None
    """When it last changed (UTC) and why, ``None`` when it has not since the console started."""
    failures: int = 0
    """How many times it went down since the console started."""
    reason: str | None = None
    """Why it is down now (and when it is tried again)."""


@dataclass(frozen=True)
class SkillRow:
    """One skill as the console shows it: its id, its ``SKILL.md`` digest, its size and its files."""

    id: str
    description: str
    digest: str
    """The ``SKILL.md``'s digest (``dynamic`` for a generated skill)."""
    size: int
    files: tuple[SkillResource, ...] = ()

    @classmethod
    def of(cls, skill_id: str, entry: SkillEntry) -> SkillRow:
        """The row of ``entry``, listed under ``skill_id``."""
        if isinstance(entry.resources, str):
            return cls(skill_id, entry.description, entry.resources, 0)
        files = entry.resources
        digest = next((f.digest for f in files if f.uri == entry.uri), "")
        return cls(skill_id, entry.description, digest, sum(f.size for f in files), files)


@dataclass(frozen=True)
class ToolRow:
    """One tool as the console shows it, its input schema as indented JSON (shown folded)."""

    id: str
    description: str
    schema: str


@dataclass(frozen=True)
class CatalogView:
    """What one viewer may see: the upstreams (gateway only), the skills and the tools."""

    upstreams: Sequence[UpstreamRow] = ()
    skills: Sequence[SkillRow] = ()
    tools: Sequence[ToolRow] = ()


class ConsoleSource(Protocol):
    """What the console shows, asked per viewer: the gateway's and ``serve``'s adapters implement it."""

    @property
    def title(self) -> str: ...

    @property
    def searches(self) -> bool:
        """Whether :meth:`find` answers (the gateway's ``find``; ``serve`` has none)."""
        ...

    @property
    def logs(self) -> Sequence[JsonLinesLog]:
        """The logs whose records are the live decisions."""
        ...

    @property
    def policy(self) -> Policy | None:
        """The policy in force now (a reload may replace it)."""
        ...

    def view(self, caller: Caller) -> CatalogView: ...

    def find(self, caller: Caller, query: str) -> Mapping[str, Any]: ...


class _Refused(Exception):
    """A console request answered with an error (its status and the words shown)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class _Viewer:
    """One open live-decision stream: its audience, and the records waiting for it (bounded)."""

    audience: tuple[Any, ...] | None
    capacity: int
    queue: deque[str] = field(default_factory=deque)
    ready: anyio.Event = field(default_factory=anyio.Event)
    dropped: bool = False

    def offer(self, event: str) -> None:
        if self.dropped:
            return
        if len(self.queue) >= self.capacity:
            self.dropped = True  # it fell behind: the stream ends, saying so; the decision goes on
            self.queue.clear()
        else:
            self.queue.append(event)
        self.ready.set()


def _audience(caller: Caller) -> tuple[Any, ...]:
    """Who sees the same decisions: the audience without the locale (a wording hint, anyone's)."""
    return caller.audience[:3]


class Console:
    """The console's ASGI app, and the listener that feeds its live decisions (see the module docs).

    Args:
        source: what is shown (the gateway's or ``serve``'s adapter).
        verifier: the server's token verifier (the SDK's ``TokenVerifier``); ``None``: no tokens, the
            policy's default identity's view.
        max_viewers: live streams open at once.
        viewer_queue: records waiting for one viewer before it is dropped.
        recent: records kept to show a viewer who just opened the page.
        host: the address the server listens on: on a loopback address only a loopback ``Host`` (and
            ``Origin``) is answered, as the SDK guards ``/mcp`` there, so that a web page whose name
            was made to point at 127.0.0.1 (DNS rebinding) cannot read the console through a browser.
    """

    def __init__(
        self,
        source: ConsoleSource,
        verifier: Any = None,
        *,
        max_viewers: int = DEFAULT_MAX_VIEWERS,
        viewer_queue: int = DEFAULT_VIEWER_QUEUE,
        recent: int = DEFAULT_RECENT,
        host: str | None = None,
    ) -> None:
        self.source = source
        self._guard = TransportSecurityMiddleware(_LOOPBACK if host in _LOOPBACK_HOSTS else None)
        self.verifier = verifier
        self.max_viewers = max_viewers
        self.viewer_queue = viewer_queue
        self.viewers: list[_Viewer] = []
        self.dropped = 0
        """Viewers dropped for falling behind, since the start."""
        self._searching: tuple[Any, ...] | None = None
        """The audience of the console search being answered (its ``find`` is recorded outside any MCP request)."""
        self._recent: deque[tuple[tuple[Any, ...] | None, Mapping[str, Any]]] = deque(maxlen=recent)
        self._env = Environment(
            loader=FileSystemLoader(_TEMPLATES), autoescape=select_autoescape(default=True), auto_reload=False
        )
        self._unsubscribe = [log.subscribe(self._heard) for log in source.logs]
        self.app: ASGIApp = Router(
            routes=[
                Route(CONSOLE_PATH, self._page, methods=["GET", "HEAD"]),
                Route(f"{CONSOLE_PATH}/view", self._view, methods=["GET", "HEAD"]),
                Route(f"{CONSOLE_PATH}/find", self._find, methods=["GET", "HEAD"]),
                Route(f"{CONSOLE_PATH}/events", self._events, methods=["GET"]),
                Route(CONSOLE_PATH + "/static/{name}", self._static, methods=["GET", "HEAD"]),
            ]
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = await self._guard.validate_request(Request(scope))
            if refused is not None:
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)

    @staticmethod
    def answers(path: str) -> bool:
        """Whether ``path`` is the console's (``/console`` and what is under it)."""
        return path == CONSOLE_PATH or path.startswith(CONSOLE_PATH + "/")

    def close(self) -> int:
        """End every live stream (the server is stopping) and stop listening; how many were open."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []
        open_ = len(self.viewers)
        for viewer in self.viewers:
            viewer.dropped = True
            viewer.ready.set()
        return open_

    # -- who is looking ---------------------------------------------------------------------------

    async def viewer(self, request: Request) -> Caller:
        """The caller whose view ``request`` gets: its bearer token's, else the policy's default identity.

        Raises:
            _Refused: a verifier is configured and the token is missing, too long or not valid.
        """
        if self.verifier is None:
            return caller_for(self.source.policy, None)
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if len(token) > MAX_TOKEN_CHARS:
            raise _Refused(401, f"the bearer token is longer than {MAX_TOKEN_CHARS:,} characters")
        if scheme.lower() != "bearer" or not token.strip():
            raise _Refused(401, "this console needs a bearer token: paste the token you call the server with")
        access: AccessToken | None = await self.verifier.verify_token(token.strip())
        if access is None:
            raise _Refused(401, "the bearer token was not accepted (expired, or not issued for this server)")
        return caller_for(self.source.policy, access)

    def _record_audience(self) -> tuple[Any, ...] | None:
        """The audience of the request a record is being made in; ``None``: no one's (outside a request)."""
        if self._searching is not None:
            return self._searching
        token = get_access_token()
        if token is None and self.verifier is not None:
            return None
        return _audience(caller_for(self.source.policy, token))

    def _visible(self, audience: tuple[Any, ...] | None, viewer: tuple[Any, ...] | None) -> bool:
        return audience is not None and audience == viewer

    # -- the live decisions -----------------------------------------------------------------------

    def _heard(self, record: dict[str, Any]) -> None:
        """A log's listener: keep the record, and offer it to each viewer of its audience (rendered once, when
        one is watching: with nobody watching a decision costs no rendering)."""
        audience = self._record_audience()
        self._recent.append((audience, record))
        watching = [viewer for viewer in self.viewers if self._visible(audience, viewer.audience)]
        if watching:
            event = self._event(record)
            for viewer in watching:
                viewer.offer(event)

    def _event(self, record: Mapping[str, Any]) -> str:
        html = self._env.get_template("decision.html").render(record=_decision(record))
        return f"event: decision\ndata: {json.dumps({'html': html})}\n\n"

    async def _events(self, request: Request) -> Response:
        try:
            caller = await self.viewer(request)
        except _Refused as refused:
            return _text(refused.status, str(refused))
        if len(self.viewers) >= self.max_viewers:
            return _text(503, f"{self.max_viewers} live views are open; close one, or retry later")
        viewer = _Viewer(_audience(caller), self.viewer_queue)
        for audience, record in self._recent:
            if self._visible(audience, viewer.audience):
                viewer.offer(self._event(record))
        self.viewers.append(viewer)
        headers = {**_SECURITY_HEADERS, "x-accel-buffering": "no"}
        return StreamingResponse(self._stream(viewer), media_type="text/event-stream", headers=headers)

    async def _stream(self, viewer: _Viewer) -> AsyncIterator[str]:
        try:
            yield ": live decisions\n\n"
            while True:
                await viewer.ready.wait()
                viewer.ready = anyio.Event()
                while viewer.queue:
                    yield viewer.queue.popleft()
                if viewer.dropped:
                    if self._unsubscribe:  # not a shutdown: it fell behind
                        self.dropped += 1
                        yield "event: dropped\ndata: {}\n\n"
                    return
        finally:
            if viewer in self.viewers:
                self.viewers.remove(viewer)

    # -- the page ---------------------------------------------------------------------------------

    def _render(self, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = self._env.get_template(name).render(base=CONSOLE_PATH, source=self.source, **context)
        return HTMLResponse(html, status_code=status, headers=_SECURITY_HEADERS)

    async def _page(self, request: Request) -> Response:
        if self.verifier is not None:
            return self._render("page.html", auth=True, view=None)
        caller = caller_for(self.source.policy, None)
        return self._render("page.html", auth=False, view=self.source.view(caller), caller=caller)

    async def _view(self, request: Request) -> Response:
        try:
            caller = await self.viewer(request)
        except _Refused as refused:
            return self._render("refused.html", refused.status, message=str(refused))
        return self._render("view.html", view=self.source.view(caller), caller=caller)

    async def _find(self, request: Request) -> Response:
        try:
            if len(request.scope.get("query_string", b"")) > MAX_QUERY_STRING_BYTES:
                raise _Refused(414, f"the query string is longer than {MAX_QUERY_STRING_BYTES:,} bytes")
            caller = await self.viewer(request)
            if not self.source.searches:
                raise _Refused(404, "this server has no find: it serves skills, and clients list them")
            query = request.query_params.get("q", "")
            if len(query) > MAX_QUERY_CHARS:
                raise _Refused(400, f"a search is at most {MAX_QUERY_CHARS:,} characters; this one has {len(query):,}")
            if not query.strip():
                raise _Refused(400, "type what you want to do, in your own words")
        except _Refused as refused:
            return self._render("refused.html", refused.status, message=str(refused))
        self._searching = _audience(caller)  # find runs without awaiting: nothing else records meanwhile
        try:
            result = self.source.find(caller, query)
        finally:
            self._searching = None
        return self._render("cards.html", result=result, query=query)

    async def _static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return _text(404, "no such file")
        return Response((_TEMPLATES / name).read_bytes(), media_type=_STATIC[name], headers=_SECURITY_HEADERS)


def _text(status: int, message: str) -> Response:
    return Response(message, status_code=status, media_type="text/plain; charset=utf-8", headers=_SECURITY_HEADERS)


def _decision(record: Mapping[str, Any]) -> dict[str, Any]:
    """A record as one line of the live list: its kind, a summary, whether it was a refusal, and the rest."""
    if "decision" in record:  # the audit trail: a policy decision on a call
        kind, refused = "policy", record.get("decision") == "refused"
        summary = f"{record.get('tool')} {record.get('decision')} for {record.get('subject') or 'anonymous'}"
        summary += f": {record.get('reason')}"
    else:
        kind = str(record.get("kind", "?"))
        refused = bool(record.get("refused")) or bool(record.get("error")) or bool(record.get("abstain"))
        if kind == "find":
            chosen = ", ".join(map(str, record.get("chosen") or [])) or "abstained"
            summary = f"{record.get('query')!r} → {chosen} (confidence {record.get('confidence')})"
        elif kind == "load":
            summary = ", ".join(map(str, [*record.get("skills", []), *record.get("tools", [])])) or "nothing loaded"
        elif kind == "call":
            outcome = record.get("refused") or record.get("error") or ("isError" if record.get("isError") else "ok")
            summary = f"{record.get('tool')}: {outcome}"
        else:
            summary = ""
    rest = {k: v for k, v in record.items() if k not in {"time", "kind"}}
    return {
        "time": str(record.get("time", "")),
        "kind": kind,
        "refused": refused,
        "summary": summary,
        "fields": json.dumps(rest, ensure_ascii=False, default=str),  # no indent: indent takes the pure-Python encoder
    }


def console_url(mcp_url: str) -> str:
    """Where the page of the server listening at ``mcp_url`` is: the same scheme, host and port, at :data:`CONSOLE_PATH`."""
    from urllib.parse import urlsplit

    parts = urlsplit(mcp_url)
    return f"{parts.scheme}://{parts.netloc}{CONSOLE_PATH}"


def with_console(app: ASGIApp, console: Callable[[Scope, Receive, Send], Any]) -> ASGIApp:
    """``app``, with ``/console`` and what is under it answered by ``console`` first."""

    async def answer(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and Console.answers(scope.get("path", "")):
            await console(scope, receive, send)
        else:
            await app(scope, receive, send)

    return answer
