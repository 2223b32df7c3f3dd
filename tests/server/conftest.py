from __future__ import annotations

from tests.memory.conftest import clock, db_url, store

__all__ = ["clock", "db_url", "store"]
