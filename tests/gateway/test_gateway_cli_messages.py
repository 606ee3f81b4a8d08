"""What ``skilldeck gateway`` tells its operator on stderr: warnings at start, one line per event."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from skilldeck.cli import _build_parser
from skilldeck.cli._auth import serve_warnings
from skilldeck.cli._gateway import anonymous_learning

from ..server.helpers import start_gateway, stop, write_skill
from .test_gateway_config import JOBS, run_gateway, write

SHARED = "callers that send no conversation id (_meta dev.skilldeck/conversation) share one activation"


def test_the_gateway_over_http_without_tokens_warns_that_anonymous_callers_share_one_activation(
    tmp_path: Path,
) -> None:
    config = write(tmp_path / "servers.json", {"mcpServers": {"jobs": JOBS}})
    done = run_gateway("--config", str(config), "--http", "127.0.0.1:0", "--check")
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, done.stderr
    assert SHARED in warnings[0]
    assert "--jwt-jwks" in warnings[0]
    done = run_gateway("--config", str(config), "--check")  # stdio: one client, nothing shared
    assert done.returncode == 0, done.stderr
    assert "warning:" not in done.stderr


def test_the_shared_activation_warning_is_the_gateways_and_goes_with_token_verification() -> None:
    parse = _build_parser().parse_args
    http = ["--http", "127.0.0.1:0"]
    jwt = ["--jwt-jwks", "keys.json", "--jwt-issuer", "https://id", "--jwt-audience", "https://gw"]
    assert any(SHARED in w for w in serve_warnings(parse(["gateway", "--config", "c", *http]), gateway=True))
    assert serve_warnings(parse(["gateway", "--config", "c", *http, *jwt]), gateway=True) == []
    assert serve_warnings(parse(["serve", "skills", *http])) == []  # serve holds no activations


def test_learning_from_callers_without_a_token_is_off_unless_the_operator_lets_them_teach() -> None:
    parse = _build_parser().parse_args
    http = ["gateway", "--config", "c", "--http", "127.0.0.1:0"]
    jwt = ["--jwt-jwks", "keys.json", "--jwt-issuer", "https://id", "--jwt-audience", "https://gw"]

    def learning_lines(*extra: str) -> list[str]:
        return [w for w in serve_warnings(parse([*http, *extra]), gateway=True) if "teach" in w]

    (off,) = learning_lines()
    assert "learning from use is off for callers without a token" in off
    assert "--learn-anonymous" in off
    (untrusted,) = learning_lines("--learn-anonymous")
    assert "one untrusted caller" in untrusted
    assert learning_lines("--no-learning") == []
    assert learning_lines("--check") == []  # --check records nothing
    assert learning_lines(*jwt) == []  # every caller has a verified identity
    assert anonymous_learning(parse(["gateway", "--config", "c"])) == "trusted"  # stdio: the one local user
    assert anonymous_learning(parse(http)) == "off"
    assert anonymous_learning(parse([*http, "--learn-anonymous"])) == "untrusted"


def test_an_upstream_change_is_one_line_that_keeps_its_label(tmp_path: Path) -> None:
    """``[label]`` is markup to rich: the line must escape it, or it prints without the label."""
    pack = tmp_path / "pack"
    write_skill(pack, "alpha", "Alpha skill for the change line test.")
    deck = {"command": sys.executable, "args": ["-m", "skilldeck.cli", "serve", str(pack), "--watch"]}
    config = write(tmp_path / "servers.json", {"mcpServers": {"deck": deck}})
    log = tmp_path / "gateway.log"
    proc, _ = start_gateway(config, log)
    try:
        probe = 0
        deadline = time.monotonic() + 60
        while "changed: re-listed" not in log.read_text() and time.monotonic() < deadline:
            probe += 1  # until the upstream's watcher is armed, a write may go unseen: write again
            write_skill(pack, f"beta-{probe}", "Beta skill for the change line test.")
            time.sleep(0.5)
    finally:
        stop(proc)
    changed = [line for line in log.read_text().splitlines() if "changed: re-listed" in line]
    assert changed, log.read_text()
    assert changed[0].startswith("[deck] changed: re-listed ("), changed[0]
