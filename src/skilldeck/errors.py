"""The errors skilldeck raises.

Two families, in the manner of h11's ``LocalProtocolError`` / ``RemoteProtocolError``:

* :class:`SkillError` and its children: something on *our* side is wrong (a bad ``SKILL.md``
  in a pack we serve, a skill over the limits, a misconfigured source). The message names the
  file and the rule, and says what to change.
* :class:`PeerError` and its children (used by the host): a server sent something that breaks
  the rules (a tampered digest, a listing that never ends). The message names the server label.

Every error is a :class:`SkilldeckError`, so callers can catch the whole family at once.
"""

from __future__ import annotations

__all__ = [
    "EntryError",
    "FrontmatterError",
    "NotServedError",
    "PeerError",
    "ServeError",
    "SkillError",
    "SkillLimitError",
    "SkilldeckError",
    "SourceError",
    "shorten",
]

ECHO_LIMIT = 200
"""At most this many characters of a request's own input are echoed back in an error."""


def shorten(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` as an error may echo it: whole up to ``limit`` characters, else cut there with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


class SkilldeckError(Exception):
    """Base class of every error skilldeck raises on purpose."""


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
    """A ``SKILL.md`` whose YAML frontmatter is missing, malformed or breaks the Agent Skills rules."""


class SkillLimitError(SkillError):
    """A skill over one of the Skills extension's per-skill limits (512 files, 16 MiB)."""


class SourceError(SkillError):
    """A skill source (a folder root, a dynamic skill) that cannot be used as configured."""


class ServeError(SkilldeckError):
    """The server cannot start as asked (its address is taken or cannot be listened on)."""


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
