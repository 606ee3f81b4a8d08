"""Exit codes of the ``skilldeck`` command line, and the one map from errors to them.

Every command returns an :class:`ExitCode`; an error a command lets through is printed by
:func:`skilldeck.cli.main` under the heading :func:`exit_for` gives it, with that code.
"""

from __future__ import annotations

from enum import IntEnum

from skilldeck.errors import BudgetExceeded, GateRefused, Refused, SkilldeckError, VerificationError

__all__ = ["ExitCode", "exit_for"]


class ExitCode(IntEnum):
    OK = 0
    """Done (an abstention of ``ask`` included: it is a valid answer)."""
    INPUT = 1
    """Bad input or configuration, and any other skilldeck error."""
    USAGE = 2
    """No command, or arguments argparse refused."""
    UNREACHABLE = 3
    """A server could not be reached."""
    VERIFICATION = 4
    """Verification failed: size, digest, frontmatter, unlisted file."""
    BUDGET = 5
    """An origin's byte budget would be exceeded."""
    REFUSED = 6
    """Refused: a dynamic skill without ``--allow-dynamic``, a cross-origin read, not approved, the tool gate."""
    INTERRUPTED = 130
    """Interrupted (Ctrl-C): 128 + SIGINT."""
    BROKEN_PIPE = 141
    """Standard output closed early (``skilldeck skills … | head -1``): 128 + SIGPIPE."""


def exit_for(exc: SkilldeckError) -> tuple[ExitCode, str]:
    """The exit code for ``exc`` and the heading its message is printed under."""
    if isinstance(exc, VerificationError):
        return ExitCode.VERIFICATION, f"verification failed ({exc.check})"
    if isinstance(exc, BudgetExceeded):
        return ExitCode.BUDGET, "budget exceeded"
    if isinstance(exc, GateRefused):
        return ExitCode.REFUSED, "refused by the tool gate"
    if isinstance(exc, Refused):
        return ExitCode.REFUSED, "refused"
    return ExitCode.INPUT, "error"
