"""Secrets in base64: which fragments give a base64 run away, and the runs that hold them.

Base64 writes each 3 bytes as 4 characters, so a literal of the rules (``password``,
``AKIA``, ``-----BEGIN``) encodes to one of three fixed strings, by where it falls in its
group of 3 (``cGFzc3dvcmQ``, ``Bhc3N3b3Jk``, ``wYXNzd29yZ``). Those strings are found by
the same scan as the literals themselves (by ``re``, only inside runs that may be base64);
only where one occurs is the run of base64 around it decoded and its bytes redacted by the
rules, and a run found to hold a secret is replaced whole.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable

from toolctx.redaction._prefilter import SHORTEST_BASE64_RUN, base64_runs

__all__ = ["encoded_fragments", "encoded_runs"]

_SHORTEST = 4  # characters of a fragment: shorter ones occur by chance in any base64
_URL_SAFE = bytes.maketrans(b"-_", b"+/")


def _fragments(literal: bytes) -> set[bytes]:
    """The characters that ``literal`` fixes in base64, at each of its three places in a group of 3."""
    found = set()
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + literal + bytes(2))
        first = -(-8 * offset // 6)  # the first character made of the literal's bits only
        last = 8 * (offset + len(literal)) // 6  # one past the last such character
        fragment = encoded[first:last]
        if len(fragment) >= _SHORTEST:
            found.add(fragment)
    return found


def encoded_fragments(caseless: Iterable[str], exact: Iterable[str | bytes]) -> frozenset[bytes]:
    """The base64 fragments of rule literals: ``caseless`` ones as written in lower case, upper case and
    capitalised (``password``, ``PASSWORD``, ``Password``), ``exact`` ones as given."""
    literals: set[bytes] = set()
    for word in caseless:
        literals.update(form.encode() for form in (word.lower(), word.upper(), word.capitalize()))
    literals.update(w if isinstance(w, bytes) else w.encode() for w in exact)
    return frozenset(fragment for literal in literals for fragment in _fragments(literal))


def _decoded(run: bytes, fragment_at: int) -> list[tuple[int, bytes]]:
    """Where in ``run`` the base64 may start, and the bytes it then encodes (standard or URL-safe).

    It may start after a path or a word (``/tmp/QUtJQ...``): tried after each of the last four
    ``/``, ``+``, ``-`` or ``_`` before the fragment (at ``fragment_at``), nearest first, then at
    each of the run's first four characters.
    """
    run = run.rstrip(b"=")
    starts = {0, 1, 2, 3}
    at = fragment_at
    for _ in range(4):
        at = max(run.rfind(separator, 0, at) for separator in (b"/", b"+", b"-", b"_"))
        if at < 0:
            break
        starts.add(at + 1)
    if b"-" in run or b"_" in run:
        run = run.translate(_URL_SAFE)
    found = []
    for skip in sorted(starts, reverse=True):
        body = run[skip:]
        body = body[: len(body) - 1] if len(body) % 4 == 1 else body + b"=" * (-len(body) % 4)
        if len(body) >= SHORTEST_BASE64_RUN:
            try:
                found.append((skip, binascii.a2b_base64(body)))
            except (binascii.Error, ValueError):
                continue
    return found


def encoded_runs(
    data: bytes, fragments: re.Pattern[bytes], holds_secret: Callable[[bytes], bool]
) -> list[tuple[int, int]]:
    """The spans of the runs of base64 in ``data`` (:func:`base64_runs`, with any ``=`` padding after them)
    that hold a ``fragments`` match and whose bytes, decoded, ``holds_secret``."""
    spans: list[tuple[int, int]] = []
    for start, run_end in base64_runs(data):
        hit = fragments.search(data, start, run_end)
        if hit is None:
            continue
        end = run_end
        while end < len(data) and data[end] == 0x3D:  # padding
            end += 1
        for skip, raw in _decoded(data[start:end], hit.start() - start):
            if holds_secret(raw):
                spans.append((start + skip, end))
                break
    return spans
