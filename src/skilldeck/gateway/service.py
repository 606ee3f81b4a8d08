"""The gateway's decisions: find, load, read a skill file, call — per caller and per client. No server SDK.

:class:`GatewayService` sits on a connected :class:`~skilldeck.host.Host` (the upstream servers,
verified loading, budgets, approvals) and answers the four meta-tools. Every answer is a plain
``dict`` (the tool's ``structuredContent``); every refusal is a :class:`~skilldeck.errors.GateRefused` with a reason a
model can act on, raised *before* anything is sent upstream.

Per caller (:class:`~skilldeck.server.policy.Caller`, from the verified token or the policy's
default identity) a policy in the format of ``skilldeck serve --policy`` decides, by id:

* skills, keyed ``LABEL/NAME``: admitted or not (hidden from ``find``, refused by ``load``);
* tools, ``LABEL/TOOL``: a caller may load and call only what the routes of its admitted skills
  grant it, plus the policy's ``public_tools``;
* instructions: ``{{ name }}`` placeholders in a loaded ``SKILL.md`` are filled with the caller's
  variables (after verification: the bytes checked are the upstream's).

Per client (an :class:`~skilldeck.gateway.activation.Activation`) the service remembers what was
loaded: only those tools pass the gate. A skill may name tools of another server
(``metadata["dev.skilldeck/tools"]: "files/read_file"``); such a tool is activated only when the
host grants that skill's server the other label (``grants``), never implied by the skill itself.
"""

from __future__ import annotations

import base64
import json
import logging
import os
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, cast

from mcp.shared.dispatcher import ProgressFnT
from mcp_types import (
    INVALID_REQUEST,
    LOG_LEVEL_META_KEY,
    ErrorData,
    InputRequest,
    InputRequiredResult,
    InputResponse,
    InputResponses,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
    RequestParamsMeta,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter, ValidationError

from skilldeck._records import JsonLinesLog
from skilldeck.ask import snapshot_from_host
from skilldeck.errors import GateRefused, SkilldeckError, shorten
from skilldeck.gateway.activation import Activation, ActivationStore, ActivationTable, per_connection
from skilldeck.gateway.relay import CALLING, CallRelay, LogSink, ParkedCall, ParkedCalls, Waiting, capability_error
from skilldeck.host import Host, LoadedSkill
from skilldeck.host.connect import Connected
from skilldeck.host.registry import SkillRecord
from skilldeck.select.cards import Card, CardSet, build_cards, skill_tools
from skilldeck.select.decide import Decision, Selector, indexing_note
from skilldeck.select.gate import ToolGate
from skilldeck.select.project import count_tokens, history_a
from skilldeck.select.rank import Encoder, Scored
from skilldeck.select.vectors import VectorCache
from skilldeck.server.audience import allowed_tools
from skilldeck.server.audit import AuditLog
from skilldeck.server.policy import Caller, Policy, render_template
from skilldeck.skill.tags import DESCRIPTIVE_KEYS, neutralise_in, neutralise_tags
from skilldeck.skill.uri import is_text_mime_type, mime_type_for

__all__ = ["DecisionLog", "GatewayService"]

DEFAULT_FIND_LIMIT = 5
SERVERS_FIRST = 5
"""``find`` leads with the best card of each of this many servers, in the decision's server order."""
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"
"""The base protocol's per-response stamp of the answering server (not part of a tool's result)."""
ORIGIN_META = "dev.skilldeck/server"
"""``_meta`` key of a proxied result naming the label of the upstream that produced it."""
MAX_SELECTORS = 32
"""Rankers kept at once, one per audience a policy tells apart (each indexes that audience's cards)."""
_INPUT_RESPONSES: TypeAdapter[InputResponses] = TypeAdapter(InputResponses)
DEFAULT_ENCODER: Literal["default"] = "default"
"""``GatewayService(encoder=...)``: the encoder ``skilldeck select`` ranks with by default (MiniLM, fused)."""
logger = logging.getLogger(__name__)
PLAUSIBLE: dict[str, float] = {"semantic": 0.3379, "lexical": 0.3055}
"""Per ranker, the confidence from which ``find`` shows its best card flagged ``low_confidence`` rather
than abstaining, when it falls short of the calibrated threshold: the model sees five cards and can
judge a close one, while an abstention hides them all. Each keeps 97% of LiveMCPBench half A's
in-scope questions through the gateway (``bench/gateway_find.py --fit 0.97``, which also reports the
cost on the out-of-scope twins); the calibrated thresholds keep 90%."""


class DecisionLog(JsonLinesLog):
    """Every ``find``, ``load`` and ``call`` as one JSON line (``--log FILE``)."""

    def record(self, kind: str, client: str, **fields: Any) -> None:
        self._append({"kind": kind, "client": client, **fields})


@dataclass
class _Index:
    """What one registry generation offers one audience: its cards, ranker and History A size."""

    cards: CardSet
    selector: Selector
    ids: dict[str, Card]
    history_a_tokens: int | None = None
    gate: ToolGate | None = None
    """The listing's gate (validators built once per schema); each call checks a view with the client's tools."""
    allowed: frozenset[str] | None = None
    """Under a policy, the tool ids this audience may load and call (computed once per index, not per call)."""


def tool_id(label: str, tool: str) -> str:
    return f"{label}/{tool}"


def _digest(loaded: LoadedSkill) -> str:
    """The listed digest of a loaded skill's ``SKILL.md`` (what replicas compare), ``dynamic`` for a generated one."""
    resources = loaded.entry.resources
    if isinstance(resources, str):
        return resources
    return next((r.digest for r in resources if r.uri == loaded.uri), "")


def _neutralised(request: InputRequest) -> InputRequest:
    """``request`` with its prose passed through :func:`~skilldeck.skill.tags.neutralise_in`."""
    wire = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    cleaned = neutralise_in(wire)
    return request if cleaned is wire else type(request).model_validate(cleaned)


class GatewayService:
    """Answers ``find``/``load``/``read_skill_file``/``call`` over a connected host (see the module docs).

    Args:
        host: the upstream servers, connected.
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
    """

    def __init__(
        self,
        host: Host,
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
    ) -> None:
        self.host = host
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
        self.activations = ActivationTable(max_clients)
        self._indexes: OrderedDict[Any, _Index] = OrderedDict()
        self._in_flight: dict[str, list[Waiting]] = {}
        """Per upstream label, each proxied call now waiting on it (where its log messages and questions go)."""
        self._listening = False
        self.parked = ParkedCalls()
        """2025-11-25 upstream calls held open while their 2026-07-28 callers answer (bounded, with a TTL)."""
        if host.connections.server_requests:
            host.connections.server_request_handler = self._upstream_request

    # -- the catalog -------------------------------------------------------------------------------

    @property
    def encoder(self) -> Encoder | None:
        """The encoder rankings fuse in (the default one is loaded on first use), ``None`` when lexical."""
        if self._encoder == DEFAULT_ENCODER:
            from skilldeck.select.encoders import default_encoder

            self._encoder, self.encoder_notice = default_encoder()
            if self.encoder_notice is not None:
                logger.warning("%s", self.encoder_notice)
        return self._encoder

    def reindex(self, label: str | None = None, tools: Iterable[str] | None = None) -> bool:
        """The host's registry changed: rebuild rankers on next use; drop active tools an upstream no longer lists.

        The card vectors stay (:attr:`vectors`, by content): the rebuilt rankers encode only the cards that changed.

        Returns whether any client's active tools changed (so its tool list should be re-announced).
        """
        for index in self._indexes.values():
            index.selector.ranker.close()  # stop encoding vectors for a catalog that changed
        self._indexes.clear()
        if label is None:
            return False
        keep = frozenset(tools) if tools is not None else frozenset(t.name for t in self.host.registry.tools(label))
        changed = False
        for activation in self.activations.values():
            changed |= activation.forget_tools(label, keep)
        return changed

    def _audience(self, caller: Caller) -> Any:
        return None if self.policy is None else caller.audience

    def _key(self, caller: Caller) -> Any:
        """What an index is cached under: the caller's audience and the upstreams down at the time."""
        return self._audience(caller), frozenset(self.host.failures)

    def down(self, label: str) -> str | None:
        """Why ``label`` cannot be used now, and when it is tried again; ``None`` when it is up."""
        failure = self.host.failures.get(label)
        return None if failure is None else f"{label!r} is down ({failure.describe()})"

    def index_for(self, caller: Caller) -> _Index:
        """The cards ``caller`` may see, ranked by a selector built for them (cached per audience).

        The cards of an upstream that is down are left out (so they never rank above one that can be
        used); its tools stay in the gate's listing, so loading or calling one is refused with why.
        """
        key = self._key(caller)
        found = self._indexes.get(key)
        if found is not None:
            self._indexes.move_to_end(key)
            return found
        cards = build_cards(snapshot_from_host(self.host))
        down = key[1]
        if down:
            cards = CardSet([c for c in cards.cards if c.server not in down], cards.tools, cards.not_offered)
        if self.policy is not None:
            cards = self._admitted_cards(cards, caller)
        ids: dict[str, Card] = {}
        for card in cards.cards:
            ids.setdefault(self.card_id(card), card)
        # with an encoder, card vectors not in the cache are encoded on a thread of their own: `find`
        # answers lexically (and says so) meanwhile, rather than the event loop waiting for the catalog
        selector = Selector(cards, encoder=self.encoder, threshold=self.threshold, background=True, cache=self.vectors)
        index = _Index(cards, selector, ids)
        if len(self._indexes) >= MAX_SELECTORS:
            self._indexes.popitem(last=False)[1].selector.ranker.close()
        self._indexes[key] = index
        return index

    def card_id(self, card: Card) -> str:
        if card.kind == "skill":
            record = self.host.registry.get(card.server, card.uri or "")
            if record is not None:
                return self.host.registry.qualified_name(record)
        return tool_id(card.server, card.name)

    def tools_for(self, caller: Caller) -> frozenset[str] | None:
        """Tool ids ``caller`` may load and call; ``None`` when no policy restricts them."""
        if self.policy is None:
            return None
        index = self._indexes.get(self._key(caller))
        if index is not None and index.allowed is not None:
            return index.allowed
        ids = [self.host.registry.qualified_name(r) for r in self.host.registry.skills]
        allowed = allowed_tools(self.policy, ids, caller)
        if index is not None:  # the audience's index is dropped with it on reindex
            index.allowed = allowed
        return allowed

    def _admits_skill(self, caller: Caller, skill_id: str) -> bool:
        if self.policy is None:
            return True
        rule = self.policy.rule_for(skill_id)
        return rule is None or rule.admits(caller)

    def _admitted_cards(self, cards: CardSet, caller: Caller) -> CardSet:
        allowed = self.tools_for(caller) or frozenset()
        kept = []
        for card in cards.cards:
            if card.kind == "skill":
                if self._admits_skill(caller, self.card_id(card)):
                    kept.append(card)
            elif tool_id(card.server, card.name) in allowed:
                kept.append(card)
        tools = {
            label: {name: tool for name, tool in listed.items() if tool_id(label, name) in allowed}
            for label, listed in cards.tools.items()
        }
        return CardSet(kept, tools, cards.not_offered)

    def history_a_tokens(self, caller: Caller) -> int:
        """Tokens of every tool schema this caller could be shown (History A), counted once per index."""
        index = self.index_for(caller)
        if index.history_a_tokens is None:
            index.history_a_tokens = history_a(index.cards).tokens
        return index.history_a_tokens

    # -- find --------------------------------------------------------------------------------------

    def find(
        self, caller: Caller, client: str, query: str, limit: int | None = None, *, needs: Sequence[str] | None = None
    ) -> dict[str, Any]:
        """Ranked cards for ``query`` (or for each of ``needs``, when the caller split the task), or an
        abstention with its reason. Never input schemas."""
        limit = DEFAULT_FIND_LIMIT if limit is None else max(1, min(int(limit), 50))
        index = self.index_for(caller)
        decision = index.selector.decide(list(needs) if needs else query)
        cards = []
        seen: set[str] = set()
        for scored in self._servers_first(index, decision):
            card_id = self.card_id(scored.card)
            if card_id in seen:
                continue
            seen.add(card_id)
            cards.append(
                {
                    "id": card_id,
                    "kind": scored.card.kind,
                    "server": scored.card.server,
                    "name": scored.card.name,
                    "description": neutralise_tags(scored.card.description),
                    "score": round(float(scored.score), 4),
                }
            )
            if len(cards) >= limit:
                break
        abstain, reason = decision.abstain, decision.reason
        plausible = self.threshold is None and decision.confidence >= PLAUSIBLE[decision.ranker]
        low_confidence = abstain and plausible and bool(cards)
        if low_confidence:
            abstain = False
            reason = (
                f"low confidence ({decision.confidence:.2f}, under the {index.selector.threshold_for(decision):.2f} "
                f"a sure choice needs): {cards[0]['id']} is the closest card; check that it fits before loading it"
            )
            if decision.indexing is not None:
                reason += indexing_note(decision.indexing)
        result: dict[str, Any] = {
            "abstain": abstain,
            "confidence": round(decision.confidence, 4),
            "reason": reason,
            "cards": cards,
            "ranker": decision.ranker,
        }
        if low_confidence:
            result["low_confidence"] = True
        if decision.indexing is not None:  # answered lexically while the card vectors are encoded
            result["indexing"] = decision.indexing.to_json()
        unavailable = [
            {"server": label, "reason": failure.describe()} for label, failure in sorted(self.host.failures.items())
        ]
        if unavailable:
            result["unavailable"] = unavailable
        self.log.record(
            "find",
            client,
            query=shorten(query),
            abstain=abstain,
            low_confidence=low_confidence,
            confidence=result["confidence"],
            ranker=decision.ranker,
            chosen=[c["id"] for c in cards[:1]] if not abstain else [],
            scores=[[c["id"], c["score"]] for c in cards],
            tokens=count_tokens(json.dumps(result, ensure_ascii=False)),
            history_a_tokens=self.history_a_tokens(caller),
        )
        return result

    @staticmethod
    def _servers_first(index: _Index, decision: Decision) -> list[Scored]:
        """The decision's cards, led by the best card of each of its first :data:`SERVERS_FIRST` servers.

        The five cards a model sees then name five servers in the order the ranking puts them
        (including the place it gives the server a need the question implies, such as a file path,
        whose best card for that need is shown), rather than the several tools of one server that
        score alike; the rest follow by score."""
        best: dict[str, Scored] = {}
        for scored in decision.ranked:
            best.setdefault(scored.card.server, scored)
        head_servers = decision.servers[:SERVERS_FIRST]
        for entry in decision.needs:
            card = index.selector.ranker.best_card(entry["need"]) if entry.get("implied") else None
            if card is not None and card.server not in best:
                score = next((s for label, s in head_servers if label == card.server), 0.0)
                best[card.server] = Scored(card, score, 0.0)
        head = [best[label] for label, _ in head_servers if label in best]
        keys = {s.card.key for s in head}
        return [*head, *(s for s in decision.ranked if s.card.key not in keys)]

    # -- load --------------------------------------------------------------------------------------

    async def load(self, caller: Caller, client: str, ids: Iterable[str]) -> dict[str, Any]:
        """Load cards by id: verified skills and the schemas of exactly their tools, which become active."""
        activation = self.activations.get(client)
        index = self.index_for(caller)
        allowed = self.tools_for(caller)
        skills: list[dict[str, Any]] = []
        tools: list[tuple[str, str]] = []
        refused: list[dict[str, str]] = []
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
                else:
                    pair = self._tool(index, card_id, allowed)
                    if pair not in tools:
                        tools.append(pair)
            except SkilldeckError as exc:
                refused.append({"id": shorten(card_id), "reason": str(exc)})
        if self._shares(client):  # another replica may take this client's next request
            assert self.shared is not None
            await self.shared.add(client, {s["id"]: _digest(activation.skills[s["id"]]) for s in skills}, tools)
        activation.activate(tools)
        result = {
            "skills": skills,
            "tools": [self._schema(index, label, name) for label, name in tools],
            "refused": refused,
        }
        self.log.record(
            "load",
            client,
            ids=[shorten(str(i)) for i in ids][:20],
            skills=[s["id"] for s in skills],
            tools=[tool_id(*t) for t in tools],
            refused=refused,
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
        index: _Index,
        card: Card,
        allowed: frozenset[str] | None,
        refused: list[dict[str, str]],
    ) -> tuple[LoadedSkill, list[tuple[str, str]]]:
        record = self.host.registry.get(card.server, card.uri or "")
        if record is None:
            raise GateRefused(f"{card.server}/{card.name} is no longer listed; call find again")
        loaded = await self.host.load(record)  # verified against the listed entry, or raises
        named = list(card.tools)
        if not named:  # no metadata: tools quoted in the verified body
            server_tools = {label: list(listed) for label, listed in index.cards.tools.items()}
            named, _ = skill_tools(card.server, record.entry.frontmatter, loaded.body, server_tools)
        kept = []
        for label, name in named:
            reason = self._tool_refusal(record, label, name, allowed)
            if reason is None:
                kept.append((label, name))
            else:
                refused.append({"id": tool_id(label, name), "reason": reason})
        return loaded, kept

    def _tool_refusal(self, record: SkillRecord, label: str, name: str, allowed: frozenset[str] | None) -> str | None:
        if label != record.label and (record.label, label) not in self.grants:
            return (
                f"the skill {record.label}/{record.name} names a tool of another server ({label!r}); "
                f"the gateway activates it only with a grant (--grant {record.label}:{label})"
            )
        if allowed is not None and tool_id(label, name) not in allowed:
            return f"{tool_id(label, name)} is not routed to you by the policy"
        return None

    def _tool(self, index: _Index, card_id: str, allowed: frozenset[str] | None) -> tuple[str, str]:
        label, sep, name = card_id.partition("/")
        if sep and (down := self.down(label)) is not None:
            raise GateRefused(f"{down}; nothing was loaded")
        listed = index.cards.tools.get(label, {}) if sep else {}
        if name not in listed or (allowed is not None and card_id not in allowed):
            raise GateRefused(f"no card has the id {card_id!r}; ids come from find (LABEL/NAME)")
        return label, name

    @staticmethod
    def _schema(index: _Index, label: str, name: str) -> dict[str, Any]:
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
        if loaded is None and self._shares(client):
            loaded = await self._shared_skill(client, skill)
        if loaded is None:
            loaded_ids = ", ".join(activation.skills) if activation and activation.skills else "none"
            raise GateRefused(f"{shorten(skill)!r} is not a loaded skill (loaded: {loaded_ids}); load it first")
        uri = self.host.loader(loaded.label).listed(loaded, path)
        data = await self.host.read(loaded, path)
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

    def _shares(self, client: str) -> bool:
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
        registry = self.host.registry
        record = next((r for r in registry.skills if registry.qualified_name(r) == skill), None)
        if record is None:
            raise GateRefused(f"{shorten(skill)!r} is no longer listed; call find and load again")
        loaded = await self.host.load(record)  # verified against the listed entry, or raises
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
            self.log.record("call", client, tool=shorten(name), refused=str(error))
            if error is refused:
                raise
            raise error from None
        allowed = self.tools_for(caller)
        if allowed is not None:
            granted = tool_id(label, tool) in allowed
            self.audit.record(
                caller,
                tool_id(label, tool),
                allowed=granted,
                reason="granted" if granted else "not granted by any admitted skill",
            )
            if not granted:
                raise GateRefused(f"{tool_id(label, tool)} is not routed to you by the policy; the call was not sent")
        return label, tool

    async def call(
        self,
        caller: Caller,
        client: str,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        progress: ProgressFnT | None = None,
        log: LogSink | None = None,
        log_level: str | None = None,
        relay: CallRelay | None = None,
    ) -> dict[str, Any]:
        """Send an active tool's call upstream, on the session that listed it; the result as it came.

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
        client (see :mod:`skilldeck.gateway.relay`); a 2026-07-28 caller may get an ``input_required``
        result, and its retry (``relay.input_responses``/``request_state``) continues the call.
        """
        if self._shares(client):  # the tools this client loaded through any replica
            assert self.shared is not None
            shared = await self.shared.fetch(client)
            if shared is not None:
                self.activations.get(client).activate(shared.tools)
        label, tool = self.check_call(caller, client, name, arguments)
        connected = self.host.connections.connected.get(label)
        if connected is None:
            raise GateRefused(f"{self.down(label) or repr(label) + ' is not connected'}; the call was not sent")
        if log is not None and not self._listening:
            self.host.connections.add_message_listener(self._upstream_message)
            self._listening = True
        meta = cast(RequestParamsMeta, {LOG_LEVEL_META_KEY: log_level}) if log and log_level else None
        args = dict(arguments or {})
        relaying = relay is not None and self.host.connections.server_requests
        if relaying and relay is not None and relay.modern:
            if connected.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                return await self._parked_round(client, label, tool, args, connected, relay, progress, log, meta)
            return await self._input_required_round(client, label, tool, args, connected, relay, progress, log, meta)
        waiting = Waiting(log, relay if relaying else None)
        try:
            with self._waiting(label, waiting):
                result = await connected.client.call_tool(tool, args, progress_callback=progress, meta=meta)
        except Exception as exc:  # the upstream failed or timed out: the model hears why
            return self._failed(client, label, tool, connected.explain(exc))
        return self._result(client, label, tool, result)

    @contextmanager
    def _waiting(self, label: str, waiting: Waiting) -> Iterator[None]:
        """While the body runs, ``waiting`` is the call this task serves on ``label`` (and is listed as waiting)."""
        calls = self._in_flight.setdefault(label, [])
        calls.append(waiting)
        token = CALLING.set((label, waiting))
        try:
            yield
        finally:
            CALLING.reset(token)
            calls.remove(waiting)
            if not calls:
                self._in_flight.pop(label, None)

    def _failed(self, client: str, label: str, tool: str, reason: str) -> dict[str, Any]:
        self.log.record("call", client, tool=tool_id(label, tool), error=reason)
        return {"content": [{"type": "text", "text": f"[{label}] {tool} failed: {reason}"}], "isError": True}

    def _result(self, client: str, label: str, tool: str, result: Any) -> dict[str, Any]:
        payload: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        # The upstream's response stamp names the upstream; the gateway's answer is stamped with its own.
        # Every other `_meta` key of the result passes through, and the origin label is added.
        meta = {k: v for k, v in (payload.get("_meta") or {}).items() if k != SERVER_INFO_META}
        payload["_meta"] = {**meta, ORIGIN_META: label}
        # What the upstream answered enters the caller's model context: it cannot forge an origin tag.
        for key, keys in (("content", DESCRIPTIVE_KEYS), ("structuredContent", None)):
            if key in payload:
                payload[key] = neutralise_in(payload[key], keys)
        self.log.record("call", client, tool=tool_id(label, tool), isError=bool(payload.get("isError")))
        return payload

    def _input_required(
        self, client: str, label: str, tool: str, requests: dict[str, Any], state: str | None
    ) -> dict[str, Any]:
        self.log.record("call", client, tool=tool_id(label, tool), inputRequired=sorted(requests))
        result = InputRequiredResult(input_requests=requests or None, request_state=state)
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def _input_required_round(
        self,
        client: str,
        label: str,
        tool: str,
        args: dict[str, Any],
        connected: Connected,
        relay: CallRelay,
        progress: ProgressFnT | None,
        log: LogSink | None,
        meta: RequestParamsMeta | None,
    ) -> dict[str, Any]:
        """A 2026-07-28 caller on a 2026-07-28 upstream: its questions and ``requestState`` pass through."""
        responses = None
        if relay.input_responses is not None:
            try:
                responses = _INPUT_RESPONSES.validate_python(relay.input_responses, by_name=False)
            except ValidationError:
                raise GateRefused(
                    "inputResponses holds an answer that is not a valid result; nothing was sent"
                ) from None
        try:
            with self._waiting(label, Waiting(log, relay)):
                result = await connected.client.session.call_tool(
                    tool,
                    args,
                    progress_callback=progress,
                    meta=meta,
                    input_responses=responses,
                    request_state=relay.request_state,
                    allow_input_required=True,
                )
        except Exception as exc:
            return self._failed(client, label, tool, connected.explain(exc))
        if isinstance(result, InputRequiredResult):
            refused = capability_error(result.input_requests or {}, relay.capabilities)
            if refused is not None:
                self.log.record("call", client, tool=tool_id(label, tool), error=refused.error.message)
                raise refused
            return self._input_required(client, label, tool, dict(result.input_requests or {}), result.request_state)
        return self._result(client, label, tool, result)

    async def _parked_round(
        self,
        client: str,
        label: str,
        tool: str,
        args: dict[str, Any],
        connected: Connected,
        relay: CallRelay,
        progress: ProgressFnT | None,
        log: LogSink | None,
        meta: RequestParamsMeta | None,
    ) -> dict[str, Any]:
        """A 2026-07-28 caller on a 2025-11-25 upstream: the upstream call runs held open between rounds."""
        if relay.request_state is not None:
            parked = self.parked.resume(relay.request_state, client, tool_id(label, tool))
            parked.answer(relay.input_responses)
        elif relay.input_responses:
            raise GateRefused("inputResponses without requestState answer nothing; call the tool again without them")
        else:
            parked = self.parked.new(client, tool_id(label, tool), relay.capabilities)
            self.host.connections.start_soon(self._run_parked, parked, label, tool, args, connected, meta)
        parked.progress, parked.log = progress, log
        try:
            questions = await parked.next_round()
        except BaseException:  # the caller gave up on this round: the upstream call is cancelled
            parked.scope.cancel()
            self.parked.drop(parked)
            raise
        finally:
            parked.progress = parked.log = None
        if questions:
            return self._input_required(client, label, tool, questions, parked.token)
        self.parked.drop(parked)
        if parked.result is None:
            return self._failed(client, label, tool, "the call was cancelled")
        return parked.result

    async def _run_parked(
        self,
        parked: ParkedCall,
        label: str,
        tool: str,
        args: dict[str, Any],
        connected: Connected,
        meta: RequestParamsMeta | None,
    ) -> None:
        async def progress(progress: float, total: float | None, message: str | None) -> None:
            if parked.progress is not None:
                await parked.progress(progress, total, message)

        async def log(params: LoggingMessageNotificationParams) -> None:
            if parked.log is not None:
                await parked.log(params)

        try:
            with parked.scope, self._waiting(label, Waiting(log, parked=parked)):
                try:
                    result = await connected.client.call_tool(tool, args, progress_callback=progress, meta=meta)
                    parked.result = self._result(parked.client, label, tool, result)
                except Exception as exc:
                    parked.result = self._failed(parked.client, label, tool, connected.explain(exc))
        finally:
            parked.finish()
            if parked.abandoned:
                self.parked.drop(parked)

    def _serving(self, label: str) -> Waiting | None:
        """The proxied call a message from ``label`` belongs to: the one this task serves, else the only one waiting."""
        current = CALLING.get()
        if current is not None and current[0] == label:
            return current[1]
        waiting = self._in_flight.get(label) or []
        return waiting[0] if len(waiting) == 1 else None

    async def _upstream_message(self, label: str, message: Any) -> None:
        """A log message from ``label`` goes to the call it belongs to, when that can be told."""
        if not isinstance(message, LoggingMessageNotification):
            return
        waiting = self._serving(label)
        if waiting is not None and waiting.log is not None:
            await waiting.log(message.params)

    async def _upstream_request(self, label: str, request: InputRequest) -> InputResponse | ErrorData:
        """A sampling, elicitation or roots request from ``label``, put to the client whose call it serves."""
        waiting = self._serving(label)
        if waiting is not None:  # its messages reach the caller's model: they cannot forge an origin tag
            return await waiting.answer(_neutralised(request))
        several = len(self._in_flight.get(label) or []) > 1
        why = (
            "several proxied calls wait on this server, and a 2025-11-25 request cannot be tied to one of them"
            if several
            else "no proxied call is waiting on this server"
        )
        return ErrorData(code=INVALID_REQUEST, message=f"{request.method} refused by the gateway: {why}")
