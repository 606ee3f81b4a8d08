"""Selection that learns from use: the usage ledger, its bounds and where it is kept.

When a question's ``find`` led, in one client's activation, to a ``load`` of a card and then to a
``call`` of one of that card's tools that came back without ``isError`` and was not refused, the
gateway (and :class:`~skilldeck.agents.SkillSession`) records the question for that card, per
audience (the policy's tenant; one audience without a policy). What is stored: the question text,
the card's id, the caller's subject and the time. The ranker reads a card's past questions
(:meth:`skilldeck.select.Selector.set_history`).

- :class:`Ledger` (pure): one audience's uses and their bounds (:class:`LedgerLimits`): 20
  questions per card, newest kept, no caller over half of a card's questions once another caller
  taught it, uses older than 180 days dropped, a size cap per audience.
- :class:`SqliteLedgerStore`: the default store, ``$SKILLDECK_HOME/ledger.sqlite3``; every store
  holds at most ``max_audiences`` audiences (:data:`MAX_AUDIENCES`): a use of a new one beyond is
  refused (:class:`LedgerFull`), never made room for.
- :class:`RedisLedgerStore`: the store gateway replicas share (``--redis``).
- :class:`Learner`: a process's view of the ledger, kept in step with its store.

Its modules (private; a sibling package uses what ``__all__`` and ``_api`` list):

- ``_api``: What sibling packages may use of ``skilldeck.learning`` beyond its public names: its face to them.
- ``_learner``: A process's view of the usage ledger: each audience's uses in memory, kept in step with its
  store.
- ``_ledger``: The usage ledger of one audience: which questions led to a successful use of which card.
- ``_redis``: The usage ledger in Redis, shared by gateway replicas (``skilldeck gateway --redis``,
  ``skilldeck[redis]``).
- ``_stores``: Where usage ledgers are kept: a :class:`LedgerStore`, by default :class:`SqliteLedgerStore`.
- ``_updates``: Rankers take a new history on a thread of their own, the latest one each, never on a
  request's path.
"""

from skilldeck.learning._learner import Learner
from skilldeck.learning._ledger import Change, Ledger, LedgerLimits, Use
from skilldeck.learning._redis import RedisLedgerStore
from skilldeck.learning._stores import LEDGER_FILE, MAX_AUDIENCES, LedgerFull, LedgerStore, SqliteLedgerStore

__all__ = [
    "LEDGER_FILE",
    "MAX_AUDIENCES",
    "Change",
    "Learner",
    "Ledger",
    "LedgerFull",
    "LedgerLimits",
    "LedgerStore",
    "RedisLedgerStore",
    "SqliteLedgerStore",
    "Use",
]
