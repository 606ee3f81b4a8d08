"""What ``skilldeck gateway`` tells its operator on stderr: warnings at start, one line per event."""

from __future__ import annotations

from pathlib import Path

from skilldeck.cli import _build_parser
from skilldeck.cli.auth import serve_warnings

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
