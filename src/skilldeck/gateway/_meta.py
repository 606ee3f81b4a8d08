"""The gateway's meta-tools, each declared once: name, description, arguments (with their limits), result. Pure.

Four small tools with stable schemas stand in for every tool of every upstream server:

* ``find`` — ranked cards for a question, or an abstention with its reason (never a schema);
* ``load`` — card ids in; verified skill instructions and the input schemas of exactly the tools
  loaded out, and those tools become active;
* ``read_skill_file`` — a supporting file of a loaded skill, verified against the held entry;
* ``call`` — an active upstream tool, through the gate, on the session that listed it.

Each tool is a :class:`MetaTool`: its arguments are a pydantic model (:class:`FindArguments`,
:class:`LoadArguments`, :class:`ReadSkillFileArguments`, :class:`CallArguments`) that both checks
a request (:meth:`MetaArguments.parse`, which words a refusal the way a model can act on) and
gives the advertised ``inputSchema``; its result is a typed dict (:class:`FindResult`,
:class:`LoadResult`, :class:`ReadSkillFileResult`) that gives the schema of its ``structuredContent``
(:data:`META_OUTPUT_SCHEMAS`; not listed, to keep ``tools/list`` small). The limits
(:data:`MAX_QUERY_CHARS`, :data:`MAX_FIND_LIMIT`, :data:`MAX_LOAD_IDS`, :data:`MAX_ID_CHARS`) are
named once here; the agent adapters (:mod:`skilldeck.agents`) take theirs from here too.

Results carry ``structuredContent`` plus a short text rendering for clients that show only text.
The descriptions are written for a model: they say when to use the tool and what comes back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Final, Literal, NotRequired, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
    field_validator,
)
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue
from pydantic_core import CoreSchema, ErrorDetails, core_schema
from typing_extensions import TypedDict

from skilldeck.errors import InvalidArguments
from skilldeck.select._api import MAX_NEEDS

__all__ = [
    "ADD",
    "ADD_TOOL",
    "CALL",
    "DEFAULT_FIND_LIMIT",
    "FIND",
    "LOAD",
    "MAX_FIND_LIMIT",
    "MAX_ID_CHARS",
    "MAX_LOAD_IDS",
    "MAX_PATH_CHARS",
    "MAX_QUERY_CHARS",
    "META",
    "META_OUTPUT_SCHEMAS",
    "META_TOOLS",
    "META_TOOL_NAMES",
    "READ_SKILL_FILE",
    "AddArguments",
    "AddResult",
    "CallArguments",
    "Card",
    "CatalogCard",
    "FindArguments",
    "FindResult",
    "LoadArguments",
    "LoadResult",
    "LoadedSkill",
    "LoadedTool",
    "MetaArguments",
    "MetaTool",
    "ReadSkillFileArguments",
    "ReadSkillFileResult",
]

FIND: Final = "find"
LOAD: Final = "load"
READ_SKILL_FILE: Final = "read_skill_file"
CALL: Final = "call"
ADD: Final = "add"

MAX_QUERY_CHARS: Final = 2_000
"""The longest ``find`` query (and each of its ``needs``)."""
MAX_FIND_LIMIT: Final = 50
DEFAULT_FIND_LIMIT: Final = 5
"""The most cards one ``find`` returns."""
MAX_LOAD_IDS: Final = 20
"""The most card ids one ``load`` takes."""
MAX_ID_CHARS: Final = 300
"""The longest card id, skill id or tool name (``LABEL/NAME``) a meta-tool takes."""
MAX_PATH_CHARS: Final = 1_024
"""The longest path ``read_skill_file`` takes."""

_TOO_LONG = f"at most {MAX_ID_CHARS} characters"


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("blank")
    return value


_Text = Annotated[str, Field(max_length=MAX_QUERY_CHARS), AfterValidator(_not_blank)]
_Id = Annotated[str, Field(max_length=MAX_ID_CHARS)]

A = TypeVar("A", bound="MetaArguments")


class MetaArguments(BaseModel):
    """A meta-tool's arguments: strict types, unknown keys refused, a refusal worded per field.

    ``complaints`` says, per field, what the tool needs there when the field is missing or wrong;
    ``too_long`` says it for an id over :data:`MAX_ID_CHARS` (reported only once the arguments are
    otherwise well formed, and never echoing the id).
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    tool_name: ClassVar[str]
    complaints: ClassVar[Mapping[str, str]]
    too_long: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def parse(cls: type[A], arguments: Mapping[str, object]) -> A:
        """``arguments`` as this model (a meta-tool's arguments, checked as the gate checks an upstream tool's).

        Raises:
            InvalidArguments: an unknown key, or a value that does not fit; the message says what fits.
        """
        allowed = sorted(cls.model_fields)
        unknown = sorted(set(arguments) - set(allowed))
        if unknown:
            raise InvalidArguments(
                f"{cls.tool_name} takes only {', '.join(allowed)}; unknown: {', '.join(unknown)[:200]}"
            )
        try:
            return cls.model_validate(arguments)
        except ValidationError as exc:
            raise InvalidArguments(cls._refusal(exc.errors(include_url=False))) from None

    @classmethod
    def _refusal(cls, errors: Sequence[ErrorDetails]) -> str:
        def field(error: ErrorDetails) -> str:
            return str(error["loc"][0]) if error["loc"] else ""

        def over_long_id(error: ErrorDetails) -> bool:
            return field(error) in cls.too_long and error["type"] == "string_too_long"

        malformed = [e for e in errors if not over_long_id(e)]
        if malformed:
            return cls.complaints.get(field(malformed[0]), f"{cls.tool_name}: invalid arguments")
        return cls.too_long[field(errors[0])]


class FindArguments(MetaArguments):
    """``find``: the task, how many cards, and optionally the task split into its needs."""

    tool_name: ClassVar[str] = FIND
    complaints: ClassVar[Mapping[str, str]] = {
        "query": f"find needs a query: the task in your own words, at most {MAX_QUERY_CHARS:,} characters",
        "limit": f"limit must be a whole number from 1 to {MAX_FIND_LIMIT}",
        "needs": (
            f"needs must be a list of 1 to {MAX_NEEDS} non-empty texts of at most {MAX_QUERY_CHARS:,} characters each"
        ),
    }

    query: Annotated[_Text, Field(description="The task, in your words")]
    limit: Annotated[
        int | None, Field(ge=1, le=MAX_FIND_LIMIT, description=f"Most cards (default {DEFAULT_FIND_LIMIT})")
    ] = None
    needs: Annotated[
        list[_Text] | None,
        Field(
            min_length=1,
            max_length=MAX_NEEDS,
            description="Optional: the task split into needs, each ranked alone",
        ),
    ] = None


class LoadArguments(MetaArguments):
    """``load``: card ids from ``find`` (one id alone is taken as a list of one)."""

    tool_name: ClassVar[str] = LOAD
    complaints: ClassVar[Mapping[str, str]] = {
        "ids": f"load needs ids: a list of 1 to {MAX_LOAD_IDS} card ids from find (LABEL/NAME)"
    }
    too_long: ClassVar[Mapping[str, str]] = {
        "ids": f"a card id is {_TOO_LONG} (LABEL/NAME, as find returned it); nothing was loaded"
    }

    ids: Annotated[list[_Id], Field(min_length=1, max_length=MAX_LOAD_IDS, description="Card ids from find")]

    @field_validator("ids", mode="before")
    @classmethod
    def _one_id(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value


class ReadSkillFileArguments(MetaArguments):
    """``read_skill_file``: a loaded skill's id and a file path inside it."""

    tool_name: ClassVar[str] = READ_SKILL_FILE
    _complaint: ClassVar[str] = "read_skill_file needs skill (a loaded skill id) and path (a file of it)"
    complaints: ClassVar[Mapping[str, str]] = {"skill": _complaint, "path": _complaint}
    too_long: ClassVar[Mapping[str, str]] = {"skill": f"a skill id is {_TOO_LONG} (LABEL/NAME, as load returned it)"}

    skill: Annotated[_Id, Field(description="Skill id (LABEL/NAME)")]
    path: Annotated[
        str,
        Field(max_length=MAX_PATH_CHARS, description="The path its instructions name"),
    ]


class CallArguments(MetaArguments):
    """``call``: an active tool's ``LABEL/TOOL`` name and the arguments for it."""

    tool_name: ClassVar[str] = CALL
    complaints: ClassVar[Mapping[str, str]] = {
        "tool": "call needs tool: a LABEL/TOOL name you loaded",
        "arguments": "arguments must be an object matching the tool's input schema",
    }
    too_long: ClassVar[Mapping[str, str]] = {
        "tool": f"a tool name is {_TOO_LONG} (LABEL/TOOL, as load returned it); nothing was sent"
    }

    tool: Annotated[_Id, Field(description="LABEL/TOOL")]
    arguments: Annotated[
        dict[str, Any] | None,
        WithJsonSchema({"type": "object", "description": "The tool's arguments"}),
    ] = None


class AddArguments(MetaArguments):
    """``add``: a catalog card's id from ``find`` (``NAME@VERSION``)."""

    tool_name: ClassVar[str] = ADD
    complaints: ClassVar[Mapping[str, str]] = {"id": "add needs id: a catalog card's id from find (NAME@VERSION)"}
    too_long: ClassVar[Mapping[str, str]] = {
        "id": f"a catalog card id is {_TOO_LONG} (NAME@VERSION, as find returned it); nothing was added"
    }

    id: Annotated[_Id, Field(description="A catalog card's id from find (NAME@VERSION)")]


# -- results -----------------------------------------------------------------------------------------


class Card(TypedDict):
    """One ``find`` card."""

    id: Annotated[str, Field(description="LABEL/NAME: pass it to load")]
    kind: Literal["skill", "tool"]
    server: str
    name: str
    description: str
    score: float


class Indexing(TypedDict):
    """How far the card vectors are encoded (while ``find`` answers lexically)."""

    encoded: int
    total: int


class Unavailable(TypedDict):
    """An upstream that could not be reached, and why."""

    server: str
    reason: str


class CatalogRuns(TypedDict):
    """What a catalog server would run: a package at its exact version, or a remote URL."""

    registryType: NotRequired[str]
    package: NotRequired[str]
    version: NotRequired[str]
    transport: NotRequired[str]
    url: NotRequired[str]


class CatalogNeeds(TypedDict):
    """What a catalog server needs, by name (each asked of the person who adds it)."""

    env: NotRequired[list[str]]
    secrets: NotRequired[list[str]]
    headers: NotRequired[list[str]]
    arguments: NotRequired[list[str]]
    login: NotRequired[bool]


class CatalogCard(TypedDict):
    """A server of a catalog, not installed: a person may add it with ``add``."""

    id: Annotated[str, Field(description="NAME@VERSION: pass it to add")]
    kind: Literal["server"]
    installed: Literal[False]
    name: str
    title: NotRequired[str]
    description: str
    score: float
    runs: CatalogRuns
    needs: CatalogNeeds


class FindResult(TypedDict):
    """``find``: the cards, best first, or an abstention with its reason."""

    abstain: bool
    confidence: float
    reason: str
    cards: list[Card]
    ranker: Literal["semantic", "lexical"]
    low_confidence: NotRequired[bool]
    indexing: NotRequired[Indexing]
    unavailable: NotRequired[list[Unavailable]]
    history: NotRequired[
        Annotated[int, Field(description="past questions of the first card that led to its successful use and match")]
    ]
    worked_before: NotRequired[
        Annotated[
            str,
            Field(
                description="a past question, this very one in other words, that led to a successful call of the first card"
            ),
        ]
    ]
    like_before: NotRequired[
        Annotated[
            str,
            Field(description="a past question like this one that led to a successful call on the first card's server"),
        ]
    ]
    like_before_card: NotRequired[
        Annotated[
            str,
            Field(
                description="the id of the card like_before led to (on the first card's server; not always the first)"
            ),
        ]
    ]
    catalog: NotRequired[
        Annotated[list[CatalogCard], Field(description="servers not installed that a person could add (weak answers)")]
    ]


class LoadedSkill(TypedDict):
    """A skill ``load`` returned: its verified instructions."""

    id: str
    uri: str
    verified: bool
    content: str
    files: NotRequired[list[str]]


class LoadedTool(TypedDict):
    """A tool ``load`` activated: its name for ``call`` and its upstream input schema."""

    name: Annotated[str, Field(description="LABEL/TOOL: pass it to call")]
    description: NotRequired[str]
    inputSchema: Annotated[dict[str, Any], WithJsonSchema({"type": "object"})]


class RefusedId(TypedDict):
    """An id ``load`` refused, and why."""

    id: str
    reason: str


class LoadResult(TypedDict):
    """``load``: the skills and tools loaded, and the ids refused."""

    skills: list[LoadedSkill]
    tools: list[LoadedTool]
    refused: list[RefusedId]


class AddResult(TypedDict):
    """``add``: the server added, what it runs, and how many tools it brought."""

    added: bool
    id: str
    server: Annotated[str, Field(description="the upstream label its tools are under")]
    runs: str
    tools: int
    reason: str


class ReadSkillFileResult(TypedDict):
    """``read_skill_file``: the file, as text or base64 ``blob``."""

    skill: str
    uri: str
    mimeType: NotRequired[str]
    text: NotRequired[str]
    blob: NotRequired[str]


# -- schemas -------------------------------------------------------------------------------------------


class _WireSchema(GenerateJsonSchema):
    """JSON Schema as a client reads it: no titles, no ``null`` alternative for an optional field, no ``$ref``."""

    def field_title_should_be_set(self, schema: object) -> bool:
        return False

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        generated = super().default_schema(schema)
        if generated.get("default", ...) is None:
            del generated["default"]
        return generated

    def generate(self, schema: CoreSchema, mode: JsonSchemaMode = "validation") -> JsonSchemaValue:
        generated = super().generate(schema, mode)
        definitions = generated.pop("$defs", {})
        wire = _without_titles(_inlined(generated, definitions))
        assert isinstance(wire, dict)
        return wire


def _inlined(value: object, definitions: Mapping[str, object]) -> object:
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str):
            return _inlined(definitions[ref.rsplit("/", 1)[-1]], definitions)
        return {k: _inlined(v, definitions) for k, v in value.items()}
    if isinstance(value, list):
        return [_inlined(v, definitions) for v in value]
    return value


def _without_titles(schema: object, *, top: bool = True) -> object:
    """``schema`` without the title and docstring of each class it was made from (for readers of this module)."""
    if isinstance(schema, list):
        return [_without_titles(v, top=False) for v in schema]
    if not isinstance(schema, dict):
        return schema
    named = top or "title" in schema
    return {
        k: _without_titles(v, top=False)
        for k, v in schema.items()
        if not (named and k in ("title", "description") and isinstance(v, str))
    }


def _input_schema(model: type[MetaArguments]) -> JsonSchemaValue:
    schema = model.model_json_schema(schema_generator=_WireSchema)
    return {**schema, "additionalProperties": False}


def _output_schema(result: type[object]) -> JsonSchemaValue:
    schema: JsonSchemaValue = TypeAdapter(result).json_schema(schema_generator=_WireSchema)
    return schema


@dataclass(frozen=True)
class MetaTool:
    """One meta-tool: what a client is told of it, the model its arguments are checked by, its result."""

    name: str
    title: str
    description: str
    arguments: type[MetaArguments]
    result: type[object] | None
    """The typed dict of ``structuredContent`` (``None``: the upstream's result, passed on as it came)."""
    annotations: Mapping[str, bool]

    def listed(self) -> JsonSchemaValue:
        """The tool as ``tools/list`` shows it: no ``outputSchema`` (see :data:`META_OUTPUT_SCHEMAS`)."""
        tool: JsonSchemaValue = {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": _input_schema(self.arguments),
        }
        return {**tool, "annotations": dict(self.annotations)} if self.annotations else tool

    def output_schema(self) -> JsonSchemaValue | None:
        """The JSON Schema of this tool's ``structuredContent`` (``None`` for ``call``: the upstream's own)."""
        return None if self.result is None else _output_schema(self.result)


_READ_ONLY: Final = {"readOnlyHint": True}

META: Final[Mapping[str, MetaTool]] = {
    tool.name: tool
    for tool in (
        MetaTool(
            FIND,
            "Find skills and tools",
            "Search all connected servers for skills and tools fitting a task; call it first. Returns "
            "cards (id, description, score) best first, or abstain=true and why; then `load` ids.",
            FindArguments,
            FindResult,
            _READ_ONLY,
        ),
        MetaTool(
            LOAD,
            "Load cards",
            "Load `find` cards by id: a skill gives its verified instructions and tool schemas, a tool "
            "its schema. Loaded tools become callable with `call`.",
            LoadArguments,
            LoadResult,
            _READ_ONLY,
        ),
        MetaTool(
            READ_SKILL_FILE,
            "Read a skill file",
            "Read a file (e.g. references/X.md) a loaded skill's instructions name, checked against its manifest.",
            ReadSkillFileArguments,
            ReadSkillFileResult,
            _READ_ONLY,
        ),
        MetaTool(
            CALL,
            "Call a loaded tool",
            "Call a loaded tool (LABEL/TOOL) with arguments fitting its schema; returns the server's "
            "result. A tool not loaded is refused.",
            CallArguments,
            None,
            {},
        ),
    )
}
"""Every meta-tool by name, in the order ``tools/list`` shows them."""

META_TOOLS: Final[tuple[dict[str, Any], ...]] = tuple(tool.listed() for tool in META.values())
"""The meta-tools as ``tools/list`` shows them (MCP ``Tool`` objects).

They are listed without an ``outputSchema``: every client pays for ``tools/list`` on every turn of
every conversation, and the result schemas were half of it (603 of 1,302 cl100k tokens), while a
model reads the results themselves. The results still carry ``structuredContent``, of the shapes
:data:`META_OUTPUT_SCHEMAS` gives (the typed dicts of this module)."""

META_OUTPUT_SCHEMAS: Final[Mapping[str, JsonSchemaValue]] = {
    tool.name: schema for tool in META.values() if (schema := tool.output_schema()) is not None
}
"""The JSON Schema of each meta-tool's ``structuredContent``, by tool name (not listed; for typed clients and tests)."""

META_TOOL_NAMES: Final = frozenset(META)

ADD_TOOL: Final = MetaTool(
    ADD,
    "Add a server from the catalog",
    "Ask the person to add a catalog server that find showed (installed=false): they see exactly what it "
    "would run and decide. On accept its tools become find cards; a decline adds nothing.",
    AddArguments,
    AddResult,
    {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": True},
)
"""``add``: listed only by a gateway that has catalogs (``--registry``, ``--registry-file``)."""
