"""An incremental BM25 index over stored calls.

Documents are added as calls are saved and removed when their contexts are
cleared; nothing is ever rescanned. Adding costs nothing on the call path: the
text is queued, and tokenized into the postings the next time the index is
searched (about 0.1 ms per document here, paid once, at answer time).

Postings are compact: one ``array('I')`` per term, each entry the document number
shifted left by 8 bits plus the term frequency (capped at 255), in document
order.

Scoring is Okapi BM25 (k1=1.2, b=0.75) with Lucene's always-positive idf.
Name, description and argument terms count twice as much as result-preview
terms.

numpy is optional. The core install scores in pure Python; when numpy can be
imported (the ``memory`` extra brings it), a search scores the postings of the
query's terms as numpy views instead. Both paths compute every score in double
precision with the same operations in the same order, so they return the same
documents, scores and tie order, bit for bit. numpy is kept, as an accelerator,
because pure Python is much slower at the sizes ``bench/selection_speed.py``
measures: a search visits every posting of every query term (about 10,000
entries over 10,000 stored calls there), at ~0.3 µs an entry in Python against
a few ns vectorised. There a top-10 selection took 0.8 ms with numpy and 6 ms
without, over 100,000 calls 13 ms and 110 ms (2x at 1,000 calls). ``remove`` is
pure Python either way: it rewrites only the span of each posting list between
the first and the last removed document, and beat numpy's whole-list filtering
in every case measured.
"""

from __future__ import annotations

import heapq
import math
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from toolctx._internal import internal_error
from toolctx._platform import fork_safe_lock
from toolctx.selection._text import tokenize

__all__ = ["Document", "SearchIndex"]

K1 = 1.2
B = 0.75
_TF_MAX = 255


class Document(Protocol):
    """What the index reads of a document when it indexes it: its id, size and texts."""

    @property
    def id(self) -> str: ...

    @property
    def tokens(self) -> int:
        """The document's size, for budgeted searches."""
        ...

    def search_text(self) -> str:
        """Name, description and arguments: their terms count double."""
        ...

    def index_text(self) -> str:
        """The start of the output."""
        ...


class _Texts:
    """A document given as texts, or as functions returning them."""

    __slots__ = ("_boosted", "_text", "id", "tokens")

    def __init__(
        self, doc_id: str, boosted: str | Callable[[], str], text: str | Callable[[], str], tokens: int
    ) -> None:
        self.id = doc_id
        self._boosted = boosted
        self._text = text
        self.tokens = tokens

    def search_text(self) -> str:
        return self._boosted() if callable(self._boosted) else self._boosted

    def index_text(self) -> str:
        return self._text() if callable(self._text) else self._text


# numpy once looked for: None until the first search, False when it cannot be imported.
_numpy: Any = None


def _accelerator() -> Any:
    """The numpy module when it can be imported, else None (looked for once, lazily)."""
    global _numpy
    if _numpy is None:
        try:
            import numpy
        except ImportError:
            _numpy = False
        else:
            _numpy = numpy
    return _numpy or None


def _norm(average: float) -> tuple[float, float]:
    """BM25's length normalisation ``k1 * (1 - b + b * length / average)`` as ``a + c * length``."""
    return K1 * (1.0 - B), K1 * B / average


class SearchIndex:
    """BM25 over documents keyed by string ids (pointer ids)."""

    def __init__(self) -> None:
        self._lock = fork_safe_lock()  # a child forked while another thread searches gets it released
        self._ids: list[str | None] = []  # document number -> id (None once removed)
        self._numbers: dict[str, int] = {}  # id -> document number
        self._lengths = array("f")
        self._tokens = array("I")  # document number -> its token estimate, for budgets
        self._postings: dict[str, array[int]] = {}
        self._pending: list[Document | _Texts] = []
        self._live = 0
        self._total_length = 0.0

    def __len__(self) -> int:
        with self._lock:
            return self._live + len(self._pending)

    def add(
        self, doc_id: str, boosted: str | Callable[[], str], text: str | Callable[[], str], tokens: int = 0
    ) -> None:
        """Queue a document: ``boosted`` text (name, description, arguments) counts double.

        Either text may be a function giving it, called when the document is indexed
        (building a description costs time the call path need not spend).
        ``tokens`` is the document's size for budgeted searches.
        """
        self.add_document(_Texts(doc_id, boosted, text, tokens))

    def add_document(self, document: Document) -> None:
        """Queue a document that gives its own texts when indexed (nothing is copied now)."""
        lock = self._lock
        lock.acquire()  # (cheaper than ``with``: this runs on every saved call)
        try:
            self._pending.append(document)
        finally:
            lock.release()

    @property
    def backlog(self) -> int:
        """Documents queued and not yet indexed."""
        return len(self._pending)

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        for document in pending:
            doc_id = document.id
            if doc_id in self._numbers:
                continue
            try:
                boosted, text = document.search_text(), document.index_text()
            except Exception as exc:  # one document's failure must not drop the rest of the batch
                internal_error(f"could not read the text of {doc_id!r} for the search index; indexed by id only", exc)
                boosted, text = doc_id, ""
            counts = Counter(tokenize(boosted))
            for term in counts:
                counts[term] *= 2
            counts.update(tokenize(text))
            tokens = min(document.tokens, 0xFFFFFFFF)
            number = len(self._ids)
            if number >= 1 << 24:
                raise OverflowError("a search index holds at most 16,777,216 documents")
            self._ids.append(doc_id)
            self._numbers[doc_id] = number
            length = float(sum(counts.values()))
            self._lengths.append(length)
            self._tokens.append(tokens)
            self._total_length += length
            self._live += 1
            shifted = number << 8
            postings = self._postings
            for term, tf in counts.items():
                entry = shifted | (tf if tf < _TF_MAX else _TF_MAX)
                bucket = postings.get(term)
                if bucket is None:
                    postings[term] = array("I", (entry,))
                else:
                    bucket.append(entry)

    def remove(self, doc_ids: Iterable[str]) -> None:
        """Drop documents; the postings are compacted at once so idf stays exact."""
        with self._lock:
            gone = set(doc_ids)
            self._pending = [p for p in self._pending if p.id not in gone]
            dead = {self._numbers.pop(i) for i in gone if i in self._numbers}
            if not dead:
                return
            for number in dead:
                self._ids[number] = None
                self._total_length -= self._lengths[number]
                self._lengths[number] = 0.0
            self._live -= len(dead)
            if self._live == 0:
                self._clear()
                return
            # Postings are in document order: only the span from the first to the last
            # removed document can hold one, and most lists end before it starts.
            low, high = min(dead) << 8, (max(dead) + 1) << 8
            emptied = []
            for term, bucket in self._postings.items():  # (no copy of the items: it would wake the GC)
                if bucket[-1] < low:
                    continue
                start = bisect_left(bucket, low)
                stop = bisect_left(bucket, high, start)
                kept = [entry for entry in bucket[start:stop] if entry >> 8 not in dead]
                if len(kept) == stop - start:
                    continue
                if not kept and stop - start == len(bucket):
                    emptied.append(term)
                else:
                    bucket[start:stop] = array("I", kept)
            for term in emptied:
                del self._postings[term]

    def clear(self) -> None:
        with self._lock:
            self._clear()

    def _clear(self) -> None:
        self._ids.clear()
        self._numbers.clear()
        self._lengths = array("f")
        self._tokens = array("I")
        self._postings.clear()
        self._pending.clear()
        self._live = 0
        self._total_length = 0.0

    def search(
        self,
        query: Sequence[str],
        candidates: Iterable[str] | None = None,
        k: int | None = None,
        min_ratio: float = 0.0,
        budget: int | None = None,
    ) -> list[tuple[str, float]]:
        """Ids with a score above zero, best first (ties: older documents first).

        ``query`` is the tokenized query; ``candidates`` restricts the ids considered;
        ``min_ratio`` drops scores under that fraction of the best; ``budget`` keeps,
        best first, the documents whose token estimates fit in it together (one that
        does not fit is skipped); ``k`` keeps at most k.
        """
        with self._lock:
            if self._pending:
                self._flush()
            if not self._total_length or not query or (k is not None and k < 1):
                return []  # (no document holds a term when the total length is zero)
            wanted = None if candidates is None else {self._numbers[i] for i in candidates if i in self._numbers}
            np = _accelerator()
            if np is None:
                ranked, scores = self._rank(query, wanted, k, min_ratio, budget)
            else:
                ranked, scores = self._rank_numpy(np, query, wanted, k, min_ratio, budget)
            if budget is not None:
                return self._fit(ranked, scores, budget, k)
            ids = self._ids
            return [(ids[n] or "", s) for n, s in zip(ranked, scores, strict=True)]

    def _terms(self, query: Sequence[str]) -> Iterable[tuple[array[int], float]]:
        """Each query term's postings and weight: idf x count in the query x (k1 + 1)."""
        live = self._live
        for term, query_tf in Counter(query).items():
            bucket = self._postings.get(term)
            if bucket is not None:
                df = len(bucket)
                yield bucket, math.log(1.0 + (live - df + 0.5) / (df + 0.5)) * query_tf * (K1 + 1.0)

    def _rank(
        self, query: Sequence[str], wanted: set[int] | None, k: int | None, min_ratio: float, budget: int | None
    ) -> tuple[list[int], list[float]]:
        """Ranked document numbers and their scores, in pure Python (caller holds the lock).

        Every score is computed with the same operations, in the same order, as in
        :meth:`_rank_numpy`, so the two agree to the last bit.
        """
        lengths = self._lengths
        fixed, per_length = _norm(self._total_length / self._live)
        scores: dict[int, float] = {}
        get = scores.get
        for bucket, weight in self._terms(query):
            for entry in bucket:
                number = entry >> 8
                tf = entry & 0xFF
                scores[number] = get(number, 0.0) + weight * tf / (tf + (fixed + per_length * lengths[number]))
        if wanted is not None:
            scores = {n: s for n, s in scores.items() if n in wanted}
        if min_ratio > 0 and scores:
            floor = max(scores.values()) * min_ratio
            scores = {n: s for n, s in scores.items() if s >= floor}
        # In document order, which the stable sort below keeps among ties.
        if budget is not None:
            tokens = self._tokens
            numbers = sorted(n for n in scores if tokens[n] <= budget)
        elif k is not None and len(scores) > k:
            kth = heapq.nlargest(k, scores.values())[-1]  # keep every hit tying with the k-th best
            numbers = sorted(n for n, s in scores.items() if s >= kth)
        else:
            numbers = sorted(scores)
        ranked = sorted(numbers, key=scores.__getitem__, reverse=True)  # reverse=True stays stable
        if budget is None and k is not None:
            ranked = ranked[:k]
        return ranked, [scores[n] for n in ranked]

    def _rank_numpy(
        self,
        np: Any,
        query: Sequence[str],
        wanted: set[int] | None,
        k: int | None,
        min_ratio: float,
        budget: int | None,
    ) -> tuple[list[int], list[float]]:
        """:meth:`_rank` vectorised with numpy (caller holds the lock)."""
        lengths = np.frombuffer(self._lengths, dtype=np.float32)
        fixed, per_length = _norm(self._total_length / self._live)
        scores = np.zeros(len(self._ids), dtype=np.float64)
        for bucket, weight in self._terms(query):
            entries = np.frombuffer(bucket, dtype=np.uint32)
            numbers = entries >> 8
            tf = (entries & 0xFF).astype(np.float64)
            norm = fixed + per_length * lengths[numbers].astype(np.float64)
            scores[numbers] += weight * tf / (tf + norm)
            del entries  # release the buffer views before the postings or lengths next change
        del lengths
        if wanted is not None:
            allowed = np.zeros(len(scores), dtype=bool)
            allowed[list(wanted)] = True
            scores[~allowed] = 0.0
        hits = np.flatnonzero(scores > 0)
        if min_ratio > 0 and len(hits):
            hits = hits[scores[hits] >= scores[hits].max() * min_ratio]
        if budget is not None:
            tokens = np.frombuffer(self._tokens, dtype=np.uint32)
            hits = hits[tokens[hits] <= budget]
            del tokens
        elif k is not None and len(hits) > k:
            # keep every hit that ties with the k-th best, then order exactly below
            kth = np.partition(scores[hits], len(hits) - k)[len(hits) - k]
            hits = hits[scores[hits] >= kth]
        ranked = hits[np.lexsort((hits, -scores[hits]))]
        if budget is None and k is not None:
            ranked = ranked[:k]
        return ranked.tolist(), scores[ranked].tolist()

    def _fit(self, ranked: list[int], scores: list[float], budget: int, k: int | None) -> list[tuple[str, float]]:
        """Walk the whole ranking best first, taking what fits (caller holds the lock)."""
        tokens = self._tokens
        chosen: list[tuple[str, float]] = []
        spent = 0
        for number, score in zip(ranked, scores, strict=True):
            cost = tokens[number]
            if spent + cost > budget:
                continue
            spent += cost
            chosen.append((self._ids[number] or "", score))
            if len(chosen) == k or spent == budget:
                break
        return chosen

    def memory_bytes(self) -> int:
        """Approximate bytes held by the postings, lengths and id maps."""
        import sys

        with self._lock:
            postings = sum(sys.getsizeof(k) + sys.getsizeof(v) for k, v in self._postings.items())
            ids = sum(sys.getsizeof(i) for i in self._numbers) + sys.getsizeof(self._numbers)
            return postings + ids + sys.getsizeof(self._postings) + sys.getsizeof(self._ids) + len(self._lengths) * 4
