"""``skilldeck servers add|list|remove`` as a person runs it: from a terminal (a pty), or a script with ``--yes``."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from skilldeck.catalog import CatalogCache, read_entry

from .conftest import entry, package

CLI = [sys.executable, "-m", "skilldeck.cli"]
WEATHER = "io.github.example/weather"
SECRET = "k3y-8d2f4c1b"


def catalog_file(tmp_path: Path) -> Path:
    env = [
        {"name": "API_KEY", "isSecret": True, "isRequired": True, "description": "The service key"},
        {"name": "UNITS"},
    ]
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"servers": [entry(WEATHER, packages=[package(environmentVariables=env)])]}))
    return path


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SKILLDECK_HOME": str(tmp_path / "home"),
        "COLUMNS": "300",
        "NO_COLOR": "1",
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        [*CLI, *args], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, check=False
    )


def added(tmp_path: Path) -> dict[str, Any]:
    return json.loads((tmp_path / "home" / "added.json").read_text())["mcpServers"]


def test_a_script_adds_with_yes_and_set_and_the_list_names_secrets_never_their_values(tmp_path: Path) -> None:
    file = catalog_file(tmp_path)
    done = run(tmp_path, "servers", "add", WEATHER, "--registry-file", str(file), "--yes", "--set", f"API_KEY={SECRET}")
    assert done.returncode == 0, done.stderr
    assert "It runs, on this machine: npx -y @example/weather-mcp@1.2.3" in done.stdout
    assert "With environment: API_KEY (secret), UNITS" in done.stdout
    assert "added as 'weather'" in done.stdout
    assert SECRET not in done.stdout + done.stderr
    assert added(tmp_path)["weather"]["env"] == {"API_KEY": SECRET}
    listed = run(tmp_path, "servers", "list")
    assert "weather: io.github.example/weather 1.2.3" in listed.stdout
    assert "with: API_KEY (secret)" in listed.stdout
    assert SECRET not in listed.stdout
    assert run(tmp_path, "servers").stdout == listed.stdout  # `servers` alone lists
    removed = run(tmp_path, "servers", "remove", WEATHER)
    assert "removed 'weather'" in removed.stdout
    assert added(tmp_path) == {}
    assert "no added server is named 'weather'" in run(tmp_path, "servers", "remove", "weather").stderr


def test_a_label_may_be_chosen_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    file = catalog_file(tmp_path)
    done = run(
        tmp_path,
        "servers",
        "add",
        WEATHER,
        "--registry-file",
        str(file),
        "--yes",
        "--set",
        "API_KEY=k",
        "--label",
        "wx",
    )
    assert done.returncode == 0, done.stderr
    assert list(added(tmp_path)) == ["wx"]
    bad = run(tmp_path, "servers", "add", WEATHER, "--registry-file", str(file), "--yes", "--label", "../x")
    assert bad.returncode == 2
    assert "'../x' is not a label" in bad.stderr


def test_without_a_terminal_nothing_is_confirmed_so_nothing_is_added(tmp_path: Path) -> None:
    done = run(
        tmp_path, "servers", "add", WEATHER, "--registry-file", str(catalog_file(tmp_path)), "--set", "API_KEY=k"
    )
    assert done.returncode == 1
    assert "not a terminal, so nothing can be confirmed: pass --yes" in done.stderr
    assert not (tmp_path / "home" / "added.json").exists()


def test_a_required_input_missing_from_a_script_adds_nothing(tmp_path: Path) -> None:
    done = run(tmp_path, "servers", "add", WEATHER, "--registry-file", str(catalog_file(tmp_path)), "--yes")
    assert done.returncode == 6
    assert "API_KEY is required and was not given" in done.stderr
    assert not (tmp_path / "home" / "added.json").exists()


def test_by_default_the_catalogs_a_gateway_cached_are_read(tmp_path: Path) -> None:
    nothing = run(tmp_path, "servers", "add", WEATHER, "--yes")
    assert nothing.returncode == 1
    assert "no catalog is cached under" in nothing.stderr
    assert "--registry URL (or official), or --registry-file PATH" in nothing.stderr
    CatalogCache(tmp_path / "home" / "catalog").write(
        "https://registry.example.com", [read_entry(entry(WEATHER, packages=[package()]))]
    )
    done = run(tmp_path, "servers", "add", WEATHER, "--yes")
    assert done.returncode == 0, done.stderr
    assert "From: https://registry.example.com" in done.stdout
    missing = run(tmp_path, "servers", "add", WEATHER, "--version", "9.9.9", "--yes")
    assert "io.github.example/weather 9.9.9 is in none of the catalogs read (it has 1.2.3)" in missing.stderr


def test_what_nothing_here_can_run_is_refused_with_the_reason(tmp_path: Path) -> None:
    env = {**os.environ, "SKILLDECK_HOME": str(tmp_path / "home"), "PATH": str(tmp_path)}  # no npx anywhere
    bare = subprocess.run(
        [
            *CLI,
            "servers",
            "add",
            WEATHER,
            "--registry-file",
            str(catalog_file(tmp_path)),
            "--yes",
            "--set",
            "API_KEY=k",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert bare.returncode == 6
    assert "cannot be added here: it is an npm package and npx is not on the PATH" in bare.stderr


class Terminal:
    """The CLI on a pseudo-terminal: what it printed, and answers typed to its prompts."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        master, slave = os.openpty()
        env = {**os.environ, "SKILLDECK_HOME": str(tmp_path / "home"), "COLUMNS": "300", "NO_COLOR": "1"}
        self.proc = subprocess.Popen([*CLI, *args], stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
        os.close(slave)
        self.master = master
        self.seen = b""

    def until(self, text: str) -> None:
        deadline = time.monotonic() + 60  # a safety net: the prompt is waited for, not a time
        while text.encode() not in self.seen:
            assert time.monotonic() < deadline, self.seen.decode(errors="replace")
            ready, _, _ = select.select([self.master], [], [], 1)
            if ready:
                try:
                    self.seen += os.read(self.master, 4096)
                except OSError:
                    break

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\r")

    def finish(self) -> int:
        code = self.proc.wait(60)
        try:
            while chunk := os.read(self.master, 4096):
                self.seen += chunk
        except OSError:
            pass
        os.close(self.master)
        return code


@pytest.mark.parametrize(("answer", "code"), [("n", 6), ("y", 0)])
def test_a_person_is_asked_each_input_a_secret_without_echo_and_to_confirm(
    tmp_path: Path, answer: str, code: int
) -> None:
    term = Terminal(tmp_path, "servers", "add", WEATHER, "--registry-file", str(catalog_file(tmp_path)))
    term.until("API_KEY (secret) (required): ")
    term.type(SECRET)
    term.until("UNITS (Enter to leave it out): ")
    term.type("metric")
    term.until("Add it? [y/N] ")
    term.type(answer)
    assert term.finish() == code
    shown = term.seen.decode(errors="replace")
    assert SECRET not in shown  # typed without echo
    assert "metric" in shown  # an input that is no secret is echoed
    if answer == "n":
        assert "nothing was added" in shown
        assert not (tmp_path / "home" / "added.json").exists()
    else:
        assert added(tmp_path)["weather"]["env"] == {"API_KEY": SECRET, "UNITS": "metric"}
