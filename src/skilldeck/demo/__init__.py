"""``skilldeck demo``: the whole server path on the bundled example pack, no configuration.

An in-process ``MCPServer`` serves the example skills; a real SDK client connects in both
protocol eras, lists the skill cards, loads one skill the way a host must (size, then digest,
then frontmatter against the listed entry), browses a folder, and shows a hostile read refused.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from mcp import Client
from mcp.shared.exceptions import MCPError
from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from skilldeck.host.verify import verify_bytes, verify_skill_md
from skilldeck.host.wire import SkillsWire, declared_skills_settings
from skilldeck.server import create_server

__all__ = ["example_pack", "run_demo"]


def example_pack() -> Path:
    """The bundled example skill pack (``examples/skills`` in the source tree)."""
    packaged = resources.files("skilldeck") / "_examples" / "skills"
    if packaged.is_dir():
        return Path(str(packaged))
    source_tree = Path(__file__).resolve().parents[3] / "examples" / "skills"
    if source_tree.is_dir():
        return source_tree
    raise FileNotFoundError("the example skill pack is missing from this installation; reinstall skilldeck")


async def run_demo(console: Console, *, skill: str = "skill://job-search/SKILL.md") -> None:
    """Run the demo, printing each step to ``console``."""
    server, extension = create_server(example_pack(), name="skilldeck-demo", page_size=4)
    console.print(
        f"[bold]skilldeck demo[/] — an in-process skills server with {len(extension.catalog)} skills "
        f"from the bundled example pack ({len(extension.problems)} refused)"
    )
    seen: dict[str, list[dict[str, object]]] = {}
    for mode, era in (("auto", "2026-07-28"), ("legacy", "2025-11-25")):
        async with Client(server, mode=mode, cache=None) as client:
            wire = SkillsWire(client)
            console.rule(f"{era} session (negotiated {client.protocol_version})")
            settings = declared_skills_settings(client)
            console.print(f"server declares io.modelcontextprotocol/skills: {settings}")
            entries, cursor, pages = [], None, 0
            while True:
                page = await wire.list_skills(cursor)
                pages += 1
                entries.extend(page["skills"])
                cursor = page.get("nextCursor")
                if not cursor:
                    break
            seen[mode] = entries
            if mode != "auto":
                same = seen["legacy"] == seen["auto"]
                console.print(
                    f"skills/list: {len(entries)} entries in {pages} pages; identical to the 2026-07-28 listing: {same}"
                )
                data, _ = await wire.read_bytes(skill)
                console.print(f"resources/read {skill}: {len(data)} bytes")
                continue
            table = Table(title=f"skill cards ({len(entries)} skills, {pages} pages of skills/list)")
            table.add_column("origin")
            table.add_column("name")
            table.add_column("description", max_width=70)
            table.add_column("files", justify="right")
            for entry in entries:
                files = "dynamic" if isinstance(entry["resources"], str) else str(len(entry["resources"]))
                description = str(entry["frontmatter"]["description"])
                card = description.split(". ")[0].rstrip(".") + "."
                table.add_row("demo", entry["frontmatter"]["name"], card, files)
            console.print(table)
            chosen = next(e for e in entries if e["uri"] == skill)
            listed = {r["uri"]: r for r in chosen["resources"]}
            data, _ = await wire.read_bytes(skill)
            verify_bytes(skill, data, size=listed[skill]["size"], digest=listed[skill]["digest"], label="demo")
            text = verify_skill_md(skill, data, chosen["frontmatter"], label="demo")
            preview = "\n".join(text.splitlines()[:14])
            console.print(
                Panel(
                    preview + "\n…",
                    title=f"[demo] {skill} — size, digest and frontmatter verified ({len(data)} bytes)",
                )
            )
            children = (await wire.read_directory("skill://pdf-forms/templates"))["resources"]
            console.print(
                "resources/directory/read skill://pdf-forms/templates → "
                + ", ".join(f"{c['name']}{'/' if c['mimeType'] == 'inode/directory' else ''}" for c in children)
            )
            try:
                await wire.read_bytes("skill://pdf-forms/../../etc/passwd")
            except MCPError as exc:
                console.print(
                    f"hostile read skill://pdf-forms/../../etc/passwd → refused ({exc.error.code}: {exc.error.message})"
                )
    console.print("[green]done[/]: both protocol eras listed, got and read skills; every byte shown was verified.")
