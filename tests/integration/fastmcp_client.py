"""FastMCP's client (``fastmcp.Client``, its skills methods and its plain tool calls) against a server.

Run by the interpreter of the FastMCP venv (see ``ensure_fastmcp_venv()`` in conftest.py), never by
the project's: FastMCP pins its own ``mcp``. Over streamable HTTP::

    python fastmcp_client.py skills URL ERA [URI ...]
    python fastmcp_client.py gateway URL ERA QUERY LOAD_IDS_JSON TOOL ARGUMENTS_JSON

ERA is ``modern`` (FastMCP's default ``mode="auto"``, which probes ``server/discover`` and adopts
2026-07-28) or ``legacy`` (``mode="legacy"``: the 2025-11-25 ``initialize`` handshake). The client
opts into the Skills extension (``SkillsClientExtension``).

``skills``: on modern, every page of ``skills/list`` by hand (``list_skills_mcp``) and all of them
through ``list_skills()``, ``get_skill()`` of each listed skill, and ``read_skill()`` of each (FastMCP
reads every file the entry lists and checks its size and SHA-256 digest, then parses ``SKILL.md`` and
compares its frontmatter with the entry's); on legacy, where FastMCP sends no extension method, the
``SKILL.md`` resources from ``resources/list`` (``list_skill_resources()``) and ``read_skill()`` of
the first. In both eras ``read_resource()`` of each URI given. ``gateway``: the skills methods
above, then ``tools/list`` and ``call_tool`` of the meta-tools ``find`` (QUERY), ``load``
(LOAD_IDS_JSON) and ``call`` (TOOL with ARGUMENTS_JSON), and ``tools/list`` again.

Each call is recorded, failures included (as ``{"ok": false, "error": ...}``), so one refusal does
not hide the others; the report is one JSON object on stdout. Exit code 0 once it is printed, 2 when
connecting failed.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import sys
from typing import Any

import fastmcp
import mcp_types
from fastmcp import Client
from fastmcp.skills.client import SkillsClientExtension

MODES = {"modern": "auto", "legacy": "legacy"}
CONVERSATION = {"dev.skilldeck/conversation": "fastmcp-client"}


def failure(exc: BaseException) -> dict[str, Any]:
    return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


async def read_resources(client: Client[Any], uris: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for uri in uris:
        try:
            contents = await client.read_resource(uri)
            blocks = []
            for content in contents:
                if isinstance(content, mcp_types.TextResourceContents):
                    data, kind = content.text.encode("utf-8"), "text"
                else:
                    data, kind = base64.b64decode(content.blob), "blob"
                blocks.append({"kind": kind, "size": len(data), "digest": sha256(data)})
            out.append({"uri": uri, "ok": True, "contents": blocks})
        except Exception as exc:
            out.append({"uri": uri, **failure(exc)})
    return out


async def read_skills(client: Client[Any], uris: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for uri in uris:
        try:
            skill = await client.read_skill(uri)
            files = {path: sha256(data) for path, data in skill.files.items()}
            out.append({"uri": uri, "ok": True, "name": skill.name, "files": files})
        except Exception as exc:
            out.append({"uri": uri, **failure(exc)})
    return out


async def skills_report(client: Client[Any], era: str) -> dict[str, Any]:
    report: dict[str, Any] = {}
    if era == "legacy":
        try:
            listed = [str(r.uri) for r in await client.list_skill_resources()]
            report["skillResources"] = {"ok": True, "uris": listed}
        except Exception as exc:
            listed, report["skillResources"] = [], failure(exc)
        report["readSkill"] = await read_skills(client, listed[:1])
        try:
            await client.list_skills()
            report["listSkills"] = {"ok": True}
        except Exception as exc:
            report["listSkills"] = failure(exc)
        return report

    pages: list[dict[str, Any]] = []
    cursor: str | None = None
    try:
        while len(pages) < 100:
            page = await client.list_skills_mcp(cursor=cursor)
            pages.append(
                {
                    "uris": [s.uri for s in page.skills],
                    "nextCursor": page.next_cursor,
                    "ttlMs": page.ttl_ms,
                    "cacheScope": page.cache_scope,
                }
            )
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        report["pages"] = {"ok": True, "pages": pages}
    except Exception as exc:
        report["pages"] = failure(exc)
    try:
        entries = await client.list_skills()
        report["list"] = {"ok": True, "uris": [s.uri for s in entries]}
    except Exception as exc:
        entries, report["list"] = [], failure(exc)
    report["get"] = []
    for entry in entries:
        try:
            got = await client.get_skill_mcp(entry.uri)
            same = got.skill.model_dump(by_alias=True) == entry.model_dump(by_alias=True)
            report["get"].append(
                {"uri": entry.uri, "ok": True, "sameEntry": same, "ttlMs": got.ttl_ms, "cacheScope": got.cache_scope}
            )
        except Exception as exc:
            report["get"].append({"uri": entry.uri, **failure(exc)})
    report["readSkill"] = await read_skills(client, [e.uri for e in entries])
    return report


async def call(client: Client[Any], tool: str, arguments: dict[str, Any], era: str) -> dict[str, Any]:
    try:
        meta = CONVERSATION if era == "modern" else None
        result = await client.call_tool(tool, arguments, raise_on_error=False, meta=meta)
        text = "\n".join(c.text for c in result.content if isinstance(c, mcp_types.TextContent))
        return {"ok": True, "isError": result.is_error, "structuredContent": result.structured_content, "text": text}
    except Exception as exc:
        return failure(exc)


async def tool_names(client: Client[Any]) -> Any:
    try:
        return [t.name for t in await client.list_tools()]
    except Exception as exc:
        return failure(exc)


async def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] not in ("skills", "gateway") or argv[2] not in MODES:
        print(__doc__, file=sys.stderr)
        return 64
    command, url, era, *rest = argv
    client: Client[Any] = Client(url, mode=MODES[era], extensions=[SkillsClientExtension()], timeout=30)
    try:
        await client.__aenter__()
    except Exception as exc:
        print(json.dumps({"connect": failure(exc)}))
        return 2
    try:
        report: dict[str, Any] = {"clientVersion": fastmcp.__version__, "protocolVersion": client.protocol_version}
        report.update(await skills_report(client, era))
        if command == "skills":
            report["readResource"] = await read_resources(client, rest)
        else:
            query, load_ids, tool, arguments = rest
            report["toolsBefore"] = await tool_names(client)
            report["calls"] = {
                "find": await call(client, "find", {"query": query}, era),
                "load": await call(client, "load", {"ids": json.loads(load_ids)}, era),
                "call": await call(client, "call", {"tool": tool, "arguments": json.loads(arguments)}, era),
            }
            report["toolsAfter"] = await tool_names(client)
    finally:
        await client.__aexit__(None, None, None)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
