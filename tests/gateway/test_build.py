"""``build_gateway``: a gateway built from typed options answers ``find`` over its upstreams, in both eras,
checks its policy at start, and says what it connected through ``report``."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.client import Client

from skilldeck.errors import PolicyError
from skilldeck.gateway import Gateway, GatewayOptions, build_gateway
from skilldeck.host import Host, InProcessServer, ServerSpec
from skilldeck.serving._policy import parse_policy

from .gateway_clients_support import check_structured, files_upstream, jobs_upstream

pytestmark = pytest.mark.anyio


def options(tmp_path: Path, **kwargs: object) -> GatewayOptions:
    specs = (
        ServerSpec("jobs", InProcessServer(jobs_upstream().server), timeout=10),
        ServerSpec("files", InProcessServer(files_upstream().server), timeout=10),
    )
    return GatewayOptions(specs, str(tmp_path / "mcp.json"), encoder=None, home=tmp_path, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_built_gateway_answers_find_over_its_upstreams(tmp_path: Path, mode: str) -> None:
    lines: list[tuple[str, str]] = []
    connected: list[Host] = []
    built = build_gateway(
        options(tmp_path, pinned=(("files", "nowhere"),)),
        report=lambda level, text: lines.append((level, text)),
        on_connected=connected.append,
    )
    async with built as gateway:
        assert isinstance(gateway, Gateway)
        assert connected == [gateway.host]
        assert sorted(gateway.host.sessions) == ["files", "jobs"]
        assert [level for level, _ in lines] == ["warning"], lines  # the --pin check
        assert "nowhere" in lines[0][1], lines
        async with Client(gateway.server, mode=mode, cache=None) as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            assert {"find", "load", "call"} <= listed, listed
            found = check_structured("find", await client.call_tool("find", {"query": "find job openings"}))
    assert found["cards"][0]["id"] == "jobs/job-search", found
    assert not found["abstain"], found


async def test_a_policy_naming_what_no_upstream_serves_stops_the_build(tmp_path: Path) -> None:
    policy = parse_policy({"public_tools": ["nowhere/*"]})
    with pytest.raises(PolicyError, match="nowhere"):
        async with build_gateway(options(tmp_path, policy=policy, policy_path="p.yaml"), report=lambda *_: None):
            raise AssertionError("built although the policy names no upstream")
