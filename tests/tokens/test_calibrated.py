"""Counts learn the provider's ratio from reported usage, within bounds."""

from __future__ import annotations

import pytest

from toolctx.errors import ConfigError
from toolctx.tokens import CalibratedCounter, TokenCounter, get_counter


def test_the_ratio_follows_the_reports_and_scales_counts() -> None:
    counter = CalibratedCounter(get_counter("o200k_base"))
    assert isinstance(counter, TokenCounter)
    assert counter.name == "o200k_base+calibrated"
    text = "The quick brown fox jumps over the lazy dog. " * 20
    base = get_counter("o200k_base").count(text)
    assert counter.count(text) == base  # nothing learned yet
    counter.observe(1000, 1200)  # the first report sets the ratio
    assert counter.ratio == pytest.approx(1.2)
    for _ in range(50):
        counter.observe(1000, 1100)
    assert counter.ratio == pytest.approx(1.1, abs=1e-3)
    assert counter.count(text) == -(-base * 11 // 10)
    assert counter.adjust(100) == 111 or counter.adjust(100) == 110
    assert counter.observations == 51
    assert "ratio=1.100" in repr(counter)


def test_odd_reports_are_bounded_and_tiny_ones_ignored() -> None:
    counter = CalibratedCounter(get_counter("estimate"), low=0.8, high=1.5)
    counter.observe(10, 1000)  # below min_tokens: framing dominates it
    assert counter.observations == 0
    counter.observe(1000, 10_000)
    assert counter.ratio == 1.5
    counter.observe(1000, 0)  # a fully cached prompt reports nothing to learn from
    assert counter.ratio == 1.5
    counter.observe(1000, 100)
    assert counter.ratio == pytest.approx(1.5 + 0.2 * (0.8 - 1.5))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"weight": 0}, "weight must be in"),
        ({"low": 1.2}, "the bounds must satisfy"),
        ({"high": 0.9}, "the bounds must satisfy"),
        ({"min_tokens": 0}, "min_tokens must be at least 1"),
    ],
)
def test_bad_settings_are_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        CalibratedCounter(get_counter("estimate"), **kwargs)  # type: ignore[arg-type]


def test_bad_observations_and_bases_are_refused() -> None:
    counter = CalibratedCounter(get_counter("estimate"))
    with pytest.raises(ConfigError, match="reported must be a token count"):
        counter.observe(100, -1)
    with pytest.raises(ConfigError, match="counted must be a token count"):
        counter.observe(1.5, 100)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="base must be a TokenCounter"):
        CalibratedCounter("o200k_base")  # type: ignore[arg-type]
