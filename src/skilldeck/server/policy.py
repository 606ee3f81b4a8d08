"""Context-aware skills (who a caller is, what each skill shows and grants them): see :mod:`skilldeck.serving.policy`.

The policy is shared by the skills server and the gateway, so it lives in :mod:`skilldeck.serving`;
this module keeps its long-standing import path.
"""

from __future__ import annotations

from skilldeck.serving.policy import *  # noqa: F403  # the same names, under their long-standing path
from skilldeck.serving.policy import __all__ as __all__
