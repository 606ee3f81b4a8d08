"""``python -m skilldeck.cli``: the same as the ``skilldeck`` command."""

from skilldeck.cli import main

raise SystemExit(main())
