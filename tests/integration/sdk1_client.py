"""The official Python SDK 1.x client against ``skilldeck serve --http``, run by a venv holding mcp 1.x.

    python sdk1_client.py URL

Connects over streamable HTTP (the 1.x client speaks 2025-11-25), reads two skill files, prints one
line ``{"ready": ...}`` with what it found, then waits (at most 30 s) for the server's
``notifications/resources/list_changed`` and prints ``{"list_changed": true|false}``. The test drives
it: it changes the skill folder once it sees the first line. mcp 2.x is not importable here; this
file runs only under the 1.x venv (tests/integration/conftest.py, ``time_server_python``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import sys
from typing import Any

from mcp import ClientSession, types
from mcp.client.streamable_http import streamablehttp_client


async def main(url: str) -> None:
    changed = asyncio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ResourceListChangedNotification
        ):
            changed.set()

    async with (
        streamablehttp_client(url) as (read, write, _),
        ClientSession(read, write, message_handler=on_message) as session,
    ):
        init = await session.initialize()
        text = await session.read_resource("skill://job-search/SKILL.md")
        blob = await session.read_resource("skill://pdf-forms/assets/logo.png")
        [text_part], [blob_part] = text.contents, blob.contents
        assert isinstance(text_part, types.TextResourceContents)
        assert isinstance(blob_part, types.BlobResourceContents)
        ready = {
            "protocol": init.protocolVersion,
            "server": init.serverInfo.name,
            "extensions": sorted(((init.capabilities.model_extra or {}).get("extensions") or {}).keys()),
            "skill_md": text_part.text,
            "logo_b64": base64.b64encode(base64.b64decode(blob_part.blob)).decode(),
        }
        print(json.dumps({"ready": ready}), flush=True)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), 30)
        print(json.dumps({"list_changed": changed.is_set()}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
