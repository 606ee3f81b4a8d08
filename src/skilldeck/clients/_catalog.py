"""The MCP clients skilldeck knows, and where each keeps its servers on each system. Pure.

Every path is worked out from what it is given (the system, the home folder, the environment, the
project folder), never from this process, so that a test can lay out a whole machine in a
temporary folder. Sources: each client's own documentation of its MCP configuration.

========================  =======================================================  ======================
client                    user's file                                              project's file
========================  =======================================================  ======================
``claude-desktop``        ``claude_desktop_config.json`` in Claude's folder         -
``claude-code``           ``~/.claude.json`` (``local``: its ``projects`` entry)   ``.mcp.json``
``cursor``                ``~/.cursor/mcp.json``                                   ``.cursor/mcp.json``
``vscode``                ``mcp.json`` in the user profile (``servers``)           ``.vscode/mcp.json``
``windsurf``              ``~/.codeium/windsurf/mcp_config.json``                  -
``gemini-cli``            ``~/.gemini/settings.json``                              ``.gemini/settings.json``
``codex``                 ``~/.codex/config.toml`` (``[mcp_servers.*]``)           ``.codex/config.toml``
``goose``                 ``config.yaml`` in Goose's folder (``extensions``)       -
``zed``                   ``settings.json`` in Zed's folder (``context_servers``)  ``.zed/settings.json``
========================  =======================================================  ======================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath, PurePosixPath, PureWindowsPath
from typing import Literal

__all__ = ["CLIENTS", "SCOPES", "Client", "Location", "client_named", "default_upstreams", "locate"]

Format = Literal["json", "toml", "yaml"]
SCOPES = ("user", "project", "local")


@dataclass(frozen=True)
class Client:
    name: str
    title: str
    format: Format
    key: str
    """The key of the servers' mapping in the client's file."""
    scopes: tuple[str, ...]


CLIENTS: tuple[Client, ...] = (
    Client("claude-desktop", "Claude Desktop", "json", "mcpServers", ("user",)),
    Client("claude-code", "Claude Code", "json", "mcpServers", ("user", "project", "local")),
    Client("cursor", "Cursor", "json", "mcpServers", ("user", "project")),
    Client("vscode", "VS Code", "json", "servers", ("user", "project")),
    Client("windsurf", "Windsurf", "json", "mcpServers", ("user",)),
    Client("gemini-cli", "Gemini CLI", "json", "mcpServers", ("user", "project")),
    Client("codex", "Codex CLI", "toml", "mcp_servers", ("user", "project")),
    Client("goose", "Goose", "yaml", "extensions", ("user",)),
    Client("zed", "Zed", "json", "context_servers", ("user", "project")),
)


def client_named(name: str) -> Client | None:
    return next((c for c in CLIENTS if c.name == name), None)


@dataclass(frozen=True)
class Location:
    """One place a client keeps servers: its file, and the keys leading to the servers' mapping there."""

    client: Client
    scope: str
    path: str
    keys: tuple[str, ...]
    installed_marker: str
    """A folder (or file) whose presence says the client is installed here."""
    project: str | None
    """The project folder, for a project's (or Claude Code's local) file."""

    @property
    def describe(self) -> str:
        return f"{self.client.name} ({self.scope}) {self.path}"


def _flavour(system: str) -> type[PurePath]:
    return PureWindowsPath if system == "win32" else PurePosixPath


def _config_home(system: str, home: PurePath, environ: Mapping[str, str]) -> PurePath:
    """The folder a system's applications keep their settings in."""
    flavour = _flavour(system)
    if system == "win32":
        return flavour(environ.get("APPDATA") or home / "AppData" / "Roaming")
    if system == "darwin":
        return home / "Library" / "Application Support"
    return flavour(environ.get("XDG_CONFIG_HOME") or home / ".config")


def _xdg(system: str, home: PurePath, environ: Mapping[str, str]) -> PurePath:
    """``~/.config`` on Linux and macOS alike (the tools that follow XDG there)."""
    flavour = _flavour(system)
    if system == "win32":
        return flavour(environ.get("APPDATA") or home / "AppData" / "Roaming")
    return flavour(environ.get("XDG_CONFIG_HOME") or home / ".config")


def locate(client: Client, scope: str, *, system: str, home: str, environ: Mapping[str, str], project: str) -> Location:
    """Where ``client`` keeps its ``scope``'s servers on ``system`` (``sys.platform``'s spelling).

    Raises:
        ValueError: ``client`` has no such scope (the message names those it has).
    """
    if scope not in client.scopes:
        raise ValueError(f"{client.name} has no {scope} scope; it has {', '.join(client.scopes)}")
    flavour = _flavour(system)
    h, p = flavour(home), flavour(project)
    apps = _config_home(system, h, environ)
    name = client.name

    def at(path: PurePath, marker: PurePath, keys: tuple[str, ...] = (client.key,)) -> Location:
        return Location(client, scope, str(path), keys, str(marker), None if scope == "user" else str(p))

    if name == "claude-desktop":
        folder = apps / "Claude"
        return at(folder / "claude_desktop_config.json", folder)
    if name == "claude-code":
        base = flavour(environ["CLAUDE_CONFIG_DIR"]) if environ.get("CLAUDE_CONFIG_DIR") else h
        user_file = base / ".claude.json"
        if scope == "project":
            return at(p / ".mcp.json", p)
        if scope == "local":
            return at(user_file, user_file, ("projects", str(p), "mcpServers"))
        return at(user_file, user_file)
    if name == "vscode":
        if scope == "project":
            return at(p / ".vscode" / "mcp.json", p)
        folder = apps / "Code" / "User"
        return at(folder / "mcp.json", folder)
    if name == "goose":
        folder = apps / "Block" / "goose" / "config" if system == "win32" else _xdg(system, h, environ) / "goose"
        return at(folder / "config.yaml", folder)
    if name == "zed":
        if scope == "project":
            return at(p / ".zed" / "settings.json", p)
        folder = apps / "Zed" if system == "win32" else _xdg(system, h, environ) / "zed"
        return at(folder / "settings.json", folder)
    if name == "codex":
        if scope == "project":
            return at(p / ".codex" / "config.toml", p)
        folder = flavour(environ["CODEX_HOME"]) if environ.get("CODEX_HOME") else h / ".codex"
        return at(folder / "config.toml", folder)
    folders = {
        "cursor": (h / ".cursor", "mcp.json", p / ".cursor"),
        "windsurf": (h / ".codeium" / "windsurf", "mcp_config.json", None),
        "gemini-cli": (h / ".gemini", "settings.json", p / ".gemini"),
    }
    user_folder, file, project_folder = folders[name]
    if scope == "project":
        assert project_folder is not None
        return at(project_folder / file, p)
    return at(user_folder / file, user_folder)


def default_upstreams(*, system: str, home: str, environ: Mapping[str, str]) -> str:
    """Where ``clients connect`` keeps the servers it moves, unless told: ``~/.config/skilldeck/upstreams.json``
    (``%APPDATA%\\skilldeck\\upstreams.json`` on Windows)."""
    return str(_xdg(system, _flavour(system)(home), environ) / "skilldeck" / "upstreams.json")
