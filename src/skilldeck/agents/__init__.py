"""Skill-first disclosure inside the agent frameworks people already run.

:class:`~skilldeck.agents._session.SkillSession` is the loop every adapter shares (find → load →
call over a connected host, one activation per conversation); each framework's adapter lives in
its own module behind its own extra (``skilldeck[pydantic-ai]``, ...) and is imported only when used.
"""

from skilldeck.agents._session import SkillSession

__all__ = ["SkillSession"]
