"""Every code block the README and the documentation site tag as runnable is run, and must succeed.

The tag is an HTML comment alone on the line before the fence (invisible on GitHub and in MkDocs)::

    <!-- run -->
    ```bash
    skilldeck validate examples/skills
    ```

Python blocks run as a script, shell blocks (``bash``/``sh``) with ``bash -e -o pipefail``; both from
the repository root with this interpreter's ``bin`` folder first on ``PATH`` (so ``skilldeck`` and
``python`` are the ones under test), stdin closed, a state folder of their own and a time limit.
A block that serves until stopped is left untagged. A tag that does not sit right before a fence
of a runnable language is an error, and at least ``MIN_TAGGED`` blocks must be found, so a tagging
typo cannot silently skip the lot.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TAG = "<!-- run -->"
RUNNERS = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
TIMEOUT = 240  # seconds for one block: `skilldeck demo` takes about 30 s on a busy two-core machine
MIN_TAGGED = 10

_FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")
_TAG_LIKE = re.compile(r"^\s*<!--\s*run\b", re.IGNORECASE)


class TaggingError(ValueError):
    """A run tag that does not tag a runnable block (a typo, a blank line before the fence, an unknown language)."""


@dataclass(frozen=True)
class Snippet:
    """One tagged code block: where it is, how it runs and what it says."""

    path: str
    line: int  # of the opening fence, 1-based
    runner: str  # "python" or "bash"
    code: str

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"


def extract(text: str, path: str = "<text>") -> list[Snippet]:
    """The tagged blocks of a Markdown text, in order.

    Raises:
        TaggingError: a tag-like comment that is not exactly the tag, not directly before a fence,
            or before a fence of a language there is no runner for; or a fence left open.
    """
    lines = text.splitlines()
    snippets: list[Snippet] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:  # an untagged block: skip to its end, whatever it holds
            i = _close(lines, i, fence.group("fence"), path) + 1
            continue
        if _TAG_LIKE.search(line):
            if line.strip() != TAG:
                raise TaggingError(f"{path}:{i + 1}: a run tag is written exactly {TAG!r}, alone on its line")
            opening = _FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
            if opening is None:
                raise TaggingError(f"{path}:{i + 1}: {TAG} must be directly followed by a fenced code block")
            runner = RUNNERS.get(opening.group("lang").lower())
            if runner is None:
                raise TaggingError(f"{path}:{i + 2}: no runner for a {opening.group('lang')!r} block")
            end = _close(lines, i + 1, opening.group("fence"), path)
            snippets.append(Snippet(path, i + 2, runner, "\n".join(lines[i + 2 : end]) + "\n"))
            i = end + 1
            continue
        i += 1
    return snippets


def _close(lines: list[str], start: int, fence: str, path: str) -> int:
    for j in range(start + 1, len(lines)):
        if lines[j].strip() == fence:
            return j
    raise TaggingError(f"{path}:{start + 1}: code block never closed")


def run(snippet: Snippet, home: Path, *, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    """Run one block from the repository root; the caller judges the result."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["SKILLDECK_HOME"] = str(home)
    env["PYTHONUNBUFFERED"] = "1"
    if snippet.runner == "python":
        command = [sys.executable, "-c", snippet.code]
    else:
        command = ["bash", "-e", "-o", "pipefail", "-c", snippet.code]
    return subprocess.run(
        command,
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def all_snippets() -> list[Snippet]:
    return [s for doc in documents() for s in extract(doc.read_text(encoding="utf-8"), str(doc.relative_to(ROOT)))]


SNIPPETS = all_snippets()


def test_enough_blocks_are_tagged() -> None:
    assert len(SNIPPETS) >= MIN_TAGGED, [s.id for s in SNIPPETS]
    assert any(s.path == "README.md" for s in SNIPPETS)
    assert {s.runner for s in SNIPPETS} == {"python", "bash"}


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[s.id for s in SNIPPETS])
def test_tagged_block_runs(snippet: Snippet, tmp_path: Path) -> None:
    result = run(snippet, tmp_path)
    assert result.returncode == 0, (
        f"{snippet.id} exited {result.returncode}\n--- code\n{snippet.code}--- stdout\n{result.stdout[-3000:]}"
        f"--- stderr\n{result.stderr[-3000:]}"
    )


# --- the extractor and the runner themselves -------------------------------------------------------

DOC = """\
# A page

<!-- run -->
```python
print("tagged")
```

```python
raise SystemExit("untagged: never run")
```

<!-- run -->
```bash
test "$(echo ok)" = ok
```

````markdown
<!-- run -->
```python
inside another block: an example of the tag, not a tag
```
````
"""


def test_extract_finds_only_tagged_blocks() -> None:
    snippets = extract(DOC, "page.md")
    assert [(s.line, s.runner, s.code) for s in snippets] == [
        (4, "python", 'print("tagged")\n'),
        (13, "bash", 'test "$(echo ok)" = ok\n'),
    ]


@pytest.mark.parametrize(
    "doc",
    [
        "<!-- run-->\n```python\npass\n```\n",  # misspelt
        "<!-- run -->\n\n```python\npass\n```\n",  # a blank line between tag and fence
        "<!-- run -->\nsome text\n",  # no block at all
        "<!-- run -->\n```yaml\na: 1\n```\n",  # nothing runs YAML
        "<!-- run -->\n```python\npass\n",  # never closed
    ],
)
def test_a_tagging_mistake_is_an_error(doc: str) -> None:
    with pytest.raises(TaggingError):
        extract(doc, "page.md")


@pytest.mark.parametrize(
    ("runner", "code"),
    [
        ("python", "import skilldeck\nraise ValueError('a broken snippet')\n"),
        ("python", "print(undefined_name)\n"),
        ("bash", "skilldeck validate no/such/folder\n"),
        ("bash", "skilldeck --version\nfalse\necho never reached\n"),
    ],
)
def test_a_broken_block_fails(runner: str, code: str, tmp_path: Path) -> None:
    result = run(Snippet("page.md", 1, runner, code), tmp_path, timeout=60)
    assert result.returncode != 0
    assert "never reached" not in result.stdout


def test_a_block_runs_at_the_root_with_this_skilldeck(tmp_path: Path) -> None:
    skilldeck = Path(sys.executable).parent / "skilldeck"
    code = f'test -f pyproject.toml\ntest "$(command -v skilldeck)" = "{skilldeck}"\n'
    assert run(Snippet("page.md", 1, "bash", code), tmp_path, timeout=60).returncode == 0
