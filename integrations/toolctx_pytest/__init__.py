"""toolctx's pytest plugin (entry point ``pytest11``, name ``toolctx``): fixtures for testing code that uses toolctx.

Every fixture name starts with ``toolctx_`` so that none shadows a fixture of the
project under test; :mod:`toolctx.testing` documents them. pytest loads this module
in every project that has toolctx installed, so it lives outside the ``toolctx``
package (importing any ``toolctx.*`` module first runs ``toolctx/__init__.py``, which
imports the whole session layer) and imports nothing but pytest at load: each fixture
imports what it needs when a test asks for it. Switch it off with ``-p no:toolctx``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from toolctx.memory import MemoryStore
    from toolctx.sessions import ContextSession
    from toolctx.testing import CapturedContexts, FixedClock

__all__ = ["toolctx_clock", "toolctx_contexts", "toolctx_memory", "toolctx_session"]


@pytest.fixture
def toolctx_clock() -> FixedClock:
    """A clock at 2025-01-01 00:00 UTC that moves only with ``advance()``."""
    from toolctx.testing import FixedClock

    return FixedClock()


@pytest.fixture
def toolctx_session(tmp_path_factory: pytest.TempPathFactory, toolctx_clock: FixedClock) -> Iterator[ContextSession]:
    """A session with fixed ids and clock in a temporary folder, current for the test and deleted after it."""
    from toolctx.testing import fixed_session

    folder = tmp_path_factory.mktemp("toolctx-session")
    with fixed_session(folder, toolctx_clock) as opened:
        yield opened


@pytest.fixture
def toolctx_contexts(toolctx_session: ContextSession) -> CapturedContexts:
    """The contexts the test's tools store (in ``toolctx_session``)."""
    from toolctx.testing import CapturedContexts

    return CapturedContexts(toolctx_session)


@pytest.fixture
def toolctx_memory(tmp_path_factory: pytest.TempPathFactory, toolctx_clock: FixedClock) -> Iterator[MemoryStore]:
    """A tiered memory on a SQLite file in a temporary folder, on ``toolctx_clock``."""
    try:
        from toolctx.memory import MemoryConfig, MemoryStore
    except ImportError as exc:
        pytest.skip(f"toolctx_memory needs toolctx[memory]: {exc}")
    path = Path(tmp_path_factory.mktemp("toolctx-memory")) / "memory.db"
    with MemoryStore(f"sqlite:///{path}", config=MemoryConfig(clock=toolctx_clock)) as store:
        yield store
