"""Token counts: exact offline counts for OpenAI's encodings, and the fast estimate.

* :func:`get_counter` gives a :class:`TokenCounter` by name (``"o200k_base"``,
  ``"cl100k_base"``, ``"estimate"``); :func:`counter_for_model` by model name.
  The exact counters need the ``tokens`` extra (``pip install 'toolctx[tokens]'``),
  imported on first use: rs-bpe, else tiktoken, with the same counts (:data:`BACKENDS`).
* :func:`estimate_tokens` is the estimate made when a call is saved: no
  tokenizer, a few microseconds per output; :func:`estimate_tokens_cached`
  remembers it for recent short texts an agent loop estimates again.
* :func:`count_request` counts a whole chat request (messages, tool calls,
  tool definitions, framing) for OpenAI, Anthropic, Agents SDK and LangChain
  messages; :class:`CalibratedCounter` corrects counts from the usage a
  provider reports.
"""

from __future__ import annotations

from toolctx.tokens._calibrated import CalibratedCounter
from toolctx.tokens._chat import count_message, count_request, count_tools
from toolctx.tokens._counter import EstimateCounter, TokenCounter
from toolctx.tokens._estimate import estimate_tokens, estimate_tokens_cached, remembers_estimate
from toolctx.tokens._exact import BACKENDS, ENCODINGS, ExactCounter
from toolctx.tokens._models import counter_for_model, encoding_for_model, get_counter, resolve_counter

__all__ = [
    "BACKENDS",
    "ENCODINGS",
    "CalibratedCounter",
    "EstimateCounter",
    "ExactCounter",
    "TokenCounter",
    "count_message",
    "count_request",
    "count_tools",
    "counter_for_model",
    "encoding_for_model",
    "estimate_tokens",
    "estimate_tokens_cached",
    "get_counter",
    "remembers_estimate",
    "resolve_counter",
]
