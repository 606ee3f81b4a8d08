"""The gateway at scale: a scripted agent loop over LiveMCPBench's 70 servers and 95 tasks (no LLM).

Upstreams are simulated in-process from the LiveMCPBench catalog: one ``MCPServer`` per server label,
listing that server's tools with their real names, descriptions and input schemas. Every
``tools/call`` an upstream receives is counted and answered with a fixed text. A
``GatewayService`` + ``create_gateway`` fronts all of them (through a real ``Host``), and a real
``mcp.client.Client`` (in-process) drives it for each task with a fixed sequence:

1. ``find(question)``;
2. unless it abstained, ``load([top card id])``;
3. ``call`` the first loaded tool, its arguments built minimally from the schema's ``required``
   properties;
4. ``call`` a tool the task did NOT load (and a name no server lists): both must be refused, and
   neither may reach an upstream.

Each task runs in its own conversation (``_meta["dev.skilldeck/conversation"]``), so activations do
not carry over from one task to the next.

Reported (``bench/results/gateway_agent.json``):

* tokens a client sees at start (the gateway's ``tools/list`` as received) vs History A (every schema
  of every server, ``history_a(cards).tokens``): target at least 50x smaller;
* tokens disclosed per answered task (the ``find`` and ``load`` results as received) vs History A:
  target at least 30x smaller, median and p90;
* upstream ``tools/call`` requests of a tool that was not active for the calling conversation: must be 0;
* hit rate: the loaded card's server is one the task's annotation needs (information only).

Run from the repository root: ``.venv/bin/python bench/gateway_agent.py`` (both eras, about 25 s).
"""

from __future__ import annotations

import argparse
import functools
import json
import platform
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp_types.methods import serialize_server_result

from skilldeck.gateway._server import CONVERSATION_META_KEY, create_gateway
from skilldeck.gateway._service import GatewayService
from skilldeck.host import Host, InProcessServer, ServerSpec
from skilldeck.select._project import count_tokens
from skilldeck.serving._policy import caller_for

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE / "selection"))

from livemcpbench import Task, load_catalog, load_tasks  # noqa: E402

DATA = HERE / "selection" / "data" / "livemcpbench"
DEFAULT_OUTPUT = HERE / "results" / "gateway_agent.json"
UPSTREAM_ANSWER = "ok (simulated upstream)"

START_RATIO_TARGET = 50.0
TASK_RATIO_TARGET = 30.0
MAX_QUERY_CHARS = 2_000
"""The gateway's limit on a ``find`` query (a longer one is refused with a reason)."""


class CountingUpstream:
    """An upstream's ``tools/list`` (the catalog's tools, schemas unchanged) and ``tools/call`` (counted).

    It is the middleware of an in-process ``MCPServer``: the SDK's public hook, so the upstream
    lists the catalog's raw input schemas instead of schemas derived from Python functions.
    """

    def __init__(self, label: str, tools: Sequence[Mapping[str, Any]]) -> None:
        self.label = label
        self.tools = [{k: v for k, v in t.items() if v is not None} for t in tools]
        self.calls: Counter[str] = Counter()

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/list":
            return serialize_server_result(
                "tools/list",
                ctx.protocol_version,
                {"resultType": "complete", "tools": self.tools, "ttlMs": 0, "cacheScope": "private"},
            )
        if ctx.method == "tools/call":
            params = ctx.params if isinstance(ctx.params, dict) else {}
            self.calls[str(params.get("name"))] += 1
            result = {
                "resultType": "complete",
                "content": [{"type": "text", "text": f"[{self.label}] {UPSTREAM_ANSWER}"}],
                "isError": False,
            }
            return serialize_server_result("tools/call", ctx.protocol_version, result)
        return await call_next(ctx)


def upstream_server(
    label: str, tools: Sequence[Mapping[str, Any]], description: str | None = None
) -> tuple[MCPServer[Any], CountingUpstream]:
    """The upstream ``label`` listing ``tools``; ``description`` is its ``serverInfo.description``."""
    counter = CountingUpstream(label, tools)
    server: MCPServer[Any] = MCPServer(label, description=description, middleware=[counter], log_level="WARNING")
    return server, counter


def minimal_value(schema: Any) -> Any:
    """The smallest value a model could plausibly send for ``schema`` (first enum/const, empty containers)."""
    if not isinstance(schema, Mapping):
        return "x"
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            typed = [o for o in options if isinstance(o, Mapping) and o.get("type") != "null"]
            return minimal_value(typed[0] if typed else options[0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object" or "properties" in schema:
        return minimal_arguments(schema)
    if kind == "array":
        items = schema.get("items")
        count = int(schema.get("minItems") or 0)
        return [minimal_value(items) for _ in range(count)]
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "x" * max(1, int(schema.get("minLength") or 1))


def minimal_arguments(schema: Any) -> dict[str, Any]:
    """Arguments holding only the schema's ``required`` properties, each with a minimal value."""
    if not isinstance(schema, Mapping):
        return {}
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    return {str(name): minimal_value(properties.get(name)) for name in (required if isinstance(required, list) else [])}


def _received(result: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


def _tokens(payload: Any) -> int:
    return count_tokens(json.dumps(payload, ensure_ascii=False))


@dataclass
class TaskRecord:
    task_id: str
    abstained: bool
    find_refused: bool = False
    card: str | None = None
    hit: bool | None = None
    find_tokens: int = 0
    load_tokens: int = 0
    find_text_tokens: int = 0
    load_text_tokens: int = 0
    loaded_tools: list[str] = field(default_factory=list)
    call_tool: str | None = None
    call_sent: bool | None = None
    call_refusal: str | None = None
    probe_tool: str | None = None
    probe_refused: bool | None = None
    unlisted_refused: bool | None = None
    leaked: int = 0

    @property
    def disclosed(self) -> int:
        return self.find_tokens + self.load_tokens


def _inactive_probe(servers: Sequence[Mapping[str, Any]], active: set[tuple[str, str]]) -> tuple[str, str]:
    """A listed tool the conversation did not load: a sibling of a loaded one, else one of an untouched server."""
    busy = {label for label, _ in active}
    for label, _ in sorted(active):  # a sibling of a loaded tool first: same server, not loaded
        siblings = next((s["tools"] for s in servers if s["label"] == label), [])
        for tool in siblings:
            if (label, str(tool["name"])) not in active:
                return label, str(tool["name"])
    for server in servers:
        if server["label"] not in busy and server["tools"]:
            return str(server["label"]), str(server["tools"][0]["name"])
    raise RuntimeError("every server has an active tool")


def _text(result: dict[str, Any]) -> str:
    return "\n".join(str(c.get("text", "")) for c in result.get("content", []) if c.get("type") == "text")


async def run_task(
    client: Client,
    task: Task,
    servers: Sequence[Mapping[str, Any]],
    upstream_calls: Callable[[], Counter[tuple[str, str]]],
) -> TaskRecord:
    """One task's fixed sequence (find, load the top card, call its first tool, two calls that must be refused)."""
    meta = {CONVERSATION_META_KEY: task.task_id}
    before = upstream_calls()
    found = _received(await client.call_tool("find", {"query": task.question}, meta=meta))
    find_refused = bool(found.get("isError"))
    if find_refused:  # over the query limit: shortened, as the refusal tells the model
        found = _received(await client.call_tool("find", {"query": task.question[:MAX_QUERY_CHARS]}, meta=meta))
    structured = found.get("structuredContent") or {}
    record = TaskRecord(task.task_id, abstained=bool(structured.get("abstain", True)), find_refused=find_refused)
    record.find_tokens = _tokens(found)
    record.find_text_tokens = count_tokens(_text(found))
    active: set[tuple[str, str]] = set()
    expected: Counter[tuple[str, str]] = Counter()
    if not record.abstained and structured.get("cards"):
        top = structured["cards"][0]
        record.card = str(top["id"])
        record.hit = str(top["server"]) in task.gold_servers
        loaded = _received(await client.call_tool("load", {"ids": [record.card]}, meta=meta))
        record.load_tokens = _tokens(loaded)
        record.load_text_tokens = count_tokens(_text(loaded))
        tools = (loaded.get("structuredContent") or {}).get("tools") or []
        record.loaded_tools = [str(t["name"]) for t in tools]
        active = {_pair(name) for name in record.loaded_tools}
        if tools:
            record.call_tool = str(tools[0]["name"])
            arguments = minimal_arguments(tools[0].get("inputSchema"))
            called = _received(
                await client.call_tool("call", {"tool": record.call_tool, "arguments": arguments}, meta=meta)
            )
            record.call_sent = UPSTREAM_ANSWER in _text(called)
            if record.call_sent:
                expected[_pair(record.call_tool)] += 1
            else:
                record.call_refusal = _text(called)[:300]
    # a listed tool this conversation did not load, and a name no server lists: both refused, nothing sent
    probe_label, probe_name = _inactive_probe(servers, active)
    record.probe_tool = f"{probe_label}/{probe_name}"
    probe = _received(await client.call_tool("call", {"tool": record.probe_tool, "arguments": {}}, meta=meta))
    record.probe_refused = bool(probe.get("isError")) and UPSTREAM_ANSWER not in _text(probe)
    unlisted = _received(
        await client.call_tool("call", {"tool": f"{probe_label}/never_listed_tool", "arguments": {}}, meta=meta)
    )
    record.unlisted_refused = bool(unlisted.get("isError")) and UPSTREAM_ANSWER not in _text(unlisted)
    record.leaked = sum(((upstream_calls() - before) - expected).values())
    return record


def _pair(name: str) -> tuple[str, str]:
    label, _, tool = name.partition("/")
    return label, tool


async def run_loop(
    servers: Sequence[Mapping[str, Any]], tasks: Sequence[Task], *, mode: str = "auto", lexical: bool = False
) -> dict[str, Any]:
    """Drive the gateway over ``servers`` through every task, one client each; the records and the summary.

    The gateway ranks as every caller's does (the default encoder; its card vectors are waited for,
    so every ``find`` is the fused ranker's), or with ``lexical`` by words only."""
    upstreams = {str(s["label"]): upstream_server(str(s["label"]), s["tools"]) for s in servers}
    specs = [ServerSpec(label, InProcessServer(server)) for label, (server, _) in upstreams.items()]
    counters = {label: counter for label, (_, counter) in upstreams.items()}

    def upstream_calls() -> Counter[tuple[str, str]]:
        return Counter({(lbl, tool): n for lbl, c in counters.items() for tool, n in c.calls.items()})

    started = time.perf_counter()
    async with Host(specs) as host:
        connect_s = time.perf_counter() - started
        if host.failures:
            raise RuntimeError(f"upstreams failed to connect: {sorted(host.failures)}")
        service = GatewayService(host, encoder=None) if lexical else GatewayService(host)
        gateway, _ = create_gateway(service)
        caller = caller_for(None, None, None)
        a_tokens = service.history_a_tokens(caller)
        ranker = service.index_for(caller).selector.ranker
        if not lexical and not await anyio.to_thread.run_sync(ranker.wait, 600):
            raise RuntimeError(f"the card vectors were not encoded: {ranker.indexing}")
        async with Client(gateway, mode=mode, cache=None) as client:  # type: ignore[arg-type]
            listed = await client.list_tools()
            protocol = client.protocol_version
        start_payload = [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in listed.tools]
        start_tokens = _tokens(start_payload)
        records: list[TaskRecord] = []
        loop_started = time.perf_counter()
        for task in tasks:
            async with Client(gateway, mode=mode, cache=None) as client:  # type: ignore[arg-type]
                records.append(await run_task(client, task, servers, upstream_calls))
        loop_s = time.perf_counter() - loop_started
    out = summarize(records, start_tokens, a_tokens, start_payload, connect_s, loop_s, len(servers), servers)
    out["summary"]["protocol_version"] = protocol
    return out


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return float(ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo))


def summarize(
    records: Sequence[TaskRecord],
    start_tokens: int,
    a_tokens: int,
    start_payload: list[dict[str, Any]],
    connect_s: float,
    loop_s: float,
    n_servers: int,
    servers: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    answered = [r for r in records if not r.abstained]
    disclosed = [r.disclosed for r in answered]
    text_only = [r.find_text_tokens + r.load_text_tokens for r in answered]
    ratios = [a_tokens / d for d in disclosed if d]
    median_d = statistics.median(disclosed) if disclosed else float("nan")
    p90_d = _percentile(disclosed, 0.9)
    summary = {
        "servers": n_servers,
        "tools": sum(len(s["tools"]) for s in servers),
        "tasks": len(records),
        "answered": len(answered),
        "abstained": len(records) - len(answered),
        "find_refused_then_shortened": sum(1 for r in records if r.find_refused),
        "history_a_tokens": a_tokens,
        "start_tokens": start_tokens,
        "start_tools": [t["name"] for t in start_payload],
        "start_ratio": a_tokens / start_tokens,
        "disclosed_tokens_median": median_d,
        "disclosed_tokens_p90": p90_d,
        "disclosed_tokens_max": max(disclosed) if disclosed else None,
        "disclosed_ratio_median": a_tokens / median_d if disclosed else None,
        "disclosed_ratio_p90": a_tokens / p90_d if disclosed else None,
        "disclosed_ratio_min": min(ratios) if ratios else None,
        "disclosed_text_tokens_median": statistics.median(text_only) if text_only else None,
        "disclosed_text_tokens_p90": _percentile(text_only, 0.9) if text_only else None,
        "calls_sent": sum(1 for r in records if r.call_sent),
        "calls_refused_by_gate": sum(1 for r in records if r.call_sent is False),
        "probes_refused": sum(1 for r in records if r.probe_refused),
        "unlisted_refused": sum(1 for r in records if r.unlisted_refused),
        "leaked_upstream_calls": sum(r.leaked for r in records),
        "hit_rate_answered": (sum(1 for r in answered if r.hit) / len(answered)) if answered else None,
        "host_connect_s": round(connect_s, 3),
        "loop_s": round(loop_s, 3),
        "targets": {"start_ratio": START_RATIO_TARGET, "disclosed_ratio": TASK_RATIO_TARGET, "leaked": 0},
    }
    return {"summary": summary, "tasks": [{**r.__dict__, "disclosed": r.disclosed} for r in records]}


def catalog(data: Path = DATA) -> tuple[list[dict[str, Any]], list[Task]]:
    servers = load_catalog(data)
    return servers, load_tasks(data, servers)


ERAS = {"2026-07-28": "auto", "2025-11-25": "legacy"}
"""The client's ``mode`` for each protocol era (``auto`` negotiates the newest, in process)."""


def meets_targets(summary: Mapping[str, Any]) -> bool:
    """The acceptance targets: start and per-task (p90) ratios, and no call leaked upstream."""
    return bool(
        summary["start_ratio"] >= START_RATIO_TARGET
        and (summary["disclosed_ratio_p90"] or 0) >= TASK_RATIO_TARGET
        and summary["leaked_upstream_calls"] == 0
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the LiveMCPBench data directory")
    parser.add_argument("--tasks", type=int, default=None, metavar="N", help="only the first N tasks")
    parser.add_argument("--eras", nargs="+", choices=list(ERAS), default=list(ERAS), help="protocol eras to run")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    return parser.parse_args(argv)


def _report(era: str, s: Mapping[str, Any]) -> None:
    print(f"[{era}] {s['servers']} servers, {s['tools']} tools; {s['tasks']} tasks, {s['answered']} answered")
    print(f"  History A: {s['history_a_tokens']:,} tokens")
    print(f"  at start (tools/list): {s['start_tokens']:,} tokens -> {s['start_ratio']:.1f}x smaller")
    print(
        f"  disclosed per answered task (find + load): median {s['disclosed_tokens_median']:,.0f}, "
        f"p90 {s['disclosed_tokens_p90']:,.0f} tokens -> {s['disclosed_ratio_median']:.1f}x / "
        f"{s['disclosed_ratio_p90']:.1f}x smaller"
    )
    print(
        f"  calls sent {s['calls_sent']}, refused by the gate {s['calls_refused_by_gate']}; "
        f"not-loaded probes refused {s['probes_refused']}/{s['tasks']}, "
        f"unlisted refused {s['unlisted_refused']}/{s['tasks']}; leaked upstream calls {s['leaked_upstream_calls']}"
    )
    print(f"  hit rate (answered): {s['hit_rate_answered']:.2f}; loop {s['loop_s']:.1f} s")


def main(argv: list[str] | None = None) -> int:
    import anyio

    args = parse_args(argv)
    servers, tasks = catalog(args.data)
    if args.tasks is not None:
        tasks = tasks[: args.tasks]
    out: dict[str, Any] = {
        "meta": {
            "command": " ".join(["bench/gateway_agent.py", *(argv if argv is not None else sys.argv[1:])]),
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "python": platform.python_version(),
            "data": str(args.data.resolve().relative_to(REPO))
            if args.data.resolve().is_relative_to(REPO)
            else "--data",
        },
        "eras": {},
    }
    ok = True
    for era in args.eras:
        result = anyio.run(functools.partial(run_loop, servers, tasks, mode=ERAS[era]))
        out["eras"][era] = result
        _report(era, result["summary"])
        ok &= meets_targets(result["summary"])
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.output}; targets {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
