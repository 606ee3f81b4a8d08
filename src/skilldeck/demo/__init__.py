"""``skilldeck demo``: the whole path on real in-process servers, no configuration.

Part 1 (History B): three real servers (jobs, tracker, files; see :mod:`skilldeck.demo._servers`)
are connected under labels; the question "Find senior Java roles in Costa Rica" is ranked
against their cards, the chosen skill is loaded verified, only its one tool schema is exposed
(one line per tool: its name and parameters), the call goes through the gate, and History A and B
are counted. The same question is then ranked among LiveMCPBench's 70 real servers (the bundled
snapshot, ``data/livemcpbench-snapshot.json``) plus these three, where the saving shows at a
realistic catalog size. An out-of-scope question then abstains, with reasons.

Part 2 (the Skills extension underneath): the bundled example pack is served in-process; a real
SDK client in both protocol eras lists it, loads one skill the way a host must (size, then
digest, then frontmatter), browses a folder, and a hostile read is refused.

Part 3 (the gateway, :mod:`skilldeck.demo._gateway`): the same loop served by ``skilldeck gateway``
to a real MCP client in both eras, through four meta-tools.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.shared.exceptions import MCPError
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from skilldeck.demo._servers import demo_servers, jobs_server
from skilldeck.host import LoadedSkill
from skilldeck.host._api import SkillsWire, declared_skills_settings, verify_bytes, verify_skill_md
from skilldeck.select import CatalogSnapshot, Decision, Encoder, Selector, build_cards, parse_snapshot
from skilldeck.select._api import count_tokens, history_a, history_b, token_summary
from skilldeck.server import create_server

__all__ = [
    "ask_tour",
    "at_scale",
    "demo_servers",
    "example_pack",
    "jobs_server",
    "livemcpbench_snapshot",
    "run_demo",
    "server_tour",
    "tool_signature",
]


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
    """Run the three parts of the demo, printing each step to ``console``."""
    from skilldeck.demo._gateway import gateway_tour

    await ask_tour(console)
    await server_tour(console)
    await gateway_tour(console, livemcpbench_snapshot())


async def ask_tour(console: Console) -> None:
    """Part 1: question → cards → verified skill → one schema → gated call → tokens; then abstention."""
    from skilldeck.ask import ask, snapshot_from_host
    from skilldeck.host import Host, InProcessServer, ServerSpec
    from skilldeck.select._api import default_encoder

    encoder, notice = default_encoder()  # as `skilldeck ask` ranks: the int8 MiniLM fused with BM25F
    if notice is not None:
        console.print(f"[yellow]notice[/] {escape(notice)}", highlight=False)
    specs = [ServerSpec(label, InProcessServer(server)) for label, server in demo_servers().items()]
    async with Host(specs) as host:
        console.rule("[bold]1. History B: a question answered from an index of cards")
        for label in host.labels:
            skills = [r.name for r in host.skills if r.label == label]
            tools = [t.name for t in host.tools(label)]
            console.print(f"server [bold]{label}[/]: skills {skills or '—'}; tools {tools}", highlight=False)
        result = await ask(host, QUESTION, call=CALL, encoder=encoder)
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
        rendered = schemas if isinstance(schemas, str) else json.dumps(schemas, ensure_ascii=False)
        n = len(result.tools)
        console.print(
            f"exposed: {n} tool schema{'' if n == 1 else 's'} ({count_tokens(rendered):,} tokens as OpenAI tools), "
            "folded to one line each:",
            highlight=False,
        )
        for server, name in result.tools:
            console.print(f"  {escape(tool_signature(server, result.cards.tools[server][name]))}", highlight=False)
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
        console.print(f"tokens (cl100k), these 3 servers: {result.token_summary}", highlight=False)
        at_scale(console, QUESTION, snapshot_from_host(host), result.loaded, encoder)
        console.rule("[bold]Out of scope: abstain rather than improvise")
        console.print(f"question: [bold]{OUT_OF_SCOPE}[/]")
        refused = await ask(host, OUT_OF_SCOPE, encoder=encoder)
        console.print(f"[yellow]{escape(refused.decision.reason)}[/]", highlight=False)
        console.print(f"exposed tool schemas: {len(refused.tools)}", highlight=False)


def tool_signature(server: str, tool: Mapping[str, Any]) -> str:
    """``server/name(required, optional?)``: a tool schema folded to one line."""
    schema = tool.get("inputSchema")
    schema = schema if isinstance(schema, Mapping) else {}
    properties = schema.get("properties")
    required = schema.get("required")
    names = list(properties) if isinstance(properties, Mapping) else []
    needed = set(required) if isinstance(required, list) else set()
    return f"{server}/{tool.get('name')}(" + ", ".join(p if p in needed else f"{p}?" for p in names) + ")"


def livemcpbench_snapshot() -> CatalogSnapshot:
    """LiveMCPBench's 70 real MCP servers (527 tools) as a catalog snapshot (Apache-2.0; see data/README.md)."""
    path = resources.files("skilldeck.demo") / "data" / "livemcpbench-snapshot.json"
    return parse_snapshot(json.loads(path.read_text(encoding="utf-8")))


def at_scale(
    console: Console,
    question: str,
    demo: CatalogSnapshot,
    loaded: LoadedSkill | None,
    encoder: Encoder | None = None,
) -> Decision:
    """Rank ``question`` among LiveMCPBench's 70 servers plus the demo's, and count History A and B there.

    The chosen skill's text is the one already loaded and verified from its server (the same
    skill, the same bytes); nothing more is fetched.
    """
    bench = livemcpbench_snapshot()
    cards = build_cards(CatalogSnapshot((*bench.servers, *demo.servers)))
    decision = Selector(cards, encoder=encoder).decide(question)
    chosen = decision.chosen[0] if decision.chosen and not decision.abstain else None
    same = loaded is not None and chosen is not None and (chosen.server, chosen.uri) == (loaded.label, loaded.uri)
    shown = [s.card for s in decision.ranked[:10]]
    tools = [] if decision.abstain else decision.tools
    a = history_a(cards)
    b = history_b(cards, shown, tools, skill_text=loaded.tagged() if same and loaded is not None else None)
    n = sum(len(s.tools) for s in bench.servers)
    console.rule(f"The same question among LiveMCPBench's {len(bench.servers)} real servers and these 3")
    console.print(
        f"{len(bench.servers)} servers, {n} tools (the bundled LiveMCPBench snapshot) + "
        f"{len(demo.servers)} demo servers: {escape(decision.reason)}",
        highlight=False,
    )
    summary = token_summary(a, b, abstained=decision.abstain, skill=same)
    console.print(f"tokens (cl100k), {len(cards.tools)} servers: {summary}", highlight=False)
    return decision


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
