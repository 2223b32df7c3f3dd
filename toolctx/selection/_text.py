"""Turning tool names, descriptions, arguments and result previews into search terms.

What the tokenizer does, in order:

- Unicode NFKC, case folding and accent folding (``Zürich`` and ``zurich`` match);
- words are runs of letters and digits, keeping ``.``, ``-``, ``_`` and ``/``
  inside them, so a path (``src/app/main.py``), a ticker (``BRK.B``), a form
  (``10-K``) or a snake_case name is also kept whole next to its parts
  (``src``, ``app``, ``main``, ``py``);
- camelCase and snake_case are split (``getIncomeStatements`` gives ``get``,
  ``income``, ``statements``); numbers are kept (``2024``, ``10``);
- Chinese, Japanese and Korean text, written without spaces, is indexed by
  character;
- English stop words, single Latin letters and words longer than 40 characters
  (hashes, blobs) are dropped, and English words are stemmed with Snowball
  (PyStemmer): ``discounted``, ``rounding`` and ``queries`` match ``discount``,
  ``round`` and ``query``.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import Stemmer

__all__ = ["STOP_WORDS", "tokenize"]

_STOP_WORDS_TEXT = """
a about above after again against all am an and any are aren't as at be because been before being below
between both but by can cannot could couldn't did didn't do does doesn't doing don't down during each few
for from further had hadn't has hasn't have haven't having he her here hers herself him himself his how i
if in into is isn't it its itself just let's me more most mustn't my myself no nor not of off on once only
or other ought our ours ourselves out over own same shan't she should shouldn't so some such than that the
their theirs them themselves then there these they this those through to too under until up very was
wasn't we were weren't what when where which while who whom why will with won't would wouldn't you your
yours yourself yourselves get got also via per vs etc what's how's there's here's
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())

_WORD = re.compile(r"\w(?:[\w./\-]*\w)?")
_PARTS = re.compile(r"[./\-_]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_CJK_RUNS = re.compile(_CJK.pattern + "|" + _CJK.pattern.replace("[", "[^", 1) + "+")
_MAX_WORD = 40
_stem = Stemmer.Stemmer("english").stemWord


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


@lru_cache(maxsize=65536)
def _terms_of_word(word: str) -> tuple[str, ...]:
    """Search terms for one raw word (cached: names and argument keys repeat a lot)."""
    if len(word) > _MAX_WORD:
        return ()
    if _CJK.search(word):  # one term per CJK character; other runs as words of their own
        terms: list[str] = []
        for run in _CJK_RUNS.findall(word):
            terms.extend([_fold(run)] if _CJK.match(run) else _terms_of_word(run))
        return tuple(t for t in terms if t)
    pieces = [p for part in _PARTS.split(word) for p in _CAMEL.split(part) if p]
    terms = [_normalize(p) for p in pieces]
    if len(pieces) > 1:  # the whole word too: a path, ticker or snake_case name as written
        whole = _fold(word)
        if whole not in STOP_WORDS:  # "oN" splits into "o" and "N" but folds back to "on"
            terms.append(whole)
    return tuple(t for t in terms if t)


def _normalize(piece: str) -> str:
    term = _fold(piece)
    if term in STOP_WORDS or (len(term) == 1 and not term.isdigit()):
        return ""
    return _stem(term) if len(term) > 3 and term.isalpha() and term.isascii() else term


def tokenize(text: str) -> list[str]:
    """The search terms of ``text``, in order, repeats kept (they count as term frequency)."""
    text = unicodedata.normalize("NFKC", text)
    return [term for word in _WORD.findall(text) for term in _terms_of_word(word)]
