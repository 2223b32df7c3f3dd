"""The documentation site builds with every reference resolved; the README's links work off-site.

The site is built in a subprocess, as ``make docs`` builds it (nitpicky, warnings are
errors), so autodoc's imports never touch this test process.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PROBLEM = re.compile(r"WARNING|ERROR|CRITICAL")


def require(module: str) -> None:
    """The docs tools are in the dev extra: under CI a missing one fails instead of skipping."""
    if os.environ.get("CI") == "true":
        importlib.import_module(module)
    else:
        pytest.importorskip(module)


@dataclass
class Build:
    returncode: int
    problems: list[str]
    output: str
    html: Path


def sphinx_build(source: Path, out: Path) -> Build:
    for module in ("sphinx", "myst_parser", "furo"):
        require(module)
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-n", "-W", "--keep-going", "-q", "-E"]
    result = subprocess.run(
        [*command, "-d", str(out / "doctrees"), str(source), str(out / "html")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    problems = [line for line in result.stderr.splitlines() if PROBLEM.search(line)]
    return Build(result.returncode, problems, result.stderr, out / "html")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Build:
    return sphinx_build(DOCS, tmp_path_factory.mktemp("docs"))


def test_site_builds_with_every_reference_resolved(site: Build) -> None:
    assert site.returncode == 0, "broken references or build errors in the documentation:\n" + (
        "\n".join(site.problems) or site.output[-4000:]
    )
    assert (site.html / "index.html").is_file()
    assert (site.html / "benchmarks.html").is_file()


def documented_names(html: Path) -> set[str]:
    """Object names in the site's Sphinx inventory (``objects.inv``: four header lines, then zlib)."""
    body = (html / "objects.inv").read_bytes().split(b"\n", 4)[4]
    return {line.split(" ", 1)[0] for line in zlib.decompress(body).decode().splitlines() if line}


def public_modules() -> list[str]:
    """``public_api_modules`` from docs/conf.py, read without running it."""
    tree = ast.parse((DOCS / "conf.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "public_api_modules" for t in node.targets
        ):
            return list(ast.literal_eval(node.value))
    raise AssertionError("docs/conf.py sets no public_api_modules")


def test_every_public_name_has_an_entry(site: Build) -> None:
    assert site.returncode == 0, "the site did not build; see the test above"
    documented = documented_names(site.html)
    missing = []
    for modname in public_modules():
        try:
            module = importlib.import_module(modname)
        except ModuleNotFoundError as exc:
            if exc.name != modname:
                raise
            continue  # listed ahead of time; documented once it exists
        if modname not in documented:
            missing.append(f"{modname} (add docs/api/<page>.rst with '.. automodule:: {modname}')")
        missing += [
            f"{modname}.{name}"
            for name in module.__all__
            if not name.startswith("__") and f"{modname}.{name}" not in documented
        ]
    assert not missing, "public names missing from the API reference:\n" + "\n".join(missing)


def test_broken_references_are_reported(tmp_path: Path) -> None:
    """The checker is strict: misspelt names fail even where internal or foreign names are settled."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(DOCS / '_ext')!r})\n"
        "extensions = ['sphinx.ext.autodoc', 'public_api']\n"
        "nitpicky = True\npublic_api_modules = ['toolctx']\n",
        encoding="utf-8",
    )
    import toolctx

    home = toolctx.ContextPointer.__module__  # where it is defined, not its public name
    (source / "index.rst").write_text(
        "Probe\n=====\n\n"
        ".. py:class:: toolctx.ContextPointer\n\n"
        f"Settled: :class:`{home}.ContextPointer`, :class:`pathlib.Path`, :mod:`toolctx._internal`.\n\n"
        f"Broken: :class:`{home}.ContextPointr`, :class:`pathlib.Pathh`, :mod:`toolctx._no_such_module`,\n"
        ":class:`NoSuchClass`.\n",
        encoding="utf-8",
    )
    build = sphinx_build(source, tmp_path / "out")
    assert build.returncode != 0
    reported = sorted(re.findall(r"reference target not found: (\S+)", "\n".join(build.problems)))
    expected = ["NoSuchClass", "pathlib.Pathh", "toolctx._no_such_module", f"{home}.ContextPointr"]
    assert reported == sorted(expected), build.problems


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def readme_targets() -> tuple[list[str], set[str]]:
    """Every link and image target in README.md, and its headings' anchors."""
    require("markdown_it")
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(README.read_text(encoding="utf-8"))
    targets: list[str] = []
    anchors: set[str] = set()
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            anchors.add(github_slug(tokens[i + 1].content))
        if token.type == "html_block":
            targets += re.findall(r"""(?:href|src)\s*=\s*["']([^"']*)""", token.content)
        for child in token.children or ():
            if child.type == "link_open":
                targets.append(str(child.attrs["href"]))
            elif child.type == "image":
                targets.append(str(child.attrs["src"]))
            elif child.type == "html_inline":
                targets += re.findall(r"""(?:href|src)\s*=\s*["']([^"']*)""", child.content)
    return targets, anchors


def test_readme_links_work_on_a_package_index_page() -> None:
    """A package index shows the README alone: links must be absolute or point within it."""
    targets, anchors = readme_targets()
    broken = [
        target
        for target in targets
        if not (target.startswith(("https://", "http://")) or (target.startswith("#") and target[1:] in anchors))
    ]
    assert not broken, f"README.md links that break outside the repository: {broken}"
