"""What the README and the documentation must say the same way everywhere, checked against the source
of each fact: the system packages CI installs, and the desktop entry a new user copies."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
MACHINE_PAGES = [REPO / "README.md", DOCS / "getting-started.md", DOCS / "testing.md"]


def apt_packages() -> set[str]:
    """The Debian packages ``.ci/run`` installs for the tests (``apt_install FOR PACKAGE...``)."""
    found: set[str] = set()
    for line in (REPO / ".ci" / "run").read_text().splitlines():
        words = line.split()
        if words[:1] == ["apt_install"]:
            found.update(words[2:])
    return found


def test_every_system_package_the_suite_uses_is_named_where_a_new_user_looks() -> None:
    packages = apt_packages()
    assert {"redis-server", "haproxy", "chromium", "prometheus"} <= packages, packages
    for page in MACHINE_PAGES:
        text = page.read_text()
        missing = [p for p in sorted(packages) if f"`{p}`" not in text]
        assert not missing, f"{page.relative_to(REPO)} does not name {missing}"


def test_no_copyable_entry_starts_a_bare_skilldeck() -> None:
    """A desktop client's PATH holds no virtual environment: an entry must name skilldeck by its absolute path."""
    for page in [REPO / "README.md", *DOCS.rglob("*.md")]:
        text = page.read_text()
        assert not re.search(r'"command":\s*"skilldeck"', text), page.relative_to(REPO)


def test_the_entry_and_the_check_line_open_the_home_page_and_the_gateway_page() -> None:
    """The home page shows them before its table of pages; the gateway page in its first quarter (they were
    at 92% of it)."""
    for page, before in ((DOCS / "index.md", "| page | what it covers |"), (DOCS / "gateway.md", None)):
        text = page.read_text()
        limit = text.index(before) if before else len(text) // 4
        assert 0 <= text.find('"mcpServers"') < limit, page.name
        assert 0 <= text.find("--check") < limit, page.name
        assert re.search(r'"command": "/[^"]+/skilldeck"', text[:limit]), page.name


def test_the_readmes_copyable_python_imports_nothing_private() -> None:
    """A new user copies these blocks into their own code: they import only public modules."""
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)
    assert blocks
    for block in blocks:
        private = re.findall(r"^(?:from|import) (skilldeck\.\S*\._\w+)", block, flags=re.M)
        assert not private, private


def test_the_inspector_line_names_node_22_the_tested_inspector_and_a_method_that_lists_skills() -> None:
    """The Inspector the integration tests run (tests/integration/conftest.py), on the Node they run it on."""
    conftest = (REPO / "tests" / "integration" / "conftest.py").read_text()
    node = re.search(r'^NODE = "([^"]+)"', conftest, re.M)
    inspector = re.search(r'^INSPECTOR = "([^"]+)"', conftest, re.M)
    assert node
    assert inspector
    for page in (REPO / "README.md", DOCS / "skills-server.md"):
        lines = [line for line in page.read_text().splitlines() if "mcp-inspector --cli" in line]
        assert lines, page.name
        for line in lines:
            assert f"-p {node.group(1)} -p {inspector.group(1)} mcp-inspector" in line, line
            assert "--method skills/list -- skilldeck serve" in line, line


def test_each_history_a_figure_is_its_sources_and_says_what_it_counts() -> None:
    """Two counts of History A exist, each labelled where it is quoted: the library's (every schema rendered as an
    OpenAI tool: the demo, the gateway's history_a_tokens) and the selection benchmark's (each schema as bare JSON)."""
    import json

    from skilldeck.demo import livemcpbench_snapshot
    from skilldeck.select._cards import build_cards
    from skilldeck.select._project import history_a

    rendered = history_a(build_cards(livemcpbench_snapshot())).tokens
    bench = json.loads((REPO / "bench" / "results" / "selection.json").read_text())
    bare = bench["modes"]["semantic"]["tokens"]["history_a"]
    assert (rendered, bare) == (108_953, 102_666)
    index, gateway = (DOCS / "index.md").read_text(), (DOCS / "gateway.md").read_text()
    assert f"{bare:,} tokens: the selection benchmark's count" in index
    assert (
        f"rendered as OpenAI tools, as `skilldeck demo` and the gateway's\n  `history_a_tokens` count them, {rendered:,}"
        in index
    )
    assert f"{rendered:,} for every schema rendered as OpenAI tools" in gateway
    assert "each as bare JSON) | 102,666 | 102,666 |" in (DOCS / "benchmarks" / "selection.md").read_text()
    readme = (REPO / "README.md").read_text()
    flat = " ".join(readme.split())
    assert "schemas) it is 109,836 tokens against 798 for History B" in flat  # with the demo's 3 servers' 884 tokens
    assert "as bare JSON instead, 102,666 tokens" in flat


def test_the_mutation_count_quoted_is_the_last_full_runs() -> None:
    import json

    ran = len(json.loads((REPO / "tools" / "results" / "mutation.json").read_text())["mutations"])
    for page in (DOCS / "testing.md", DOCS / "benchmarks" / "testing.md"):
        text = " ".join(page.read_text().split())
        assert f"the last full run below counted {ran}" in text or f"the last full run counted {ran}" in text, page
        assert not re.search(r"mutations \(\d+ today\)", text), page  # a count said as today's goes stale
