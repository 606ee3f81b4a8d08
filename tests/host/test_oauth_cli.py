"""OAuth 2.1 upstreams from the outside: the real ``skilldeck login`` / ``logout`` / ``gateway --check`` processes
against a real authorization server and protected MCP server on loopback (:mod:`tests.host.oauth_server`).

The test plays the browser: it GETs the URL ``login --no-browser`` prints, and follows the
authorization server's redirect to the login's loopback listener. What the authorization server
does next (expire the access tokens, revoke everything) is switched by the test, never waited for.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from ..server.helpers import CLI, REPO, cli_env, start_gateway, stop
from .hostile_http import Receive, Scope, Send, read_body, serving_in_thread
from .oauth_server import MACHINE_ID, MACHINE_SECRET, Provider, oauth_server

WAIT = 60.0


@pytest.fixture
def provider() -> Provider:
    found = Provider()
    found.add_machine_client()
    return found


@pytest.fixture
def url(provider: Provider) -> Iterator[str]:
    with oauth_server(provider) as found:
        yield found


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def env(home: Path, **extra: str) -> dict[str, str]:
    return cli_env(SKILLDECK_HOME=str(home), SKILLDECK_KEYRING="0", **extra)


def write_config(tmp_path: Path, servers: dict[str, object]) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def run(home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env(home, **extra),
        timeout=120,
    )


def browse(authorization_url: str) -> httpx2.Response:
    """What a browser does: the authorization server approves at once and redirects to the listener."""
    approved = httpx2.get(authorization_url, follow_redirects=False, timeout=WAIT)
    assert approved.status_code in (302, 303), approved.text
    return httpx2.get(approved.headers["location"], follow_redirects=False, timeout=WAIT)


def login(home: Path, config: Path, label: str = "remote") -> tuple[subprocess.CompletedProcess[str], httpx2.Response]:
    """``skilldeck login LABEL --config FILE --no-browser``, the test as its browser."""
    process = subprocess.Popen(
        [*CLI, "login", label, "--config", str(config), "--no-browser", "--timeout", str(WAIT)],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(home),
    )
    assert process.stderr is not None
    said: list[str] = []
    try:
        for line in process.stderr:
            said.append(line)
            if line.startswith("http://"):
                answer = browse(line.strip())
                break
        else:
            pytest.fail("login printed no URL:\n" + "".join(said), pytrace=False)
        out, rest = process.communicate(timeout=WAIT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return subprocess.CompletedProcess(process.args, process.returncode, out, "".join(said) + rest), answer


def check(home: Path, config: Path) -> subprocess.CompletedProcess[str]:
    return run(home, "gateway", "--config", str(config), "--check")


def test_login_use_refresh_revoke_logout(tmp_path: Path, url: str, provider: Provider, home: Path) -> None:
    config = write_config(tmp_path, {"remote": {"url": url}})
    command = f"skilldeck login remote --config {config}"

    before = check(home, config)
    assert before.returncode == 3, before.stderr
    assert f"unavailable [remote]: needs a login (no stored tokens): run {command}" in before.stdout + before.stderr
    assert provider.registrations == 0  # serving never registers a client: that is the login's to do

    done, page = login(home, config)
    assert done.returncode == 0, done.stderr
    assert page.status_code == 200
    assert "Logged in" in page.text
    assert f"logged in to remote; tokens stored in {home / 'credentials'}" in done.stderr
    assert (provider.registrations, provider.authorizations) == (1, 1)
    folder = home / "credentials"
    (stored,) = folder.iterdir()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    record = json.loads(stored.read_text())
    assert record["server"] == url
    assert record["tokens"]["access_token"].startswith("at-")

    after = check(home, config)
    assert after.returncode == 0, after.stderr
    assert "remote: " in after.stdout
    assert "unavailable" not in after.stdout + after.stderr

    provider.expire_access_tokens()  # refused from now on: the refresh token gets new ones, silently
    refreshed = check(home, config)
    assert refreshed.returncode == 0, refreshed.stderr
    assert provider.refreshes == 1
    assert json.loads(stored.read_text())["tokens"]["access_token"] != record["tokens"]["access_token"]

    provider.revoke_all()
    revoked = check(home, config)
    assert revoked.returncode == 3
    assert (
        f"unavailable [remote]: needs a login (the refresh token was refused (HTTP 400)): run {command}"
        in revoked.stdout + revoked.stderr
    )
    assert "Token refresh failed" not in revoked.stderr  # said once, in the reason

    out = run(home, "logout", "remote", "--config", str(config))
    assert out.returncode == 0, out.stderr
    assert "logged out of remote" in out.stderr
    assert not list(folder.iterdir())
    again = check(home, config)
    assert "needs a login (no stored tokens)" in again.stdout + again.stderr
    assert "no tokens were stored for remote" in run(home, "logout", "remote", "--config", str(config)).stderr


def test_a_running_gateway_takes_up_a_login_made_in_another_terminal(
    tmp_path: Path, url: str, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_config(tmp_path, {"remote": {"url": url}})
    monkeypatch.setenv("SKILLDECK_HOME", str(home))  # the gateway's environment: the home the login stores into
    log = tmp_path / "gateway.log"
    proc, _ = start_gateway(config, log)
    try:
        said = log.read_text()
        assert (
            f"unavailable [remote] needs a login (no stored tokens): run skilldeck login remote --config {config}"
            in said
        )
        done, _ = login(home, config)
        assert done.returncode == 0, done.stderr
        deadline = time.monotonic() + WAIT
        while "[remote] back: 1 tool" not in log.read_text():
            assert time.monotonic() < deadline, "the gateway never took up the login; its log:\n" + log.read_text()
            time.sleep(0.2)
    finally:
        stop(proc)


def test_client_credentials_entry_needs_no_login(tmp_path: Path, url: str, provider: Provider, home: Path) -> None:
    config = write_config(
        tmp_path,
        {
            "machine": {
                "url": url,
                "oauth": {"grant": "client_credentials", "clientId": MACHINE_ID, "clientSecret": "${MACHINE_SECRET}"},
            }
        },
    )
    done = run(home, "gateway", "--config", str(config), "--check", MACHINE_SECRET=MACHINE_SECRET)
    assert done.returncode == 0, done.stderr
    assert provider.machine_grants == 1
    assert provider.authorizations == 0
    assert MACHINE_SECRET not in done.stdout + done.stderr

    refused = run(home, "login", "machine", "--config", str(config), MACHINE_SECRET=MACHINE_SECRET)
    assert refused.returncode == 1
    assert "logs in with client credentials by itself" in refused.stderr


def test_an_entry_with_oauth_off_is_not_logged_in(tmp_path: Path, url: str, provider: Provider, home: Path) -> None:
    config = write_config(tmp_path, {"remote": {"url": url, "oauth": False}})
    done = check(home, config)
    assert done.returncode == 3
    assert "needs a login" not in done.stdout + done.stderr
    refused = run(home, "login", "remote", "--config", str(config))
    assert refused.returncode == 1
    assert "has OAuth turned off" in refused.stderr


def test_login_names_the_labels_it_knows(tmp_path: Path, url: str, home: Path) -> None:
    config = write_config(tmp_path, {"remote": {"url": url}})
    done = run(home, "login", "other", "--config", str(config))
    assert done.returncode == 1
    assert "has no server 'other' (labels: remote)" in done.stderr


@pytest.fixture
def planted() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A token endpoint nobody named (another local user's): its URL, and each request it got (headers, body)."""
    got: list[dict[str, str]] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = await read_body(receive)
        got.append({**{k.decode(): v.decode() for k, v in scope["headers"]}, "body": body.decode()})
        answer = {"access_token": "planted", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "planted"}
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps(answer).encode()})

    with serving_in_thread(app, "/token") as endpoint:
        yield endpoint, got


def moved_and_expired(stored: Path, endpoint: str) -> None:
    """Rewrite a stored record as a neighbour would: its token endpoint ``endpoint``, its token expired."""
    record = json.loads(stored.read_text())
    record["metadata"]["authorization_server"]["token_endpoint"] = endpoint
    record["expires_at"] = 1.0
    stored.write_text(json.dumps(record))


def test_a_refresh_goes_only_to_the_token_endpoint_the_servers_metadata_names(
    tmp_path: Path, url: str, provider: Provider, home: Path, planted: tuple[str, list[dict[str, str]]]
) -> None:
    """After a real login, the record (still the user's own, mode 0600) names another token endpoint and an
    expired token: the refresh goes where the server's metadata says, found again, and the record is
    put right; the planted endpoint is sent nothing (it was sent the refresh token and used its answer)."""
    endpoint, got = planted
    config = write_config(tmp_path, {"remote": {"url": url}})
    done, _ = login(home, config)
    assert done.returncode == 0, done.stderr
    (stored,) = (home / "credentials").iterdir()
    real = json.loads(stored.read_text())["metadata"]["authorization_server"]["token_endpoint"]
    moved_and_expired(stored, endpoint)
    provider.expire_access_tokens()
    refreshed = check(home, config)
    assert got == [], got
    assert refreshed.returncode == 0, refreshed.stdout + refreshed.stderr
    assert provider.refreshes == 1
    assert f"the stored token endpoint of remote ({endpoint}) is not the one its authorization server names" in (
        refreshed.stderr
    )
    assert json.loads(stored.read_text())["metadata"]["authorization_server"]["token_endpoint"] == real


@pytest.mark.parametrize(("folder_mode", "file_mode"), [(0o777, 0o600), (0o700, 0o666)])
def test_a_record_others_could_write_is_refused_through_the_cli_and_nothing_is_sent(
    tmp_path: Path,
    url: str,
    provider: Provider,
    home: Path,
    planted: tuple[str, list[dict[str, str]]],
    folder_mode: int,
    file_mode: int,
) -> None:
    endpoint, got = planted
    config = write_config(tmp_path, {"remote": {"url": url}})
    done, _ = login(home, config)
    assert done.returncode == 0, done.stderr
    (stored,) = (home / "credentials").iterdir()
    moved_and_expired(stored, endpoint)
    stored.chmod(file_mode)
    stored.parent.chmod(folder_mode)
    refused = check(home, config)
    assert got == [], got
    assert provider.refreshes == 0
    assert refused.returncode == 3, refused.stdout + refused.stderr
    said = refused.stdout + refused.stderr
    fix = f"chmod 700 {stored.parent}" if folder_mode != 0o700 else f"chmod 600 {stored}"
    assert fix in said, said


pytestmark = pytest.mark.skipif(sys.platform == "win32" or os.name != "posix", reason="file modes are POSIX")
