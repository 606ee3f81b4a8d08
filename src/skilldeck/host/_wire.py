"""The Skills extension's client side of the wire: a thin adapter over the SDK's ``Client``.

It only speaks the protocol (send a request, return the raw JSON-ready result); deciding what
to trust is the host core's job. Works on 2026-07-28 and 2025-11-25 sessions alike: the
extension declaration is read from ``capabilities.extensions`` and, for legacy servers that can
only carry it there, from ``capabilities.experimental``.
"""

from __future__ import annotations

import base64
from typing import Any

from mcp import Client
from mcp_types import BlobResourceContents, Request, RequestParams, Result, TextResourceContents
from pydantic import ConfigDict

from skilldeck.skill._api import EXTENSION_ID

__all__ = ["EXTENSION_ID", "SkillsWire", "declared_skills_settings"]


class _Params(RequestParams):
    model_config = ConfigDict(extra="allow")


class _AnyResult(Result):
    model_config = ConfigDict(extra="allow")


def declared_skills_settings(client: Client) -> dict[str, Any] | None:
    """The server's Skills extension settings, or ``None`` when it did not declare the extension."""
    caps = client.server_capabilities
    for table in (caps.extensions, caps.experimental):
        if table and EXTENSION_ID in table:
            settings = table[EXTENSION_ID]
            return dict(settings) if isinstance(settings, dict) else {}
    return None


class SkillsWire:
    """Skills-extension calls on one connected SDK ``Client``."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send ``method`` with ``params`` and return the result as plain JSON-ready data."""
        request: Request[_Params, str] = Request(method=method, params=_Params(**(params or {})))
        result = await self.client.session.send_request(request, _AnyResult)
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def list_skills(self, cursor: str | None = None) -> dict[str, Any]:
        return await self.request("skills/list", {"cursor": cursor} if cursor else {})

    async def get_skill(self, uri: str) -> dict[str, Any]:
        return await self.request("skills/get", {"uri": uri})

    async def read_directory(self, uri: str, cursor: str | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"uri": uri}
        if cursor:
            params["cursor"] = cursor
        return await self.request("resources/directory/read", params)

    async def read_bytes(self, uri: str) -> tuple[bytes, str | None]:
        """The raw bytes of the resource at ``uri`` (text re-encoded as UTF-8) and its MIME type."""
        result = await self.client.read_resource(uri)
        chunks: list[bytes] = []
        mime: str | None = None
        for content in result.contents:
            if isinstance(content, TextResourceContents):
                chunks.append(content.text.encode("utf-8"))
            elif isinstance(content, BlobResourceContents):
                chunks.append(base64.b64decode(content.blob))
            mime = mime or content.mime_type
        return b"".join(chunks), mime
