from __future__ import annotations

import math

import pytest

from toolctx._checks import fraction, non_empty_text, real_number, safe_name, whole_number
from toolctx.errors import ConfigError


def test_whole_number_accepts_ints_in_range_and_names_the_option_otherwise() -> None:
    assert whole_number("limit", 3, minimum=1) == 3
    assert whole_number("limit", 10, minimum=1, maximum=10) == 10
    for bad in (True, 0, 11, 2.0, "3", None):
        with pytest.raises(ConfigError, match=r"limit must be a whole number from 1 to 10"):
            whole_number("limit", bad, minimum=1, maximum=10)


def test_real_number_refuses_bools_nan_and_values_out_of_bounds() -> None:
    assert real_number("weight", 2) == 2.0
    assert real_number("weight", 0.0, minimum=0.0) == 0.0
    for bad in (True, math.nan, math.inf, "1.0", -0.1):
        with pytest.raises(ConfigError, match="weight must be a finite number"):
            real_number("weight", bad, minimum=0.0)
    with pytest.raises(ConfigError, match="> 0"):
        real_number("rate", 0.0, above=0.0)


def test_fraction_is_a_closed_or_half_open_unit_interval() -> None:
    assert fraction("ratio", 0) == 0.0
    assert fraction("ratio", 1) == 1.0
    with pytest.raises(ConfigError, match=r"\(0, 1\]"):
        fraction("ratio", 0.0, zero=False)
    for bad in (1.5, -0.01, math.nan, False, "0.5"):
        with pytest.raises(ConfigError, match=r"ratio must be a number in \[0, 1\]"):
            fraction("ratio", bad)


def test_non_empty_text_refuses_blank_and_too_long_strings() -> None:
    assert non_empty_text("name", "a") == "a"
    for bad in ("", "   ", None, 3):
        with pytest.raises(ConfigError, match="name must be a non-empty string"):
            non_empty_text("name", bad)
    with pytest.raises(ConfigError, match="of up to 4 characters"):
        non_empty_text("name", "abcde", max_length=4)


@pytest.mark.parametrize("bad", ["", "../x", "a/b", ".hidden", "a..b", "x" * 65, "é", "a b", 7])
def test_safe_name_refuses_anything_that_could_leave_a_directory(bad: object) -> None:
    with pytest.raises(ConfigError, match="is not allowed"):
        safe_name("session_id", bad, max_length=64)


def test_safe_name_keeps_ordinary_names() -> None:
    for good in ("a", "run-1", "2026.11.24_x", "A" * 64):
        assert safe_name("session_id", good, max_length=64) == good
