"""``skilldeck validate`` and ``skilldeck new``: every loader refusal once, with its line; publishing warnings."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from skilldeck.authoring import DESCRIPTION_MIN_WORDS, lint_paths
from skilldeck.errors import FrontmatterError
from skilldeck.skill._pack import DirectorySource

from .server.helpers import CLI, REPO, cli_env

GOOD = "description: A perfectly fine skill for testing the loader refusals one by one.\n"
CONFORMANCE_VERSION = "0.2.0-alpha.12"  # as tests/integration/conftest.py pins it


def run(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=cwd, env=cli_env(), capture_output=True, text=True, timeout=120)


def skill(root: Path, name: str, text: str | bytes) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_bytes(text if isinstance(text, bytes) else text.encode())
    return folder


def fm(name: str, extra: str = "", *, description: str = GOOD) -> str:
    return f"---\nname: {name}\n{description}{extra}---\n# {name}\nA perfectly fine body about loader refusals.\n"


# (folder, rule, line or None): each refusal the loader knows, and where validate must point.
EXPECTED: list[tuple[str, str, int | None]] = [
    ("no-frontmatter/SKILL.md", "frontmatter-missing", 1),
    ("yaml-syntax/SKILL.md", "yaml-syntax", 3),
    ("yaml-alias/SKILL.md", "yaml-alias", 4),
    ("dup-key/SKILL.md", "yaml-duplicate-key", 4),
    ("int-key/SKILL.md", "yaml-key", 4),
    ("bad-tag/SKILL.md", "yaml-no-json-form", 4),
    ("inf-value/SKILL.md", "yaml-no-json-form", 4),
    ("too-deep/SKILL.md", "yaml-depth", None),
    ("huge-header/SKILL.md", "frontmatter-size", 1),
    ("not-mapping/SKILL.md", "frontmatter-mapping", 1),
    ("wrong-folder/SKILL.md", "name-directory", 2),
    ("Bad_Name/SKILL.md", "name", 2),
    ("many-fields/SKILL.md", "description", 3),
    ("many-fields/SKILL.md", "license", 4),
    ("many-fields/SKILL.md", "compatibility", 5),
    ("many-fields/SKILL.md", "metadata", 7),
    ("many-fields/SKILL.md", "allowed-tools", 8),
    ("long-description/SKILL.md", "description", 3),
    ("not-utf8/SKILL.md", "encoding", 3),
    ("lower-case/skill.md", "skill-md-name", None),
    ("symlink-escape/host.txt", "symlink-escape", None),
    ("symlink-escape/etc", "symlink-folder", None),
    ("dangling/gone.txt", "unreadable", None),
    ("linked-skill-md/SKILL.md", "symlink-escape", None),
    ("linked-skill-md/SKILL.md", "skill-md", None),
    ("special-file/pipe", "special-file", None),
    ("too-big/huge.bin", "limit-size", None),
    ("too-many", "limit-files", None),
    ("deep/" + "/".join(f"d{i}" for i in range(32)), "limit-depth", None),
]


def refusal_pack(root: Path) -> Path:
    """A pack made of every refusal the loader knows, one skill (or file) each, plus one good skill."""
    root.mkdir()
    skill(root, "good-one", fm("good-one"))
    skill(root, "no-frontmatter", "# just a body\n")
    skill(root, "yaml-syntax", "---\nname: yaml-syntax\ndescription: [unclosed\n---\nbody\n")
    skill(root, "yaml-alias", "---\nname: yaml-alias\nx: &a 1\ny: *a\n" + GOOD + "---\nbody\n")
    skill(root, "dup-key", "---\nname: dup-key\n" + GOOD + GOOD + "---\nbody\n")
    skill(root, "int-key", "---\nname: int-key\n" + GOOD + "1: one\n---\nbody\n")
    skill(root, "bad-tag", "---\nname: bad-tag\n" + GOOD + "blob: !!binary aGk=\n---\nbody\n")
    skill(root, "inf-value", "---\nname: inf-value\n" + GOOD + "x: .inf\n---\nbody\n")
    skill(root, "too-deep", "---\nname: too-deep\n" + GOOD + "x: " + "[" * 40 + "]" * 40 + "\n---\nbody\n")
    skill(root, "huge-header", "---\nname: huge-header\n" + GOOD + "x: " + "a" * 70_000 + "\n---\nbody\n")
    skill(root, "not-mapping", "---\n- a\n- b\n---\nbody\n")
    skill(root, "wrong-folder", fm("other-name"))
    skill(root, "Bad_Name", fm("Bad_Name"))
    skill(
        root,
        "many-fields",
        "---\nname: many-fields\ndescription: ''\nlicense: 3\ncompatibility: ''\nmetadata:\n  version: 1.0\n"
        "allowed-tools: [Read]\n---\nbody\n",
    )
    skill(root, "long-description", fm("long-description", description=f"description: {'word ' * 300}\n"))
    skill(root, "not-utf8", b"---\nname: not-utf8\ndescription: caf\xe9\n---\n")
    (root / "lower-case").mkdir()
    (root / "lower-case" / "skill.md").write_text(fm("lower-case"))
    escape = skill(root, "symlink-escape", fm("symlink-escape"))
    os.symlink("/etc/hostname", escape / "host.txt")
    os.symlink("/etc", escape / "etc")
    os.symlink(root / "nowhere", skill(root, "dangling", fm("dangling")) / "gone.txt")
    (root / "linked-skill-md").mkdir()
    os.symlink("/etc/hostname", root / "linked-skill-md" / "SKILL.md")
    os.mkfifo(skill(root, "special-file", fm("special-file")) / "pipe")
    with (skill(root, "too-big", fm("too-big")) / "huge.bin").open("wb") as f:
        f.truncate(17 * 1024 * 1024)  # sparse: refused by its size before a byte is read
    many = skill(root, "too-many", fm("too-many"))
    for i in range(512):  # with SKILL.md: 513 files, one over the limit
        (many / f"f{i}.txt").write_text("x")
    deep = root / "deep"
    for i in range(33):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    return root


def test_every_refusal_the_loader_knows_is_reported_once_with_its_line(tmp_path: Path) -> None:
    pack = refusal_pack(tmp_path / "pack")
    result = run("validate", str(pack), "--json")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    found = Counter((Path(f["path"]).relative_to(pack).as_posix(), f["rule"], f["line"]) for f in errors)
    assert found == Counter(EXPECTED), sorted(map(str, set(found) ^ set(EXPECTED)))
    assert report["ok"] is False
    assert report["errors"] == len(EXPECTED)
    # the loader's own reasons, word for word, in the same run serve makes
    loaded = DirectorySource(pack).load()
    reasons = {
        m for p in loaded.problems for _, m in (p.details if isinstance(p, FrontmatterError) else [("", p.reason)])
    }
    assert {f["message"] for f in errors} == reasons
    assert (
        report["skills"]
        == [s.skill_path for s in loaded.skills]
        == ["dangling", "good-one", "special-file", "symlink-escape", "too-big"]
    )


def test_each_problem_is_one_line_with_file_and_line_and_the_exit_code_says_error(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    pack.mkdir()
    skill(pack, "fine", fm("fine"))
    skill(pack, "broken", "---\nname: broken\ndescription: ''\nlicense: 3\n---\n")
    result = run("validate", str(pack))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    skill_md = pack / "broken" / "SKILL.md"
    assert lines == [
        f"{skill_md}:3: error[description]: 'description' is required and must be a non-empty string",
        f"{skill_md}:4: error[license]: 'license' must be a string",
    ]
    assert "1 skills would be served; 2 errors, 0 warnings" in result.stderr


def test_the_example_pack_has_no_error_and_only_the_undeclared_tools_warning() -> None:
    result = run("validate", "examples/skills", "--json")
    assert result.returncode == 0, result.stdout
    report = json.loads(result.stdout)
    assert report["ok"] is True
    assert report["errors"] == 0
    assert len(report["skills"]) == 8
    assert {(f["rule"], Path(f["path"]).parent.name) for f in report["findings"]} == {("tool-undeclared", "job-search")}


def warnings_of(pack: Path) -> list[tuple[str, str, int | None]]:
    return [(Path(f.path).parent.name, f.rule, f.line) for f in lint_paths([str(pack)]).warnings]


def test_publishing_warnings_each_name_their_rule_and_line(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    pack.mkdir()
    skill(pack, "terse", fm("terse", description="description: Loader refusals.\n"))
    words = " ".join(f"w{i}" for i in range(151))  # 153 words, under 1,024 characters
    skill(pack, "wordy", fm("wordy", description=f"description: loader refusals {words}\n"))
    skill(
        pack,
        "off-topic",
        "---\nname: off-topic\ndescription: Summarise quarterly revenue spreadsheets for finance teams quickly.\n"
        "---\n# Knitting\nCast on forty stitches and purl two rows.\n",
    )
    skill(
        pack,
        "tools",
        "---\nname: tools\ndescription: Search and fetch tickets of the tracker, then summarise each ticket.\n"
        "extra-field: 1\nallowed-tools: Read Bash(git diff:*) Bad)Entry\nmetadata:\n"
        "  dev.skilldeck/tools: search_tickets tracker/get_ticket bad!name\n  io.modelcontextprotocol/x: y\n---\n"
        "Search tickets with `search_tickets`, then call `tracker/get_ticket`.\n"
        "Then call `close_ticket` to close it.\nThe `due_date` field is a date.\n",
    )
    skill(pack, "twin-a", fm("twin-a", description="description: Review loader refusals against the refusal policy.\n"))
    skill(pack, "twin-b", fm("twin-b", description="description: Review loader refusal against the refusals policy!\n"))
    got = warnings_of(pack)
    assert sorted(got) == sorted(
        [
            ("terse", "description-short", 3),
            ("wordy", "description-long", 3),
            ("off-topic", "description-unrelated", 3),
            ("tools", "agentskills-field", 4),
            ("tools", "tool-name", 5),  # Bad)Entry
            ("tools", "tool-name", 7),  # bad!name
            ("tools", "reserved-key", 8),
            ("tools", "tool-undeclared", 11),  # close_ticket, not the due_date field
            ("twin-a", "description-short", 3),
            ("twin-b", "description-short", 3),
            ("twin-b", "description-duplicate", 3),
        ]
    ), sorted(got)
    assert len(Path(pack / "terse" / "SKILL.md").read_text().split()) > DESCRIPTION_MIN_WORDS  # a body is no excuse


def test_near_duplicates_are_told_apart_from_merely_related_descriptions(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    pack.mkdir()
    base = "Review customer refund requests against the refund policy and draft the reply email"
    skill(pack, "one", fm("one", description=f"description: {base}.\n"))
    skill(pack, "two", fm("two", description=f"description: {base}s.\n"))  # same words, stemmed
    skill(pack, "three", fm("three", description="description: Review supplier invoices and draft the reply email.\n"))
    assert [(s, r) for s, r, _ in warnings_of(pack) if r == "description-duplicate"] == [
        ("two", "description-duplicate")
    ]


def test_new_writes_a_skill_that_validates_and_warns_until_its_description_is_written(tmp_path: Path) -> None:
    result = run("new", "invoice-review", "--in", str(tmp_path))
    assert result.returncode == 0, result.stderr
    path = tmp_path / "invoice-review" / "SKILL.md"
    text = path.read_text()
    assert text.startswith("---\n# name:")
    assert "name: invoice-review\n" in text
    for field in ("name", "description", "license", "compatibility", "allowed-tools", "metadata"):
        assert re.search(rf"^# {field}: \S", text, re.M), field  # a comment line saying what it is for
    report = json.loads(run("validate", str(tmp_path), "--json").stdout)
    assert (report["ok"], report["errors"], report["warnings"]) == (True, 0, 1), report
    assert [(f["rule"], f["line"]) for f in report["findings"]] == [("description-template", 6)], report
    assert "still skilldeck new's placeholder" in report["findings"][0]["message"]
    written = "Review supplier invoices against purchase orders and draft the reply to the supplier."
    path.write_text(re.sub(r"^description: .*$", f"description: {written}", text, flags=re.M))
    report = json.loads(run("validate", str(tmp_path), "--json").stdout)
    assert report == {"ok": True, "errors": 0, "warnings": 0, "skills": ["invoice-review"], "findings": []}


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["new", "Bad_Name"], "must use only lowercase letters"),
        (["new", "fine", "--in", "missing-folder"], "not a folder"),
    ],
)
def test_new_refuses_a_bad_name_or_folder(tmp_path: Path, args: list[str], phrase: str) -> None:
    result = run(*args, cwd=tmp_path)
    assert result.returncode == 1
    assert phrase in result.stderr
    assert not any(tmp_path.iterdir())


def test_new_does_not_overwrite(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    result = run("new", "taken", "--in", str(tmp_path))
    assert result.returncode == 1
    assert "already exists" in result.stderr


def conformance_package() -> Path | None:
    """The pinned conformance suite in the npx cache, as ``npx`` left it (None when it is not there)."""
    for package in (Path.home() / ".npm" / "_npx").glob("*/node_modules/@modelcontextprotocol/conformance"):
        try:
            if json.loads((package / "package.json").read_text())["version"] == CONFORMANCE_VERSION:
                return package
        except (OSError, ValueError, KeyError):
            continue
    return None


def conformance_fixtures() -> list[str]:
    """The SKILL.md texts the conformance suite serves to hosts (template literals in its bundle)."""
    package = conformance_package()
    if package is None:
        pytest.skip(
            f"@modelcontextprotocol/conformance@{CONFORMANCE_VERSION} is not in the npx cache"
            " (install Node.js with npm, then run bash .ci/run once to fill the cache)"
        )
    bundle = (package / "dist" / "index.js").read_text()
    texts = re.findall(r"`(---\n.*?)`", bundle, re.S)
    assert texts, "no SKILL.md fixture found in the conformance bundle"
    return texts


def test_the_conformance_suites_skill_fixtures_and_their_broken_forms(tmp_path: Path) -> None:
    fixtures = conformance_fixtures()
    for i, text in enumerate(fixtures):  # as served: valid (the suite tampers with the bytes in transit)
        pack = tmp_path / f"ok{i}"
        skill(pack, "pdf-processing", text)
        report: dict[str, Any] = json.loads(run("validate", str(pack), "--json").stdout)
        assert report["ok"] is True, report
        assert report["skills"] == ["pdf-processing"]
    # what the suite's sep-2640-skillmd-frontmatter check fails on a server
    text = fixtures[0]
    broken = {
        "no-frontmatter": (text.split("---\n", 2)[2], "frontmatter-missing", 1),
        "no-name": (text.replace("name: pdf-processing\n", ""), "name", None),
        "no-description": (re.sub(r"description: .*\n", "", text), "description", None),
        "renamed": (text.replace("name: pdf-processing", "name: pdf-processing-v2"), "name-directory", 2),
    }
    pack = tmp_path / "broken"
    for folder, (body, _, _) in broken.items():
        skill(pack, folder, body)
    report = json.loads(run("validate", str(pack), "--json").stdout)
    got = {Path(f["path"]).parent.name: (f["rule"], f["line"]) for f in report["findings"]}
    assert got == {folder: (rule, line) for folder, (_, rule, line) in broken.items()}, report


def test_a_skill_path_given_by_two_roots_is_refused_the_second_time_as_serve_does(tmp_path: Path) -> None:
    skill(tmp_path / "one", "twin", fm("twin"))
    second = skill(tmp_path / "two", "twin", fm("twin"))
    report = json.loads(run("validate", str(tmp_path / "one"), str(tmp_path / "two"), "--json").stdout)
    assert report["skills"] == ["twin"]
    assert [(f["rule"], f["path"]) for f in report["findings"] if f["severity"] == "error"] == [
        ("duplicate-path", str(second))
    ]


def test_a_missing_folder_is_one_error_line(tmp_path: Path) -> None:
    result = run("validate", str(tmp_path / "nowhere"))
    assert result.returncode == 1
    assert (
        result.stderr.strip()
        == f"error: {tmp_path / 'nowhere'}: is not a folder (pass the folder that holds your skills)"
    )


WORDS_148 = " ".join(f"w{i}" for i in range(148))


@pytest.mark.parametrize(
    ("rule", "at_limit", "over"),
    [
        # 6 index words pass, 5 warn ("loader" and "refusals" are words of the body, so nothing else warns)
        ("description-short", "loader refusals alpha bravo charlie delta", "loader refusals alpha bravo charlie"),
        # 150 words pass, 151 warn
        ("description-long", "loader refusals " + WORDS_148, "loader refusals " + WORDS_148 + " w148"),
    ],
)
def test_description_limits_at_n_and_n_plus_one(tmp_path: Path, rule: str, at_limit: str, over: str) -> None:
    for name, description in (("at-limit", at_limit), ("over", over)):
        skill(tmp_path / name, name, fm(name, description=f"description: {description.strip()}\n"))
    assert [r for _, r, _ in warnings_of(tmp_path / "at-limit")] == []
    assert [r for _, r, _ in warnings_of(tmp_path / "over")] == [rule]


def test_a_body_of_500_lines_passes_and_501_warns(tmp_path: Path) -> None:
    description = "description: Loader refusals reported one by one with their lines.\n"
    for name, lines in (("at-limit", 500), ("over", 501)):
        body = "loader refusals\n" * lines
        skill(tmp_path / name, name, f"---\nname: {name}\n{description}---\n{body}")
    assert warnings_of(tmp_path / "at-limit") == []
    assert warnings_of(tmp_path / "over") == [("over", "body-long", 5)]


def test_a_body_whose_last_line_has_no_newline_counts_that_line(tmp_path: Path) -> None:
    """The last line of a body counts whether or not a newline ends it: 500 such lines pass, 501 warn."""
    description = "description: Loader refusals reported one by one with their lines.\n"
    for name, lines in (("at-limit", 500), ("over", 501)):
        body = "\n".join(["loader refusals"] * lines)  # no newline after the last line
        skill(tmp_path / name, name, f"---\nname: {name}\n{description}---\n{body}")
    assert warnings_of(tmp_path / "at-limit") == []
    assert warnings_of(tmp_path / "over") == [("over", "body-long", 5)]


def test_validate_strict_fails_on_a_warning_alone_and_plain_validate_does_not(tmp_path: Path) -> None:
    warned, clean = tmp_path / "warned", tmp_path / "clean"
    skill(warned, "terse", fm("terse", description="description: Loader refusals.\n"))  # description-short
    skill(clean, "fine", fm("fine"))
    assert [r for _, r, _ in warnings_of(warned)] == ["description-short"]
    assert warnings_of(clean) == []
    plain = run("validate", str(warned))
    assert plain.returncode == 0, plain.stderr
    assert "description-short" in plain.stdout
    assert "0 errors, 1 warnings" in plain.stderr
    strict = run("validate", "--strict", str(warned))
    assert strict.returncode == 1, strict.stderr
    assert "0 errors, 1 warnings" in strict.stderr  # failed for the warning: there is no error
    as_json = run("validate", "--strict", "--json", str(warned))
    assert as_json.returncode == 1
    assert [f["rule"] for f in json.loads(as_json.stdout)["findings"]] == ["description-short"]
    assert run("validate", "--strict", str(clean)).returncode == 0
