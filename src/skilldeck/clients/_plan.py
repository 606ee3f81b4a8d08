"""What ``skilldeck clients`` reads from a client's file, and the edits that put the gateway in front of
it. Pure: texts in, texts out; the command line reads and writes the files.

:func:`servers_in` lists a client's servers in the gateway's terms, each moved or kept (and why).
:func:`plan_connect` works out, from the client's file and the upstreams file as they are, the
new text of each: the client's movable servers leave it for the upstreams file, and one entry that
starts the gateway on that file takes their place.

Merging into the upstreams file: a server is the same server as one already there when its
command, arguments and working folder are the same, or its URL (the label is never enough: two
clients may call different servers ``github``). The same server is kept once, under the label it
has there; a new server whose label is taken gets the client's name added (``github-cursor``), and
the plan says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from skilldeck.clients import _edits
from skilldeck.clients._catalog import Location
from skilldeck.clients._dialects import Context, Kept, gateway_entry, is_gateway, upstream_entry
from skilldeck.errors import ClientFileError, ConfigError
from skilldeck.host import parse_config

__all__ = [
    "ConnectPlan",
    "FileChange",
    "Found",
    "Move",
    "plan_connect",
    "private_values",
    "read_any",
    "servers_in",
    "upstream_servers",
]

GATEWAY_LABEL = "skilldeck"


@dataclass(frozen=True)
class Found:
    """One server of a client's file."""

    label: str
    entry: dict[str, Any] | None
    """In the gateway's terms; ``None`` when it stays in the client."""
    kept: str | None = None
    """Why it stays in the client."""
    gateway: str | None = None
    """For an entry that starts ``skilldeck gateway``: its ``--config`` file."""


@dataclass(frozen=True)
class FileChange:
    path: str
    before: str | None
    """``None``: the file is made."""
    after: str
    private: bool = False
    """It holds secrets (``env``/``headers`` values written out): mode 0600."""


@dataclass(frozen=True)
class Move:
    label: str
    """Its label in the client."""
    upstream: str
    """Its label in the upstreams file."""
    how: Literal["added", "same", "renamed"]
    note: str = ""


@dataclass(frozen=True)
class ConnectPlan:
    location: Location
    upstreams: str
    changes: list[FileChange] = field(default_factory=list)
    moves: list[Move] = field(default_factory=list)
    kept: list[Found] = field(default_factory=list)
    private: list[str] = field(default_factory=list)
    """Labels in the upstreams file whose entries hold secrets this plan wrote there."""
    gateway_label: str = GATEWAY_LABEL
    forwarded: list[str] = field(default_factory=list)

    @property
    def client_change(self) -> FileChange | None:
        return next((c for c in self.changes if c.path == self.location.path), None)


# -- reading -----------------------------------------------------------------------------------------


def _read(location: Location, text: str) -> object:
    try:
        return _edits.read(location.client.format, text)
    except ClientFileError as exc:
        raise ClientFileError(f"{location.path}: {exc}; fix the file, then run this again") from None


def read_any(path: str, text: str) -> object:
    """The data of a client's or the upstreams file, by its name's suffix; ``None`` when it does not read."""
    try:
        return _edits.read(_edits.format_of(path), text)
    except ClientFileError:
        return None


def _servers(location: Location, data: object) -> Mapping[str, Any]:
    for depth, key in enumerate(location.keys):
        if not isinstance(data, Mapping):
            where = ".".join(location.keys[:depth]) or "the document"
            raise ClientFileError(f"{location.path}: {where} is not an object; fix the file, then run this again")
        data = data.get(key)
        if data is None:
            return {}
    if not isinstance(data, Mapping):
        raise ClientFileError(f"{location.path}: {'.'.join(location.keys)} is not an object of servers")
    return data


def _context(location: Location, home: str) -> Context:
    separator = "\\" if "\\" in location.path and "/" not in location.path else "/"
    return Context(home=home, project=location.project, separator=separator)


class _AnyVariable(Mapping[str, str]):
    """An environment in which every variable is set: to check an entry without the user's values."""

    def __getitem__(self, key: str) -> str:
        return "https://set.invalid"  # fits wherever a variable may stand, a URL's start included

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


_RELATIVE = re.compile(r"^\.\.?([/\\]|$)|^[^-/\\:@][^:]*\.(py|js|mjs|cjs|ts|sh)$")


def _needs_project(entry: Mapping[str, Any]) -> bool:
    """A project's stdio server that names a file or folder relative to the project."""
    if "command" not in entry or "cwd" in entry:
        return False
    command = str(entry["command"])
    relative_command = ("/" in command or "\\" in command) and not re.match(r"^([/\\]|[A-Za-z]:)", command)
    return relative_command or any(_RELATIVE.search(str(a)) for a in entry.get("args", []))


def servers_in(location: Location, text: str, *, home: str) -> list[Found]:
    """The servers of ``location``'s file, each in the gateway's terms or kept with its reason.

    Raises:
        ClientFileError: the file is not of its format, or its servers are not where they belong.
    """
    ctx = _context(location, home)
    found: list[Found] = []
    for label, raw in _servers(location, _read(location, text)).items():
        entry = upstream_entry(location.client.name, raw, ctx)
        if isinstance(entry, Kept):
            if isinstance(raw, Mapping) and (config := is_gateway(raw)) is not None:
                found.append(Found(label, dict(raw), gateway=config))  # ours, with keys of the user's own
            else:
                found.append(Found(label, None, entry.reason))
            continue
        if (config := is_gateway(entry)) is not None:
            found.append(Found(label, entry, gateway=config))
            continue
        if location.project is not None and _needs_project(entry):
            entry["cwd"] = location.project  # where the client started it: its relative paths keep working
        try:
            parse_config({"mcpServers": {label: entry}}, environ=_AnyVariable())
        except ConfigError as exc:
            found.append(Found(label, None, f"skilldeck would refuse it: {exc}"))
            continue
        found.append(Found(label, entry))
    return found


def upstream_servers(text: str | None, path: str) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The keys that lead to the upstreams file's servers, and those servers (a missing file: none yet)."""
    if text is None or not text.strip():
        return ("mcpServers",), {}
    try:
        data = _edits.read("json", text)
    except ClientFileError as exc:
        raise ClientFileError(f"{path}: not a readable upstreams file ({exc}); fix it, then run this again") from None
    if not isinstance(data, dict):
        raise ClientFileError(f'{path}: expected {{"mcpServers": {{...}}}}; fix it, then run this again')
    for key in ("mcpServers", "servers"):
        if isinstance(data.get(key), dict):
            return (key,), dict(data[key])
    if not data:
        return ("mcpServers",), {}
    raise ClientFileError(f'{path}: its servers are not under "mcpServers"; move them there, then run this again')


# -- merging -----------------------------------------------------------------------------------------


def identity(entry: Mapping[str, Any]) -> tuple[object, ...]:
    """What makes two entries the same server: its URL, or its command, arguments and working folder."""
    if "url" in entry:
        return ("url", str(entry["url"]).rstrip("/"))
    return ("command", entry.get("command"), tuple(entry.get("args") or ()), entry.get("cwd"))


_REFERENCE = re.compile(r"^(\$\{[^}]+\}|[^$])*$")


def private_values(entry: Mapping[str, Any]) -> list[str]:
    """The values of ``env`` and ``headers`` written out in ``entry`` (not ``${VAR}`` references alone)."""
    found = []
    for key in ("env", "headers"):
        for value in (entry.get(key) or {}).values():
            text = str(value)
            if re.sub(r"\$\{[^}]+\}", "", text).strip(" ") not in ("", "Bearer"):
                found.append(text)
    return found


def _differs(new: Mapping[str, Any], old: Mapping[str, Any]) -> str:
    changed = [k for k in ("env", "headers", "timeout", "disabled", "oauth") if new.get(k) != old.get(k)]
    if not changed:
        return ""
    return f"its {' and '.join(changed)} differ from the upstreams file's, which stay"


def _free_label(label: str, client: str, taken: Mapping[str, Any]) -> str:
    candidate = f"{label}-{client}"
    n = 2
    while candidate in taken:
        candidate = f"{label}-{client}-{n}"
        n += 1
    return candidate


def plan_connect(
    location: Location,
    client_text: str | None,
    *,
    upstreams: str,
    upstreams_text: str | None,
    command: Sequence[str],
    home: str,
) -> ConnectPlan:
    """The edits that move ``location``'s servers into ``upstreams`` and start the gateway there instead.

    ``command`` is the program and the arguments that start ``skilldeck`` (the program an absolute
    path); the gateway's own arguments are added to them. A plan with no changes means the client
    is connected already.

    Raises:
        ClientFileError: a file cannot be read, or the client already starts a gateway on another
            upstreams file.
    """
    client = location.client
    found = servers_in(location, client_text or "", home=home)
    keys, existing = upstream_servers(upstreams_text, upstreams)
    ours = [f for f in found if f.gateway is not None]
    for f in ours:
        if f.gateway != upstreams:
            raise ClientFileError(
                f"{location.path}: {f.label!r} starts a skilldeck gateway on {f.gateway or 'no --config'}; "
                f"connect with --upstreams {f.gateway or 'FILE'} to move servers into that file, or remove "
                f"{f.label!r} from the client first"
            )
    movable = [f for f in found if f.entry is not None and f.gateway is None]
    kept = [f for f in found if f.entry is None]
    taken_by_kept = {f.label for f in kept}
    label = (
        ours[0].label
        if ours
        else next(
            c
            for c in (GATEWAY_LABEL, f"{GATEWAY_LABEL}-gateway", f"{GATEWAY_LABEL}-gateway-2")
            if c not in taken_by_kept
        )
    )

    merged = dict(existing)
    moves: list[Move] = []
    added: dict[str, dict[str, Any]] = {}
    for f in movable:
        assert f.entry is not None
        same = next(
            (
                name
                for name, entry in merged.items()
                if isinstance(entry, Mapping) and identity(entry) == identity(f.entry)
            ),
            None,
        )
        if same is not None:
            moves.append(Move(f.label, same, "same", _differs(f.entry, merged[same])))
            continue
        if f.label not in merged:
            name = f.label
            moves.append(Move(f.label, name, "added"))
        else:  # the label names another server there: this one gets the client's name added
            name = _free_label(f.label, client.name, merged)
            moves.append(Move(f.label, name, "renamed"))
        merged[name] = f.entry
        added[name] = f.entry

    forwarded = _forwarded([f.entry for f in movable if f.entry is not None]) if client.name == "goose" else []
    program = [*command, "gateway", "--config", upstreams]
    wanted = gateway_entry(client.name, program, forwarded)

    changes: list[FileChange] = []
    text = client_text or ""
    try:
        new = text
        for f in movable:
            new = _edits.remove(client.format, new, location.keys, f.label)
        for f in ours[1:]:
            new = _edits.remove(client.format, new, location.keys, f.label)
        if not ours or (ours[0].entry or {}).get("command") != program[0] or _args(ours[0]) != program[1:]:
            new = _edits.put(client.format, new, location.keys, label, wanted)
    except ClientFileError as exc:
        raise ClientFileError(f"{location.path}: {exc}") from None
    if new != text:
        changes.append(FileChange(location.path, client_text, new))

    private = [name for name, entry in added.items() if private_values(entry)]
    if added:
        up = upstreams_text or ""
        try:
            for name, entry in added.items():
                up = _edits.put("json", up, keys, name, entry)
        except ClientFileError as exc:
            raise ClientFileError(f"{upstreams}: {exc}") from None
        changes.append(FileChange(upstreams, upstreams_text, up, private=bool(private)))
    return ConnectPlan(location, upstreams, changes, moves, kept, private, label, forwarded)


def _forwarded(entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """The variables the moved servers' ``env`` takes whole (``${NAME}``): Goose hands them to the gateway."""
    names = {str(v)[2:-1] for e in entries for v in (e.get("env") or {}).values() if re.fullmatch(r"\$\{\w+\}", str(v))}
    return sorted(names)


def _args(found: Found) -> list[str]:
    return list((found.entry or {}).get("args") or [])
