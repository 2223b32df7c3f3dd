"""Every Python snippet of the README and the guides runs as written.

Each ```python block of README.md and of the guides under docs/ is run on its own,
in a fresh interpreter, in an empty working directory, with toolctx's default
context directory pointed there too: it must exit cleanly, without a
``ToolctxWarning``. A snippet is what a reader pastes, so it gets no setup from
here: imports, tools and (offline, scripted) models are all in the block.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# docs/benchmarks.md is a measurement report, not a guide: its code blocks are the commands that
# reproduce its figures, run by `make bench`.
REPORTS = {"benchmarks.md"}
RUN_TIMEOUT = 120  # seconds; a snippet takes one or two (most of it importing a framework)


@dataclass(frozen=True)
class Snippet:
    path: Path
    line: int  # 1-based line of the opening fence
    code: str

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def markdown_parser() -> object:
    """markdown-it (myst-parser's own parser): under CI a missing one fails instead of skipping."""
    if os.environ.get("CI") == "true":
        importlib.import_module("markdown_it")
    else:
        pytest.importorskip("markdown_it")
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark")


def code_blocks(path: Path) -> list[tuple[str, int, str]]:
    """Every fenced block of a Markdown file: its info string, the line of its fence, its text."""
    from markdown_it import MarkdownIt

    parser = markdown_parser()
    assert isinstance(parser, MarkdownIt)
    tokens = parser.parse(path.read_text(encoding="utf-8"))
    return [(t.info.strip(), (t.map[0] if t.map else 0) + 1, t.content) for t in tokens if t.type == "fence"]


def documents() -> list[Path]:
    guides = sorted(p for p in DOCS.glob("*.md") if p.name not in REPORTS)
    return [ROOT / "README.md", *guides]


def snippets() -> list[Snippet]:
    return [
        Snippet(path, line, code)
        for path in documents()
        for info, line, code in code_blocks(path)
        if info.split()[:1] == ["python"]
    ]


def run_snippet(code: str, workdir: Path) -> subprocess.CompletedProcess[str]:
    """Run ``code`` as a script in a new interpreter whose working directory and home are ``workdir``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONWARNINGS", "TOOLCTX_"))}
    env["HOME"] = str(workdir)
    env["TOOLCTX_CONTEXT_DIR"] = str(workdir / "context")
    path = os.pathsep.join([str(ROOT), str(ROOT / "integrations"), env.get("PYTHONPATH", "")])
    env["PYTHONPATH"] = path.rstrip(os.pathsep)
    script = workdir / "snippet.py"
    script.write_text(code, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )


def failure(snippet_name: str, done: subprocess.CompletedProcess[str]) -> str | None:
    """Why a run failed (None if it did not): a non-zero exit or a warning from toolctx."""
    if done.returncode != 0:
        return f"{snippet_name} exited with {done.returncode}:\n{done.stderr[-4000:]}"
    if "ToolctxWarning" in done.stderr:
        return f"{snippet_name} ran with a toolctx warning:\n{done.stderr[-4000:]}"
    return None


def runs_as_written(snippet: Snippet, workdir: Path) -> str | None:
    """Why ``snippet`` failed in ``workdir`` (None if it did not). The README's run twice in the same folder, as a
    reader trying them again would."""
    problem = failure(snippet.name, run_snippet(snippet.code, workdir))
    if problem is None and snippet.path.name == "README.md":
        again = failure(snippet.name, run_snippet(snippet.code, workdir))
        problem = None if again is None else f"on its second run in the same folder: {again}"
    return problem


ALL = snippets()


@pytest.fixture(scope="module")
def snippet_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Future[str | None]]]:
    """The selected snippets, started side by side (one per core, most of a run is importing), by name."""
    selected = [
        item.callspec.params["snippet"]
        for item in request.session.items
        if item.module is request.module and "snippet" in getattr(getattr(item, "callspec", None), "params", {})
    ]
    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        runs = {
            s.name: pool.submit(runs_as_written, s, workdir)
            for s, workdir in ((s, tmp_path_factory.mktemp("snippet")) for s in selected)
        }
        yield runs
        for run in runs.values():
            run.cancel()


@pytest.mark.parametrize("snippet", ALL, ids=[s.name for s in ALL])
def test_snippet_runs_as_written(snippet: Snippet, snippet_runs: dict[str, Future[str | None]]) -> None:
    problem = snippet_runs[snippet.name].result(timeout=RUN_TIMEOUT * len(snippet_runs))
    assert problem is None, problem


def test_every_document_with_code_has_its_python_run() -> None:
    """No Python block escapes the run under another fence name (``py``, ``python3``, ``pycon``)."""
    escaped = [
        f"{path.relative_to(ROOT)}:{line} ({info})"
        for path in documents()
        for info, line, _ in code_blocks(path)
        if info.split()[:1] != ["python"] and info.lower().startswith("py")
    ]
    assert not escaped, f"Python blocks under another fence name are not run; fence them ```python: {escaped}"
    per_file = {path.name: sum(s.path == path for s in ALL) for path in documents()}
    assert per_file["README.md"] >= 3, per_file


def test_a_broken_snippet_fails(tmp_path: Path) -> None:
    """The runner reports a snippet that raises, and one that toolctx warns about, with the snippet's place."""
    page = tmp_path / "page.md"
    page.write_text(
        "# A page\n\n```python\nimport toolctx\n\nprint(undefined_name)\n```\n\n```sh\nexit 1\n```\n",
        encoding="utf-8",
    )
    [(_, line, code)] = [block for block in code_blocks(page) if block[0] == "python"]
    assert line == 3
    problem = failure("page.md:3", run_snippet(code, tmp_path))
    assert problem is not None
    assert problem.startswith("page.md:3 exited with 1")
    assert "NameError: name 'undefined_name' is not defined" in problem

    warned = "import warnings, toolctx\nwarnings.warn('no room', toolctx.ToolctxWarning)\n"
    problem = failure("page.md:9", run_snippet(warned, tmp_path))
    assert problem is not None
    assert "toolctx warning" in problem


def test_the_files_the_readme_names_exist_and_ship_in_the_sdist() -> None:
    """The README names guides and examples by path (a package index shows it alone): each is in the sdist."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    named = sorted(set(re.findall(r"`((?:docs|examples)/[\w./-]+\.(?:md|py))`", text)))
    assert "docs/getting-started.md" in named, named
    missing = [path for path in named if not (ROOT / path).is_file()]
    assert not missing, f"README.md names files that do not exist: {missing}"
    shipped = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["hatch"]["build"]
    include = shipped["targets"]["sdist"]["include"]
    unshipped = [path for path in named if path.split("/")[0] not in include]
    assert not unshipped, f"README.md names files the sdist leaves out: {unshipped}"
    guides = {f"docs/{p.name}" for p in DOCS.glob("*.md") if p.name != "index.md"}
    assert guides <= set(named), f"guides the README does not list: {sorted(guides - set(named))}"
    # Links into the repository (the package metadata's Source) point at files that exist.
    linked = re.findall(r"\]\(https://github\.com/toolctx/toolctx/blob/main/([^)#]+)", text)
    assert linked, "the README links its guides and the report"
    assert not [path for path in linked if not (ROOT / path).is_file()], linked
