"""A whole machine's client files, laid out in a temporary home from the fixtures (never the user's own)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from skilldeck.clients import client_named, locate

FIXTURES = Path(__file__).parent / "fixtures"

LAYOUT = {
    ("claude-desktop", "user"): "claude_desktop_config.json",
    ("claude-code", "user"): "claude.json",
    ("claude-code", "project"): "mcp.json",
    ("cursor", "user"): "cursor_mcp.json",
    ("cursor", "project"): "cursor_project_mcp.json",
    ("vscode", "user"): "vscode_mcp.json",
    ("vscode", "project"): "vscode_project_mcp.json",
    ("windsurf", "user"): "windsurf_mcp_config.json",
    ("gemini-cli", "user"): "gemini_settings.json",
    ("codex", "user"): "codex_config.toml",
    ("goose", "user"): "goose_config.yaml",
    ("zed", "user"): "zed_settings.json",
}
"""Each fixture, and the client and scope whose file it is (Claude Code's local scope is inside claude.json)."""

SECRETS = [
    "ghp_desktopSECRET123",
    "ghp_cursorSECRET456",
    "vscode-SECRET-key",
    "figd_windsurfSECRET",
    "gemini-SECRET-789",
    "hvs.codexSECRET",
    "goose-SECRET-abc",
    "zed-legacy-SECRET",
    "ghp_zedSECRET",
]
"""Every secret the fixtures hold in env or headers: no output may show one."""

CONNECTIONS = [(client, scope) for client, scope in LAYOUT] + [("claude-code", "local")]


@dataclass
class Machine:
    home: Path
    project: Path

    def path(self, client: str, scope: str) -> Path:
        found = client_named(client)
        assert found is not None
        return Path(
            locate(found, scope, system="linux", home=str(self.home), environ={}, project=str(self.project)).path
        )

    def files(self) -> dict[Path, bytes]:
        """Every file under the home and the project, with its bytes."""
        return {p: p.read_bytes() for root in (self.home, self.project) for p in sorted(root.rglob("*")) if p.is_file()}

    @property
    def upstreams(self) -> Path:
        return self.home / ".config" / "skilldeck" / "upstreams.json"


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Machine:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "APPDATA"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SKILLDECK_HOME", str(tmp_path / "state"))  # this test's own connections and copies
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.chdir(project)
    found = Machine(home, project)
    for (client, scope), fixture in LAYOUT.items():
        path = found.path(client, scope)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((FIXTURES / fixture).read_bytes().replace(b"{{PROJECT}}", str(project).encode()))
    return found
