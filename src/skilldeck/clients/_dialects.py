"""What each client's server entry says, in the gateway's ``mcpServers`` terms, and the entry each
client is given to start the gateway. Pure.

Every client spells a server its own way: Windsurf's ``serverUrl``, Gemini CLI's ``httpUrl`` (and
its ``timeout`` in milliseconds), Codex's ``bearer_token_env_var``, Goose's ``cmd``/``envs``/
``uri``, Zed's ``context_servers`` with an older ``command`` object, VS Code's ``${input:…}``.
:func:`upstream_entry` turns one entry into what ``skilldeck gateway --config`` reads, or gives
:class:`Kept` with the reason it must stay in its client: a key whose effect the gateway cannot
reproduce (a tool filter, an env file, a sandbox), a variable only the client can fill in
(``${input:…}``), a built-in or extension-provided server, or a key this module does not know
(better said and left in place than moved with its meaning lost).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["Context", "Kept", "gateway_entry", "is_gateway", "upstream_entry"]


@dataclass(frozen=True)
class Kept:
    """The entry stays in its client; ``reason`` says why, in words for the user."""

    reason: str


class _Keep(Exception):
    """Raised from deep in a translation to end it with a :class:`Kept`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Context:
    """Where an entry was found: the values its client's variables stand for."""

    home: str
    project: str | None = None
    """The project folder for a project's file; ``None`` for the user's own."""
    separator: str = "/"


_VARIABLE = re.compile(r"\$\{([^}]*)\}")


def _no_variables(value: str, ctx: Context) -> str:
    """A client that expands nothing: a literal ``${…}`` would be expanded by the gateway."""
    if "${" in value:
        raise _Keep(f"{value!r} holds '${{', which this client passes as written and skilldeck would expand")
    return value


def _claude_variables(value: str, ctx: Context) -> str:
    return value  # ${VAR} and ${VAR:-default}, as the gateway reads them


def _editor_variables(value: str, ctx: Context) -> str:
    """VS Code's and Cursor's ``${env:NAME}``, ``${userHome}``, ``${workspaceFolder}``…"""

    def one(found: re.Match[str]) -> str:
        name = found.group(1)
        if name.startswith("env:"):
            return "${" + name.removeprefix("env:") + "}"
        if name == "userHome":
            return ctx.home
        if name in ("pathSeparator", "/"):
            return ctx.separator
        if name in ("workspaceFolder", "workspaceRoot", "workspaceFolderBasename"):
            if ctx.project is None:
                raise _Keep(f"it uses ${{{name}}}, which only the editor knows in a user's file")
            if name == "workspaceFolderBasename":
                return ctx.project.rstrip("/\\").rsplit(ctx.separator, 1)[-1]
            return ctx.project
        if name.startswith("input:"):
            raise _Keep(f"it uses ${{{name}}}, a value the editor asks for and keeps; skilldeck cannot read it")
        raise _Keep(f"it uses ${{{name}}}, a variable only the client fills in")

    return _VARIABLE.sub(one, value)


_DOLLAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def _gemini_variables(value: str, ctx: Context) -> str:
    """Gemini CLI's ``$VAR`` and ``${VAR}``."""
    return _DOLLAR.sub(lambda m: "${" + m.group(1) + "}", value)


Variables = Callable[[str, Context], str]


@dataclass(frozen=True)
class _Fields:
    """One entry read into the gateway's fields (``None``: not given)."""

    command: str | None = None
    args: list[str] | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    sse: bool = False
    disabled: bool = False
    timeout: float | None = None

    def entry(self, variables: Variables, ctx: Context) -> dict[str, Any]:
        def v(text: str) -> str:
            return variables(text, ctx)

        out: dict[str, Any] = {}
        if self.url is not None:
            if self.sse:
                out["type"] = "sse"
            out["url"] = v(self.url)
            if self.headers:
                out["headers"] = {k: v(x) for k, x in self.headers.items()}
        elif self.command is not None:
            out["command"] = v(self.command)
            if self.args:
                out["args"] = [v(a) for a in self.args]
            if self.env:
                out["env"] = {k: v(x) for k, x in self.env.items()}
            if self.cwd is not None:
                out["cwd"] = v(self.cwd)
        else:
            raise _Keep("it names neither a command nor a URL")
        if self.timeout is not None:
            out["timeout"] = self.timeout
        if self.disabled:
            out["disabled"] = True
        return out


def _strings(raw: Mapping[str, Any], key: str) -> list[str] | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise _Keep(f"'{key}' is not a list of strings")
    return list(value)


def _mapping(raw: Mapping[str, Any], key: str) -> dict[str, str] | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(x, str | int | float | bool) for x in value.values()):
        raise _Keep(f"'{key}' is not an object of strings")
    return {
        str(k): x if isinstance(x, str) else str(x).lower() if isinstance(x, bool) else str(x) for k, x in value.items()
    }


def _text(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise _Keep(f"'{key}' is not a non-empty string")
    return value


def _number(raw: Mapping[str, Any], key: str) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise _Keep(f"'{key}' is not a positive number")
    return float(value)


def _keys(raw: Mapping[str, Any], known: set[str], filters: Sequence[str] = ()) -> None:
    """Refuse a tool filter that is set, and any key of no known meaning."""
    for key in filters:
        if raw.get(key):
            raise _Keep(f"'{key}' limits which of its tools the client offers; the gateway would offer them all")
    unknown = sorted(set(raw) - known - set(filters))
    if unknown:
        raise _Keep(f"skilldeck does not know what {', '.join(repr(k) for k in unknown)} does here")


def _refuse(raw: Mapping[str, Any], reasons: Mapping[str, str]) -> None:
    for key, reason in reasons.items():
        if key in raw:
            raise _Keep(f"'{key}': {reason}")


_ENV_FILE = "skilldeck reads no env file; put the variables in 'env' first"
_BASE = {"command", "args", "env", "url", "headers", "type"}


def _typed(raw: Mapping[str, Any], *, url_key: str = "url") -> _Fields:
    """The common ``mcpServers`` entry: ``type`` (stdio, http, sse), ``command``/``args``/``env``/``cwd``, ``url``/``headers``."""
    kind = raw.get("type")
    if kind not in (None, "stdio", "http", "streamable-http", "streamableHttp", "sse"):
        raise _Keep(f"'type' {kind!r} is not a transport skilldeck speaks")
    url = _text(raw, url_key)
    return _Fields(
        command=_text(raw, "command") if url is None else None,
        args=_strings(raw, "args"),
        env=_mapping(raw, "env"),
        cwd=_text(raw, "cwd"),
        url=url,
        headers=_mapping(raw, "headers"),
        sse=kind == "sse",
        disabled=raw.get("disabled") is True,
    )


def _claude_desktop(raw: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
    _keys(raw, {"command", "args", "env", "disabled"})
    return _typed(raw).entry(_no_variables, ctx)


def _claude_code(raw: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
    _refuse(raw, {"headersHelper": "a command Claude Code runs for headers; the gateway cannot run it"})
    _keys(raw, _BASE | {"oauth"})
    entry = _typed(raw).entry(_claude_variables, ctx)
    if "oauth" in raw and "url" in entry:
        entry["oauth"] = raw["oauth"]
    return entry


def _cursor(raw: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
    _refuse(raw, {"envFile": _ENV_FILE, "auth": "Cursor's own OAuth settings; log in with skilldeck login instead"})
    _keys(raw, _BASE | {"disabled"})
    return _typed(raw).entry(_editor_variables, ctx)


def _vscode(raw: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
    _refuse(
        raw,
        {
            "envFile": _ENV_FILE,
            "sandboxEnabled": "VS Code runs it in a sandbox; the gateway would not",
            "sandbox": "VS Code runs it in a sandbox; the gateway would not",
        },
    )
    _keys(raw, _BASE | {"cwd", "dev", "gallery", "version"})
    return _typed(raw).entry(_editor_variables, ctx)


def _windsurf(raw: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
    _keys(raw, _BASE | {"serverUrl", "disabled"}, filters=("disabledTools",))
    url_key = "serverUrl" if "serverUrl" in raw else "url"
    return _typed(raw, url_key=url_key).entry(_editor_variables, ctx)


def _gemini(raw: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
    auth = "Gemini CLI's own sign-in settings; log in with skilldeck login instead"
    _refuse(raw, {k: auth for k in ("oauth", "authProviderType", "targetAudience", "targetServiceAccount")})
    _keys(
        raw,
        _BASE | {"cwd", "httpUrl", "timeout", "trust", "description"},
        filters=("includeTools", "excludeTools"),
    )
    http = _text(raw, "httpUrl")
    fields = _typed(raw, url_key="httpUrl" if http else "url")
    if http is None and fields.url is not None and raw.get("type") != "http":
        fields = _Fields(url=fields.url, headers=fields.headers, sse=True)  # Gemini's plain "url" is SSE
    timeout = _number(raw, "timeout")
    if timeout is not None:
        fields = _with(fields, timeout=timeout / 1000)  # milliseconds there, seconds here
    return fields.entry(_gemini_variables, ctx)


def _with(fields: _Fields, **changes: Any) -> _Fields:
    return replace(fields, **changes)


def _codex(raw: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
    _keys(
        raw,
        {
            "command",
            "args",
            "env",
            "env_vars",
            "cwd",
            "url",
            "http_headers",
            "env_http_headers",
            "bearer_token_env_var",
            "enabled",
            "startup_timeout_sec",
            "startup_timeout_ms",
            "tool_timeout_sec",
            "required",
        },
        filters=("enabled_tools", "disabled_tools"),
    )
    url = _text(raw, "url")
    headers = dict(_mapping(raw, "http_headers") or {})
    for name, variable in (_mapping(raw, "env_http_headers") or {}).items():
        headers[name] = "${" + variable + "}"
    if (token := _text(raw, "bearer_token_env_var")) is not None:
        headers["Authorization"] = "Bearer ${" + token + "}"
    env = dict(_mapping(raw, "env") or {})
    for name in _strings(raw, "env_vars") or []:
        env.setdefault(name, "${" + name + "}")  # Codex forwards it from its own environment
    timeout = _number(raw, "startup_timeout_sec")
    if timeout is None and (ms := _number(raw, "startup_timeout_ms")) is not None:
        timeout = ms / 1000
    fields = _Fields(
        command=_text(raw, "command") if url is None else None,
        args=_strings(raw, "args"),
        env=env or None,
        cwd=_text(raw, "cwd"),
        url=url,
        headers=headers or None,
        disabled=raw.get("enabled") is False,
        timeout=timeout,
    )
    return fields.entry(_literal_then_own(set(headers.values()) | set(env.values())), ctx)


def _literal_then_own(own: set[str]) -> Variables:
    """No expansion in the client, but the ``${VAR}`` this module wrote for it (forwarded variables) stay."""

    def variables(value: str, ctx: Context) -> str:
        if value in own and _VARIABLE.search(value):
            return value
        return _no_variables(value, ctx)

    return variables


_GOOSE_BUILTIN = ("builtin", "platform", "frontend", "inline_python")


def _goose(raw: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
    kind = raw.get("type")
    if kind in _GOOSE_BUILTIN:
        raise _Keep(f"a Goose {kind} extension, not an MCP server skilldeck can start")
    if kind not in ("stdio", "streamable_http", "sse"):
        raise _Keep(f"'type' {kind!r} is not a transport skilldeck speaks")
    _keys(
        raw,
        {"name", "display_name", "description", "bundled", "timeout", "type", "cmd", "args", "envs", "env_keys"}
        | {"uri", "headers", "enabled"},
        filters=("available_tools",),
    )
    env = dict(_mapping(raw, "envs") or {})
    forwarded = set()
    for name in _strings(raw, "env_keys") or []:
        env.setdefault(name, "${" + name + "}")  # Goose hands these secrets to the gateway (see gateway_entry)
        forwarded.add("${" + name + "}")
    uri = _text(raw, "uri") if kind != "stdio" else None
    fields = _Fields(
        command=_text(raw, "cmd") if kind == "stdio" else None,
        args=_strings(raw, "args"),
        env=env or None,
        url=uri,
        headers=_mapping(raw, "headers"),
        sse=kind == "sse",
        disabled=raw.get("enabled") is False,
        timeout=_number(raw, "timeout"),
    )
    return fields.entry(_literal_then_own(forwarded), ctx)


def _zed(raw: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
    if raw.get("source") == "extension" or ("command" not in raw and "url" not in raw and "settings" in raw):
        raise _Keep("provided by a Zed extension, which Zed starts itself")
    if raw.get("settings"):
        raise _Keep("'settings' are for a Zed extension, which Zed starts itself")
    _keys(raw, {"source", "command", "args", "env", "url", "headers", "settings", "enabled"})
    command = raw.get("command")
    if isinstance(command, Mapping):  # the older form: "command": {"path", "args", "env"}
        _keys(command, {"path", "args", "env"})
        fields = _Fields(command=_text(command, "path"), args=_strings(command, "args"), env=_mapping(command, "env"))
    else:
        url = _text(raw, "url")
        fields = _Fields(
            command=_text(raw, "command") if url is None else None,
            args=_strings(raw, "args"),
            env=_mapping(raw, "env"),
            url=url,
            headers=_mapping(raw, "headers"),
        )
    return _with(fields, disabled=raw.get("enabled") is False).entry(_no_variables, ctx)


_READERS: dict[str, Callable[[Mapping[str, Any], Context], dict[str, Any]]] = {
    "claude-desktop": _claude_desktop,
    "claude-code": _claude_code,
    "cursor": _cursor,
    "vscode": _vscode,
    "windsurf": _windsurf,
    "gemini-cli": _gemini,
    "codex": _codex,
    "goose": _goose,
    "zed": _zed,
}


def upstream_entry(client: str, raw: object, ctx: Context) -> dict[str, Any] | Kept:
    """``raw``, an entry of ``client``'s file, as an entry of the gateway's ``mcpServers`` file, or
    :class:`Kept` with the reason it stays in the client."""
    if not isinstance(raw, Mapping):
        return Kept("the entry is not an object")
    try:
        return _READERS[client](raw, ctx)
    except _Keep as keep:
        return Kept(keep.reason)


GATEWAY_STARTUP_SECONDS = 120
"""What a client that bounds a server's start is told to allow: the gateway answers once its upstreams
have answered (each within its own ``--timeout``, 30 s by default)."""


def gateway_entry(client: str, command: Sequence[str], forwarded: Sequence[str] = ()) -> dict[str, Any]:
    """The entry that makes ``client`` start the gateway: ``command`` (absolute program, then its
    arguments) in the client's own spelling.

    ``forwarded``: Goose's secrets (``env_keys``) the moved servers need, handed to the gateway.
    """
    program, args = command[0], list(command[1:])
    if client in ("claude-code", "vscode"):
        return {"type": "stdio", "command": program, "args": args}
    if client == "codex":
        return {"command": program, "args": args, "startup_timeout_sec": GATEWAY_STARTUP_SECONDS}
    if client == "goose":
        return {
            "name": "skilldeck",
            "type": "stdio",
            "cmd": program,
            "args": args,
            "description": "skilldeck gateway: find, load and call the tools of your MCP servers",
            "enabled": True,
            "envs": {},
            "env_keys": sorted(forwarded),
            "timeout": 300,
            "bundled": None,
        }
    if client == "zed":
        return {"source": "custom", "command": program, "args": args, "env": {}}
    return {"command": program, "args": args}


def is_gateway(entry: Mapping[str, Any]) -> str | None:
    """The ``--config`` file of a ``skilldeck gateway`` entry (in the gateway's terms), else ``None``."""
    command, args = entry.get("command"), list(entry.get("args") or [])
    if not isinstance(command, str):
        return None
    name = re.split(r"[/\\]", command)[-1].lower().removesuffix(".exe")
    if name.startswith("python") and args[:1] == ["-m"] and args[1:2] in (["skilldeck"], ["skilldeck.cli"]):
        args = args[2:]
    elif name != "skilldeck":
        return None
    if not args or args[0] != "gateway":
        return None
    for i, arg in enumerate(args):
        if arg == "--config" and i + 1 < len(args):
            return str(args[i + 1])
        if arg.startswith("--config="):
            return str(arg).removeprefix("--config=")
    return ""
