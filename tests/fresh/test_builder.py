"""Building a fresh context from the project the tests write: what goes in, in which order, within the budget."""

from __future__ import annotations

from pathlib import Path

from toolctx.fresh import ContextOptions, TaskSpec, create_context_system
from toolctx.tokens import EstimateCounter

TASK = TaskSpec(
    id="t-1",
    name="Charge cards in euros",
    description="charge_card must convert the amount with convert_currency before charging.",
    files=("pkg/payments.py",),
    acceptance_criteria=("amounts in USD are converted",),
    test_criteria="pytest tests/test_payments.py",
)


def build(project: Path, task: TaskSpec = TASK, **options: object):
    system = create_context_system(project, counter=EstimateCounter(), repo_map=None)
    return system, system.manager.build_fresh_context_sync(task, ContextOptions(**options))  # type: ignore[arg-type]


def test_the_task_files_come_first_then_their_imports_then_ranked_ones(project: Path) -> None:
    _, context = build(project)
    paths = [(f.path, f.reason) for f in context.relevant_files]
    assert paths[0] == ("pkg/payments.py", "task")
    # Its imports: the module it imports a name from and the sibling it imports relatively.
    assert ("pkg/currency.py", "dependency") in paths[1:3]
    assert ("pkg/refunds.py", "dependency") in paths[1:3]
    assert all(reason == "ranked" for _, reason in paths[3:])
    assert context.relevant_files[0].content == (project / "pkg/payments.py").read_text()


def test_the_context_is_fresh_counted_and_within_its_budget(project: Path) -> None:
    _, context = build(project, max_tokens=30_000)
    assert context.conversation_history == []
    assert context.token_budget == 30_000
    assert context.counter == "estimate"
    assert context.context_id.startswith("ctx-")
    counter = EstimateCounter()
    messages = context.to_messages()
    assert [m["role"] for m in messages] == ["system", "user"]
    assert context.token_count == sum(counter.count(m["content"]) for m in messages)
    assert context.token_count <= 30_000 - 7_500
    assert context.breakdown.reserved == 7_500  # a quarter of a budget under 64,000 tokens
    assert context.breakdown.total == context.token_count + 7_500
    user = messages[1]["content"]
    for heading in ("## Task", "## Repository map", "## Codebase docs", "## Files"):
        assert heading in user
    assert "Charge cards in euros (id t-1)" in user
    assert "amounts in USD are converted" in user
    assert "Project: shop" in messages[0]["content"]


def test_docs_hold_the_readme_architecture_and_package_docstrings(project: Path) -> None:
    _, context = build(project)
    paths = [s.path for s in context.codebase_docs.sections]
    assert paths == ["README.md", "ARCHITECTURE.md", "pkg/__init__.py"]
    assert "Payment processing: charges" in context.sections["codebase_docs"]


def test_without_a_parser_the_map_lists_files_by_path_with_their_definitions(project: Path) -> None:
    system = create_context_system(project, counter=EstimateCounter(), repo_map=None, code_search="auto")
    context = system.manager.build_fresh_context_sync(TASK)
    repo_map = context.repo_map
    assert repo_map.splitlines()[0] == "pkg/payments.py"
    assert "  def charge_card(card, amount, currency):" in repo_map
    for path in ("svc/main.go", "core/src/lib.rs", "web/src/api.ts", "java/App.java", "README.md"):
        assert path in repo_map


def test_code_search_finds_functions_in_every_language(project: Path) -> None:
    system = create_context_system(project, counter=EstimateCounter(), repo_map=None, code_search=None)
    search = system.builder.plain
    system.manager.build_fresh_context_sync(TASK)  # indexes the project
    for query, path, name in [
        ("shipping quote weight", "svc/main.go", "func ShippingQuote(weightKg float64) float64 {"),
        ("loyalty points", "core/src/lib.rs", "pub fn loyalty_points(total_cents: u64) -> u64 {"),
        ("render invoice", "web/src/api.ts", "export function renderInvoice(total: number): string {"),
        ("discount percent orders", "java/App.java", "public class App {"),
    ]:
        hit = search.search(query, 1)[0]
        assert (hit.path, hit.name) == (path, name)


def test_code_results_skip_files_already_shown_whole(project: Path) -> None:
    task = TaskSpec(id="t-2", name="Quote shipping", description="ShippingQuote weight", files=("pkg/refunds.py",))
    _, context = build(project, task, max_relevant_files=1, code_search_query="ShippingQuote weight")
    assert [f.path for f in context.relevant_files] == ["pkg/refunds.py"]
    assert context.relevant_code[0].path == "svc/main.go"
    assert "func ShippingQuote" in context.sections["code_results"]
    _, wide = build(project, task, max_relevant_files=20, code_search_query="ShippingQuote weight")
    shown = {f.path for f in wide.relevant_files if not f.truncated}
    assert not [hit for hit in wide.relevant_code if hit.path in shown]


def _big_module() -> tuple[str, list[str]]:
    """About 25,000 estimated tokens of handlers, one function in the middle the task is about."""
    lines = []
    for i in range(1300):
        if i == 650:
            lines += [
                "def refund_in_euros(amount, rate):",
                "    converted = convert_currency(amount, rate)",
                "    return issue_refund(converted, 'EUR')",
                "",
            ]
        lines += [f"def handler_{i}(request):", f"    return charge_card({i}, {i}, 'USD')", ""]
    return "\n".join(lines), lines


def test_a_file_too_large_to_fit_whole_shows_the_code_matching_the_task_and_its_outline(project: Path) -> None:
    big, lines = _big_module()
    assert len(big) < 100_000  # under the default max_file_size_chars
    (project / "pkg/handlers.py").write_text(big)
    task = TaskSpec(id="t-3", name="Refunds", description="refund_in_euros converts", files=("pkg/handlers.py",))
    _, context = build(project, task, max_tokens=25_000)
    first = context.relevant_files[0]
    assert first.path == "pkg/handlers.py"
    assert first.truncated
    assert first.tokens < EstimateCounter().count(big)
    # The function the task names is shown whole, in place among the outline's definition lines.
    shown = first.content.split("\n")
    at = shown.index("def refund_in_euros(amount, rate):")
    assert shown[at + 1 : at + 3] == lines[1951:1953]
    assert "def handler_0(request):" in shown
    assert "⋮" in shown  # each run of lines left out is marked
    # shown_lines says exactly which lines of the file the excerpt holds, in order.
    numbers = [n for first_line, last in first.shown_lines for n in range(first_line, last + 1)]
    assert [line for line in shown if line != "⋮"] == [lines[n - 1] for n in numbers]
    heading = f"### pkg/handlers.py (excerpt: {len(numbers):,} of {len(lines):,} lines"
    assert heading in context.sections["files"]
    assert context.token_count <= 25_000 - context.breakdown.reserved


def test_files_too_large_to_fit_whole_still_all_get_in_as_excerpts(project: Path) -> None:
    big, _ = _big_module()
    for name in ("alpha", "beta", "gamma"):
        (project / f"pkg/{name}.py").write_text(big)
    task = TaskSpec(
        id="t-4", name="Refunds", description="refund_in_euros", files=("pkg/alpha.py", "pkg/beta.py", "pkg/gamma.py")
    )
    _, context = build(project, task, max_tokens=30_000)
    by_path = {f.path: f for f in context.relevant_files}
    # Each would take the whole context; as excerpts all three are there, each with the function the task names.
    assert {"pkg/alpha.py", "pkg/beta.py", "pkg/gamma.py"} <= set(by_path)
    for name in ("alpha", "beta", "gamma"):
        assert by_path[f"pkg/{name}.py"].truncated
        assert "def refund_in_euros(amount, rate):" in by_path[f"pkg/{name}.py"].content
    # Code an excerpt already shows is not repeated among the code results.
    assert not [hit for hit in context.relevant_code if hit.name == "refund_in_euros"]
    assert context.token_count <= 30_000 - context.breakdown.reserved


def test_with_room_to_spare_the_best_files_are_shown_whole(project: Path) -> None:
    big, _ = _big_module()
    (project / "pkg/handlers.py").write_text(big)
    task = TaskSpec(id="t-5", name="Refunds", description="refund_in_euros", files=("pkg/handlers.py",))
    _, context = build(project, task, max_tokens=150_000)
    first = context.relevant_files[0]
    assert (first.path, first.truncated, first.shown_lines) == ("pkg/handlers.py", False, ())
    assert first.content == big


def test_unused_shares_flow_to_the_files(project: Path) -> None:
    big = "".join(f"value_{i} = {i}  # payment constant\n" for i in range(2_500))
    assert len(big) < 100_000
    (project / "pkg/constants.py").write_text(big)
    task = TaskSpec(id="t-4", name="Constants", files=("pkg/constants.py",))
    system = create_context_system(project, counter=EstimateCounter(), repo_map=None, code_search=None)
    context = system.manager.build_fresh_context_sync(task, ContextOptions(max_tokens=50_000))
    budget = system.budgeter.create_budget(50_000)
    # No code search and no memories: the files take far more than their 60 % share.
    assert context.breakdown.files > budget["files"]
    assert context.breakdown.code_results == context.breakdown.memories == 0
    assert context.token_count <= budget.context_tokens


def test_components_can_be_left_out(project: Path) -> None:
    _, context = build(project, include_repo_map=False, include_codebase_docs=False, max_code_results=0)
    assert "repo_map" not in context.sections
    assert "codebase_docs" not in context.sections
    assert context.relevant_code == ()
    assert context.breakdown.repo_map == context.breakdown.codebase_docs == 0


def test_a_custom_system_prompt_replaces_the_generated_one(project: Path) -> None:
    _, context = build(project, system_prompt="You fix payment bugs.")
    assert context.to_messages()[0] == {"role": "system", "content": "You fix payment bugs."}


def test_a_code_memory_of_ones_own_is_merged_with_the_code_search(project: Path) -> None:
    class Hit:
        def __init__(self, path: str, name: str, score: float) -> None:
            self.path, self.name, self.start_line, self.end_line = path, name, 1, 3
            self.text, self.score = f"# {name} from the embeddings index", score

    class Embeddings:
        def search(self, query: str, k: int) -> list[Hit]:
            return [Hit("svc/main.go", "semantic ShippingQuote", 0.93), Hit("pkg/refunds.py", "weak", 0.1)]

    system = create_context_system(project, counter=EstimateCounter(), code_memory=Embeddings())
    task = TaskSpec(id="t", name="loyalty points", files=("README.md",))
    context = system.manager.build_fresh_context_sync(task, ContextOptions(max_relevant_files=1))
    names = [hit.name for hit in context.relevant_code]
    assert "semantic ShippingQuote" in names
    assert "weak" not in names  # under min_code_relevance (half the best score of its source)
    assert any("loyalty_points" in hit.name for hit in context.relevant_code)
