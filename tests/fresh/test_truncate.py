"""Cutting text and lists at whole lines and items, and saying what was cut."""

from __future__ import annotations

from toolctx.fresh import fit_items, truncate_lines
from toolctx.tokens import get_counter


class Quarters:
    """One token per 4 characters, rounded up: a counter whose counts the tests can work out."""

    name = "quarters"

    def count(self, text: str) -> int:
        return (len(text) + 3) // 4


COUNTER = Quarters()


def test_text_that_fits_is_returned_unchanged() -> None:
    cut = truncate_lines("short\ntext", 100, COUNTER)
    assert cut.text == "short\ntext"
    assert not cut.truncated


def test_a_long_text_keeps_whole_lines_and_ends_with_what_was_cut() -> None:
    text = "".join(f"line number {i} of the module\n" for i in range(500))
    cut = truncate_lines(text, 200, COUNTER)
    body, marker = cut.text.rsplit("\n", 1)
    assert marker == f"[… lines {cut.kept_lines + 1}-500 of 500 cut to fit the token budget]"
    assert body.splitlines() == text.splitlines()[: cut.kept_lines]
    assert COUNTER.count(cut.text) == cut.tokens <= 200
    # The longest prefix that fits: one more line would not.
    longer = "".join(text.splitlines(keepends=True)[: cut.kept_lines + 1])
    assert COUNTER.count(longer + f"[… lines {cut.kept_lines + 2}-500 of 500 cut to fit the token budget]") > 200


def test_a_budget_too_small_for_the_marker_gives_nothing() -> None:
    assert truncate_lines("x" * 1000, 3, COUNTER).text == ""
    assert truncate_lines("x" * 1000, 0, COUNTER).tokens == 0


def test_exact_counts_are_kept_too() -> None:
    exact = get_counter("o200k_base")
    text = "\n".join(f"def f{i}(x):\n    return {{'id': {i * 7919}, 'v': x}}" for i in range(300))
    cut = truncate_lines(text, 333, exact)
    assert exact.count(cut.text) <= 333
    assert cut.truncated
    assert cut.kept_lines > 10


def test_items_are_kept_whole_and_the_cut_ones_counted() -> None:
    items = ["a" * 40, "b" * 400, "c" * 40, "d" * 40]
    fitted = fit_items(items, 40, COUNTER)
    assert fitted.kept == (0, 2)
    assert fitted.text.splitlines()[-1] == "[… 2 of 4 items cut to fit the token budget]"
    assert fitted.cut == 2
    assert COUNTER.count(fitted.text) <= 40
    everything = fit_items(items, 10_000, COUNTER)
    assert everything.kept == (0, 1, 2, 3)
    assert everything.text == "\n".join(items)
    assert fit_items([], 10, COUNTER).text == ""
