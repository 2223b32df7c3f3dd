"""The fast token estimate, made when a call is saved so budgets never read stored outputs.

No tokenizer and no vocabulary: a weighted count of the input's bytes, with
weights chosen by the kind of content. Each byte has a weight in 1/32 token
(letters little, spaces, digits and quotes more, CJK lead bytes about one
token); two counts of neighbouring bytes correct for how BPE joins them (a
punctuation mark or digit followed by a word, runs of spaces). The kind of
content is read off a sample of at most 4 KiB: mostly CJK, other non-Latin
scripts, text without spaces (ids, base64, hex, minified data) or ordinary text
(prose, code, JSON, logs). The weights were fitted against exact ``o200k_base``
counts of real text (agent sessions, Python and JavaScript sources, JSON,
package records and certificates, CJK and Cyrillic, Greek, Arabic and Indic
documents); ``bench/tokens.py`` refits and measures them.

The cost is five passes over the bytes in C, whatever the content, over at
most 256 KiB of them; a ``str`` is encoded to UTF-8 first.
"""

from __future__ import annotations

import random
import zlib

import xxhash

__all__ = ["estimate_tokens", "estimate_tokens_cached", "remembers_estimate"]

# Per content kind: byte weights in 1/32 token (0-63), then the tokens per
# "punctuation or digit followed by a lower-case letter" and per pair of spaces.
_MODELS: dict[str, tuple[bytes, float, float]] = {
    "text": (
        bytes.fromhex(
            "000000000000000000322e32320000000000000000000000000000000000000019040301010404070a0a04041a040d04"
            "191919191919191919191a1a04040404010b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0a010a0401"
            "0702020202020202020202020202020202020202020202020202020a040a040005050505050505050505050505050505"
            "050505050505050505050505050505050505050505050505050505050505050505050505050505050505050505050505"
            "00001f1f3f3f3f3f3f3f3f3f3f3f00000000000000000000000000000000000000000000000000000000000000000000"
            "3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f"
        ),
        1.0877,
        -1.4558,
    ),
    "dense": (
        bytes.fromhex(
            "0000000000000000000000000000000000000000000000000000000000000000002b001c1c2b2b3c07072b2b0f2b032b"
            "1b1b1b1b1b1b1b1b1b1b0f0f2b2b2b2b1c2222222222222222222222222222222222222222222222222222071c072b1c"
            "3c0202020202020202020202020202020202020202020202020202072b072b0005050505050505050505050505050505"
            "050505050505050505050505050505050505050505050505050505050505050505050505050505050505050505050505"
            "00001f1f3f3f3f3f3f3f3f3f3f3f00000000000000000000000000000000000000000000000000000000000000000000"
            "3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f"
        ),
        0.2007,
        0.0,
    ),
    "cjk": (
        bytes.fromhex(
            "00000000000000000000210000000000000000000000000000000000000000003103001a1a03033f090903030f031903"
            "0f0f0f0f0f0f0f0f0f0f0f0f030303031a0000000000000000000000000000000000000000000000000000091a09031a"
            "3f0000000000000000000000000000000000000000000000000000090309030000000000000000000000000000000000"
            "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
            "00003f3f0000000000000000000000000000000000000000000000000000000000000013151515151515070707072626"
            "00000000000000000000000000000000"
        ),
        1.1537,
        -2.7288,
    ),
    "nonlatin": (
        bytes.fromhex(
            "000000000000000000003f0000000000000000000000000000000000000000001202210000020201242402023f023502"
            "191919191919191919193f3f020202020000000000000000000000000000000000000000000000000000002400240200"
            "010000000000000000000000000000000000000000000000000000240224020000000000000000000000000000000000"
            "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
            "000000000000000000000000000009090606060606000000080808080808080808000000000000000000000000000000"
            "00000000000000000000000000000000"
        ),
        0.544,
        -0.9174,
    ),
}
# For the pair count: lower-case letters, punctuation and digits, everything else.
_CLASSES = bytes(
    0x61 if 97 <= b <= 122 else 0x2E if 33 <= b <= 64 or 91 <= b <= 96 or 123 <= b <= 126 else 0x78 for b in range(256)
)
_ASCII = bytes(range(128))
_NOT_CJK = bytes(range(0xE3)) + bytes(range(0xF0, 0x100))  # CJK and Hangul lead bytes are E3-EF
_CHUNK = 1024  # 1024 x 63 stays below Adler-32's modulus, so each chunk's sum is exact
_SAMPLE = 1024
_WHOLE = 256 * 1024  # larger inputs are estimated from _WINDOWS windows of _WINDOW bytes spread over them
_WINDOWS = 16
_WINDOW = 4096


def _kind(sample: bytes) -> str:
    """Which weights fit: ``"cjk"``, ``"nonlatin"``, ``"dense"`` (no spaces) or ``"text"``."""
    if not sample.isascii():
        high = len(sample.translate(None, _ASCII))
        if high * 10 > len(sample) * 3:
            return "cjk" if len(sample.translate(None, _NOT_CJK)) * 6 > high else "nonlatin"
    if sample.count(b" ") * 25 < len(sample):
        return "dense"
    return "text"


def estimate_tokens(data: bytes | str) -> int:
    """About how many tokens a model spends on ``data`` (UTF-8 bytes or text).

    Close to the exact ``o200k_base`` count: measured on real text, half of the
    estimates are within 2-6 % and 95 % within 7-21 % depending on the kind of
    content (see the benchmarks page), where one token per 4 bytes was off by
    27-72 % at the 95th percentile. ``cl100k_base`` counts are a little higher
    on non-English text. 0 for empty input, at least 1 otherwise, never more
    than the number of bytes. For exact counts use
    :func:`~toolctx.tokens.get_counter`.

    The kind of content is read off at most 1 KiB (512 bytes from the start
    and 512 from the middle); the weights and counts run over all of it up to
    256 KiB. A larger input is estimated from 16 windows of 4 KiB, one in each
    16th of it at a place its hash chooses (the same input, the same windows;
    no input can choose them), scaled to its size: the cost stops growing with
    the input, and the estimate of a real output moves by 1.3 % (median), 5 %
    at most (see the benchmarks page), less than the estimate's own error.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    size = len(raw)
    if size <= _CHUNK:  # (most inputs: all of it is the sample and one chunk, the same sums without the loop)
        weights, after_punct, space_pairs = _MODELS[_kind(raw)]
        total = (zlib.adler32(raw.translate(weights)) & 0xFFFF) - 1
        estimate = total / 32 + (after_punct * raw.translate(_CLASSES).count(b".a") + space_pairs * raw.count(b"  "))
        return _rounded(estimate, size)
    if size <= _SAMPLE:
        sample = raw
    else:
        middle = size // 2
        sample = raw[: _SAMPLE // 2] + raw[middle : middle + _SAMPLE // 2]
    weights, after_punct, space_pairs = _MODELS[_kind(sample)]
    scale = 1.0
    if size > _WHOLE:  # a window in each of _WINDOWS equal strides, their counts scaled up, joined by a byte
        stride = (size - _WINDOW) / _WINDOWS  # of no weight that is in no pair. Where in its stride a window
        place = random.Random(xxhash.xxh3_64_intdigest(raw)).random  # sits follows from the whole input: no
        starts = [int((k + place()) * stride) for k in range(_WINDOWS)]  # input can fill the windows alone
        raw = b"\0".join(raw[start : start + _WINDOW] for start in starts)
        scale = size / (_WINDOWS * _WINDOW)
    weighed = memoryview(raw.translate(weights))
    # Adler-32's first half is 1 + the byte sum, modulo 65521: sum chunks that cannot wrap
    total = sum((zlib.adler32(weighed[i : i + _CHUNK]) & 0xFFFF) - 1 for i in range(0, len(weighed), _CHUNK))
    punct = raw.translate(_CLASSES).count(b".a")
    estimate = scale * (total / 32 + (after_punct * punct + space_pairs * raw.count(b"  ")))
    return _rounded(estimate, size)


def _rounded(estimate: float, size: int) -> int:
    # round(estimate) (half to even), then kept within 1..size; written out, since builtins the
    # interpreter rarely runs cost microseconds each when an agent loop has left the caches cold
    tokens = int(estimate)
    rest = estimate - tokens
    if rest > 0.5 or (rest == 0.5 and tokens & 1):
        tokens += 1
    tokens = tokens if tokens > 1 else 1
    return size if tokens > size else tokens


_KEPT = 512  # recent texts whose estimate is remembered
_KEPT_CHARS = 4096  # ...if they are this short (so at most about 2 MB is held)
_estimates: dict[str | bytes, int] = {}


def estimate_tokens_cached(text: str | bytes) -> int:
    """:func:`estimate_tokens` of ``text``, remembered for a few hundred recent texts of at most 4,096 characters.

    An agent loop estimates the same text several times: an output when the tool
    hook decides how to show it and again when the next model call reads it, a
    tool's name and its arguments on every call that repeats them.
    """
    if len(text) > _KEPT_CHARS:
        return estimate_tokens(text)
    found = _estimates.get(text)
    if found is None:
        if len(_estimates) >= _KEPT:
            _estimates.clear()  # (dict operations are atomic: threads sharing it at worst estimate again)
        found = _estimates[text] = estimate_tokens(text)
    return found


def remembers_estimate(text: str | bytes) -> bool:
    """Whether :func:`estimate_tokens_cached` remembers the estimate of ``text`` (it is short enough)."""
    return len(text) <= _KEPT_CHARS
