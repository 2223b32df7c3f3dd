"""Do toolctx's handles ever cross between calls or conversations? Real sessions, through the real loops.

    python bench/crossing.py [--traces ../shared/traces/dev.jsonl] [--limit 6] [--framework langchain|agents|both]

It uses nothing newer than the code before calls were found by their conversation,
so the same command runs against an older checkout too (from the repository root,
so that ``bench/`` comes first on the path and the checkout second):

    PYTHONPATH=$OLD:$OLD/integrations python bench/crossing.py   # $OLD: the older checkout

The first ``--limit`` sessions of each source are replayed as ``bench/replay.py``
replays them (a scripted model emitting the recorded steps, tools returning the
recorded outputs), with toolctx at its defaults (LangChain: ``create_agent`` with
``ToolContextMiddleware()``; Agents SDK: ``Runner.run`` with ``persist_tools`` +
``read_context`` + ``compact_tool_outputs()``), but with the call ids a model
server may give and many conversations in one toolctx session. Each workload
runs all its conversations, one after the other, in one ``toolctx.session()``:

- per-response numbering: every recorded call id rewritten as a server numbering
  calls per response writes it (LangChain: ``call_0``, ``call_1``... restarting in
  every model response). The Agents SDK refuses an id used twice in one run, and
  when a later turn reuses an id (numbering per run), its input dedupe by
  ``call_id`` drops the earlier call and its result from what the model is sent
  and from the ``SQLiteSession``: there the numbering restarts in every
  conversation instead (``call_0``, ``call_1``... in each, unique within it).
  Each conversation has its own agent and its own thread (``thread_id``, with an
  ``InMemorySaver``) or group (``RunConfig.group_id``, with a ``SQLiteSession``).
- two conversations in one session: the sessions taken in pairs (of one source,
  in file order), numbered as above, each pair served one conversation after the
  other by one ``ToolContextMiddleware`` (SDK: one ``compact_tool_outputs`` filter),
  under two threads or two group ids.
- no thread id: the same pairs without any config (LangChain: ``agent.invoke``
  with no config and no checkpointer, the client sending the history back each
  turn) or without a ``group_id`` (SDK).

Figures per workload and framework (the conversations of a workload share its
session; "another conversation" is any other of them):

- model calls: over all conversations.
- stand-ins shown: distinct handles of the tool results and tool-call arguments
  the models were shown as stand-ins (assistant-text markers are not counted
  here). Each stand-in is paired with the recorded call it stands for by position
  (the k-th call in a model input is the session's k-th recorded call; a result
  answers the latest call with its id) and read back with
  ``toolctx.compaction.read_context(session, handle, 0, 10**9, part, scope=...)``,
  in the scope the model's own ``read_context`` would read in at that model call
  (asked of the adapter in the run: the LangChain middleware's conversation, or
  before the change the tool's thread; the SDK's ``read_scope``, or before the
  change ``conversation_of``). Each distinct (handle, part, call, scope) counts once as:
  own call (the text after the first line is the call's recorded output or
  argument), as redacted (it is that text as the session's redactor stores it),
  ANOTHER call (any other text: must be 0), unreadable (no text: "No stored
  output" in that scope). "handles crossed" counts the distinct handles with at
  least one ANOTHER-call reading.
- stand-ins / whole results not showing their call's text: stand-ins whose stated
  size, or the first 40 characters they show, are not those of their call's
  recorded output or argument (nor it redacted), counted once per call, part and
  stand-in text; and results shown whole that are not their call's output (nor it
  redacted), once per call (both must be 0).
- inputs with another conversation's text: model inputs holding a distinctive
  piece of a recorded output of another conversation (must be 0); in brackets,
  the (output, reading conversation) pairs checked. The piece is the first
  60-character window of the output, stepping by 30 from its start (a stand-in
  shows the start), that occurs nowhere in what the reading conversation itself
  recorded (system prompt, user messages, assistant texts, arguments, outputs);
  an output with no such window, or under 40 characters, is not checked.
- other conversations' handles read: every handle shown to another conversation
  (results, arguments, text markers), read with ``read_context(session, handle,
  scope=<this conversation's scope at its last model call>)``: how many returned
  anything but "No stored output" (must be 0), of how many reads.

Under the table, the first 10 findings of each row name the session and call
behind its nonzero figures (ANOTHER call, unreadable, text not the call's, leaked
text, other conversations' handles read).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _replay_measure import CALL_ARGUMENTS, READ_ALL, HookClock, ModelInput, read_back_text, text_stand_ins
from _replay_trace import Call, Step, Trace, Turn, load_traces, recorded_texts

import toolctx
from toolctx.compaction import STAND_IN_MARK, handle_of, is_stand_in, read_context

DEFAULT_TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces" / "dev.jsonl"
FRAMEWORKS = {"langchain": "LangChain create_agent", "agents": "Agents SDK Runner.run"}
WORKLOADS = {
    "numbered": "per-response numbering",
    "pairs": "two conversations in one session",
    "no-thread": "no thread id",
}
WINDOW, SHORTEST = 60, 40  # the distinctive piece of an output sought in other conversations' inputs
NOT_FOUND = "No stored output"
SIZE = re.compile(r"([\d,]+) characters")  # the size a stand-in states, in its first line


@dataclass
class Conversation:
    """One recorded session as replayed: its calls renumbered, and what its model was given."""

    trace: Trace
    thread: str | None  # its thread_id (LangChain) or group_id (SDK); None: none given
    recorded_ids: list[str]  # each call's id as recorded, before the renumbering
    inputs: list[ModelInput] = field(default_factory=list)  # each model call's input, as the replay records it
    scopes: list[Any] = field(default_factory=list)  # what read_context reads in, at each model call


# -- the workloads -----------------------------------------------------------------------------


def numbered(trace: Trace, per_response: bool) -> Trace:
    """``trace`` with the call ids of a server numbering calls per response (else per conversation)."""
    turns, n = [], 0
    for turn in trace.turns:
        steps = []
        for step in turn.steps:
            n = 0 if per_response else n
            calls = []
            for call in step.calls:
                calls.append(dataclasses.replace(call, id=f"call_{n}"))
                n += 1
            steps.append(Step(step.text, tuple(calls)))
        turns.append(Turn(turn.user, tuple(steps), turn.final))
    return dataclasses.replace(trace, turns=tuple(turns))


def workload(name: str, traces: Sequence[Trace], framework: str) -> list[list[Conversation]]:
    """The conversations of a workload, in groups served by one middleware (SDK: one input filter)."""
    threads = name != "no-thread"

    def conversation(trace: Trace) -> Conversation:
        renumbered = numbered(trace, per_response=framework == "langchain")
        return Conversation(renumbered, trace.id if threads else None, [call.id for call in trace.calls])

    if name == "numbered":
        return [[conversation(trace)] for trace in traces]
    by_source: dict[str, list[Trace]] = {}
    for trace in traces:
        by_source.setdefault(trace.source, []).append(trace)
    return [
        [conversation(a), conversation(b)]
        for same in by_source.values()
        for a, b in zip(same[::2], same[1::2], strict=False)
    ]


# -- LangChain ---------------------------------------------------------------------------------


def langchain_scope(middleware: Any, request: Any) -> Any:
    """What the model's ``read_context`` call would read in now: since the change the middleware answers it
    (its conversation: the thread, else the run's own scope); before, the tool read in the thread (None: any)."""
    if hasattr(middleware, "_read"):
        return middleware._where(request)[1]
    from toolctx_langchain.tools import thread_of

    return thread_of()


class _Serving:
    """A middleware whose model hook notes, for the conversation it serves now, the scope of each call."""

    def __init__(self, middleware: Any) -> None:
        self.middleware = middleware
        self.conversation: Conversation | None = None
        self.hook = middleware.wrap_model_call
        middleware.wrap_model_call = self.wrap_model_call

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        assert self.conversation is not None
        self.conversation.scopes.append(langchain_scope(self.middleware, request))
        return self.hook(request, handler)


def run_langchain(groups: list[list[Conversation]]) -> None:
    import _replay_langchain as lc
    from langchain.agents import create_agent
    from langchain_core.messages import AnyMessage, HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from toolctx_langchain import ToolContextMiddleware

    for group in groups:
        serving = _Serving(ToolContextMiddleware())
        for conversation in group:
            serving.conversation = conversation
            trace = conversation.trace
            replay = lc._Replay(trace)
            agent = create_agent(
                lc.ScriptedChatModel(replay=replay),
                replay.tools(),
                system_prompt=trace.system or None,
                middleware=[serving.middleware],
                checkpointer=InMemorySaver() if conversation.thread is not None else None,
            )
            history: list[AnyMessage] = []
            for turn in trace.turns:
                if conversation.thread is not None:
                    config: Any = {"configurable": {"thread_id": conversation.thread}}
                    agent.invoke({"messages": [HumanMessage(turn.user)]}, config)
                else:  # no config at all: the client keeps the history and sends it back
                    history = agent.invoke({"messages": [*history, HumanMessage(turn.user)]})["messages"]
            if len(replay.inputs) != len(replay.replies):
                raise RuntimeError(
                    f"{trace.id}: {len(replay.inputs)} model calls, the recording has {len(replay.replies)}"
                )
            conversation.inputs = replay.inputs


# -- Agents SDK --------------------------------------------------------------------------------


def agents_scope(config: Any, session: toolctx.ContextSession) -> Any:
    """What the model's ``read_context`` call would read in now (called inside the run): since the change
    ``read_scope`` (the conversation, else the group, else the run); before, ``conversation_of`` (the group,
    else None: any). (``read_scope`` also tells the run its group, as the run's first tool call would.)"""
    from toolctx_openai_agents import tools

    context = SimpleNamespace(run_config=config)
    read_scope = getattr(tools, "read_scope", None)
    return read_scope(context, session) if read_scope is not None else tools.conversation_of(context)


async def _run_agents_group(group: list[Conversation], session: toolctx.ContextSession) -> None:
    import _replay_agents as sdk
    from agents import Agent, RunConfig, Runner, SQLiteSession
    from toolctx_openai_agents import compact_tool_outputs

    compact = compact_tool_outputs()  # one filter serves the group's conversations
    for conversation in group:
        trace = conversation.trace
        replay = sdk._Replay(trace, HookClock(), True)
        config = RunConfig(tracing_disabled=True, call_model_input_filter=compact, group_id=conversation.thread)
        record = replay.model.record

        def recording(
            *args: Any, conversation: Conversation = conversation, config: RunConfig = config, record: Any = record
        ) -> None:
            conversation.scopes.append(agents_scope(config, session))
            record(*args)

        replay.model.record = recording
        agent = Agent(name="replay", instructions=trace.system or None, model=replay.model, tools=replay.tools())
        history = SQLiteSession(trace.id)
        try:
            for index, turn in enumerate(trace.turns):
                replay.model.script.extend(replay.script(index))
                await Runner.run(agent, turn.user, session=history, run_config=config, max_turns=len(turn.steps) + 2)
        finally:
            history.close()
        if replay.model.script:
            raise RuntimeError(f"{trace.id}: {len(replay.model.script)} recorded model answers were not asked for")
        conversation.inputs = replay.inputs


def run_agents(groups: list[list[Conversation]]) -> None:
    session = toolctx.current_session()
    for group in groups:
        asyncio.run(_run_agents_group(group, session))


# -- measuring ---------------------------------------------------------------------------------


def shown_calls(trace: Trace, model_input: ModelInput) -> Iterator[tuple[int, str, str]]:
    """(position of the recorded call, part, the text shown) for every tool result, and every argument shown
    as a stand-in, in one model input: the k-th call made in the input is the session's k-th recorded call,
    and a result answers the latest call with its id."""
    calls = trace.calls
    made = 0
    latest: dict[str, int] = {}
    for unit in model_input.units:
        if unit.role == "assistant" and unit.calls:
            texts = [text for kind, text in unit.parts if kind == CALL_ARGUMENTS]
            for call_id, name, arguments in zip(unit.calls, texts[0::2], texts[1::2], strict=True):
                if made >= len(calls) or calls[made].name != name:
                    raise RuntimeError(f"{trace.id}: call {made} of a model input is {name}, not as recorded")
                latest[call_id] = made
                parsed = json.loads(arguments) if STAND_IN_MARK in arguments else {}
                for key, value in parsed.items() if isinstance(parsed, dict) else ():
                    if is_stand_in(value):
                        yield made, f"args.{key}", value
                made += 1
        elif unit.role == "tool" and unit.answers is not None:
            yield latest[unit.answers], "result", "".join(text for _, text in unit.parts)


def recorded(call: Call, part: str) -> str:
    return call.output if part == "result" else str(call.args.get(part[len("args.") :]))


def shows_one_of(stand_in: str, part: str, originals: Sequence[str]) -> bool:
    """Whether a stand-in states the size of one of ``originals`` and shows its start (the first 40
    characters of what it shows of it: the text after its first line, or an argument's ``Starts:``)."""
    first, _, body = stand_in.partition("\n")
    size = SIZE.search(first)
    probe = (body if part == "result" else first.partition(" Starts: ")[2])[:40]
    for original in originals:
        shown = original if part == "result" else original.replace("\n", " ")
        if size is not None and int(size.group(1).replace(",", "")) == len(original) and shown.startswith(probe):
            return True
    return False


def handles_shown(conversation: Conversation) -> set[str]:
    """Every handle its model was shown: of results, arguments and assistant-text markers."""
    found = set()
    for model_input in conversation.inputs:
        for _, _, text in shown_calls(conversation.trace, model_input):
            if is_stand_in(text):
                found.add(f"ctx:{handle_of(text)}")
        found.update(f"ctx:{handle_of(text)}" for text in text_stand_ins(model_input.units))
    return found


def material(trace: Trace) -> str:
    """Everything the recorded session holds, to tell its own text from another's."""
    parts = [trace.system, *(turn.user for turn in trace.turns), *recorded_texts(trace)]
    parts += [call.output for call in trace.calls]
    parts += [json.dumps(call.args, ensure_ascii=False) for call in trace.calls]
    parts += [str(value) for call in trace.calls for value in call.args.values()]
    return "\0".join(parts)


def distinctive(output: str, own: str) -> str | None:
    """The first window of ``output`` (from its start, by half windows) that ``own`` does not hold."""
    for start in range(0, max(1, len(output) - WINDOW + 1), WINDOW // 2):
        piece = output[start : start + WINDOW]
        if len(piece) >= SHORTEST and piece not in own:
            return piece
    return None


@dataclass
class Row:
    workload: str
    framework: str
    conversations: int = 0
    model_calls: int = 0
    handles: int = 0
    own: int = 0
    redacted: int = 0
    another: int = 0
    crossed_handles: int = 0
    unreadable: int = 0
    whole_not_own: int = 0
    text_not_own: int = 0
    leaking_inputs: int = 0
    outputs_checked: int = 0
    cross_read: int = 0
    cross_tried: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


Reading = tuple[str, str, int, Any]  # (handle, part, the recorded call's position, scope)


def measure(row: Row, conversations: list[Conversation], session: toolctx.ContextSession) -> None:
    """Fill ``row`` from the conversations of one workload (run in ``session``, still open)."""
    redactor = session.redactor
    redact: Callable[[str], str] = redactor.redact_text if redactor is not None else str
    owners: dict[str, list[str]] = {}  # output text -> the sessions and calls that recorded it (for the notes)
    for conversation in conversations:
        for k, call in enumerate(conversation.trace.calls):
            owners.setdefault(call.output, []).append(f"the output of {conversation.trace.id} call {k}")
    handles: set[str] = set()
    crossed: set[str] = set()
    for conversation in conversations:
        row.conversations += 1
        row.model_calls += len(conversation.inputs)
        readings = _read_back(row, conversation, session, redact)
        handles.update(handle for handle, _, _, _ in readings)
        crossed |= _judge(row, conversation, readings, redact, owners, session)
    row.handles = len(handles)
    row.crossed_handles = len(crossed)
    _measure_across(row, conversations, session)


def _read_back(
    row: Row, conversation: Conversation, session: toolctx.ContextSession, redact: Callable[[str], str]
) -> dict[Reading, str | None]:
    """Every stand-in of the conversation's model inputs read back in its model call's scope (once per handle,
    part, call and scope); on the way, whole results and stand-ins checked against their call's text."""
    trace, calls = conversation.trace, conversation.trace.calls
    if len(conversation.scopes) != len(conversation.inputs):
        raise RuntimeError(f"{trace.id}: {len(conversation.scopes)} scopes for {len(conversation.inputs)} calls")
    readings: dict[Reading, str | None] = {}
    whole_not_own: set[int] = set()
    text_not_own: set[tuple[int, str, str]] = set()
    for model_input, scope in zip(conversation.inputs, conversation.scopes, strict=True):
        for k, part, text in shown_calls(trace, model_input):
            expected = recorded(calls[k], part)
            if not is_stand_in(text):
                if part == "result" and text != expected and text != redact(expected):
                    whole_not_own.add(k)
                continue
            if not shows_one_of(text, part, (expected, redact(expected))):
                text_not_own.add((k, part, text))
            key = (f"ctx:{handle_of(text)}", part, k, scope)
            if key not in readings:
                readings[key] = read_back_text(read_context(session, key[0], 0, READ_ALL, part, scope=scope))
    row.whole_not_own += len(whole_not_own)
    row.text_not_own += len(text_not_own)
    for k, part, text in sorted(text_not_own)[:2]:
        row.notes.append(f"{trace.id}: the stand-in of call {k} ({part}) shows another text: {text[:160]!r}")
    return readings


def _judge(
    row: Row,
    conversation: Conversation,
    readings: dict[Reading, str | None],
    redact: Callable[[str], str],
    owners: dict[str, list[str]],
    session: toolctx.ContextSession,
) -> set[str]:
    """Count each reading as own call, as redacted, ANOTHER call or unreadable; the handles that crossed."""
    trace, calls = conversation.trace, conversation.trace.calls
    wrong: dict[tuple[str, str, Any, str], list[int]] = {}  # (handle, part, scope, text read) -> the calls
    unreadable: dict[tuple[str, str, int], list[Any]] = {}  # (handle, part, call) -> the scopes
    for (handle, part, k, scope), read in sorted(readings.items(), key=lambda item: (item[0][2], item[0][0])):
        expected = recorded(calls[k], part)
        if read is None:
            row.unreadable += 1
            unreadable.setdefault((handle, part, k), []).append(scope)
        elif read == expected:
            row.own += 1
        elif read == redact(expected):
            row.redacted += 1
        else:
            row.another += 1
            wrong.setdefault((handle, part, scope, read), []).append(k)

    def call(k: int) -> str:
        return f"{k} ({calls[k].name} {conversation.recorded_ids[k]!r})"

    for (handle, part, k), scopes in unreadable.items():
        stored = session.load_contexts([handle])
        row.notes.append(
            f"{trace.id}: {handle} ({part}) of call {call(k)} is unreadable in {len(scopes)} of its scopes, "
            f"{scopes[0]!r} first; it is stored under {stored[0].task_id if stored else 'nothing'!r}"
        )
    for (handle, part, scope, read), ks in wrong.items():
        more = f" and {len(ks) - 3} more" if len(ks) > 3 else ""
        whose = ", ".join(owners.get(read, ["a text no recorded call output"])[:2])
        row.notes.append(
            f"{trace.id}: {handle} ({part}, scope {scope!r}) stands for calls {', '.join(map(call, ks[:3]))}"
            f"{more}; it reads back {whose}"
        )
    return {handle for handle, _, _, _ in wrong}


def _measure_across(row: Row, conversations: list[Conversation], session: toolctx.ContextSession) -> None:
    """Other conversations' outputs in each conversation's model inputs; their handles read in its scope."""
    shown = {id(c): handles_shown(c) for c in conversations}
    for reader in conversations:
        own = material(reader.trace)
        texts: dict[str, list[int]] = {}  # each distinct text of its model inputs -> the calls it was in
        for n, model_input in enumerate(reader.inputs):
            for unit in model_input.units:
                if unit.role != "tools":
                    for _, text in unit.parts:
                        texts.setdefault(text, []).append(n)
        seen = "\0".join(texts)
        leaking: set[int] = set()
        scope = reader.scopes[-1] if reader.scopes else None
        for other in conversations:
            if other is reader:
                continue
            for k, call in enumerate(other.trace.calls):
                piece = distinctive(call.output, own)
                if piece is None:
                    continue
                row.outputs_checked += 1
                if piece in seen:
                    calls = sorted({n for text, ns in texts.items() if piece in text for n in ns})
                    leaking.update(calls)
                    row.notes.append(
                        f"{reader.trace.id}: model calls {calls[:5]} hold output text of {other.trace.id} call {k}"
                    )
            for handle in sorted(shown[id(other)]):
                row.cross_tried += 1
                if not read_context(session, handle, scope=scope).startswith(NOT_FOUND):
                    row.cross_read += 1
                    if row.cross_read <= 3:
                        row.notes.append(f"{reader.trace.id} (scope {scope!r}) reads {handle} of {other.trace.id}")
        row.leaking_inputs += len(leaking)


# -- running -----------------------------------------------------------------------------------


def run(name: str, framework: str, traces: Sequence[Trace]) -> Row:
    """One workload through one framework, all its conversations in one toolctx session."""
    started = time.perf_counter()
    row = Row(WORKLOADS[name], FRAMEWORKS[framework])
    groups = workload(name, traces, framework)
    conversations = [conversation for group in groups for conversation in group]
    with tempfile.TemporaryDirectory() as tmp, toolctx.session(tmp) as session:
        (run_langchain if framework == "langchain" else run_agents)(groups)
        measure(row, conversations, session)
    row.seconds = time.perf_counter() - started
    return row


def render(rows: Sequence[Row]) -> str:
    out = [
        "| workload | framework | conversations | model calls | stand-ins shown (handles) "
        "| read back: own call / as redacted / ANOTHER call / unreadable | handles crossed "
        "| stand-ins / whole results not showing their call's text | inputs with another conversation's text (checked) "
        "| other conversations' handles read (reads) | seconds |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r.workload} | {r.framework} | {r.conversations} | {r.model_calls:,} | {r.handles:,} "
            f"| {r.own:,} / {r.redacted:,} / {r.another:,} / {r.unreadable:,} | {r.crossed_handles:,} "
            f"| {r.text_not_own:,} / {r.whole_not_own:,} | {r.leaking_inputs:,} ({r.outputs_checked:,}) "
            f"| {r.cross_read:,} ({r.cross_tried:,}) | {r.seconds:,.1f} |"
        )
    for r in rows:
        if r.notes:
            out += ["", f"{r.workload}, {r.framework}: {len(r.notes)} findings, the first 10:"]
            out += [f"- {note}" for note in r.notes[:10]]
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES, help="the trace file (JSON lines)")
    parser.add_argument("--limit", type=int, default=6, help="the first N sessions of each source")
    parser.add_argument("--framework", choices=[*FRAMEWORKS, "both"], default="both")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    traces = load_traces(args.traces, (), args.limit)
    if not traces:
        raise SystemExit(f"no sessions in {args.traces}")
    frameworks = list(FRAMEWORKS) if args.framework == "both" else [args.framework]
    rows = []
    for framework in frameworks:
        for name in WORKLOADS:
            rows.append(run(name, framework, traces))
            print(f"{rows[-1].workload}, {framework}: {rows[-1].seconds:,.0f} s", file=sys.stderr, flush=True)
    print(render(rows))
    print(
        f"toolctx from {Path(toolctx.__file__).resolve().parent}; {len(traces)} sessions, "
        f"{', '.join(frameworks)}; {time.perf_counter() - started:,.0f} s."
    )


if __name__ == "__main__":
    main()
