"""``skilldeck demo``: the whole path on real in-process servers, no configuration.

Part 1 (History B): three real servers (jobs, tracker, files; see :mod:`skilldeck.demo.servers`)
are connected under labels; the question "Find senior Java roles in Costa Rica" is ranked
against their cards, the chosen skill is loaded verified, only its one tool schema is exposed,
the call goes through the gate, and History A and B are counted. An out-of-scope question then
abstains, with reasons.

Part 2 (the Skills extension underneath): the bundled example pack is served in-process; a real
SDK client in both protocol eras lists it, loads one skill the way a host must (size, then
digest, then frontmatter), browses a folder, and a hostile read is refused.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from mcp import Client
from mcp.shared.exceptions import MCPError
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from skilldeck.host.verify import verify_bytes, verify_skill_md
from skilldeck.host.wire import SkillsWire, declared_skills_settings
from skilldeck.server import create_server

__all__ = ["ask_tour", "example_pack", "run_demo", "server_tour"]


def example_pack() -> Path:
    """The bundled example skill pack (``examples/skills`` in the source tree)."""
    packaged = resources.files("skilldeck") / "_examples" / "skills"
    if packaged.is_dir():
        return Path(str(packaged))
    source_tree = Path(__file__).resolve().parents[3] / "examples" / "skills"
    if source_tree.is_dir():
        return source_tree
    raise FileNotFoundError("the example skill pack is missing from this installation; reinstall skilldeck")


QUESTION = "Find senior Java roles in Costa Rica"
OUT_OF_SCOPE = "What will the weather be in Paris tomorrow?"
CALL = ("search_jobs", {"query": "Java", "location": "Costa Rica", "seniority": "senior"})


async def run_demo(console: Console) -> None:
    """Run both parts of the demo, printing each step to ``console``."""
    await ask_tour(console)
    await server_tour(console)


async def ask_tour(console: Console) -> None:
    """Part 1: question → cards → verified skill → one schema → gated call → tokens; then abstention."""
    from skilldeck.ask import ask
    from skilldeck.demo.servers import demo_servers
    from skilldeck.host import Host, InProcessServer, ServerSpec

    specs = [ServerSpec(label, InProcessServer(server)) for label, server in demo_servers().items()]
    async with Host(specs) as host:
        console.rule("[bold]1. History B: a question answered from an index of cards")
        for label in host.registry.labels:
            skills = [r.name for r in host.registry.skills if r.label == label]
            tools = [t.name for t in host.registry.tools(label)]
            console.print(f"server [bold]{label}[/]: skills {skills or '—'}; tools {tools}", highlight=False)
        result = await ask(host, QUESTION, call=CALL)
        decision = result.decision
        console.print(f"\nquestion: [bold]{QUESTION}[/]")
        table = Table(title="cards ranked for the question", show_edge=False)
        for column in ("#", "kind", "origin", "name", "score"):
            table.add_column(column)
        for i, scored in enumerate(decision.ranked[:5], 1):
            table.add_row(str(i), scored.card.kind, scored.card.server, scored.card.name, f"{scored.score:.2f}")
        console.print(table)
        console.print(f"[green]{escape(decision.reason)}[/]", highlight=False)
        if result.loaded is not None:
            console.print(
                Panel(escape(result.loaded.tagged()), title="the chosen skill, verified (size, digest, frontmatter)")
            )
        schemas = result.history_b.tools
        console.print(
            Panel(
                escape(json.dumps(schemas, indent=2, ensure_ascii=False) if not isinstance(schemas, str) else schemas),
                title=f"exposed: {len(result.tools)} tool schema(s) — {', '.join(f'{s}/{n}' for s, n in result.tools)}",
            )
        )
        if result.call is not None:
            structured = result.call["result"].get("structuredContent", {})
            rows = structured.get("result", []) if isinstance(structured, dict) else []
            console.print(
                f"tools/call {result.call['server']}/{result.call['tool']} {json.dumps(result.call['arguments'])}"
            )
            for job in rows:
                console.print(
                    f"  {job['id']}  {job['title']} — {job['company']}, {job['city']} ({job['remote']}, {job['salary_usd']})",
                    highlight=False,
                )
        a, b = result.history_a.tokens, result.history_b.tokens
        console.print(
            f"tokens (cl100k): History A, every schema of every server: {a:,}; History B: {b:,} "
            f"({a / max(b, 1):.1f}x fewer on this 3-server catalog; see bench/selection for 70 servers)",
            highlight=False,
        )
        console.rule("[bold]Out of scope: abstain rather than improvise")
        console.print(f"question: [bold]{OUT_OF_SCOPE}[/]")
        refused = await ask(host, OUT_OF_SCOPE)
        console.print(f"[yellow]{escape(refused.decision.reason)}[/]", highlight=False)
        console.print(f"exposed tool schemas: {len(refused.tools)}", highlight=False)


async def server_tour(console: Console, *, skill: str = "skill://job-search/SKILL.md") -> None:
    """Part 2: the Skills extension on the bundled example pack, both protocol eras."""
    console.rule("[bold]2. Underneath: the Skills extension, both protocol eras")
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
