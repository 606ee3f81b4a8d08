"""What adding a catalog server would run, exactly, and how it is shown to the person asked. Pure.

A :class:`Launch` is one entry's chosen way of running (:func:`choose`): a package with the
command that runs it at its pinned version, or a remote URL. The command is an argument list,
never a shell line: names, versions and every value go to the process as they are, one argument
each. Per registry type:

* npm: ``npx -y IDENTIFIER@VERSION [package arguments]``;
* PyPI: ``uvx IDENTIFIER==VERSION [package arguments]``, or, with no ``uvx`` on the PATH, the
  package's own command in a venv of its own (``$SKILLDECK_HOME/venvs/IDENTIFIER-VERSION``, made
  with ``pip install IDENTIFIER==VERSION`` once the person agreed: :attr:`Launch.venv`);
* OCI: ``docker run -i --rm [-e NAME]... IMAGE:VERSION [package arguments]`` (or ``podman``);
  environment variables are passed by name (``-e NAME``), their values never on the command line;
* a remote: its URL, with the headers it takes.

What the person is shown (:meth:`Launch.command_line`) is that argument list quoted as a POSIX
shell would need it (``shlex.join``), each value they will give as ``<NAME>``; it is shown, never
run through a shell. The inputs (:attr:`Launch.inputs`) are what they are asked: environment
variables, headers and arguments with no fixed value, secrets marked as such.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from skilldeck.catalog._entries import CatalogEntry, Input, Package, Remote
from skilldeck.host import HttpServer, ServerSpec, StdioServer

__all__ = [
    "ADDED_META",
    "ADD_TIMEOUT",
    "LABEL",
    "Launch",
    "Runtimes",
    "choose",
    "label_for",
    "option_problem",
]

ADDED_META = "dev.skilldeck/registry"
"""The key of an ``added.json`` entry that says where it came from (name, version, registry, when)."""

ADD_TIMEOUT = 120.0
"""Seconds an added server has to start and answer (``npx``/``uvx`` may fetch the package first)."""

LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""An added server's label: what an upstream label may be, in the characters a registry name's last part has."""


@dataclass(frozen=True)
class Runtimes:
    """What this machine has to run packages with (paths found on the PATH; ``None`` when missing)."""

    npx: str | None = None
    uvx: str | None = None
    container: str | None = None
    """``docker`` or ``podman``."""
    python: str | None = None
    """The interpreter a PyPI package's own venv is made with when there is no ``uvx``."""
    venvs: str | None = None
    """The folder those venvs go in (``$SKILLDECK_HOME/venvs``)."""


def label_for(entry: CatalogEntry) -> str:
    """The upstream label an added server gets: its name's last part (``io.github.x/memory`` -> ``memory``)."""
    short = entry.short_name
    return short if LABEL.fullmatch(short) else re.sub(r"[^A-Za-z0-9._-]", "-", short)[:64].lstrip("._-") or "server"


def option_problem(package: Package | None, remote: Remote | None, runtimes: Runtimes) -> str | None:
    """Why this package or remote cannot be run here; ``None`` when it can."""
    if remote is not None:
        return None
    assert package is not None
    if package.not_runnable is not None:
        return package.not_runnable
    if package.registry_type == "npm" and runtimes.npx is None:
        return "it is an npm package and npx is not on the PATH (install Node.js with npm)"
    if package.registry_type == "pypi" and runtimes.uvx is None and (runtimes.python is None or runtimes.venvs is None):
        return "it is a PyPI package and neither uvx nor a Python to make a venv with is at hand"
    if package.registry_type == "oci" and runtimes.container is None:
        return "it is an OCI image and neither docker nor podman is on the PATH"
    return None


@dataclass(frozen=True)
class _Part:
    """One argument of a command: a literal, or an input's value (``None`` until given)."""

    literal: str | None = None
    source: Input | None = None


@dataclass(frozen=True)
class Launch:
    """How one catalog entry would be run (see the module docs)."""

    entry: CatalogEntry
    package: Package | None = None
    remote: Remote | None = None
    runtimes: Runtimes = field(default_factory=Runtimes)
    as_label: str | None = None
    """The upstream label a person chose (``skilldeck servers add --label``); ``None``: :func:`label_for`'s."""

    # -- what it is ------------------------------------------------------------------------------

    @property
    def label(self) -> str:
        return self.as_label or label_for(self.entry)

    @property
    def kind(self) -> str:
        """``npm``, ``pypi``, ``oci``, or the remote's transport (``streamable-http``, ``sse``)."""
        return self.package.registry_type if self.package is not None else self.remote.transport  # type: ignore[union-attr]

    @property
    def venv(self) -> str | None:
        """The folder of the PyPI package's own venv, when it runs from one (no ``uvx``); else ``None``."""
        package, runtimes = self.package, self.runtimes
        if package is None or package.registry_type != "pypi" or runtimes.uvx is not None or runtimes.venvs is None:
            return None
        return f"{runtimes.venvs.rstrip('/')}/{package.identifier}-{package.version}"

    @property
    def inputs(self) -> tuple[Input, ...]:
        """What the person is asked, in the order shown: arguments, then environment variables or headers."""
        source = self.package.inputs if self.package is not None else self.remote.inputs  # type: ignore[union-attr]
        return tuple(i for i in source if i.asked)

    def runs(self) -> dict[str, Any]:
        """What a card says it would run: the package, its exact version and registry type; or the URL."""
        if self.package is not None:
            package = self.package
            return {"registryType": package.registry_type, "package": package.identifier, "version": package.version}
        assert self.remote is not None
        return {"transport": self.remote.transport, "url": self.remote.url}

    def needs(self) -> dict[str, Any]:
        """What a card says it needs: environment variables, secrets and headers by name, arguments, a login."""
        inputs = self.inputs
        out: dict[str, Any] = {
            "env": [i.name for i in inputs if i.kind == "env" and not i.secret],
            "secrets": [i.name for i in inputs if i.secret],
            "headers": [i.name for i in inputs if i.kind == "header" and not i.secret],
            "arguments": [i.name for i in inputs if i.kind == "argument" and not i.secret],
        }
        out = {key: names for key, names in out.items() if names}
        if self.remote is not None and not any(i.kind == "header" and i.secret for i in inputs):
            out["login"] = True  # a remote with no key of its own may ask for an OAuth login
        return out

    # -- the command -----------------------------------------------------------------------------

    def _arguments(self, inputs: tuple[Input, ...]) -> list[_Part]:
        parts: list[_Part] = []
        for item in inputs:
            if not item.positional:
                parts.append(_Part(literal=item.name))
            parts.append(_Part(literal=item.fixed) if item.fixed is not None else _Part(source=item))
        return parts

    def _parts(self) -> list[_Part]:
        package = self.package
        assert package is not None
        runtime = self._arguments(package.runtime_arguments)
        after = self._arguments(package.package_arguments)
        pinned = package.identifier
        if package.registry_type == "npm":
            return [_Part("npx"), _Part("-y"), *runtime, _Part(f"{pinned}@{package.version}"), *after]
        if package.registry_type == "pypi":
            if self.venv is not None:
                return [_Part(f"{self.venv}/bin/{pinned}"), *after]
            return [_Part("uvx"), *runtime, _Part(f"{pinned}=={package.version}"), *after]
        container = (self.runtimes.container or "docker").rsplit("/", 1)[-1]
        env = [part for item in package.environment for part in (_Part("-e"), _Part(item.name))]
        return [
            _Part(container),
            _Part("run"),
            _Part("-i"),
            _Part("--rm"),
            *env,
            *runtime,
            _Part(f"{pinned}:{package.version}"),
            *after,
        ]

    def command_line(self) -> str:
        """What would run, as shown to the person: the quoted command (each value they give as ``<NAME>``), or the URL."""
        if self.remote is not None:
            return f"{self.remote.transport} {self.remote.url}"
        return " ".join(
            shlex.quote(p.literal) if p.literal is not None else f"<{p.source.name}>"  # type: ignore[union-attr]
            for p in self._parts()
        )

    def environment_line(self) -> str:
        """The environment variables (or headers) it is given, by name: ``""`` when none."""
        if self.remote is not None:
            names = [i.name + (" (secret)" if i.secret else "") for i in self.remote.headers]
            return f"headers: {', '.join(names)}" if names else ""
        assert self.package is not None
        names = [i.name + (" (secret)" if i.secret else "") for i in self.package.environment]
        return f"environment: {', '.join(names)}" if names else ""

    def argv(self, values: Mapping[str, str]) -> list[str]:
        """The command with the person's ``values`` (by input name); an optional input left empty is left out.

        Raises:
            KeyError: a required input has no value (checked before, by the consent decision).
        """
        parts = self._parts()
        argv: list[str] = []
        for index, part in enumerate(parts):
            if part.literal is not None:
                # a flag whose value is an optional input left empty goes with it
                following = parts[index + 1].source if index + 1 < len(parts) else None
                if following is not None and not following.positional and not _value(following, values):
                    continue
                argv.append(part.literal)
                continue
            assert part.source is not None
            given = _value(part.source, values)
            if given:
                argv.append(given)
            elif part.source.required:
                raise KeyError(part.source.name)
        return argv

    def spec(self, values: Mapping[str, str], *, timeout: float = ADD_TIMEOUT) -> ServerSpec:
        """The upstream this launch becomes, with the person's ``values``; secrets are redacted from its messages."""
        hidden = tuple(
            sorted(
                ((values[i.name], f"<{i.name}>") for i in self.inputs if i.secret and values.get(i.name)),
                key=lambda kv: -len(kv[0]),
            )
        )
        if self.remote is not None:
            headers = {i.name: v for i in self.remote.headers if (v := _value(i, values))}
            transport: StdioServer | HttpServer = HttpServer(
                self.remote.url, headers, sse=self.remote.transport == "sse"
            )
        else:
            assert self.package is not None
            argv = self.argv(values)
            env = {i.name: v for i in self.package.environment if (v := _value(i, values))}
            transport = StdioServer(argv[0], tuple(argv[1:]), env or None)
        return ServerSpec(self.label, transport, timeout, hidden=hidden)

    def config_entry(self, values: Mapping[str, str], *, added_at: str, timeout: float = ADD_TIMEOUT) -> dict[str, Any]:
        """The ``mcpServers`` entry ``added.json`` keeps for it (where it came from under :data:`ADDED_META`)."""
        spec = self.spec(values, timeout=timeout)
        origin = {
            "name": self.entry.name,
            "version": self.entry.version,
            "registry": self.entry.source,
            "runs": self.runs(),
            "secrets": [i.name for i in self.inputs if i.secret],
            "addedAt": added_at,
        }
        transport = spec.transport
        if isinstance(transport, HttpServer):
            entry: dict[str, Any] = {"type": "sse" if transport.sse else "http", "url": transport.url}
            if transport.headers:
                entry["headers"] = dict(transport.headers)
        else:
            assert isinstance(transport, StdioServer)
            entry = {"command": transport.command, "args": list(transport.args)}
            if transport.env:
                entry["env"] = dict(transport.env)
        return {**entry, "timeout": timeout, ADDED_META: origin}


def _value(item: Input, values: Mapping[str, str]) -> str:
    if item.fixed is not None:
        return item.fixed
    given = values.get(item.name)
    return given if given else (item.default or "")


_PREFERENCE = ("npm", "pypi", "oci")


def choose(entry: CatalogEntry, runtimes: Runtimes, allowed: Any = None) -> tuple[Launch | None, list[str]]:
    """The first way of running ``entry`` here that ``allowed`` (a predicate on a :class:`Launch`,
    returning a reason to refuse or ``None``) lets through: packages by registry type (npm, PyPI, OCI),
    then remotes (streamable HTTP before SSE). Returns it, or ``None`` with why each way was not taken.
    """
    reasons: list[str] = []
    options: list[tuple[Package | None, Remote | None]] = []
    for kind in _PREFERENCE:
        options += [(p, None) for p in entry.packages if p.registry_type == kind]
    options += [(p, None) for p in entry.packages if p.registry_type not in _PREFERENCE]
    for transport in ("streamable-http", "sse"):
        options += [(None, r) for r in entry.remotes if r.transport == transport]
    for package, remote in options:
        problem = option_problem(package, remote, runtimes)
        launch = Launch(entry, package, remote, runtimes)
        if problem is None and allowed is not None:
            problem = allowed(launch)
        if problem is None:
            return launch, reasons
        reasons.append(problem)
    return None, reasons or ["it names no package or remote to run"]
