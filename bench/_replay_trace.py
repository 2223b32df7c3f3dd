"""Recorded agent sessions, as the replay reads them: turns, steps, tool calls and their outputs.

The trace format (one JSON object a line) is described in the README next to the
trace file: ``{"id", "source", "system", "turns": [{"user", "steps": [{"text",
"calls": [{"id", "name", "args", "output"}]}], "final"}]}``. A ``final`` of null is a
turn that ended on a tool result: the replay answers the model call after it with
an empty reply and leaves that call out of the token figures (it was never made).
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Call", "OutputBook", "Step", "Trace", "Turn", "args_schemas", "load_traces", "read_traces"]


@dataclass(frozen=True)
class Call:
    id: str
    name: str
    args: dict[str, Any]
    output: str


@dataclass(frozen=True)
class Step:
    text: str
    calls: tuple[Call, ...]


@dataclass(frozen=True)
class Turn:
    user: str
    steps: tuple[Step, ...]
    final: str | None


@dataclass(frozen=True)
class Trace:
    id: str
    source: str
    system: str
    turns: tuple[Turn, ...]

    @property
    def calls(self) -> list[Call]:
        return [call for turn in self.turns for step in turn.steps for call in step.calls]

    @property
    def tool_names(self) -> list[str]:
        """The recorded tool names, in order of first use."""
        return list(dict.fromkeys(call.name for call in self.calls))


def recorded_texts(trace: Trace) -> set[str]:
    """Every assistant text the recorded session holds (the steps' texts and the turns' final answers)."""
    texts = {step.text for turn in trace.turns for step in turn.steps if step.text}
    return texts | {turn.final for turn in trace.turns if turn.final}


def read_traces(records: Iterable[dict[str, Any]]) -> Iterator[Trace]:
    """Traces from decoded JSON records (a missing text or user message is empty)."""
    for record in records:
        yield Trace(
            id=str(record["id"]),
            source=str(record["source"]),
            system=record.get("system") or "",
            turns=tuple(
                Turn(
                    user=turn.get("user") or "",
                    steps=tuple(
                        Step(
                            text=step.get("text") or "",
                            calls=tuple(
                                Call(str(c["id"]), str(c["name"]), dict(c.get("args") or {}), str(c["output"]))
                                for c in step["calls"]
                            ),
                        )
                        for step in turn["steps"]
                    ),
                    final=turn.get("final"),
                )
                for turn in record["turns"]
            ),
        )


def load_traces(path: Path, sources: Iterable[str] = (), limit: int | None = None) -> list[Trace]:
    """The traces in ``path``, of the given sources (all when empty), at most ``limit`` of each source."""
    wanted = set(sources)
    taken: dict[str, int] = defaultdict(int)
    traces = []
    with path.open(encoding="utf-8") as lines:
        for trace in read_traces(json.loads(line) for line in lines if line.strip()):
            if wanted and trace.source not in wanted:
                continue
            if limit is not None and taken[trace.source] >= limit:
                continue
            taken[trace.source] += 1
            traces.append(trace)
    return traces


_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array", dict: "object"}


def args_schemas(trace: Trace) -> dict[str, dict[str, Any]]:
    """A permissive JSON schema per tool: every argument name seen, typed as seen, none required."""
    seen: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for call in trace.calls:
        types_of = seen[call.name]
        for key, value in call.args.items():
            types_of[key].add("null" if value is None else _JSON_TYPES.get(type(value), "string"))
    schemas = {}
    for name in trace.tool_names:
        properties = {
            key: {"type": sorted(types)[0] if len(types) == 1 else sorted(types)} for key, types in seen[name].items()
        }
        schemas[name] = {"type": "object", "properties": properties, "additionalProperties": True}
    return schemas


def _args_key(name: str, args: Any) -> str:
    return name + "\0" + json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


class OutputBook:
    """The recorded output of each call, found by call id or, where a framework does not pass
    the id to the tool, by tool name and arguments (repeated calls get their outputs in order)."""

    def __init__(self, trace: Trace) -> None:
        self.by_id = {call.id: call.output for call in trace.calls}
        self._by_args: dict[str, deque[str]] = defaultdict(deque)
        for call in trace.calls:
            self._by_args[_args_key(call.name, call.args)].append(call.output)

    def by_call_id(self, call_id: str) -> str:
        return self.by_id[call_id]

    def by_args(self, name: str, args: Any) -> str:
        outputs = self._by_args.get(_args_key(name, args))
        if not outputs:
            raise LookupError(f"no recorded output left for {name}({args!r:.200})")
        return outputs.popleft()
