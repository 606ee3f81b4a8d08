"""A server registry on loopback: the generic registry API over a list of entries, and the ways one can misbehave.

An ASGI app (run it with uvicorn, e.g. ``tests/host/hostile_http.py``'s ``serving_in_thread``) serving

* ``GET {mode}/v0.1/servers?limit=&cursor=&version=latest&updated_since=&search=``: pages of
  ``{"servers": [...], "metadata": {"nextCursor": ..., "count": ...}}``, the cursor being the
  offset of the next entry; ``updated_since`` keeps entries whose ``updatedAt`` is later;
* ``GET {mode}/v0.1/servers/{name}/versions/{version}``: one entry (``latest`` for the newest).

``mode`` is the first path segment and says how the registry behaves: ``ok``; ``huge`` (a page
of :data:`HUGE_BYTES`); ``drip`` (a page that trickles a byte every half second, forever);
``stall`` (a page that never starts); ``redirect-home`` (one redirect to ``ok`` on the same origin);
``redirect-away`` (a redirect to the same path on another origin); ``redirect-loop`` (redirects to
itself); ``cursor-loop`` (a ``nextCursor`` that never changes); ``endless`` (a new cursor on every
page, one entry each); ``not-json``; ``error`` (HTTP 500). Every request's path and query is kept
in :attr:`Registry.requests`, so a test can count what was asked; :attr:`Registry.down` makes every
answer HTTP 503 (an outage).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import parse_qs, quote, unquote

import anyio

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

HUGE_BYTES = 12 * 1024 * 1024
"""What a ``huge`` page sends (over the default page bound of 4 MiB)."""
MODES = (
    "ok",
    "huge",
    "drip",
    "stall",
    "redirect-home",
    "redirect-away",
    "redirect-loop",
    "cursor-loop",
    "endless",
    "not-json",
    "error",
)


def _updated(entry: dict[str, Any]) -> str:
    meta = entry.get("_meta", {}).get("io.modelcontextprotocol.registry/official", {})
    return str(meta.get("updatedAt", ""))


class Registry:
    """The app (see the module docs); ``entries`` are API entries (``{"server": ..., "_meta": ...}``)."""

    def __init__(self, entries: Sequence[dict[str, Any]], *, away: str = "http://127.0.0.2:9") -> None:
        self.entries = list(entries)
        self.away = away
        """The other origin ``redirect-away`` sends a client to."""
        self.requests: list[str] = []
        self.down = False
        """While set, every request is answered HTTP 503 (an outage)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": message["type"] + ".complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        path, query = scope["path"], scope["query_string"].decode()
        self.requests.append(f"{path}?{query}" if query else path)
        mode, _, rest = path.lstrip("/").partition("/")
        args = {k: v[-1] for k, v in parse_qs(query).items()}
        if self.down:
            await _json(send, {"error": "the registry is down for maintenance"}, 503)
            return
        if mode not in MODES or not rest.startswith("v0.1/servers"):
            await _json(send, {"error": "not found"}, 404)
            return
        if mode == "error":
            await _json(send, {"error": "the registry is down"}, 500)
        elif mode == "not-json":
            await _raw(send, b"<html>maintenance</html>")
        elif mode == "redirect-home":
            await _redirect(send, f"/ok/{rest}" + (f"?{query}" if query else ""))
        elif mode == "redirect-away":
            await _redirect(send, f"{self.away}{path}" + (f"?{query}" if query else ""))
        elif mode == "redirect-loop":
            await _redirect(send, path + (f"?{query}" if query else ""))
        elif mode == "stall":
            await anyio.sleep(3_600)
        elif mode == "drip":
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
            )
            for _ in range(100_000):
                await send({"type": "http.response.body", "body": b" ", "more_body": True})
                await anyio.sleep(0.5)
        elif mode == "huge":
            filler = "x" * HUGE_BYTES
            await _json(send, {"servers": [], "metadata": {"count": 0}, "filler": filler})
        elif rest.startswith("v0.1/servers/"):
            await self._one(send, rest.removeprefix("v0.1/servers/"))
        else:
            await self._page(send, mode, args)

    async def _page(self, send: Send, mode: str, args: dict[str, str]) -> None:
        entries = self.entries
        if since := args.get("updated_since"):
            entries = [e for e in entries if _updated(e) > since]
        if search := args.get("search"):
            entries = [e for e in entries if search.lower() in e["server"]["name"].lower()]
        start = int(args.get("cursor", "0") or 0) if mode != "cursor-loop" else 0
        limit = max(1, min(int(args.get("limit", "30")), 100))
        if mode == "endless":
            page, cursor = entries[:1], str(start + 1)
        else:
            page = entries[start : start + limit]
            cursor = str(start + limit) if start + limit < len(entries) else None
            if mode == "cursor-loop":
                cursor = "again"
        metadata: dict[str, Any] = {"count": len(page)}
        if cursor is not None:
            metadata["nextCursor"] = cursor
        await _json(send, {"servers": page, "metadata": metadata})

    async def _one(self, send: Send, rest: str) -> None:
        name, _, version = rest.partition("/versions/")
        name, version = unquote(name), unquote(version)
        for entry in self.entries:
            server = entry["server"]
            if server["name"] == name and version in ("latest", server["version"]):
                await _json(send, entry)
                return
        await _json(send, {"error": f"{quote(name)} {version} not found"}, 404)


async def _json(send: Send, body: Any, status: int = 200) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": data})


async def _raw(send: Send, data: bytes) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/html")]})
    await send({"type": "http.response.body", "body": data})


async def _redirect(send: Send, location: str) -> None:
    await send({"type": "http.response.start", "status": 302, "headers": [(b"location", location.encode())]})
    await send({"type": "http.response.body", "body": b""})
