"""``skilldeck clients`` from the outside: every client's file connected, connected again, and put back
byte for byte; dry runs, secrets, edited files, stacked scopes, bounds and races."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from skilldeck.cli import main
from skilldeck.clients._state import MAX_CONNECTIONS, MAX_FILE_BYTES, Connections, read_bytes, write_bytes
from skilldeck.errors import ClientFileError

from .conftest import CONNECTIONS, SECRETS, Machine


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def scope_args(client: str, scope: str) -> list[str]:
    return [client, "--scope", scope]


def test_every_client_connects_reconnects_as_a_no_op_and_disconnects_byte_for_byte(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    before = machine.files()
    modes = {p: stat.S_IMODE(p.stat().st_mode) for p in before}
    for client, scope in CONNECTIONS:
        code, out = run(capsys, "clients", "connect", *scope_args(client, scope))
        assert code == 0, out
        text = machine.path(client, scope).read_text()
        assert "gateway" in text, (client, scope, text)
        assert str(machine.upstreams) in text
    connected = machine.files()
    for client, scope in CONNECTIONS:
        code, out = run(capsys, "clients", "connect", *scope_args(client, scope))
        assert code == 0, out
        assert "connected already: nothing to change" in out, (client, scope, out)
    assert machine.files() == connected  # idempotent: not a byte moved
    upstreams = json.loads(machine.upstreams.read_text())["mcpServers"]
    assert stat.S_IMODE(machine.upstreams.stat().st_mode) == 0o600
    for client, scope in reversed(CONNECTIONS):
        code, out = run(capsys, "clients", "disconnect", *scope_args(client, scope))
        assert code == 0, out
    after = machine.files()
    after.pop(machine.upstreams)
    assert after == before
    assert {p: stat.S_IMODE(p.stat().st_mode) for p in after} == modes
    # each server once, however many clients listed it (github: 4 clients; time: cursor's user and zed's)
    assert sorted(upstreams) == [
        *["api", "context7", "db", "docs", "fetch", "figma", "filesystem", "github", "httpServer", "legacy"],
        *["linear", "local-tool", "memory", "pythonTools", "remote", "secrets", "sentry", "sseServer", "time"],
        "time-cursor",
    ]


def test_the_written_entries_in_each_format_as_their_clients_read_them(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    for client, scope in CONNECTIONS:
        assert run(capsys, "clients", "connect", *scope_args(client, scope))[0] == 0
    codex = machine.path("codex", "user").read_text()
    assert codex.startswith('# Codex CLI configuration\nmodel = "gpt-5-codex"\napproval_policy = "on-request"  # ask')
    assert "[mcp_servers.skilldeck]\ncommand = " in codex
    assert "[mcp_servers.chrome]" in codex  # its tool filter keeps it in Codex
    goose = machine.path("goose", "user").read_text()
    assert "  developer:\n    bundled: true\n" in goose
    assert "  skilldeck:\n    name: skilldeck\n    type: stdio\n    cmd: /" in goose
    assert "    env_keys:\n    - GITHUB_PERSONAL_ACCESS_TOKEN\n" in goose
    vscode = machine.path("vscode", "user").read_text()
    assert "// Inputs are prompted on first server start" in vscode
    assert '"Perplexity": {' in vscode
    assert '"skilldeck": {\n      "type": "stdio",\n      "command": "/' in vscode
    zed = machine.path("zed", "user").read_text()
    assert zed.startswith("// Zed settings\n//\n")
    assert '"mcp-server-github": {\n      "source": "extension"' in zed
    claude = json.loads(machine.path("claude-code", "user").read_text())
    assert claude["numStartups"] == 42
    assert set(claude["mcpServers"]) == {"skilldeck"}
    project = claude["projects"][str(machine.project)]
    assert set(project["mcpServers"]) == {"helper", "skilldeck"}  # headersHelper keeps it in Claude Code
    assert project["hasTrustDialogAccepted"] is True
    desktop = json.loads(machine.path("claude-desktop", "user").read_text())
    command = desktop["mcpServers"]["skilldeck"]["command"]
    assert os.path.isabs(command)
    assert Path(command).name == "skilldeck" or desktop["mcpServers"]["skilldeck"]["args"][:2] == [
        "-m",
        "skilldeck.cli",
    ]
    upstreams = json.loads(machine.upstreams.read_text())["mcpServers"]
    assert upstreams["local-tool"]["cwd"] == str(machine.project)
    assert upstreams["memory"]["env"] == {"MEMORY_FILE_PATH": f"{machine.project}/.memory.json"}
    assert upstreams["time-cursor"] == {"command": "uvx", "args": ["mcp-server-time"]}


def test_a_dry_run_shows_every_change_writes_nothing_and_prints_no_secret(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    before = machine.files()
    state = Path(os.environ["SKILLDECK_HOME"])
    for client, scope in CONNECTIONS:
        code, out = run(capsys, "clients", "connect", *scope_args(client, scope), "--dry-run")
        assert code == 0, out
        assert f"+++ {machine.path(client, scope)}" in out
        assert f"+++ {machine.upstreams}" in out
        assert "--dry-run: nothing was written (2 files would change)" in out
        assert not [s for s in SECRETS if s in out], out
    assert machine.files() == before
    assert not (state / "clients" / "connections.json").exists()
    code, out = run(capsys, "clients")
    assert code == 0
    assert not [s for s in SECRETS if s in out], out
    code, out = run(capsys, "clients", "--json")
    assert not [s for s in SECRETS if s in out]
    listed = {(row["client"], row["scope"]): row for row in json.loads(out)["clients"]}
    assert set(listed) == set(CONNECTIONS)
    assert [s["kind"] for s in listed[("vscode", "user")]["servers"]] == ["kept", "stdio", "http"]


def test_connecting_says_where_the_secrets_went_and_never_shows_them(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(capsys, "clients", "connect", "codex")
    assert code == 0
    assert f"secrets (env, headers) of figma, secrets are now in {machine.upstreams} (mode 0600)" in out
    assert "keeps chrome in the client: 'enabled_tools' limits which of its tools" in out
    assert "moves figma into the upstreams file" in out
    assert "figma is an HTTP server" not in out  # it sends its own Authorization header
    assert "hvs.codexSECRET" not in out
    assert "hvs.codexSECRET" in machine.upstreams.read_text()
    assert stat.S_IMODE(machine.upstreams.stat().st_mode) == 0o600
    copies = list((Path(os.environ["SKILLDECK_HOME"]) / "clients").glob("*.orig"))
    assert [stat.S_IMODE(c.stat().st_mode) for c in copies] == [0o600]


def test_disconnect_refuses_a_file_edited_since_and_force_keeps_the_edit(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    original = machine.path("cursor", "user").read_bytes()
    assert run(capsys, "clients", "connect", "cursor")[0] == 0
    edited = machine.path("cursor", "user").read_bytes().replace(b'"mcpServers"', b'"theme": 1, "mcpServers"')
    machine.path("cursor", "user").write_bytes(edited)
    code, out = run(capsys, "clients", "disconnect", "cursor")
    assert code == 1
    assert "was edited since `clients connect`" in out
    assert "--force to restore anyway" in out
    assert machine.path("cursor", "user").read_bytes() == edited
    code, out = run(capsys, "clients", "disconnect", "cursor", "--dry-run")
    assert code == 1  # a dry run does not pass the guard either
    code, out = run(capsys, "clients", "disconnect", "cursor", "--force")
    assert code == 0, out
    assert machine.path("cursor", "user").read_bytes() == original
    kept = list((Path(os.environ["SKILLDECK_HOME"]) / "clients").glob("*.edited"))
    assert [k.read_bytes() for k in kept] == [edited]
    code, out = run(capsys, "clients", "disconnect", "cursor")
    assert code == 1
    assert "no connect of cursor (user) is recorded" in out


def test_two_scopes_in_one_file_are_undone_last_first(machine: Machine, capsys: pytest.CaptureFixture[str]) -> None:
    original = machine.path("claude-code", "user").read_bytes()
    assert run(capsys, "clients", "connect", "claude-code")[0] == 0
    assert run(capsys, "clients", "connect", "claude-code", "--scope", "local")[0] == 0
    code, out = run(capsys, "clients", "disconnect", "claude-code")
    assert code == 1
    assert "changed after this by `clients connect claude-code --scope local`; disconnect that first" in out
    assert run(capsys, "clients", "disconnect", "claude-code", "--scope", "local")[0] == 0
    assert run(capsys, "clients", "disconnect", "claude-code")[0] == 0
    assert machine.path("claude-code", "user").read_bytes() == original


def test_a_file_connect_made_is_removed_by_disconnect(machine: Machine, capsys: pytest.CaptureFixture[str]) -> None:
    path = machine.path("gemini-cli", "project")
    assert not path.exists()
    code, out = run(capsys, "clients", "connect", "gemini-cli", "--scope", "project")
    assert code == 0, out
    assert json.loads(path.read_text())["mcpServers"]["skilldeck"]["args"][0] == "gateway"
    assert run(capsys, "clients", "disconnect", "gemini-cli", "--scope", "project")[0] == 0
    assert not path.exists()


def test_a_linked_client_file_stays_a_link(machine: Machine, capsys: pytest.CaptureFixture[str]) -> None:
    path = machine.path("windsurf", "user")
    target = machine.home / "dotfiles" / "windsurf.json"
    target.parent.mkdir()
    path.rename(target)
    path.symlink_to(target)
    original = target.read_bytes()
    assert run(capsys, "clients", "connect", "windsurf")[0] == 0
    assert path.is_symlink()
    assert "skilldeck" in target.read_text()
    assert run(capsys, "clients", "disconnect", "windsurf")[0] == 0
    assert path.is_symlink()
    assert target.read_bytes() == original


def test_what_cannot_be_connected_is_refused_with_what_to_do(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(capsys, "clients", "connect", "cursr")
    assert code == 1
    assert "no client 'cursr' (did you mean 'cursor'?)" in out
    code, out = run(capsys, "clients", "connect", "windsurf", "--scope", "project")
    assert code == 1
    assert "windsurf has no project scope; it has user" in out
    (machine.home / ".codeium").rename(machine.home / "elsewhere")
    code, out = run(capsys, "clients", "connect", "windsurf")
    assert code == 1
    assert "Windsurf does not look installed here" in out
    machine.path("cursor", "user").write_text(
        '{"mcpServers": {"gw": {"command": "skilldeck", "args": ["gateway", "--config", "/x.json"]}}}'
    )
    code, out = run(capsys, "clients", "connect", "cursor")
    assert code == 1
    assert "starts a skilldeck gateway on /x.json; connect with --upstreams /x.json" in out
    code, out = run(capsys, "clients", "connect", "cursor", "--upstreams", str(machine.path("cursor", "user")))
    assert code == 1
    assert "is Cursor's own file; name another file" in out
    machine.path("zed", "user").write_text("{ not json")
    code, out = run(capsys, "clients", "connect", "zed")
    assert code == 1
    assert "settings.json: line 1 column 3: a quoted key or '}' was expected; fix the file" in out


# -- the state's bounds and guards -----------------------------------------------------------------


def test_a_client_file_is_read_up_to_its_bound(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b" " * MAX_FILE_BYTES)
    assert read_bytes(str(path)) is not None
    path.write_bytes(b" " * (MAX_FILE_BYTES + 1))
    with pytest.raises(ClientFileError, match="larger than 16 MiB"):
        read_bytes(str(path))


def test_a_file_changed_between_reading_and_writing_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(b"{}")
    read = read_bytes(str(path))
    path.write_bytes(b'{"the client": "wrote this meanwhile"}')
    with pytest.raises(ClientFileError, match="changed while this ran"):
        write_bytes(str(path), b'{"ours": 1}', expected=read, private=False)
    assert path.read_bytes() == b'{"the client": "wrote this meanwhile"}'
    with pytest.raises(ClientFileError, match="changed while this ran"):
        write_bytes(str(tmp_path / "new.json"), b"{}", expected=b"{}", private=False)  # it was expected to exist


def test_connections_are_bounded(tmp_path: Path) -> None:
    state = Connections(tmp_path)
    record = state.record(client="cursor", scope="user", path="/p", upstreams="/u", written="", backup=None, mode=None)
    state.save([record] * MAX_CONNECTIONS)
    assert len(state.load()) == MAX_CONNECTIONS
    with pytest.raises(ClientFileError, match=f"more than {MAX_CONNECTIONS}; disconnect some first"):
        state.save([record] * (MAX_CONNECTIONS + 1))
    (tmp_path / "clients" / "connections.json").write_text('{"version": 2, "connections": []}')
    with pytest.raises(ClientFileError, match="of another version"):
        state.load()


def test_one_process_at_a_time_holds_the_state(tmp_path: Path) -> None:
    import fcntl

    state = Connections(tmp_path)
    with state.locked():
        probe = os.open(tmp_path / "clients" / "lock", os.O_RDWR)
        with pytest.raises(BlockingIOError):
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another open of the lock, as another process has
    fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released when the block ends
    os.close(probe)
