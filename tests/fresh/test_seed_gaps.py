"""What seed 003 spells that the fresh context now follows: projectConfig, a CodebaseAnalyzer, minimal docs."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from toolctx.fresh import (
    CodebaseAnalyzer,
    CodebaseDocsSummary,
    ContextOptions,
    ContextProjectConfig,
    DocSection,
    TaskSpec,
    create_context_system,
)
from toolctx.tokens import EstimateCounter

TASK = TaskSpec(id="t1", name="Charge cards in euros", files=("pkg/payments.py",))


def test_project_config_is_the_seed_spelling_of_project(project: Path) -> None:
    config = ContextProjectConfig(name="shop", path=str(project), language="python")
    system = create_context_system(project_config=config, counter=EstimateCounter())
    assert system.builder.project == config
    context = system.manager.build_fresh_context_sync(TASK)
    assert context.project_config.name == "shop"
    # A path works under the seed's name too.
    by_path = create_context_system(project_config=project, counter=EstimateCounter())
    assert by_path.builder.project.name == "shop"


def test_the_project_given_twice_or_not_at_all_is_refused_by_name(project: Path) -> None:
    with pytest.raises(TypeError, match="project= and as project_config="):
        create_context_system(project, project_config=project)
    with pytest.raises(TypeError, match="needs the project"):
        create_context_system()


class Analyzer:
    def __init__(self) -> None:
        self.seen: list[ContextProjectConfig] = []

    def docs_summary(self, project: ContextProjectConfig) -> CodebaseDocsSummary:
        self.seen.append(project)
        return CodebaseDocsSummary(
            architecture_summary="Hexagonal: pkg is the domain, web the adapter.",
            sections=(DocSection(path="adr/0001.md", text="### adr/0001.md\nMoney is kept in cents."),),
        )


def test_a_codebase_analyzer_supplies_the_docs_instead_of_the_readme(project: Path) -> None:
    analyzer = Analyzer()
    assert isinstance(analyzer, CodebaseAnalyzer)
    system = create_context_system(project, codebase_analyzer=analyzer, counter=EstimateCounter())
    context = system.manager.build_fresh_context_sync(TASK)
    docs = context.sections["codebase_docs"]
    assert "Hexagonal: pkg is the domain" in docs
    assert "Money is kept in cents." in docs
    assert "A small shop" not in docs  # the README is not read when an analyser is given
    assert context.codebase_docs.architecture_summary.startswith("Hexagonal")
    assert [s.path for s in context.codebase_docs.sections] == ["adr/0001.md"]
    assert analyzer.seen == [system.builder.project]


def test_a_plain_callable_is_an_analyzer_and_its_docs_are_fitted_to_the_allocation(project: Path) -> None:
    huge = "\n".join(f"layer {i}: does things" for i in range(5_000))
    system = create_context_system(
        project,
        codebase_analyzer=lambda config: CodebaseDocsSummary(architecture_summary=huge),
        custom_budget={"codebase_docs": 300},
        counter=EstimateCounter(),
    )
    context = system.manager.build_fresh_context_sync(TASK)
    assert "layer 0: does things" in context.sections["codebase_docs"]
    assert context.breakdown.codebase_docs <= 300
    assert context.codebase_docs.tokens <= 300
    assert "cut to fit the token budget" in context.codebase_docs.architecture_summary


@pytest.mark.parametrize(
    "analyzer",
    [
        lambda config: 1 / 0,
        lambda config: "not a summary",
    ],
    ids=["raises", "wrong-type"],
)
def test_a_failing_analyzer_is_logged_and_the_project_docs_are_read(project: Path, analyzer: object) -> None:
    system = create_context_system(project, codebase_analyzer=analyzer, counter=EstimateCounter())
    with capture_logs() as logs:
        context = system.manager.build_fresh_context_sync(TASK)
    assert "A small shop" in context.sections["codebase_docs"]  # the README, as without an analyser
    assert any("codebase analyser failed" in w for w in context.warnings)
    assert [e["event"] for e in logs if e["event"] == "fresh_codebase_analyzer_failed"]


def test_an_analyzer_of_the_wrong_kind_is_refused(project: Path) -> None:
    with pytest.raises(TypeError, match="docs_summary"):
        create_context_system(project, codebase_analyzer=42)  # type: ignore[arg-type]


def test_a_project_without_docs_gets_an_outline_of_itself(tmp_path: Path) -> None:
    root = tmp_path / "inventory"
    (root / "src" / "stock").mkdir(parents=True)
    (root / "src" / "stock" / "levels.py").write_text("def reorder_level(item):\n    return 3\n")
    (root / "src" / "stock" / "orders.py").write_text("def place_order(item):\n    return item\n")
    (root / "web").mkdir()
    (root / "web" / "app.ts").write_text("export const app = 1;\n")
    (root / "setup.cfg").write_text("[metadata]\nname = inventory\n")
    config = ContextProjectConfig(name="inventory", path=str(root), language="python", framework="flask")
    system = create_context_system(config, counter=EstimateCounter())
    context = system.manager.build_fresh_context_sync(TaskSpec(id="t", name="Reorder stock"))
    summary = context.codebase_docs.architecture_summary
    assert "Project: inventory (python, framework flask)" in summary
    assert "Languages: Python (2 files), TypeScript (1 file)" in summary
    assert "Top level: src/ (2 files), web/ (1 file), setup.cfg" in summary
    assert context.codebase_docs.sections == ()
    assert summary in context.sections["codebase_docs"]
    assert context.codebase_docs.tokens > 0


def test_an_empty_project_still_says_what_it_is(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    system = create_context_system(tmp_path / "empty", counter=EstimateCounter())
    context = system.manager.build_fresh_context_sync(TaskSpec(id="t", name="Start"), ContextOptions())
    assert "Project: empty" in context.sections["codebase_docs"]
    assert "No files the context can show" in context.codebase_docs.architecture_summary
