"""Which activation a client's request belongs to: its key, worked out the same way for every request. Pure.

A key names the client (a legacy connection, the stdio process, or on a 2026-07-28 connection the
verified token's subject, client id or token digest) and, optionally, the conversation the client
keeps apart (``_meta["dev.skilldeck/conversation"]``). See :mod:`skilldeck.gateway._activation` for
what is kept under a key.
"""

from __future__ import annotations

import hashlib
import json
from typing import Final

__all__ = ["MAX_CONVERSATION_CHARS", "client_key", "per_connection"]

MAX_CONVERSATION_CHARS: Final = 128
"""The longest conversation id a client may send; the gateway refuses a request with a longer or non-string one."""


def client_key(
    kind: str,
    subject: str | None,
    conversation: object = None,
    *,
    client_id: str | None = None,
    token: str | None = None,
) -> str:
    """The activation key for a client: ``kind`` (``stdio``, ``session:<id>``, ``http``), who, and which conversation.

    Who is the token's subject; without one, its client id; without either, the token itself (by
    digest), so two such tokens never share an activation; with no token, ``anonymous``. The key is
    a JSON array of its parts, so no value can be written to read as two parts (``sub="alice|c1"``
    is not alice's conversation ``c1``).

    A conversation id that is not a short printable string is ignored here (it only separates one
    caller's activations, it never grants anything); the gateway refuses such a request before.
    """
    if subject:
        parts = [kind, "subject", subject]
    elif client_id:
        parts = [kind, "client", client_id]
    elif token:
        parts = [kind, "token", hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()]
    else:
        parts = [kind, "anonymous"]
    if isinstance(conversation, str) and 0 < len(conversation) <= MAX_CONVERSATION_CHARS and conversation.isprintable():
        parts.append(conversation)
    return json.dumps(parts, ensure_ascii=False, separators=(",", ":"))


def per_connection(key: str) -> bool:
    """Whether ``key`` (a :func:`client_key`) names one legacy connection of this process: never shared."""
    return key.startswith('["session:')
