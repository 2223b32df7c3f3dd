"""Bad input: clear errors up front, warnings in the context and its validation, never a crash, nothing written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.fresh.conftest import snapshot
from toolctx.errors import ConfigError
from toolctx.fresh import ContextBuilderOptions, ContextOptions, TaskSpec, create_context_system
from toolctx.tokens import EstimateCounter


def system_for(project: Path, **kwargs: object):
    return create_context_system(project, counter=EstimateCounter(), **kwargs)  # type: ignore[arg-type]


def test_a_missing_project_path_is_refused_by_name(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(ConfigError, match=r"project path '.*nowhere' is not a directory"):
        create_context_system(missing)
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(ConfigError, match="not a directory"):
        create_context_system(tmp_path / "file.txt")


def test_a_project_that_vanishes_still_builds_with_a_warning(project: Path) -> None:
    system = system_for(project)
    shutil.rmtree(project)
    context = system.manager.build_fresh_context_sync(TaskSpec(id="t", name="anything", files=("pkg/payments.py",)))
    assert any("no longer exists" in w for w in context.warnings)
    assert context.relevant_files == ()
    assert "## Task" in context.render()


def test_files_the_task_names_that_do_not_exist_or_cannot_be_shown_are_warned_about(project: Path) -> None:
    task = TaskSpec(
        id="t",
        name="Fix everything",
        files=("pkg/missing.py", "logo.png", "notes_latin1.txt", "secret.txt", "../outside.txt", "outside_link.txt"),
        dependencies=("/etc/passwd",),
    )
    system = system_for(project)
    context = system.manager.build_fresh_context_sync(task)
    warnings = "\n".join(context.warnings)
    assert "task file 'pkg/missing.py' named by the task does not exist" in warnings
    assert "task file 'logo.png' named by the task is a binary file" in warnings
    assert "task file 'notes_latin1.txt' named by the task is not valid utf-8 text" in warnings
    assert "task file 'secret.txt' named by the task is excluded by .gitignore" in warnings
    assert "task file '../outside.txt' named by the task is outside the project root" in warnings
    assert "task file 'outside_link.txt' named by the task is outside the project root" in warnings
    assert "dependency file '/etc/passwd' named by the task is outside the project root" in warnings
    validation = system.manager.validate_context(context)
    assert "check the task's files: paths are relative to the project root" in validation.suggestions
    assert set(context.warnings) <= set(validation.warnings)


def test_nothing_outside_the_root_or_ignored_is_ever_shown(project: Path) -> None:
    task = TaskSpec(id="t", name="charge_card payment", description="API_KEY secret TOP SECRET generated_payment_code")
    system = system_for(project)
    context = system.manager.build_fresh_context_sync(task, ContextOptions(max_relevant_files=50, max_code_results=50))
    everything = "\n".join(text for name, text in context.sections.items() if name != "task_spec")
    assert "TOP SECRET" not in everything  # the symlinked file and directory lead outside
    assert "do-not-read-me" not in everything  # .gitignore
    assert "generated_payment_code" not in everything  # ignored folder
    assert "charge_card failed at 12:00" not in everything  # *.log
    assert "build/" not in context.repo_map
    assert "etc_link" not in context.repo_map


def test_an_unknown_encoding_is_refused_and_another_encoding_reads_its_files(project: Path) -> None:
    with pytest.raises(ValidationError, match="unknown encoding 'klingon'"):
        ContextBuilderOptions(encoding="klingon")
    system = system_for(project, builder_options=ContextBuilderOptions(encoding="latin-1"))
    context = system.manager.build_fresh_context_sync(TaskSpec(id="t", name="notes", files=("notes_latin1.txt",)))
    assert context.relevant_files[0].content == "café payments à refund\n"


def test_files_over_the_size_limit_are_shown_as_excerpts_or_left_out_with_the_reason(project: Path) -> None:
    text = (project / "pkg/payments.py").read_text()
    limit = len(text) // 3  # the file is over the limit, and under ten times it
    system = system_for(project, builder_options=ContextBuilderOptions(max_file_size_chars=limit))
    context = system.manager.build_fresh_context_sync(TaskSpec(id="t", name="pay", files=("pkg/payments.py",)))
    shown = {f.path: f for f in context.relevant_files}
    assert shown["pkg/payments.py"].truncated
    assert shown["pkg/payments.py"].shown_lines
    assert all(len(f.content) <= limit for f in context.relevant_files)
    tiny = system_for(project, builder_options=ContextBuilderOptions(max_file_size_chars=len(text) // 20))
    context = tiny.manager.build_fresh_context_sync(TaskSpec(id="t", name="pay", files=("pkg/payments.py",)))
    assert any("pkg/payments.py" in w and "-character limit" in w for w in context.warnings)
    assert "pkg/payments.py" not in {f.path for f in context.relevant_files}


def test_a_budget_smaller_than_the_fixed_allocations_builds_and_says_so(project: Path) -> None:
    system = system_for(project)
    context = system.manager.build_fresh_context_sync(TaskSpec(id="t", name="pay"), ContextOptions(max_tokens=3_000))
    assert context.token_count <= 3_000 - system.budgeter.create_budget(3_000).reserved
    validation = system.manager.validate_context(context)
    assert validation.valid
    assert any("too small for the fixed allocations" in w for w in validation.warnings)
    assert any("lower them with custom_budget" in s for s in validation.suggestions)
    with pytest.raises(ValidationError):
        ContextOptions(max_tokens=0)


def test_a_failing_source_leaves_its_part_out_and_the_build_goes_on(project: Path) -> None:
    class BrokenMap:
        def rank_files(self, task_text, mentioned_files):
            raise RuntimeError("parser crashed")

        def render(self, task_text, mentioned_files, max_tokens):
            raise RuntimeError("parser crashed")

    class BrokenSearch:
        def search(self, query, k):
            raise OSError("index is gone")

    system = system_for(project, repo_map=BrokenMap(), code_search=BrokenSearch())
    context = system.manager.build_fresh_context_sync(TaskSpec(id="t", name="charge card", files=("pkg/payments.py",)))
    warnings = "\n".join(context.warnings)
    assert "the repo map failed (RuntimeError: parser crashed); left out" in warnings
    assert "code search failed (OSError: index is gone); left out" in warnings
    assert context.relevant_files[0].path == "pkg/payments.py"
    with pytest.raises(TypeError, match="repomap must provide RepoMapProvider"):
        system_for(project, repo_map=object())


def test_building_writes_nothing_to_the_project(project: Path) -> None:
    before = snapshot(project)
    system = system_for(project)
    task = TaskSpec(id="t", name="charge card", files=("pkg/payments.py", "missing.py", "logo.png"))
    for max_tokens in (2_000, 30_000, 150_000):
        context = system.manager.build_fresh_context_sync(task, ContextOptions(max_tokens=max_tokens))
        system.manager.validate_context(context)
    system.integration.prepare_agent_context_sync("a", task)
    system.integration.on_task_complete_sync("a", "t")
    assert snapshot(project) == before


def test_without_pathspec_the_gitignore_is_not_applied_and_the_context_says_so(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolctx.fresh import _project

    monkeypatch.setattr(_project, "_has_pathspec", lambda: False)
    (project / "node_modules" / "lib").mkdir(parents=True)
    (project / "node_modules" / "lib" / "index.js").write_text("export const vendored = 1;\n")
    system = system_for(project)
    context = system.manager.build_fresh_context_sync(TaskSpec(id="t", name="pay"))
    assert any("not applied without pathspec (pip install 'toolctx[fresh]')" in w for w in context.warnings)
    assert "node_modules" not in context.repo_map
    assert "secret.txt" in context.repo_map  # listed by path: only .gitignore excluded it
