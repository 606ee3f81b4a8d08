"""OAuth 2.1 in the host, in process: the ``oauth`` entry, the credential stores, the login's loopback
listener, re-registration, refresh after a restart, and a login nobody completes."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.to_thread
import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from skilldeck.errors import ConfigError, CredentialStoreError, LoginFailed
from skilldeck.host._config import HttpServer, OAuthSettings, parse_config
from skilldeck.host._connect import Connections, connect_once
from skilldeck.host._credentials import FileStore, KeyringStore, default_store
from skilldeck.host._oauth import login, login_command

from .oauth_server import SCOPE, Provider, oauth_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def provider() -> Provider:
    return Provider()


@pytest.fixture
def url(provider: Provider) -> Iterator[str]:
    with oauth_server(provider) as found:
        yield found


def spec_of(entry: dict[str, Any], environ: dict[str, str] | None = None) -> Any:
    (spec,) = parse_config({"mcpServers": {"remote": entry}}, environ=environ or {})
    return spec


# -- the entry ----------------------------------------------------------------------------------------


def test_http_entries_get_oauth_on_demand_and_can_turn_it_off() -> None:
    assert spec_of({"url": "https://x.example/mcp"}).transport.oauth == OAuthSettings()
    assert spec_of({"url": "https://x.example/mcp", "oauth": False}).transport.oauth is None
    tuned = spec_of(
        {"url": "https://x.example/mcp", "oauth": {"scope": "read write", "clientId": "c", "callbackPort": 8765}}
    )
    assert tuned.transport.oauth == OAuthSettings(scope="read write", client_id="c", callback_port=8765)


def test_a_client_secret_from_the_environment_is_redacted() -> None:
    spec = spec_of(
        {
            "url": "https://x.example/mcp",
            "oauth": {"grant": "client_credentials", "clientId": "c", "clientSecret": "${S}"},
        },
        {"S": "very-secret-value"},
    )
    assert spec.transport.oauth.client_secret == "very-secret-value"
    assert "very-secret-value" not in repr(spec)
    assert spec.redact("said very-secret-value") == "said ${S}"


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"url": "https://x/mcp", "oauth": {"scopes": "a"}}, "mcpServers.remote.oauth: unknown key 'scopes' (expected"),
        ({"url": "https://x/mcp", "oauth": {"grant": "password"}}, "'authorization_code' or 'client_credentials'"),
        ({"url": "https://x/mcp", "oauth": {"grant": "client_credentials"}}, "needs 'clientId' and 'clientSecret'"),
        ({"url": "https://x/mcp", "oauth": {"clientSecret": "s"}}, "'clientSecret' needs the 'clientId'"),
        ({"command": "x", "oauth": {}}, "'oauth' is for an HTTP server"),
        ({"url": "https://x/mcp", "oauth": {"clientMetadataUrl": "http://a/b"}}, "an https:// URL with a path"),
        (
            {"url": "https://x/mcp", "headers": {"Authorization": "Bearer t"}, "oauth": {}},
            "has an Authorization header already",
        ),
    ],
)
def test_a_wrong_oauth_entry_is_refused_saying_why(entry: dict[str, Any], said: str) -> None:
    with pytest.raises(ConfigError) as caught:
        spec_of(entry)
    assert said in str(caught.value)


def test_the_login_command_names_the_config_file(tmp_path: Path) -> None:
    path = tmp_path / "my config.json"
    path.write_text(json.dumps({"mcpServers": {"remote": {"url": "https://x.example/mcp"}}}))
    from skilldeck.host._config import load_config

    (spec,) = load_config(path)
    assert login_command(spec) == f"skilldeck login remote --config '{path}'"
    assert login_command(spec_of({"url": "https://x.example/mcp"})) == "skilldeck login https://x.example/mcp"


# -- the stores ---------------------------------------------------------------------------------------


def test_file_store_keeps_private_files(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "home")
    assert store.load("https://a/mcp") is None
    store.save("https://a/mcp", {"tokens": {"access_token": "t"}})
    path = store.path("https://a/mcp")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert store.load("https://a/mcp") == {"tokens": {"access_token": "t"}, "server": "https://a/mcp"}
    assert store.load("https://b/mcp") is None
    path.write_text(json.dumps({"server": "https://other/mcp", "tokens": {}}))
    assert store.load("https://a/mcp") is None  # another server's record under this name is not used
    assert store.delete("https://a/mcp")
    assert not store.delete("https://a/mcp")


def test_file_store_makes_a_shared_folder_private(tmp_path: Path) -> None:
    folder = tmp_path / "home" / "credentials"
    folder.mkdir(parents=True, mode=0o755)
    folder.chmod(0o755)
    FileStore(tmp_path / "home").save("https://a/mcp", {})
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def _planted(tmp_path: Path, folder_mode: int, file_mode: int) -> FileStore:
    """A record saved by a real login, then its folder's and file's modes changed."""
    store = FileStore(tmp_path / "home")
    store.save("https://a/mcp", {"tokens": {"access_token": "t"}})
    store.path("https://a/mcp").chmod(file_mode)
    store.folder.chmod(folder_mode)
    return store


@pytest.mark.parametrize(("folder_mode", "file_mode"), [(0o700, 0o600), (0o755, 0o644), (0o700, 0o400)])
def test_a_record_only_its_user_can_write_is_used(tmp_path: Path, folder_mode: int, file_mode: int) -> None:
    store = _planted(tmp_path, folder_mode, file_mode)
    assert store.load("https://a/mcp") == {"tokens": {"access_token": "t"}, "server": "https://a/mcp"}


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
@pytest.mark.parametrize(
    ("folder_mode", "file_mode", "what", "mode"),
    [
        (0o777, 0o600, "folder", "777"),
        (0o720, 0o600, "folder", "720"),  # group-writable is enough
        (0o702, 0o600, "folder", "702"),
        (0o700, 0o666, "file", "666"),
        (0o700, 0o620, "file", "620"),
        (0o700, 0o602, "file", "602"),
    ],
)
def test_a_record_others_could_write_is_refused_with_how_to_fix_it(
    tmp_path: Path, folder_mode: int, file_mode: int, what: str, mode: str
) -> None:
    store = _planted(tmp_path, folder_mode, file_mode)
    with pytest.raises(CredentialStoreError) as refused:
        store.load("https://a/mcp")
    message = str(refused.value)
    assert f"the credentials {what} " in message, message
    assert f"may be written by others (mode {mode})" in message, message
    assert f"chmod {'700' if what == 'folder' else '600'} " in message, message
    store.path("https://a/mcp").chmod(0o600)
    store.folder.chmod(0o700)  # made private as the message says: used again
    assert store.load("https://a/mcp") is not None


@pytest.mark.skipif(os.name != "posix" or os.getuid() != 0, reason="giving a file to another user needs root")
@pytest.mark.parametrize("what", ["folder", "file"])
def test_a_record_of_another_user_is_refused(tmp_path: Path, what: str) -> None:
    store = _planted(tmp_path, 0o700, 0o600)
    os.chown(store.folder if what == "folder" else store.path("https://a/mcp"), 65534, -1)
    with pytest.raises(CredentialStoreError) as refused:
        store.load("https://a/mcp")
    assert f"the credentials {what} " in str(refused.value), refused.value
    assert "belongs to another user (uid 65534)" in str(refused.value), refused.value


def test_a_record_behind_a_symbolic_link_is_not_read(tmp_path: Path) -> None:
    store = _planted(tmp_path, 0o700, 0o600)
    path = store.path("https://a/mcp")
    real = path.with_name("elsewhere.json")
    path.rename(real)
    path.symlink_to(real)
    with pytest.raises(CredentialStoreError, match="cannot read the stored credentials"):
        store.load("https://a/mcp")


class FakeKeyring:
    """What ``keyring`` offers a store: passwords by service and user name."""

    def __init__(self) -> None:
        self.saved: dict[tuple[str, str], str] = {}

    def get_keyring(self) -> object:
        return SimpleNamespace()

    def get_password(self, service: str, user: str) -> str | None:
        return self.saved.get((service, user))

    def set_password(self, service: str, user: str, password: str) -> None:
        self.saved[(service, user)] = password

    def delete_password(self, service: str, user: str) -> None:
        del self.saved[(service, user)]


def test_keyring_store_keeps_one_entry_per_server() -> None:
    keyring = FakeKeyring()
    store = KeyringStore(keyring)  # type: ignore[arg-type]
    store.save("https://a/mcp", {"tokens": {"access_token": "t"}})
    assert list(keyring.saved) == [("skilldeck", "https://a/mcp")]
    assert store.load("https://a/mcp") == {"tokens": {"access_token": "t"}, "server": "https://a/mcp"}
    assert "the system keyring" in store.where
    assert store.delete("https://a/mcp")
    assert not store.delete("https://a/mcp")


@pytest.mark.parametrize("usable", [True, False])
def test_default_store_is_the_keyring_only_with_a_real_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, usable: bool
) -> None:
    fail = ModuleType("keyring.backends.fail")

    class Keyring:  # what keyring falls back to where no backend exists
        priority = 0

    class SecretService:
        priority = 5

    fail.Keyring = Keyring  # type: ignore[attr-defined]
    keyring = ModuleType("keyring")
    keyring.get_keyring = SecretService if usable else Keyring  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "keyring", keyring)
    monkeypatch.setitem(sys.modules, "keyring.backends", ModuleType("keyring.backends"))
    monkeypatch.setitem(sys.modules, "keyring.backends.fail", fail)
    store = default_store({"SKILLDECK_HOME": str(tmp_path)})
    assert isinstance(store, KeyringStore if usable else FileStore)
    assert isinstance(default_store({"SKILLDECK_HOME": str(tmp_path), "SKILLDECK_KEYRING": "0"}), FileStore)


def test_default_store_is_the_file_store_when_told(tmp_path: Path) -> None:
    store = default_store({"SKILLDECK_HOME": str(tmp_path), "SKILLDECK_KEYRING": "0"})
    assert isinstance(store, FileStore)
    assert store.folder == tmp_path / "credentials"


# -- the login ----------------------------------------------------------------------------------------


async def browse(authorization_url: str) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=30) as client:
        approved = await client.get(authorization_url)
        assert approved.status_code in (302, 303), approved.text
        return await client.get(approved.headers["location"])


async def logged_in(tmp_path: Path, url: str) -> tuple[FileStore, Any]:
    """A file store under ``tmp_path`` holding tokens for ``url``, and the spec they are for."""
    store = FileStore(tmp_path)
    spec = spec_of({"url": url})

    async def show(authorization_url: str) -> None:
        await browse(authorization_url)

    assert await login(spec, store, show, connect_once, timeout=30)
    return store, spec


async def test_the_listener_takes_only_the_callback_it_awaits(tmp_path: Path, url: str) -> None:
    spec = spec_of({"url": url})
    store = FileStore(tmp_path)
    answers: list[tuple[str, int]] = []

    async def show(authorization_url: str) -> None:
        async def person() -> None:
            approved = await anyio.to_thread.run_sync(lambda: httpx2.get(authorization_url))
            callback = httpx2.URL(approved.headers["location"])
            base = f"http://127.0.0.1:{callback.port}"
            async with httpx2.AsyncClient(timeout=30) as client:
                for path in ("/elsewhere", "/callback?code=x&state=forged", "/callback?state=x"):
                    answers.append((path, (await client.get(base + path)).status_code))
                huge = await client.get(base + "/callback", headers={"X-Filler": "x" * 20_000})
                answers.append(("huge", huge.status_code))
                answers.append(("callback", (await client.get(str(callback))).status_code))
                answers.append(("again", (await client.get(str(callback))).status_code))

        tg.start_soon(person)

    async with anyio.create_task_group() as tg:
        assert await login(spec, store, show, connect_once, timeout=30)
    assert answers == [
        ("/elsewhere", 404),
        ("/callback?code=x&state=forged", 400),
        ("/callback?state=x", 400),
        ("huge", 431),
        ("callback", 200),
        ("again", 409),
    ]
    assert store.load(url) is not None


async def test_a_new_callback_port_registers_again_and_a_fixed_one_does_not(
    tmp_path: Path, url: str, provider: Provider
) -> None:
    store = FileStore(tmp_path)

    async def show(authorization_url: str) -> None:
        await browse(authorization_url)

    for _ in range(2):
        assert await login(spec_of({"url": url}), store, show, connect_once, timeout=30)
    assert provider.registrations == 2  # the stored registration names another loopback port

    with anyio.CancelScope():
        port_holder = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        port = port_holder.extra(anyio.abc.SocketAttribute.local_port)
        await port_holder.aclose()
    fixed = spec_of({"url": url, "oauth": {"callbackPort": port}})
    for _ in range(2):
        assert await login(fixed, store, show, connect_once, timeout=30)
    assert provider.registrations == 3


async def test_a_login_nobody_completes_ends_saying_so(tmp_path: Path, url: str) -> None:
    shown: list[str] = []
    with pytest.raises(LoginFailed, match=r"no login within 0\.5 s \(the browser never came back\)"):
        await login(spec_of({"url": url}), FileStore(tmp_path), shown.append, connect_once, timeout=0.5)
    assert shown[0].startswith(url.removesuffix("/mcp") + "/authorize?")


async def test_a_refused_authorization_ends_the_login(tmp_path: Path, url: str) -> None:
    async def show(authorization_url: str) -> None:
        callback = (await anyio.to_thread.run_sync(lambda: httpx2.get(authorization_url))).headers["location"]
        state = httpx2.URL(callback).params["state"]
        redirect = callback.split("?", 1)[0]
        refused = await anyio.to_thread.run_sync(lambda: httpx2.get(f"{redirect}?error=access_denied&state={state}"))
        assert "Login refused: access_denied" in refused.text

    with pytest.raises(LoginFailed, match="the authorization server refused: access_denied"):
        await login(spec_of({"url": url}), FileStore(tmp_path), show, connect_once, timeout=30)


async def test_an_expired_token_read_back_is_refreshed_before_it_is_sent(
    tmp_path: Path, url: str, provider: Provider
) -> None:
    store, spec = await logged_in(tmp_path, url)
    record = store.load(url)
    assert record is not None
    store.save(url, {**record, "expires_at": 1.0})  # as read back long after the login
    provider.expire_access_tokens()
    async with Connections([spec], credentials=store) as connections:
        assert list(connections.connected) == ["remote"]
    assert provider.refreshes == 1
    refreshed = store.load(url)
    assert refreshed is not None
    assert refreshed["expires_at"] > 1.0


async def test_a_server_that_asks_for_no_login_stores_nothing(tmp_path: Path) -> None:
    from mcp.server.mcpserver import MCPServer

    from .hostile_http import serving_in_thread

    store = FileStore(tmp_path)
    with serving_in_thread(MCPServer("open").streamable_http_app(streamable_http_path="/mcp")) as open_url:
        spec = spec_of({"url": open_url})
        assert not await login(spec, store, lambda url: None, connect_once, timeout=5)
        async with Connections([spec], credentials=store) as connections:
            assert list(connections.connected) == ["remote"]
    assert not (tmp_path / "credentials").exists()
    assert isinstance(spec.transport, HttpServer)


async def test_a_server_asking_for_more_scope_is_unavailable_with_the_login_hint(
    tmp_path: Path, url: str, provider: Provider
) -> None:
    store, spec = await logged_in(tmp_path, url)
    provider.granted = ["other"]  # the refreshed tokens lack the scope the server requires: 403 insufficient_scope
    provider.expire_access_tokens()
    async with Connections([spec], credentials=store) as connections:
        assert connections.failures["remote"].reason == (
            f"needs a login (the server asks for more scope: {SCOPE}): run skilldeck login {url}"
        )
    assert provider.refreshes == 1


async def test_the_next_login_asks_for_the_scope_a_server_asked_more_of(
    tmp_path: Path, url: str, provider: Provider
) -> None:
    store, spec = await logged_in(tmp_path, url)
    provider.granted = []  # the refreshed tokens lack the scope the server requires: 403 insufficient_scope
    provider.expire_access_tokens()
    async with Connections([spec], credentials=store) as connections:
        assert "the server asks for more scope" in connections.failures["remote"].reason
    record = store.load(url)
    assert record is not None
    assert record["step_up"] == SCOPE  # what was granted (nothing), and what the server asked for (SEP-2350)
    asked: list[list[str] | None] = []

    async def show(authorization_url: str) -> None:
        asked.append(parse_qs(urlsplit(authorization_url).query).get("scope"))
        await browse(authorization_url)

    provider.granted = None
    assert await login(spec, store, show, connect_once, timeout=30)
    assert asked == [[SCOPE]]
    record = store.load(url)
    assert record is not None
    assert record.get("step_up") is None  # asked for: the login after this one asks for what the server names
    async with Connections([spec], credentials=store) as connections:
        assert list(connections.connected) == ["remote"]


async def test_concurrent_refusals_refresh_once(tmp_path: Path, url: str, provider: Provider) -> None:
    store, spec = await logged_in(tmp_path, url)
    async with Connections([spec], credentials=store) as connections:
        client = connections.connected["remote"].client
        provider.expire_access_tokens()  # every request in flight is refused once; the rotated refresh token works once
        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(client.list_tools)
    assert provider.refreshes == 1


async def test_a_refresh_token_rotated_by_another_process_is_taken_up(
    tmp_path: Path, url: str, provider: Provider
) -> None:
    store, spec = await logged_in(tmp_path, url)
    async with Connections([spec], credentials=store) as first, Connections([spec], credentials=store) as second:
        provider.expire_access_tokens()
        await first.connected["remote"].client.list_tools()  # refreshes: the refresh token the second holds is spent
        await second.connected["remote"].client.list_tools()  # refused, then the tokens the first stored are used
        assert not second.failures
    assert provider.refreshes == 1


async def test_tokens_revoked_mid_session_make_a_supervised_upstream_unavailable_with_the_hint(
    tmp_path: Path, url: str, provider: Provider
) -> None:
    from skilldeck.host._backoff import Backoff

    store, spec = await logged_in(tmp_path, url)
    told: list[str] = []
    async with Connections(
        [spec],
        credentials=store,
        restart=Backoff(first=0.05, cap=0.05),
        on_transition=lambda _, text: told.append(text),
    ) as connections:
        provider.revoke_all()
        with pytest.raises(MCPError, match="Connection closed"):  # the session ends; the reason is the failure's
            await connections.connected["remote"].client.list_tools()
        hint = f"needs a login (the refresh token was refused (HTTP 400)): run skilldeck login {url}"
        with anyio.fail_after(30):  # lost with the reason, then tried again: unavailable, for the same reason
            while not (failure := connections.failures.get("remote")) or not failure.reason.startswith(hint):
                await anyio.sleep(0.05)
        assert "remote" not in connections.connected
        assert told[0].startswith(f"connection lost: {hint}; reconnecting in ")


async def test_a_person_slower_than_the_entry_timeout_still_logs_in(tmp_path: Path, url: str) -> None:
    spec = spec_of({"url": url, "timeout": 1})

    async def show(authorization_url: str) -> None:
        await anyio.sleep(2)  # the person reads the consent page: the request clock of the handshake is paused
        await browse(authorization_url)

    assert await login(spec, FileStore(tmp_path), show, connect_once, timeout=30)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
@pytest.mark.parametrize("mode", [0o750, 0o705, 0o710, 0o701])
def test_a_credentials_folder_the_group_or_others_may_enter_is_made_private(tmp_path: Path, mode: int) -> None:
    folder = tmp_path / "home" / "credentials"
    folder.mkdir(parents=True)
    folder.chmod(mode)
    FileStore(tmp_path / "home").save("https://a/mcp", {})
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX symlinks")
def test_a_credentials_folder_that_is_a_symlink_is_refused_and_nothing_is_written_through_it(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    elsewhere.chmod(0o755)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "credentials").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(CredentialStoreError, match=r"credentials is not a folder: remove it"):
        FileStore(tmp_path / "home").save("https://a/mcp", {"tokens": {"access_token": "t"}})
    assert list(elsewhere.iterdir()) == []
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o755  # nor was its mode changed


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_a_record_written_over_a_leftover_temporary_file_is_private(tmp_path: Path) -> None:
    """A write interrupted before its rename leaves its temporary file; the next write by a process of the same
    pid opens that file, whose mode the creation mode no longer sets."""
    store = FileStore(tmp_path / "home")
    store.save("https://a/mcp", {})
    leftover = store.path("https://a/mcp").with_suffix(f".{os.getpid()}.tmp")
    leftover.write_text("{}")
    leftover.chmod(0o644)
    store.save("https://a/mcp", {"tokens": {"access_token": "t"}})
    assert not leftover.exists()
    assert stat.S_IMODE(store.path("https://a/mcp").stat().st_mode) == 0o600
