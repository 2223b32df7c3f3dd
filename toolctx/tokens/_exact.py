"""Exact token counts for OpenAI's BPE encodings, from the ``tokens`` extra.

Two libraries count, with the same counts (``bench/tokens.py`` and the tests
check them against each other on a corpus), tried in this order:

1. `rs-bpe <https://pypi.org/project/rs-bpe/>`_, Python bindings of GitHub's
   ``bpe`` crate. Its wheel carries the ``cl100k_base`` and ``o200k_base``
   vocabularies, so it works offline from the first call; it starts fastest and
   counts fastest. It has one release, with wheels up to CPython 3.13.
2. `tiktoken <https://pypi.org/project/tiktoken/>`_, OpenAI's own tokenizer,
   with wheels for every current CPython. It downloads each vocabulary on first
   use and caches it (``TIKTOKEN_CACHE_DIR`` points it at a folder of your own,
   which is how it runs offline).

``pip install 'toolctx[tokens]'`` installs rs-bpe where it has wheels and
tiktoken elsewhere. A library is imported on the first :func:`get_counter` or
:class:`ExactCounter` call, never by ``import toolctx``.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Final

from toolctx.errors import ConfigError

__all__ = ["BACKENDS", "ENCODINGS", "ExactCounter"]

#: The encodings :class:`ExactCounter` counts in.
ENCODINGS: Final = ("cl100k_base", "o200k_base")
#: The libraries :class:`ExactCounter` counts with, in the order it tries them.
BACKENDS: Final = ("rs-bpe", "tiktoken")

_EXTRA_HINT = "install the tokens extra: pip install 'toolctx[tokens]' (rs-bpe, or tiktoken where rs-bpe has no wheel)"
_lock = threading.Lock()
_counts: dict[tuple[str, str], Callable[[str], int]] = {}


def _rs_bpe(encoding: str) -> Callable[[str], int]:
    module = importlib.import_module("rs_bpe.bpe")
    count: Callable[[str], int] = getattr(module.openai, encoding)().count
    return count


def _tiktoken(encoding: str) -> Callable[[str], int]:
    tiktoken = importlib.import_module("tiktoken")
    try:
        encode = tiktoken.get_encoding(encoding).encode_ordinary
    except Exception as exc:  # (its download: requests' errors, a vocabulary whose hash does not match)
        raise ImportError(
            f"tiktoken could not load the {encoding} vocabulary ({type(exc).__name__}: {str(exc)[:200]}); "
            "run it once with network access, point TIKTOKEN_CACHE_DIR at a folder holding the vocabulary, "
            "or install rs-bpe, whose wheel ships it",
            name="tiktoken",
        ) from exc
    return lambda text: len(encode(text))


_LOADERS: Final = {"rs-bpe": _rs_bpe, "tiktoken": _tiktoken}


def _counting(encoding: str, backend: str | None) -> tuple[str, Callable[[str], int]]:
    """The first backend that loads (or ``backend``) and its count function, loaded once per process."""
    wanted = BACKENDS if backend is None else (backend,)
    with _lock:
        for name in wanted:
            found = _counts.get((name, encoding))
            if found is not None:
                return name, found
        reasons: list[str] = []
        for name in wanted:
            try:
                found = _LOADERS[name](encoding)
            except ImportError as exc:
                reasons.append(f"{name}: {exc}")
                continue
            _counts[(name, encoding)] = found
            return name, found
    raise ImportError(
        f"counting {encoding} tokens exactly needs {' or '.join(wanted)} ({'; '.join(reasons)}); "
        f"{_EXTRA_HINT}; or count with get_counter('estimate')",
        name="rs_bpe" if wanted[0] == "rs-bpe" else "tiktoken",
    )


def _check_encoding(encoding: object) -> str:
    if encoding not in ENCODINGS:
        raise ConfigError(
            f"unknown encoding {encoding!r}: toolctx counts exactly in {', '.join(ENCODINGS)} "
            "(or use get_counter('estimate') for the fast estimate)"
        )
    return str(encoding)


class ExactCounter:
    """Exact token counts in one of OpenAI's encodings, as the model's tokenizer makes them.

    ``ExactCounter("o200k_base")`` counts as GPT-4o, GPT-4.1, GPT-5 and the o-series
    models tokenize; ``ExactCounter("cl100k_base")`` as GPT-4 and GPT-3.5. The
    count is the length of tiktoken's ``encode_ordinary``: text that looks like
    a special token (``<|endoftext|>``) is counted as the plain text it is, as
    the chat APIs treat it. Lone surrogates, which UTF-8 cannot hold, count as
    U+FFFD, as tiktoken encodes them.

    Inputs of any length are counted whole, in time linear in their length
    (about 15-30 MB/s on one core). Constructing the first counter for an
    encoding loads its vocabulary (40-80 ms); later ones share it. Counters are
    safe to share between threads.

    The counts come from the first of :data:`BACKENDS` that is installed
    (``backend="tiktoken"`` picks one; :attr:`backend` says which counts).
    An ``encoding`` outside :data:`ENCODINGS`, or a backend outside
    :data:`BACKENDS`, raises :class:`~toolctx.errors.ConfigError`; with neither
    library installed the constructor raises :class:`ImportError`, whose message
    names the encoding and the command that installs one.
    """

    __slots__ = ("_backend", "_count", "_name")

    def __init__(self, encoding: str = "o200k_base", *, backend: str | None = None) -> None:
        self._name = _check_encoding(encoding)
        if backend is not None and backend not in BACKENDS:
            raise ConfigError(f"unknown backend {backend!r:.40}: ExactCounter counts with {', '.join(BACKENDS)}")
        self._backend, self._count = _counting(self._name, backend)

    @property
    def backend(self) -> str:
        """The library counting: ``"rs-bpe"`` or ``"tiktoken"``."""
        return self._backend

    @property
    def name(self) -> str:
        """The encoding counted in: ``"o200k_base"`` or ``"cl100k_base"``."""
        return self._name

    def count(self, text: str) -> int:
        """The exact number of tokens in ``text``; 0 for the empty string.

        Anything but a ``str`` raises :class:`TypeError`: decode bytes first,
        or estimate them with :func:`~toolctx.tokens.estimate_tokens`.
        """
        if not isinstance(text, str):
            raise TypeError(
                f"{self._name} counts text (str), got {type(text).__name__}: decode bytes first, "
                "or use estimate_tokens() for raw bytes"
            )
        try:
            return int(self._count(text))
        except UnicodeEncodeError:
            # Lone surrogates: replace them with U+FFFD as tiktoken does, then count.
            return int(self._count(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")))

    def __repr__(self) -> str:
        return f"ExactCounter({self._name!r})"
