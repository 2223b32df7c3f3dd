from __future__ import annotations

import threading

from hypothesis import given
from hypothesis import strategies as st

from toolctx._secret_scan import Prefilter

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
