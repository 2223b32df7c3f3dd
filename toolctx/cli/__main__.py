"""``python -m toolctx.cli``: the ``toolctx`` command, where the console script is not on ``PATH``."""

from __future__ import annotations

from toolctx.cli import main

if __name__ == "__main__":
    main()
