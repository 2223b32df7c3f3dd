"""Exact counts match tiktoken's, for both encodings, offline; bad names are refused clearly."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from toolctx.errors import ConfigError
from toolctx.tokens import (
    ENCODINGS,
    EstimateCounter,
    ExactCounter,
    TokenCounter,
    counter_for_model,
    encoding_for_model,
    get_counter,
)

# Reference counts from tiktoken 0.14 (encode_ordinary) with OpenAI's published vocabularies.
KNOWN = [
    ("", 0, 0),
    ("hello world", 2, 2),
    ("tiktoken is great!", 6, 6),
    ("antidisestablishmentarianism", 6, 6),
    ("お誕生日おめでとう", 9, 8),
    ("東京は日本の首都です。", 11, 8),
    ("def f(x):\n    return x + 1\n", 11, 11),
    ('{"id": "a3f9c2e1-77b0-4c5e-9d2a-1b2c3d4e5f60", "ok": true}', 44, 44),
    ("<|endoftext|>", 7, 7),  # special-token text is counted as the plain text it is
    ("ab\ud800cd", 3, 3),  # a lone surrogate counts as U+FFFD, as tiktoken encodes it
    ("👍🏽", 6, 3),
    ("    \n\n   \t", 2, 2),
    ("1234567", 3, 3),
]


@pytest.mark.parametrize(("text", "cl100k", "o200k"), KNOWN)
def test_counts_match_tiktoken(text: str, cl100k: int, o200k: int) -> None:
    assert get_counter("cl100k_base").count(text) == cl100k
    assert get_counter("o200k_base").count(text) == o200k


def test_long_inputs_are_counted_whole_and_add_up_at_line_starts() -> None:
    line = 'The quick brown fox jumps over the lazy dog 1234 times; {"k": [1, 2]}\n'
    counter = ExactCounter("o200k_base")
    one = counter.count(line)
    # Three million characters: beyond bpe-openai's one-million-character limit.
    big = line * (3_000_000 // len(line))
    assert counter.count(big) == one * (len(big) // len(line))


def test_a_run_without_breaks_is_counted_in_one_piece() -> None:
    counter = ExactCounter("o200k_base")
    assert counter.count("a" * 1_000_000) == 125_000
    assert counter.count("1234567890" * 100_000) == 333_334


def test_counters_are_token_counters_and_shared_per_name() -> None:
    for name in (*ENCODINGS, "estimate"):
        counter = get_counter(name)
        assert isinstance(counter, TokenCounter)
        assert counter.name == name
        assert get_counter(name) is counter
    assert isinstance(get_counter("estimate"), EstimateCounter)
    assert get_counter().name == "o200k_base"
    assert repr(ExactCounter("cl100k_base")) == "ExactCounter('cl100k_base')"


def test_counting_from_many_threads_gives_the_same_counts() -> None:
    counter = get_counter("o200k_base")
    texts = [f"line {i}: " + "word " * i for i in range(200)]
    expected = [counter.count(t) for t in texts]
    results: list[list[int]] = []

    def work() -> None:
        results.append([counter.count(t) for t in texts])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 4


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini-2024-07-18", "o200k_base"),
        ("GPT-4.1-nano", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("gpt-5.1-codex", "o200k_base"),
        ("o1", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("o4-mini-2025-04-16", "o200k_base"),
        ("openai:gpt-4o", "o200k_base"),
        ("openai/gpt-4.1", "o200k_base"),
        ("ft:gpt-4o-mini:acme::abc123", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo-2024-04-09", "cl100k_base"),
        ("gpt-4-0613", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("azure/gpt-35-turbo", "cl100k_base"),
        ("text-embedding-3-small", "cl100k_base"),
    ],
)
def test_models_map_to_their_encodings(model: str, encoding: str) -> None:
    assert encoding_for_model(model) == encoding
    assert counter_for_model(model).name == encoding


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "gemini-2.5-pro", "o1x", "gpt-4x", "deepseek-chat"])
def test_unknown_models_are_refused_or_fall_back(model: str) -> None:
    with pytest.raises(ConfigError, match=f"no known encoding for model '{model}'.*fallback="):
        encoding_for_model(model)
    with pytest.raises(ConfigError, match="no known encoding"):
        counter_for_model(model)
    assert counter_for_model(model, fallback="estimate").name == "estimate"
    assert counter_for_model(model, fallback="o200k_base").name == "o200k_base"
    # A known model keeps its own encoding whatever the fallback.
    assert counter_for_model("gpt-4", fallback="o200k_base").name == "cl100k_base"


@pytest.mark.parametrize("bad", ["", "   ", None, 4])
def test_a_model_that_is_no_name_is_refused_even_with_a_fallback(bad: object) -> None:
    with pytest.raises(ConfigError, match="model must be a model name"):
        counter_for_model(bad, fallback="estimate")  # type: ignore[arg-type]


def test_unknown_counter_and_encoding_names_are_refused_with_the_choices() -> None:
    with pytest.raises(ConfigError, match=r"unknown token counter 'p50k_base'.*o200k_base.*estimate"):
        get_counter("p50k_base")
    with pytest.raises(ConfigError, match=r"unknown encoding 'gpt-4o'.*cl100k_base, o200k_base"):
        ExactCounter("gpt-4o")
    with pytest.raises(ConfigError, match="unknown fallback counter 'exact'"):
        counter_for_model("gpt-4o", fallback="exact")


def test_counting_something_other_than_text_says_what_to_do() -> None:
    with pytest.raises(TypeError, match="o200k_base counts text \\(str\\), got bytes: decode bytes first"):
        get_counter("o200k_base").count(b"abc")  # type: ignore[arg-type]


def test_without_the_extra_the_error_names_the_encoding_and_the_extra() -> None:
    script = (
        "import sys; sys.modules['rs_bpe'] = None; sys.modules['tiktoken'] = None\n"
        "from toolctx.tokens import get_counter\n"
        "assert get_counter('estimate').count('abcd') >= 1\n"
        "try:\n    get_counter('cl100k_base')\n"
        "except ImportError as e:\n    print(e.name, '|', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.startswith("rs_bpe | counting cl100k_base tokens exactly needs rs-bpe or tiktoken")
    assert "pip install 'toolctx[tokens]'" in out


def test_importing_toolctx_loads_no_tokenizer() -> None:
    script = "import sys, toolctx, toolctx.tokens; print(sorted(m for m in sys.modules if 'bpe' in m))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
