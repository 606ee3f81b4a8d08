"""A synthetic catalog of N tool cards, grown from LiveMCPBench's servers (for latency at scale).

Copy ``k`` of a server gets the label ``<label>-r<k>`` (copy 0 keeps the original) and every tool
description loses a deterministic ~15% of its words and has two of the remaining ones swapped,
so no two copies index identically. Servers are added until N tools; the last copy is cut to
reach exactly N. The result is a snapshot document (``{"servers": [...]}``).
"""

from __future__ import annotations

import random
from typing import Any

__all__ = ["synthesize"]


def _perturb(text: str, rng: random.Random) -> str:
    words = text.split()
    if len(words) < 4:
        return text
    kept = [w for w in words if rng.random() > 0.15] or words
    if len(kept) > 3:
        i, j = rng.sample(range(len(kept)), 2)
        kept[i], kept[j] = kept[j], kept[i]
    return " ".join(kept)


def synthesize(servers: list[dict[str, Any]], n_tools: int = 10_000, seed: int = 7) -> dict[str, Any]:
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    total = 0
    copy = 0
    while total < n_tools:
        for server in servers:
            if total >= n_tools:
                break
            tools = []
            for tool in server["tools"][: n_tools - total]:
                t = dict(tool)
                if copy:
                    t["description"] = _perturb(str(tool.get("description") or ""), rng)
                tools.append(t)
            label = server["label"] if copy == 0 else f"{server['label']}-r{copy}"
            description = server["description"] if copy == 0 else _perturb(server["description"], rng)
            out.append({"label": label, "description": description, "tools": tools, "skills": []})
            total += len(tools)
        copy += 1
    return {"servers": out}
