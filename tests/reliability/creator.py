"""A process that stops for good at one step of making its session directory, to be killed there (crash tests).

``made``: just after the directory (whatever its name) is made; ``marked``: just
before the first rename of anything of the session (its marker or its directory).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import toolctx


def main() -> None:
    context_dir, session_id, step = sys.argv[1], sys.argv[2], sys.argv[3]
    real_mkdir, real_rename, real_replace = os.mkdir, os.rename, os.replace

    def stop() -> None:
        print("stopped", flush=True)
        time.sleep(3600)  # (until killed)

    def mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        real_mkdir(path, *args, **kwargs)
        if step == "made" and session_id in os.path.basename(os.fspath(path)):
            stop()

    def rename(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if step == "marked" and session_id in os.fspath(src):
            stop()
        real_rename(src, dst, *args, **kwargs)

    def replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if step == "marked" and session_id in os.fspath(src):
            stop()
        real_replace(src, dst, *args, **kwargs)

    os.mkdir, os.rename, os.replace = mkdir, rename, replace  # (this process only)
    with toolctx.session(context_dir, session_id=session_id, threshold=0) as s:
        s.save_context("t", {}, "x")
    print("finished", flush=True)


if __name__ == "__main__":
    main()
