"""CompactionSettings: every option of the compaction policy and its default, in one place."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolctx._checks import output_limit, real_number, whole_number
from toolctx._limits import DECLARED, NEVER, limit_tokens
from toolctx.errors import ConfigError

__all__ = ["READ_CONTEXT", "CompactionSettings", "pays_for_cache_break", "small_record"]

READ_CONTEXT = "read_context"
"""The name of the tool that reads stored outputs back; its own results are never compacted."""


@dataclass(frozen=True)
class CompactionSettings:
    """What the model is shown of tool calls: tool-time stand-ins and batched, cache-aware compaction.

    Tool time:

    ``max_output_tokens`` (1,000): a result estimated over this many tokens reaches
    the model as a stand-in of its first ``head_chars`` (1,500) and last
    ``tail_chars`` (500) characters with its handle (one of at most that many
    characters, or of ``exclude_tools``, is shown as it is).

    ``json_output_tokens`` (3,000): the same limit for a result that is a JSON
    object or array (an API's records), when its tool has no limit of its own. The
    next step quotes such records field by field (an id, a fare, a date from the
    middle of a flight search), which a head and a tail would hide; logs and files
    are read by their ends. On the recorded customer-service sessions the values
    the next step copies that were hidden went from 0.4 % to 0.1 % (tokens x0.985
    to x0.990 of no toolctx); 2,000 hid 0.3 %; the coding sessions, whose outputs
    are text, did not move.

    ``tool_limits``: a tool's own ``max_output_tokens``, by tool name, as
    ``{"bash": 4000, "get_user": "never", "dump": "always"}``. A number of tokens
    raises or lowers the limit for that tool; ``"never"``: its outputs are never
    replaced, neither at tool time nor by batches (what ``exclude_tools`` does, which
    is the same as ``"never"`` for each tool it names); ``"always"``: every stored
    output of it gets a stand-in, however small, when the stand-in is shorter (an
    output of more than ``head_chars + tail_chars`` characters), even the
    conversation's first one, which otherwise waits until it pays for bringing
    ``read_context`` in. A tool decorated with ``@persist_context(max_output_tokens=...)``
    declares its own limit, used when the settings name no limit for it: the
    settings are the deployment's choice (the model, its window), the decorator the
    tool author's default, so the settings win. A tool named in both
    ``exclude_tools`` and ``tool_limits`` (other than ``"never"``) is refused.

    Model calls (one measure: the tokens of the conversation's messages as the
    model would be shown them, by :func:`~toolctx.tokens.estimate_tokens`):

    ``high_water`` (5,000): when the conversation is over this, the oldest tool
    calls are compacted, in one batch, down to ``low_water`` (0: as far as the
    rules allow), never touching the ``keep`` (2) most recent results, error
    results or ``exclude_tools``. Between two batches nothing already shown
    changes, so the prompt cache keeps the whole prefix; a batch is made only if
    it frees at least ``min_gain`` (2,000) tokens, to pay for its one cache break.
    The first batch waits one model call, in which ``read_context`` starts being
    offered, so the tool list and the messages change in the same call.

    ``cached_price`` (0.1): what the provider charges for a cached prompt token,
    as a share of the full price (Anthropic 0.1; OpenAI 0.1-0.5 by model; 1.0
    for no prompt caching). An edit that breaks the cache, a batch or the first
    stand-in (it brings ``read_context`` into the tool list), is made only when
    it pays for itself by this price (:func:`pays_for_cache_break`), expecting a
    conversation to go on for as many calls as it has had. The first stand-in
    counts the system prompt and the tool definitions among what is re-sent:
    the tool list comes first in the prompt.

    ``preview_chars`` (0): characters of a compacted result kept after its
    marker; ``args_chars`` (300): a string argument longer than this is replaced,
    inside the arguments, by a stand-in string with its handle (the arguments stay
    valid JSON; the stored call keeps them whole); ``args_preview_chars`` (60):
    characters of such an argument kept in its stand-in. ``exclude_tools``: tools
    whose results and arguments are never compacted (``read_context`` always is
    one of them). ``text_chars`` (300): what the model wrote between its tool
    calls (assistant text) longer than this and older than a result being
    compacted goes in the same batch, as a marker with its handle (stored as a
    call of ``assistant_text``); a larger value keeps more of it whole.

    What the model still uses: a distinctive word (a dotted name or one with an
    underscore or a case change, a file name, a code of capitals and digits) or
    what a pair of quotes holds (a message, a key, a setting), written by the model
    in two responses or more. ``in_use_lines`` (16): the stand-in a batch makes for
    an old output, argument or text keeps up to this many of its lines holding one
    the model wrote again in or after that item's response, numbered, the first
    line of each that no earlier stand-in keeps, so that the names and strings the
    agent works with stay in sight (0: none); in the stand-in for what the model wrote
    itself (an argument, its text), lines left over go to those naming the most
    distinctive names no stand-in keeps a line of: the settings, imports and calls of
    a script, which the agent's next script copies though it wrote them only once.
    ``in_use_tokens`` (0): up to this many tokens of old items that one of the last
    ``in_use_calls`` (4) responses took a word from are kept whole by a batch,
    the most lately used first (0: none). ``record_chars`` (1,000): a JSON
    object or array of at most this many characters (a record an agent quotes ids,
    dates and amounts from) is left whole by batches. On the recorded coding
    sessions (``bench/replay.py``; ``docs/benchmarks.md``, "What the agent still
    needs"), kept lines and these defaults hide 8.0 % of the values the next step
    copies from earlier (24.3 % with neither), for x0.386 of the tokens without
    toolctx and x0.544 of the cache-weighted tokens; keeping whole items hid fewer at
    several times the cost, in prompt-cache terms above all, so it is off by
    default.

    Why these defaults: ``bench/replay.py`` replays 59 recorded coding-agent
    sessions (one shell tool, 30-160 calls, outputs of a few hundred characters,
    file writes as large heredoc arguments, a quarter of all tokens) and 137
    customer-service sessions (small JSON results) through both frameworks. On 12
    coding sessions (LangChain), tokens over the session / cache-weighted tokens /
    tokens at the last call, against no toolctx, were: high 8,000, low 2,000, keep
    5: x0.45 / x0.67 / x0.37; high 8,000, low 1,000, keep 3: x0.43 / x0.61 / x0.37;
    high 12,000, low 0, keep 3: x0.49 / x0.65 / x0.39; high 6,000, low 0, keep 3:
    x0.41 / x0.60 / x0.36; high 6,000, low 0, keep 2: x0.40 / x0.57 / x0.36. A lower
    mark saves more, and emptying the conversation in one batch (low 0) breaks the
    cache less often than trimming it. Once stand-ins kept the lines in use (all 59
    coding sessions, LangChain: values hidden / tokens / cache-weighted tokens),
    keep 2 rather than 3 cost little in sight and much in tokens (high 6,000: 13.2 % /
    x0.367 / x0.525 against 12.4 % / x0.380 / x0.555), and a higher mark bought the
    rest: high 7,000: 12.8 % / x0.376 / x0.532; 8,000: 11.7 % / x0.388 / x0.541;
    9,000: 10.9 % / x0.401 / x0.551. Once the stand-ins of what the model wrote kept
    the lines naming most of it too, a lower mark cost less in sight than before and
    saved more: high 5,000: 8.0 % / x0.386 / x0.544; 6,000: 8.1 % / x0.390 / x0.548;
    8,000: 7.1 % / x0.408 / x0.563 (``in_use_lines`` 8: 10.4 % / x0.376 / x0.534; 24:
    7.4 % / x0.388 / x0.546). Arguments are compacted too because they were a
    quarter of the tokens; markers without preview cost the least, and the agent
    reads an output back by its handle. Assistant text is compacted in the same
    batches for the same reason: it was a quarter of what was left on the coding
    sessions (12 sessions: tokens x0.42 to x0.33, cache-weighted x0.60 to x0.53);
    ``text_chars`` matches ``args_chars``, so a one-line remark stays. ``min_gain``
    2,000 rather than 1,000 (all 59 coding sessions, both frameworks): cache-weighted
    tokens x0.529 / x0.524 instead of x0.532 / x0.527, the lowest of 1,000, 2,000
    and 3,000 (1,500, measured apart, was as low), for tokens over the session
    x0.356 / x0.351 instead of x0.342 / x0.337; a third fewer batches, each a cache
    break and a few hundred microseconds of CPU beyond its edits
    (``bench/batch_parts.py``). Most customer-service sessions
    never reach 5,000 tokens of messages and are sent unchanged, without even the
    ``read_context`` definition (over all 137: x0.99 tokens, x1.009 cache-weighted).
    """

    max_output_tokens: int = 1000
    json_output_tokens: int = 3000
    head_chars: int = 1500
    tail_chars: int = 500
    high_water: int = 5000
    low_water: int = 0
    keep: int = 2
    min_gain: int = 2000
    preview_chars: int = 0
    cached_price: float = 0.1
    args_chars: int = 300
    args_preview_chars: int = 60
    text_chars: int = 300
    record_chars: int = 1000
    in_use_calls: int = 4
    in_use_tokens: int = 0
    in_use_lines: int = 16
    exclude_tools: frozenset[str] = field(default_factory=frozenset)
    tool_limits: Mapping[str, int | str] = field(default_factory=dict, hash=False)  # (a dict: hashed without it)
    _tokens: dict[str, int] = field(init=False, repr=False, compare=False, hash=False)

    @classmethod
    def of(cls, settings: CompactionSettings | None = None, /, **options: Any) -> CompactionSettings:
        """``settings`` as given, or settings made of ``options`` (the hosts' ``settings=None, **options``).

        Raises TypeError when both are given: which one would win is a guess.
        """
        if settings is None:
            return cls(**options)
        if options:
            raise TypeError(
                f"pass either a CompactionSettings or its options by keyword, not both (got {sorted(options)})"
            )
        if not isinstance(settings, cls):
            raise TypeError(f"settings must be a toolctx.compaction.CompactionSettings, got {settings!r:.80}")
        return settings

    def __post_init__(self) -> None:
        whole_number("max_output_tokens", self.max_output_tokens, minimum=1)
        whole_number("json_output_tokens", self.json_output_tokens, minimum=1)
        for name in ("head_chars", "tail_chars", "low_water", "keep", "min_gain", "preview_chars"):
            whole_number(name, getattr(self, name))
        whole_number("high_water", self.high_water, minimum=1)
        whole_number("args_chars", self.args_chars, minimum=1)
        whole_number("args_preview_chars", self.args_preview_chars)
        whole_number("text_chars", self.text_chars, minimum=1)
        whole_number("in_use_calls", self.in_use_calls)
        whole_number("record_chars", self.record_chars)
        whole_number("in_use_tokens", self.in_use_tokens)
        whole_number("in_use_lines", self.in_use_lines)
        if real_number("cached_price", self.cached_price, minimum=0.0) > 1:
            raise ConfigError(f"cached_price is a share of the full price, 0 to 1; got {self.cached_price!r}")
        if self.low_water > self.high_water:
            raise ConfigError(f"low_water ({self.low_water:,}) must not be over high_water ({self.high_water:,})")
        tools: Iterable[str] = (self.exclude_tools,) if isinstance(self.exclude_tools, str) else self.exclude_tools
        if not all(isinstance(t, str) for t in tools):
            raise ConfigError(f"exclude_tools must be tool names, got {self.exclude_tools!r:.100}")
        object.__setattr__(self, "exclude_tools", frozenset(tools) | {READ_CONTEXT})
        object.__setattr__(self, "_tokens", self._limits_in_tokens())
        object.__setattr__(self, "tool_limits", dict(self.tool_limits))  # (a copy: the caller may change theirs)

    def _limits_in_tokens(self) -> dict[str, int]:
        """``tool_limits`` checked, in tokens, with ``exclude_tools`` as ``"never"`` (what :meth:`limit_for` reads)."""
        limits = self.tool_limits
        if not isinstance(limits, Mapping):
            raise ConfigError(
                "tool_limits must map tool names to their limits, as {'bash': 4000, 'get_user': 'never'}, "
                f"got {limits!r:.100}"
            )
        tokens: dict[str, int] = {}
        for tool, limit in limits.items():
            if not isinstance(tool, str) or not tool:
                raise ConfigError(f"tool_limits must map tool names to their limits, got the key {tool!r:.80}")
            tokens[tool] = limit_tokens(output_limit(f"tool_limits[{tool!r}]", limit))
        for tool in self.exclude_tools:
            if tokens.get(tool, NEVER) != NEVER:
                raise ConfigError(
                    f"tool_limits[{tool!r}] = {limits[tool]!r}, but read_context's own outputs are never "
                    "compacted: leave it out of tool_limits"
                    if tool == READ_CONTEXT
                    else f"tool {tool!r} is in exclude_tools (never compacted) and has tool_limits[{tool!r}] = "
                    f"{limits[tool]!r}: give it one of them"
                )
            tokens[tool] = NEVER
        return tokens

    def limit_for(self, tool: str | None, text: str | None = None) -> int:
        """The tokens over which an output of ``tool`` gets a stand-in at tool time (0: ``"always"``,
        ``sys.maxsize``: ``"never"``): its ``tool_limits`` entry (or ``exclude_tools``), else the limit its
        ``@persist_context`` declared, else ``max_output_tokens``, or ``json_output_tokens`` if it is larger
        and the output ``text`` is a JSON object or array."""
        if tool is not None:  # (a result that names no tool has no limit of its own)
            own = self._tokens.get(tool)
            if own is None:  # (two dict reads: this runs on every tool call)
                own = DECLARED.get(tool)
            if own is not None:
                return own
        if text is not None and _json_shaped(text):
            return max(self.max_output_tokens, self.json_output_tokens)
        return self.max_output_tokens

    def keeps_whole(self, tool: str | None) -> bool:
        """Whether outputs (and arguments) of ``tool`` are never replaced: ``exclude_tools`` and ``"never"``."""
        return self.limit_for(tool) == NEVER

    @property
    def stand_in_tokens(self) -> int:
        """About what a tool-time stand-in costs: its head and tail, and the line naming the handle."""
        return (self.head_chars + self.tail_chars) // 4 + 60


def _json_shaped(text: str) -> bool:
    """Whether ``text`` looks like a JSON object or array (by its first and last characters: not parsed)."""
    return text[:1] in ("{", "[") and text[-64:].rstrip()[-1:] in ("}", "]")  # (the end only: no copy of it all)


def pays_for_cache_break(freed: int, broken: int, calls: int, cached_price: float = 0.1) -> bool:
    """Whether freeing ``freed`` tokens is worth re-sending ``broken`` tokens at the uncached price once.

    A provider bills a cached prompt prefix at ``cached_price`` of the full price.
    An edit makes the ``broken`` tokens after it (the freed ones included) cost the
    full price on the next call instead of the cached one, and saves the cached
    price of the ``freed`` tokens on that call and every later one; a conversation
    is expected to go on for about as many calls as it has had (``calls``).
    """
    return freed * (1 + cached_price * calls) > (1 - cached_price) * broken


def small_record(settings: CompactionSettings, text: str) -> bool:
    """Whether a result is a JSON object or array of at most ``record_chars`` characters (left whole by batches)."""
    if len(text) > settings.record_chars:
        return False
    text = text.strip()
    if len(text) < 2:
        return False
    first, last = text[0], text[-1]
    return (first == "{" and last == "}") or (first == "[" and last == "]")
