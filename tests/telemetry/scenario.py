"""One session's worth of work touching every counter but compaction's: run here, or in a process without
OpenTelemetry (``python -m tests.telemetry.scenario DIR``), the counts must come out the same."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

import pytest

import toolctx
from toolctx import HandleError, ToolctxWarning, persist_context
from toolctx.compaction import read_context
from toolctx.diagnostics import counters
from toolctx.storage import DictStore

SMALL = "a" * 200
BIG = "b" * 50_000
REFUSED = "c" * 40_000


class RefusingStore(DictStore):
    """Keeps every document but those of the tool ``unlucky`` (a disk that is full for one file, say)."""

    def __init__(self, shared: bool = False) -> None:
        super().__init__()
        self.shared = shared

    def put(self, name: str, chunks: Sequence[bytes]) -> None:
        if name.startswith("unlucky_"):
            raise OSError(28, "No space left on device")
        super().put(name, chunks)


@persist_context
def search(q: str) -> str:
    return SMALL


@persist_context
def report(q: str) -> str:
    return BIG


@persist_context
def unlucky(q: str) -> str:
    return REFUSED


@persist_context(by_reference=("content",))
def write(content: str) -> int:
    return len(content)


def run(context_dir: Path, shared: bool = False) -> dict[str, int]:
    """Two saves in memory and one to the store (and the refused call, stored as an error), one the store
    refuses, three read-backs (one found, one not, one out of range) and one refused handle; the counts as
    :meth:`Counters.as_dict` gives them."""
    with toolctx.session(context_dir, store=RefusingStore(shared)) as s:
        assert search("x") == SMALL
        assert search("y") == SMALL
        assert report("z") == BIG
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            assert unlucky("w") == REFUSED  # the tool's result comes back all the same
        assert any(issubclass(w.category, ToolctxWarning) for w in said)
        handle = next(p.handle for p in s.get_all_pointers() if p.tool_name == "report")
        assert read_context(s, handle, 0, 100).endswith("b" * 100)
        assert read_context(s, "ctx:0000000000").startswith("No stored output")
        assert read_context(s, handle, 10**9).startswith("offset")
        with pytest.raises(HandleError) as refused:
            write(content="ctx:1111111111")
        assert refused.value.reason == "unknown"
    return counters().as_dict()


if __name__ == "__main__":
    sys.modules["opentelemetry"] = None  # type: ignore[assignment]  # (as if it were not installed)
    print(json.dumps(run(Path(sys.argv[1]))))
    assert not [m for m in sys.modules if m.startswith("opentelemetry.")], "OpenTelemetry was imported"
