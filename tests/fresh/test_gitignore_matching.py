""".gitignore files as a scan applies them: pathspec's answers, without compiling patterns no path could match."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolctx.fresh import ContextBuilder

pathspec = pytest.importorskip("pathspec")


def listing(root: Path) -> list[str]:
    builder = ContextBuilder(root, repo_map=None, code_search=None)
    return [path for path, _mtime, _size in builder.files.scan()[0]]


def test_a_long_ignore_file_compiles_only_the_patterns_a_path_could_match(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 5,000 lines naming folders, files and extensions the project does not have, and three it has.
    lines = [(f"zqbuild{n}/", f"zqcache{n}.txt", f"*.zqext{n}", f"/zqtop{n}/gen.py")[n % 4] for n in range(5_000)]
    (tmp_path / ".gitignore").write_text("\n".join(lines) + "\n")
    for path in ("zqbuild8/out.py", "src/zqcache1.txt", "src/data.zqext2", "src/main.py", "zqtop3/gen.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x = 1\n")
    compiled: list[str] = []
    real_compile: Callable[..., Any] = re.compile

    def counting(pattern: Any, flags: int = 0) -> Any:
        if "zq" in str(pattern):
            compiled.append(str(pattern))
        return real_compile(pattern, flags)

    monkeypatch.setattr(re, "compile", counting)
    assert listing(tmp_path) == [".gitignore", "src/main.py"]
    # Only the four patterns naming what the project has are compiled, each once: not 5,000.
    assert sorted(compiled) == sorted(set(compiled))
    assert len(compiled) == 4


def test_lines_git_cannot_read_are_skipped_and_the_rest_applied(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("!\n[z-a]\ntrailing\\\nrefunds.py\n")
    for name in ("refunds.py", "payments.py", "z"):
        (tmp_path / name).write_text("x = 1\n")
    assert listing(tmp_path) == [".gitignore", "payments.py", "z"]


SEGMENTS = [
    "[ab]c.py",
    "b?py",
    "x[a-c]d",
    "[]a]b",
    "ab*",
    "a",
    "b",
    "c.py",
    "*.py",
    "*",
    "**",
    "a*",
    "[ab]",
    "?.py",
    "!a",
    "\\#x",
    "d/",
    "x y",
]
FOLDERS = ["a", "b", "d", "x y"]
NAMES = ["ac.py", "bxpy", "]b", "ab.txt", "c.py", "b.py", "a.txt", "!a", "#x", "q.md"]


@st.composite
def ignore_lines(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=3))
    line = "/".join(parts)
    if draw(st.booleans()):
        line = "/" + line
    if draw(st.booleans()):
        line = "!" + line
    return line


files = st.builds(
    lambda folders, name: "/".join([*folders, name]),
    st.lists(st.sampled_from(FOLDERS), max_size=3),
    st.sampled_from(NAMES),
)


def expected(lines: list[str], paths: list[str]) -> list[str]:
    """What git lists: a file is left out when it, or a folder above it, is ignored (pathspec's reference matcher)."""
    try:
        spec = pathspec.GitIgnoreSpec.from_lines(lines, backend="simple")
    except TypeError:  # pathspec 0.12: one matcher
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
    kept = []
    for path in paths:
        parts = path.split("/")
        folders = ["/".join(parts[: n + 1]) + "/" for n in range(len(parts) - 1)]
        if not any(spec.match_file(p) for p in [*folders, path]):
            kept.append(path)
    return sorted(kept)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(ignore_lines(), max_size=8), st.lists(files, min_size=1, max_size=8, unique=True))
def test_a_scan_leaves_out_what_pathspec_says_git_ignores(lines: list[str], paths: list[str]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for path in paths:
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text("x = 1\n")
        (root / ".gitignore").write_text("\n".join(lines) + "\n")
        assert listing(root) == expected(lines, [*paths, ".gitignore"])
