"""Personalised PageRank over the repo map's reference graph, with numpy or in pure Python.

The graph is a list of edges (source file, target file, identifier, weight).
A task boosts some identifiers and some source files, then the walk restarts at
its evidence (the personalisation); the result is each file's rank and each
(file, identifier) definition's share of the rank flowing into it, as aider's
repo map computes them.

numpy comes with ``toolctx[fresh]`` and is used when it can be imported; the
pure-Python path computes the same quantities (to rounding), much more slowly,
for small projects on installs without it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Edges", "rank"]

DAMPING = 0.85
_ITERATIONS = 100
_TOLERANCE = 1e-10


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        return None
    return numpy


@dataclass
class Edges:
    """The graph's edges as parallel lists; ``arrays()`` gives them as numpy arrays, made once."""

    sources: list[int] = field(default_factory=list)
    targets: list[int] = field(default_factory=list)
    idents: list[int] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)
    _arrays: Any = None

    def add(self, source: int, target: int, ident: int, weight: float) -> None:
        self.sources.append(source)
        self.targets.append(target)
        self.idents.append(ident)
        self.weights.append(weight)

    def arrays(self, np: Any) -> Any:
        if self._arrays is None:
            self._arrays = (
                np.asarray(self.sources, dtype=np.int64),
                np.asarray(self.targets, dtype=np.int64),
                np.asarray(self.idents, dtype=np.int64),
                np.asarray(self.weights, dtype=np.float64),
            )
        return self._arrays


def rank(
    size: int,
    edges: Edges,
    personal: Sequence[float],
    boosted_idents: Collection[int] = (),
    boosted_sources: Collection[int] = (),
    flows: bool = True,
) -> tuple[list[float], dict[tuple[int, int], float]]:
    """Node ranks, and the rank each (target, identifier) pair receives over its edges.

    Edges of ``boosted_idents`` weigh 10 times more, edges from ``boosted_sources``
    50 times more. ``personal`` need not be normalised; all zeros restarts uniformly.
    With ``flows=False`` the second result is left empty (it costs more than the ranks).
    """
    if size == 0:
        return [], {}
    total = float(sum(personal))
    restart = [p / total for p in personal] if total > 0 else [1.0 / size] * size
    np = _numpy()
    if np is not None:
        return _with_numpy(np, size, edges, restart, boosted_idents, boosted_sources, flows)
    idents, sources = set(boosted_idents), set(boosted_sources)
    weights = [
        w * (10.0 if i in idents else 1.0) * (50.0 if s in sources else 1.0)
        for w, i, s in zip(edges.weights, edges.idents, edges.sources, strict=True)
    ]
    out = [0.0] * size
    for source, weight in zip(edges.sources, weights, strict=True):
        out[source] += weight
    shares = [w / out[s] for s, w in zip(edges.sources, weights, strict=True)]
    ranks = list(restart)
    for _ in range(_ITERATIONS):
        dangling = sum(r for r, o in zip(ranks, out, strict=True) if o == 0)
        following = [0.0] * size
        for source, target, share in zip(edges.sources, edges.targets, shares, strict=True):
            following[target] += ranks[source] * share
        new = [DAMPING * (f + dangling * p) + (1 - DAMPING) * p for f, p in zip(following, restart, strict=True)]
        change = sum(abs(a - b) for a, b in zip(new, ranks, strict=True))
        ranks = new
        if change < _TOLERANCE:
            break
    received: dict[tuple[int, int], float] = {}
    if flows:
        for source, target, ident, share in zip(edges.sources, edges.targets, edges.idents, shares, strict=True):
            if ranks[source] > 0:  # as with numpy: only pairs some rank reaches
                key = (target, ident)
                received[key] = received.get(key, 0.0) + ranks[source] * share
    return ranks, received


def _with_numpy(
    np: Any,
    size: int,
    edges: Edges,
    restart: list[float],
    boosted_idents: Collection[int],
    boosted_sources: Collection[int],
    flows: bool,
) -> tuple[list[float], dict[tuple[int, int], float]]:
    src, dst, ident, weight = edges.arrays(np)
    personal = np.asarray(restart, dtype=np.float64)
    if len(src) and boosted_idents:
        weight = weight * np.where(np.isin(ident, np.fromiter(boosted_idents, dtype=np.int64)), 10.0, 1.0)
    if len(src) and boosted_sources:
        weight = weight * np.where(np.isin(src, np.fromiter(boosted_sources, dtype=np.int64)), 50.0, 1.0)
    out = np.bincount(src, weights=weight, minlength=size)
    share = weight / out[src] if len(src) else weight
    dead = out == 0
    ranks = personal.copy()
    for _ in range(_ITERATIONS):
        following = np.bincount(dst, weights=ranks[src] * share, minlength=size)
        new = DAMPING * (following + ranks[dead].sum() * personal) + (1 - DAMPING) * personal
        change = float(np.abs(new - ranks).sum())
        ranks = new
        if change < _TOLERANCE:
            break
    received: dict[tuple[int, int], float] = {}
    if flows and len(src):
        base = int(ident.max()) + 1
        unique, inverse = np.unique(dst * base + ident, return_inverse=True)
        summed = np.bincount(inverse, weights=ranks[src] * share)
        received = {(int(k) // base, int(k) % base): float(v) for k, v in zip(unique, summed, strict=True) if v > 0}
    return ranks.tolist(), received
