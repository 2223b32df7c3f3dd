"""Counters by name and by model: which encoding a model tokenizes with."""

from __future__ import annotations

import functools
import re

from toolctx.errors import ConfigError
from toolctx.tokens._counter import EstimateCounter, TokenCounter
from toolctx.tokens._exact import ENCODINGS, ExactCounter

__all__ = ["counter_for_model", "encoding_for_model", "get_counter", "resolve_counter"]

# Model-name prefixes and their encodings, as OpenAI's tiktoken maps them. The longest
# matching prefix wins, so "gpt-4o" is o200k_base although "gpt-4" is cl100k_base.
_PREFIXES: dict[str, str] = {
    "gpt-5": "o200k_base",
    "gpt-4.5": "o200k_base",
    "gpt-4.1": "o200k_base",
    "gpt-4o": "o200k_base",
    "chatgpt-4o": "o200k_base",
    "gpt-oss": "o200k_base",
    "o1": "o200k_base",
    "o3": "o200k_base",
    "o4": "o200k_base",
    "codex-mini": "o200k_base",
    "computer-use-preview": "o200k_base",
    "gpt-4": "cl100k_base",
    "gpt-3.5": "cl100k_base",
    "gpt-35": "cl100k_base",  # Azure's deployment names
    "text-embedding-3": "cl100k_base",
    "text-embedding-ada-002": "cl100k_base",
}
_BY_LENGTH = sorted(_PREFIXES, key=len, reverse=True)
# "openai:gpt-4o" (LangChain's init_chat_model), "openai/gpt-4o" (LiteLLM, OpenRouter),
# "azure/gpt-4o", "ft:gpt-4o-mini:org::id" (fine-tunes).
_PROVIDER = re.compile(r"^(?:ft:|(?:openai|azure|azure_openai|openrouter/openai)[:/])", re.IGNORECASE)


def encoding_for_model(model: str) -> str:
    """The encoding an OpenAI model tokenizes with, from its name.

    ``gpt-4o``, ``gpt-4.1``, ``gpt-4.5``, ``gpt-5``, ``gpt-oss`` and the o-series
    (``o1``, ``o3``, ``o4-mini``) use ``o200k_base``; ``gpt-4``, ``gpt-4-turbo``
    and ``gpt-3.5-turbo`` use ``cl100k_base``. Dated and suffixed names
    (``gpt-4o-mini-2024-07-18``), fine-tunes (``ft:gpt-4o-mini:org::id``) and a
    provider prefix (``openai:gpt-4o``, ``openai/gpt-4o``, ``azure/gpt-4o``)
    are understood; case does not matter.

    Any other name raises :class:`~toolctx.errors.ConfigError`. Other
    providers' tokenizers are not public: count their models with
    ``get_counter("o200k_base")`` as a proxy, or with the estimate, and correct
    it from the usage the provider reports (:class:`~toolctx.tokens.CalibratedCounter`).
    """
    if not isinstance(model, str) or not model.strip():
        raise ConfigError(f"model must be a model name such as 'gpt-4o', got {model!r}")
    name = _PROVIDER.sub("", model.strip().lower(), count=1)
    for prefix in _BY_LENGTH:
        if name.startswith(prefix) and (len(name) == len(prefix) or not name[len(prefix)].isalnum()):
            return _PREFIXES[prefix]
    raise ConfigError(
        f"no known encoding for model {model!r}: toolctx maps OpenAI's models (gpt-4o, gpt-4.1, gpt-5, o1, o3, "
        "o4-mini, gpt-4, gpt-3.5-turbo). For another model pass fallback='o200k_base' (or 'estimate') to "
        "counter_for_model, and correct it from the reported usage with CalibratedCounter"
    )


@functools.cache
def _cached(name: str) -> TokenCounter:
    if name == "estimate":
        return EstimateCounter()
    return ExactCounter(name)


def get_counter(name: str = "o200k_base") -> TokenCounter:
    """A token counter by name: ``"o200k_base"``, ``"cl100k_base"`` or ``"estimate"``.

    The exact counters need the ``tokens`` extra (``pip install 'toolctx[tokens]'``);
    ``"estimate"`` is :func:`~toolctx.tokens.estimate_tokens` and needs nothing.
    The same counter is returned for the same name, so calling this on every
    request costs a dictionary lookup.

    An unknown name raises :class:`~toolctx.errors.ConfigError` listing the
    known ones; an exact encoding without the extra raises :class:`ImportError`.
    """
    if name != "estimate" and name not in ENCODINGS:
        raise ConfigError(
            f"unknown token counter {name!r}: use one of {', '.join((*ENCODINGS, 'estimate'))}, "
            "or counter_for_model('gpt-4o') for a model's own encoding"
        )
    return _cached(name)


def counter_for_model(model: str, *, fallback: str | None = None) -> TokenCounter:
    """The counter for an OpenAI model's encoding (see :func:`encoding_for_model`).

    With ``fallback`` (a :func:`get_counter` name such as ``"o200k_base"`` or
    ``"estimate"``), a model the mapping does not know, such as a Claude or
    Gemini model, is counted with that counter instead of raising
    :class:`~toolctx.errors.ConfigError`. A ``model`` that is not a name at
    all, or a ``fallback`` that is no counter name, raises it in any case.
    """
    if fallback is not None and fallback != "estimate" and fallback not in ENCODINGS:
        raise ConfigError(f"unknown fallback counter {fallback!r}: use one of {', '.join((*ENCODINGS, 'estimate'))}")
    try:
        encoding = encoding_for_model(model)
    except ConfigError:
        if fallback is None or not isinstance(model, str) or not model.strip():
            raise
        return get_counter(fallback)
    return get_counter(encoding)


def resolve_counter(counter: TokenCounter | str | None) -> TokenCounter:
    """A counter from a :class:`TokenCounter`, a :func:`get_counter` name, or None.

    None picks the exact ``o200k_base`` counter when its tokenizer is installed
    (``toolctx[tokens]``), else the estimate: what the assembler and the tiered
    memory count with by default.
    """
    if counter is None:
        try:
            exact = get_counter("o200k_base")
            exact.count("a")  # loads the tokenizer now, so a missing one is found here
        except ImportError:
            return EstimateCounter()
        return exact
    if isinstance(counter, str):
        return get_counter(counter)
    if isinstance(counter, TokenCounter):
        return counter
    raise ConfigError(
        "counter must be a TokenCounter (name, count(text)), a counter name such as 'o200k_base' or None, "
        f"not {counter!r:.80}"
    )
