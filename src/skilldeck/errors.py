"""The errors skilldeck raises: every class lives here, in one tree.

In the manner of httpx's ``_exceptions.py`` (the tree) and h11's ``LocalProtocolError`` /
``RemoteProtocolError`` (whose side is at fault)::

    SkilldeckError
    ├── SkillError                  our side: a skill in a pack we serve (names the file and the rule)
    │   ├── FrontmatterError
    │   ├── SkillLimitError
    │   └── SourceError
    │       └── PolicyError
    ├── UsageError                  our side: what the user asked for or configured cannot be done
    │   ├── ConfigError
    │   ├── AuthConfigError
    │   │   └── JwksUnavailable
    │   ├── LoginRequired
    │   ├── LoginFailed
    │   ├── CredentialStoreError
    │   ├── ClientFileError
    │   ├── ServeError
    │   ├── SnapshotError
    │   ├── EncoderUnavailable
    │   ├── UnknownSkill
    │   ├── AmbiguousName
    │   ├── TalentPromptError
    │   └── UnknownFile
    ├── Refused                     a rule of ours said no; nothing was sent or read
    │   ├── NotApproved
    │   ├── DynamicSkillRefused
    │   ├── CrossOriginRead
    │   ├── GateRefused
    │   │   ├── ToolNotListed
    │   │   ├── ToolNotActive
    │   │   └── InvalidArguments
    │   ├── LedgerFull              the usage ledger holds its most audiences: a new one's use is not recorded
    │   └── AddRefused              a catalog server was not added (no consent, a policy, cannot run here)
    ├── NotServedError              the other side, as a client: it asked this server for what it does not serve
    └── PeerError                   the other side, as a server: it broke the rules (names the server label)
        ├── EntryError
        ├── ReadFailed
        ├── MessageTooLarge
        ├── BudgetExceeded
        ├── VerificationError
        │   └── SkillChanged
        ├── RegistryError           a server registry that could not be read within its bounds
        └── ServerEntryError        one server.json entry of a registry that is skipped (names why)

Every error is a :class:`SkilldeckError`, so callers can catch the whole family at once. A
message says what went wrong and what to do about it; labels print as ``[label] …``.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AddRefused",
    "AmbiguousName",
    "AuthConfigError",
    "BudgetExceeded",
    "ClientFileError",
    "ConfigError",
    "CredentialStoreError",
    "CrossOriginRead",
    "DynamicSkillRefused",
    "EncoderUnavailable",
    "EntryError",
    "FrontmatterError",
    "GateRefused",
    "InvalidArguments",
    "JwksUnavailable",
    "LedgerFull",
    "LoginFailed",
    "LoginRequired",
    "MessageTooLarge",
    "NotApproved",
    "NotServedError",
    "PeerError",
    "PolicyError",
    "ReadFailed",
    "Refused",
    "RegistryError",
    "ServeError",
    "ServerEntryError",
    "SkillChanged",
    "SkillError",
    "SkillLimitError",
    "SkilldeckError",
    "SnapshotError",
    "SourceError",
    "TalentPromptError",
    "ToolNotActive",
    "ToolNotListed",
    "UnknownFile",
    "UnknownSkill",
    "UsageError",
    "VerificationError",
    "shorten",
]

ECHO_LIMIT = 200
"""At most this many characters of a request's own input are echoed back in an error."""


def shorten(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` as an error may echo it: whole up to ``limit`` characters, else cut there with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


class SkilldeckError(Exception):
    """Base class of every error skilldeck raises on purpose."""


# -- our side: a skill we serve ------------------------------------------------------------------------


class SkillError(SkilldeckError):
    """A skill on our side is not servable.

    ``path`` is the file or folder at fault (as the user wrote it, for messages) and ``rule``
    a short name of the rule it broke, so reports can be grouped and tested.
    """

    def __init__(self, message: str, *, path: str | None = None, rule: str = "invalid") -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.rule = rule
        self.reason = message


class FrontmatterError(SkillError):
    """A ``SKILL.md`` whose YAML frontmatter is missing, malformed or breaks the Agent Skills rules.

    ``details`` holds each rule broken as ``(rule, message)`` when there are several (the message joins them).
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        rule: str = "invalid",
        details: list[tuple[str, str]] | tuple[tuple[str, str], ...] = (),
    ) -> None:
        super().__init__(message, path=path, rule=rule)
        self.details: tuple[tuple[str, str], ...] = tuple(details) or ((rule, message),)


class SkillLimitError(SkillError):
    """A skill over one of the Skills extension's per-skill limits (512 files, 16 MiB)."""


class SourceError(SkillError):
    """A skill source (a folder root, a dynamic skill) that cannot be used as configured."""


class PolicyError(SourceError):
    """A policy that cannot be used as written; the message names the field."""


# -- our side: what the user asked for ------------------------------------------------------------------


class UsageError(SkilldeckError):
    """What the user asked for or configured cannot be done as given; the message says what to change."""


class ConfigError(UsageError):
    """A server configuration that cannot be used; the message names the label and the field."""


class AuthConfigError(UsageError):
    """Token verification cannot be set up as configured (a JWKS that does not load, a missing flag)."""


class JwksUnavailable(AuthConfigError):
    """A JWKS that cannot be had: unreadable, too large, not a JWKS, no usable signing key, or its fetch failed.

    At start it stops the server; later, the last good key set stays in force and the reason is logged.
    """


class LoginRequired(UsageError):
    """An upstream asks for an OAuth login that the host will not run while serving; the message names the command."""

    def __init__(self, message: str, *, label: str, command: str) -> None:
        super().__init__(message)
        self.label = label
        self.command = command


class LoginFailed(UsageError):
    """``skilldeck login`` did not end with tokens: refused, timed out, or the server's OAuth flow failed."""


class CredentialStoreError(UsageError):
    """Stored OAuth credentials cannot be read or written (a folder that is not private, an unreadable file)."""


class ClientFileError(UsageError):
    """An MCP client's configuration file cannot be read or changed as asked (``skilldeck clients``); the
    message names the file and what to do."""


class ServeError(UsageError):
    """The server cannot start as asked (its address is taken or cannot be listened on)."""


class SnapshotError(UsageError):
    """A catalog snapshot that does not follow the documented format."""


class EncoderUnavailable(UsageError):
    """The encoder's packages are not installed (names the extra to install)."""


class UnknownSkill(UsageError):
    """No registered skill matches the name or URI asked for."""


class AmbiguousName(UsageError):
    """A bare name matches several skills; the message lists their qualified names."""

    def __init__(self, name: str, candidates: list[str]) -> None:
        super().__init__(f"{name!r} names {len(candidates)} skills; use one of: {', '.join(candidates)}")
        self.candidates = candidates


class TalentPromptError(UsageError):
    """A Solon talent call's ``promptJson`` that is refused unread: too long, too deep, or not a JSON object."""


class UnknownFile(UsageError):
    """A file asked for by name (``--file``) that the loaded skill's entry does not list; nothing was read."""


# -- refusals: a rule of ours said no -------------------------------------------------------------------


class Refused(SkilldeckError):
    """A rule of the host or of the tool gate refused the action; nothing was sent or read."""


class NotApproved(Refused):
    """The user (or the approval callback) declined the skill."""


class DynamicSkillRefused(Refused):
    """The skill's content is generated (``"dynamic"``) and cannot be verified; opt in to load it."""


class CrossOriginRead(Refused):
    """A read that would reach another server than the skill's own; refused."""


class GateRefused(Refused):
    """A tool call the gate refused; nothing was sent."""


class ToolNotListed(GateRefused):
    """The server never listed a tool of that name."""


class ToolNotActive(GateRefused):
    """The tool exists but is not in the active skill's set."""


class InvalidArguments(GateRefused):
    """The arguments do not validate against the tool's input schema."""


class LedgerFull(Refused):
    """The usage ledger holds its most audiences: a use of another audience is not recorded (what
    the audiences held learned is kept; see :mod:`skilldeck.learning._stores`)."""

    def __init__(self, audience: str, max_audiences: int, where: str) -> None:
        self.audience = audience
        self.max_audiences = max_audiences
        super().__init__(
            f"the usage ledger at {where} holds {max_audiences} audiences, its most: uses of another audience "
            "are not recorded (clear one with `skilldeck history --audience T --clear`, or raise --ledger-audiences)"
        )


class AddRefused(Refused):
    """A server of a catalog was not added: nothing was run, fetched or written.

    ``code`` names the rule that said no, for logs, metrics and tests: ``declined`` (the person said
    no), ``no_elicitation`` (the client cannot ask a person), ``policy``, ``not_runnable`` (nothing
    here can run it), ``unknown`` (no such card), ``added`` (it is added already), ``label`` (its
    label is taken), ``inputs`` (a required input is missing or does not fit), ``failed`` (it was
    started but did not answer).
    """

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.code = code


# -- the other side -------------------------------------------------------------------------------------


class NotServedError(SkilldeckError):
    """A request named a skill, file, directory or cursor that this server does not serve.

    The server adapter answers it as JSON-RPC ``-32602`` (Invalid params) with this message.
    ``uri`` is kept as :func:`shorten` cuts it, since it is echoed back to the requester.
    """

    def __init__(self, message: str, *, uri: str | None = None) -> None:
        super().__init__(message)
        self.uri = shorten(uri) if uri is not None else None


class PeerError(SkilldeckError):
    """A connected server broke the rules of the protocol or of the Skills extension."""

    def __init__(self, message: str, *, label: str | None = None) -> None:
        super().__init__(f"[{label}] {message}" if label else message)
        self.label = label


class EntryError(PeerError):
    """A skill entry from a server that a host must not load (malformed, incomplete, over the limits)."""

    def __init__(self, message: str, *, uri: str | None = None, label: str | None = None) -> None:
        super().__init__(f"{uri}: {message}" if uri else message, label=label)
        self.uri = uri
        self.reason = message


class ReadFailed(PeerError):
    """The origin did not return the bytes asked for (an error answer or no content)."""


class MessageTooLarge(PeerError):
    """A server's response body, SSE event or stdio line passed the host's limit; the server is dropped."""


class BudgetExceeded(PeerError):
    """Reading this would take the origin past its byte budget; nothing was fetched."""


class VerificationError(PeerError):
    """Content that does not match its entry: never use it; refresh the entry with ``skills/get``."""

    def __init__(self, message: str, *, uri: str, check: str, label: str | None = None) -> None:
        super().__init__(f"{uri}: {message}", label=label)
        self.uri = uri
        self.check = check
        self.reason = message


class SkillChanged(VerificationError):
    """Verification failed and the server's current entry differs: the skill changed since it was listed.

    ``current`` is the refreshed :class:`~skilldeck.skill._manifest.SkillEntry` (typed ``Any`` here so
    that this module, the root of every import, imports nothing of skilldeck's). Any approval bound
    to the old content is void; ask again before loading.
    """

    def __init__(self, cause: VerificationError, current: Any) -> None:
        super().__init__(
            f"{cause.reason}; the server's entry has changed since it was "
            "listed: re-approve the new content before loading",
            uri=cause.uri,
            check=cause.check,
            label=cause.label,
        )
        self.cause = cause
        self.current = current


class RegistryError(PeerError):
    """A server registry that could not be read within the bounds (a page too large, too slow, a redirect
    to another origin, not the registry API): the last good catalog stays in force."""


class ServerEntryError(PeerError):
    """One ``server.json`` entry of a registry that cannot be offered; it is skipped with this reason.

    ``name`` is the entry's name as :func:`shorten` cuts it (``"?"`` when it has none).
    """

    def __init__(self, message: str, *, name: str | None = None, label: str | None = None) -> None:
        self.name = shorten(name, 120) if name else "?"
        self.reason = message
        super().__init__(f"{self.name}: {message}", label=label)
