"""The gateway's meta-tools as a client sees them: names, descriptions, schemas. Pure data.

Four small tools with stable schemas stand in for every tool of every upstream server:

* ``find`` — ranked cards for a question, or an abstention with its reason (never a schema);
* ``load`` — card ids in; verified skill instructions and the input schemas of exactly the tools
  loaded out, and those tools become active;
* ``read_skill_file`` — a supporting file of a loaded skill, verified against the held entry;
* ``call`` — an active upstream tool, through the gate, on the session that listed it.

Each declares an ``outputSchema``; results carry ``structuredContent`` plus a short text
rendering for clients that show only text. The descriptions are written for a model: they say
when to use the tool and what comes back.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["CALL", "FIND", "LOAD", "META_TOOLS", "META_TOOL_NAMES", "READ_SKILL_FILE"]

FIND: Final = "find"
LOAD: Final = "load"
READ_SKILL_FILE: Final = "read_skill_file"
CALL: Final = "call"

MAX_QUERY_CHARS: Final = 2_000
MAX_FIND_LIMIT: Final = 50
MAX_LOAD_IDS: Final = 20
MAX_ID_CHARS: Final = 300

_CARD = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "LABEL/NAME: pass it to load"},
        "kind": {"type": "string", "enum": ["skill", "tool"]},
        "server": {"type": "string"},
        "name": {"type": "string"},
        "description": {"type": "string"},
        "score": {"type": "number"},
    },
    "required": ["id", "kind", "server", "name", "description", "score"],
}

_TOOL = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "LABEL/TOOL: pass it to call"},
        "description": {"type": "string"},
        "inputSchema": {"type": "object"},
    },
    "required": ["name", "inputSchema"],
}

META_TOOLS: Final[tuple[dict[str, Any], ...]] = (
    {
        "name": FIND,
        "title": "Find a skill or tool",
        "description": (
            "Search every connected server for the skills and tools that fit a task. Returns short "
            "cards (id, kind, server, description, score), best first, or abstain=true with the reason "
            "when nothing fits well enough. Call this first; then pass the ids you want to `load`."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "The task in your own words",
                    "maxLength": MAX_QUERY_CHARS,
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_FIND_LIMIT,
                    "description": "How many cards at most (default 5)",
                },
                "needs": {
                    "type": "array",
                    "items": {"type": "string", "maxLength": MAX_QUERY_CHARS},
                    "minItems": 1,
                    "maxItems": 8,
                    "description": "Optional: the task split into its separate needs; each gets its own cards",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "abstain": {"type": "boolean"},
                "confidence": {"type": "number"},
                "reason": {"type": "string"},
                "cards": {"type": "array", "items": _CARD},
                "low_confidence": {"type": "boolean"},
                "ranker": {"type": "string", "enum": ["semantic", "lexical"]},
                "indexing": {
                    "type": "object",
                    "properties": {"encoded": {"type": "integer"}, "total": {"type": "integer"}},
                    "required": ["encoded", "total"],
                },
            },
            "required": ["abstain", "confidence", "reason", "cards", "ranker"],
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
    {
        "name": LOAD,
        "title": "Load skills or tools",
        "description": (
            "Load cards returned by `find`, by id. A skill id (LABEL/NAME) returns its verified "
            "instructions and the input schemas of the tools it uses; a tool id (LABEL/TOOL) returns "
            "that tool's schema. What you load becomes active: call those tools with `call`."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "ids": {
                    "type": "array",
                    "items": {"type": "string", "maxLength": MAX_ID_CHARS},
                    "minItems": 1,
                    "maxItems": MAX_LOAD_IDS,
                    "description": "Card ids from find",
                }
            },
            "required": ["ids"],
            "additionalProperties": False,
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "skills": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string"},
                            "uri": {"type": "string"},
                            "verified": {"type": "boolean"},
                            "content": {"type": "string"},
                            "files": {"type": "array", "items": {"type": "string"}},
                        },
                        "required": ["id", "uri", "verified", "content"],
                    },
                },
                "tools": {"type": "array", "items": _TOOL},
                "refused": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"id": {"type": "string"}, "reason": {"type": "string"}},
                        "required": ["id", "reason"],
                    },
                },
            },
            "required": ["skills", "tools", "refused"],
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
    {
        "name": READ_SKILL_FILE,
        "title": "Read a file of a loaded skill",
        "description": (
            "Read a supporting file (e.g. references/FORMS.md) of a skill you loaded, when its "
            "instructions point to it. The file is checked against the skill's manifest."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "skill": {"type": "string", "maxLength": MAX_ID_CHARS, "description": "The skill id (LABEL/NAME)"},
                "path": {
                    "type": "string",
                    "maxLength": 1_024,
                    "description": "The file's path inside the skill, as its instructions name it",
                },
            },
            "required": ["skill", "path"],
            "additionalProperties": False,
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "skill": {"type": "string"},
                "uri": {"type": "string"},
                "mimeType": {"type": "string"},
                "text": {"type": "string"},
                "blob": {"type": "string"},
            },
            "required": ["skill", "uri"],
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
    {
        "name": CALL,
        "title": "Call a loaded tool",
        "description": (
            "Call a tool you loaded, by its LABEL/TOOL name, with arguments matching its input schema. "
            "Returns the server's result as it came. A tool that is not loaded is refused with the list "
            "of active tools; load it first."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "tool": {"type": "string", "maxLength": MAX_ID_CHARS, "description": "LABEL/TOOL"},
                "arguments": {"type": "object", "description": "Arguments for the tool"},
            },
            "required": ["tool"],
            "additionalProperties": False,
        },
        "annotations": {"openWorldHint": True},
    },
)

META_TOOL_NAMES: Final = frozenset(t["name"] for t in META_TOOLS)
