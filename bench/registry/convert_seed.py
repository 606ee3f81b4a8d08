"""Convert the official MCP Registry's seed entries (its early format) to the registry API's current shape.

The official registry (github ``modelcontextprotocol/registry``, MIT) was seeded with 471 servers in
``data/seed_2025_05_16.json``, in the format of July 2025: snake_case keys, ``registry_name`` /
``name`` per package, ``version_detail``. Today's generic registry API answers entries as
``{"server": {...}, "_meta": {"io.modelcontextprotocol.registry/official": {...}}}`` with camelCase
keys, packages as ``registryType`` / ``identifier`` / ``version`` / ``transport``. This script maps
one to the other, key by key, inventing nothing: a package whose registry was ``unknown`` stays of
type ``unknown`` (skilldeck does not run it), ``docker`` becomes ``oci``, and every value (names,
versions, arguments) is kept as the seed wrote it, odd ones included (they are what the reader must
refuse). Run once; its output is ``bench/registry/data/seed-2025-05-16.json``::

    python bench/registry/convert_seed.py SEED_2025_05_16.json bench/registry/data/seed-2025-05-16.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

KEYS = {
    "is_required": "isRequired",
    "is_secret": "isSecret",
    "is_repeated": "isRepeated",
    "value_hint": "valueHint",
    "runtime_hint": "runtimeHint",
    "runtime_arguments": "runtimeArguments",
    "package_arguments": "packageArguments",
    "environment_variables": "environmentVariables",
    "transport_type": "type",
}
REGISTRY_TYPES = {"npm": "npm", "pypi": "pypi", "docker": "oci"}


def camel(value: Any) -> Any:
    """``value`` with every snake_case key of the early format renamed as the current format names it."""
    if isinstance(value, dict):
        return {KEYS.get(k, k): camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [camel(v) for v in value]
    return value


def package(old: dict[str, Any]) -> dict[str, Any]:
    new: dict[str, Any] = {
        "registryType": REGISTRY_TYPES.get(old.get("registry_name", ""), old.get("registry_name", "unknown")),
        "identifier": old.get("name"),
        "version": old.get("version"),
        "transport": {"type": "stdio"},
    }
    for key in ("runtime_hint", "runtime_arguments", "package_arguments", "environment_variables"):
        if key in old:
            new[KEYS[key]] = camel(old[key])
    return new


def entry(old: dict[str, Any]) -> dict[str, Any]:
    detail = old.get("version_detail") or {}
    server: dict[str, Any] = {
        "$schema": "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json",
        "name": old["name"],
        "description": old["description"],
        "version": detail.get("version"),
    }
    if "repository" in old:
        server["repository"] = old["repository"]
    if old.get("packages"):
        server["packages"] = [package(p) for p in old["packages"]]
    if old.get("remotes"):
        server["remotes"] = camel(old["remotes"])
    official = {
        "status": "active",
        "publishedAt": detail.get("release_date"),
        "updatedAt": detail.get("release_date"),
        "isLatest": bool(detail.get("is_latest", True)),
    }
    return {"server": server, "_meta": {"io.modelcontextprotocol.registry/official": official}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seed", type=Path)
    parser.add_argument("output", type=Path)
    args = parser.parse_args()
    seed = json.loads(args.seed.read_text(encoding="utf-8"))
    converted = [entry(e) for e in seed]
    args.output.write_text(json.dumps(converted, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(converted)} entries -> {args.output}")


if __name__ == "__main__":
    main()
