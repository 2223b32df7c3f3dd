from __future__ import annotations

import logging
import re
import sys
import threading
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolctx.redaction import default_redactor
from toolctx.redaction._forms import Folded, splice
from toolctx.redaction._prefilter import Prefilter, Screen

CASELESS = ["token", "api_key", "password"]
EXACT = ["AKIA", "sk-", "-----BEGIN"]
fast = Prefilter(CASELESS, EXACT)
portable = Prefilter(CASELESS, EXACT, use_hyperscan=False)


def expected(data: bytes) -> bool:
    lowered = data.lower()
    return any(f.encode() in lowered for f in CASELESS) or any(f.encode() in data for f in EXACT)


def test_engines() -> None:
    assert fast.engine == "hyperscan"
    assert portable.engine == "re"
    assert Prefilter([], []).engine == "none"
    assert Prefilter([], [])(b"token") is False


@given(
    st.binary(max_size=200),
    st.sampled_from([*CASELESS, *EXACT, "TOKEN", "Api_Key", "akia", "SK-", "tok en", ""]),
    st.binary(max_size=50),
)
def test_both_engines_answer_like_a_plain_search(before: bytes, fragment: str, after: bytes) -> None:
    data = before + fragment.encode() + after
    assert fast(data) == portable(data) == expected(data)


def test_scans_from_many_threads_at_once() -> None:
    clean, dirty = b"x" * 100_000, b"x" * 50_000 + b"AKIA" + b"x" * 50_000
    errors: list[str] = []

    def work(n: int) -> None:
        for i in range(200):
            data = dirty if (i + n) % 2 else clean
            if fast(data) != (data is dirty):
                errors.append(f"thread {n} call {i}")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


@given(
    st.binary(max_size=200),
    st.lists(st.sampled_from([*CASELESS, *EXACT, "TOKEN", "Api_Key", "akia", "SK-", "tok en"]), max_size=4),
)
def test_both_engines_find_exactly_the_fragments_present(noise: bytes, inserted: list[str]) -> None:
    data = noise + b" ".join(f.encode() for f in inserted) + noise
    lowered = data.lower()
    present = {f for f in CASELESS if f.encode() in lowered} | {f for f in EXACT if f.encode() in data}
    assert fast.found(data) == portable.found(data) == present


SCREENS = [
    Screen("assigned", rb"token[a-z_]{0,8}[ \t]{0,4}[:=]", b"token"),
    Screen("url", rb"://[^@/ ]{0,16}:[^@/ ]{1,16}@", b"://", caseless=False),
]
BYTES = [b"\xef\xbc", "AKIA"]
fast_screened = Prefilter(CASELESS, [*EXACT, *BYTES], screens=SCREENS)
portable_screened = Prefilter(CASELESS, [*EXACT, *BYTES], screens=SCREENS, use_hyperscan=False)
PIECES = [*CASELESS, *EXACT, "TOKEN", "Api_Key", "akia", "SK-", "tok en", "token =", "Token_x:", "://u:p@", "ａ"]


def expected_found(data: bytes) -> set[object]:
    lowered = data.lower()
    present: set[object] = {f for f in CASELESS if f.encode() in lowered}
    present |= {f for f in [*EXACT, *BYTES] if (f if isinstance(f, bytes) else f.encode()) in data}
    present |= {s.literal.decode() if s.caseless else s.literal for s in SCREENS if s.literal in lowered}
    present |= {s.name for s in SCREENS if re.search(s.regex, lowered if s.caseless else data)}
    return present


@given(st.binary(max_size=300), st.lists(st.sampled_from(PIECES), max_size=5), st.integers(0, 2000))
def test_screens_bytes_fragments_and_large_data_find_the_same_fragments(
    noise: bytes, inserted: list[str], padding: int
) -> None:
    # Past 1 KiB the re engine makes one pass per first byte instead of one alternation.
    data = noise + b" ".join(p.encode() for p in inserted) + b"." * padding + noise
    assert fast_screened.found(data) == portable_screened.found(data) == expected_found(data)


@given(st.binary(max_size=100), st.lists(st.sampled_from(PIECES), max_size=12), st.integers(0, 4))
def test_both_engines_place_each_literal_that_is_rare_enough(noise: bytes, inserted: list[str], cap: int) -> None:
    data = noise + b"".join(p.encode() for p in inserted) + noise
    lowered = data.lower()
    for prefilter in (fast_screened, portable_screened):
        found, positions = prefilter.locate(data, cap)
        assert found == expected_found(data)
        for fragment in [*CASELESS, *EXACT, *BYTES]:
            needle = fragment if isinstance(fragment, bytes) else fragment.encode()
            haystack = lowered if fragment in CASELESS else data
            starts = [
                m.start()
                for m in re.finditer(
                    b"(?=" + re.escape(needle.lower() if fragment in CASELESS else needle) + b")", haystack
                )
            ]
            if 0 < len(starts) <= cap:
                assert positions[fragment] == starts  # every start, overlapping ones too
            else:
                assert fragment not in positions  # absent, or too frequent to be worth placing


def test_a_fragment_that_occurs_everywhere_costs_no_more_than_one_that_occurs_once() -> None:
    # Dropping a needle once found keeps the work per needle bounded, whatever the data.
    data = b"token" * 100_000 + b"AKIA"
    assert portable_screened.found(data) == fast_screened.found(data) == {"token", "AKIA"}
    found, positions = portable_screened.locate(data, 8)
    assert found == {"token", "AKIA"}
    assert positions == {"AKIA": [500_000]}


def _read(form: bytes) -> str:
    """One character of the input as the reading has it."""
    text = form.decode()
    char = chr(int(text[2:], 16)) if text.startswith("\\u") else text
    return chr(ord(char) - 0xFEE0) if 0xFF01 <= ord(char) <= 0xFF5E else char


@pytest.mark.parametrize(
    ("text", "reading"),
    [
        ("ｐａｓｓｗｏｒｄ＝hunter2", "password=hunter2"),
        ("key ＡＰＩ＿ＫＥＹ：x", "key API_KEY:x"),
        ("\\uff50\\uff41\\uff53\\uff53=x", "pass=x"),
        ("mixed ｐａ\\uff53ｓ x", "mixed pass x"),
    ],
)
def test_full_width_runs_with_a_letter_read_as_ascii(text: str, reading: str) -> None:
    data = text.encode()
    folded = Folded(data)
    assert folded
    assert folded.data == reading.encode()
    places = [left for left, _ in folded.original([(i, i) for i in range(len(reading) + 1)])]
    assert places[0] == 0
    assert places[-1] == len(data)
    for i, char in enumerate(reading):  # each character of the reading maps to the form it stands for
        assert _read(data[places[i] : places[i + 1]]) == char


def test_full_width_punctuation_alone_is_not_read() -> None:
    data = "no letters，just punctuation。".encode()
    folded = Folded(data)
    assert not folded
    assert folded.data is data
    assert folded.original([(3, 9)]) == [(3, 9)]


def test_splice_merges_overlapping_and_touching_spans_and_keeps_characters_whole() -> None:
    data = "aaé bbb ccc".encode()
    assert splice(data, [(0, 2), (1, 3)], b"X") == b"X bbb ccc"  # the span that ends inside \xc3\xa9 takes it all
    assert splice(data, [(5, 6), (6, 8)], b"X") == "aaé X ccc".encode()
    assert splice(data, [(9, 12), (0, 1)], b"X") == "Xaé bbb X".encode()
    assert splice(data, [(2, 3)], b"X") == b"aaX bbb ccc"
    assert splice(data, [], b"X") == data


@pytest.mark.parametrize("use_hyperscan", [True, False])
def test_only_the_literals_worth_placing_are_placed(use_hyperscan: bool) -> None:
    prefilter = Prefilter(CASELESS, EXACT, place={"AKIA", "token"}, use_hyperscan=use_hyperscan)
    data = b"AKIA sk- TOKEN password sk- AKIA"
    found, positions = prefilter.locate(data, 4)
    assert found == {"AKIA", "sk-", "token", "password"}
    assert positions == {"AKIA": [0, 28], "token": [9]}


def test_a_core_install_without_hyperscan_warns_about_nothing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from toolctx.redaction import _prefilter

    default_redactor()  # (built first, as it is in use: the log record below goes through it)
    monkeypatch.setattr(_prefilter, "_told", set())
    monkeypatch.setitem(sys.modules, "hyperscan", None)  # as in an install without toolctx[fast]
    with caplog.at_level(logging.DEBUG, logger="toolctx"), warnings.catch_warnings():
        warnings.simplefilter("error")
        first, second = Prefilter(CASELESS, EXACT), Prefilter(CASELESS, EXACT)
    assert (first.engine, second.engine) == ("re", "re")
    told = [r for r in caplog.records if "slow_secret_scan" in r.getMessage()]
    assert [r.levelno for r in told] == [logging.DEBUG]  # once, and only for whoever reads debug


def test_hyperscan_installed_but_failing_is_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from toolctx.redaction import _prefilter

    class Refusing:
        HS_FLAG_SINGLEMATCH = HS_FLAG_CASELESS = HS_MODE_BLOCK = 0

        class Database:
            def __init__(self, mode: int) -> None:
                raise RuntimeError("this CPU lacks SSSE3")

    default_redactor()  # (built first, as it is in use: the log record below goes through it)
    monkeypatch.setattr(_prefilter, "_told", set())
    monkeypatch.setitem(sys.modules, "hyperscan", Refusing)
    monkeypatch.setattr(_prefilter.importlib.util, "find_spec", lambda name: object())
    with caplog.at_level(logging.DEBUG, logger="toolctx"):
        assert Prefilter(CASELESS, EXACT).engine == "re"
    [told] = [r for r in caplog.records if "slow_secret_scan" in r.getMessage()]
    assert told.levelno == logging.WARNING
    assert "SSSE3" in told.getMessage()
