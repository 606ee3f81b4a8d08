"""The private names of the SDK skilldeck uses are the ones ``docs/sdk-workarounds.md`` lists, and they still have
the shape skilldeck uses them in.

* :func:`test_every_private_sdk_name_the_code_uses_is_listed` reads ``src/`` and finds every private name of
  the SDK's stack (``mcp``, ``mcp_types``, uvicorn, Starlette, sse-starlette, httpx2) that it reads, replaces
  or overrides: an attribute ``x._name`` (or ``getattr(x, "_name")``, or ``self._name``/``super()._name`` in a
  subclass of an SDK class), and a private method such a subclass defines, whenever the SDK's own source
  defines that name. The page's table and that set must be equal.
* :func:`test_what_subclasses_of_sdk_classes_override_still_exists_and_nothing_else_collides`: each subclass of
  an SDK class overrides what it means to (still there in the SDK) and nothing else (an SDK upgrade that adds a
  name one of them defines would be shadowed silently).
* The OAuth provider's private methods and context keep the shape ``host/_oauth.py`` uses them in.
* Every canary the page names exists, and every canary's message names a section of the page that exists.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.auth.oauth2 import OAuthContext
from mcp.shared.auth import OAuthClientMetadata
from pydantic import AnyUrl

from .sdk_support import DOC, UVICORN_PROTOCOL_HOOKS, revisit

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "skilldeck"
PAGE = REPO / DOC
STACK = ("mcp", "mcp_types", "uvicorn", "starlette", "sse_starlette", "httpx2")
"""The SDK and what it serves and connects with: whose private names count."""

EXPECTED_SHARED_NAMES: dict[str, set[str]] = {
    "serving/_resumable.py:SessionEvents": {"store_event", "replay_events_after"},
    "serving/_shutdown.py:GracefulServer": {"capture_signals", "shutdown", "should_exit", "force_exit"},
    "serving/_metrics.py:Listener": {"capture_signals"},  # the metrics listener leaves signals to the MCP server
    "server/_extension.py:SkillsExtension": {"methods", "settings", "intercept_tool_call"},  # the Extension API
    "serving/_connections.py:BoundedHttpToolsProtocol": {
        *UVICORN_PROTOCOL_HOOKS,
        "app",  # swapped for the probes' app or a 503, as uvicorn's own protocol reads it per request
    },
    "host/_broken_request.py:RequestScopedClient": {"send"},
    "host/_transports.py:_CappedStream": {"aclose"},
    "host/_oauth.py:StoredCredentials": {"get_tokens", "set_tokens", "get_client_info", "set_client_info"},
    "host/_oauth.py:_HostOAuth": {
        "_initialize",
        "_auth_flow",
        "_perform_authorization_code_grant",
        "_handle_token_response",
        "_initialized",
    },
    "host/_oauth.py:_ClientCredentials": {"_initialize"},
}
"""Per subclass of an SDK class (``module:Class``): the names it defines that the SDK class has too, on purpose."""

OWN_NAMES_ALSO_IN_THE_SDK: dict[tuple[str, str], str] = {
    ("server/_catalog.py", "_entries"): "another Catalog's table (the SDK has an unrelated _entries)",
}
"""Private names read on skilldeck's own objects that the SDK's source happens to define too, with whose they are."""


# -- what the SDK's stack defines ---------------------------------------------------------------------------


@functools.cache
def sdk_private_names() -> frozenset[str]:
    """Every private name the stack's own source defines: ``def _name`` or ``self._name`` (not dunders)."""
    found: set[str] = set()
    pattern = re.compile(r"(?:\bdef\s+|\bself\.)(_[A-Za-z]\w*)")
    for package in STACK:
        spec = importlib.util.find_spec(package)
        assert spec is not None, package
        assert spec.submodule_search_locations, package
        for root in spec.submodule_search_locations:
            for path in Path(root).rglob("*.py"):
                found.update(n for n in pattern.findall(path.read_text(encoding="utf-8")) if not n.startswith("__"))
    return frozenset(found)


def _instance_names(cls: type) -> set[str]:
    """Names ``cls`` and the stack's classes above it define or assign as ``self.<name>`` (all of them)."""
    names = set(dir(cls))
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] not in STACK:
            continue
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        names.update(re.findall(r"\bself\.(\w+)\s*(?::[^=\n]+)?=", source))
    return {n for n in names if not n.startswith("__")}


# -- what src/ does -----------------------------------------------------------------------------------------


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(SRC.rglob("*.py")):
        yield path.relative_to(SRC).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def _imports(tree: ast.Module) -> dict[str, str]:
    """Each name a module binds by import (anywhere in it) to the dotted name it stands for."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bound[alias.asname or alias.name.split(".")[0]] = (alias.asname and alias.name) or alias.name.split(
                    "."
                )[0]
    return bound


def _dotted(node: ast.expr, bound: dict[str, str]) -> str | None:
    if isinstance(node, ast.Name):
        return bound.get(node.id)
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value, bound)
        return f"{head}.{node.attr}" if head else None
    return None


def _resolve(dotted: str) -> Any:
    """The object a dotted name stands for (its longest importable module, then attributes)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute)
        return found
    raise ImportError(dotted)


def sdk_bases(node: ast.ClassDef, bound: dict[str, str]) -> list[type]:
    """The classes of the stack ``node`` derives from directly."""
    bases = []
    for base in node.bases:
        dotted = _dotted(base, bound)
        if dotted and dotted.split(".")[0] in STACK:
            bases.append(_resolve(dotted))
    return bases


class _PrivateUses(ast.NodeVisitor):
    """The private names a module reads, replaces or overrides: on another object (``x._name``,
    ``getattr(x, "_name")``), or on itself in a subclass of an SDK class (``self._name``, ``super()._name``, a
    method ``_name``), each with the SDK classes it is looked up in (``None``: any)."""

    def __init__(self, bound: dict[str, str]) -> None:
        self.bound = bound
        self.classes: list[list[type]] = []
        self.found: set[tuple[str, tuple[type, ...] | None]] = set()

    @property
    def sdk_bases(self) -> tuple[type, ...]:
        return tuple(self.classes[-1]) if self.classes else ()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.classes.append(sdk_bases(node, self.bound))
        if self.sdk_bases:
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and _private(item.name):
                    self.found.add((item.name, self.sdk_bases))  # an override when a base has it (filtered later)
        self.generic_visit(node)
        self.classes.pop()

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if _private(node.attr):
            value = node.value
            own = isinstance(value, ast.Name) and value.id in ("self", "cls")
            parent = isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super"
            if not (own or parent):
                self.found.add((node.attr, None))
            elif self.sdk_bases:
                self.found.add((node.attr, self.sdk_bases))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in ("getattr", "setattr", "hasattr") and len(node.args) > 1:
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str) and _private(name.value):
                self.found.add((name.value, None))
        self.generic_visit(node)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def used_private_names() -> set[tuple[str, str]]:
    """``(module, name)`` for every private name of the stack a module of ``src/skilldeck`` uses.

    A name on another object counts when the stack's source defines it (and it is not one of
    :data:`OWN_NAMES_ALSO_IN_THE_SDK`); a name on ``self`` in a subclass when one of its SDK bases has it.
    """
    sdk = sdk_private_names()
    used = set()
    for module, tree in _modules():
        visitor = _PrivateUses(_imports(tree))
        visitor.visit(tree)
        for name, bases in visitor.found:
            if bases is None:
                counted = name in sdk and (module, name) not in OWN_NAMES_ALSO_IN_THE_SDK
            else:
                counted = any(name in _instance_names(b) for b in bases)
            if counted:
                used.add((module, name))
    return used


# -- what the page says -------------------------------------------------------------------------------------


def _section(heading: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end != -1 else None]


def listed_private_names() -> dict[tuple[str, str], list[str]]:
    """The table of private names: ``(module, name)`` to the canaries its row names."""
    rows: dict[tuple[str, str], list[str]] = {}
    for line in _section("## Private names read or overridden").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        module, name = cells[0].strip("`"), cells[1].strip("`").rsplit(".", 1)[-1]
        rows[(module, name)] = re.findall(r"`(tests/sdk/[^`]+)`", cells[3])
    return rows


def _defined_tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


# -- the tests ----------------------------------------------------------------------------------------------


def test_every_private_sdk_name_the_code_uses_is_listed() -> None:
    used = used_private_names()
    listed = set(listed_private_names())
    unlisted = sorted(used - listed)
    stale = sorted(listed - used)
    assert not unlisted, (
        f"src/ uses private names of the SDK that {DOC} does not list: {unlisted}. Add a row to its table "
        "(and a section saying what it works around, what would retire it, and a canary in tests/sdk), or use a "
        "public API instead"
    )
    assert not stale, f"{DOC} lists private SDK names src/ no longer uses: {stale}; remove their rows"


def test_the_private_names_found_are_the_ones_the_modules_reach_for() -> None:
    """The finder itself: it sees a read, a replacement, a getattr, an override and a super() call."""
    used = used_private_names()
    for expected in (
        ("serving/_sessions.py", "_server_instances"),  # manager._server_instances
        ("serving/_sessions.py", "_admit_session"),  # read, then replaced
        ("serving/_legacy.py", "_connection"),  # getattr(session, "_connection", None)
        ("host/_oauth.py", "_auth_flow"),  # an override calling super()
        ("host/_oauth.py", "_initialized"),  # self._initialized in a subclass of the SDK's provider
    ):
        assert expected in used, expected
    assert not {m for m, _ in used} & {"server/_catalog.py", "select/_bm25f.py", "serving/_connections.py"}, used


def test_every_canary_the_page_names_exists() -> None:
    named = set(re.findall(r"`(tests/sdk/\w+\.py)::(\w+)`", PAGE.read_text(encoding="utf-8")))
    assert len(named) >= 30, named
    missing = sorted(
        f"{path}::{test}"
        for path, test in named
        if not (REPO / path).exists() or test not in _defined_tests(REPO / path)
    )
    assert not missing, f"{DOC} names canaries that do not exist: {missing}"
    for (module, name), canaries in listed_private_names().items():
        assert canaries, f"{DOC}: the row of {module} {name} names no canary"
        assert (SRC / module).exists(), f"{DOC} lists {module}, which is not a module of src/skilldeck"


def _string_constants(body: list[ast.stmt]) -> dict[str, str]:
    """The names ``body`` binds to string constants, alone or by tuple (``module, anchor = "a", "b"``)."""
    bound: dict[str, str] = {}
    for statement in body:
        if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
            continue
        target, value = statement.targets[0], statement.value
        pairs = (
            zip(target.elts, value.elts, strict=False)
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple)
            else [(target, value)]
        )
        for name, constant in pairs:
            if isinstance(name, ast.Name) and isinstance(constant, ast.Constant) and isinstance(constant.value, str):
                bound[name.id] = constant.value
    return bound


def test_every_canary_message_names_a_module_and_a_section_that_exist() -> None:
    anchors = set(re.findall(r"\{#([\w-]+)\}", PAGE.read_text(encoding="utf-8")))
    calls = 0
    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module_constants = _string_constants(tree.body)
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            constants = {**module_constants, **_string_constants(function.body)}
            for node in ast.walk(function):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "revisit"):
                    continue
                calls += 1
                module, anchor = (
                    a.value if isinstance(a, ast.Constant) else constants.get(a.id) if isinstance(a, ast.Name) else None
                    for a in node.args[1:3]
                )
                where = f"{path.name}:{node.lineno}"
                assert isinstance(module, str), f"{where}: the module revisit names is not a constant"
                assert (SRC / module).exists(), f"{where}: no module {module!r} in src"
                assert anchor in anchors, f"{where}: {DOC} has no section #{anchor}"
    assert calls >= 30, calls


def _sdk_subclasses() -> Iterator[tuple[str, ast.ClassDef, list[type]]]:
    for module, tree in _modules():
        bound = _imports(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = sdk_bases(node, bound)
                if bases and not any(issubclass(b, pydantic.BaseModel | BaseException) for b in bases):
                    yield module, node, bases


def _names_defined(node: ast.ClassDef) -> set[str]:
    """What a class body defines: its methods and class attributes, and the ``self.<name>`` its methods assign."""
    names: set[str] = set()
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(item.name)
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names.add(item.target.id)
        elif isinstance(item, ast.Assign):
            names.update(t.id for t in item.targets if isinstance(t, ast.Name))
    for inner in ast.walk(node):
        targets = (
            inner.targets
            if isinstance(inner, ast.Assign)
            else [inner.target]
            if isinstance(inner, ast.AnnAssign)
            else []
        )
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                names.add(target.attr)
    return {n for n in names if not n.startswith("__")}


def test_what_subclasses_of_sdk_classes_override_still_exists_and_nothing_else_collides() -> None:
    problems = []
    seen = set()
    for module, node, bases in _sdk_subclasses():
        key = f"{module}:{node.name}"
        seen.add(key)
        theirs = set().union(*(_instance_names(b) for b in bases))
        shared = _names_defined(node) & theirs
        expected = EXPECTED_SHARED_NAMES.get(key, set())
        if shared - expected:
            problems.append(f"{key} defines {sorted(shared - expected)}, which {bases} define too (shadowed silently)")
        if expected - theirs:
            problems.append(f"{key} overrides {sorted(expected - theirs)}, which {bases} no longer define")
    assert not problems, f"the SDK changed classes skilldeck subclasses: {problems}; see {DOC}#also"
    assert set(EXPECTED_SHARED_NAMES) <= seen, sorted(set(EXPECTED_SHARED_NAMES) - seen)


@pytest.mark.parametrize(
    ("owner", "name", "parameters", "kind"),
    [
        (OAuthClientProvider, "_initialize", ["self"], "coroutine"),
        (ClientCredentialsOAuthProvider, "_initialize", ["self"], "coroutine"),
        (OAuthClientProvider, "_auth_flow", ["self", "request"], "async generator"),
        (OAuthClientProvider, "_refresh_token", ["self"], "coroutine"),
        (OAuthClientProvider, "_handle_refresh_response", ["self", "response"], "coroutine"),
        (OAuthClientProvider, "_add_auth_header", ["self", "request"], "function"),
        (OAuthClientProvider, "_perform_authorization_code_grant", ["self"], "coroutine"),
        (OAuthClientProvider, "_handle_token_response", ["self", "response"], "coroutine"),
        (OAuthClientProvider, "_validate_resource_match", ["self", "prm"], "coroutine"),
        (OAuthClientProvider, "_select_authorization_server", ["self", "advertised"], "function"),
        (OAuthClientProvider, "_expected_issuer", ["self"], "function"),
    ],
)
def test_the_oauth_provider_methods_the_host_overrides_or_calls_keep_their_shape(
    owner: type, name: str, parameters: list[str], kind: str
) -> None:
    method = owner.__dict__.get(name) or getattr(owner, name, None)
    assert method is not None, revisit(f"{owner.__name__}.{name} (gone)", "host/_oauth.py", "oauth")
    found = list(inspect.signature(method).parameters)
    actual = (
        "async generator"
        if inspect.isasyncgenfunction(method)
        else "coroutine"
        if inspect.iscoroutinefunction(method)
        else "function"
    )
    assert (found, actual) == (parameters, kind), revisit(
        f"{owner.__name__}.{name} to a {actual} of {found}", "host/_oauth.py", "oauth"
    )


def test_the_oauth_context_has_what_the_host_reads_and_sets() -> None:
    metadata = OAuthClientMetadata(redirect_uris=[AnyUrl("http://127.0.0.1/callback")])
    provider = OAuthClientProvider("http://127.0.0.1/mcp", metadata, storage=None)  # type: ignore[arg-type]
    context = provider.context
    assert isinstance(context, OAuthContext)
    assert provider._initialized is False, revisit("OAuthClientProvider._initialized", "host/_oauth.py", "oauth")
    missing = [
        name
        for name in (
            "lock",
            "current_tokens",
            "client_info",
            "token_expiry_time",
            "oauth_metadata",
            "protected_resource_metadata",
            "auth_server_url",
            "client_metadata",
            "callback_handler",
            "is_token_valid",
            "can_refresh_token",
            "clear_tokens",
        )
        if not hasattr(context, name)
    ]
    assert not missing, revisit(f"OAuthContext (no {missing})", "host/_oauth.py", "oauth")
    source = inspect.getsource(OAuthClientProvider._auth_flow)
    assert "async with self.context.lock" in source, revisit(
        "OAuthClientProvider._auth_flow: it no longer holds the context's lock around every request",
        "host/_oauth.py",
        "oauth",
    )
