"""A small upstream for the learning tests: five tools, one that always fails, served for real.

``python usage_upstream.py`` serves it on stdin/stdout; the tests in process serve
:func:`usage_server` over streamable HTTP on loopback.

No ``from __future__ import annotations`` here: the SDK evaluates the tools' annotations.
"""

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError


def usage_server() -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("up")

    @server.tool()
    def forecast(city: str) -> str:
        """Weather forecast for a city: temperature and rain for the next days."""
        return f"{city}: 18C, light rain"

    @server.tool()
    def events(city: str) -> str:
        """What is on in a city this Saturday and Sunday: concerts, markets and shows, in Paris or elsewhere."""
        return f"{city}: a market on Saturday"

    @server.tool()
    def convert(amount: float, currency: str) -> str:
        """Convert an amount of money into another currency at today's exchange rate."""
        return f"{amount * 1.1:.2f} {currency}"

    @server.tool()
    def archive(note: str) -> str:
        """Archive a note in the records store (the store is down: every call fails)."""
        raise ToolError("the records store is down")

    @server.tool()
    def clock() -> str:
        """The current time in UTC."""
        return "2026-01-01T00:00:00Z"

    return server


if __name__ == "__main__":
    usage_server().run()
