"""The estimate stays close to the exact o200k_base count on real text of every kind."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.tokens.corpora import KINDS, corpus
from toolctx.tokens import EstimateCounter, estimate_tokens, get_counter

# The 95th percentile of |estimate - exact| / exact each kind must stay under (measured:
# code 13 %, json 4 %, ids 10 %, cjk 17 %, non-latin 19 %, prose 11 %).
BOUND = {"code": 0.18, "json": 0.08, "ids": 0.14, "cjk": 0.22, "non-latin": 0.24, "prose": 0.15}


def _p95(errors: list[float]) -> float:
    errors = sorted(errors)
    return errors[int(0.95 * (len(errors) - 1))]


@pytest.mark.parametrize("kind", KINDS)
def test_the_estimate_is_close_to_the_exact_count_for_each_kind(kind: str) -> None:
    exact = get_counter("o200k_base")
    pieces = corpus(kind)
    assert len(pieces) >= 50
    counts = [exact.count(p) for p in pieces]
    errors = [abs(estimate_tokens(p) - n) / n for p, n in zip(pieces, counts, strict=True)]
    quarter = [abs((len(p.encode()) + 3) // 4 - n) / n for p, n in zip(pieces, counts, strict=True)]
    assert _p95(errors) < BOUND[kind]
    assert _p95(errors) < _p95(quarter)  # closer than one token per 4 bytes (2-8x closer but on CJK)


def test_an_input_cannot_choose_the_windows_a_large_estimate_reads() -> None:
    text = ("".join(corpus("prose")) * 12).encode()[: 2 << 20]
    crafted = bytearray(text)
    for k in range(64):  # weightless bytes wherever windows in fixed places would read
        start = k * (len(text) - 4096) // 63
        crafted[start : start + 4096] = b"\r" * 4096
    assert estimate_tokens(bytes(crafted)) > 0.7 * estimate_tokens(text)  # (an eighth is weightless; fixed: 0.0)


def test_a_large_input_is_estimated_as_closely_from_windows_spread_over_it() -> None:
    code = "".join(corpus("code"))
    assert len(code.encode()) > 256 * 1024  # (over the size weighed whole)
    exact = get_counter("o200k_base").count(code)
    assert abs(estimate_tokens(code) - exact) / exact < 0.05


def test_an_input_repeated_is_estimated_as_that_many_times_its_part() -> None:
    for kind in KINDS:
        part = "".join(corpus(kind, limit=40))
        for times in (3, 9, 40):  # under and over the size weighed whole
            whole = estimate_tokens(part * times)
            assert abs(whole - times * estimate_tokens(part)) <= 0.03 * whole, (kind, times)  # (measured: 1.9 %)


def test_text_and_its_utf8_bytes_give_the_same_estimate() -> None:
    for kind in KINDS:
        for piece in corpus(kind, limit=10):
            assert estimate_tokens(piece) == estimate_tokens(piece.encode())


@given(st.text())
def test_any_text_gets_at_least_one_token_and_at_most_one_per_byte(text: str) -> None:
    size = len(text.encode("utf-8", "surrogatepass"))
    estimate = estimate_tokens(text)
    assert estimate == 0 if size == 0 else 1 <= estimate <= size


@given(st.binary())
def test_any_bytes_are_estimated_without_error(data: bytes) -> None:
    assert (estimate_tokens(data) == 0) == (data == b"")
    assert estimate_tokens(data) <= len(data)


def test_the_estimate_counter_counts_like_the_function() -> None:
    counter = get_counter("estimate")
    assert isinstance(counter, EstimateCounter)
    text = "Flights from SFO to JFK on 2024-05-20: {'id': 'HAT001', 'price': 213}"
    assert counter.count(text) == estimate_tokens(text) > 0
    assert counter.count("") == 0


def test_an_estimate_halfway_between_two_counts_rounds_to_the_even_one() -> None:
    # Both weigh exactly 1.5 and 2.5 tokens (byte weights in 1/32 token, no pair corrections),
    # so the estimate stays the same number from one release to the next, ties included.
    assert estimate_tokens("the1,") == 2
    assert estimate_tokens("ZZthethe") == 2
