"""Skill-first disclosure inside the agent frameworks people already run.

:class:`~skilldeck.agents._session.SkillSession` is the loop every adapter shares (find → load →
call over a connected host, one activation per conversation); each framework's adapter lives in
its own module behind its own extra (``skilldeck[pydantic-ai]``, ...) and is imported only when used.

One public module per framework (and one for the providers' APIs):

- ``langchain``: History B in LangChain 1.x agents (LangGraph underneath): one middleware narrows the tools
  and gates the calls.
- ``openai_agents``: History B in the OpenAI Agents SDK: a ``tool_filter`` driven by the active skill, and
  ``find``/``load_skill`` tools.
- ``providers``: History B on the providers' own tool search: every tool deferred, skilldeck answering the
  search.
- ``pydantic_ai``: pydantic-ai: a toolset that starts collapsed and reveals exactly the loaded skill's
  tools.
"""

from skilldeck.agents._session import SkillSession

__all__ = ["SkillSession"]
