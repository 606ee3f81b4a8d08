"""What this machine runs packages with, and the one thing made before a package runs: a PyPI venv.

:func:`find_runtimes` looks on the PATH for ``npx``, ``uvx`` and ``docker`` (else ``podman``).
:func:`prepare` runs only once a person agreed to add a server, and only for a PyPI package
with no ``uvx`` at hand: it makes the package's own venv under ``$SKILLDECK_HOME/venvs`` and
installs the exact version there (``python -m venv``, then ``pip install IDENTIFIER==VERSION``),
each an argument list, never a shell line, within a time bound.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

import anyio

from skilldeck.catalog._launch import Launch, Runtimes
from skilldeck.errors import AddRefused, shorten

__all__ = ["PREPARE_TIMEOUT", "find_runtimes", "prepare"]

PREPARE_TIMEOUT = 600.0
"""Seconds making a PyPI package's venv may take (pip fetches it and its dependencies)."""


def find_runtimes(home: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> Runtimes:
    """The runtimes on the PATH (``environ``'s, the process's by default), venvs going under ``home/venvs``."""
    path = (os.environ if environ is None else environ).get("PATH")

    def which(name: str) -> str | None:
        return shutil.which(name, path=path)

    return Runtimes(
        npx=which("npx"),
        uvx=which("uvx"),
        container=which("docker") or which("podman"),
        python=sys.executable,
        venvs=str(Path(home) / "venvs"),
    )


async def prepare(launch: Launch, *, within: float = PREPARE_TIMEOUT) -> None:
    """Make what ``launch`` runs from, when it runs from a venv of its own (see the module docs); else nothing.

    Raises:
        AddRefused: ``failed``, with pip's last words, when the venv cannot be made or the package installed.
    """
    venv, package, python = launch.venv, launch.package, launch.runtimes.python
    if venv is None or package is None or python is None:
        return
    command = Path(venv) / "bin" / package.identifier
    if command.exists():
        return
    steps = [
        [python, "-m", "venv", venv],
        [
            str(Path(venv) / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            f"{package.identifier}=={package.version}",
        ],
    ]
    try:
        with anyio.fail_after(within):
            for step in steps:
                result = await anyio.run_process(step, check=False, stdin=None)
                if result.returncode != 0:
                    shutil.rmtree(venv, ignore_errors=True)  # half a venv is not left to look made
                    said = (result.stderr or result.stdout or b"").decode(errors="replace").strip().splitlines()
                    raise AddRefused(
                        f"could not install {package.identifier}=={package.version} into {venv}: "
                        f"{shorten(said[-1] if said else f'exit code {result.returncode}', 300)}; nothing was added",
                        code="failed",
                    )
    except TimeoutError:
        shutil.rmtree(venv, ignore_errors=True)
        raise AddRefused(
            f"installing {package.identifier}=={package.version} took longer than {within:g}s; nothing was added",
            code="failed",
        ) from None
    if not command.exists():
        raise AddRefused(
            f"{package.identifier}=={package.version} installed no command named {package.identifier}; nothing was added",
            code="not_runnable",
        )
