"""Excerpts of files too large to show whole: within their budget, true to the file, the task's code first."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolctx.fresh._excerpts import GAP, MIN_EXCERPT_TOKENS, excerpt, fit_files, line_ranges
from toolctx.tokens import EstimateCounter

COUNTER = EstimateCounter()


def _module(functions: int) -> str:
    rows = ["import os", "", "", "class Store:", '    """Keeps things."""', ""]
    for i in range(functions):
        rows += [f"    def method_{i}(self, value):", f"        total = value * {i}", "        return total", ""]
    rows += ["", "def helper(path):", "    return os.path.basename(path)", ""]
    return "\n".join(rows)


def test_an_excerpt_shows_the_hit_with_its_enclosing_class_and_marks_the_gaps() -> None:
    text = _module(200)
    lines = text.split("\n")
    hit = lines.index("    def method_120(self, value):") + 1
    cut = excerpt("store.py", text, [(hit, hit + 2)], 600, COUNTER)
    assert cut is not None
    assert COUNTER.count(cut.text) <= 600
    assert {hit, hit + 1, hit + 2, 4} <= set(cut.lines)  # the method whole, and its class line
    assert cut.total_lines == len(lines)
    body = cut.text.split("\n")
    assert f"### store.py (excerpt: {len(cut.lines):,} of {len(lines):,} lines" in body[0]
    assert "        total = value * 120" in body
    assert GAP in body


def test_too_small_a_budget_gives_no_excerpt() -> None:
    assert excerpt("store.py", _module(50), [(10, 12)], MIN_EXCERPT_TOKENS - 1, COUNTER) is None


def test_line_ranges_join_consecutive_lines() -> None:
    assert line_ranges([7, 1, 2, 3, 9, 8]) == ((1, 3), (7, 9))


@settings(max_examples=60, deadline=None)
@given(
    budget=st.integers(min_value=0, max_value=3_000),
    functions=st.integers(min_value=1, max_value=120),
    spans=st.lists(st.tuples(st.integers(1, 500), st.integers(0, 40)), max_size=6),
)
def test_an_excerpt_never_exceeds_its_budget_and_shows_the_files_own_lines(
    budget: int, functions: int, spans: list[tuple[int, int]]
) -> None:
    text = _module(functions)
    lines = text.split("\n")
    cut = excerpt("store.py", text, [(start, start + length) for start, length in spans], budget, COUNTER)
    if cut is None:
        return
    assert COUNTER.count(cut.text) <= budget
    body = cut.text.split("\n")[2:-1]  # between the heading and fence, and the closing fence
    shown = "\n".join(row for row in body if row != GAP)
    assert shown.rstrip() == "\n".join(lines[n - 1] for n in cut.lines).rstrip()  # (trailing blanks are trimmed)


def test_every_file_gets_in_before_the_best_one_grows() -> None:
    big = _module(300)
    files = [(f"m{i}.py", big) for i in range(4)] + [("small.py", "x = 1\n")]
    placed = fit_files(files, {}, 4_000, COUNTER)
    assert [fit.index for fit in placed] == [0, 1, 2, 3, 4]
    assert placed[-1].lines is None  # the small file fits whole
    assert all(fit.lines is not None for fit in placed[:4])
    assert sum(fit.tokens for fit in placed) <= 4_000
    # What the small file leaves of its share goes to the best file first.
    assert placed[0].tokens > placed[1].tokens
    # With room for everything, everything is whole.
    roomy = fit_files(files, {}, 5 * COUNTER.count(big), COUNTER)
    assert [fit.lines for fit in roomy] == [None] * 5


def test_a_file_over_the_whole_file_limit_is_only_ever_an_excerpt() -> None:
    big = _module(100)
    placed = fit_files([("m.py", big)], {}, 10 * COUNTER.count(big), COUNTER, max_whole_chars=len(big) // 4)
    assert placed[0].lines is not None
    body = placed[0].item.split("\n")[2:-1]
    assert sum(len(row) + 1 for row in body) <= len(big) // 4 + len(body)
