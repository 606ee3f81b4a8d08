"""Hand-made mutations of skilldeck's security- and correctness-critical code, each run against its tests.

Every mutation is an exact ``(file, old snippet, new snippet)``: a flipped comparison, a dropped
check, a swapped order, an off-by-one on a limit, a prefix test without its ``/``. Each worker
(``--jobs``, 2 by default) copies ``src``, ``tests``, ``examples``, ``bench`` and ``pyproject.toml`` to a temporary
folder and makes a venv of its own with that copy installed editable, once; the tests must pass there
unchanged. Then the workers take one mutation at a time (the old snippet must occur exactly once, else
the mutation is reported as stale with the file named), apply it to their copy, run the tests named for
it with the venv's Python, and restore the file. A mutation is *caught* when those tests fail (a run over
the time limit, the tool's or pytest-timeout's, counts as caught). The
working tree is never modified.

The copy is reached through the venv, not ``PYTHONPATH``: a stdio server the SDK spawns (the gateway's
upstreams, the host's servers) gets only a few environment variables (``PATH``, ``HOME``...), so with
``PYTHONPATH`` it imported the working tree's code and a mutation only such a server runs read as
survived. Every such server is started with ``sys.executable``, which is the venv's Python: it imports
the copy. The venv sees the tool's own environment's packages (the test extra), and only the copy of
skilldeck: the working tree's editable install is left out.

    .venv/bin/python tools/mutation.py                 # every mutation; 8-13 minutes on 2 cores (2 workers)
    .venv/bin/python tools/mutation.py --only gate-split-any-name sources-early-stop
    .venv/bin/python tools/mutation.py --check         # only check that every snippet still applies
    .venv/bin/python tools/mutation.py --list
    .venv/bin/python tools/mutation.py --jobs 1        # one worker (one copy, one venv)
    .venv/bin/python tools/mutation.py --tests-from REV --output tools/results/mutation-REV.json

Results go to ``tools/results/mutation.json`` (``--output`` to change). ``--tests-from`` runs an
older revision's tests against today's code, to see what that suite caught. The exit status is 0
when every mutation not marked equivalent was caught, 1 when one survived, and 2 when one is stale
or its run failed to start.
``tests/test_mutation_patterns.py`` checks, on every test run, that every snippet still applies.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from queue import Queue

REPO = Path(__file__).resolve().parent.parent
COPIED = ("src", "tests", "examples", "bench", "pyproject.toml")
"""What each worker copies: ``bench`` too, for the tests that read its data (the registry catalog) or load its modules."""
RESULTS = REPO / "tools" / "results" / "mutation.json"
PYTEST_ARGS = ("-x", "-q", "-n", "0", "-p", "no:cacheprovider", "-o", "timeout=120")  # -n 0: one process


@dataclass(frozen=True)
class Mutation:
    """One fault: ``old`` (exactly once in ``file``, relative to the repository) becomes ``new``."""

    id: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]
    """pytest targets (files or node ids, relative to the repository) that must fail on it."""
    what: str
    equivalent: str = ""
    """Why no test can tell this mutant from the code, when that is so (it is run, but not counted)."""


class PatternError(Exception):
    """A mutation's snippet is not in its file exactly once: update the mutation."""


def _m(
    id: str, file: str, old: str, new: str, tests: tuple[str, ...] | str, what: str, equivalent: str = ""
) -> Mutation:
    targets = (tests,) if isinstance(tests, str) else tests
    return Mutation(id, f"src/skilldeck/{file}", old, new, targets, what, equivalent)


T_POLICY = "tests/server/test_policy.py"
T_CATALOG_ENTRIES = "tests/catalog/test_entries.py"
T_CATALOG_FETCH = "tests/catalog/test_fetch.py"
T_CATALOG_CONSENT = "tests/catalog/test_consent.py"
T_CATALOG_ADDED = "tests/catalog/test_added.py"
T_CATALOG_SEARCH = "tests/catalog/test_search.py"
T_ADD_CONSENTS = "tests/gateway/test_add_consents.py"
T_REGISTRY_ADD = "tests/gateway/test_registry_add.py"
T_DYN_POLICY = "tests/server/test_dynamic_under_policy.py"
T_CONTEXT = "tests/server/test_context_aware_http.py"
T_LIMITS = "tests/server/test_limits_and_prefix_siblings.py"
T_SOURCES = "tests/server/test_sources_and_catalog.py"
T_PARALLEL = "tests/server/test_sources_parallel.py"
T_FRONTMATTER = "tests/skill/test_frontmatter.py"
T_MANIFEST = "tests/skill/test_manifest_and_uri.py"
T_DISCOVERY = "tests/host/test_discovery_adversarial.py"
T_CAPS = "tests/host/test_listing_caps_exact.py"
T_LOADER = "tests/host/test_loader_adversarial.py"
T_CACHE = "tests/host/test_cache.py"
T_APPROVALS = "tests/host/test_approvals.py"
T_ORIGINS = "tests/host/test_origins_and_collisions.py"
T_GATE = "tests/select/test_gate_and_projection.py"
T_EXTENSION = "tests/server/test_extension.py"
T_GW_SECURITY = "tests/gateway/test_security.py"
T_GW_REPUBLISH = "tests/gateway/test_republish.py"
T_GW_ADMISSION = "tests/gateway/test_admission.py"
T_GW_ADMISSION_CLI = "tests/gateway/test_admission_cli.py"
T_MODEL_SEES = "tests/agents/test_what_the_model_sees.py"
T_RELAY = "tests/gateway/test_relay_requests.py"
T_TALENT = "tests/server/test_talent.py"
T_BOUNDS = "tests/server/test_server_bounds.py"
T_JWKS = "tests/server/test_jwks.py"
T_FAULTS = "tests/host/test_server_faults.py"
T_META = "tests/gateway/test_meta_and_identity.py"
T_FORWARD = "tests/gateway/test_forward.py"
T_DECIDE = "tests/select/test_decide.py"
T_CLIENTS_CLI = "tests/clients/test_cli_clients.py"
T_CLIENTS_PLAN = "tests/clients/test_plan.py"
T_AUTHORING = "tests/test_authoring.py"
T_LEDGER = ("tests/learning/test_ledger.py", "tests/learning/test_anonymous.py")
T_OAUTH = "tests/host/test_oauth.py"
T_TOKENS = "tests/server/test_tokens.py"
T_VERIFY = "tests/host/test_verify.py"

MUTATIONS: tuple[Mutation, ...] = (
    # -- gateway: what a downstream client may reach ---------------------------------------------------
    _m(
        "gateway-every-listed-tool-active",
        "gateway/_service.py",
        "gate = index.gate.with_active([*activation.tools, *pinned])",
        "gate = index.gate.with_active([(lbl, t) for lbl, listed in index.cards.tools.items() for t in listed])",
        T_GW_SECURITY,
        "a client calls any listed upstream tool without loading it",
    ),
    _m(
        "gateway-cross-label-grant-implied",
        "gateway/_service.py",
        "if label != record.label and (record.label, label) not in self.grants:",
        "if False:",
        T_GW_SECURITY,
        "a skill activates another server's tools without a host-side grant",
    ),
    _m(
        "gateway-conversations-merged",
        "serving/_clients.py",
        "        parts.append(conversation)",
        "        pass",
        T_GW_SECURITY,
        "two conversations of one caller share what they loaded",
    ),
    _m(
        "republish-remote-digest-unchecked",
        "server/_remote.py",
        "if len(data) != resource.size or digest_of(data) != resource.digest:",
        "if len(data) != resource.size:",
        T_GW_REPUBLISH,
        "re-published skill bytes are passed on without their digest checked",
    ),
    # -- server/_audience.py: who sees what ------------------------------------------------------------
    _m(
        "audience-dynamic-admission",
        "server/_audience.py",
        "for d in base.dynamic_skills if _visible(policy, d.name, caller)]",
        "for d in base.dynamic_skills]",
        T_DYN_POLICY,
        "dynamic skills are served to callers the policy does not admit",
    ),
    _m(
        "audience-dynamic-tools-metadata",
        "server/_audience.py",
        "    if frontmatter is None or frontmatter == skill.frontmatter:\n        return skill\n",
        "    return skill\n",
        T_DYN_POLICY,
        "a dynamic skill's tools metadata names tools not routed to the caller",
    ),
    _m(
        "audience-static-admission",
        "server/_audience.py",
        "s for e in base.entries if _visible(policy, e.name, caller) and (s := base.static_skill(e.uri)) is not None",
        "s for e in base.entries if (s := base.static_skill(e.uri)) is not None",
        T_POLICY,
        "static skills are served to callers the policy does not admit",
    ),
    _m(
        "audience-nested-hidden-files",
        "server/_audience.py",
        "static.append(_render_skill(_without_hidden(skill, hidden), policy, caller, rendered))",
        "static.append(_render_skill(skill, policy, caller, rendered))",
        T_POLICY,
        "an enclosing skill still carries the files of a nested skill hidden from the caller",
    ),
    _m(
        "audience-hidden-sibling-prefix",
        "server/_audience.py",
        'if p.startswith(skill.skill_path + "/")]',
        "if p.startswith(skill.skill_path)]",
        T_LIMITS,
        "hiding pdf-forms drops the forms/ folder of pdf",
    ),
    _m(
        "audience-all-denied-visible",
        "server/_audience.py",
        "    return bool(rule.route(caller))\n",
        "    return True\n",
        T_POLICY,
        "a skill whose tools are all denied to the caller is still offered",
    ),
    _m(
        "audience-tools-metadata",
        "server/_audience.py",
        'kept = " ".join(t for t in declared if t.rpartition("/")[2] in routed)',
        'kept = " ".join(declared)',
        (T_POLICY, T_DYN_POLICY),
        "the tools metadata names tools not routed to the caller",
    ),
    _m(
        "audience-allowed-tools-admission",
        "server/_audience.py",
        "if rule is not None and _visible(policy, name, caller):",
        "if rule is not None:",
        T_POLICY,
        "a route grants tools through a skill the caller is not admitted to",
    ),
    # -- server/_catalog.py: what a folder and a page hold ----------------------------------------------
    _m(
        "catalog-children-prefix",
        "server/_catalog.py",
        'start = bisect.bisect_left(self._tree, uri + "/")',
        "start = bisect.bisect_left(self._tree, uri)",
        T_LIMITS,
        "pdf-forms shows up as the made-up child skill://pdf/forms",
    ),
    _m(
        "catalog-dynamic-file-prefix",
        "server/_catalog.py",
        'for root, dyn in self._dynamic.items():\n            if uri.startswith(root + "/"):',
        "for root, dyn in self._dynamic.items():\n            if uri.startswith(root):",
        T_LIMITS,
        "a file of dynamic pdf-forms is looked up in dynamic pdf",
    ),
    _m(
        "catalog-dynamic-root-prefix",
        "server/_catalog.py",
        'return dyn, ""\n            if uri.startswith(root + "/"):',
        'return dyn, ""\n            if uri.startswith(root):',
        T_LIMITS,
        "the folder of dynamic pdf-forms is taken for a folder of dynamic pdf",
    ),
    _m(
        "catalog-page-boundary",
        "server/_catalog.py",
        "if start + limit < len(keys) and page else None",
        "if start + limit <= len(keys) and page else None",
        T_LIMITS,
        "a listing ending exactly on a page boundary hands out a cursor to an empty page",
    ),
    _m(
        "catalog-cursor-strict",
        "server/_catalog.py",
        "if keys[mid] <= after:",
        "if keys[mid] < after:",
        T_LIMITS,
        "the page after a cursor repeats the cursor's entry",
    ),
    _m(
        "catalog-duplicate-uri",
        "skill/_pack.py",
        "        if skill.skill_path in served:\n",
        "        if False:\n",
        T_SOURCES,
        "a skill path served twice is not reported",
    ),
    # -- skill/_pack.py, _beneath.py: reading folders -----------------------------------------------------
    _m(
        "sources-early-stop",
        "skill/_pack.py",
        "if total > MAX_SKILL_BYTES or len(files) > MAX_RESOURCES_PER_SKILL:",
        "if False:",
        T_LIMITS,
        "an oversize skill is read whole into memory before it is refused",
    ),
    _m(
        "sources-early-stop-files-off-by-one",
        "skill/_pack.py",
        "if total > MAX_SKILL_BYTES or len(files) > MAX_RESOURCES_PER_SKILL:",
        "if total > MAX_SKILL_BYTES or len(files) >= MAX_RESOURCES_PER_SKILL:",
        T_LIMITS,
        "the early stop fires at exactly 512 files",
        equivalent="the early stop only calls check_limits, which lets 512 files through: same outcome",
    ),
    _m(
        "sources-file-size-off-by-one",
        "skill/_pack.py",
        "if st.st_size > MAX_SKILL_BYTES:",
        "if st.st_size >= MAX_SKILL_BYTES:",
        T_LIMITS,
        "a file of exactly 16 MiB is refused on its own",
    ),
    _m(
        "sources-symlink-escape",
        "skill/_beneath.py",
        "if inside is None:\n                        raise _Escape",
        "if inside is None:\n                        return os.open(str(target), O_FILE)",
        T_SOURCES,
        "a symlink leaving the root is served",
    ),
    _m(
        "sources-symlink-folder",
        "skill/_pack.py",
        "if stat.S_ISDIR(target.st_mode):\n                        refused.append(",
        "if stat.S_ISDIR(target.st_mode):\n                        continue\n                        refused.append(",
        T_SOURCES,
        "a symlinked folder is not reported",
    ),
    _m(
        "sources-parallel-problem-order",
        "skill/_pack.py",
        "        for part in parts:\n            problems.extend(part.misnamed)\n        for part in parts:\n",
        "        for part in parts:\n            problems.extend(part.misnamed)\n        for part in parts[:1]:\n",
        T_PARALLEL,
        "a worker's refusals are dropped: what several processes read says less than one",
    ),
    _m(
        "sources-parallel-runs",
        "skill/_pack.py",
        "return [folders[a:b] for a, b in itertools.pairwise(cuts)]",
        "return [folders[a : b - 1] for a, b in itertools.pairwise(cuts)]",
        T_PARALLEL,
        "the last top folder of every run is never read",
    ),
    # -- server/_service.py, middleware.py, extension.py: enforcement on the wire -------------------------
    _m(
        "extension-tool-call-gate",
        "server/_service.py",
        "if name not in allowed:",
        "if False:",
        f"{T_CONTEXT}::test_admin_tool_is_refused_to_a_user_not_run_and_audited",
        "a tool no admitted route grants runs anyway",
    ),
    _m(
        "extension-tools-list-filter",
        "server/_middleware.py",
        'return {**result, "tools": [t for t in result.get("tools", []) if t.get("name") in allowed]}',
        "return result",
        f"{T_CONTEXT}::test_in_process_answers_for_the_default_identity",
        "tools/list shows tools the caller may not call",
    ),
    _m(
        "extension-read-unfiltered",
        "server/_middleware.py",
        "catalog = view_of(service, ctx)\n        static = catalog.static_file(uri)",
        "catalog = service.catalog\n        static = catalog.static_file(uri)",
        f"{T_CONTEXT}::test_meta_hints_never_widen_permissions",
        "resources/read answers from the whole catalog, not the caller's view",
    ),
    _m(
        "middleware-replies-outlive-their-catalog",
        "server/_middleware.py",
        "kept = self._replies.get(catalog)",
        "kept = next(iter(self._replies.values()), None)",
        "tests/server/test_serve_speed.py::test_kept_replies_follow_the_policy_in_force",
        "a reply kept for one snapshot or audience is sent for another",
    ),
    _m(
        "extension-cache-scope",
        "server/_service.py",
        'scope = "private" if self.policy is not None else self.cache_scope',
        "scope = self.cache_scope",
        f"{T_CONTEXT}::test_per_caller_skill_content_is_private_to_caches",
        "per-caller answers are marked public for shared caches",
    ),
    _m(
        "extension-dynamic-folder-prefix",
        "server/_extension.py",
        'if folder and not any(p.startswith(folder + "/") for p in files):',
        "if folder and not any(p.startswith(folder) for p in files):",
        T_LIMITS,
        "a prefix of a dynamic skill's folder name is listed as a folder",
    ),
    # -- skill/_frontmatter.py: the YAML rule and the Agent Skills limits -----------------------------------
    _m(
        "frontmatter-name-length",
        "skill/_frontmatter.py",
        "if len(name) > MAX_NAME_LENGTH:",
        "if len(name) >= MAX_NAME_LENGTH:",
        T_FRONTMATTER,
        "a name of exactly 64 characters is refused",
    ),
    _m(
        "frontmatter-description-length",
        "skill/_frontmatter.py",
        "elif len(description) > MAX_DESCRIPTION_LENGTH:",
        "elif len(description) >= MAX_DESCRIPTION_LENGTH:",
        T_FRONTMATTER,
        "a description of exactly 1024 characters is refused",
    ),
    _m(
        "frontmatter-compatibility-length",
        "skill/_frontmatter.py",
        "elif len(compatibility) > MAX_COMPATIBILITY_LENGTH:",
        "elif len(compatibility) > MAX_COMPATIBILITY_LENGTH + 1:",
        T_FRONTMATTER,
        "a compatibility of 501 characters is accepted",
    ),
    _m(
        "frontmatter-depth",
        "skill/_frontmatter.py",
        "if self._depth > MAX_FRONTMATTER_DEPTH:",
        "if self._depth >= MAX_FRONTMATTER_DEPTH:",
        T_FRONTMATTER,
        "frontmatter nested exactly 32 deep is refused",
    ),
    _m(
        "frontmatter-size",
        "skill/_frontmatter.py",
        'if len(text.encode("utf-8")) > MAX_FRONTMATTER_BYTES:',
        'if len(text.encode("utf-8")) >= MAX_FRONTMATTER_BYTES:',
        T_FRONTMATTER,
        "frontmatter of exactly 64 KiB is refused",
    ),
    _m(
        "frontmatter-octal-digits",
        "skill/_frontmatter.py",
        "0o[0-7]+",
        "0o[0-9]+",
        T_FRONTMATTER,
        "0o8 is taken for an integer (and then refused) instead of the string it is",
    ),
    _m(
        "frontmatter-alias",
        "skill/_frontmatter.py",
        "if self.check_event(AliasEvent):",
        "if False:",
        T_FRONTMATTER,
        "YAML aliases (alias bombs) are expanded",
    ),
    _m(
        "frontmatter-duplicate-key",
        "skill/_frontmatter.py",
        "            if key in result:\n",
        "            if False:\n",
        T_FRONTMATTER,
        "a duplicate key silently keeps the last value",
    ),
    _m(
        "frontmatter-name-directory",
        "skill/_frontmatter.py",
        "and name != directory_name:",
        "and name == directory_name and False:",
        T_FRONTMATTER,
        "a name that differs from its folder is accepted",
    ),
    # -- skill/_manifest.py: entries built and entries received ---------------------------------------------
    _m(
        "manifest-unknown-fields",
        "skill/_manifest.py",
        "return SkillEntry(uri=resources[0].uri, frontmatter=dict(frontmatter), resources=resources)",
        "return SkillEntry(uri=resources[0].uri, frontmatter={k: frontmatter[k] for k in "
        '("name", "description", "license", "compatibility", "metadata", "allowed-tools") if k in frontmatter}, '
        "resources=resources)",
        T_FRONTMATTER,
        "unknown frontmatter fields are dropped from the entry",
    ),
    _m(
        "manifest-files-limit",
        "skill/_manifest.py",
        "if len(sizes) > MAX_RESOURCES_PER_SKILL:",
        "if len(sizes) >= MAX_RESOURCES_PER_SKILL:",
        (T_MANIFEST, T_LIMITS),
        "a skill of exactly 512 files is refused",
    ),
    _m(
        "manifest-bytes-limit",
        "skill/_manifest.py",
        "total = sum(sizes.values())\n    if total > MAX_SKILL_BYTES:",
        "total = sum(sizes.values())\n    if total >= MAX_SKILL_BYTES:",
        (T_MANIFEST, T_LIMITS),
        "a skill of exactly 16 MiB is refused",
    ),
    _m(
        "manifest-wire-files-limit",
        "skill/_manifest.py",
        "if len(resources) > MAX_RESOURCES_PER_SKILL:",
        "if len(resources) > MAX_RESOURCES_PER_SKILL + 1:",
        T_DISCOVERY,
        "a host accepts an entry of 513 files",
    ),
    _m(
        "manifest-wire-bytes-limit",
        "skill/_manifest.py",
        "total = sum(r.size for r in parsed)\n    if total > MAX_SKILL_BYTES:",
        "total = sum(r.size for r in parsed)\n    if total >= MAX_SKILL_BYTES:",
        T_DISCOVERY,
        "a host refuses an entry of exactly 16 MiB",
    ),
    _m(
        "manifest-wire-outside-root",
        "skill/_manifest.py",
        'r_uri.startswith(root + "/")',
        "r_uri.startswith(root)",
        T_DISCOVERY,
        "an entry of skill pre may list files of skill prefix",
    ),
    _m(
        "manifest-wire-dot-segments",
        "skill/_manifest.py",
        'if "/../" in r_uri + "/" or "/./" in r_uri + "/":',
        "if False:",
        T_DISCOVERY,
        "an entry may list ../ resources",
    ),
    _m(
        "manifest-wire-own-skill-md",
        "skill/_manifest.py",
        "    if uri not in seen:\n",
        "    if False:\n",
        T_DISCOVERY,
        "an entry need not list its own SKILL.md",
    ),
    _m(
        "manifest-wire-name",
        "skill/_manifest.py",
        "if skill_name_from_uri(uri) != name:",
        "if False:",
        T_DISCOVERY,
        "an entry's URI may name another skill than its frontmatter",
    ),
    # -- skill/_uri.py ----------------------------------------------------------------------------------
    _m(
        "uri-resolve-climb",
        "skill/_uri.py",
        'if normalized in (".", "") or normalized == ".." or normalized.startswith("../"):',
        'if normalized in (".", ""):',
        T_MANIFEST,
        "a relative reference may climb out of the skill",
    ),
    _m(
        "uri-resolve-absolute",
        "skill/_uri.py",
        'or "://" in reference or reference.startswith(("/", "\\\\")):',
        'or "://" in reference:',
        T_MANIFEST,
        "an absolute path resolves inside the skill",
    ),
    # -- host: listing, loading, verifying, caching, approving ---------------------------------------------
    _m(
        "discover-entry-cap",
        "host/_discover.py",
        "if len(items) > limits.max_entries:",
        "if len(items) >= limits.max_entries:",
        T_CAPS,
        "a listing of exactly the entry cap is reported as truncated",
    ),
    _m(
        "discover-page-cap",
        "host/_discover.py",
        "for page_number in range(1, limits.max_pages + 1):",
        "for page_number in range(1, limits.max_pages):",
        T_CAPS,
        "a listing of exactly the page cap loses its last page",
    ),
    _m(
        "discover-repeated-cursor",
        "host/_discover.py",
        "        if cursor in seen:\n",
        "        if False:\n",
        T_DISCOVERY,
        "a listing that cycles its cursors is followed to the page cap",
    ),
    _m(
        "discover-skills-not-declared",
        "host/_discover.py",
        "        if connected.skills is not None:\n",
        "        if True:\n",
        T_DISCOVERY,
        "skills/list is sent to servers that did not declare the extension",
    ),
    _m(
        "loader-resolve-sibling",
        "host/_loader.py",
        'if not reference.startswith(root + "/") or',
        "if not reference.startswith(root) or",
        T_LOADER,
        "a loaded pdf skill resolves skill://.../pdf-forms references as its own",
    ),
    _m(
        "loader-resolve-dot-segments",
        "host/_loader.py",
        'if not reference.startswith(root + "/") or any(s in (".", "..", "") for s in segments):',
        'if not reference.startswith(root + "/"):',
        T_LOADER,
        "an absolute reference may climb out of a dynamic skill's folder",
    ),
    _m(
        "loader-budget-off-by-one",
        "host/_loader.py",
        "if self.used_bytes + size > self.budget_bytes:",
        "if self.used_bytes + size >= self.budget_bytes:",
        T_LOADER,
        "a file that exactly fills the budget is refused",
    ),
    _m(
        "loader-read-before-budget",
        "host/_loader.py",
        "        self._reserve(resource.uri, resource.size)\n        data = await self.index.read(resource.uri)\n",
        "        data = await self.index.read(resource.uri)\n        self._reserve(resource.uri, resource.size)\n",
        T_LOADER,
        "the budget is checked after the fetch instead of before",
    ),
    _m(
        "loader-skip-frontmatter",
        "host/_loader.py",
        "            text = verify_skill_md(entry.uri, data, entry.frontmatter, label=self.label)\n"
        "        except VerificationError as failure:",
        '            text = data.decode("utf-8")\n        except VerificationError as failure:',
        T_LOADER,
        "SKILL.md's frontmatter is not compared with the entry",
    ),
    _m(
        "loader-dynamic-allowed",
        "host/_loader.py",
        "            if not self.allow_dynamic:\n",
        "            if False:\n",
        T_LOADER,
        "dynamic skills load without the opt-in",
    ),
    _m(
        "loader-refresh-other-uri",
        "host/_loader.py",
        "        if current.uri != entry.uri:  # an answer about another skill is no refresh of this one\n"
        "            return failure\n",
        "",
        T_LOADER,
        "a skills/get answer about another skill is taken as the current entry",
    ),
    _m(
        "verify-size-first",
        "host/_verify.py",
        "    if len(data) != size:\n",
        "    if False:\n",
        T_LOADER,
        "a size mismatch is only caught by the digest",
    ),
    _m(
        "cache-rehash",
        "host/_cache.py",
        "        if digest_of(data) != digest:\n",
        "        if False:\n",
        T_CACHE,
        "cached bytes are used without re-hashing them against the current entry",
    ),
    _m(
        "approvals-content-bound",
        "host/_approvals.py",
        'if record.get("resources") == _binding(entry):',
        "if True:",
        T_APPROVALS,
        "an approval survives a change of the skill's content",
    ),
    _m(
        "host-removed-server",
        "host/_host.py",
        "        if label in self._removed:\n",
        "        if False:\n",
        f"{T_CACHE}::test_removed_server_stays_removed",
        "a removed server is treated as merely disconnected",
    ),
    _m(
        "registry-ambiguous-name",
        "host/_registry.py",
        "        if len(matches) > 1:\n",
        "        if False:\n",
        T_ORIGINS,
        "a bare name several skills answer to resolves to one of them",
    ),
    # -- select: the gate and the projection ------------------------------------------------------------------
    _m(
        "gate-split-any-name",
        "select/_gate.py",
        "if head in self._listed and tail in self._listed[head]:",
        "if True:",
        T_GATE,
        "every tool name holding __ or / is split into server and tool",
    ),
    _m(
        "gate-split-unlisted-tail",
        "select/_gate.py",
        "if head in self._listed and tail in self._listed[head]:",
        "if head in self._listed:",
        T_GATE,
        "fs__read is taken for the unlisted tool read of server fs",
    ),
    _m(
        "gate-active-set",
        "select/_gate.py",
        "        if (label, tool) not in self._active:\n",
        "        if False:\n",
        T_GATE,
        "a listed tool outside the active skill's set may be called",
    ),
    _m(
        "gate-arguments",
        "select/_gate.py",
        "        self._validate(label, tool, listed[tool], dict(arguments or {}))\n",
        "",
        T_GATE,
        "arguments are not validated against the input schema",
    ),
    _m(
        "gate-relisting",
        "select/_gate.py",
        "        self._active = {(lbl, name) for lbl, name in self._active if lbl != label or name in self._listed[label]}"
        "\n",
        "",
        T_GATE,
        "a tool that disappeared from a re-listing stays active",
    ),
    _m(
        "project-b-tokens-system",
        "select/_project.py",
        "return count_tokens(self.system) + count_tokens(tools)",
        "return count_tokens(tools)",
        T_GATE,
        "History B's token count leaves out its system prompt (cards and SKILL.md)",
    ),
    # -- round 2: admission, isolation, what the model sees, fixtures ----------------------------------------
    # gateway: skill admission and the audit of policy-hidden tools (two callers on one gateway over HTTP)
    _m(
        "gw-hidden-call-unaudited",
        "gateway/_service.py",
        "                self.audit.record(caller, hidden, allowed=False, reason=NOT_GRANTED)\n",
        "                pass\n",
        f"{T_GW_ADMISSION}::test_a_call_of_a_tool_the_policy_hides_is_an_audited_policy_refusal",
        "a call of a tool the policy hides is refused by the gate and never audited",
    ),
    _m(
        "gw-hidden-resolved-in-callers-listing",
        "gateway/_indexes.py",
        "index.listing_gate = ToolGate(index.listing)",
        "index.listing_gate = ToolGate(index.cards.tools)",
        f"{T_GW_ADMISSION}::test_a_call_of_a_tool_the_policy_hides_is_an_audited_policy_refusal",
        "a hidden tool is looked up in the caller's own listing, where it never is: not audited",
    ),
    _m(
        "gw-hidden-audits-unlisted-names",
        "gateway/_indexes.py",
        "if tool not in index.listing.get(label, {}) or tool_id(label, tool) in allowed:",
        "if tool_id(label, tool) in allowed:",
        f"{T_GW_ADMISSION}::test_a_call_of_a_tool_the_policy_hides_is_an_audited_policy_refusal",
        "a tool no upstream lists is audited as a policy decision",
    ),
    _m(
        "gw-index-shared-across-audiences",
        "gateway/_indexes.py",
        "return None if self.service.policy is None else caller.audience",
        "return None",
        T_GW_ADMISSION,
        "one index serves every audience: a user is shown the cards built for an admin",
    ),
    _m(
        "gw-find-skill-admission",
        "gateway/_indexes.py",
        "                if self._admits_skill(caller, self.card_id(card)):\n",
        "                if True:\n",
        f"{T_GW_ADMISSION}::test_a_skill_admitted_to_admins_is_hidden_from_a_user_by_id_by_label_rule_and_by_uri",
        "find and load offer upstream skills the policy does not admit to the caller",
    ),
    _m(
        "gw-skill-admitted-for-default-identity",
        "gateway/_indexes.py",
        "        return rule is None or rule.admits(caller)\n",
        "        return rule is None or rule.admits(self.service.policy.default_identity)\n",
        T_GW_ADMISSION_CLI,
        "a skill is admitted as if the policy's default identity asked, whoever's token it is",
    ),
    _m(
        "gw-tools-for-another-audience",
        "gateway/_indexes.py",
        "index = self._indexes.get(self._key(caller))",
        "index = next(reversed(self._indexes.values()), None)",
        T_GW_ADMISSION,
        "the tools routed to the last audience indexed are taken for this caller's",
    ),
    _m(
        "gw-read-skill-file-another-activation",
        "gateway/_service.py",
        "activation = self.activations.peek(client)\n        loaded = activation.skills.get(skill)",
        "activation = self.activations.peek(client) or next(iter(self.activations.values()), None)\n"
        "        loaded = activation.skills.get(skill)",
        f"{T_GW_ADMISSION}::test_a_skill_admitted_to_admins_is_hidden_from_a_user_by_id_by_label_rule_and_by_uri",
        "read_skill_file reads a skill another caller loaded",
    ),
    _m(
        "gw-load-activates-unrouted-tools",
        "gateway/_service.py",
        "        if allowed is not None and tool_id(label, name) not in allowed:\n",
        "        if False:\n",
        f"{T_GW_ADMISSION}::test_a_call_of_a_tool_the_policy_hides_is_an_audited_policy_refusal",
        "loading an admitted skill activates its tools the policy does not route to the caller",
    ),
    _m(
        "gw-republished-key-is-the-name",
        "gateway/_republish.py",
        "                key=host.skill_id(record),\n",
        '                key="",\n',
        f"{T_GW_ADMISSION}::test_a_skill_admitted_to_admins_is_hidden_from_a_user_by_id_by_label_rule_and_by_uri",
        "a re-published skill is admitted by its bare name, not LABEL/NAME: the policy's rule misses it",
    ),
    _m(
        "jwks-kidless-token-picks-among-several",
        "serving/_jwks.py",
        "        if len(keys) == 1:\n            return next(iter(keys.values()))\n",
        "        if len(keys) >= 1:\n            return next(iter(keys.values()))\n",
        f"{T_JWKS}::test_a_token_without_a_kid_is_verified_with_the_one_key_of_a_set_and_refused_when_there_are_two",
        "a token without a kid is verified with the first of several keys: the issuer's choice is guessed",
    ),
    _m(
        "policy-claim-object-keys-as-roles",
        "serving/_policy.py",
        "    if isinstance(value, list):\n        roles = [",
        "    if isinstance(value, list | Mapping):\n        roles = [",
        f"{T_POLICY}::test_a_claim_of_another_shape_gives_nothing_and_says_why",
        "a roles claim that is an object makes each of its keys a role (Keycloak's client ids)",
    ),
    _m(
        "policy-missing-claim-unsaid",
        "serving/_policy.py",
        "            if dimension not in self.conditions_on or claim_value(claims, path) is not None:\n",
        "            if True:\n",
        f"{T_POLICY}::test_a_missing_claim_the_policys_conditions_need_is_said_once_with_where_to_look",
        "a token without the claim the policy's conditions read is answered as a caller with nothing, in silence",
    ),
    _m(
        "policy-claim-path-not-followed",
        "serving/_policy.py",
        '        path = tuple(path.split("."))\n',
        "        return None\n",
        f"{T_POLICY}::test_claim_paths_read_nested_claims_and_prefer_a_claim_named_exactly",
        "a dotted claim name is only ever a top-level claim: realm_access.roles reads nothing",
    ),
    _m(
        "policy-claim-misfit-said-every-time",
        "serving/_policy.py",
        "        if why in self._warned or len(self._warned) >= MAX_CLAIM_WARNINGS:\n",
        "        if len(self._warned) >= MAX_CLAIM_WARNINGS:\n",
        f"{T_POLICY}::test_a_misfit_is_logged_once_per_policy_and_kind_up_to_a_bound",
        "a misfit between tokens and the policy's claims is logged on every request",
    ),
    _m(
        "policy-label-rule-ignored",
        "serving/_policy.py",
        'found = self.skills.get(skill_id.split("/", 1)[0] + "/*")',
        "found = None",
        f"{T_GW_ADMISSION}::test_a_skill_admitted_to_admins_is_hidden_from_a_user_by_id_by_label_rule_and_by_uri",
        "a LABEL/* rule hides nothing: skills of that upstream are offered to every caller",
    ),
    _m(
        "audience-remote-admission",
        "server/_audience.py",
        "(kept if rule is None or rule.admits(caller) else hidden).append(skill)",
        "kept.append(skill)",
        f"{T_GW_ADMISSION}::test_a_skill_admitted_to_admins_is_hidden_from_a_user_by_id_by_label_rule_and_by_uri",
        "re-published skills are listed and read by callers the policy does not admit",
    ),
    _m(
        "remote-policy-key-is-the-name",
        "server/_remote.py",
        "return self.key or self.entry.name",
        "return self.entry.name",
        f"{T_GW_ADMISSION}::test_a_skill_admitted_to_admins_is_hidden_from_a_user_by_id_by_label_rule_and_by_uri",
        "a remote skill is admitted by its name, not the id the policy names it by",
    ),
    # isolation: two callers, two sessions, two servers with one tool name, two versions, two eras
    _m(
        "identity-activation-not-per-caller",
        "serving/_identity.py",
        "client_key(kind, caller.subject, meta.get(CONVERSATION_META_KEY), **who),",
        "client_key(kind, None, meta.get(CONVERSATION_META_KEY)),",
        f"{T_GW_ADMISSION}::test_a_skill_admitted_to_admins_is_hidden_from_a_user_by_id_by_label_rule_and_by_uri",
        "two 2026-07-28 callers with different tokens share one activation",
    ),
    _m(
        "session-activation-shared",
        "agents/_session.py",
        "name or uuid.uuid4().hex",
        'name or "conversation"',
        f"{T_MODEL_SEES}::test_two_sessions_of_one_service_never_share_what_they_loaded",
        "two agent sessions of one service share what they loaded",
    ),
    _m(
        "gate-bare-name-first-owner",
        "select/_gate.py",
        "active_owners = [lbl for lbl in owners if (lbl, name) in self._active]",
        "active_owners = owners[:1]",
        f"{T_GW_SECURITY}::test_one_tool_name_on_two_servers_is_the_loaded_ones_and_refused_when_both_are",
        "a bare tool name two servers list goes to the first of them, not the one loaded",
    ),
    _m(
        "gate-bare-name-ambiguous-guessed",
        "select/_gate.py",
        "            if len(owners) == 1:\n",
        "            if owners:\n",
        f"{T_GW_SECURITY}::test_one_tool_name_on_two_servers_is_the_loaded_ones_and_refused_when_both_are",
        "a bare tool name two active servers list is sent to one of them instead of refused",
    ),
    _m(
        "gate-views-share-active",
        "select/_gate.py",
        "        self._active = wanted\n",
        "        self._active |= wanted\n",
        T_GW_SECURITY,
        "every client's view of the gate adds to one shared active set",
    ),
    _m(
        "held-bytes-by-label-only",
        "host/_cache.py",
        "data = self._held.get((label, digest))",
        "data = next((v for (lbl, _), v in reversed(self._held.items()) if lbl == label), None)",
        f"{T_GW_SECURITY}::test_a_skill_changed_upstream_is_loaded_as_it_is_now_not_from_the_bytes_verified_before",
        "bytes held from an earlier verification stand in for a changed file of the same size",
    ),
    _m(
        "host-relist-keeps-old-entries",
        "host/_host.py",
        "        if entries is not None:\n            rejected = registry.add_listing(label, entries)\n",
        "        if entries is not None and not old_skills:\n            rejected = registry.add_listing(label, entries)\n",
        f"{T_GW_SECURITY}::test_a_skill_changed_upstream_is_loaded_as_it_is_now_not_from_the_bytes_verified_before",
        "a re-listing keeps the old entries of a server's skills: a changed skill is loaded as it was",
    ),
    _m(
        "middleware-kept-reply-any-era",
        "server/_middleware.py",
        'key = ("skills/list", cursor, ctx.protocol_version, service.page_size',
        'key = ("skills/list", cursor, service.page_size',
        f"{T_EXTENSION}::test_a_kept_reply_is_served_only_in_the_era_it_was_built_for",
        "a skills/list page kept for one protocol version answers the other",
    ),
    # what the model sees: the adapters' tool lists under a policy, with one tool name on two servers
    _m(
        "providers-catalog-of-default-identity",
        "agents/providers.py",
        "cards = session.service.index_for(session.caller).cards",
        "cards = session.service.index_for(SkillSession(session.service).caller).cards",
        T_MODEL_SEES,
        "the providers' tool lists are the policy's default identity's, not the session caller's",
    ),
    _m(
        "providers-anthropic-meta-deferred",
        "agents/providers.py",
        'return [*meta, *({**t, "defer_loading": True} for t in deferred)]',
        'return [{**t, "defer_loading": True} for t in [*meta, *deferred]]',
        T_MODEL_SEES,
        "find and load_skill are deferred too: the model cannot call them to choose",
    ),
    _m(
        "providers-openai-loaded-still-deferred",
        "agents/providers.py",
        '"tools": _namespaces(tools, deferred=False),',
        '"tools": _namespaces(tools, deferred=True),',
        f"{T_MODEL_SEES}::test_provider_tool_lists_show_each_caller_its_routed_tools_deferred_and_same_names_apart",
        "the tools a tool_search_output loads are still marked deferred",
    ),
    _m(
        "providers-openai-loaded-by-name",
        "agents/providers.py",
        'if (label, str(tool["name"])) in wanted]',
        'if str(tool["name"]) in {n for _, n in wanted}]',
        f"{T_MODEL_SEES}::test_provider_tool_lists_show_each_caller_its_routed_tools_deferred_and_same_names_apart",
        "loading west's search also loads east's search of the same name",
    ),
    _m(
        "providers-tool-id-any-namespace",
        "agents/providers.py",
        "if namespace is not None and _namespace(label) == namespace and _function(tool_name) == name:",
        "if namespace is not None and _function(tool_name) == name:",
        f"{T_MODEL_SEES}::test_provider_tool_lists_show_each_caller_its_routed_tools_deferred_and_same_names_apart",
        "an OpenAI call of west's search maps to the first server's search",
    ),
    _m(
        "providers-tool-id-unqualified",
        "agents/providers.py",
        "if namespace is None and tool_function_name(label, tool_name) == name:",
        'if namespace is None and _function(tool_name) == name.rpartition("__")[2]:',
        f"{T_MODEL_SEES}::test_provider_tool_lists_show_each_caller_its_routed_tools_deferred_and_same_names_apart",
        "an Anthropic call of west__search maps to the first server's search",
    ),
    _m(
        "providers-reference-unqualified",
        "agents/providers.py",
        '{"type": "tool_reference", "tool_name": tool_function_name(label, name)}',
        '{"type": "tool_reference", "tool_name": _function(name)}',
        f"{T_MODEL_SEES}::test_provider_tool_lists_show_each_caller_its_routed_tools_deferred_and_same_names_apart",
        "a tool_reference names the bare tool, which two servers list",
    ),
    _m(
        "session-active-schema-by-name",
        "agents/_session.py",
        "            tool = listed.get((label, name))\n",
        "            tool = next((t for (_, n), t in listed.items() if n == name), None)\n",
        T_MODEL_SEES,
        "an active tool is shown with the schema of another server's tool of the same name",
    ),
    _m(
        "project-function-name-unqualified",
        "select/_project.py",
        'raw = f"{server}__{tool}" if qualify else tool',
        "raw = tool",
        T_MODEL_SEES,
        "rendered tool names drop the server: east's and west's search are one name",
    ),
    _m(
        "pydantic-ai-names-unqualified",
        "agents/pydantic_ai.py",
        'names.setdefault(tool_function_name(label, tool), f"{label}/{tool}")',
        'names.setdefault(tool_function_name("", tool, qualify=False), f"{label}/{tool}")',
        f"{T_MODEL_SEES}::test_pydantic_ai_shows_same_named_tools_of_two_servers_as_two_each_calling_its_own",
        "pydantic-ai shows one of two same-named active tools and hides the other",
    ),
    _m(
        "openai-agents-filter-any-server",
        "agents/openai_agents.py",
        "return (self.label(context.server_name), tool.name) in session.active()",
        "return tool.name in {name for _, name in session.active()}",
        f"{T_MODEL_SEES}::test_openai_agents_filter_shows_each_servers_tool_only_where_it_was_loaded",
        "the MCP tool filter shows east's search because west's was loaded",
    ),
    _m(
        "openai-agents-labels-ignored",
        "agents/openai_agents.py",
        "return self.labels.get(server_name, server_name)",
        "return server_name",
        f"{T_MODEL_SEES}::test_openai_agents_filter_shows_each_servers_tool_only_where_it_was_loaded",
        "an MCP server object named other than its label never shows its loaded tools",
    ),
    _m(
        "langchain-call-by-bare-name",
        "agents/langchain.py",
        "return _result_text(await session.call(qualified, arguments))",
        "return _result_text(await session.call(name, arguments))",
        f"{T_MODEL_SEES}::test_langchain_shows_each_loaded_servers_tool_under_its_own_name_and_schema",
        "a LangChain tool calls its upstream by the bare name, which two servers list",
    ),
    _m(
        "langchain-tool-name-unqualified",
        "agents/langchain.py",
        "        name=tool_name(label, name),\n",
        '        name=tool_name("", name).lstrip("_"),\n',
        f"{T_MODEL_SEES}::test_langchain_shows_each_loaded_servers_tool_under_its_own_name_and_schema",
        "LangChain shows two tools under one name",
    ),
    # fixtures that tell sub-capabilities and roles apart
    _m(
        "relay-sampling-tools-unchecked",
        "gateway/_relay.py",
        "if sampling is not None and (not tools or sampling.tools is not None):",
        "if sampling is not None:",
        T_RELAY,
        "sampling with tools is relayed to a client that declared sampling without tools",
    ),
    _m(
        "relay-url-elicitation-as-form",
        "gateway/_relay.py",
        "if elicitation is not None and elicitation.url is not None:",
        "if elicitation is not None:",
        f"{T_RELAY}::test_each_question_needs_the_sub_capability_it_uses",
        "a URL elicitation is relayed to a client that declared forms only",
    ),
    _m(
        "relay-form-elicitation-to-url-only",
        "gateway/_relay.py",
        "if elicitation is not None and (elicitation.form is not None or elicitation.url is None):",
        "if elicitation is not None:",
        f"{T_RELAY}::test_each_question_needs_the_sub_capability_it_uses",
        "a form elicitation is relayed to a client that declared URL elicitation only",
    ),
    _m(
        "relay-unowned-roots-to-the-one-call",
        "gateway/_upstreams.py",
        "waiting = self._serving(label, guess=not roots)",
        "waiting = self._serving(label)",
        f"{T_RELAY}::test_sampling_elicitation_and_roots_reach_the_caller_and_answers_come_back",
        "a roots/list tied to no call (a server's own, over stdio) goes to the one call waiting then",
    ),
    _m(
        "relay-tool-choice-ignored",
        "gateway/_relay.py",
        "        tools = bool(request.params.tools) or request.params.tool_choice is not None\n",
        "        tools = bool(request.params.tools)\n",
        f"{T_RELAY}::test_each_question_needs_the_sub_capability_it_uses",
        "a sampling request with a tool choice but no tools is relayed without sampling.tools",
    ),
    _m(
        "talent-forged-role-narrows",
        "server/_talent.py",
        "if hints.user_role is not None and hints.user_role in caller.roles:",
        "if hints.user_role is not None:",
        f"{T_TALENT}::test_the_instruction_is_rendered_for_a_role_the_token_holds_never_for_a_forged_one",
        "a user_role the token does not hold decides how the instruction is worded",
    ),
    _m(
        "talent-rendered-for-every-role",
        "server/_talent.py",
        "return TalentAnswer(True, rule.route(caller) & rule.route(narrowed), narrowed)",
        "return TalentAnswer(True, rule.route(caller) & rule.route(narrowed), caller)",
        f"{T_TALENT}::test_the_instruction_is_rendered_for_a_role_the_token_holds_never_for_a_forged_one",
        "a held user_role narrows the tools but the instruction is worded for all the token's roles",
    ),
    # -- round 2: bounds and limits at the boundary ------------------------------------------------------
    _m(
        "conn-timer-not-restarted",
        "serving/_connections.py",
        "            super().on_message_begin()\n            self._start_request_timer()\n",
        "            super().on_message_begin()\n",
        f"{T_BOUNDS}::test_the_request_timer_starts_again_for_each_request_of_a_kept_alive_connection",
        "the second request of a kept-alive connection may trickle in for ever (its timer is not started again)",
    ),
    _m(
        "conn-timer-runs-through-answer",
        "serving/_connections.py",
        "            self._stop_request_timer()\n            self._busy = True\n",
        "            self._busy = True\n",
        f"{T_BOUNDS}::test_a_connection_that_sends_no_whole_request_in_time_is_closed",
        "a whole request's timer keeps running: a kept-alive connection is closed between requests",
    ),
    _m(
        "conn-table-off-by-one",
        "serving/_connections.py",
        "if len(self.connections) - len(probing) > limits.max_connections and not self._make_room():",
        "if len(self.connections) - len(probing) >= limits.max_connections and not self._make_room():",
        f"{T_BOUNDS}::test_a_full_table_closes_the_connection_longest_without_a_request_not_the_new_one",
        "the connection table makes room at N connections instead of N+1",
    ),
    _m(
        "conn-room-from-busy",
        "serving/_connections.py",
        "if c is not self and isinstance(c, BoundedHttpToolsProtocol) and not c._busy and c not in probing",
        "if c is not self and isinstance(c, BoundedHttpToolsProtocol) and c not in probing",
        f"{T_BOUNDS}::test_connections_busy_with_a_request_are_never_closed_for_a_new_one",
        "a connection whose request is being answered is closed to make room for a new one",
    ),
    _m(
        "conn-room-from-newest",
        "serving/_connections.py",
        "oldest = min(idle, key=lambda c: c._waiting_since)",
        "oldest = max(idle, key=lambda c: c._waiting_since)",
        f"{T_BOUNDS}::test_a_full_table_closes_the_connection_longest_without_a_request_not_the_new_one",
        "a full table closes the newest silent connection, not the one waiting longest",
    ),
    _m(
        "conn-streams-off-by-one",
        "serving/_connections.py",
        "elif len(streaming) >= limits.max_streams:",
        "elif len(streaming) > limits.max_streams:",
        f"{T_BOUNDS}::test_streams_hold_at_most_their_share_of_the_table",
        "streams may hold one connection more than their share",
    ),
    _m(
        "conn-probes-off-by-one",
        "serving/_connections.py",
        "if len(probing) >= limits.probe_connections:",
        "if len(probing) > limits.probe_connections:",
        f"{T_BOUNDS}::test_connections_busy_with_a_request_are_never_closed_for_a_new_one",
        "one connection more than the probes' places is let in past a full table",
    ),
    _m(
        "sessions-evict-busy",
        "serving/_sessions.py",
        "if scope is None or scope.cancel_called or not math.isfinite(scope.deadline):",
        "if scope is None or scope.cancel_called:",
        f"{T_BOUNDS}::test_a_full_table_of_busy_sessions_ends_none_of_them",
        "a session serving a request is ended for a newcomer when the table is full",
    ),
    _m(
        "sessions-evict-streaming-with-request",
        "serving/_sessions.py",
        "if transport._requests_in_flight == 1 and GET_STREAM_KEY in transport._request_streams:",
        "if GET_STREAM_KEY in transport._request_streams:",
        f"{T_BOUNDS}::test_a_full_table_of_busy_sessions_ends_none_of_them",
        "a session with its GET stream and a request in flight is ended as if it held only the stream",
    ),
    _m(
        "sessions-table-off-by-one",
        "serving/_sessions.py",
        "if len(manager._server_instances) >= limit",
        "if len(manager._server_instances) > limit",
        f"{T_BOUNDS}::test_a_full_session_table_evicts_the_least_recently_used_idle_session",
        "a full session table refuses (503) instead of evicting an idle session",
    ),
    # -- the stop-gaps for the SDK (docs/sdk-workarounds.md): their own tests catch what breaks them ------------
    _m(
        "request-ids-null-error-refused",
        "serving/_request_ids.py",
        'return not (value is None and "error" in message)',
        "return True",
        "tests/server/test_client_mistakes.py::test_which_ids_are_invalid",
        "an error response with id null (a peer's answer to what it could not read) is refused -32600",
    ),
    _m(
        "single-body-any-message-as-the-body",
        "serving/_single_body.py",
        'if name == b"message" and _REPLY.match(data):',
        'if name == b"message":',
        "tests/server/test_single_body.py::test_a_stream_that_carries_anything_else_first_stays_sse_byte_for_byte",
        "a stream whose first event is a notification goes out as that one JSON body, and the response is lost",
    ),
    _m(
        "oauth-refresh-at-the-stored-endpoint",
        "host/_oauth.py",
        "        if not self._confirmed:\n            stored = self.context.oauth_metadata",
        "        if False:\n            stored = self.context.oauth_metadata",
        "tests/host/test_oauth_cli.py::test_a_refresh_goes_only_to_the_token_endpoint_the_servers_metadata_names",
        "a refresh goes to the token endpoint the stored record names, not the one the server's metadata names",
    ),
    _m(
        "resumable-replay-of-a-request-goes-live",
        "serving/_resumable.py",
        "return stream.stream_id if live and stream.stream_id == GET_STREAM_KEY else None",
        "return stream.stream_id if live else None",
        "tests/server/test_resumable.py::test_a_replay_of_a_requests_stream_sends_what_is_left_and_ends",
        "a replay of a request's stream is held open as a live stream, one place per request of one session",
    ),
    _m(
        "resumable-gets-together-each-go-live",
        "serving/_resumable.py",
        "send_callback, live=self.get_requests <= 1)",
        "send_callback, live=True)",
        "tests/server/test_resumable.py::test_replays_of_the_get_stream_sent_together_never_hold_two_live_streams",
        "replays of the GET stream sent together each go on live, all but one never written to again",
    ),
    _m(
        "resumable-stream-cost-not-counted",
        "serving/_resumable.py",
        "            self.bytes += STREAM_COST\n",
        "",
        "tests/server/test_resumable.py::test_bytes_are_bounded_over_every_stream_the_oldest_event_first",
        "a stream's own memory is not counted, so many short streams hold more than the bound says",
    ),
    _m(
        "resumable-queue-never-compacted",
        "serving/_resumable.py",
        "if len(self._order) > 2 * self.events + 1_024:",
        "if False:",
        "tests/server/test_resumable.py::test_a_stream_past_its_bound_leaves_a_bounded_queue_and_replays_its_last_events",
        "one stream relaying progress past its bound grows the queue of every event forever",
    ),
    _m(
        "resumable-stale-place-taken-for-live",
        "serving/_resumable.py",
        "if stream.queued + 1 > len(stream.events):",
        "if stream.queued + 1 > len(stream.events) + 1:",
        "tests/server/test_resumable.py",
        "a place of an event already dropped is taken for the stream's oldest kept event, which goes too soon",
    ),
    _m(
        "reload-cuts-calls-in-flight",
        "host/_connect.py",
        "if drain and closer.is_set() and not gone.is_set() and not self._close.is_set():",
        "if False:",
        "tests/gateway/test_reload_drain.py",
        "a reload tears the old connection down at once: calls that ran come back as 'Connection closed'",
    ),
    _m(
        "reload-fails-on-an-upstream-closed-under-its-check",
        "gateway/_reload.py",
        "            except Exception as exc:  # its session ended as it was listed: checked as a down upstream's are",
        "            except ValueError as exc:  # its session ended as it was listed: checked as a down upstream's are",
        "tests/gateway/test_gateway_config.py::test_a_reload_goes_on_when_an_upstream_it_checks_closes_its_connection",
        "an upstream whose connection closes while a reload lists its ids fails the whole reload",
    ),
    _m(
        "reload-checks-an-upstream-the-watcher-is-to-check",
        "gateway/_reload.py",
        "held = frozenset(added) | (self.pending.keys() & self.host.sessions.keys())",
        "held = frozenset(added)",
        "tests/gateway/test_gateway_config.py::test_a_reload_leaves_the_check_of_an_upstream_just_back_to_the_watcher",
        "a reload checks an upstream the supervisor just brought back, keeps the policy over its error and drops "
        "its pending ids: it is served under a policy naming what it does not serve",
    ),
    _m(
        "reload-verdict-ignored-by-the-watchers-check",
        "gateway/_reload.py",
        "                return label in self.host.sessions\n",
        "                return True\n",
        "tests/gateway/test_gateway_config.py::test_an_id_of_an_upstream_down_at_start_is_checked_when_it_connects",
        "the watcher's check, having waited for a reload that kept the upstream out, lists it all the same",
    ),
    _m(
        "reload-refuses-calls-during-the-switch",
        "gateway/_upstreams.py",
        "connected = self.host.sessions.get(label) or await self._reconnected(label, tool)",
        "connected = self.host.sessions.get(label)",
        "tests/gateway/test_reload_drain.py::test_calls_in_flight_finish_on_the_old_program_and_a_call_during_the_switch_waits",
        "a call made while an upstream is being reconnected is refused instead of waiting for it",
    ),
    _m(
        "redis-bus-waits-the-window-for-the-first-event",
        "serving/_redis_bus.py",
        "            self._deliver_held()  # the leading edge: a change on one replica is told at once\n",
        "",
        "tests/replicas/test_redis_bus.py::test_one_change_published_by_one_replica_is_delivered_once_without_waiting_for_the_window",
        "the first change event of a window waits the whole --settle window before listeners hear it",
    ),
    _m(
        "gate-validator-of-the-old-schema",
        "select/_gate.py",
        "if cached is not None and cached[0] is schema:",
        "if cached is not None:",
        "tests/select/test_gate_and_projection.py::test_a_relisted_schema_is_the_one_arguments_are_checked_against",
        "a re-listed tool's arguments are checked against the schema it listed before",
    ),
    _m(
        "gate-bare-name-of-several-servers-guessed",
        "select/_gate.py",
        "            if len(owners) == 1:\n                return owners[0], name",
        "            if len(owners) >= 1:\n                return owners[0], name",
        "tests/select/test_gate_and_projection.py::test_a_bare_name_several_servers_list_is_refused_unless_one_is_active",
        "a bare tool name two servers list is sent to the first of them",
    ),
    _m(
        "openai-loaded-tools-still-deferred",
        "agents/providers.py",
        '"tools": _namespaces(tools, deferred=False),',
        '"tools": _namespaces(tools, deferred=True),',
        "tests/agents/test_providers.py",
        "the tools a load_skill returned are deferred again, so the model never gets their schemas",
    ),
    _m(
        "decide-second-need-of-a-server-loses-its-tools",
        "select/_decide.py",
        "                chosen.append(card)\n            tools.extend(t for t in d.tools if t not in tools)",
        "                chosen.append(card)\n                tools.extend(t for t in d.tools if t not in tools)",
        "tests/select/test_decide.py::test_two_needs_one_server_answers_get_one_card_and_each_its_tool",
        "a need answered by a server an earlier need chose gets none of its tools exposed",
    ),
    _m(
        "decide-needs-two-cards-of-one-server",
        "select/_decide.py",
        "            if all(card.server != c.server for c in chosen):\n                if len(chosen)",
        "            if True:\n                if len(chosen)",
        "tests/select/test_decide.py::test_two_needs_one_server_answers_get_one_card_and_each_its_tool",
        "two needs answered by one server each add a card of it, one server taking two of the capabilities",
    ),
    _m(
        "capped-stream-refuses-at-n",
        "host/_transports.py",
        "if max(counted, longest) > self._limit:",
        "if max(counted, longest) >= self._limit:",
        "tests/host/test_server_faults.py::test_a_body_of_exactly_the_limit_passes_and_one_byte_more_fails_that_request",
        "an answer of exactly the limit is refused",
    ),
    _m(
        "capped-stream-event-ending-in-a-chunk-unmeasured",
        "host/_transports.py",
        "                    longest, end = max(longest, size), blank.end()",
        "                    end = blank.end()",
        "tests/host/test_server_faults.py::test_an_event_stream_is_capped_per_event_at_n_and_n_plus_one",
        "an SSE event is not measured in the chunk that ends it, so one can pass the limit by up to a chunk",
    ),
    _m(
        "supervision-schedule-never-told-up",
        "host/_connect.py",
        "                            schedule.connected()\n",
        "",
        "tests/host/test_supervision.py",
        "the backoff is never told a session opened, so a server that was up for hours waits the longest delay",
    ),
    _m(
        "scoped-event-unscoped-at-the-bound",
        "serving/_scoping.py",
        "if not named or len(named) > MAX_SCOPED_NAMES:",
        "if not named or len(named) >= MAX_SCOPED_NAMES:",
        "tests/server/test_scoped_events.py::test_scoped_events_keep_their_names_across_the_redis_channel",
        "a change of exactly 64 skills is told to every listener instead of those who may see them",
    ),
    _m(
        "shutdown-waits-for-nothing",
        "serving/_shutdown.py",
        "            while (state.connections or state.tasks) and not self.force_exit:",
        "            while False:",
        "tests/server/test_shutdown.py::test_a_request_in_flight_finishes_and_one_past_the_shutdown_timeout_is_cut",
        "the requests in flight are cut at once instead of being given --shutdown-timeout to finish",
    ),
    _m(
        "forwarded-request-not-drained",
        "gateway/_upstream_answers.py",
        "        with connected.call():\n            return await request",
        "        if connected:\n            return await request",
        "tests/gateway/test_reload_drain.py::test_a_forwarded_prompt_in_flight_finishes_on_the_old_program",
        "a forwarded prompts/get in flight is not counted, so a reload closes its connection under it",
    ),
    _m(
        "clock-need-not-leading",
        "select/_query.py",
        "LEADING_NEEDS = frozenset(need for _, need in IMPLIED_NEEDS[:5])",
        "LEADING_NEEDS = frozenset(need for _, need in IMPLIED_NEEDS[:4])",
        "tests/select/test_needs.py::test_in_a_small_catalog_the_clock_asked_about_puts_its_server_first",
        "a question about the clock itself only gets the fifth place, like a date relative to today",
    ),
    _m(
        "neighbours-of-untrusted-questions",
        "select/_history.py",
        "        if neighbours is None and trust:  # made whole: a first history, or one read before without vectors\n"
        "            neighbours = Neighbours.build(index.questions, trust, card_server, encode)",
        "        if neighbours is None and index.questions:\n"
        "            neighbours = Neighbours.build(index.questions, index.questions.keys(), card_server, encode)",
        "tests/select/test_neighbours.py::test_a_trusted_like_question_puts_its_server_first_an_untrusted_one_does_not",
        "one caller's past questions in an audience of several put a server first",
    ),
    _m(
        "find-does-not-wait-for-history",
        "gateway/_service.py",
        "        read = await self.usage.history_read(caller)\n",
        "        read = True\n",
        "tests/learning/test_worked_before.py::test_after_a_restart_the_first_find_waits_for_the_history_and_answers_with_it",
        "the first find after a restart ranks without the history its ranker is still reading",
    ),
    _m(
        "afind-does-not-wait",
        "agents/_session.py",
        "        return await self.service.find_learned(self.caller, self.client, query, limit, needs=needs)",
        "        return self.service.find(self.caller, self.client, query, limit, needs=needs)",
        "tests/learning/test_worked_before.py::test_in_process_afind_waits_for_the_history_and_find_does_not",
        "an agent framework's find ranks without the history its ranker is still reading",
    ),
    _m(
        "gave-up-find-leaves-its-wake-up",
        "gateway/_usage.py",
        "            self.history_updates.forget(selector, wake)",
        "            pass",
        "tests/learning/test_worked_before.py::test_a_flood_of_finds_waiting_for_the_history_holds_no_thread_and_leaves_nothing_behind",
        "a find that stops waiting for the history (timed out, cancelled) leaves its wake-up for the worker, unbounded",
    ),
    _m(
        "settled-while-being-read",
        "learning/_updates.py",
        "        return key in self._pending or self._reading == key",
        "        return key in self._pending",
        "tests/learning/test_updates.py::test_a_selector_is_settled_once_the_history_submitted_for_it_is_in_it_not_anothers",
        "a selector whose history the worker is reading counts as settled",
    ),
    _m(
        "paraphrase-off-with-places",
        "select/_history_view.py",
        "(c.history_neighbour_places <= 0 and c.history_paraphrase_cosine > 1.0)",
        "c.history_neighbour_places <= 0",
        "tests/select/test_neighbours.py::test_without_places_a_near_paraphrase_is_still_answered_and_above_1_it_is_not",
        "turning the like-question rule off (0 places) turns the near-paraphrase rule off too",
    ),
    _m(
        "neighbour-one-place-more",
        "select/_history_view.py",
        "first = order[: c.history_neighbour_places]",
        "first = order[: c.history_neighbour_places + 1]",
        "tests/select/test_neighbours.py::test_a_like_question_moves_only_a_server_among_the_first_places",
        "a like question moves a server one place further down than the places allow",
    ),
    _m(
        "neighbour-below-the-cosine",
        "select/_neighbours.py",
        "            if cos[best] < floor:",
        "            if cos[best] < floor - 0.01:",
        "tests/select/test_neighbours.py::test_a_like_question_is_one_from_the_cosine_set_and_not_below",
        "a past question a little less like the question than the floor counts as like it",
    ),
    _m(
        "neighbour-table-over-its-limit",
        "select/_neighbours.py",
        "if i < len(past) and (past[i] in led or len(led) < limit):",
        "if i < len(past) and (past[i] in led or len(led) <= limit):",
        "tests/select/test_neighbours.py::test_the_table_holds_at_most_its_limit_a_few_of_each_cards_questions_at_a_time",
        "the table of trusted past questions holds one more than its limit",
    ),
    _m(
        "neighbour-not-counted-in-the-confidence",
        "select/_decide.py",
        "confidence, like, like_card = min(1.0, confidence + raised), near.question, self.cards[near.card]",
        "confidence, like, like_card = confidence, near.question, self.cards[near.card]",
        "tests/select/test_neighbours.py::test_a_like_question_raises_the_confidence_and_the_reason_names_it",
        "the confidence of a decision a like question put first ignores it",
    ),
    _m(
        "paraphrase-not-recalled",
        "select/_decide.py",
        "recalled = self._recalled(query, ranking) or self._paraphrased(ranking)",
        "recalled = self._recalled(query, ranking)",
        "tests/select/test_neighbours.py::test_a_near_paraphrase_of_a_trusted_question_is_answered_with_its_card_wherever_it_ranked",
        "a near paraphrase of a trusted question is not answered with the card it led to",
    ),
    _m(
        "like-before-not-told",
        "gateway/_server.py",
        '    elif "like_before" in result:',
        "    elif False:",
        "tests/learning/test_worked_before.py::test_with_the_encoder_a_like_question_or_a_near_paraphrase_says_it_worked_before",
        "the text a model reads does not say a question like it worked before",
    ),
    _m(
        "relist-writes-a-gone-session-back",
        "host/_host.py",
        "        if self.connections.connected.get(label) is not connected:\n",
        "        if False:\n",
        "tests/host/test_injection.py::test_a_relist_under_way_when_its_server_is_removed_writes_nothing_back",
        "a re-listing that ends after its server was removed puts the removed server's tools back",
    ),
    _m(
        "neighbour-table-keeps-an-untaught-question",
        "select/_neighbours.py",
        "texts = [t for t in self.texts if t not in touched or touched[t]]",
        "texts = list(self.texts)",
        "tests/select/test_neighbours.py::test_a_table_updated_card_by_card_holds_what_one_made_whole_does",
        "a question no trusted card holds any more stays in the table updated use by use",
    ),
    _m(
        "resumable-replays-another-session",
        "serving/_resumable.py",
        "if stream is None or stream.session != session or int(index) >= stream.next_index:",
        "if stream is None or int(index) >= stream.next_index:",
        "tests/server/test_resumable.py::test_a_session_replays_only_its_own_events",
        "a Last-Event-ID of another session's stream replays that session's events",
    ),
    _m(
        "on-behalf-claims-what-the-host-does-not-relay",
        "host/_on_behalf.py",
        "for key in RELAYED_CAPABILITIES if key in caller and key in own}",
        "for key in RELAYED_CAPABILITIES if key in caller}",
        "tests/gateway/test_caller_capabilities.py::test_only_the_relayed_kinds_change_and_only_to_what_both_declared",
        "an upstream is told of a capability the caller declared but the host cannot relay",
    ),
    _m(
        "forwarded-requests-declare-the-gateways-capabilities",
        "gateway/_forward.py",
        "with on_behalf_of(ctx.session.client_capabilities):",
        "with contextlib.nullcontext():",
        "tests/gateway/test_caller_capabilities.py::test_a_forwarded_prompt_resource_and_completion_declare_what_the_caller_declared",
        "a forwarded prompt, read or completion tells the upstream of capabilities the caller never declared",
    ),
    _m(
        "pin-headers-checked-before-the-policy",
        "gateway/_server.py",
        "            if routed is not None and tool_id(label, tool) not in routed:\n                continue\n",
        "",
        "tests/gateway/test_gateway_http_protocol.py::test_a_pin_the_policy_does_not_route_is_refused_by_the_policy_not_for_its_headers",
        "a pin not routed to the caller answers -32020 for its headers instead of the policy's refusal",
    ),
    _m(
        "stdio-guard-line-at-the-limit-dropped",
        "host/_stdio_guard.py",
        "if len(line) - (end != -1) > max_line:",
        "if len(line) - (end != -1) >= max_line:",
        f"{T_FAULTS}::test_the_stdio_guard_passes_lines_up_to_the_limit_and_replaces_the_rest",
        "a stdio line of exactly the limit is replaced instead of passed on",
    ),
    _m(
        "broken-request-read-error-ends-the-session",
        "host/_broken_request.py",
        "    httpx2.ReadError,\n    httpx2.WriteError,",
        "    httpx2.WriteError,",
        "tests/host/test_broken_request.py::test_a_request_whose_connection_broke_is_answered_with_an_error_for_that_request",
        "a connection reset under one POST escapes to the SDK, which ends the whole session",
    ),
    _m(
        "oauth-serving-runs-the-interactive-flow",
        "host/_oauth.py",
        "        if self._browser is not None:\n            return super()._auth_flow(request)",
        "        if True:\n            return super()._auth_flow(request)",
        "tests/host/test_oauth_cli.py::test_login_use_refresh_revoke_logout",
        "a connection made while serving runs the SDK's interactive flow, registering a client first",
    ),
    _m(
        "jwks-encryption-key-kept",
        "serving/_jwks.py",
        'k.public_key_use in ("sig", None)',
        'k.public_key_use in ("sig", "enc", None)',
        f"{T_JWKS}::test_beside_a_signing_key_an_encryption_key_is_left_out",
        "a JWK marked use: enc verifies token signatures",
    ),
    _m(
        "jwks-unmarked-key-dropped",
        "serving/_jwks.py",
        'k.public_key_use in ("sig", None)',
        'k.public_key_use == "sig"',
        f"{T_JWKS}::test_beside_a_signing_key_an_encryption_key_is_left_out",
        "a JWK without use (a signing key by the RFC's default) is dropped",
    ),
    _m(
        "host-redirects-followed",
        "host/_transports.py",
        '"follow_redirects": False,',
        '"follow_redirects": True,',
        f"{T_FAULTS}::test_a_redirect_to_another_origin_is_not_followed",
        "the host's HTTP client follows redirects",
        equivalent="the SDK's transports send every MCP request with follow_redirects=False and follow only a "
        "same-origin 307/308 themselves (mcp.shared._httpx_utils.stream_within_origin): the client's setting "
        "is not consulted; the test shows a 307 to another origin is not followed either way",
    ),
    _m(
        "budget-window-boundary",
        "host/_loader.py",
        "self._clock() - self._window_start >= self.budget_window:",
        "self._clock() - self._window_start > self.budget_window:",
        f"{T_LOADER}::test_a_budget_window_starts_the_budget_again_and_not_before",
        "the budget starts again only after its window, not when exactly a window has passed",
    ),
    _m(
        "budget-window-never",
        "host/_loader.py",
        "            self._window_start = self._clock()\n            self.used_bytes = 0\n",
        "            self._window_start = self._clock()\n",
        f"{T_LOADER}::test_a_budget_window_starts_the_budget_again_and_not_before",
        "a new budget window does not start the budget again",
    ),
    _m(
        "meta-find-limit-over",
        "gateway/_meta.py",
        "Field(ge=1, le=MAX_FIND_LIMIT,",
        "Field(ge=1, le=MAX_FIND_LIMIT + 1,",
        f"{T_META}::test_each_limit_takes_exactly_n_and_refuses_n_plus_one",
        "find takes a limit one over MAX_FIND_LIMIT",
    ),
    _m(
        "meta-find-limit-zero",
        "gateway/_meta.py",
        "Field(ge=1, le=MAX_FIND_LIMIT,",
        "Field(ge=0, le=MAX_FIND_LIMIT,",
        f"{T_META}::test_each_limit_takes_exactly_n_and_refuses_n_plus_one",
        "find takes a limit of 0",
    ),
    _m(
        "meta-load-ids-over",
        "gateway/_meta.py",
        "Field(min_length=1, max_length=MAX_LOAD_IDS,",
        "Field(min_length=1, max_length=MAX_LOAD_IDS + 1,",
        f"{T_META}::test_each_limit_takes_exactly_n_and_refuses_n_plus_one",
        "load takes one id more than MAX_LOAD_IDS",
    ),
    _m(
        "meta-id-chars-over",
        "gateway/_meta.py",
        "_Id = Annotated[str, Field(max_length=MAX_ID_CHARS)]",
        "_Id = Annotated[str, Field(max_length=MAX_ID_CHARS + 1)]",
        f"{T_META}::test_each_limit_takes_exactly_n_and_refuses_n_plus_one",
        "an id one character over MAX_ID_CHARS is taken (load, read_skill_file, call)",
    ),
    _m(
        "meta-id-chars-under",
        "gateway/_meta.py",
        "_Id = Annotated[str, Field(max_length=MAX_ID_CHARS)]",
        "_Id = Annotated[str, Field(max_length=MAX_ID_CHARS - 1)]",
        f"{T_META}::test_each_limit_takes_exactly_n_and_refuses_n_plus_one",
        "an id of exactly MAX_ID_CHARS is refused",
    ),
    _m(
        "meta-query-chars-over",
        "gateway/_meta.py",
        "_Text = Annotated[str, Field(max_length=MAX_QUERY_CHARS)",
        "_Text = Annotated[str, Field(max_length=MAX_QUERY_CHARS + 1)",
        f"{T_META}::test_each_limit_takes_exactly_n_and_refuses_n_plus_one",
        "a query (or a need) one character over MAX_QUERY_CHARS is taken",
    ),
    _m(
        "meta-path-chars-over",
        "gateway/_meta.py",
        "Field(max_length=MAX_PATH_CHARS,",
        "Field(max_length=MAX_PATH_CHARS + 1,",
        f"{T_META}::test_each_limit_takes_exactly_n_and_refuses_n_plus_one",
        "read_skill_file takes a path one character over MAX_PATH_CHARS",
    ),
    _m(
        "meta-needs-over",
        "gateway/_meta.py",
        "            max_length=MAX_NEEDS,\n",
        "            max_length=MAX_NEEDS + 1,\n",
        f"{T_META}::test_each_limit_takes_exactly_n_and_refuses_n_plus_one",
        "find takes one need more than MAX_NEEDS",
    ),
    _m(
        "cursor-negative-page",
        "gateway/_forward.py",
        "        and value[2] >= 0\n",
        "",
        f"{T_FORWARD}::test_a_cursor_names_a_page_from_0_to_the_cap_and_a_negative_one_is_refused",
        "a forged cursor with a negative page pages past the host's cap",
    ),
    _m(
        "cursor-bool-page",
        "gateway/_forward.py",
        "        and not isinstance(value[2], bool)\n",
        "",
        f"{T_FORWARD}::test_a_cursor_names_a_page_from_0_to_the_cap_and_a_negative_one_is_refused",
        "a cursor whose page is true is taken for page 1",
    ),
    _m(
        "page-cap-off-by-one",
        "gateway/_forward.py",
        "if next_cursor and page + 1 < limits.max_pages and len(next_cursor) <= MAX_CURSOR_CHARS:",
        "if next_cursor and page < limits.max_pages and len(next_cursor) <= MAX_CURSOR_CHARS:",
        f"{T_FORWARD}::test_a_cursor_names_a_page_from_0_to_the_cap_and_a_negative_one_is_refused",
        "the gateway lists one upstream page more than the host's page cap",
    ),
    _m(
        "subs-client-off-by-one",
        "gateway/_subscriptions.py",
        "if held >= MAX_CLIENT_SUBSCRIPTIONS:",
        "if held > MAX_CLIENT_SUBSCRIPTIONS:",
        f"{T_FORWARD}::test_concurrent_subscriptions_of_one_client_stop_at_its_limit",
        "a client may hold one resource subscription more than MAX_CLIENT_SUBSCRIPTIONS",
    ),
    _m(
        "subs-gateway-off-by-one",
        "gateway/_subscriptions.py",
        "elif not subscribers and gateway_wide >= MAX_SUBSCRIPTIONS:",
        "elif not subscribers and gateway_wide > MAX_SUBSCRIPTIONS:",
        f"{T_FORWARD}::test_concurrent_subscriptions_of_many_clients_stop_at_the_gateways_limit",
        "the gateway holds one upstream subscription more than MAX_SUBSCRIPTIONS",
    ),
    _m(
        "subs-resource-off-by-one",
        "gateway/_subscriptions.py",
        "elif len(subscribers) >= MAX_SUBSCRIBERS:",
        "elif len(subscribers) > MAX_SUBSCRIBERS:",
        f"{T_FORWARD}::test_concurrent_subscribers_of_one_resource_stop_at_its_limit",
        "one client more than MAX_SUBSCRIBERS subscribes to one resource",
    ),
    _m(
        "threshold-at-abstains",
        "select/_decide.py",
        "        if confidence < threshold:\n",
        "        if confidence <= threshold:\n",
        f"{T_DECIDE}::test_a_confidence_exactly_at_the_threshold_chooses_and_just_below_abstains",
        "a confidence exactly at the calibrated threshold abstains",
    ),
    _m(
        "threshold-lexical-ignored",
        "select/_decide.py",
        "            return self.lexical_calibration.threshold\n",
        "            return self.threshold\n",
        f"{T_DECIDE}::test_a_confidence_exactly_at_the_threshold_chooses_and_just_below_abstains",
        "a lexical ranking (card vectors not ready) is judged against the semantic threshold",
    ),
    # -- catalogs: what a registry may make the gateway read, run or ask -------------------------------
    _m(
        "catalog-version-latest-taken",
        "catalog/_entries.py",
        'if version.lower() == "latest":',
        'if version.lower() == "latest!":',
        T_CATALOG_ENTRIES,
        "a package version 'latest' is taken as an exact version",
    ),
    _m(
        "catalog-identifier-prefix-only",
        "catalog/_entries.py",
        "if not IDENTIFIERS[kind].fullmatch(identifier):",
        "if not IDENTIFIERS[kind].match(identifier):",
        T_CATALOG_ENTRIES,
        "a package identifier need only start like a plain name ('weather; rm -rf ~' passes)",
    ),
    _m(
        "catalog-name-dot-parts",
        "catalog/_entries.py",
        'if any(part in ("", ".", "..") or part.startswith(".") for part in (namespace, server)):',
        'if any(part in ("",) for part in (namespace, server)):',
        T_CATALOG_ENTRIES,
        "a server name whose part is '..' or starts with '.' is taken",
    ),
    _m(
        "catalog-entry-bytes-off-by-one",
        "catalog/_entries.py",
        "if size > limits.max_entry_bytes:",
        "if size >= limits.max_entry_bytes:",
        T_CATALOG_ENTRIES,
        "an entry exactly at its byte bound is skipped",
    ),
    _m(
        "catalog-secret-argument-runnable",
        "catalog/_entries.py",
        "elif any(i.secret and i.asked for i in (*runtime_arguments, *package_arguments)):",
        "elif False:",
        T_CATALOG_ENTRIES,
        "a package that takes a secret on its command line is offered",
    ),
    _m(
        "catalog-redirect-any-origin",
        "catalog/_fetch.py",
        "if _origin(target) != origin:",
        'if _origin(target) == ("", "", None):',
        T_CATALOG_FETCH,
        "a registry's redirect to another origin is followed",
    ),
    _m(
        "catalog-page-bytes-unbounded",
        "catalog/_fetch.py",
        "if len(body) > cap:",
        "if len(body) > 100 * cap:",
        T_CATALOG_FETCH,
        "a page (or a refresh) over its byte bound is read on",
    ),
    _m(
        "catalog-cursor-loop",
        "catalog/_fetch.py",
        "if cursor in seen:",
        "if cursor in seen and not cursor:",
        T_CATALOG_FETCH,
        "a registry that gives the same cursor again keeps the refresh going (until the page bound)",
    ),
    _m(
        "catalog-pages-off-by-one",
        "catalog/_fetch.py",
        "if fetched.pages >= limits.max_pages:",
        "if fetched.pages > limits.max_pages:",
        T_CATALOG_FETCH,
        "one page more than the bound is read",
    ),
    _m(
        "catalog-consent-decline-adds",
        "catalog/_consent.py",
        'if action != "accept":',
        'if action not in ("accept", "decline"):',
        (T_CATALOG_CONSENT, f"{T_REGISTRY_ADD}::test_a_decline_adds_nothing_and_connects_to_nothing"),
        "a person's decline is taken as an accept",
    ),
    _m(
        "catalog-consent-required-unchecked",
        "catalog/_consent.py",
        "            if item.required and item.default is None:\n                raise AddRefused(",
        "            if False:\n                raise AddRefused(",
        (T_CATALOG_CONSENT, f"{T_REGISTRY_ADD}::test_an_accepted_form_without_a_required_secret_adds_nothing"),
        "an accepted form without a required input adds the server",
    ),
    _m(
        "catalog-consent-control-characters",
        "catalog/_consent.py",
        "if _CONTROL.search(value):",
        "if _CONTROL.search(value[:0]):",
        T_CATALOG_CONSENT,
        "a value with a line break (a header split in two) is taken",
    ),
    _m(
        "catalog-consent-value-length-off-by-one",
        "catalog/_consent.py",
        "if len(value) > MAX_VALUE_CHARS:",
        "if len(value) > MAX_VALUE_CHARS + 1:",
        T_CATALOG_CONSENT,
        "a value one character over its bound is taken",
    ),
    _m(
        "catalog-policy-add-rule-ignored",
        "catalog/_consent.py",
        "    if not rules.may_add(caller):",
        "    if False:",
        (
            T_CATALOG_CONSENT,
            f"{T_REGISTRY_ADD}::test_a_policy_refuses_add_with_its_reason_and_find_offers_nothing_it_refuses",
        ),
        "a caller the policy's registry.add rule does not admit may add",
    ),
    _m(
        "catalog-added-readable-by-others",
        "catalog/_added.py",
        "os.fchmod(file.fileno(), 0o600)",
        "os.fchmod(file.fileno(), 0o644)",
        T_CATALOG_ADDED,
        "added.json, which holds secrets, is written readable by other users",
    ),
    _m(
        "add-consent-any-client",
        "gateway/_add.py",
        "if pending is None or pending.client != client or pending.card != card",
        "if pending is None or pending.card != card",
        (T_ADD_CONSENTS, f"{T_REGISTRY_ADD}::test_a_consent_is_good_once_and_only_for_the_client_that_was_asked"),
        "another client may answer the consent a client was asked for",
    ),
    _m(
        "add-asks-without-elicitation",
        "gateway/_add.py",
        "if missing_capability(_form(launch), ctx.session.client_capabilities) is not None:",
        "if False:",
        f"{T_REGISTRY_ADD}::test_a_client_that_cannot_ask_a_person_is_refused_with_the_terminal_command",
        "a client that declared no form elicitation is sent the form anyway",
    ),
    _m(
        "discovery-cards-on-sure-answers",
        "gateway/_discovery.py",
        'if index is None or not (found.get("abstain") or found.get("low_confidence")):',
        "if index is None:",
        f"{T_REGISTRY_ADD}::test_a_sure_answer_gains_no_catalog_cards_even_where_the_catalog_has_a_match",
        "find adds catalog cards to a sure answer",
    ),
    _m(
        "discovery-offers-what-the-policy-refuses",
        "gateway/_discovery.py",
        "if entry.name in added or policy_refusal(policy, caller, entry) is not None:",
        "if entry.name in added:",
        f"{T_REGISTRY_ADD}::test_a_policy_refuses_add_with_its_reason_and_find_offers_nothing_it_refuses",
        "find offers a catalog server the policy does not let this caller add",
    ),
    _m(
        "discovery-label-of-a-configured-upstream",
        "gateway/_discovery.py",
        "if label in self.service.upstreams.configured:",
        "if False:",
        f"{T_REGISTRY_ADD}::test_a_label_a_configured_upstream_has_is_not_taken_by_an_added_server",
        "an added server may take the label of a configured upstream",
    ),
    _m(
        "catalog-search-no-evidence",
        "catalog/_search.py",
        "if not scored.matched_terms and (cosine is None or cosine < MIN_COSINE):",
        "if False:",
        T_CATALOG_SEARCH,
        "a catalog card that shares nothing with the question is shown",
    ),
    _m(
        "log-drops-uncounted",
        "cli/_output.py",
        "        if state[0] < 1:\n            state[2] += 1\n",
        "        if state[0] < 1:\n",
        ("tests/test_cli_output.py", f"{T_BOUNDS}::test_what_refused_requests_make_the_server_log_is_bounded"),
        "log lines dropped by the rate limit are not counted (no line says how many)",
    ),
    _m(
        "log-refill-doubled",
        "cli/_output.py",
        "state[0] + (now - state[1]) / self.every)",
        "state[0] + 2 * (now - state[1]) / self.every)",
        ("tests/test_cli_output.py", f"{T_BOUNDS}::test_what_refused_requests_make_the_server_log_is_bounded"),
        "the log rate limit lets two lines a second through, not one",
    ),
    # -- the first answer on everyday questions: intent, ties, small catalogs ----------------------------
    _m(
        "intent-negated-forget-deletes",
        "select/_intent.py",
        '_NEGATED_FORGET.sub("remember", question)',
        "question",
        "tests/select/test_intent.py",
        '"don\'t forget X" is read as a request to delete',
    ),
    _m(
        "intent-destructive-write-contradicts",
        "select/_intent.py",
        '("write", "destructive"): 0.5,',
        '("write", "destructive"): -1.0,',
        "tests/select/test_intent.py",
        "a write question is steered away from a tool that overwrites (write_file)",
    ),
    _m(
        "intent-word-cap-off-by-one",
        "select/_intent.py",
        "_WORD.findall(text)[:MAX_WORDS]",
        "_WORD.findall(text)[: MAX_WORDS - 1]",
        "tests/select/test_intent.py",
        "the 64th word of a question is not read for a cue",
    ),
    _m(
        "credentials-group-writable-trusted",
        "host/_credentials.py",
        "        if status.st_mode & 0o022:",
        "        if status.st_mode & 0o002:",
        "tests/host/test_oauth.py",
        "a stored OAuth record the user's group may write is used",
    ),
    _m(
        "credentials-folder-not-checked",
        "host/_credentials.py",
        '            self._own(self.folder, os.lstat(self.folder), "folder", "700")\n',
        "",
        "tests/host/test_oauth.py",
        "a stored OAuth record in a folder others may write is used",
    ),
    _m(
        "redact-json-form-dropped",
        "host/_config.py",
        "    forms |= {json.dumps(form)[1:-1] for form in forms}  # a JSON log line of any of them\n",
        "",
        "tests/host/test_config.py",
        "a secret an upstream prints JSON-escaped shows in messages",
    ),
    _m(
        "slots-missing-clock-not-held",
        "select/_slots.py",
        '    if "clock" in needed and not names_action:\n        return -1.0\n',
        "",
        "tests/select/test_slots.py",
        "a tool that needs a clock time the question does not give is not moved back",
    ),
    _m(
        "slots-optional-argument-counts",
        "select/_slots.py",
        "    for name in required:",
        "    for name in properties:",
        "tests/select/test_slots.py",
        "an optional argument is read as a value the question must give",
    ),
    _m(
        "slots-char-cap-off-by-one",
        "select/_slots.py",
        "text = question[:MAX_CHARS]",
        "text = question[: MAX_CHARS - 1]",
        "tests/select/test_slots.py",
        "the last character a question's values are read from is dropped",
    ),
    _m(
        "slots-action-named-by-four-letters",
        "select/_slots.py",
        '_NAME_WORD = re.compile(r"[a-z]{5,}")',
        '_NAME_WORD = re.compile(r"[a-z]{4,}")',
        "tests/select/test_slots.py",
        "'time' in a tool's name counts as naming its action",
    ),
    _m(
        "memory-need-not-leading",
        "select/_query.py",
        "LEADING_NEEDS = frozenset(need for _, need in IMPLIED_NEEDS[:5])",
        "LEADING_NEEDS = frozenset(need for _, need in IMPLIED_NEEDS[:3])",
        "tests/select/test_needs.py",
        "a fact to remember puts its server fifth, not first, in a small catalog",
    ),
    _m(
        "shortlist-ties-behind-fillers",
        "gateway/_shortlist.py",
        "head = [head[0], *close, *ties, *rest[len(close) :]]",
        "head = [head[0], *rest, *ties]",
        "tests/gateway/test_shortlist.py",
        "a card tying with the first is shown after other servers' fillers (sixth for 'time in Tokyo')",
    ),
    _m(
        "shortlist-tie-margin-strict",
        "gateway/_shortlist.py",
        "top - s.score <= TIE_MARGIN + _EPSILON and",
        "top - s.score < TIE_MARGIN - _EPSILON and",
        "tests/gateway/test_shortlist.py",
        "a card exactly at the tie margin is not shown as a tie",
    ),
    _m(
        "small-catalog-boundary",
        "select/_decide.py",
        "servers <= SMALL_CATALOG_SERVERS",
        "servers < SMALL_CATALOG_SERVERS",
        "tests/select/test_small_calibration.py",
        "a catalog of exactly SMALL_CATALOG_SERVERS servers is judged by the large model",
    ),
    _m(
        "small-catalog-file-need-boundary",
        "select/_rank.py",
        "self.small = len(self.server_labels) <= SMALL_CATALOG_SERVERS",
        "self.small = len(self.server_labels) < SMALL_CATALOG_SERVERS",
        "tests/select/test_needs.py",
        "in a catalog of exactly SMALL_CATALOG_SERVERS servers a named file's server is not put first",
    ),
    _m(
        "small-catalog-date-leads",
        "select/_query.py",
        "LEADING_NEEDS = frozenset(need for _, need in IMPLIED_NEEDS[:5])",
        "LEADING_NEEDS = frozenset(need for _, need in IMPLIED_NEEDS)",
        "tests/select/test_needs.py",
        "a date relative to today ('rain tomorrow') puts the clock server first in a small catalog",
    ),
    _m(
        "need-served-by-the-fused-views",
        "select/_rank.py",
        "implied=False, by_own=self.small)",
        "implied=False, by_own=False)",
        "tests/select/test_needs.py",
        "in a small catalog an implied need's server is the fused views' first, not its closest card's",
    ),
    _m(
        "arithmetic-in-words-missed",
        "select/_query.py",
        '    r"|\\d\\s+(?:plus|minus|times|divided by|multiplied by)\\s+-?\\d"\n',
        "",
        ("tests/select/test_needs.py", "tests/select/test_intent.py"),
        "'what is 17 plus 25' implies no arithmetic",
    ),
    _m(
        "arithmetic-intent-is-a-write",
        "select/_intent.py",
        '    if ARITHMETIC.search(question):\n        return "read"\n',
        "",
        "tests/select/test_intent.py",
        "'add 42 and 58' is read as a request to add to data (a read-only sum tool weighed against)",
    ),
    _m(
        "floor-under-given-threshold",
        "select/_decide.py",
        "        if self._threshold_given:\n            return None\n",
        "",
        "tests/select/test_small_calibration.py",
        "an operator's threshold is lowered by the calibration's floor",
    ),
    # -- learning that keeps what it learned, and learns the right lesson ---------------------------
    _m(
        "credit-abstention",
        "gateway/_activation.py",
        "    if abstained or not cards:\n        return []\n",
        "    if not cards:\n        return []\n",
        (
            "tests/learning/test_credit.py::test_an_answer_credits_the_cards_it_put_forward_never_a_filler_nor_an_abstention",
            "tests/learning/test_credit.py::test_a_card_loaded_from_an_abstention_teaches_nothing",
        ),
        "a card loaded from an answer that abstained is credited with the question",
    ),
    _m(
        "credit-fillers",
        "gateway/_activation.py",
        'return [str(c["id"]) for c in cards if top - float(c["score"]) <= gap + 1e-9]',
        'return [str(c["id"]) for c in cards]',
        "tests/learning/test_credit.py::test_an_answer_credits_the_cards_it_put_forward_never_a_filler_nor_an_abstention",
        "another server's filler, shown only to fill the shortlist, is credited",
    ),
    _m(
        "credit-newest-not-best",
        "gateway/_activation.py",
        "            if best is None or place < best[0]:",
        "            if best is None:",
        "tests/learning/test_credit.py::test_a_load_is_credited_to_the_question_that_ranked_the_card_best",
        "a load is credited to the newest question that showed the card, not the one that ranked it best",
    ),
    _m(
        "ledger-view-prunes-others",
        "gateway/_ledger_view.py",
        "        if here is None:\n            return True\n",
        "        if here is None:\n            return False\n",
        ("tests/learning/test_ledger_ownership.py", "tests/gateway/test_ledger_view.py"),
        "a gateway prunes the cards another gateway's upstreams taught",
    ),
    _m(
        "anonymous-displaces",
        "learning/_ledger.py",
        "    share = room if not identified else min(room, len(identified))",
        "    share = room",
        "tests/learning/test_anonymous.py",
        "anonymous uses hold more of a card's questions than the identified callers",
    ),
    _m(
        "anonymous-trusted",
        "learning/_ledger.py",
        "        return alone and bool(identified) and ANONYMOUS not in callers",
        "        return alone and bool(identified)",
        "tests/learning/test_anonymous.py",
        "a card flooded by anonymous uses stays trusted",
    ),
    _m(
        "anonymous-off-ignored",
        "gateway/_usage.py",
        '            if self.service.anonymous == "off":',
        "            if False:",
        "tests/learning/test_anonymous.py",
        "over HTTP without tokens, anonymous callers teach although the operator did not let them",
    ),
    _m(
        "ledger-reads-behind-writes",
        "learning/_stores.py",
        '        return await self._call("read", self._version, audience)',
        '        return await self._call("write", self._version, audience)',
        "tests/learning/test_locked_ledger.py",
        "a find's ledger read waits behind a write waiting on another process's lock",
    ),
    _m(
        "ledger-never-reopened",
        "learning/_stores.py",
        "        if lane.inode is None or lane.inode == self._current_inode():\n            return\n",
        "        return\n",
        "tests/learning/test_locked_ledger.py",
        "a ledger removed while serving is written on into the unlinked file",
    ),
    _m(
        "recall-untrusted",
        "select/_history.py",
        "        for card in sorted(self.trusted):",
        "        for card in sorted(self.questions):",
        "tests/learning/test_worked_before.py",
        "an untrusted past question is recalled as having worked before",
    ),
    _m(
        "policy-label-star-public-ignored",
        "gateway/_indexes.py",
        "allowed = allowed_tools(self.service.policy, ids, caller) | public",
        "allowed = allowed_tools(self.service.policy, ids, caller)",
        "tests/gateway/test_policy_hides.py",
        "public_tools: [LABEL/*] makes none of that upstream's tools public",
    ),
    _m(
        "policy-hidden-told-to-everyone",
        "gateway/_service.py",
        "why = self.indexes.hidden(caller, index, card_id) if self.explain_hidden else None",
        "why = self.indexes.hidden(caller, index, card_id)",
        "tests/gateway/test_policy_hides.py",
        "a caller over HTTP learns which ids the policy hides from it (load)",
    ),
    _m(
        "policy-hidden-call-told-to-everyone",
        "gateway/_service.py",
        "                if self.explain_hidden:\n                    why = self.indexes.hidden(caller, index, hidden)",
        "                if True:\n                    why = self.indexes.hidden(caller, index, hidden)",
        "tests/gateway/test_policy_hides.py",
        "a caller over HTTP learns which tools the policy hides from it (call)",
    ),
    _m(
        "serve-watch-refusal-said-every-reload",
        "cli/__init__.py",
        "            if problem not in reported or reported[problem] != saved:\n",
        "            if True:\n",
        "tests/test_cli.py::test_serve_watch_reports_a_new_broken_skill_at_once_and_announces_it_served_when_fixed",
        "serve --watch says every refused skill again on each reload, whatever file changed",
    ),
    _m(
        "serve-watch-refusal-resave-silent",
        "cli/__init__.py",
        "            if problem not in reported or reported[problem] != saved:\n",
        "            if problem not in reported:\n",
        "tests/test_cli.py::test_serve_watch_reports_a_new_broken_skill_at_once_and_announces_it_served_when_fixed",
        "serve --watch says nothing when a refused skill's file is saved again, still broken",
    ),
    # -- clients: what `skilldeck clients` writes into other programs' files ----------------------------
    _m(
        "clients-overwrite-a-file-changed-meanwhile",
        "clients/_state.py",
        "    if read_bytes(target) != expected:\n",
        "    if False:\n",
        f"{T_CLIENTS_CLI}::test_a_file_changed_between_reading_and_writing_is_not_overwritten",
        "connect writes over a client file its client rewrote after connect read it",
    ),
    _m(
        "clients-restore-over-edits",
        "cli/_clients.py",
        "        if edited and not args.force:\n",
        "        if False:\n",
        f"{T_CLIENTS_CLI}::test_disconnect_refuses_a_file_edited_since_and_force_keeps_the_edit",
        "disconnect restores the copy over a file the user edited since the connect",
    ),
    _m(
        "clients-secrets-world-readable",
        "clients/_state.py",
        "        if private:\n            mode &= 0o600\n",
        "        if private:\n            pass\n",
        f"{T_CLIENTS_CLI}::test_connecting_says_where_the_secrets_went_and_never_shows_them",
        "the upstreams file holding moved tokens keeps a mode others may read",
    ),
    _m(
        "clients-diff-shows-secrets",
        "cli/_clients.py",
        "            line = line[0] + _redacted(line[1:], secrets)\n",
        "            pass\n",
        f"{T_CLIENTS_CLI}::test_a_dry_run_shows_every_change_writes_nothing_and_prints_no_secret",
        "--dry-run prints env and header values in its diff",
    ),
    _m(
        "clients-tool-filter-moved",
        "clients/_dialects.py",
        "        if raw.get(key):\n",
        "        if False:\n",
        "tests/clients/test_dialects.py",
        "a server a client offers only some tools of moves behind the gateway, which offers them all",
    ),
    _m(
        "clients-label-taken-replaced",
        "clients/_plan.py",
        "        if f.label not in merged:\n",
        "        if True:\n",
        T_CLIENTS_PLAN,
        "a moved server whose label is taken in the upstreams file replaces the other server there",
    ),
    _m(
        "clients-same-server-by-label",
        "clients/_plan.py",
        '    if "url" in entry:\n        return ("url", str(entry["url"]).rstrip("/"))\n',
        '    return ("label",)\n',
        T_CLIENTS_PLAN,
        "servers are matched without their command, arguments or URL",
    ),
    _m(
        "jsonc-dangling-comma",
        "clients/_jsonc.py",
        "    if last and index > 0 and member.comma is None:",
        "    if False:",
        "tests/clients/test_jsonc.py",
        "removing a JSON object's last member leaves a comma that strict JSON readers refuse",
    ),
    # -- tests that miss a changed line: bounds at N and N+1, each guard's reason ------------------------
    _m(
        "validate-strict-ignored",
        "cli/_authoring.py",
        "failed = bool(report.errors) or (args.strict and bool(report.warnings))",
        "failed = bool(report.errors)",
        T_AUTHORING,
        "validate --strict exits 0 on a skill with warnings",
    ),
    _m(
        "validate-warnings-always-fail",
        "cli/_authoring.py",
        "failed = bool(report.errors) or (args.strict and bool(report.warnings))",
        "failed = bool(report.errors) or bool(report.warnings)",
        T_AUTHORING,
        "validate without --strict exits 1 on warnings alone",
    ),
    _m(
        "body-long-last-line-uncounted",
        "authoring.py",
        'body_lines = body.count("\\n") + (0 if body.endswith("\\n") or not body else 1)',
        'body_lines = body.count("\\n")',
        T_AUTHORING,
        "a body of 501 lines whose last has no newline is counted as 500 and passes",
    ),
    _m(
        "body-long-at-the-limit",
        "authoring.py",
        "if body_lines > BODY_MAX_LINES:",
        "if body_lines >= BODY_MAX_LINES:",
        T_AUTHORING,
        "a body of exactly 500 lines warns",
    ),
    _m(
        "ledger-half-rounded-up-once-more",
        "learning/_ledger.py",
        "if mine <= (len(taken) + 2) // 2:",
        "if mine <= (len(taken) + 3) // 2:",
        T_LEDGER,
        "one caller takes more than half of a card's questions while they are taken",
    ),
    _m(
        "ledger-half-rounded-down",
        "learning/_ledger.py",
        "if mine <= (len(taken) + 2) // 2:",
        "if mine <= (len(taken) + 1) // 2:",
        T_LEDGER,
        "a caller's use is skipped at exactly half",
    ),
    _m(
        "ledger-excess-of-one-kept",
        "learning/_ledger.py",
        "    if excess > 0:\n",
        "    if excess > 1:\n",
        T_LEDGER,
        "a caller holding one more than half of a card's questions keeps it",
    ),
    _m(
        "ledger-two-per-card-unbalanced",
        "learning/_ledger.py",
        "if per_card < 2 or len({u.caller for u in ordered}) <= 1:",
        "if per_card < 3 or len({u.caller for u in ordered}) <= 1:",
        T_LEDGER,
        "a card that keeps two questions keeps both of one caller's when another taught it too",
    ),
    _m(
        "credentials-group-readable-folder-kept",
        "host/_credentials.py",
        'if os.name == "posix" and mode & 0o077:',
        'if os.name == "posix" and mode & 0o007:',
        T_OAUTH,
        "a credentials folder the group may read is used as it is",
    ),
    _m(
        "credentials-world-readable-folder-kept",
        "host/_credentials.py",
        'if os.name == "posix" and mode & 0o077:',
        'if os.name == "posix" and mode & 0o070:',
        T_OAUTH,
        "a credentials folder anyone may read is used as it is",
    ),
    _m(
        "credentials-symlinked-folder-used",
        "host/_credentials.py",
        "        if not stat.S_ISDIR(mode):\n",
        "        if False:\n",
        T_OAUTH,
        "a credentials folder that is a symlink to somewhere else is written through",
    ),
    _m(
        "credentials-leftover-file-mode-kept",
        "host/_credentials.py",
        "                    os.fchmod(file.fileno(), 0o600)\n",
        "                    pass\n",
        T_OAUTH,
        "a record written over a temporary file left readable by others stays readable",
    ),
    _m(
        "bearer-token-at-the-limit-refused",
        "serving/_tokens.py",
        "if len(token) > MAX_TOKEN_CHARS:",
        "if len(token) >= MAX_TOKEN_CHARS:",
        T_TOKENS,
        "a bearer token of exactly the limit is refused",
    ),
    _m(
        "console-token-at-the-limit-refused",
        "serving/_console.py",
        "if len(token) > MAX_TOKEN_CHARS:",
        "if len(token) >= MAX_TOKEN_CHARS:",
        "tests/console/test_console_http.py",
        "the console refuses a bearer token of exactly the limit",
    ),
    _m(
        "stdio-guard-rest-passed-after-one-read",
        "host/_stdio_guard.py",
        "            if skipping:\n                skipping = end == -1\n",
        "            if skipping:\n                skipping = False\n",
        T_FAULTS,
        "the rest of an over-long line that spans several reads is passed on from the second read",
    ),
    _m(
        "stdio-guard-rest-passed",
        "host/_stdio_guard.py",
        "                line.clear()\n                skipping = end == -1\n",
        "                line.clear()\n                skipping = False\n",
        T_FAULTS,
        "the rest of an over-long line is passed on as a line of its own",
    ),
    _m(
        "stdio-guard-head-from-the-end",
        "host/_stdio_guard.py",
        "_too_long(bytes(line[:4096]), max_line)",
        "_too_long(bytes(line[-4096:]), max_line)",
        T_FAULTS,
        "an over-long response is read for its id at its end: the request is not answered, the session ends",
    ),
    _m(
        "jwks-url-read-whole",
        "serving/_jwks.py",
        "                        if len(body) > MAX_JWKS_BYTES:\n                            raise",
        "                        if False:\n                            raise",
        T_JWKS,
        "a JWKS endpoint's body is read whole before its size is checked",
    ),
    _m(
        "jwks-url-at-the-limit-refused",
        "serving/_jwks.py",
        "                        if len(body) > MAX_JWKS_BYTES:\n",
        "                        if len(body) >= MAX_JWKS_BYTES:\n",
        f"{T_JWKS}::test_a_jwks_of_exactly_the_cap_is_used_and_one_byte_more_is_refused",
        "a JWKS endpoint's body of exactly the limit is refused",
    ),
    _m(
        "jwks-at-the-limit-refused",
        "serving/_jwks.py",
        "    if len(data) > MAX_JWKS_BYTES:\n",
        "    if len(data) >= MAX_JWKS_BYTES:\n",
        T_JWKS,
        "a JWKS of exactly the limit is refused",
    ),
    _m(
        "jwks-file-read-to-the-limit",
        "serving/_jwks.py",
        "data = fh.read(MAX_JWKS_BYTES + 1)",
        "data = fh.read(MAX_JWKS_BYTES)",
        T_JWKS,
        "a JWKS file over the limit is cut to it and refused as not JSON",
    ),
    _m(
        "same-json-extra-key-ignored",
        "host/_verify.py",
        "return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)",
        "return all(k in b and same_json(a[k], b[k]) for k in a)",
        T_VERIFY,
        "a nested mapping with one more key compares equal",
    ),
    _m(
        "same-json-list-prefix",
        "host/_verify.py",
        "return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))",
        "return all(same_json(x, y) for x, y in zip(a, b))",
        T_VERIFY,
        "a list and its prefix compare equal",
    ),
    _m(
        "verify-frontmatter-extra-field-unseen",
        "host/_verify.py",
        "for key in set(parsed.frontmatter) | set(frontmatter)",
        "for key in set(frontmatter)",
        T_VERIFY,
        "a field only the fetched SKILL.md has goes unnoticed",
    ),
    _m(
        "openai-agents-load-ids-at-the-limit",
        "agents/openai_agents.py",
        "if len(ids) > MAX_LOAD_IDS:",
        "if len(ids) >= MAX_LOAD_IDS:",
        "tests/agents/test_openai_agents.py",
        "load_skill with exactly the most ids is refused",
    ),
    _m(
        "openai-agents-bare-name-guessed",
        "agents/openai_agents.py",
        "return matches[0] if len(matches) == 1 else tool",
        "return matches[0] if matches else tool",
        f"{T_MODEL_SEES}::test_openai_agents_gate_maps_a_bare_name_to_its_one_loaded_server_and_refuses_it_once_two_are",
        "a bare tool name two active servers list is sent to the first of them",
    ),
    _m(
        "pydantic-ai-upstream-error-as-result",
        "agents/pydantic_ai.py",
        '        if result.get("isError"):\n',
        "        if False:\n",
        "tests/agents/test_pydantic_ai.py",
        "an upstream tool's isError result is given to the model as a success",
    ),
    _m(
        "decide-explicit-threshold-not-for-jobs",
        "select/_decide.py",
        "job_threshold = self.threshold if self.job_calibration is None else job_cal.threshold",
        "job_threshold = job_cal.threshold",
        T_DECIDE,
        "an explicit threshold leaves the extra jobs of a question judged by the calibrated one",
    ),
)

# -- applying -------------------------------------------------------------------------------------------


def mutate(text: str, mutation: Mutation) -> str:
    """``text`` with the mutation applied.

    Raises:
        PatternError: the snippet does not occur exactly once (the code moved on: update the mutation).
    """
    count = text.count(mutation.old)
    if count != 1:
        found = "not found" if count == 0 else f"found {count} times"
        raise PatternError(f"{mutation.id}: pattern {found} in {mutation.file}: {mutation.old!r}")
    return text.replace(mutation.old, mutation.new)


def check(root: Path = REPO, mutations: tuple[Mutation, ...] = MUTATIONS) -> list[str]:
    """Every problem with the mutation list against the tree at ``root`` (empty when all apply)."""
    problems: list[str] = []
    ids = [m.id for m in mutations]
    problems += [f"{i}: id used twice" for i in sorted({i for i in ids if ids.count(i) > 1})]
    for mutation in mutations:
        path = root / mutation.file
        if not path.is_file():
            problems.append(f"{mutation.id}: no file {mutation.file}")
        else:
            try:
                compile(mutate(path.read_text(encoding="utf-8"), mutation), str(path), "exec")
            except PatternError as exc:
                problems.append(str(exc))
            except SyntaxError as exc:
                problems.append(f"{mutation.id}: the mutated {mutation.file} does not compile: {exc}")
        for target in mutation.tests:
            file, _, test = target.partition("::")
            if not (root / file).is_file():
                problems.append(f"{mutation.id}: no test file {file}")
            elif test and not re.search(rf"def {re.escape(test)}\b", (root / file).read_text(encoding="utf-8")):
                problems.append(f"{mutation.id}: no test {test} in {file}")
    return problems


# -- running ----------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    id: str
    file: str
    what: str
    tests: list[str]
    status: str
    """``caught``, ``survived``, ``equivalent`` (survived, and marked so), or ``error`` (no test ran)."""
    seconds: float
    failed: list[str]


@dataclass(frozen=True)
class Worker:
    """One worker's copy of the repository and the venv that imports it."""

    copy: Path
    python: Path
    """The venv's Python: ``sys.executable`` of the tests, and so of every server they spawn."""


def _pytest(worker: Worker, targets: list[str], timeout: float) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env |= {
        "PATH": f"{worker.python.parent}{os.pathsep}{env.get('PATH', '')}",
        "VIRTUAL_ENV": str(worker.python.parent.parent),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    try:
        proc = subprocess.run(
            [str(worker.python), "-m", "pytest", *PYTEST_ARGS, *targets],
            cwd=worker.copy,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return 1, "TIMEOUT (counted as caught: the tests did not pass)"
    return proc.returncode, proc.stdout + proc.stderr


def _failed(output: str) -> list[str]:
    return re.findall(r"^(?:FAILED|ERROR) (\S+)", output, re.MULTILINE)[:3]


def _make_copy(where: Path) -> Path:
    copy = where / "repo"
    copy.mkdir()
    ignore = shutil.ignore_patterns(
        "__pycache__", "*.pyc", ".pytest_cache", "node_modules", ".venv*", ".ts-skills-server"
    )
    for name in COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=ignore, symlinks=True)
        else:
            shutil.copy2(source, copy / name)
    return copy


def _make_venv(where: Path, copy: Path) -> Path:
    """A venv at ``where/venv`` with ``copy`` installed editable over the packages this script runs with;
    its Python.

    ``venv --without-pip`` takes a second where ``pip install -e`` would build a wheel each time: the
    editable install is a ``.pth`` naming ``copy/src``, and a second line puts this environment's
    site-packages after it (as a plain path: its own ``.pth`` files, among them the working tree's
    editable install, are not read). Checked with the environment the SDK gives a spawned server.
    """
    venv = where / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    python = venv / ("Scripts" if os.name == "nt" else "bin") / Path(base).name
    if not python.exists():
        python = python.with_name("python")
    query = "import sysconfig, json; print(json.dumps(sysconfig.get_paths()))"
    ours = json.loads(subprocess.run([sys.executable, "-c", query], capture_output=True, text=True, check=True).stdout)
    theirs = json.loads(subprocess.run([python, "-c", query], capture_output=True, text=True, check=True).stdout)
    lines = [str(copy / "src"), *dict.fromkeys([ours["purelib"], ours["platlib"]])]
    Path(theirs["purelib"], "_skilldeck_mutation_copy.pth").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # what a server the SDK spawns sees: the venv's Python, a few variables, no PYTHONPATH
    bare = {k: os.environ[k] for k in ("PATH", "HOME", "SYSTEMROOT") if k in os.environ}
    probe = subprocess.run(
        [python, "-c", "import skilldeck, mcp; print(skilldeck.__file__)"],
        env=bare,
        cwd=where,
        capture_output=True,
        text=True,
        check=True,
    )
    if not probe.stdout.strip().startswith(str(copy)):
        raise SystemExit(f"the worker's venv imports {probe.stdout.strip()}, not its copy in {copy}")
    return python


def _make_worker(where: Path, tests_from: str | None) -> Worker:
    where.mkdir()
    copy = _make_copy(where)
    if tests_from:
        _old_tests(copy, tests_from)
    return Worker(copy, _make_venv(where, copy))


def _old_tests(copy: Path, revision: str) -> None:
    """Replace the copy's tests with those of ``revision`` (to measure what an older suite catches)."""
    shutil.rmtree(copy / "tests")
    archive = subprocess.run(["git", "archive", revision, "tests"], cwd=REPO, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(copy)], input=archive.stdout, check=True)


def _targets(copy: Path, mutation: Mutation) -> list[str]:
    """The mutation's test targets that exist in the copy; a missing test falls back to its file, a
    missing file to every test in its folder (only with --tests-from, where older tests are run)."""
    found: list[str] = []
    for target in mutation.tests:
        file, _, test = target.partition("::")
        if not (copy / file).is_file():
            target = str(Path(file).parent)
        elif test and not re.search(rf"def {re.escape(test)}\b", (copy / file).read_text(encoding="utf-8")):
            target = file
        if target not in found:
            found.append(target)
    return found


def _one(worker: Worker, mutation: Mutation, timeout: float) -> tuple[Outcome, str]:
    """Apply ``mutation`` to the worker's copy, run its tests, restore the file."""
    path = worker.copy / mutation.file
    original = path.read_text(encoding="utf-8")
    path.write_text(mutate(original, mutation), encoding="utf-8")
    started = time.perf_counter()
    try:
        code, output = _pytest(worker, _targets(worker.copy, mutation), timeout)
    finally:
        path.write_text(original, encoding="utf-8")
    timed_out = "Failed: Timeout (>" in output  # pytest-timeout's, which may end pytest with an internal error
    status = "caught" if code == 1 or (code != 0 and timed_out) else "survived" if code == 0 else "error"
    if status == "survived" and mutation.equivalent:
        status = "equivalent"
    outcome = Outcome(
        mutation.id,
        mutation.file,
        mutation.what,
        _targets(worker.copy, mutation),
        status,
        round(time.perf_counter() - started, 1),
        _failed(output),
    )
    return outcome, output


def run(
    mutations: list[Mutation], timeout: float, verbose: bool, tests_from: str | None = None, jobs: int = 1
) -> tuple[list[Outcome], float]:
    with tempfile.TemporaryDirectory(prefix="skilldeck-mutation-") as tmp:
        jobs = max(1, min(jobs, len(mutations)))
        with ThreadPoolExecutor(jobs) as pool:
            workers = list(pool.map(lambda n: _make_worker(Path(tmp) / f"worker{n}", tests_from), range(jobs)))
        targets = sorted({t for m in mutations for t in _targets(workers[0].copy, m)})
        started = time.perf_counter()
        code, output = _pytest(workers[0], targets, timeout * 4)
        baseline = time.perf_counter() - started
        if code != 0:
            print(output[-4000:], file=sys.stderr)
            raise SystemExit("the tests fail on the unmutated code; fix that first")
        print(f"baseline: {len(targets)} test targets pass unmutated ({baseline:.1f} s); {jobs} workers")
        free: Queue[Worker] = Queue()
        for worker in workers:
            free.put(worker)
        done: list[Outcome] = []
        lock = threading.Lock()

        def job(mutation: Mutation) -> Outcome:
            worker = free.get()
            try:
                outcome, output = _one(worker, mutation, timeout)
            finally:
                free.put(worker)
            with lock:
                done.append(outcome)
                print(
                    f"[{len(done):3}/{len(mutations)}] {outcome.status:8} {mutation.id:40} "
                    f"{outcome.seconds:5.1f} s  {mutation.what}",
                    flush=True,
                )
                if outcome.status != "caught" and verbose:
                    print(output[-3000:])
            return outcome

        with ThreadPoolExecutor(jobs) as pool:
            outcomes = list(pool.map(job, mutations))  # in the list's order, whichever finished first
        return outcomes, baseline


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="ID", help="run only these mutations")
    parser.add_argument("--check", action="store_true", help="only check that every mutation still applies")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument(
        "--jobs", type=int, default=2, help="workers, each with its own copy and venv, running mutations side by side"
    )
    parser.add_argument("--timeout", type=float, default=300, help="seconds per mutation run (default 300)")
    parser.add_argument("--output", type=Path, default=RESULTS, help=f"result JSON (default {RESULTS})")
    parser.add_argument("--verbose", action="store_true", help="print the test output of surviving mutations")
    parser.add_argument(
        "--tests-from",
        metavar="REV",
        help="run the tests of this git revision instead (a test it lacks: its file, else its folder)",
    )
    args = parser.parse_args(argv)

    if args.list:
        for m in MUTATIONS:
            print(f"{m.id:40} {m.file:32} {m.what}")
        return 0
    problems = check()
    if problems:
        print("stale mutations (update the snippet in tools/mutation.py):", *problems, sep="\n  ", file=sys.stderr)
        return 2
    if args.check:
        print(f"all {len(MUTATIONS)} mutations apply")
        return 0
    chosen = list(MUTATIONS)
    if args.only:
        unknown = sorted(set(args.only) - {m.id for m in MUTATIONS})
        if unknown:
            parser.error(f"unknown mutation ids: {', '.join(unknown)} (see --list)")
        chosen = [m for m in MUTATIONS if m.id in args.only]

    started = time.perf_counter()
    outcomes, baseline = run(chosen, args.timeout, args.verbose, args.tests_from, args.jobs)
    counts = {s: sum(o.status == s for o in outcomes) for s in ("caught", "survived", "equivalent", "error")}
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "commit": _git("rev-parse", "HEAD"),
        "worktree_clean": _git("status", "--porcelain", "--", "src", "tests") == "",
        "python": platform.python_version(),
        "machine": {"cpus": os.cpu_count(), "load_average": list(os.getloadavg())},
        "tests_from": args.tests_from or "the working tree",
        "pytest_args": list(PYTEST_ARGS),
        "jobs": args.jobs,
        "baseline_seconds": round(baseline, 1),
        "total_seconds": round(time.perf_counter() - started, 1),
        "summary": {"mutations": len(outcomes), **counts},
        "mutations": [asdict(o) for o in outcomes],
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(
        f"{counts['caught']}/{len(outcomes) - counts['equivalent']} non-equivalent mutations caught, "
        f"{counts['survived']} survived, {counts['equivalent']} equivalent, {counts['error']} errors "
        f"in {result['total_seconds']:.0f} s; wrote {args.output}"
    )
    if counts["error"]:
        return 2
    return 1 if counts["survived"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
