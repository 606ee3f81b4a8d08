"""A 2026-07-28 upstream whose resources change: ``note://a``, ``note://b``, ``note://c``, edited by a tool.

``python notes_upstream.py`` serves it on stdin/stdout. Its tools:

* ``edit(name, text)``: changes ``note://NAME`` and publishes its update on ``subscriptions/listen``
  (the only way a 2026-07-28 server tells of it);
* ``streams()``: the resource URIs of every ``subscriptions/listen`` stream open now (one list per
  stream, sorted; streams without resource URIs, such as a watcher's, left out), so a test sees
  what the gateway holds open upstream;
* ``end_streams()``: ends every open listen stream that names resources, as a server dropping them
  would (the client sees the stream lost).

No ``from __future__ import annotations`` here: the SDK evaluates the tools' annotations.
"""

import json
from typing import Any

import anyio
from mcp.server.context import CallNext, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR

NOTES = ("a", "b", "c")


class Notes:
    def __init__(self) -> None:
        self.text = {name: f"first {name}" for name in NOTES}
        self.open: dict[int, tuple[list[str], anyio.CancelScope]] = {}
        self.server: MCPServer[Any] = MCPServer("notes", middleware=[self.track_listen])

        for name in NOTES:
            self.server.resource(f"note://{name}", name=f"note {name}", mime_type="text/plain")(self.reader(name))

        @self.server.tool()
        async def edit(name: str, text: str, ctx: Context) -> str:
            """Change a note (its subscribers are told)."""
            if name not in self.text:
                raise ValueError(f"no note {name!r}")
            self.text[name] = text
            await ctx.notify_resource_updated(f"note://{name}")
            return f"edited {name}"

        @self.server.tool()
        async def streams() -> str:
            """The resource URIs of each open listen stream."""
            return json.dumps(sorted(uris for uris, _ in self.open.values()))

        @self.server.tool()
        async def end_streams() -> str:
            """End every open listen stream that names resources."""
            for _, scope in self.open.values():
                scope.cancel()
            return "ended"

    def reader(self, name: str) -> Any:
        def read() -> str:
            return self.text[name]

        return read

    async def track_listen(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        if ctx.method != "subscriptions/listen":
            return await call_next(ctx)
        params = ctx.params if isinstance(ctx.params, dict) else {}
        uris = sorted((params.get("notifications") or {}).get("resourceSubscriptions") or [])
        if not uris:
            return await call_next(ctx)
        key = id(ctx)
        scope = anyio.CancelScope()
        self.open[key] = (uris, scope)
        try:
            with scope:
                return await call_next(ctx)
            raise MCPError(code=INTERNAL_ERROR, message="listen stream ended by the server")
        finally:
            self.open.pop(key, None)


if __name__ == "__main__":
    anyio.run(Notes().server.run_stdio_async)
