"""Where usage ledgers are kept: a :class:`LedgerStore`, by default :class:`SqliteLedgerStore`.

A store keeps every audience's uses and a version per audience that every change raises. A
writer applies a :class:`~skilldeck.learning._ledger.Change` computed on the version it read; when
another writer changed the audience meanwhile the store refuses it (``None``), and the writer
reads the audience again and retries (:class:`~skilldeck.learning._learner.Learner`). So the rules
of :class:`~skilldeck.learning._ledger.Ledger` hold whoever writes, in one process or several.

:class:`SqliteLedgerStore` is one file (stdlib ``sqlite3``, write-ahead log, one writer at a time:
each change is an ``IMMEDIATE`` transaction), ``$SKILLDECK_HOME/ledger.sqlite3`` by default; it
survives restarts, and ``skilldeck history --clear`` reaches a running gateway through it.

**Audiences are bounded** (``max_audiences``, :data:`MAX_AUDIENCES` by default): each holds at
most :class:`~skilldeck.learning._ledger.LedgerLimits` worth of uses, and a store holds at most
that many audiences with uses. Once it is full, a use of a *new* audience is **refused**
(:class:`LedgerFull`), never made room for: the audiences that learned keep what they learned (an
audience that could evict another's history would let one tenant erase what another taught), and
the refused one is ranked as without a ledger. An audience cleared (``skilldeck history
--audience T --clear``), or whose uses all expired or went with their cards, frees its place.
The owner logs the refusal, at most once an hour (:class:`~skilldeck.learning._learner.Learner`).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import anyio
import anyio.to_thread

from skilldeck.errors import ConfigError, LedgerFull
from skilldeck.learning._ledger import Change, Use

__all__ = ["LEDGER_FILE", "MAX_AUDIENCES", "SCHEMA_VERSION", "LedgerFull", "LedgerStore", "SqliteLedgerStore"]

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

LEDGER_FILE = "ledger.sqlite3"
"""The embedded ledger's file name under ``$SKILLDECK_HOME``."""
DEFAULT_LEDGER_TIMEOUT = 1.0
"""Seconds a call of the store waits for another process's write lock before it fails (the use is dropped)."""
MAX_AUDIENCES = 256
"""Audiences with uses a store holds by default (at most 32 MiB each: 8 GiB in all, at worst)."""


class LedgerStore(Protocol):
    """Every audience's uses, with a version per audience (see the module docs)."""

    @property
    def where(self) -> str:
        """Where the ledger is kept, for people (a path, a redacted URL)."""
        ...

    async def version(self, audience: str) -> int:
        """The audience's version: it changes with every change to its uses."""
        ...

    async def load(self, audience: str) -> tuple[int, list[Use]]:
        """The audience's version and every use it holds."""
        ...

    async def apply(self, audience: str, change: Change, base: int) -> int | None:
        """Apply ``change`` if the audience is still at version ``base``: the new version, else ``None``.

        Raises:
            LedgerFull: ``change`` writes the first use of an audience and the store holds its most.
        """
        ...

    async def audiences(self) -> list[str]:
        """The audiences holding at least one use."""
        ...

    async def clear(
        self, audience: str, cards: Sequence[str] | None = None, questions: Sequence[str] | None = None
    ) -> int:
        """Forget the audience's uses (of ``cards`` only, and of ``questions`` only, when given); how many were forgotten."""
        ...


SCHEMA_VERSION = 2
"""The ledger file's layout (``PRAGMA user_version``): 1, uses by (audience, card, question); 2, by (audience,
origin, card, question), the upstream that taught each use kept (:mod:`skilldeck.learning._ledger`). A file of
layout 1 is brought to 2 in place when it is opened, every use kept (its origin ``""``); a file of a layout
newer than this code knows is refused, never rewritten."""

_USES = """(
    audience TEXT NOT NULL,
    origin TEXT NOT NULL DEFAULT '',
    card TEXT NOT NULL,
    question TEXT NOT NULL,
    caller TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (audience, origin, card, question)
) WITHOUT ROWID"""
"""The uses table's columns at :data:`SCHEMA_VERSION` (created new, or made for a layout-1 file's uses)."""

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS uses {_USES};
CREATE TABLE IF NOT EXISTS versions (audience TEXT PRIMARY KEY, version INTEGER NOT NULL) WITHOUT ROWID;
"""

_FROM_1 = f"""
CREATE TABLE uses_2 {_USES};
INSERT INTO uses_2 (audience, origin, card, question, caller, at) SELECT audience, '', card, question, caller, at FROM uses;
DROP TABLE uses;
ALTER TABLE uses_2 RENAME TO uses;
"""


@dataclass
class _Lane:
    """One connection to the file, and the limiter that lets one call at a time use it."""

    db: sqlite3.Connection
    inode: int | None
    """The file's inode when it was opened (``None``: a database in memory)."""
    limiter: anyio.CapacityLimiter | None = None


class SqliteLedgerStore:
    """The embedded :class:`LedgerStore`: one SQLite file (see the module docs).

    Every call runs on a thread of its own, one at a time (a :class:`anyio.CapacityLimiter` of one), so a
    write waiting for another process's lock (``timeout``) never holds the event loop: other clients are
    served meanwhile. A file removed while the store is open (by ``rm``, or a neighbour's clean-up) is
    noticed at the next call, which opens the path again and says so in one log line, rather than
    writing on into an unlinked file.

    Args:
        path: the file (its folder is created, mode 0700).
        timeout: seconds a writer waits for another process's write to finish.
        create: create the file when there is none; ``False``: a missing file reads as an empty
            ledger and nothing is written to disk (for a reader such as ``skilldeck history``).
        max_audiences: audiences with uses held at most (a new one beyond: :class:`LedgerFull`).

    Raises:
        ConfigError: the file cannot be opened as a ledger (it is not a database, or of a newer layout).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        timeout: float = DEFAULT_LEDGER_TIMEOUT,
        create: bool = True,
        max_audiences: int = MAX_AUDIENCES,
    ) -> None:
        if max_audiences < 1:
            raise ValueError("max_audiences must be at least 1")
        self.path = Path(path)
        self.max_audiences = max_audiences
        self.timeout = timeout
        self.create = create
        self.reopened = 0
        """How many times the file was found removed (or replaced) and opened again."""
        writes = _Lane(*self._open())
        reads = writes if writes.inode is None else _Lane(*self._open())  # in memory: one database, one lane
        self._lanes = {"read": reads, "write": writes}

    def _open(self) -> tuple[sqlite3.Connection, int | None]:
        where: str | Path = self.path if self.create or self.path.exists() else ":memory:"
        db: sqlite3.Connection | None = None
        try:
            if where != ":memory:":
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            db = sqlite3.connect(where, timeout=self.timeout, isolation_level=None, check_same_thread=False)
            layout = int(db.execute("PRAGMA user_version").fetchone()[0])
            if layout > SCHEMA_VERSION:
                db.close()
                raise ConfigError(
                    f"the usage ledger {self.path} has layout {layout}, newer than this skilldeck knows "
                    f"({SCHEMA_VERSION}): upgrade skilldeck, or set SKILLDECK_HOME elsewhere; it is left as it is"
                )
            db.execute("PRAGMA journal_mode=WAL")
            # in WAL mode a commit is durable at the next checkpoint and the file never corrupt: a power
            # cut may lose the last uses, never the ledger (6 ms to under 1 ms a recorded use, measured)
            db.execute("PRAGMA synchronous=NORMAL")
            self._upgrade(db)
        except sqlite3.Error as exc:
            if db is not None:
                db.close()
            raise ConfigError(
                f"cannot open the usage ledger {self.path}: {exc or type(exc).__name__}; move the file away (what "
                "it learned is lost with it) or set SKILLDECK_HOME elsewhere"
            ) from None
        return db, self._current_inode() if where != ":memory:" else None

    @staticmethod
    def _upgrade(db: sqlite3.Connection) -> None:
        """Bring the file to :data:`SCHEMA_VERSION` in one transaction, every use kept."""
        db.execute("BEGIN IMMEDIATE")
        try:
            columns = {str(row[1]) for row in db.execute("PRAGMA table_info(uses)")}
            if columns and "origin" not in columns:  # layout 1
                for statement in _FROM_1.strip().split(";"):
                    if statement.strip():
                        db.execute(statement)
            for statement in _SCHEMA.strip().split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def _current_inode(self) -> int | None:
        try:
            return self.path.stat().st_ino
        except OSError:
            return None

    def _in_place(self, lane: _Lane) -> None:
        """Open the path again when the file ``lane`` has open was removed or replaced (see the class docs)."""
        if lane.inode is None or lane.inode == self._current_inode():
            return
        lane.db.close()
        lane.db, lane.inode = self._open()
        if lane is self._lanes["write"]:  # said once per removal, by the lane that writes
            self.reopened += 1
            logger.warning("the usage ledger %s was removed or replaced while in use: opened it again", self.path)

    async def _call(self, kind: str, function: Callable[..., _T], *args: Any) -> _T:
        """``function(db, *args)`` on a thread, one at a time per lane: reads never wait behind a write that
        waits on another process's lock (SQLite's write-ahead log lets them read meanwhile)."""
        lane = self._lanes[kind]
        if lane.limiter is None:
            lane.limiter = anyio.CapacityLimiter(1)

        def run() -> _T:
            self._in_place(lane)
            return function(lane.db, *args)

        return await anyio.to_thread.run_sync(run, limiter=lane.limiter)

    @property
    def where(self) -> str:
        return str(self.path)

    def close(self) -> None:
        for lane in {id(lane): lane for lane in self._lanes.values()}.values():
            lane.db.close()

    @staticmethod
    def _version(db: sqlite3.Connection, audience: str) -> int:
        row = db.execute("SELECT version FROM versions WHERE audience = ?", (audience,)).fetchone()
        return int(row[0]) if row else 0

    @staticmethod
    def _bump(db: sqlite3.Connection, audience: str, version: int) -> int:
        db.execute(
            "INSERT INTO versions (audience, version) VALUES (?, ?) "
            "ON CONFLICT (audience) DO UPDATE SET version = excluded.version",
            (audience, version + 1),
        )
        return version + 1

    def _full_without(self, db: sqlite3.Connection, audience: str) -> bool:
        """Whether ``audience`` holds no use and the others are as many as the store holds."""
        if db.execute("SELECT 1 FROM uses WHERE audience = ? LIMIT 1", (audience,)).fetchone():
            return False
        # every audience that ever wrote has a version: one index seek each, where DISTINCT over the
        # uses reads every row (21 ms at 510,000 uses, 0.7 ms this way; up to 64 million rows are allowed)
        found = db.execute(
            "SELECT COUNT(*) FROM (SELECT 1 FROM versions v WHERE EXISTS "
            "(SELECT 1 FROM uses u WHERE u.audience = v.audience) LIMIT ?)",
            (self.max_audiences,),
        ).fetchone()
        return int(found[0]) >= self.max_audiences

    async def version(self, audience: str) -> int:
        return await self._call("read", self._version, audience)

    def _load(self, db: sqlite3.Connection, audience: str) -> tuple[int, list[Use]]:
        db.execute("BEGIN")
        try:
            version = self._version(db, audience)
            rows = db.execute(
                "SELECT question, card, caller, at, origin FROM uses WHERE audience = ?", (audience,)
            ).fetchall()
        finally:
            db.execute("COMMIT")
        return version, [Use(str(q), str(card), str(caller), float(at), str(o)) for q, card, caller, at, o in rows]

    async def load(self, audience: str) -> tuple[int, list[Use]]:
        return await self._call("read", self._load, audience)

    def _apply(self, db: sqlite3.Connection, audience: str, change: Change, base: int) -> int | None:
        db.execute("BEGIN IMMEDIATE")  # one writer at a time, across processes
        try:
            version = self._version(db, audience)
            if version != base:
                db.execute("ROLLBACK")
                return None
            if change.written and self._full_without(db, audience):
                raise LedgerFull(audience, self.max_audiences, self.where)
            db.executemany(
                "DELETE FROM uses WHERE audience = ? AND origin = ? AND card = ? AND question = ?",
                [(audience, u.origin, u.card, u.question) for u in change.removed],
            )
            db.executemany(
                "INSERT OR REPLACE INTO uses (audience, origin, card, question, caller, at) VALUES (?, ?, ?, ?, ?, ?)",
                [(audience, u.origin, u.card, u.question, u.caller, u.at) for u in change.written],
            )
            version = self._bump(db, audience, version)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return version

    async def apply(self, audience: str, change: Change, base: int) -> int | None:
        return await self._call("write", self._apply, audience, change, base)

    @staticmethod
    def _audiences(db: sqlite3.Connection) -> list[str]:
        return [str(a) for (a,) in db.execute("SELECT DISTINCT audience FROM uses ORDER BY audience")]

    async def audiences(self) -> list[str]:
        return await self._call("read", self._audiences)

    def _clear(
        self, db: sqlite3.Connection, audience: str, cards: Sequence[str] | None, questions: Sequence[str] | None
    ) -> int:
        db.execute("BEGIN IMMEDIATE")
        try:
            where, params = "audience = ?", [audience]
            if cards is not None:
                where += f" AND card IN ({', '.join('?' * len(cards))})"
                params += list(cards)
            if questions is not None:
                where += f" AND question IN ({', '.join('?' * len(questions))})"
                params += list(questions)
            gone = db.execute(f"DELETE FROM uses WHERE {where}", params).rowcount
            self._bump(db, audience, self._version(db, audience))
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return int(gone)

    async def clear(
        self, audience: str, cards: Sequence[str] | None = None, questions: Sequence[str] | None = None
    ) -> int:
        if (cards is not None and not cards) or (questions is not None and not questions):
            return 0
        return await self._call("write", self._clear, audience, cards, questions)
