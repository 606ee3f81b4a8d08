"""The official conformance scenarios against ``skilldeck serve --policy``: a policy changes nothing a
conforming host relies on.

The server runs with ``ADMIT_ALL_POLICY`` (see ``conftest.py``): no token verifier, so every request
is answered for the policy's default identity, which is admitted to every skill; ``refunds`` is
served as a rendered variant (``{{currency}}`` filled in), so its manifest digests are those of
the rendered bytes. Every SEP-2640 server scenario must pass with 0 failures, 0 warnings and nothing
skipped, exactly as without a policy.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from skilldeck.host._wire import SkillsWire
from skilldeck.select._cards import TOOLS_METADATA_KEY
from skilldeck.skill._manifest import digest_of

from .conftest import _start_server, _stop
from .test_conformance_server import SCENARIOS, _run_scenario, check

pytestmark = pytest.mark.conformance

EMAIL = "skill://acme/billing/refunds/examples/email.md"


@pytest.mark.anyio
async def test_the_policy_is_in_force_and_admits_everything(policy_skilldeck_server) -> None:
    server = policy_skilldeck_server
    async with Client(server.url, mode="auto", cache=None, read_timeout_seconds=10) as client:
        wire = SkillsWire(client)
        listed, cursor = [], None
        while True:
            page = await wire.list_skills(cursor)
            listed += page["skills"]
            cursor = page.get("nextCursor")
            if not cursor:
                break
        assert len(listed) == server.skill_count == 8
        data, _ = await wire.read_bytes(EMAIL)
        text = data.decode()
        assert "{{currency}}" not in text
        assert "EUR" in text
        (refunds,) = [e for e in listed if e["frontmatter"]["name"] == "refunds"]
        (email,) = [r for r in refunds["resources"] if r["uri"] == EMAIL]
        assert email["digest"] == digest_of(data)
        assert email["size"] == len(data)
    server.assert_alive()


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_sep_2640_scenario_with_policy(
    run_npx, conformance_cmd: list[str], tmp_path: Path, policy_skilldeck_server, scenario: str
) -> None:
    _run_scenario(run_npx, conformance_cmd, policy_skilldeck_server, scenario, tmp_path / "results")


@pytest.mark.anyio
async def test_tools_key_written_the_documented_way_raises_no_warning(
    run_npx, conformance_cmd: list[str], tmp_path: Path
) -> None:
    """A pack naming its tools under the metadata key skilldeck reads, served under a policy that renders
    one skill (so the server writes the key) and leaves the other as written: no reserved-prefix warning."""
    pack = tmp_path / "pack"
    for name in ("orders", "returns"):
        (pack / name).mkdir(parents=True)
        (pack / name / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: Handle {name}.\nmetadata:\n  {TOOLS_METADATA_KEY}: lookup_order\n"
            f"---\n# {name}\n\nUse `lookup_order`.\n"
        )
    policy = tmp_path / "policy.yaml"
    policy.write_text("default_identity: {subject: s, tenant: acme, roles: [reader]}\nskills: {orders: {}}\n")
    (tmp_path / "server").mkdir()
    server, why = _start_server(tmp_path / "server", None, ("--policy", str(policy)), pack=str(pack))
    assert server is not None, why
    try:
        async with Client(server.url, mode="auto", cache=None, read_timeout_seconds=10) as client:
            entries = {e["frontmatter"]["name"]: e for e in (await SkillsWire(client).list_skills())["skills"]}
        # `orders` is rendered for the caller (the policy routes it no tools), `returns` is served as written
        assert entries["orders"]["frontmatter"]["metadata"] == {TOOLS_METADATA_KEY: ""}
        assert entries["returns"]["frontmatter"]["metadata"] == {TOOLS_METADATA_KEY: "lookup_order"}
        checks = _run_scenario(run_npx, conformance_cmd, server, "sep-2640-skills-enumeration", tmp_path / "out")
        assert check(checks, "sep-2640-metadata-reserved-prefix")["status"] == "SUCCESS"
    finally:
        _stop(server.process)
