"""The benchmark report leads with its figures and the changelog is a release log, not a notebook.

The README quotes the report's first table, so that table must hold the headline figures, each
with its workload, the command that reproduces it and the reference measured in the same run.
The runs behind it live in ``bench/HISTORY.md``, outside the documentation site.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "docs" / "benchmarks.md"
HISTORY = ROOT / "bench" / "HISTORY.md"
CHANGELOG = ROOT / "CHANGELOG.md"
PYPROJECT = ROOT / "pyproject.toml"

COLUMNS = ["figure", "result", "reference, same run", "target", "workload", "command (date, UTC)"]

README = ROOT / "README.md"
# A figure as the README quotes one: a ratio (x0.386), a share (-61 %, 92.0 %), a time or a range of them
# (12 µs, 618-690 µs), a multiple of a floor (2.1-3.0x), a count with thousands (3,831).
FIGURE = re.compile(r"x\d\.\d{3}|-?\d+(?:\.\d+)? %|\d+(?:-\d+)? µs|\d+\.\d+-\d+\.\d+x|\b\d{1,3}(?:,\d{3})+\b")
# Targets the report must say are missed until a measurement shows otherwise.
MISSED = ["adapter CPU", "hot path, 200 B", "hot path, 1 MiB", "diskcache and joblib"]


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def summary_table() -> list[dict[str, str]]:
    """The first table of the report: every row as a dict keyed by the header's columns."""
    lines = REPORT.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    block = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        block.append(line)
    header, rule, *rows = block
    assert set(rule) <= set("|-: "), f"not a markdown table rule: {rule!r}"
    names = cells(header)
    assert names == COLUMNS, f"the summary's columns changed: {names}"
    return [dict(zip(names, cells(row), strict=True)) for row in rows]


def row(table: list[dict[str, str]], phrase: str) -> dict[str, str]:
    found = [r for r in table if phrase in r["figure"]]
    assert len(found) == 1, f"{len(found)} summary rows name {phrase!r}"
    return found[0]


def test_the_report_opens_with_its_summary_and_stays_short() -> None:
    text = REPORT.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 400, "docs/benchmarks.md is a report: move runs to bench/HISTORY.md"
    headings = re.findall(r"^## (.+)$", text, flags=re.MULTILINE)
    assert headings[0] == "Summary"
    assert "Methods" in headings
    assert "Targets not met" in headings
    # The first table is the summary, before any method or run.
    assert text.index("| figure |") < text.index("## Methods")


def test_every_summary_row_says_its_workload_command_and_same_run_reference() -> None:
    table = summary_table()
    assert len(table) >= 10
    for r in table:
        for column in COLUMNS:
            if column != "target":  # a figure with no target says so by leaving it empty
                assert r[column], f"summary row {r['figure']!r} has no {column!r}"
        assert "bench/" in r["command (date, UTC)"], f"{r['figure']!r}: no script reproduces it"
        assert re.search(r"\b2026-\d\d-\d\d\b", r["command (date, UTC)"]), f"{r['figure']!r}: no date"


def test_the_summary_holds_every_figure_the_readme_quotes() -> None:
    quoted = README.read_text(encoding="utf-8").split("## What it saves", 1)[1].split("\n## ", 1)[0]
    figures = FIGURE.findall(quoted)
    assert len(figures) >= 20, f"the README's figures were not found: {figures}"
    table = "\n".join(" | ".join(r.values()) for r in summary_table())
    missing = [figure for figure in figures if figure not in table]
    assert not missing, f"the README quotes figures the report's summary does not hold: {missing}"
    for phrase in MISSED:
        assert "not met" in row(summary_table(), phrase)["target"], f"{phrase!r}: the missed target is not said"


def test_the_report_keeps_how_values_hidden_are_counted() -> None:
    text = REPORT.read_text(encoding="utf-8")
    section = text.split("### What the agent still needs", 1)[1].split("\n### ", 1)[0]
    kinds = re.findall(r"^\| (\w+) \| .+ \| .+ \|$", section, flags=re.MULTILINE)
    assert kinds[1:9] == ["quoted", "date", "amount", "path", "code", "identifier", "name", "number"]


def test_the_runs_moved_to_a_history_outside_the_site() -> None:
    text = REPORT.read_text(encoding="utf-8")
    link = re.search(r"\]\(https://github\.com/toolctx/toolctx/blob/main/([^)]+)\)", text)
    assert link is not None, "the report links to its history"
    assert ROOT / link.group(1) == HISTORY
    history = HISTORY.read_text(encoding="utf-8")
    assert len(history.splitlines()) > 3000
    # Runs the report only summarises are still there, and the site does not build the file.
    for heading in ("## Per call, tmpfs", "### The full replay on a quiet machine", "## Token counting"):
        assert f"\n{heading}\n" in history
    assert not (ROOT / "docs" / "HISTORY.md").exists()


def test_the_changelog_is_cut_into_the_packaged_release() -> None:
    text = CHANGELOG.read_text(encoding="utf-8")
    version = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["version"]
    releases = re.findall(r"^## \[(.+?)\](?: - (\d{4}-\d\d-\d\d))?$", text, flags=re.MULTILINE)
    assert releases[0] == ("Unreleased", "")
    assert releases[1][0] == version
    assert releases[1][1], "a release heading carries its date"
    for name, _ in releases:
        assert re.search(rf"^\[{re.escape(name)}\]: https://github\.com/toolctx/toolctx/", text, flags=re.MULTILINE)


def test_the_changelog_lists_changes_not_measurements() -> None:
    text = CHANGELOG.read_text(encoding="utf-8")
    groups = set(re.findall(r"^### (.+)$", text, flags=re.MULTILINE))
    assert groups <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
    assert len(text.splitlines()) < 400
    # Timings and replay ratios belong in the benchmark report.
    assert not re.search(r"µs|\d ms\b|x0\.\d{3}", text)
