"""A built context never exceeds its budget, whatever the project holds and whatever the budget."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolctx.fresh import FIXED_COMPONENTS, ContextOptions, TaskSpec, create_context_system
from toolctx.tokens import EstimateCounter, get_counter

WORDS = st.sampled_from(["charge", "card", "refund", "日本", '{"id": 7}', "def f(x):", "    return x", "\t", "é"])
LINE = st.lists(WORDS, max_size=12).map(" ".join)
FILE = st.lists(LINE, max_size=300).map("\n".join)
NAMES = st.sampled_from(["a.py", "b.py", "README.md", "pkg/__init__.py", "pkg/c.py", "web/d.ts", "e.go", "f.rs"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(NAMES, FILE, max_size=8),
    st.integers(1, 60_000),
    st.sampled_from(["exact", "estimate"]),
    st.lists(NAMES, max_size=3),
    st.fixed_dictionaries({"repo_map": st.integers(0, 3000), "reserved": st.integers(0, 20_000)}),
)
def test_a_context_never_exceeds_its_budget(
    files: dict[str, str], max_tokens: int, counting: str, named: list[str], fixed: dict[str, int]
) -> None:
    counter = get_counter("o200k_base") if counting == "exact" else EstimateCounter()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        system = create_context_system(root, counter=counter, custom_budget=fixed)
        task = TaskSpec(id="t", name="charge card refund", files=tuple(named))
        context = system.manager.build_fresh_context_sync(task, ContextOptions(max_tokens=max_tokens))
    budget = system.budgeter.create_budget(max_tokens)
    contents = [m["content"] for m in context.to_messages()]
    assert sum(counter.count(c) for c in contents) == context.token_count <= budget.context_tokens
    for name in FIXED_COMPONENTS:
        assert counter.count(context.sections.get(name, "")) <= budget[name]
    assert system.manager.validate_context(context).valid
