"""What one gateway's configuration makes of the usage ledger's cards (``gateway/_ledger_view.py``)."""

from __future__ import annotations

from skilldeck.gateway._ledger_view import LedgerView
from skilldeck.select import Taught

MEMORY = 'stdio ["npx","-y","@modelcontextprotocol/server-memory"]'
TIME = 'stdio ["uvx","mcp-server-time"]'


def view() -> LedgerView:
    return LedgerView({"mem": MEMORY, "clock": TIME}, listed=["mem/add_observations", "clock/now"], down=[])


def test_a_card_of_an_upstream_here_is_shown_under_this_gateway_s_label() -> None:
    v = view()
    assert v.here((MEMORY, "memory/add_observations")) == "mem/add_observations"  # taught as memory/ elsewhere
    assert v.ref("mem/add_observations") == (MEMORY, "mem/add_observations")
    assert v.here(("http https://elsewhere/mcp", "other/tool")) is None  # not an upstream of this gateway


def test_only_this_gateway_s_own_vanished_cards_are_pruned() -> None:
    v = view()
    assert v.is_listed((MEMORY, "memory/add_observations"))
    assert not v.is_listed((MEMORY, "memory/gone"))  # its upstream is here and no longer lists it
    assert v.is_listed(("http https://elsewhere/mcp", "other/tool"))  # another gateway's: never pruned here
    down = LedgerView({"mem": MEMORY}, listed=[], down=["mem"])
    assert down.is_listed((MEMORY, "mem/add_observations"))  # an upstream that is down keeps its cards


def test_entries_from_before_origins_are_read_and_adopted_by_label() -> None:
    v = view()
    assert v.here(("", "mem/add_observations")) == "mem/add_observations"
    assert v.here(("", "other/tool")) is None
    assert v.adopted(("", "mem/add_observations")) == (MEMORY, "mem/add_observations")
    assert v.adopted(("", "other/tool")) is None
    assert v.adopted((MEMORY, "mem/add_observations")) is None  # already has its origin
    assert v.is_listed(("", "other/tool"))


def test_one_card_taught_under_two_labels_is_read_as_one() -> None:
    questions = v_questions = view().questions(
        {
            (MEMORY, "memory/add_observations"): Taught(["remember tea"], trusted=False),
            (MEMORY, "mem/add_observations"): Taught(["note this"], trusted=True),
            ("http https://elsewhere/mcp", "other/tool"): Taught(["x"], trusted=True),
        }
    )
    assert v_questions == {"mem/add_observations": ["remember tea", "note this"]}
    assert questions["mem/add_observations"].trusted
