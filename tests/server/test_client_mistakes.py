"""A client's mistake is answered as the client's mistake: an error code that says so, and at most one
bounded line in the server's log, never a traceback. Real SDK clients against a real server, both eras."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from skilldeck.errors import ECHO_LIMIT
from skilldeck.server import create_server

ERAS = ["auto", "legacy"]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_an_unknown_prompt_is_invalid_params_and_logs_no_traceback(
    examples_dir: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    server, _ = create_server(examples_dir)

    @server.prompt()
    def greet(who: str) -> str:
        """A prompt of the server's own: the guard must not swallow what it renders."""
        return f"hello {who}"

    name = "x" * 16_000  # the fuzzer's long name: echoed cut, not whole
    caplog.set_level(logging.DEBUG)
    async with Client(server, mode=mode, cache=None) as client:
        with pytest.raises(MCPError) as raised:
            await client.get_prompt(name, {})
        assert raised.value.error.code == INVALID_PARAMS, raised.value.error
        assert raised.value.error.message.startswith("unknown prompt 'xxx"), raised.value.error.message
        assert "prompts/list names the prompts" in raised.value.error.message
        assert len(raised.value.error.message) < ECHO_LIMIT + 100
        rendered = await client.get_prompt("greet", {"who": "ada"})
        assert "hello ada" in str(rendered.messages[0].content)
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR], [
        (r.name, r.levelname, r.getMessage()[:80]) for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR
    ]
