"""Decorated tools keep their static types (checked with mypy --strict)."""

from __future__ import annotations

from pathlib import Path

from mypy import api

SNIPPET = """
from typing import assert_type
from toolctx import persist_context

@persist_context
def search(query: str, limit: int = 10) -> list[str]:
    return []

@persist_context(name="fin", ignore=("client",))
async def fin(ticker: str, client: object = None) -> dict[str, int]:
    return {}

@persist_context(max_output_tokens="never")
def user(user_id: str) -> dict[str, str]:
    return {}

@persist_context(max_output_tokens=4000)
def shell(command: str) -> str:
    return ""

class Repo:
    @persist_context
    def read(self, path: str) -> bytes:
        return b""

    @persist_context
    @classmethod
    def make(cls, root: str) -> "Repo":
        return cls()

    @persist_context
    @staticmethod
    def join(a: str, b: str) -> str:
        return a + b

assert_type(search("q"), list[str])
assert_type(search("q", limit=2), list[str])
async def use() -> None:
    assert_type(await fin("AAPL"), dict[str, int])
assert_type(Repo().read("p"), bytes)
assert_type(Repo.make("r"), Repo)
assert_type(Repo.join("a", "b"), str)
assert_type(user("u1"), dict[str, str])
assert_type(shell("ls"), str)
search("q", limit="ten")  # wrong type: must still be caught
"""


def test_decorated_tools_keep_their_signatures_for_type_checkers(tmp_path: Path) -> None:
    source = tmp_path / "snippet.py"
    source.write_text(SNIPPET)
    stdout, stderr, _ = api.run(
        ["--strict", "--no-error-summary", "--cache-dir", str(tmp_path / ".mypy_cache"), str(source)]
    )
    errors = [line for line in stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1, stdout + stderr
    assert 'Argument "limit" to "search" has incompatible type "str"; expected "int"' in errors[0]
    wrong_line = SNIPPET.splitlines().index('search("q", limit="ten")  # wrong type: must still be caught') + 1
    assert errors[0].startswith(f"{source}:{wrong_line}:")
