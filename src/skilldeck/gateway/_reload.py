"""The configuration a running gateway serves under: checked at start, re-read on demand.

:class:`GatewayConfig` holds the upstream specs and the policy in force. At start
(:meth:`GatewayConfig.check`) the policy is checked against the connected upstreams
(:mod:`skilldeck.gateway._policy_check`): an id matching nothing is an error, an id of an upstream
that is down is pending. When a pending upstream connects its ids are checked
(:meth:`GatewayConfig.admit`), and if one still matches nothing the upstream is **kept out of
service**: removed from the gateway, reported unavailable with an error line naming each id. A
reload checks an upstream it connects on a listing of its own, before anything of it is served;
an upstream re-listed by the watcher is checked before the gateway re-indexes or tells anyone,
its listing being in the host's registry only for the requests of the check itself. An upstream's
ids stay pending until its check has ended: the watcher's check of an upstream a reload is
connecting or checking waits for the reload, then follows its verdict (one kept out is not listed).

:meth:`GatewayConfig.reload` (``SIGHUP``, ``--watch-config``) re-reads both files:

* the config (and ``added.json``, the servers a person added from a catalog): an upstream no longer listed is removed, a new one connected, one whose entry changed
  reconnected, and one that was unavailable tried again; a new upstream's ids are checked against
  the policy in force before it is listed into the gateway;
* the policy: checked against the upstreams as they now are, then swapped in one assignment
  (every per-audience index rebuilt on next use). An upstream whose ids cannot be listed for the
  check (its connection closes under the request: it exited, or is lost) counts as down: its ids
  are pending, checked when it is back, and the reload goes on. So does one whose ids were pending
  when the reload began (the supervisor brought it back and the watcher's check is to come).

A file that cannot be read or is invalid keeps what was in force, and the reason is printed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import anyio

from skilldeck.catalog import AddedServers
from skilldeck.errors import ConfigError, PolicyError, shorten
from skilldeck.gateway._policy_check import (
    RULE_KINDS,
    PolicyCheck,
    UpstreamIds,
    check_policy,
    pending_names,
    upstream_ids,
)
from skilldeck.gateway._service import GatewayService
from skilldeck.host import Failure, Host, HostWatcher, ServerSpec, load_config
from skilldeck.host._api import CatalogChange
from skilldeck.serving._api import Policy, PolicyName, load_policy

__all__ = ["GatewayConfig", "Report"]

logger = logging.getLogger(__name__)

Report = Callable[[str, str], None]
"""Prints one line: ``(level, text)``, the level ``info``, ``warning`` or ``error``."""

Changed = Callable[[CatalogChange], Awaitable[Any]]
PolicyChanged = Callable[[], Awaitable[Any]]


class GatewayConfig:
    """The specs and policy of a running gateway (see the module docs).

    Args:
        service: the gateway service; its ``policy`` is the one in force.
        host: the host the gateway's upstreams run on (the connections a reload changes).
        specs: the upstreams the host was started with.
        config_path: the ``mcpServers`` file to re-read.
        policy_path: the policy file to re-read (``None``: no policy).
        timeout: each upstream's connect timeout (``--timeout``) for entries without their own.
        report: where each line goes.
        added: the servers a person added from a catalog (``$SKILLDECK_HOME/added.json``), re-read with
            the config: a label the config names too is the config's.
        drain: seconds the calls in flight on an upstream removed or connected again have to finish on
            its old session before it is torn down (``--shutdown-timeout``).
    """

    def __init__(
        self,
        service: GatewayService,
        host: Host,
        specs: list[ServerSpec],
        *,
        config_path: str,
        policy_path: str | None,
        timeout: float,
        report: Report,
        added: AddedServers | None = None,
        drain: float = 0.0,
    ) -> None:
        self.service = service
        self.host = host
        self.drain = drain
        self.added = added
        self.specs = {spec.label: spec for spec in specs}
        self.config_path = config_path
        self.policy_path = policy_path
        self.timeout = timeout
        self.report = report
        self.pending: dict[str, list[PolicyName]] = {}
        self._lock = anyio.Lock()
        self._switching: dict[str, tuple[str, ...]] = {}
        """Upstreams this reload connects again (their entry changed), each with the tools it listed: the
        gateway goes on listing those until the new session is admitted, and calls to them wait for it."""
        self._reloading: int | None = None
        """The task running a reload (which checks the upstreams it connects itself), while one runs."""
        self._connecting: set[str] = set()
        """Upstreams the reload running now connects (checked by it before they are served)."""

    async def _check(
        self, policy: Policy, hold: frozenset[str] = frozenset(), unchecked: set[str] | None = None
    ) -> PolicyCheck:
        """``policy`` against the connected upstreams; those in ``hold`` (not admitted yet) count as down.

        An upstream whose ids cannot be listed now (its session ended as it was listed) counts as down
        too, checked when it connects again, and is added to ``unchecked``.
        """
        ids: dict[str, UpstreamIds] = {}
        for label in sorted(self.host.sessions.keys() - hold):
            try:
                ids[label] = await upstream_ids(self.host, label, policy)
            except Exception as exc:  # its session ended as it was listed: checked as a down upstream's are
                if unchecked is not None:
                    unchecked.add(label)
                self.report(
                    "warning",
                    f"[{label}] could not be listed for the policy check ({shorten(str(exc) or type(exc).__name__)}); "
                    "its ids are checked when it connects again",
                )
        return check_policy(policy, self.specs.keys(), ids)

    async def check(self) -> PolicyCheck:
        """Check the policy in force at start; pending ids are kept for when their upstream connects.

        Raises:
            PolicyError: one line per id that matches nothing.
        """
        policy = self.service.policy
        if policy is None:
            return PolicyCheck()
        check = await self._check(policy)
        if check.errors:
            raise PolicyError(_refusal(self.policy_path, check.errors))
        for line in check.warnings():
            self.report("warning", f"policy {self.policy_path}: {line}")
        self.pending = check.pending
        return check

    async def admit(self, label: str, *, fresh: bool = False) -> bool:
        """Check the pending ids of ``label``, now connected; ``False`` when it was kept out of service.

        One at a time with a reload (which checks the upstreams it connects itself): an upstream the
        supervisor brings back while a reload replaces it is checked once, on one session.
        """
        if label not in self.pending and label not in self._connecting:
            return True
        if self._reloading == anyio.get_current_task().id:  # asked by the reload itself, as it tells its changes
            return await self._admit(label, fresh=fresh)
        async with self._lock:
            if label not in self.pending:  # a reload connected or checked it meanwhile: its verdict stands
                return label in self.host.sessions
            return await self._admit(label, fresh=fresh)

    async def _admit(self, label: str, *, fresh: bool = False) -> bool:
        names = self.pending.get(label)
        policy = self.service.policy
        if not names or policy is None:
            self.pending.pop(label, None)
            return True
        if label not in self.host.sessions:  # not connected (lost again): checked when it connects
            return True
        # Its ids stay pending until the check has ended: an admit asked meanwhile waits for this verdict.
        try:
            ids = await upstream_ids(self.host, label, policy, fresh=fresh)
        except Exception as exc:  # gone again while it was being checked: checked when it next connects
            logger.info("[%s] could not be checked against the policy now (%s); checked when it connects", label, exc)
            return True
        self.pending.pop(label, None)
        unmatched = [n for n in names if not ids.knows(n)]
        if not unmatched:
            self.report("info", f"policy {self.policy_path}: the ids of upstream {label!r} are checked")
            return True
        for name in unmatched:
            line = name.unmatched(ids.known(name), rule_is=f"{RULE_KINDS} of {label!r}")
            self.report("error", f"policy {self.policy_path}: {line}")
        ids_named = ", ".join(dict.fromkeys(n.name for n in unmatched))
        reason = f"kept out of service: the policy names what it does not serve ({ids_named})"
        self.host.remove_server(label)
        self.host.failures[label] = Failure(label, reason)
        self.report("error", f"[{label}] {reason}")
        return False

    # -- re-reading ----------------------------------------------------------------------------------

    async def reload(self, watcher: HostWatcher, changed: Changed, policy_changed: PolicyChanged) -> None:
        """Re-read the config and the policy and apply them (see the module docs); one reload at a time.

        ``changed`` is told of each upstream removed or listed anew, ``policy_changed`` of a policy swapped.
        """
        async with self._lock:
            self._reloading = anyio.get_current_task().id
            try:
                await self._reload(watcher, changed, policy_changed)
            except Exception as exc:  # a reload's trouble must not stop the gateway serving what it serves
                logger.exception("reload failed")
                self.report("error", f"reload failed: {type(exc).__name__}: {exc}")
            finally:
                self._reloading = None
                self._connecting.clear()
                for label in list(self.host.reconnecting):  # the calls waiting for them go on, or are refused
                    self.host.reconnecting.pop(label).set()
                self._switching.clear()

    async def _reload(self, watcher: HostWatcher, changed: Changed, policy_changed: PolicyChanged) -> None:
        specs = self._read_config()
        policy, policy_ok = self._read_policy()
        added: list[str] = []
        if specs is not None:
            added = await self._apply_config(specs, changed)
        in_force = self.service.policy
        # Upstreams connected by this reload are not listed into the gateway yet: their ids are checked
        # below, against the policy then in force, before anything of theirs is served. Those whose ids
        # were pending when it began are the watcher's to check (it waits for this reload), after it.
        held = frozenset(added) | (self.pending.keys() & self.host.sessions.keys())
        unchecked: set[str] = set()
        if policy_ok:
            check = await self._check(policy, held, unchecked) if policy is not None else PolicyCheck()
            if check.errors:
                self.report("error", f"reload: {_refusal(self.policy_path, check.errors)}")
                self.report("error", "reload: the policy in force is kept")
            else:
                in_force = policy
        down = held | unchecked | (self.specs.keys() - self.host.sessions.keys())
        self.pending = pending_names(in_force, down) if in_force is not None else {}
        if in_force != self.service.policy:
            self.service.policy = in_force  # one assignment: every request from here on sees the new policy
            self.service.reindex()
            for line in PolicyCheck(pending={k: v for k, v in self.pending.items() if k not in added}).warnings():
                self.report("warning", f"policy {self.policy_path}: {line}")
            self.report("info", f"policy {self.policy_path}: the new policy is in force")
            await policy_changed()
        for label in sorted((held | unchecked) - set(added)):
            if label in self.host.sessions:  # still connected: the watcher re-lists it, and checks it first
                watcher.request_refresh(label, "policy")
        for label in added:
            if await self._admit(label, fresh=True):
                await watcher.follow(label)
                try:
                    change = await self.host.relist(label, ("reloaded",))
                except Exception as exc:  # gone again as it was listed: listed when it connects again
                    self.report("warning", f"[{label}] could not be listed ({shorten(str(exc) or type(exc).__name__)})")
                    continue
                if label in self._switching:  # told against what the gateway went on listing
                    before = set(self._switching.pop(label))
                    now = {str(t.get("name")) for t in change.tools or ()}
                    change = replace(
                        change, tools_added=tuple(sorted(now - before)), tools_removed=tuple(sorted(before - now))
                    )
                await changed(change)
            elif label in self._switching:
                await self._unlist(label, changed)
            if label in self.host.reconnecting:
                self.host.reconnecting.pop(label).set()
        up = len(self.host.sessions)
        self.report("info", f"reloaded: {up} of {len(self.specs)} servers")

    def _read_config(self) -> dict[str, ServerSpec] | None:
        try:
            specs = load_config(self.config_path, timeout=self.timeout)
        except ConfigError as exc:
            self.report("error", f"reload: {exc}; the config in force is kept")
            return None
        read = {spec.label: spec for spec in specs}
        if self.added is not None:
            try:
                added = self.added.specs(timeout=self.timeout)
            except ConfigError as exc:
                self.report("error", f"reload: {exc}; the added servers in force are kept")
                added = [spec for spec in self.specs.values() if spec.source == str(self.added.path)]
            for spec in added:
                read.setdefault(spec.label, spec)
        if not read:
            self.report("error", f"reload: {self.config_path} names no servers; the config in force is kept")
            return None
        return read

    def _read_policy(self) -> tuple[Policy | None, bool]:
        if self.policy_path is None:
            return None, False
        try:
            return load_policy(self.policy_path), True
        except PolicyError as exc:
            self.report("error", f"reload: {exc}; the policy in force is kept")
            return None, False

    async def _apply_config(self, specs: dict[str, ServerSpec], changed: Changed) -> list[str]:
        """Remove, reconnect and connect upstreams as ``specs`` says; the labels now connected anew."""
        host, old = self.host, self.specs
        gone = [label for label in old if label not in specs]
        redo = [label for label in specs if label in old and (specs[label] != old[label] or label in host.failures)]
        new = [label for label in specs if label not in old]
        for label in gone + redo:
            was_up = label in host.sessions
            tools = tuple(sorted(t.name for t in host.tools(label)))
            if was_up and label in redo:  # listed on until the new session is admitted; calls wait for it
                self._switching[label] = tools
                host.reconnecting[label] = anyio.Event()
                self.report("info", f"[{label}] its entry changed: connecting it again (calls in flight finish)")
            host.remove_server(label, drain=self.drain)
            host.failures.pop(label, None)
            if was_up and label not in self._switching:
                await self._unlist(label, changed, tools)
            if label in gone:
                self.report("info", f"[{label}] removed")
        self.specs = specs
        added = []
        self._connecting.update(redo + new)  # the watcher's check of one waits for this reload's
        for label in redo + new:
            if await host.add_server(specs[label]):
                added.append(label)
                self.report("info", f"[{label}] connected")
            else:
                failure = host.failures.get(label)
                self.report("warning", f"unavailable [{label}] {failure.reason if failure else 'not connected'}")
                if label in self._switching:
                    await self._unlist(label, changed)
                    host.reconnecting.pop(label).set()
        return added

    async def _unlist(self, label: str, changed: Changed, tools: tuple[str, ...] | None = None) -> None:
        """Tell ``changed`` that ``label`` lists nothing now (``tools``: what it listed, else as it was switching)."""
        listed = self._switching.pop(label, ()) if tools is None else tools
        reasons = frozenset({"removed", "prompts", "resources"})
        await changed(CatalogChange(label, reasons, tools_removed=listed, tools=()))


def _refusal(policy_path: str | None, errors: list[str]) -> str:
    """One line per id that matches nothing, under a line naming the file."""
    return f"policy {policy_path} names what no upstream serves:\n  " + "\n  ".join(errors)
