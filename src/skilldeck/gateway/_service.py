"""The gateway's decisions: find, load, read a skill file, call — per caller and per client. No server SDK.

:class:`GatewayService` answers the four meta-tools over the upstream servers, which it reaches
only through its :class:`~skilldeck.gateway._port.Upstreams` port (what they list, verified loads
and reads, and the calls it admitted): by default :class:`~skilldeck.gateway._upstreams.HostUpstreams`
over a connected :class:`~skilldeck.host.Host` (verified loading, budgets, approvals), which also
makes the upstream calls. Every answer is a plain ``dict`` (the tool's ``structuredContent``);
every refusal is a :class:`~skilldeck.errors.GateRefused` with a reason a model can act on, raised
*before* anything is sent upstream.

Per caller (:class:`~skilldeck.serving._policy.Caller`, from the verified token or the policy's
default identity) a policy in the format of ``skilldeck serve --policy`` decides, by id:

* skills, keyed ``LABEL/NAME``: admitted or not (hidden from ``find``, refused by ``load``);
* tools, ``LABEL/TOOL``: a caller may load and call only what the routes of its admitted skills
  grant it, plus the policy's ``public_tools`` (``LABEL/*``: every tool of that upstream); every other
  tool is hidden from it;
* instructions: ``{{ name }}`` placeholders in a loaded ``SKILL.md`` are filled with the caller's
  variables (after verification: the bytes checked are the upstream's).

Who is told that the policy hides something (``explain_hidden``): a refusal of a tool a loaded skill
names says "hidden by the policy" to anyone, since the skill already named it. A refusal of an id the
caller could only have guessed (a skill it is not admitted to, a tool nothing routes to it) says so
only where the gateway is told to explain (the command line does on stdio, where the one caller is
the person who wrote the policy); elsewhere it reads as for an id that does not exist, so a caller
learns nothing of what is hidden from it, and the decision log and the audit record it as a policy
decision.

Per client (an :class:`~skilldeck.gateway._activation.Activation`) the service remembers what was
loaded: only those tools pass the gate. A skill may name tools of another server
(``metadata["dev.skilldeck/tools"]: "files/read_file"``); such a tool is activated only when the
host grants that skill's server the other label (``grants``), never implied by the skill itself.

With a usage ledger (``learning``, see :mod:`skilldeck.learning`), a question whose ``find`` showed
a card that the same client then loaded, and whose load was followed by a call of one of that
card's tools that came back complete and without ``isError``, is recorded for that card, per
audience (the policy's tenant; one audience without a policy); every ranker of that audience then
reads the card's past questions (:meth:`~skilldeck.select.Selector.set_history`). A refused call,
a failed one, a load alone or a call of another card's tool records nothing, and a ledger that
cannot be reached never fails a request (it is logged). With activations shared between replicas
(``shared``), a client's path (questions found, cards loaded after them) is kept in that store, not
in this process: the adapter hands each ``find`` to :meth:`UsageRecorder.share_found <skilldeck.gateway._usage.UsageRecorder.share_found>`, and the
replica whose call succeeds takes the pending question out of the store and records it, once.
"""

from __future__ import annotations

import base64
import json
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, TypeVar, cast

from skilldeck._records import JsonLinesLog
from skilldeck.errors import GateRefused, SkilldeckError, ToolNotListed, shorten
from skilldeck.gateway._activation import Activation, ActivationStore, ActivationTable, credited, per_connection
from skilldeck.gateway._indexes import AudienceIndex, AudienceIndexes
from skilldeck.gateway._meta import DEFAULT_FIND_LIMIT, MAX_FIND_LIMIT
from skilldeck.gateway._port import Progress, ToolCall, Upstreams, down, tool_id
from skilldeck.gateway._relay import CallRelay, LogSink, ParkedCalls
from skilldeck.gateway._shortlist import FILLER_GAP, shortlist_order
from skilldeck.gateway._upstreams import ORIGIN_META, SERVER_INFO_META, HostUpstreams
from skilldeck.gateway._usage import HISTORY_UNREAD, UsageRecorder
from skilldeck.host import Host, LoadedSkill, SkillRecord
from skilldeck.learning import Learner
from skilldeck.select import Card, Decision, Encoder, Scored, ToolGate, skill_tools
from skilldeck.select._api import VectorCache, count_tokens, indexing_note, what_to_check
from skilldeck.serving._api import (
    GRANTED,
    NOT_GRANTED,
    AuditLog,
    Caller,
    Policy,
    annotate,
    annotate_audit,
    refusal_code,
    render_template,
    traced,
)
from skilldeck.skill._api import is_text_mime_type, mime_type_for, neutralise_in, neutralise_tags

__all__ = ["ORIGIN_META", "SERVER_INFO_META", "DecisionLog", "GatewayService", "tool_id"]

SCORE_DECIMALS = 2
"""Decimals of the scores and confidence ``find`` shows: a model compares them, it does not need four (the
decision log keeps the confidence to four)."""
DEFAULT_ENCODER: Literal["default"] = "default"
AnonymousLearning = Literal["trusted", "untrusted", "off"]
"""What a successful use teaches when its caller has no verified identity (no token): ``trusted``, a
local user's (a stdio gateway, an in-process session: one person); ``untrusted``, one caller for all of
them (:data:`~skilldeck.learning._ledger.ANONYMOUS`: at most half of a card's questions once an identified
caller taught it, never trusted, so never lifting a card for others beyond its own evidence); ``off``,
nothing (an HTTP gateway without token verification, unless its operator lets them teach)."""
"""``GatewayService(encoder=...)``: the encoder ``skilldeck select`` ranks with by default (MiniLM, fused)."""
logger = logging.getLogger(__name__)
_T = TypeVar("_T")


class DecisionLog(JsonLinesLog):
    """Every ``find``, ``load`` and ``call`` as one JSON line (``--log FILE``)."""

    def record(self, kind: str, client: str, **fields: Any) -> None:
        self._append({"kind": kind, "client": client, **fields})


def _digest(loaded: LoadedSkill) -> str:
    """The listed digest of a loaded skill's ``SKILL.md`` (what replicas compare), ``dynamic`` for a generated one."""
    resources = loaded.entry.resources
    if isinstance(resources, str):
        return resources
    return next((r.digest for r in resources if r.uri == loaded.uri), "")


class GatewayService:
    """Answers ``find``/``load``/``read_skill_file``/``call`` over a connected host (see the module docs).

    Args:
        upstreams: the port the decisions reach the upstreams through, or a connected
            :class:`~skilldeck.host.Host` to put :class:`~skilldeck.gateway._upstreams.HostUpstreams` over
            (the service keeps the port, never the host: the adapters that need the host are given it).
        policy: per-caller admission and tool routing over upstream skills and tools, by id.
        grants: ``(skill label, tool label)`` pairs: a skill of the first may activate tools of the second.
        pinned: ``(label, tool)`` pairs every client may call without loading them (``--pin``).
        encoder: the semantic encoder fused into the ranking; by default (``"default"``) the one
            ``skilldeck select`` uses, loaded at the first ``find`` (when it cannot load: lexical
            ranking, and one warning logged saying why); ``None``: lexical ranking only.
        cache_dir: where card vectors are kept by content between runs; ``None``: in memory, for
            the life of this service (either way a re-listed upstream re-encodes only what changed).
        threshold: override the calibrated abstention threshold.
        log: where every find/load/call is recorded.
        audit: where every policy decision on a call is recorded.
        max_clients: activations held at once (least recently used out first).
        shared: where activations are shared with other replicas of this gateway (``--redis``);
            ``None``: this process's table alone.
        learning: the usage ledger successful uses are recorded in and ranked with (see the module
            docs); ``None``: nothing is learned.
        explain_hidden: refusals of an id the policy hides say so ("hidden by the policy") rather than
            reading as for an id that does not exist (see the module docs: for the stdio caller).
    """

    def __init__(
        self,
        upstreams: Upstreams | Host,
        *,
        policy: Policy | None = None,
        grants: Iterable[tuple[str, str]] = (),
        pinned: Iterable[tuple[str, str]] = (),
        encoder: Encoder | Literal["default"] | None = DEFAULT_ENCODER,
        cache_dir: str | os.PathLike[str] | None = None,
        threshold: float | None = None,
        log: DecisionLog | None = None,
        audit: AuditLog | None = None,
        max_clients: int = 4_096,
        shared: ActivationStore | None = None,
        learning: Learner | None = None,
        anonymous: AnonymousLearning = "trusted",
        explain_hidden: bool = False,
    ) -> None:
        self.explain_hidden = explain_hidden
        self.learning = learning
        self.anonymous: AnonymousLearning = anonymous
        """What a use by a caller without a verified identity teaches (see :data:`AnonymousLearning`)."""
        self.shared = shared
        self.policy = policy
        self.grants = frozenset(grants)
        self.pinned = list(dict.fromkeys(pinned))
        self._encoder = encoder
        self.encoder_notice: str | None = None
        """Why ranking is lexical although the default encoder was asked for (it could not load)."""
        self.vectors = VectorCache(cache_dir)
        """Card vectors by content, shared by every index (each audience's, each registry generation's)."""
        self.threshold = threshold
        self.log = log or DecisionLog(keep=10_000)
        self.audit = audit or AuditLog()
        self.log.subscribe(annotate)  # each decision's fields on its span, while tracing (serving/_tracing.py)
        self.audit.subscribe(annotate_audit)
        self.activations = ActivationTable(max_clients)
        self.indexes = AudienceIndexes(self)
        """What each audience is offered: its cards, ranker and gate (see :mod:`~skilldeck.gateway._indexes`)."""
        self.usage = UsageRecorder(self)
        """The uses recorded in the usage ledger, and what the rankers read of it (see :mod:`~skilldeck.gateway._usage`)."""
        self._calls = HostUpstreams(upstreams, self.log) if isinstance(upstreams, Host) else None
        self.upstreams: Upstreams = self._calls if self._calls is not None else cast(Upstreams, upstreams)
        """Where the decisions reach the upstreams: what they list, verified loads and reads, admitted calls."""

    @property
    def parked(self) -> ParkedCalls:
        """2025-11-25 upstream calls held open while their 2026-07-28 callers answer (the host adapter's)."""
        if self._calls is None:
            raise AttributeError("parked calls are the host adapter's; this service was given its own upstreams")
        return self._calls.parked

    # -- the catalog -------------------------------------------------------------------------------

    @property
    def encoder(self) -> Encoder | None:
        """The encoder rankings fuse in (the default one is loaded on first use), ``None`` when lexical."""
        if self._encoder == DEFAULT_ENCODER:
            from skilldeck.select._api import default_encoder

            self._encoder, self.encoder_notice = default_encoder()
            if self.encoder_notice is not None:
                logger.warning("%s", self.encoder_notice)
        return self._encoder

    def reindex(self, label: str | None = None, tools: Iterable[str] | None = None) -> bool:
        """The host's registry changed: rebuild rankers on next use; drop active tools an upstream no longer lists.

        The card vectors stay (:attr:`vectors`, by content): the rebuilt rankers encode only the cards that changed.

        Returns whether any client's active tools changed (so its tool list should be re-announced).
        """
        self.indexes.clear()
        self.usage.generation += 1
        if label is None:
            return False
        keep = frozenset(tools) if tools is not None else self.upstreams.tool_names(label)
        changed = False
        for activation in self.activations.values():
            changed |= activation.forget_tools(label, keep)
        return changed

    def down(self, label: str) -> str | None:
        """Why ``label`` cannot be used now, and when it is tried again; ``None`` when it is up."""
        return down(self.upstreams.failures, label)

    def index_for(self, caller: Caller) -> AudienceIndex:
        """The cards ``caller`` may see, ranked by a selector built for them (see :mod:`~skilldeck.gateway._indexes`)."""
        return self.indexes.index_for(caller)

    def tools_for(self, caller: Caller) -> frozenset[str] | None:
        """Tool ids ``caller`` may load and call; ``None`` when no policy restricts them."""
        return self.indexes.tools_for(caller)

    def hidden_from(self, caller: Caller) -> tuple[int, int]:
        """How many tools and skills the upstreams list that the policy hides from ``caller`` (none without one)."""
        return self.indexes.hidden_from(caller)

    def history_a_tokens(self, caller: Caller) -> int:
        """Tokens of every tool schema this caller could be shown (History A), counted once per index."""
        return self.indexes.history_a_tokens(caller)

    # -- find --------------------------------------------------------------------------------------

    @traced("find")
    def find(
        self, caller: Caller, client: str, query: str, limit: int | None = None, *, needs: Sequence[str] | None = None
    ) -> dict[str, Any]:
        """Ranked cards for ``query`` (or for each of ``needs``, when the caller split the task), or an
        abstention with its reason. Never input schemas."""
        limit = DEFAULT_FIND_LIMIT if limit is None else max(1, min(int(limit), MAX_FIND_LIMIT))
        index = self.index_for(caller)
        decision = index.selector.decide(list(needs) if needs else query)
        cards = []
        shown: list[Scored] = []
        seen: set[str] = set()
        for scored in self._servers_first(index, decision):
            card_id = self.indexes.card_id(scored.card)
            if card_id in seen:
                continue
            seen.add(card_id)
            shown.append(scored)
            cards.append(
                {
                    "id": card_id,
                    "kind": scored.card.kind,
                    "server": scored.card.server,
                    "name": scored.card.name,
                    "description": neutralise_tags(scored.card.description),
                    "score": round(float(scored.score), SCORE_DECIMALS),
                }
            )
            if len(cards) >= limit:
                break
        abstain, reason = decision.abstain, decision.reason
        floor = index.selector.floor_for(decision)
        plausible = floor is not None and decision.confidence >= floor
        low_confidence = abstain and plausible and bool(cards)
        if low_confidence:
            abstain = False
            reason = (
                f"low confidence ({decision.confidence:.2f}, under the {index.selector.threshold_for(decision):.2f} "
                f"a sure choice needs): {cards[0]['id']} is the closest card; "
                + what_to_check(query if not needs else "; ".join(needs), shown[0])
            )
            if decision.indexing is not None:
                reason += indexing_note(decision.indexing)
        result: dict[str, Any] = {
            "abstain": abstain,
            "confidence": round(decision.confidence, SCORE_DECIMALS),
            "reason": reason,
            "cards": cards,
            "ranker": decision.ranker,
        }
        if low_confidence:
            result["low_confidence"] = True
        if decision.history:  # past questions of the card chosen that this question matched
            result["history"] = decision.history
        if decision.worked_before is not None:  # this very question already led to a successful call
            result["worked_before"] = decision.worked_before
        elif decision.like_before is not None and not abstain:  # one like it did, on the first card's server
            result["like_before"] = decision.like_before
            if decision.like_card is not None:
                result["like_before_card"] = self.indexes.card_id(decision.like_card)
        if decision.indexing is not None:  # answered lexically while the card vectors are encoded
            result["indexing"] = decision.indexing.to_json()
        unavailable = [
            {"server": label, "reason": failure.describe()}
            for label, failure in sorted(self.upstreams.failures.items())
        ]
        if unavailable:
            result["unavailable"] = unavailable
        if self.learning is not None and not self.shares(client):  # a shared path: see share_found
            self.activations.get(client).found(query, credited(cards, abstain, FILLER_GAP))
        self.log.record(
            "find",
            client,
            query=shorten(query),
            abstain=abstain,
            low_confidence=low_confidence,
            confidence=round(decision.confidence, 4),
            ranker=decision.ranker,
            chosen=[c["id"] for c in cards[:1]] if not abstain else [],
            scores=[[c["id"], c["score"]] for c in cards],
            tokens=count_tokens(json.dumps(result, ensure_ascii=False)),
            history_a_tokens=self.history_a_tokens(caller),
            **{key: shorten(str(result.get(key))) for key in ("worked_before", "like_before") if key in result},
        )
        return result

    async def find_learned(
        self, caller: Caller, client: str, query: str, limit: int | None = None, *, needs: Sequence[str] | None = None
    ) -> dict[str, Any]:
        """:meth:`find` once the caller's ranker has read what was learned: the ledger's changes made
        elsewhere (another replica, ``skilldeck history --clear``), a new index's whole history, the use
        just recorded (:meth:`~skilldeck.gateway._usage.UsageRecorder.history_read`: holding neither the event
        loop nor a thread, and bounded; past the bound the answer says it does not count the history yet)."""
        await self.usage.refresh_history(caller)
        read = await self.usage.history_read(caller)
        found = self.find(caller, client, query, limit, needs=needs)
        if not read:
            found["reason"] += HISTORY_UNREAD
        return found

    @staticmethod
    def _servers_first(index: AudienceIndex, decision: Decision) -> list[Scored]:
        """The decision's cards in the order :func:`shortlist_order` puts them."""
        return shortlist_order(decision, index.selector.ranker.best_card)

    # -- load --------------------------------------------------------------------------------------

    @traced("load")
    async def load(self, caller: Caller, client: str, ids: Iterable[str]) -> dict[str, Any]:
        """Load cards by id: verified skills and the schemas of exactly their tools, which become active."""
        await self.usage.refresh_history(caller)
        activation = self.activations.get(client)
        index = self.index_for(caller)
        allowed = self.tools_for(caller)
        skills: list[dict[str, Any]] = []
        tools: list[tuple[str, str]] = []
        refused: list[dict[str, str]] = []
        path = activation if self.learning is None or not self.shares(client) else Activation()
        followed: dict[str, list[tuple[str, str]]] = {}  # for a shared path: each card loaded, its tools
        for raw in dict.fromkeys(ids):
            card_id = str(raw)
            try:
                if card_id in index.ids and index.ids[card_id].kind == "skill":
                    loaded, named = await self._load_skill(caller, index, index.ids[card_id], allowed, refused)
                    activation.skills[card_id] = loaded
                    skills.append(
                        {
                            "id": card_id,
                            "uri": loaded.uri,
                            "verified": loaded.verified,
                            "content": loaded.tagged(self._rendered(caller, card_id, loaded.text)),
                            "files": [u for u in loaded.listed_files() if u != loaded.uri],
                        }
                    )
                    tools.extend(t for t in named if t not in tools)
                    path.loaded(card_id, named)
                    followed[card_id] = named
                else:
                    pair = self._tool(caller, index, card_id, allowed)
                    if pair not in tools:
                        tools.append(pair)
                    path.loaded(card_id, [pair])
                    followed[card_id] = [pair]
            except SkilldeckError as exc:
                refused.append({"id": shorten(card_id), "reason": str(exc), "code": refusal_code(exc)})
        if self.shares(client):  # another replica may take this client's next request
            assert self.shared is not None
            await self.shared.add(client, {s["id"]: _digest(activation.skills[s["id"]]) for s in skills}, tools)
            if self.learning is not None:
                await self.usage.on_path(self.shared.loaded(client, followed))
        activation.activate(tools)
        result = {
            "skills": skills,
            "tools": [self._schema(index, label, name) for label, name in tools],
            "refused": [{"id": r["id"], "reason": r["reason"]} for r in refused],
        }
        self.log.record(
            "load",
            client,
            ids=[shorten(str(i)) for i in ids][:20],
            skills=[s["id"] for s in skills],
            tools=[tool_id(*t) for t in tools],
            refused=refused,  # each with its code (the error's class, or needs_grant / policy), for metrics
            tokens=count_tokens(json.dumps(result, ensure_ascii=False)),
            history_a_tokens=self.history_a_tokens(caller),
        )
        return result

    def _rendered(self, caller: Caller, skill_id: str, text: str) -> str:
        """The skill's text as this caller reads it: the policy's ``{{ name }}`` variables filled in.

        The verified bytes are what the upstream listed; the rendering is the gateway's, for this caller.
        """
        rule = self.policy.rule_for(skill_id) if self.policy is not None else None
        if rule is None:
            return text
        return render_template(text, {"tenant": caller.tenant or "", "locale": caller.locale, **rule.values(caller)})

    async def _load_skill(
        self,
        caller: Caller,
        index: AudienceIndex,
        card: Card,
        allowed: frozenset[str] | None,
        refused: list[dict[str, str]],
    ) -> tuple[LoadedSkill, list[tuple[str, str]]]:
        record = self.upstreams.skill(card.server, card.uri or "")
        if record is None:
            raise GateRefused(f"{card.server}/{card.name} is no longer listed; call find again")
        loaded = await self.upstreams.load(record)  # verified against the listed entry, or raises
        named = list(card.tools)
        if not named:  # no metadata: tools quoted in the verified body
            server_tools = {label: list(listed) for label, listed in index.cards.tools.items()}
            named, _ = skill_tools(card.server, record.entry.frontmatter, loaded.body, server_tools)
        kept = []
        for label, name in named:
            refusal = self._tool_refusal(record, label, name, allowed)
            if refusal is None:
                kept.append((label, name))
            else:
                code, reason = refusal
                refused.append({"id": tool_id(label, name), "reason": reason, "code": code})
        return loaded, kept

    def _tool_refusal(
        self, record: SkillRecord, label: str, name: str, allowed: frozenset[str] | None
    ) -> tuple[str, str] | None:
        """Why a tool a skill names is not activated, as ``(code, reason)``; ``None`` when it is."""
        if label != record.label and (record.label, label) not in self.grants:
            return "needs_grant", (
                f"the skill {record.label}/{record.name} names a tool of another server ({label!r}); "
                f"the gateway activates it only with a grant (--grant {record.label}:{label})"
            )
        # the skill named the tool, so the caller knows of it: the policy's hiding it is said to anyone
        if allowed is not None and tool_id(label, name) not in allowed:
            return "policy", f"{tool_id(label, name)} is hidden by the policy (no rule routes it to you)"
        return None

    def _tool(
        self, caller: Caller, index: AudienceIndex, card_id: str, allowed: frozenset[str] | None
    ) -> tuple[str, str]:
        label, sep, name = card_id.partition("/")
        if sep and (down := self.down(label)) is not None:
            raise GateRefused(f"{down}; nothing was loaded")
        listed = index.cards.tools.get(label, {}) if sep else {}
        if name not in listed or (allowed is not None and card_id not in allowed):
            why = self.indexes.hidden(caller, index, card_id) if self.explain_hidden else None
            if why is not None:
                raise GateRefused(f"{card_id} is hidden by the policy: {why}; nothing was loaded")
            raise GateRefused(f"no card has the id {card_id!r}; ids come from find (LABEL/NAME)")
        return label, name

    @staticmethod
    def _schema(index: AudienceIndex, label: str, name: str) -> dict[str, Any]:
        """The upstream's tool entry as listed (``outputSchema``, ``annotations``, ``title``, ``icons``,
        ``_meta``... unchanged), named ``LABEL/TOOL`` for ``call``."""
        tool = index.cards.tools.get(label, {}).get(name) or {}
        out: dict[str, Any] = {"name": tool_id(label, name), "description": str(tool.get("description") or "")}
        out["inputSchema"] = tool.get("inputSchema") or {"type": "object"}
        out.update((k, v) for k, v in tool.items() if k not in out)
        return cast(dict[str, Any], neutralise_in(out))  # the upstream's prose cannot forge an origin tag

    # -- read a skill file -------------------------------------------------------------------------

    async def read_skill_file(self, client: str, skill: str, path: str) -> dict[str, Any]:
        """A supporting file of a skill this client loaded, verified against the held entry."""
        activation = self.activations.peek(client)
        loaded = activation.skills.get(skill) if activation is not None else None
        if loaded is None and self.shares(client):
            loaded = await self._shared_skill(client, skill)
        if loaded is None:
            loaded_ids = ", ".join(activation.skills) if activation and activation.skills else "none"
            raise GateRefused(f"{shorten(skill)!r} is not a loaded skill (loaded: {loaded_ids}); load it first")
        uri = self.upstreams.file_uri(loaded, path)
        data = await self.upstreams.read(loaded, path)
        mime = mime_type_for(uri)
        out: dict[str, Any] = {"skill": skill, "uri": uri, "mimeType": mime}
        if is_text_mime_type(mime):
            try:
                out["text"] = loaded.tagged(data.decode("utf-8"), uri)
                return out
            except UnicodeDecodeError:
                pass
        out["blob"] = base64.b64encode(data).decode("ascii")
        return out

    def shares(self, client: str) -> bool:
        """Whether ``client``'s activation is shared with other replicas: not a legacy session's.

        A legacy session lives on one replica, and its key names a connection of this process only
        (another replica, or this one after a restart, may give another client the same key).
        """
        return self.shared is not None and not per_connection(client)

    async def _shared_skill(self, client: str, skill: str) -> LoadedSkill | None:
        """A skill ``client`` loaded through another replica, loaded and verified again through this one's host.

        The shared store holds the id and the digest the other replica verified, never bytes: this
        replica serves only what it verified itself, and only when the digest is the same.
        """
        assert self.shared is not None
        shared = await self.shared.fetch(client)
        digest = shared.skills.get(skill) if shared is not None else None
        if digest is None:
            return None
        upstreams = self.upstreams
        record = next((r for r in upstreams.skills if upstreams.skill_id(r) == skill), None)
        if record is None:
            raise GateRefused(f"{shorten(skill)!r} is no longer listed; call find and load again")
        loaded = await upstreams.load(record)  # verified against the listed entry, or raises
        if _digest(loaded) != digest:
            raise GateRefused(f"{shorten(skill)!r} changed since you loaded it; load it again")
        self.activations.get(client).skills[skill] = loaded
        return loaded

    # -- call --------------------------------------------------------------------------------------

    def check_call(
        self, caller: Caller, client: str, name: str, arguments: Mapping[str, Any] | None
    ) -> tuple[str, str]:
        """``(label, tool)`` for a call that may be sent; a :class:`~skilldeck.errors.GateRefused` otherwise.

        The gate (listed, active for this client, arguments valid against the upstream schema) and
        the policy (routed to this caller) both decide before anything is sent; every policy
        decision is audited.
        """
        index = self.index_for(caller)
        activation = self.activations.peek(client) or Activation()
        pinned = [(label, name) for label, name in self.pinned if name in index.cards.tools.get(label, {})]
        if index.gate is None:
            index.gate = ToolGate(index.cards.tools)
        gate = index.gate.with_active([*activation.tools, *pinned])
        try:
            label, tool = gate.check(name, arguments)
        except GateRefused as refused:
            prefix, sep, _ = name.partition("/")
            down = self.down(prefix) if sep else None
            # an upstream not listed because it is down (since the start, say): say so
            error = refused if down is None else GateRefused(f"{down}; the call was not sent")
            code = "upstream_down" if error is not refused else refusal_code(refused)
            self.log.record("call", client, tool=shorten(name), refused=str(error), reason=code)
            hidden = self.indexes.hidden_tool(caller, index, name) if isinstance(refused, ToolNotListed) else None
            if hidden is not None:  # the policy hid it from this caller's listing: a policy decision too
                self.audit.record(caller, hidden, allowed=False, reason=NOT_GRANTED)
                if self.explain_hidden:
                    why = self.indexes.hidden(caller, index, hidden)
                    raise GateRefused(f"{hidden} is hidden by the policy: {why}; the call was not sent") from None
            if error is refused:
                raise
            raise error from None
        if self.tools_for(caller) is not None:
            # the caller's gate lists only what the policy routes to it (its index, pinned tools
            # included), so a call the gate let through is one the policy granted
            self.audit.record(caller, tool_id(label, tool), allowed=True, reason=GRANTED)
        return label, tool

    @traced("call")
    async def call(
        self,
        caller: Caller,
        client: str,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        progress: Progress | None = None,
        log: LogSink | None = None,
        log_level: str | None = None,
        relay: CallRelay | None = None,
    ) -> dict[str, Any]:
        """Send an active tool's call upstream once :meth:`check_call` admits it; the result as it came.

        ``progress`` (when the calling client asked for progress) receives every progress notification
        the upstream sends for this call. Cancelling the awaiting task cancels the upstream call: the
        SDK client sends ``notifications/cancelled`` for it.

        ``log`` receives the log messages the upstream sends for this call: those that arrive in the
        task serving this call (the SDK carries it to an in-process session and to the call's own HTTP
        response stream), else those sent while this call is the only one waiting on that upstream
        (over stdio nothing ties a message to a request, so while several calls share the upstream its
        messages go to none of them, never to the wrong client); ``log_level`` is asked of a
        2026-07-28 upstream, which logs only when a request opts in.

        ``relay`` carries the upstream's sampling, elicitation and roots requests back to the calling
        client (see :mod:`skilldeck.gateway._relay`); a 2026-07-28 caller may get an ``input_required``
        result, and its retry (``relay.input_responses``/``request_state``) continues the call.
        """
        if self.shares(client):  # the tools this client loaded through any replica
            assert self.shared is not None
            shared = await self.shared.fetch(client)
            if shared is not None:
                self.activations.get(client).activate(shared.tools)
        label, tool = self.check_call(caller, client, name, arguments)
        result = await self.upstreams.call_tool(
            ToolCall(client, label, tool, dict(arguments or {}), progress, log, log_level, relay)
        )
        if result.get("resultType", "complete") == "complete" and not result.get("isError"):
            await self.usage.learn(caller, client, (label, tool))
        return result
