"""Which servers to connect to, under which host-assigned labels. Pure data, no I/O but reading a file.

Takes the ``mcpServers`` JSON that Claude Desktop, Cursor and others already keep, as-is::

    {"mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {...}, "cwd": "..."},
        "docs": {"url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "Bearer ..."}}
    }}

The key (``time``, ``docs``) is the server's **label**: the identity the host uses everywhere
(registry, approvals, cache, origin tags). A server's self-reported ``serverInfo.name`` is never
used for that.

VS Code's ``mcp.json`` is read as well: its ``{"servers": {...}}`` mapping, with ``"type": "stdio"``
or ``"type": "http"`` on each entry (an entry's ``type`` is honoured in either file). An entry with
``"type": "sse"`` is a server of the legacy HTTP+SSE transport (2024-11-05), spoken through the SDK's
SSE client.

A label given twice in one file is refused, naming the label and the line of each: JSON keeps
only the last, so the first server would silently not be connected.

Secrets stay out of the file: ``${VAR}`` and ``${VAR:-default}`` in ``command``, ``args``, ``env``,
``url``, ``headers`` and ``oauth`` are replaced by the environment's values (the convention of Claude Code's and
VS Code's MCP configs); ``default`` stands in when ``VAR`` is unset or empty. A variable that is
unset, with no default, is an error naming the entry and the variable. What came from the
environment is remembered with the spec (:attr:`ServerSpec.hidden`), so that a message about a
server shows ``${VAR}``, never the value (:meth:`ServerSpec.redact`).

An HTTP entry without an ``Authorization`` header logs in with OAuth 2.1 when its server asks for
it (``skilldeck login LABEL``, see ``docs/oauth.md``); its ``"oauth"`` object tunes that
(:class:`OAuthSettings`: scope, a pre-registered client, ``"grant": "client_credentials"`` for a
machine-to-machine entry), and ``"oauth": false`` turns it off.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from skilldeck._documents import duplicate_keys, load_document
from skilldeck._validation import Model, parse, where
from skilldeck.errors import ConfigError

__all__ = [
    "DEFAULT_TIMEOUT",
    "HttpServer",
    "InProcessServer",
    "OAuthSettings",
    "ServerSpec",
    "StdioServer",
    "load_config",
    "parse_config",
    "spec_for_target",
]

DEFAULT_TIMEOUT = 30.0
"""Seconds a server has to start and answer the handshake before it is reported and skipped."""


@dataclass(frozen=True)
class StdioServer:
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = field(default=None, repr=False)  # may hold secrets: never in a repr
    cwd: str | None = None


@dataclass(frozen=True)
class OAuthSettings:
    """How the host logs in to an HTTP server that asks for OAuth 2.1 (the entry's ``"oauth"`` object).

    Every field is optional: by default the client registers itself (dynamic client registration)
    and asks for the scopes the server's challenge or metadata names. See ``docs/oauth.md``.
    """

    scope: str | None = None
    """Scopes to ask for (space-separated) instead of those the server names."""
    client_id: str | None = None
    """A client registered beforehand with the authorization server (no dynamic registration)."""
    client_secret: str | None = field(default=None, repr=False)  # a secret: never in a repr
    client_metadata_url: str | None = None
    """An https URL of a client ID metadata document, used as the client id where the server supports it."""
    grant: Literal["authorization_code", "client_credentials"] = "authorization_code"
    """``client_credentials``: a machine-to-machine entry, which never needs ``skilldeck login``."""
    issuer: str | None = None
    """The authorization server the client credentials belong to: tokens are asked of it alone."""
    callback_port: int | None = None
    """The loopback port ``skilldeck login`` listens on (for a client registered with a fixed redirect URI)."""


@dataclass(frozen=True)
class HttpServer:
    url: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)  # may hold secrets: never in a repr
    sse: bool = False
    """The legacy HTTP+SSE transport (``"type": "sse"``: an event stream at ``url`` and POSTs to the
    endpoint it names), not streamable HTTP."""
    oauth: OAuthSettings | None = field(default_factory=OAuthSettings)
    """OAuth 2.1 on demand: used while ``headers`` have no ``Authorization`` header, once the server
    answers 401; ``None`` (``"oauth": false``): the server is spoken to with ``headers`` alone."""


@dataclass(frozen=True)
class InProcessServer:
    """An ``MCPServer`` (or lowlevel ``Server``) in this process, e.g. for tests and demos."""

    server: Any


@dataclass(frozen=True)
class ServerSpec:
    """One server to connect to: its label, how to reach it, and its connect timeout."""

    label: str
    transport: StdioServer | HttpServer | InProcessServer
    timeout: float = DEFAULT_TIMEOUT
    hidden: tuple[tuple[str, str], ...] = ()
    """``(value, "${VAR}")`` for each value the entry took from the environment (see the module docs)."""
    source: str | None = field(default=None, compare=False)
    """The configuration file the entry was read from (``None`` when it was not), for the commands a message names."""

    def redact(self, text: str) -> str:
        """``text`` with every value this spec took from the environment written as its ``${VAR}``: as
        it is, and as it reads quoted or escaped (:func:`secret_forms`: an upstream that prints its
        argv as JSON or ``repr``, a URL that percent-encodes it)."""
        forms = sorted(
            ((form, placeholder) for value, placeholder in self.hidden for form in secret_forms(value)),
            key=lambda pair: -len(pair[0]),
        )
        for form, placeholder in forms:
            text = text.replace(form, placeholder)
        return text

    def __repr__(self) -> str:
        return self.redact(f"ServerSpec(label={self.label!r}, transport={self.transport!r}, timeout={self.timeout!r})")

    @property
    def identity(self) -> str:
        """What the server is, whatever label a host gives it: a stdio server's command line (its command,
        arguments and folder), an HTTP server's kind and URL, an in-process server's label; every value taken
        from the environment written as its ``${VAR}``, so no secret is in it. Two entries with the same
        identity in two configurations are the same server (the usage ledger keys what it learned by it)."""
        transport = self.transport
        if isinstance(transport, StdioServer):
            parts: list[str] = [transport.command, *transport.args]
            text = "stdio " + json.dumps(parts, ensure_ascii=False, separators=(",", ":"))
            if transport.cwd:
                text += " in " + transport.cwd
        elif isinstance(transport, HttpServer):
            text = f"{self.kind} {transport.url}"
        else:
            text = f"in-process {self.label}"
        return self.redact(text)

    @property
    def kind(self) -> str:
        if isinstance(self.transport, HttpServer) and self.transport.sse:
            return "sse"
        return {StdioServer: "stdio", HttpServer: "http", InProcessServer: "in-process"}[type(self.transport)]


def _check_label(label: object) -> str:
    if not isinstance(label, str) or not label.strip():
        raise ConfigError(f"server label {label!r} must be a non-empty string")
    if "/" in label or ":" in label or label in (".", "..") or any(ord(c) < 32 for c in label):
        raise ConfigError(f"server label {label!r} may not contain '/', ':', control characters, or be '.' or '..'")
    return label


_HTTP_TYPES = ("http", "streamable-http", "streamableHttp", "sse")


def _is_entry(value: object) -> bool:
    return isinstance(value, Mapping) and any(key in value for key in ("command", "url", "type"))


def _servers_of(data: object) -> tuple[str, Mapping[Any, Any]]:
    """The key and the label-to-entry mapping of a Claude Desktop / Cursor, VS Code or bare document."""
    if not isinstance(data, Mapping):
        raise ConfigError('expected {"mcpServers": {"label": {...}}}')
    if "mcpServers" in data:
        key, servers = "mcpServers", data["mcpServers"]
    elif isinstance(data.get("servers"), Mapping) and not _is_entry(data["servers"]):
        key, servers = "servers", data["servers"]  # VS Code's mcp.json
    else:
        for name in data:
            if isinstance(name, str) and name != "mcpServers" and name.replace("_", "").lower() == "mcpservers":
                raise ConfigError(
                    f'found {name!r} but no "mcpServers": the key is "mcpServers", spelt exactly so (case matters)'
                )
        key, servers = "", data
    if not isinstance(servers, Mapping):
        raise ConfigError('expected {"mcpServers": {"label": {...}}}')
    return key, servers


class _Switch(Model, extra="allow"):
    expected = "an object with 'command' (stdio) or 'url' (streamable HTTP)"
    disabled: bool = Field(default=False, description="true or false")


class _OAuth(Model):
    """An entry's ``"oauth"`` object; its keys are spelt as the file spells them (camelCase)."""

    expected = "false, or an object of OAuth settings (scope, clientId, clientSecret, clientMetadataUrl, grant, issuer, callbackPort)"
    scope: str | None = Field(default=None, min_length=1, description="a space-separated string of scopes")
    clientId: str | None = Field(default=None, min_length=1, description="a non-empty string")
    clientSecret: str | None = Field(default=None, min_length=1, description="a non-empty string")
    clientMetadataUrl: str | None = Field(
        default=None, pattern="^https://[^/]+/.+", description="an https:// URL with a path"
    )
    grant: Literal["authorization_code", "client_credentials"] = Field(
        default="authorization_code", description="'authorization_code' or 'client_credentials'"
    )
    issuer: str | None = Field(default=None, pattern="^https?://", description="an http:// or https:// URL")
    callbackPort: int | None = Field(default=None, ge=1, le=65535, description="a port number (1-65535)")

    def problem(self) -> str | None:
        """What is missing for the settings to be used (checked by the entry: a validator here would hide
        the field's own hint when the entry reports a wrong value)."""
        if self.grant == "client_credentials" and not (self.clientId and self.clientSecret):
            return "'oauth': 'grant' is 'client_credentials', so it needs 'clientId' and 'clientSecret'"
        if self.clientSecret and not self.clientId:
            return "'oauth': 'clientSecret' needs the 'clientId' it belongs to"
        return None

    def settings(self) -> OAuthSettings:
        return OAuthSettings(
            scope=self.scope,
            client_id=self.clientId,
            client_secret=self.clientSecret,
            client_metadata_url=self.clientMetadataUrl,
            grant=self.grant,
            issuer=self.issuer,
            callback_port=self.callbackPort,
        )


class _Entry(Model, extra="allow"):
    """One server entry; clients keep keys of their own in it, which are passed over."""

    expected = "an object with 'command' (stdio) or 'url' (streamable HTTP)"
    type: Any = None
    command: str = Field(default="", min_length=1, description="a non-empty string")
    args: list[str] = Field(default=[], description="a list of strings")
    env: dict[str, str] | None = Field(default=None, description="an object of strings")
    cwd: str | None = Field(default=None, description="a string")
    url: str = Field(default="", pattern="^https?://", description="an http:// or https:// URL")
    headers: dict[str, str] | None = Field(default=None, description="an object of strings")
    timeout: float = Field(default=DEFAULT_TIMEOUT, gt=0, description="a positive number of seconds")
    oauth: bool | _OAuth = Field(default=True, description="false, or an object of OAuth settings")

    @field_validator("type")
    @classmethod
    def _known(cls, declared: object) -> object:
        if declared not in (None, "stdio", *_HTTP_TYPES):
            raise ValueError(f"'type' must be 'stdio', 'http' or 'sse', not {declared!r}")
        return declared

    @model_validator(mode="after")
    def _kind(self) -> _Entry:
        """``stdio`` or ``http``, from the entry's ``type`` when it has one, else from its fields."""
        fields, declared = self.model_fields_set, self.type
        if declared is None and not fields & {"command", "url"}:
            raise ValueError("needs 'command' (stdio) or 'url' (streamable HTTP)")
        if declared == "stdio" and "command" not in fields:
            raise ValueError("'type' is 'stdio', so it needs a 'command'")
        if declared in _HTTP_TYPES and "url" not in fields:
            raise ValueError(f"'type' is {declared!r}, so it needs a 'url'")
        return self

    @model_validator(mode="after")
    def _oauth_fits(self) -> _Entry:
        """An ``oauth`` object belongs to an HTTP entry that sends no ``Authorization`` header of its own."""
        if "oauth" in self.model_fields_set and not self._http:
            raise ValueError(
                "'oauth' is for an HTTP server (one with a 'url'); a stdio server takes its secrets in 'env'"
            )
        if not isinstance(self.oauth, _OAuth):
            return self
        if (problem := self.oauth.problem()) is not None:
            raise ValueError(problem)
        if self._authorization:
            raise ValueError("'headers' has an Authorization header already: remove it to log in with 'oauth'")
        return self

    @property
    def _http(self) -> bool:
        return self.type in _HTTP_TYPES or (self.type is None and "command" not in self.model_fields_set)

    @property
    def _authorization(self) -> bool:
        return any(name.lower() == "authorization" for name in self.headers or {})

    def transport(self) -> StdioServer | HttpServer:
        if self._http:
            oauth = self.oauth.settings() if isinstance(self.oauth, _OAuth) else OAuthSettings() if self.oauth else None
            return HttpServer(self.url, dict(self.headers or {}), sse=self.type == "sse", oauth=oauth)
        return StdioServer(self.command, tuple(self.args), self.env or None, self.cwd)


_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_EXPANDED = ("command", "args", "env", "url", "headers", "oauth")
"""The fields of an entry in which ``${VAR}`` is expanded."""
_MIN_HIDDEN = 4
"""A value taken from the environment shorter than this is not redacted (it would mangle every message)."""


def secret_forms(value: str) -> frozenset[str]:
    """The texts ``value`` takes as it is and when quoted or escaped: JSON (``\\"``, ``\\\\``,
    ``\\uXXXX``), Python's ``repr`` (either quote), shell quoting and percent-encoding, quotes left out
    where the form adds them around the value; each of them JSON-escaped once more (a log line
    written as JSON quoting an upstream's ``repr``)."""
    forms = {
        value,  # JSON-escaped below, with the rest
        json.dumps(value, ensure_ascii=False)[1:-1],
        repr(value)[1:-1],
        value.replace("\\", "\\\\").replace("'", "\\'"),
        value.replace("\\", "\\\\").replace('"', '\\"'),
        shlex.quote(value),
        urllib.parse.quote(value, safe=""),
        urllib.parse.quote_plus(value, safe=""),
    }
    forms |= {json.dumps(form)[1:-1] for form in forms}  # a JSON log line of any of them
    return frozenset(form for form in forms if form)


def _expand(raw: object, at: str, environ: Mapping[str, str], hidden: dict[str, str]) -> object:
    """``raw`` (an entry) with ``${VAR}`` expanded in :data:`_EXPANDED`; values from ``environ`` go into ``hidden``."""
    if not isinstance(raw, Mapping):
        return raw

    def one(text: object) -> object:
        if not isinstance(text, str) or "${" not in text:
            return text

        def value(found: re.Match[str]) -> str:
            name, default = found.group(1), found.group(2)
            got = environ.get(name)
            if got is None or (got == "" and default is not None):
                if default is None:
                    raise ConfigError(
                        f"{at}: ${{{name}}} is not set; export {name}, or write ${{{name}:-DEFAULT}} to give a default"
                    )
                return default
            if len(got) >= _MIN_HIDDEN:
                hidden.setdefault(got, found.group(0))
            return got

        return _VARIABLE.sub(value, text)

    out = dict(raw)
    for name in _EXPANDED:
        if name not in out:
            continue
        field_value = out[name]
        if isinstance(field_value, list):
            out[name] = [one(v) for v in field_value]
        elif isinstance(field_value, Mapping):
            out[name] = {k: one(v) for k, v in field_value.items()}
        else:
            out[name] = one(field_value)
    return out


def parse_config(
    data: object, *, timeout: float = DEFAULT_TIMEOUT, environ: Mapping[str, str] | None = None
) -> list[ServerSpec]:
    """Server specs from an ``{"mcpServers": {...}}`` document, VS Code's ``{"servers": {...}}``,
    or the inner mapping itself; ``${VAR}`` is expanded from ``environ`` (the process's by default).

    Raises:
        ConfigError: naming the label and what is wrong (an unset variable by its ``${VAR}``, never a value).
    """
    key, servers = _servers_of(data)
    env = os.environ if environ is None else environ
    specs: list[ServerSpec] = []
    for label, raw in servers.items():
        label = _check_label(label)
        at = where(key, label)
        if parse(_Switch, raw, ConfigError, at=at).disabled:
            continue
        hidden: dict[str, str] = {}
        entry = parse(_Entry, _expand(raw, at, env, hidden), ConfigError, at=at)
        specs.append(
            ServerSpec(
                label,
                entry.transport(),
                float(entry.timeout if "timeout" in entry.model_fields_set else timeout),
                hidden=tuple(sorted(hidden.items(), key=lambda kv: -len(kv[0]))),
            )
        )
    return specs


def load_config(path: str | os.PathLike[str], *, timeout: float = DEFAULT_TIMEOUT) -> list[ServerSpec]:
    """Server specs from an ``mcpServers`` JSON file.

    Raises:
        ConfigError: the file is missing, not JSON, or not a valid configuration.
    """
    specs = load_document(
        path, lambda data: parse_config(data, timeout=timeout), ConfigError, what="configuration", check=_no_twice
    )
    return [replace(spec, source=os.fspath(path)) for spec in specs]


def _no_twice(text: str, data: object) -> None:
    """Refuse a server label given twice in the file (JSON would keep the last without a word)."""
    key, _ = _servers_of(data)
    path = (key,) if key else ()
    twice = [d for d in duplicate_keys(text) if d.path == path]
    if twice:
        raise ConfigError(
            "; ".join(
                f"{where(key, d.key)}: server {d.key!r} is given twice (lines {d.first_line} and {d.second_line}); "
                "only one entry per label is read: remove one or give it another label"
                for d in twice
            )
        )


def spec_for_target(
    target: str | list[str], *, label: str | None = None, timeout: float = DEFAULT_TIMEOUT
) -> ServerSpec:
    """A spec for a URL (``http(s)://``) or a stdio command line (a list: command and arguments)."""
    if isinstance(target, str):
        if not target.startswith(("http://", "https://")):
            raise ConfigError(f"{target!r} is not an http(s) URL; pass a stdio command after '--'")
        return ServerSpec(label=label or _label_for_url(target), transport=HttpServer(target), timeout=timeout)
    if not target:
        raise ConfigError("no command given after '--'")
    return ServerSpec(
        label=label or Path(target[0]).name or "stdio",
        transport=StdioServer(target[0], tuple(target[1:])),
        timeout=timeout,
    )


def _label_for_url(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.netloc.replace(":", "_") or "server"
