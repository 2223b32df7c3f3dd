"""CompactionSettings: every option of the compaction policy and its default, in one place."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from toolctx._checks import whole_number
from toolctx.errors import ConfigError

__all__ = ["READ_CONTEXT", "CompactionSettings"]

READ_CONTEXT = "read_context"
"""The name of the tool that reads stored outputs back; its own results are never compacted."""


@dataclass(frozen=True)
class CompactionSettings:
    """What the model is shown of tool calls: tool-time stand-ins and batched, cache-aware compaction.

    Tool time:

    ``max_output_tokens`` (1,000): a result estimated over this many tokens reaches
    the model as a stand-in of its first ``head_chars`` (1,500) and last
    ``tail_chars`` (500) characters with its handle.

    Model calls (one measure: the estimated tokens, one per 4 bytes, of the
    conversation's messages as the model would be shown them):

    ``high_water`` (8,000): when the conversation is over this, the oldest tool
    calls are compacted, in one batch, until it is at ``low_water`` (2,000) or
    only the ``keep`` (5) most recent results are left. Between two batches
    nothing shown changes, so the prompt cache keeps the whole prefix; a batch is
    made only if it frees at least ``min_gain`` (1,000) tokens, which pays for
    the one cache break.

    ``preview_chars`` (0): characters of a compacted result kept after its
    marker; ``args_chars`` (300): a string argument longer than this is replaced,
    inside the arguments, by a stand-in string with its handle (the arguments stay
    valid JSON; the stored call keeps them whole); ``args_preview_chars`` (60):
    characters of such an argument kept in its stand-in. ``exclude_tools``: tools
    whose results and arguments are never compacted (``read_context`` always is
    one of them).

    Why these defaults: replaying 59 recorded coding-agent sessions (one shell
    tool, 30-160 calls, most outputs a few hundred characters, file writes as
    large heredoc arguments) and 137 customer-service sessions (many small JSON
    results) through both frameworks (``bench/replay.py``). A low-water mark well
    under the high-water one makes batches rare (each break of the prompt cache
    re-sends the conversation once at full price) while keeping the conversation
    small; compacting arguments too matters because file contents written by the
    agent were a quarter of all tokens; markers without preview cost the least,
    and the agent reads an output back with its handle when it needs it. A short
    customer-service session never reaches 8,000 tokens of messages, so it is sent
    unchanged, without even the ``read_context`` definition.
    """

    max_output_tokens: int = 1000
    head_chars: int = 1500
    tail_chars: int = 500
    high_water: int = 6000
    low_water: int = 0
    keep: int = 3
    min_gain: int = 1000
    preview_chars: int = 0
    args_chars: int = 300
    args_preview_chars: int = 60
    exclude_tools: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        whole_number("max_output_tokens", self.max_output_tokens, minimum=1)
        for name in ("head_chars", "tail_chars", "low_water", "keep", "min_gain", "preview_chars"):
            whole_number(name, getattr(self, name))
        whole_number("high_water", self.high_water, minimum=1)
        whole_number("args_chars", self.args_chars, minimum=1)
        whole_number("args_preview_chars", self.args_preview_chars)
        if self.low_water > self.high_water:
            raise ConfigError(f"low_water ({self.low_water:,}) must not be over high_water ({self.high_water:,})")
        tools: Iterable[str] = (self.exclude_tools,) if isinstance(self.exclude_tools, str) else self.exclude_tools
        if not all(isinstance(t, str) for t in tools):
            raise ConfigError(f"exclude_tools must be tool names, got {self.exclude_tools!r:.100}")
        object.__setattr__(self, "exclude_tools", frozenset(tools) | {READ_CONTEXT})
