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
or ``"type": "http"`` on each entry (an entry's ``type`` is honoured in either file).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skilldeck._documents import load_document
from skilldeck.errors import ConfigError

__all__ = [
    "DEFAULT_TIMEOUT",
    "HttpServer",
    "InProcessServer",
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
    env: Mapping[str, str] | None = None
    cwd: str | None = None


@dataclass(frozen=True)
class HttpServer:
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)


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

    @property
    def kind(self) -> str:
        return {StdioServer: "stdio", HttpServer: "http", InProcessServer: "in-process"}[type(self.transport)]


def _check_label(label: object) -> str:
    if not isinstance(label, str) or not label.strip():
        raise ConfigError(f"server label {label!r} must be a non-empty string")
    if "/" in label or ":" in label or label in (".", "..") or any(ord(c) < 32 for c in label):
        raise ConfigError(f"server label {label!r} may not contain '/', ':', control characters, or be '.' or '..'")
    return label


def _str_map(label: str, name: str, value: object) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ConfigError(f"server {label!r}: {name!r} must be an object of strings")
    return dict(value)


_HTTP_TYPES = ("http", "streamable-http", "streamableHttp")


def _is_entry(value: object) -> bool:
    return isinstance(value, Mapping) and any(key in value for key in ("command", "url", "type"))


def _servers_of(data: object) -> Mapping[Any, Any]:
    """The label-to-entry mapping of a Claude Desktop / Cursor, VS Code or bare document."""
    if not isinstance(data, Mapping):
        raise ConfigError('expected {"mcpServers": {"label": {...}}}')
    if "mcpServers" in data:
        servers = data["mcpServers"]
    elif isinstance(data.get("servers"), Mapping) and not _is_entry(data["servers"]):
        servers = data["servers"]  # VS Code's mcp.json
    else:
        for key in data:
            if isinstance(key, str) and key != "mcpServers" and key.replace("_", "").lower() == "mcpservers":
                raise ConfigError(
                    f'found {key!r} but no "mcpServers": the key is "mcpServers", spelt exactly so (case matters)'
                )
        servers = data
    if not isinstance(servers, Mapping):
        raise ConfigError('expected {"mcpServers": {"label": {...}}}')
    return servers


def _kind(label: str, entry: Mapping[str, Any]) -> str:
    """``stdio`` or ``http``, from the entry's ``type`` when it has one, else from its fields."""
    declared = entry.get("type")
    if declared is None:
        if "command" in entry:
            return "stdio"
        if "url" in entry:
            return "http"
        raise ConfigError(f"server {label!r}: needs 'command' (stdio) or 'url' (streamable HTTP)")
    if declared == "stdio":
        if "command" not in entry:
            raise ConfigError(f"server {label!r}: 'type' is 'stdio', so it needs a 'command'")
        return "stdio"
    if declared in _HTTP_TYPES:
        if "url" not in entry:
            raise ConfigError(f"server {label!r}: 'type' is {declared!r}, so it needs a 'url'")
        return "http"
    if declared == "sse":
        raise ConfigError(
            f"server {label!r}: 'type' 'sse' is the old HTTP+SSE transport, which skilldeck does not speak; "
            'if the server also serves streamable HTTP, use "type": "http" and that endpoint\'s \'url\''
        )
    raise ConfigError(f"server {label!r}: 'type' must be 'stdio' or 'http', not {declared!r}")


def parse_config(data: object, *, timeout: float = DEFAULT_TIMEOUT) -> list[ServerSpec]:
    """Server specs from an ``{"mcpServers": {...}}`` document, VS Code's ``{"servers": {...}}``,
    or the inner mapping itself.

    Raises:
        ConfigError: naming the label and what is wrong.
    """
    servers = _servers_of(data)
    specs: list[ServerSpec] = []
    for label, entry in servers.items():
        label = _check_label(label)
        if not isinstance(entry, Mapping):
            raise ConfigError(f"server {label!r}: expected an object with 'command' or 'url'")
        disabled = entry.get("disabled", False)
        if not isinstance(disabled, bool):
            raise ConfigError(f"server {label!r}: 'disabled' must be true or false")
        if disabled:
            continue
        entry_timeout = entry.get("timeout", timeout)
        if isinstance(entry_timeout, bool) or not isinstance(entry_timeout, int | float) or entry_timeout <= 0:
            raise ConfigError(f"server {label!r}: 'timeout' must be a positive number of seconds")
        if _kind(label, entry) == "stdio":
            command, args = entry["command"], entry.get("args", [])
            if not isinstance(command, str) or not command:
                raise ConfigError(f"server {label!r}: 'command' must be a non-empty string")
            if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
                raise ConfigError(f"server {label!r}: 'args' must be a list of strings")
            cwd = entry.get("cwd")
            if cwd is not None and not isinstance(cwd, str):
                raise ConfigError(f"server {label!r}: 'cwd' must be a string")
            env = _str_map(label, "env", entry.get("env"))
            transport: StdioServer | HttpServer = StdioServer(command, tuple(args), env or None, cwd)
        else:
            url = entry["url"]
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise ConfigError(f"server {label!r}: 'url' must be an http:// or https:// URL")
            transport = HttpServer(url, _str_map(label, "headers", entry.get("headers")))
        specs.append(ServerSpec(label=label, transport=transport, timeout=float(entry_timeout)))
    return specs


def load_config(path: str | os.PathLike[str], *, timeout: float = DEFAULT_TIMEOUT) -> list[ServerSpec]:
    """Server specs from an ``mcpServers`` JSON file.

    Raises:
        ConfigError: the file is missing, not JSON, or not a valid configuration.
    """
    return load_document(path, lambda data: parse_config(data, timeout=timeout), ConfigError, what="configuration")


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
