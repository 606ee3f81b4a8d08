"""The sans-I/O core stays free of the MCP SDK, and imports point one way."""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "skilldeck"

PURE = [
    "skill/_frontmatter.py",
    "skill/_manifest.py",
    "skill/_uri.py",
    "skill/_static.py",
    "skill/_pack.py",  # disk I/O, but no SDK: the host and the server both read packs with it
    "skill/_beneath.py",  # the pack's safe opening below a root
    "skill/_workers.py",  # the pack's worker processes
    "server/_catalog.py",
    "server/_dynamic.py",
    "server/_remote.py",
    "host/_registry.py",
    "host/_verify.py",
    "host/_loader.py",
    "host/_port.py",
    "host/_approvals.py",
    "host/_cache.py",
    "serving/_policy.py",
    "serving/_policy.py",
    "serving/_clients.py",
    "serving/_audit.py",
    "server/_audience.py",
    "server/_service.py",
    "select/_snapshot.py",
    "select/_cards.py",
    "select/_rank.py",
    "select/_decide.py",
    "select/_project.py",
    "select/_gate.py",
    "gateway/_meta.py",
    "gateway/_activation.py",
    "learning/_ledger.py",
    "catalog/_entries.py",
    "catalog/_launch.py",
    "catalog/_consent.py",
    "catalog/_search.py",
    "clients/_catalog.py",
    "clients/_dialects.py",
    "clients/_edits.py",
    "clients/_plan.py",
]


def imported_modules(path: Path, *, runtime_only: bool = False, as_written: bool = False) -> set[str]:
    """The modules ``path`` imports; with ``runtime_only``, leaving out what ``if TYPE_CHECKING:`` imports.

    A name imported from a package or its face counts as an import of the module that defines it
    (:func:`reexports`), unless ``as_written``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if runtime_only:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
                node.body = []
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            where = {} if as_written else reexports(node.module)
            found.update(where.get(alias.name, node.module) for alias in node.names)
    return found


def reexports(module: str) -> dict[str, str]:
    """What a package (``skilldeck.x``) or its face (``skilldeck.x._api``) gives, name by name: the module
    each name comes from; ``{}`` for any other module.

    Importing a name from a package or a face is checked as an import of the module that defines it:
    a face imports each name when first asked for, and the rules are about what a module uses, not
    about what else its package's ``__init__`` happens to load."""
    if not module.startswith("skilldeck."):
        return {}
    rel = module.removeprefix("skilldeck.").replace(".", "/")
    path = SRC / rel / "__init__.py" if (SRC / rel).is_dir() else SRC / f"{rel}.py"
    if not (module.endswith("._api") or path.name == "__init__.py") or not path.exists():
        return {}
    where: dict[str, str] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("skilldeck."):
            where.update({alias.asname or alias.name: node.module for alias in node.names})
    return where


def closure(module_file: str) -> set[str]:
    """Every skilldeck module reachable by imports from ``module_file``, plus external roots."""
    seen: set[str] = set()
    todo = [SRC / module_file]
    external: set[str] = set()
    while todo:
        path = todo.pop()
        if path in seen:  # type: ignore[comparison-overlap]
            continue
        seen.add(path)  # type: ignore[arg-type]
        for name in imported_modules(path):
            if name.startswith("skilldeck."):
                rel = name.removeprefix("skilldeck.").replace(".", "/")
                candidate = SRC / f"{rel}.py"
                todo.append(candidate if candidate.exists() else SRC / rel / "__init__.py")
            else:
                external.add(name.split(".")[0])
    return external


@pytest.mark.parametrize("module_file", PURE)
def test_core_modules_never_import_the_sdk(module_file: str) -> None:
    external = closure(module_file)
    assert not {"mcp", "mcp_types", "starlette", "uvicorn", "httpx2"} & external, external


def test_skill_layer_imports_nothing_above_it() -> None:
    for path in (SRC / "skill").glob("*.py"):
        for name in imported_modules(path):
            assert not name.startswith(("skilldeck.server", "skilldeck.host", "skilldeck.cli")), (path, name)


def test_select_never_imports_host_server_or_cli() -> None:
    for path in (SRC / "select").glob("*.py"):
        for name in imported_modules(path):
            assert not name.startswith(("skilldeck.host", "skilldeck.server", "skilldeck.cli")), (path, name)


def test_the_public_api_resolves() -> None:
    import skilldeck

    for name in skilldeck.__all__:
        assert getattr(skilldeck, name) is not None, name


def test_learning_sits_below_the_gateway() -> None:
    """The usage ledger is the gateway's and SkillSession's, and imports neither (nor the host or the CLI),
    nor either server's HTTP side: its Redis store shares only the Redis client (``skilldeck._redis``)."""
    above = ("skilldeck.gateway", "skilldeck.host", "skilldeck.cli", "skilldeck.agents", "skilldeck.server")
    for path in (SRC / "learning").glob("*.py"):
        for name in imported_modules(path):
            assert not name.startswith((*above, "skilldeck.serving")), (path, name)


def test_the_gateway_takes_only_the_skills_server_from_server() -> None:
    """The HTTP plumbing both servers run on (runner, sessions, bounds, streams, health, shutdown, tokens,
    the replicas' bus) lives in ``serving/``; what the gateway imports from ``server/`` is the skills
    server itself (the catalog, the extension, remote skills, a caller's audience)."""
    skills_server = {"skilldeck.server._catalog", "skilldeck.server._extension", "skilldeck.server._remote"}
    skills_server |= {"skilldeck.server._audience", "skilldeck.server"}
    for path in (SRC / "gateway").glob("*.py"):
        from_server = {name for name in imported_modules(path) if name.startswith("skilldeck.server")}
        assert from_server <= skills_server, (path, from_server - skills_server)


def test_the_clients_core_reads_and_writes_nothing() -> None:
    """``skilldeck clients`` plans on texts: only its state module and the CLI touch files, and it builds on
    no server, gateway or CLI module."""
    for path in (SRC / "clients").glob("*.py"):
        names = imported_modules(path)
        above = {n for n in names if n.startswith(("skilldeck.server", "skilldeck.gateway", "skilldeck.cli."))}
        assert not above | ({"skilldeck.cli"} & names), (path, above)
        if path.name not in ("_state.py", "__init__.py", "_api.py"):  # the face only names what others import
            assert not {"os", "tempfile", "shutil", "skilldeck.clients._state"} & names, (path, names)  # PurePath only


def test_server_never_imports_host_or_cli() -> None:
    for path in (SRC / "server").glob("*.py"):
        for name in imported_modules(path):
            assert not name.startswith(("skilldeck.host", "skilldeck.cli", "skilldeck.demo")), (path, name)


def test_serving_sits_below_server_and_gateway() -> None:
    """What the skills server and the gateway share imports neither of them (nor the host or the CLI)."""
    for path in (SRC / "serving").glob("*.py"):
        for name in imported_modules(path):
            assert not name.startswith(
                ("skilldeck.server", "skilldeck.gateway", "skilldeck.host", "skilldeck.cli", "skilldeck.agents")
            ), (path, name)


def module_graph() -> dict[str, set[str]]:
    """Every skilldeck module and the skilldeck modules it imports (``TYPE_CHECKING`` imports too).

    ``from skilldeck.host import stdio_guard`` counts as an import of the submodule, not the package.
    """
    modules = {
        ".".join(("skilldeck", *path.relative_to(SRC).with_suffix("").parts)).removesuffix(".__init__"): path
        for path in SRC.rglob("*.py")
    }
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names if alias.name in modules)
            elif isinstance(node, ast.ImportFrom) and node.module in modules:
                for alias in node.names:
                    submodule = f"{node.module}.{alias.name}"
                    found.add(submodule if submodule in modules else node.module)
        graph[module] = found - {module}
    return graph


def test_no_import_cycles() -> None:
    graph = module_graph()
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = "open"
        path.append(module)
        for name in sorted(graph[module]):
            assert state.get(name) != "open", " -> ".join([*path[path.index(name) :], name])
            if name not in state:
                visit(name)
        path.pop()
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module)


def test_the_host_watcher_only_listens() -> None:
    """Re-listing is the host's (``Host.relist`` over ``discover.list_server``); the watcher neither
    imports the host facade nor touches the registry or the listing code itself."""
    names = imported_modules(SRC / "host" / "_watch.py")
    assert not {"skilldeck.host._host", "skilldeck.host._registry", "skilldeck.host._discover"} & names, names


def runtime_imports(path: Path) -> set[str]:
    """Like :func:`imported_modules`, leaving out what ``if TYPE_CHECKING:`` imports."""
    return imported_modules(path, runtime_only=True)


def test_errors_module_is_the_root_and_imports_no_skilldeck_module() -> None:
    assert not {n for n in runtime_imports(SRC / "errors.py") if n.startswith("skilldeck")}


def test_every_error_class_lives_in_errors_py() -> None:
    """One error tree: an exception class defined anywhere else would be a second one."""
    import skilldeck.errors

    for path in SRC.rglob("*.py"):
        if path.name == "errors.py" and path.parent == SRC:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                assert node.name not in skilldeck.errors.__all__, (path, node.name)
                bases = {b.id for b in node.bases if isinstance(b, ast.Name)}
                assert not bases & {"Exception", *skilldeck.errors.__all__}, (path, node.name, bases)


def test_every_error_sits_under_one_branch_of_the_tree() -> None:
    """Each class is a SkilldeckError, on exactly one of the branches the module docstring draws."""
    import skilldeck.errors as errors

    branches = (errors.SkillError, errors.UsageError, errors.Refused, errors.NotServedError, errors.PeerError)
    for name in errors.__all__:
        cls = getattr(errors, name)
        if not isinstance(cls, type) or cls is errors.SkilldeckError:
            continue
        assert issubclass(cls, errors.SkilldeckError), name
        assert sum(issubclass(cls, branch) for branch in branches) == 1, name
        assert name in (errors.__doc__ or ""), f"{name} is missing from the tree in errors.py's docstring"


def test_nothing_below_the_gateway_imports_it() -> None:
    """The gateway is an application of host, server and select: only the CLI, the demo and the agent
    adapters build on it (and nothing imports the adapters but themselves)."""
    for path in SRC.rglob("*.py"):
        top = path.relative_to(SRC).parts[0]
        if top != "agents":
            assert not any(n.startswith("skilldeck.agents") for n in imported_modules(path)), path
        if top in ("gateway", "cli", "demo", "agents"):
            continue
        for name in imported_modules(path):
            assert not name.startswith("skilldeck.gateway"), (path, name)


def test_the_gateway_service_knows_no_server_sdk() -> None:
    """Find, load, read and call decide without a session: only ``gateway/_server.py`` and ``app.py`` touch one."""
    external = closure("gateway/_service.py")
    assert not {"starlette", "uvicorn"} & external, external
    for name in imported_modules(SRC / "gateway" / "_service.py"):
        assert not name.startswith(("mcp.server", "skilldeck.gateway._server", "skilldeck.cli")), name


def test_the_gateway_decisions_reach_upstreams_only_through_their_port() -> None:
    """``GatewayService`` decides on what ``gateway/_port.py``'s ``Upstreams`` gives it; the SDK calls are
    ``gateway/_upstreams.py``'s, and the decisions never read the host they were built on."""
    names = imported_modules(SRC / "gateway" / "_service.py")
    assert not {n for n in names if n.startswith(("mcp", "skilldeck.host._connect", "skilldeck.ask"))}, names
    tree = ast.parse((SRC / "gateway" / "_service.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            assert ast.unparse(node) != "self.host", (node.lineno, ast.unparse(node))


def test_no_adapter_reaches_the_host_through_the_gateway_service() -> None:
    """The service carries its ``Upstreams`` port, not the host: what needs the host is given it."""
    for path in [*(SRC / "gateway").glob("*.py"), *(SRC / "cli").glob("*.py"), *(SRC / "agents").glob("*.py")]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "host":
                owner = ast.unparse(node.value)
                assert not owner.endswith("service"), (path.name, node.lineno, ast.unparse(node))


def test_host_never_imports_server_or_cli() -> None:
    """Host and server are siblings: what both need of a skill pack lives in ``skill/``."""
    for path in (SRC / "host").glob("*.py"):
        for name in imported_modules(path):
            assert not name.startswith(("skilldeck.server", "skilldeck.cli", "skilldeck.demo")), (path, name)


@pytest.mark.parametrize("module_file", ["server/_middleware.py", "server/_extension.py", "server/_app.py"])
def test_server_adapters_use_each_other_only_through_public_names(module_file: str) -> None:
    """``x._name`` only on ``self``: the middleware and the app read the extension's public surface."""
    tree = ast.parse((SRC / module_file).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = node.value.id if isinstance(node.value, ast.Name) else ast.unparse(node.value)
            assert owner == "self", (module_file, node.lineno, node.attr)


@pytest.mark.parametrize(
    "text",
    [
        '= "io.modelcontextprotocol/skills"',  # the extension id
        '= "dev.skilldeck/tools"',  # the metadata key naming a skill's tools
        "inspect.isawaitable(",  # taking a callback's result, sync or async
        "self.records.append(",  # keeping a JSON-lines log (audit trail, decisions)
        "is already served from",  # refusing a skill path served twice
        "exc.error.message if isinstance(exc, MCPError)",  # a failed request in words
    ],
)
def test_a_shared_piece_is_written_in_one_module(text: str) -> None:
    holders = [str(path.relative_to(SRC)) for path in SRC.rglob("*.py") if text in path.read_text(encoding="utf-8")]
    assert len(holders) == 1, holders


def test_nothing_outside_the_host_reaches_into_its_parts() -> None:
    """``Host`` answers what its users ask (``sessions``, ``tools()``, ``skills``...): code outside ``host/``
    never reads ``host.connections`` or ``host.registry`` (64 places did, and each was coupled to both)."""
    reaches = []
    for path in SRC.rglob("*.py"):
        if path.relative_to(SRC).parts[0] == "host":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ("connections", "registry")
                and ast.unparse(node.value).split(".")[-1] == "host"
            ):
                reaches.append(f"{path.relative_to(SRC)}:{node.lineno}: {ast.unparse(node)}")
    assert reaches == [], reaches


@pytest.mark.parametrize(
    ("modules", "absent"),
    [
        ("skilldeck.server", "numpy"),  # a server serving skills never ranks them
        ("skilldeck.cli", "numpy"),  # `skilldeck serve` starts without it: 16 MB of resident memory
        ("skilldeck.learning", "numpy"),  # the ledger names a card's past questions, it does not rank them
        ("skilldeck.select", "numpy"),  # the package itself: each name is imported when first asked for
    ],
)
def test_serving_and_the_cli_start_without_numpy(modules: str, absent: str) -> None:
    import subprocess
    import sys

    code = f"import sys, {modules}; print({absent!r} in sys.modules)"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert found.stdout.strip() == "False", f"importing {modules} loads {absent}"


def test_selection_still_loads_numpy_when_a_ranker_is_asked_for() -> None:
    import subprocess
    import sys

    code = "import sys; from skilldeck.select import Selector; print('numpy' in sys.modules)"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert found.stdout.strip() == "True"


ARCHITECTURE = SRC.parent.parent / "docs" / "architecture.md"


def _layout_blocks() -> dict[str, str]:
    """The architecture page's layout drawing, per package: its entry's text (continuation lines included)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    drawing = text.split("```\nsrc/skilldeck/\n", 1)[1].split("```", 1)[0]
    blocks: dict[str, str] = {}
    current = ""
    for line in drawing.splitlines():
        head = line[2:].split(" ", 1)[0] if line.startswith("  ") and not line.startswith("   ") else ""
        if head:
            current = head.rstrip("/")
            blocks[current] = line
        elif current:
            blocks[current] += "\n" + line
    return blocks


def _packages() -> list[Path]:
    return sorted(p for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists())


def _short(module: Path) -> str:
    """A module as the page names it: without its leading underscore (``__main__`` as it is)."""
    stem = module.stem
    return stem if stem.startswith("__") else stem.removeprefix("_")


@pytest.mark.parametrize("package", [p.name for p in _packages()])
def test_the_architecture_page_names_every_module_of_a_package(package: str) -> None:
    """The page's layout drawing names each module of ``package`` in that package's entry (a new module that
    the page does not name fails here: add it, with what it does, to docs/architecture.md)."""
    entry = _layout_blocks().get(package)
    assert entry is not None, f"docs/architecture.md's layout has no entry for {package}/"
    modules = [m for m in sorted((SRC / package).glob("*.py")) if m.name not in ("__init__.py", "_api.py")]
    unnamed = [m.name for m in modules if not re.search(rf"(?<![\w.]){re.escape(_short(m))}(?![\w])", entry)]
    assert not unnamed, f"docs/architecture.md's entry for {package}/ does not name {unnamed}"


def test_every_import_arrow_the_architecture_page_draws_exists() -> None:
    """``Imports point one way: a → b → ...``: each arrow is drawn because some module of the left side
    imports one of the right side; an arrow no import backs fails here (redraw it, or take it out)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    chain = re.search(r"Imports point one way: (.+?);", text, re.S)
    assert chain is not None, "docs/architecture.md no longer says which way imports point"
    sides = [re.findall(r"`(\w+)`", side) for side in chain.group(1).split("→")]
    assert len(sides) >= 2, sides
    assert all(sides), sides

    def files(names: list[str]) -> list[Path]:
        return [
            f for n in names for f in ([SRC / f"{n}.py"] if (SRC / f"{n}.py").exists() else (SRC / n).rglob("*.py"))
        ]

    missing = []
    for left, right in itertools.pairwise(sides):
        targets = tuple(f"skilldeck.{n}" for n in right)
        if not any(m == t or m.startswith(t + ".") for f in files(left) for m in imported_modules(f) for t in targets):
            missing.append(f"{'/'.join(left)} → {'/'.join(right)}")
    assert not missing, f"docs/architecture.md draws import arrows no import backs: {missing}"


@pytest.mark.parametrize("package", [p.name for p in _packages()])
def test_a_package_docstring_names_each_of_its_modules(package: str) -> None:
    """Each module of ``package`` is named in the package's docstring (as ``_module`` or ``module``): a new
    module says there what it does, next to the others."""
    tree = ast.parse((SRC / package / "__init__.py").read_text(encoding="utf-8"))
    doc = ast.get_docstring(tree) or ""
    modules = [m for m in sorted((SRC / package).glob("*.py")) if m.name != "__init__.py"]
    unnamed = [
        m.name
        for m in modules
        if not re.search(rf"(?<![\w]){re.escape(m.stem)}(?![\w])", doc) and f"``{_short(m)}``" not in doc
    ]
    assert not unnamed, f"src/skilldeck/{package}/__init__.py's docstring does not name {unnamed}"


FACE = "_api"
"""A package's face to its siblings: what another package may use of it beyond its public ``__all__``."""

ALLOWED_PRIVATE_IMPORTS: dict[tuple[str, str], str] = {}
"""``(importing module, imported private module)`` pairs allowed to bypass a face, each with its reason.

Empty: every package meets the others through ``skilldeck.x`` and ``skilldeck.x._api``."""


def _bypasses_a_face(package: str, name: str) -> bool:
    """Whether a module of ``package`` importing ``name`` reaches into another package's private module."""
    parts = name.split(".")
    if len(parts) < 3 or parts[0] != "skilldeck" or parts[1] == package:
        return False
    return any(part.startswith("_") for part in parts[2:]) and parts[2:] != [FACE]


def _cross_package_private_imports() -> list[tuple[str, str]]:
    """``(module, imported)`` for every import of another package's private module other than its face."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if len(rel.parts) < 2:
            continue  # the root's own modules: below every package
        importer = ".".join(("skilldeck", *rel.with_suffix("").parts)).removesuffix(".__init__")
        found += [(importer, n) for n in imported_modules(path, as_written=True) if _bypasses_a_face(rel.parts[0], n)]
    return found


def test_a_package_uses_another_only_through_its_faces() -> None:
    """Another package is imported as ``skilldeck.x`` (its public names) or ``skilldeck.x._api`` (what its
    siblings may use), never through one of its private modules: a module can then be split, renamed or
    merged inside its package without touching another. The root's ``skilldeck._*`` helpers are every
    package's (each package is inside the root). Fix a failure by importing from ``skilldeck.x._api``,
    adding the name to that face if it is not there."""
    bypassing = [pair for pair in _cross_package_private_imports() if pair not in ALLOWED_PRIVATE_IMPORTS]
    assert bypassing == [], bypassing
    stale = [pair for pair in ALLOWED_PRIVATE_IMPORTS if pair not in _cross_package_private_imports()]
    assert stale == [], f"allowed private imports no module makes any more (remove them): {stale}"


def test_an_import_through_a_private_module_is_told_apart_from_one_through_a_face(tmp_path: Path) -> None:
    """The check above reads what it should, from a gateway module: a face, a package, a public module and its
    own package's modules pass; another package's private module fails."""
    lines = {
        "from skilldeck.host._api import verify_bytes": [],
        "from skilldeck.host import Host": [],
        "from skilldeck.agents.langchain import SkillTools": [],
        "from skilldeck._records import JsonLinesLog": [],
        "from skilldeck.host._verify import verify_bytes": ["skilldeck.host._verify"],
        "from skilldeck.gateway._service import GatewayService": [],  # its own package's
        "import skilldeck.serving._policy": ["skilldeck.serving._policy"],
    }
    for line, expected in lines.items():
        module = tmp_path / "probe.py"
        module.write_text(line + "\n", encoding="utf-8")
        private = [n for n in imported_modules(module, as_written=True) if _bypasses_a_face("gateway", n)]
        assert private == expected, line


FACES = sorted(p.parent.name for p in SRC.glob(f"*/{FACE}.py"))


@pytest.mark.parametrize("package", FACES)
def test_a_face_gives_each_name_it_lists_and_only_what_a_sibling_uses(package: str) -> None:
    """Each name of ``skilldeck.<package>._api`` resolves, is not also public (one place per name), and is
    imported by some other package (a face lists what siblings use, not all a package has)."""
    import importlib

    face = importlib.import_module(f"skilldeck.{package}.{FACE}")
    public = set(getattr(importlib.import_module(f"skilldeck.{package}"), "__all__", []))
    for name in face.__all__:
        assert getattr(face, name) is not None, name
    assert not public & set(face.__all__), (
        f"public already, import it from skilldeck.{package}: {public & set(face.__all__)}"
    )
    used: set[str] = set()
    for path in SRC.rglob("*.py"):
        if path.relative_to(SRC).parts[0] == package:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == f"skilldeck.{package}.{FACE}":
                used.update(alias.name for alias in node.names)
    assert set(face.__all__) <= used, (
        f"no other package uses {sorted(set(face.__all__) - used)}: drop them from the face"
    )
