"""A schema-aware fuzzer of skilldeck's servers: ``serve`` of the example pack and ``gateway`` in front of it.

Run from the repository root::

    .venv/bin/python bench/fuzz.py --inputs 20000                      # every cell, a short run
    .venv/bin/python bench/fuzz.py --inputs 1000000 --http-share 0.1    # the long run
    .venv/bin/python bench/fuzz.py --replay bench/fuzz_regressions.json # the inputs that once failed

Inputs are JSON-RPC requests generated from the method catalogue of each era (``mcp_types.methods``,
2025-11-25 and 2026-07-28, plus the Skills extension's own methods and, for the gateway, the meta-tools'
input schemas), valid by their JSON schemas, then mutated: wrong types, huge strings, deep nesting,
unknown methods, bad ids, missing and extra params, bad ``_meta``, bad cursors, bad URIs (``skill://``
path tricks aimed at files next to the pack). A cell is (target, era, transport):

* target ``serve`` (``create_server`` of a copy of ``examples/skills``) or ``gateway`` (the gateway over
  that server);
* era ``2026-07-28`` or ``2025-11-25``;
* transport ``inproc`` (the SDK's in-process paths: the stream loop of ``InMemoryTransport`` for
  2025-11-25, fed raw JSON-RPC messages as the stdio transport feeds them, and the SDK ``Client``'s
  direct path for 2026-07-28) or ``http`` (``skilldeck serve|gateway --http`` in a subprocess, raw
  POSTs on loopback, ``initialize`` and the session id first on 2025-11-25).

Oracles, each a finding kind: ``crash`` (the server process or in-process server ended), ``traceback``
and ``error-log`` (a Python traceback or an ERROR line in its log; a log record with either in process), ``5xx`` (an HTTP status >= 500
other than the documented 503 at a session bound), ``internal-error`` (a JSON-RPC -32603 answer),
``no-reply`` (a request with a valid id got no answer with its id within the timeout), ``outside-pack``
(an answer carries bytes of a file next to the pack: canary files are planted there), ``rss`` (the
server's resident memory grew by more than ``--rss-bound-mb`` over the second half of the inputs; it is read
after 200 inputs, half-way and at the end).

Results: a summary on stdout and ``bench/results/fuzz.json`` (settings, inputs per cell, findings with
their inputs, RSS at three points). Findings in ``KNOWN_OPEN`` are counted apart; exit status 1 when any
other was found.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import copy
import datetime as dt
import json
import logging
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO / "bench"))  # the tests load this file by path (appended: never shadows a package)

from _common import stop  # noqa: E402

EXAMPLES = REPO / "examples" / "skills"
DEFAULT_OUTPUT = REPO / "bench" / "results" / "fuzz.json"
REGRESSIONS = REPO / "bench" / "fuzz_regressions.json"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ERAS = (MODERN, LEGACY)
TARGETS = ("serve", "gateway")
TRANSPORTS = ("inproc", "http")
CANARY = "SKILLDECK-FUZZ-CANARY-7f3a9c"
"""Planted in files next to the pack: no answer may ever carry it."""
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "skilldeck-fuzz", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
DOCUMENTED_5XX = {503}
"""A legacy session over the bound is refused with 503 (docs/deploy.md)."""
REPLY_TIMEOUT_S = 30.0
STREAMS = {"subscriptions/listen"}
"""Methods whose answer is a stream that stays open until the client leaves: not fuzzed here (one request
would hold a worker for the whole timeout); tests/server cover them."""
INTERNAL_ERROR = -32603
DUPLICATE_ID = "sent while another request of the session with the same id was in flight"
STARTUP = re.compile(r"at (http://\S+)")


# -- the pack and its neighbours ---------------------------------------------------------------------


def plant_pack(root: Path) -> Path:
    """A copy of the example pack at ``root/pack`` with canary files where path tricks would land."""
    pack = root / "pack"
    shutil.copytree(EXAMPLES, pack)
    (root / "secret.txt").write_text(f"{CANARY} next to the pack\n")
    sibling = root / "pack-evil" / "evil"  # shares the pack's name as a prefix
    sibling.mkdir(parents=True)
    (sibling / "SKILL.md").write_text(f"---\nname: evil\ndescription: {CANARY}\n---\n{CANARY}\n")
    (root / "pack.txt").write_text(f"{CANARY} as a file named like the pack\n")
    return pack


def pack_uris(pack: Path) -> list[str]:
    """Every ``skill://`` URI of a file of the pack (the valid URIs the generator starts from)."""
    uris: list[str] = []
    for skill_md in sorted(pack.rglob("SKILL.md")):
        folder = skill_md.parent
        skill = folder.relative_to(pack).as_posix()
        uris.extend(
            f"skill://{skill}/{p.relative_to(folder).as_posix()}" for p in sorted(folder.rglob("*")) if p.is_file()
        )
        uris.append(f"skill://{skill}/")
    return uris


# -- inputs -------------------------------------------------------------------------------------------


@dataclass
class Case:
    """One input: a JSON-RPC message as JSON-ready data, or raw bytes (``raw``) when it is not JSON."""

    message: Any
    raw: str | None = None  # latin-1 text of the bytes, so a case round-trips through JSON
    mutation: str = "valid"

    def body(self) -> bytes:
        if self.raw is not None:
            return self.raw.encode("latin-1")
        return json.dumps(self.message, ensure_ascii=False, allow_nan=True).encode("utf-8", "surrogatepass")

    def has_invalid_id(self) -> bool:
        """A well-formed request whose id is present but neither an int nor a string (1.5, true, null, {}, [])."""
        m = self.message
        return (
            self.raw is None
            and isinstance(m, dict)
            and isinstance(m.get("method"), str)
            and "id" in m
            and (isinstance(m["id"], bool) or not isinstance(m["id"], int | str))
        )

    def expects_reply(self) -> bool:
        """A well-formed request (has a method) whose id is valid: an int (not bool) or a string."""
        m = self.message
        return (
            (self.raw is None or self.mutation.startswith("deep"))
            and isinstance(m, dict)
            and isinstance(m.get("method"), str)
            and "id" in m
            and isinstance(m["id"], int | str)
            and not isinstance(m["id"], bool)
        )


def _request_schemas(era: str, target: str) -> list[tuple[str, dict[str, Any]]]:
    """(method, JSON schema of the whole request) for every client request of ``era``, the Skills extension's
    methods, and (gateway) one ``tools/call`` schema per meta-tool with its input schema as arguments."""
    from mcp_types.methods import CLIENT_REQUESTS

    from skilldeck.gateway import META_TOOLS
    from skilldeck.server._extension import GetSkillParams, ListSkillsParams, ReadDirectoryParams

    found: list[tuple[str, dict[str, Any]]] = []
    for (method, version), model in sorted(CLIENT_REQUESTS.items()):
        if version == era and method not in STREAMS:
            found.append((method, model.model_json_schema()))
    for method, params in (
        ("skills/list", ListSkillsParams),
        ("skills/get", GetSkillParams),
        ("resources/directory/read", ReadDirectoryParams),
    ):
        schema = params.model_json_schema()
        defs = schema.pop("$defs", {})
        found.append(
            (
                method,
                {
                    "type": "object",
                    "properties": {"method": {"const": method}, "params": schema},
                    "required": ["method", "params"],
                    "$defs": defs,
                },
            )
        )
    if target == "gateway":
        for tool in META_TOOLS:
            arguments = tool["inputSchema"]
            found.append(
                (
                    "tools/call",
                    {
                        "type": "object",
                        "properties": {
                            "method": {"const": "tools/call"},
                            "params": {
                                "type": "object",
                                "properties": {"name": {"const": tool["name"]}, "arguments": arguments},
                                "required": ["name", "arguments"],
                            },
                        },
                        "required": ["method", "params"],
                    },
                )
            )
    return found


_PATH_TRICKS = (
    "skill://../secret.txt",
    "skill://%2e%2e/secret.txt",
    "skill://%2E%2E/%2e%2e/secret.txt",
    "skill://sql-analytics/../../secret.txt",
    "skill://sql-analytics/%2e%2e/%2e%2e/secret.txt",
    "skill://sql-analytics/..%2f..%2fsecret.txt",
    "skill://sql-analytics/..%5c..%5csecret.txt",
    "skill://../pack-evil/evil/SKILL.md",
    "skill://..%2fpack-evil/evil/SKILL.md",
    "skill://pdf-forms/assets/../../../pack.txt",
    "skill:///etc/passwd",
    "skill://%2fetc%2fpasswd/SKILL.md",
    "skill://sql-analytics//etc/passwd",
    "skill://sql-analytics/SKILL.md%00.png",
    "skill://sql-analytics/SKILL.md?x=../../secret.txt",
    "skill://sql-analytics/SKILL.md#../../secret.txt",
    "file:///etc/passwd",
    "file://../secret.txt",
    "skill://SQL-ANALYTICS/SKILL.md",
    "skill://sql-analytics/./SKILL.md",
    "skill://sql-analytics/references/",
    "skill://acme/billing/../billing/refunds/SKILL.md",
    "skill://ａｃｍｅ/billing/refunds/SKILL.md",
    "skill:",
    "skill://",
    "://",
    "",
)
_STRINGS = (
    "",
    " ",
    "a",
    "\x00",
    "\ud800",
    "é",
    "💥",
    "null",
    "{}",
    "%s%n",
    "${HOME}",
    "\r\nX-Injected: 1",
    "../" * 40,
    "io.modelcontextprotocol/",
    "dev.skilldeck/",
)
_CURSORS = ("", "0", "-1", "9" * 40, "bm90IGEgY3Vyc29y", "=?base64?x?=", "\x00", "eyJvZmZzZXQiOiAtMX0=", "A" * 5000)
_METHODS_UNKNOWN = (
    "",
    "skills/",
    "skills/listx",
    "tools",
    "rpc.discover",
    "$/cancelRequest",
    "a" * 3000,
    "notifications/x",
    "initialize/",
)
_NAMES = (
    "find",
    "load",
    "read_skill_file",
    "call",
    "docs/job-search",
    "docs/nope",
    "sql-analytics",
    "acme/billing/refunds",
    "greet",
)


class Inputs:
    """A deterministic stream of cases for one (era, target): ``rng`` alone decides every choice."""

    def __init__(self, rng: random.Random, era: str, target: str, uris: list[str], *, huge: int = 200_000) -> None:
        self.rng = rng
        self.era = era
        self.target = target
        self.schemas = _request_schemas(era, target)
        self.uris = uris
        self.huge = huge
        self.next_id = 1

    # a value from a JSON schema, with hints from the property's name
    def value(self, schema: Any, defs: dict[str, Any], key: str = "", depth: int = 0) -> Any:
        rng = self.rng
        if not isinstance(schema, dict) or depth > 8:
            return self.scalar(key)
        if "$ref" in schema:
            ref = schema["$ref"].rsplit("/", 1)[-1]
            return self.value(defs.get(ref, {}), defs, key, depth + 1)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return rng.choice(schema["enum"])
        for combinator in ("anyOf", "oneOf"):
            if combinator in schema:
                return self.value(rng.choice(schema[combinator]), defs, key, depth + 1)
        if "allOf" in schema:
            merged: dict[str, Any] = {}
            for part in schema["allOf"]:
                merged.update(part)
            return self.value(merged, defs, key, depth + 1)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = rng.choice(kind)
        if kind == "object" or "properties" in schema:
            out: dict[str, Any] = {}
            required = set(schema.get("required", ()))
            for name, sub in schema.get("properties", {}).items():
                if name in required or rng.random() < 0.5:
                    out[name] = self.value(sub, defs, name, depth + 1)
            return out
        if kind == "array":
            return [self.value(schema.get("items", {}), defs, key, depth + 1) for _ in range(rng.randrange(3))]
        if kind == "integer":
            return rng.choice((0, 1, 5, 100, rng.randrange(-(2**31), 2**31)))
        if kind == "number":
            return rng.choice((0, 0.5, 1e3, -1.0))
        if kind == "boolean":
            return rng.random() < 0.5
        if kind == "null":
            return None
        return self.scalar(key)

    def scalar(self, key: str) -> Any:
        rng = self.rng
        lowered = key.lower()
        if lowered in ("uri", "path", "file", "url"):
            return rng.choice(self.uris) if rng.random() < 0.6 else rng.choice(_PATH_TRICKS)
        if lowered == "cursor":
            return rng.choice(_CURSORS)
        if lowered in ("name", "id", "skill", "tool"):
            return rng.choice(_NAMES)
        if lowered in ("query", "need", "task"):
            return rng.choice(("fill a pdf form", "refund a customer", "sql report", ""))
        if lowered == "protocolversion":
            return rng.choice(ERAS)
        return rng.choice(("hello", "x", "sql-analytics", *_STRINGS))

    def valid(self) -> dict[str, Any]:
        method, schema = self.rng.choice(self.schemas)
        request = self.value(schema, schema.get("$defs", {}))
        if not isinstance(request, dict):
            request = {"method": method}
        request.pop("jsonrpc", None)
        request.pop("id", None)
        if self.era == MODERN and request.get("method") != "initialize":
            params = request.setdefault("params", {})
            if isinstance(params, dict):
                meta = params.setdefault("_meta", {})
                if isinstance(meta, dict):
                    meta.update(copy.deepcopy(MODERN_META))
        return copy.deepcopy(request)  # schema consts and enums must not be mutated in place

    def case(self) -> Case:
        rng = self.rng
        request = self.valid()
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, **request}
        if rng.random() < 0.15:
            return Case(message)
        mutation = rng.choice(_MUTATIONS)
        return mutation(self, message)

    # helpers the mutations share
    def junk(self) -> Any:
        rng = self.rng
        return rng.choice(
            (
                None,
                True,
                -1,
                2**70,
                1.5,
                float("inf") if rng.random() < 0.1 else 0.0,
                "",
                "x" * rng.randrange(1, 64),
                [],
                [1, "a", None],
                {},
                {"a": {"b": []}},
                rng.choice(_STRINGS),
            )
        )

    def huge_string(self) -> str:
        unit = self.rng.choice(("A", "é", "💥", "\\", '"', "../", "%2e", "\n"))
        return unit * (self.rng.randrange(1, self.huge) // len(unit) + 1)

    def paths(self, value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
        """Every path to a value inside ``value`` (keys and indexes)."""
        yield prefix
        if isinstance(value, dict):
            for k, v in value.items():
                yield from self.paths(v, (*prefix, k))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                yield from self.paths(v, (*prefix, i))

    def replace_at(self, message: dict[str, Any], make: Callable[[Any], Any]) -> tuple[Any, ...]:
        """Replace one value below ``params`` (chosen at random) by ``make(old)``; the path replaced."""
        params = message.get("params")
        if not isinstance(params, dict) or not params:
            message["params"] = make(params)
            return ("params",)
        path = self.rng.choice([p for p in self.paths(params) if p])
        holder: Any = params
        for step in path[:-1]:
            holder = holder[step]
        holder[path[-1]] = make(holder[path[-1]])
        return ("params", *path)


def _wrong_type(inputs: Inputs, m: dict[str, Any]) -> Case:
    inputs.replace_at(m, lambda old: inputs.junk())
    return Case(m, mutation="wrong-type")


def _huge_string(inputs: Inputs, m: dict[str, Any]) -> Case:
    inputs.replace_at(m, lambda old: inputs.huge_string())
    return Case(m, mutation="huge-string")


def _deep(inputs: Inputs, m: dict[str, Any]) -> Case:
    """A value nested ``depth`` arrays or objects deep, written as text (``json.dumps`` would recurse)."""
    depth = inputs.rng.choice((30, 200, 900, 5000, 100_000))
    opening, closing = ("[", "]") if inputs.rng.random() < 0.5 else ('{"a":', "}")
    inputs.replace_at(m, lambda old: "\x00deep\x00")
    raw = json.dumps(m, ensure_ascii=True).replace('"\\u0000deep\\u0000"', opening * depth + "0" + closing * depth)
    return Case(m, raw=raw, mutation=f"deep-{depth}")


def _unknown_method(inputs: Inputs, m: dict[str, Any]) -> Case:
    m["method"] = inputs.rng.choice(_METHODS_UNKNOWN)
    return Case(m, mutation="unknown-method")


def _bad_id(inputs: Inputs, m: dict[str, Any]) -> Case:
    m["id"] = inputs.rng.choice((1.5, True, False, None, {}, [], -1, 0, 2**63, 2**70, "", "x" * 500, 1e3, "💥"))
    return Case(m, mutation="bad-id")


def _no_id(inputs: Inputs, m: dict[str, Any]) -> Case:
    del m["id"]
    return Case(m, mutation="no-id")


def _missing_params(inputs: Inputs, m: dict[str, Any]) -> Case:
    params = m.get("params")
    if isinstance(params, dict) and params and inputs.rng.random() < 0.7:
        del params[inputs.rng.choice(list(params))]
    else:
        m.pop("params", None)
    return Case(m, mutation="missing-param")


def _extra_params(inputs: Inputs, m: dict[str, Any]) -> Case:
    params = m.setdefault("params", {})
    if isinstance(params, dict):
        params[inputs.rng.choice(("extra", "uri", "cursor", "_meta", "name", "arguments", "$ref", "__proto__"))] = (
            inputs.junk()
        )
    m[inputs.rng.choice(("extra", "result", "error", "params2"))] = inputs.junk()
    return Case(m, mutation="extra-param")


def _bad_meta(inputs: Inputs, m: dict[str, Any]) -> Case:
    params = m.setdefault("params", {})
    if not isinstance(params, dict):
        params = m["params"] = {}
    rng = inputs.rng
    choice = rng.randrange(5)
    if choice == 0:
        params["_meta"] = inputs.junk()
    else:
        meta = params.setdefault("_meta", {})
        if not isinstance(meta, dict):
            meta = params["_meta"] = {}
        key = rng.choice(
            (
                "io.modelcontextprotocol/protocolVersion",
                "io.modelcontextprotocol/clientInfo",
                "io.modelcontextprotocol/clientCapabilities",
                "io.modelcontextprotocol/locale",
                "io.modelcontextprotocol/requestState",
                "dev.skilldeck/identity",
                "dev.skilldeck/locale",
                "progressToken",
                "io.modelcontextprotocol/",
            )
        )
        meta[key] = inputs.huge_string() if choice == 1 else inputs.junk()
    return Case(m, mutation="bad-meta")


def _bad_cursor(inputs: Inputs, m: dict[str, Any]) -> Case:
    m["method"] = inputs.rng.choice(
        (
            "skills/list",
            "resources/list",
            "tools/list",
            "prompts/list",
            "resources/directory/read",
            "resources/templates/list",
        )
    )
    params = m.setdefault("params", {})
    if not isinstance(params, dict):
        params = m["params"] = {}
    params["cursor"] = inputs.rng.choice(
        (
            *_CURSORS,
            inputs.junk(),
            base64.b64encode(inputs.huge_string()[:3000].encode("utf-8", "surrogatepass")).decode(),
        )
    )
    if m["method"] == "resources/directory/read":
        params.setdefault("uri", inputs.rng.choice(inputs.uris))
    return Case(m, mutation="bad-cursor")


def _bad_uri(inputs: Inputs, m: dict[str, Any]) -> Case:
    rng = inputs.rng
    m["method"] = rng.choice(
        ("resources/read", "skills/get", "resources/directory/read", "resources/subscribe", "resources/unsubscribe")
    )
    params = m.setdefault("params", {})
    if not isinstance(params, dict):
        params = m["params"] = {}
    base = rng.choice(inputs.uris)
    trick = rng.choice(_PATH_TRICKS)
    params["uri"] = rng.choice(
        (
            trick,
            base + rng.choice(("/..", "/../..", "%00", "/.", "//", "?a=b", "#frag", "%", "%zz", "\\..\\..")),
            base.replace("skill://", rng.choice(("SKILL://", "skill:/", "skill:///", "skill://./", "skill://../"))),
            inputs.junk(),
        )
    )
    if inputs.target == "gateway" and rng.random() < 0.4:
        m["method"] = "tools/call"
        m["params"] = {
            "name": "read_skill_file",
            "arguments": {
                "id": rng.choice(_NAMES),
                "path": rng.choice(
                    (*_PATH_TRICKS, "../../secret.txt", "/etc/passwd", "SKILL.md", "references/../../../secret.txt")
                ),
            },
        }
        if inputs.era == MODERN:
            m["params"]["_meta"] = copy.deepcopy(MODERN_META)
    return Case(m, mutation="bad-uri")


def _not_json(inputs: Inputs, m: dict[str, Any]) -> Case:
    rng = inputs.rng
    body = json.dumps(m)
    raw = rng.choice(
        (
            body[: rng.randrange(len(body))],
            body + rng.choice(("}", ",", "\x00", " garbage")),
            "[" + body + "," + body + "]",
            "[]",
            "null",
            "1",
            '"x"',
            body.replace('"2.0"', '"1.0"'),
            body.replace('"jsonrpc"', '"JSONRPC"'),
            "\ufeff" + body,
            "[" * 10_000 + "]" * 10_000,
            '{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"}',
            '{"jsonrpc":"2.0","id":1,"method":"ping","params":' + "{" * 3000 + "}" * 3000 + "}",
        )
    )
    try:
        raw.encode("latin-1")
    except UnicodeEncodeError:
        raw = raw.encode("utf-8").decode("latin-1")
    return Case(m, raw=raw, mutation="not-json")


_MUTATIONS: tuple[Callable[[Inputs, dict[str, Any]], Case], ...] = (
    _wrong_type,
    _wrong_type,
    _huge_string,
    _deep,
    _unknown_method,
    _bad_id,
    _no_id,
    _missing_params,
    _extra_params,
    _bad_meta,
    _bad_meta,
    _bad_cursor,
    _bad_uri,
    _bad_uri,
    _bad_uri,
    _not_json,
)


# -- what a cell found ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Known:
    """An open finding, reported by the issue it belongs to: the short run does not fail on it, but counts it."""

    kind: str
    cell: str  # a prefix of the cell name, e.g. "gateway/2025-11-25/"
    detail: str  # a phrase of the finding's detail
    why: str


KNOWN_OPEN: tuple[Known, ...] = (
    *(
        Known(
            kind,
            "",
            DUPLICATE_ID,
            "Two requests of one legacy session in flight with the same id (the client's mistake): the SDK's "
            "streamable HTTP transport keys a session's answers by request id, so one is answered and the others "
            "wait for ever (an SSE stream kept open) or, under serve's JSON answers, get 500 'Session terminated "
            "before the request completed'.",
        )
        for kind in ("no-reply", "5xx", "internal-error")
    ),
)


def is_known(finding: Finding) -> Known | None:
    for known in KNOWN_OPEN:
        if finding.kind == known.kind and finding.cell.startswith(known.cell) and known.detail in finding.detail:
            return known
    return None


@dataclass
class Finding:
    kind: str
    cell: str
    detail: str
    case: dict[str, Any] | None = None


@dataclass
class Cell:
    """One (target, era, transport): how many inputs it ran and what it found."""

    target: str
    era: str
    transport: str
    inputs: int = 0
    answered: int = 0
    skipped: int = 0  # inputs this transport cannot carry (the in-process paths take JSON-RPC models only)
    seconds: float = 0.0
    rss_mb_before: float | None = None  # after the warm-up inputs
    rss_mb_middle: float | None = None  # half-way
    rss_mb_after: float | None = None
    statuses: dict[str, int] = field(default_factory=dict)
    mutations: dict[str, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.target}/{self.era}/{self.transport}"

    def find(self, kind: str, detail: str, case: Case | None, limit: int = 20) -> None:
        """Record a finding (at most ``limit`` of one kind, so a systematic fault does not flood the report)."""
        if sum(f.kind == kind for f in self.findings) < limit:
            self.findings.append(Finding(kind, self.name, detail[:2000], _shrink(case) if case else None))


def _shrink(case: Case) -> dict[str, Any]:
    """The case as JSON, its long strings cut (a reproducer names their length)."""

    def cut(value: Any) -> Any:
        if isinstance(value, str) and len(value) > 300:
            return f"{value[:100]}...<{len(value)} chars>"
        if isinstance(value, dict):
            return {k: cut(v) for k, v in value.items()}
        if isinstance(value, list):
            return [cut(v) for v in value[:20]]
        return value

    out = asdict(case)
    try:
        json.dumps(out["message"], allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        out["message"] = repr(out["message"])[:500]
    return cut(out)


def rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _scan_answer(cell: Cell, case: Case, text: str, find: Callable[[str, str, Case], None] | None = None) -> None:
    """The oracles on one answer's text: no canary bytes, no system file, no internal error."""
    find = find or cell.find
    if CANARY in text or "root:x:0:0" in text:
        find("outside-pack", text[:500], case)
    if f'"code":{INTERNAL_ERROR}' in text.replace(" ", ""):
        find("internal-error", text[:500], case)


class _ErrorRecords(logging.Handler):
    """Counts log records a client's input must never cause: ERROR and above, or any with a traceback."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.levelno >= logging.ERROR:
            self.records.append(record)


# -- in process --------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def inproc_server(pack: Path, target: str) -> AsyncIterator[Any]:
    """The ``MCPServer`` of ``target``: ``serve``'s server of ``pack``, or the gateway in front of it."""
    from skilldeck.server import create_server

    server, _ = create_server(pack)
    if target == "serve":
        yield server
        return
    from skilldeck.gateway import GatewayService, create_gateway
    from skilldeck.host import Host, InProcessServer, ServerSpec

    async with Host([ServerSpec("docs", InProcessServer(server), timeout=10)]) as host:
        gateway, _ = create_gateway(GatewayService(host, encoder=None))
        yield gateway


async def run_inproc(cell: Cell, inputs: Iterator[Case], pack: Path) -> None:
    """Feed ``inputs`` to the in-process server of ``cell.target`` in ``cell.era``."""
    import anyio

    handler = _ErrorRecords()
    logging.getLogger().addHandler(handler)
    try:
        async with inproc_server(pack, cell.target) as server:
            if cell.era == LEGACY:
                await _legacy_inproc(cell, inputs, server, handler)
            else:
                await _modern_inproc(cell, inputs, server, handler)
    except anyio.get_cancelled_exc_class():
        raise
    except BaseException as exc:  # the server's task group ended: a crash
        cell.find("crash", "".join(traceback.format_exception(exc))[-2000:], None)
    finally:
        logging.getLogger().removeHandler(handler)


def _check_records(cell: Cell, handler: _ErrorRecords, case: Case) -> None:
    for record in handler.records:
        kind = "traceback" if record.exc_info else "error-log"
        cell.find(kind, f"{record.name} {record.levelname}: {record.getMessage()[:500]}", case)
    handler.records.clear()


async def _legacy_inproc(cell: Cell, inputs: Iterator[Case], server: Any, handler: _ErrorRecords) -> None:
    """2025-11-25 over the SDK's in-memory transport: the stream loop gets each input as stdio would hand it
    over (the parsed message, or the exception parsing raised), and its answers are read back."""
    import anyio
    from mcp.client._memory import InMemoryTransport
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCResponse, jsonrpc_message_adapter

    async with InMemoryTransport(server) as (read, write):

        async def ask(body: bytes, wanted: Any) -> Any:
            try:
                message = jsonrpc_message_adapter.validate_json(body, by_name=False)
            except Exception as exc:
                await write.send(exc)
                return None
            await write.send(SessionMessage(message))
            if wanted is None:
                return None
            with anyio.fail_after(REPLY_TIMEOUT_S):
                while True:
                    got = await read.receive()
                    if isinstance(got, Exception):
                        continue
                    if getattr(got.message, "id", None) == wanted and not hasattr(got.message, "method"):
                        return got.message

        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}},
        }
        answer = await ask(json.dumps(init).encode(), 0)
        assert isinstance(answer, JSONRPCResponse), answer
        await ask(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', None)
        barrier = 0
        for case in inputs:
            cell.inputs += 1
            cell.mutations[case.mutation] = cell.mutations.get(case.mutation, 0) + 1
            wanted = case.message["id"] if case.expects_reply() else None
            try:
                got = await ask(case.body(), wanted)
            except TimeoutError:
                cell.find("no-reply", f"no answer within {REPLY_TIMEOUT_S:.0f}s", case)
                got = None
            if got is not None:
                cell.answered += 1
                _scan_answer(cell, case, got.model_dump_json(by_alias=True))
            else:  # a ping after it, answered in order, so what the input made the server log is seen now
                barrier += 1
                try:
                    await ask(
                        json.dumps({"jsonrpc": "2.0", "id": f"barrier-{barrier}", "method": "ping"}).encode(),
                        f"barrier-{barrier}",
                    )
                except TimeoutError:
                    cell.find("no-reply", "a ping after this input got no answer", case)
            _check_records(cell, handler, case)


async def _modern_inproc(cell: Cell, inputs: Iterator[Case], server: Any, handler: _ErrorRecords) -> None:
    """2026-07-28 through the SDK ``Client``'s direct in-process path: each input's method and params go
    out as a request (the client picks the id and adds its envelope); inputs it cannot carry are skipped."""
    import anyio
    from mcp import Client
    from mcp.shared.exceptions import MCPError
    from mcp_types import Request, RequestParams, Result
    from pydantic import ConfigDict, ValidationError

    class Params(RequestParams):
        model_config = ConfigDict(extra="allow")

    class AnyResult(Result):
        model_config = ConfigDict(extra="allow")

    async with Client(server, mode="auto", cache=None) as client:
        for case in inputs:
            cell.inputs += 1
            cell.mutations[case.mutation] = cell.mutations.get(case.mutation, 0) + 1
            m = case.message
            params = m.get("params", {}) if isinstance(m, dict) else None
            if not case.expects_reply() or not isinstance(params, dict):
                cell.skipped += 1
                continue
            try:
                request: Request[Params, str] = Request(method=m["method"], params=Params(**params))
            except (ValidationError, TypeError):
                cell.skipped += 1
                continue
            if (
                _has_lone_surrogate(m.get("method"))
                or _has_lone_surrogate(params.get("name"))
                or _has_lone_surrogate(params.get("uri"))
            ):
                cell.skipped += 1  # the SDK client cannot put it in its Mcp-Method/Mcp-Name header (UTF-8 only)
                continue
            try:
                with anyio.fail_after(REPLY_TIMEOUT_S):
                    result = await client.session.send_request(request, AnyResult)
                cell.answered += 1
                _scan_answer(cell, case, repr(result.model_dump(by_alias=True)))  # may hold lone surrogates
            except MCPError as exc:
                cell.answered += 1
                _scan_answer(
                    cell, case, json.dumps({"code": exc.error.code, "message": exc.error.message}).replace(" ", "")
                )
            except TimeoutError:
                cell.find("no-reply", f"no answer within {REPLY_TIMEOUT_S:.0f}s", case)
            except ValidationError as exc:  # the client could not read the answer back
                cell.answered += 1
                cell.find("bad-answer", str(exc)[:500], case)
            _check_records(cell, handler, case)


# -- over HTTP -----------------------------------------------------------------------------------------


def _cli_env() -> dict[str, str]:
    return {**os.environ, "COLUMNS": "400", "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}


@contextlib.contextmanager
def http_server(pack: Path, target: str, workdir: Path) -> Iterator[tuple[subprocess.Popen[bytes], str, Path]]:
    """``skilldeck serve PACK --http`` or ``skilldeck gateway`` in front of it (stdio), on a free loopback
    port, until the block ends: (process, URL, log)."""
    cli = [sys.executable, "-m", "skilldeck.cli"]
    serve = [*cli, "serve", str(pack)]
    cmd = serve
    if target == "gateway":
        config = workdir / "gateway.json"
        config.write_text(json.dumps({"mcpServers": {"docs": {"command": serve[0], "args": serve[1:]}}}))
        cmd = [*cli, "gateway", "--config", str(config), "--lexical"]
    log = workdir / f"{target}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*cmd, "--http", "127.0.0.1:0"],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=_cli_env(),
        )
    try:
        deadline = time.monotonic() + 120
        while not (url := STARTUP.search(log.read_text(errors="replace"))):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{target} did not start:\n{log.read_text(errors='replace')}")
            time.sleep(0.1)
        yield proc, url.group(1), log
    finally:
        stop(proc, 15)


def _tree_rss_mb(pid: int) -> float:
    """RSS of ``pid`` and its children (the gateway's stdio upstream), in MB."""
    total = rss_mb(pid)
    with contextlib.suppress(OSError):
        for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
            with contextlib.suppress(OSError):
                total += rss_mb(child)
    return round(total, 1)


def _replies(content_type: str, body: bytes) -> list[Any]:
    """The JSON-RPC messages of a response body (one JSON document, or the ``data:`` events of an SSE stream)."""
    text = body.decode("utf-8", "replace")
    chunks = (
        [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        if content_type.startswith("text/event-stream")
        else [text]
    )
    found: list[Any] = []
    for chunk in chunks:
        if not chunk:
            continue
        try:
            value = json.loads(chunk)
        except ValueError:
            continue
        found.extend(value if isinstance(value, list) else [value])
    return found


def _has_lone_surrogate(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _modern_headers(message: Any) -> dict[str, str]:
    """The headers of a 2026-07-28 POST of ``message``: its method and name as the SDK client writes them."""
    from mcp.shared.inbound import encode_header_value as sdk_encode

    def encode_header_value(value: str) -> str:  # the SDK's, or base64 of what a lone surrogate would be sent as
        if _has_lone_surrogate(value):
            return f"=?base64?{base64.b64encode(value.encode('utf-8', 'surrogatepass')).decode('ascii')}?="
        return sdk_encode(value)

    headers = {**HEADERS, "MCP-Protocol-Version": MODERN}
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return headers
    method = message["method"]
    headers["Mcp-Method"] = encode_header_value(method)
    params = message.get("params")
    if isinstance(params, dict):
        key = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}.get(method)
        if key and isinstance(params.get(key), str):
            headers["Mcp-Name"] = encode_header_value(params[key])
    return headers


async def run_http(
    cell: Cell,
    inputs: Iterator[Case],
    pack: Path,
    workdir: Path,
    *,
    concurrency: int = 4,
    warmup: int = 200,
    middle: int = -1,
) -> None:
    """Feed ``inputs`` as raw POSTs to ``skilldeck serve|gateway --http`` of ``cell.target`` in ``cell.era``."""
    import anyio
    import httpx2

    with http_server(pack, cell.target, workdir) as (proc, url, log):
        async with httpx2.AsyncClient(timeout=REPLY_TIMEOUT_S) as http:
            session: dict[str, str] = {}

            async def open_session() -> None:
                init = {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": LEGACY,
                        "capabilities": {},
                        "clientInfo": {"name": "fuzz", "version": "1"},
                    },
                }
                opened = await http.post(url, json=init, headers=HEADERS)
                session.clear()
                session.update(
                    {**HEADERS, "Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": LEGACY}
                )
                await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)

            if cell.era == LEGACY:
                await open_session()
            lock = anyio.Lock()
            done = 0
            last: list[Case] = []
            in_flight: dict[str, list[Case]] = {}
            collided: set[int] = set()

            async def one(case: Case) -> None:
                headers = dict(session) if cell.era == LEGACY else _modern_headers(case.message)
                key = ""
                if cell.era == LEGACY and case.expects_reply():
                    key = f"{session.get('Mcp-Session-Id')}/{json.dumps(case.message['id'])}"
                    if in_flight.get(key):  # the client's mistake: the SDK keys a session's answers by id
                        collided.update(id(c) for c in [*in_flight[key], case])
                    in_flight.setdefault(key, []).append(case)
                try:
                    await post(case, headers)
                finally:
                    if key:
                        in_flight[key].remove(case)
                        if not in_flight[key]:
                            del in_flight[key]

            async def post(case: Case, headers: dict[str, str]) -> None:
                def find(kind: str, detail: str, case: Case | None) -> None:
                    if case is not None and id(case) in collided:
                        detail = f"{DUPLICATE_ID}: {detail}"
                    cell.find(kind, detail, case)

                try:
                    with anyio.fail_after(REPLY_TIMEOUT_S):  # in all: an SSE stream's keep-alives reset httpx's timeout
                        response = await http.post(url, content=case.body(), headers=headers)
                except (httpx2.TimeoutException, TimeoutError):
                    find("no-reply", f"no HTTP answer within {REPLY_TIMEOUT_S:.0f}s", case)
                    return
                except httpx2.HTTPError as exc:
                    find("no-reply", f"the connection failed: {type(exc).__name__}: {exc}", case)
                    return
                status = response.status_code
                cell.statuses[str(status)] = cell.statuses.get(str(status), 0) + 1
                if status >= 500 and status not in DOCUMENTED_5XX:
                    find("5xx", f"HTTP {status}: {response.text[:500]}", case)
                if status == 404 and cell.era == LEGACY and "Session not found" in response.text:
                    async with (
                        lock
                    ):  # the session was ended: by what came before (with --concurrency 1, the last input)
                        find(
                            "session-ended",
                            f"HTTP 404 Session not found; the input before: {json.dumps(_shrink(last[0]) if last else None)[:1500]}",
                            case,
                        )
                        await open_session()
                last[:] = [case]
                _scan_answer(cell, case, response.text, find)
                if case.expects_reply():
                    wanted = case.message["id"]
                    replies = [
                        r
                        for r in _replies(response.headers.get("content-type", ""), response.content)
                        if isinstance(r, dict)
                    ]
                    if any(
                        r.get("id") == wanted and type(r.get("id")) is type(wanted) and ("result" in r or "error" in r)
                        for r in replies
                    ):
                        cell.answered += 1
                    elif 400 <= status < 500 and any(r.get("id") is None and "error" in r for r in replies):
                        cell.answered += 1  # refused before its id could be read: an error with id null
                    elif 400 <= status < 500 and status != 404:
                        cell.answered += 1  # refused by the HTTP layer (e.g. 413, 431), an answer all the same
                    else:
                        find(
                            "no-reply", f"HTTP {status} without an answer to id {wanted!r}: {response.text[:300]}", case
                        )
                elif case.has_invalid_id():  # answered -32600 with id null, not taken for a notification
                    replies = _replies(response.headers.get("content-type", ""), response.content)
                    if (
                        any(isinstance(r, dict) and r.get("id") is None and "error" in r for r in replies)
                        or 400 <= status < 500
                    ):
                        cell.answered += 1
                    else:
                        find(
                            "no-reply",
                            f"HTTP {status}, a request with an invalid id got no error: {response.text[:300]}",
                            case,
                        )

            async def worker() -> None:
                nonlocal done
                for case in inputs:  # the workers share one iterator
                    cell.inputs += 1
                    cell.mutations[case.mutation] = cell.mutations.get(case.mutation, 0) + 1
                    await one(case)
                    done += 1
                    if done == warmup:
                        cell.rss_mb_before = _tree_rss_mb(proc.pid)
                    if done == middle:
                        cell.rss_mb_middle = _tree_rss_mb(proc.pid)

            async with anyio.create_task_group() as tg:
                for _ in range(concurrency):
                    tg.start_soon(worker)
        if proc.poll() is not None:
            cell.find("crash", f"the server exited with {proc.returncode}", None)
        else:
            cell.rss_mb_after = _tree_rss_mb(proc.pid)
        text = log.read_text(errors="replace")
        for match in re.finditer(r"Traceback \(most recent call last\)", text):
            cell.find("traceback", text[max(0, match.start() - 300) : match.start() + 1500], None)
        for line in text.splitlines():
            if re.search(r"\bERROR\b|\bCRITICAL\b", line):
                cell.find("error-log", line[:500], None)


# -- running cells ---------------------------------------------------------------------------------------


def cases(seed: int, era: str, target: str, uris: list[str], count: int, *, huge: int) -> Iterator[Case]:
    """``count`` cases of one (era, target) from ``seed`` (the same seed gives the same cases)."""
    inputs = Inputs(random.Random(f"{seed}/{era}/{target}"), era, target, uris, huge=huge)
    for _ in range(count):
        yield inputs.case()


def load_regressions(path: Path = REGRESSIONS) -> list[dict[str, Any]]:
    """The inputs that once failed: ``[{"target", "era", "case": {message, raw, mutation}, "why"}]``."""
    return list(json.loads(path.read_text())["inputs"]) if path.exists() else []


def regression_cases(era: str, target: str, path: Path = REGRESSIONS) -> list[Case]:
    out: list[Case] = []
    for entry in load_regressions(path):
        if entry.get("era", era) == era and entry.get("target", target) == target:
            case = entry["case"]
            message = json.loads(json.dumps(case.get("message")).replace('"LONG16000"', json.dumps("x" * 16_000)))
            out.append(Case(message, raw=case.get("raw"), mutation="regression"))
    return out


def run_cell(
    cell: Cell,
    inputs: list[Case] | Iterator[Case],
    pack: Path,
    workdir: Path,
    *,
    concurrency: int = 4,
    warmup: int = 200,
    middle: int = -1,
) -> Cell:
    """Run one cell to the end (its own event loop) and return it, with its findings. The server's RSS is
    read after ``warmup`` inputs, after ``middle`` inputs and at the end."""
    import anyio

    stream = iter(inputs)
    started = time.perf_counter()
    if cell.transport == "inproc":
        cell.rss_mb_before = None

        def measured() -> Iterator[Case]:
            for n, case in enumerate(stream):
                if n == warmup:
                    cell.rss_mb_before = rss_mb()
                if n == middle:
                    cell.rss_mb_middle = rss_mb()
                yield case

        anyio.run(run_inproc, cell, measured(), pack, backend_options={"use_uvloop": False})
        cell.rss_mb_after = rss_mb()
    else:
        anyio.run(lambda: run_http(cell, stream, pack, workdir, concurrency=concurrency, warmup=warmup, middle=middle))
    cell.seconds = round(time.perf_counter() - started, 1)
    return cell


def _progress(inputs: list[Case] | Iterator[Case], cell: Cell, every: int = 10_000) -> Iterator[Case]:
    """``inputs``, printing a line every ``every`` of them (a long run shows where it is)."""
    started = time.perf_counter()
    for n, case in enumerate(inputs, 1):
        yield case
        if n % every == 0:
            print(f"  {n:>9,} sent, {time.perf_counter() - started:7.1f}s, {len(cell.findings)} findings", flush=True)


def rss_finding(cell: Cell, bound_mb: float) -> None:
    """An ``rss`` finding when the server's RSS still grew by more than ``bound_mb`` over the second half of the
    inputs: the first half fills the allocator's arenas up to the largest inputs' high-water mark (huge strings
    and their copies), a leak keeps climbing."""
    if cell.rss_mb_middle is None or cell.rss_mb_after is None:
        return
    if cell.rss_mb_after - cell.rss_mb_middle > bound_mb:
        cell.find(
            "rss",
            f"RSS {cell.rss_mb_before} -> {cell.rss_mb_middle} (half-way) -> {cell.rss_mb_after} MB: "
            f"more than {bound_mb} MB in the second half",
            None,
        )


def _shown(path: Path) -> str:
    """``path`` relative to the repository when it is inside it (results name no machine's folders)."""
    resolved = path.resolve()
    return resolved.relative_to(REPO).as_posix() if resolved.is_relative_to(REPO) else path.name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--inputs", type=int, default=20_000, help="inputs in all, split over the cells (default 20,000)"
    )
    parser.add_argument(
        "--http-share",
        type=float,
        default=0.1,
        help="the share of inputs sent over HTTP (default 0.1; in process is ~10x faster)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--targets", nargs="+", choices=TARGETS, default=list(TARGETS))
    parser.add_argument("--eras", nargs="+", choices=ERAS, default=list(ERAS))
    parser.add_argument("--transports", nargs="+", choices=TRANSPORTS, default=list(TRANSPORTS))
    parser.add_argument("--huge", type=int, default=1_000_000, help="the longest generated string, in characters")
    parser.add_argument("--concurrency", type=int, default=4, help="concurrent POSTs over HTTP")
    parser.add_argument(
        "--rss-bound-mb", type=float, default=50.0, help="the most a server's RSS may grow over the second half"
    )
    parser.add_argument("--replay", type=Path, help="run only the inputs of this regression file, in every cell")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)

    cells = [Cell(t, e, x) for t in args.targets for e in args.eras for x in args.transports]
    http_cells = sum(c.transport == "http" for c in cells)
    inproc_cells = len(cells) - http_cells
    share = args.http_share if http_cells and inproc_cells else (1.0 if http_cells else 0.0)
    per_http = int(args.inputs * share) // max(http_cells, 1)
    per_inproc = int(args.inputs * (1 - share)) // max(inproc_cells, 1)
    started = dt.datetime.now(dt.UTC)
    with tempfile.TemporaryDirectory(prefix="skilldeck-fuzz-") as tmp:
        root = Path(tmp)
        pack = plant_pack(root)
        uris = pack_uris(pack)
        for cell in cells:
            count = per_http if cell.transport == "http" else per_inproc
            if args.replay:
                inputs: list[Case] | Iterator[Case] = regression_cases(cell.era, cell.target, args.replay)
            else:
                inputs = cases(args.seed, cell.era, cell.target, uris, count, huge=args.huge)
            print(f"{cell.name}: {count:,} inputs ...", flush=True)
            run_cell(
                cell,
                _progress(inputs, cell),
                pack,
                root,
                concurrency=args.concurrency,
                warmup=min(200, count // 5),
                middle=count // 2,
            )
            rss_finding(cell, args.rss_bound_mb)
            print(
                f"{cell.name:34} {cell.inputs:>9,} inputs {cell.answered:>9,} answered {cell.skipped:>8,} skipped "
                f"{cell.seconds:>7.1f}s  RSS {cell.rss_mb_before} -> {cell.rss_mb_middle} -> {cell.rss_mb_after} MB  findings {len(cell.findings)}",
                flush=True,
            )
            for finding in cell.findings:
                known = " (known, open)" if is_known(finding) else ""
                print(
                    f"  {finding.kind}{known}: {finding.detail[:200]!r}\n    {json.dumps(finding.case)[:400] if finding.case else ''}",
                    flush=True,
                )
    total = sum(c.inputs for c in cells)
    every = [f for c in cells for f in c.findings]
    findings = [f for f in every if not is_known(f)]
    result = {
        "benchmark": "fuzz",
        "date": started.isoformat(timespec="seconds"),
        "command": " ".join(["bench/fuzz.py", *(argv if argv is not None else sys.argv[1:])]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_average": os.getloadavg()},
        "settings": {k: (_shown(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "inputs": total,
        "findings_by_kind": {k: sum(f.kind == k for f in findings) for k in sorted({f.kind for f in findings})},
        "known_open_by_kind": {
            k: sum(f.kind == k for f in every if is_known(f)) for k in sorted({f.kind for f in every if is_known(f)})
        },
        "cells": [
            {**{k: v for k, v in asdict(c).items() if k != "findings"}, "findings": [asdict(f) for f in c.findings]}
            for c in cells
        ],
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(
        f"{total:,} inputs, {len(findings)} findings, {len(every) - len(findings)} of them known and open -> {args.output}"
    )
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
