"""Replay real coding sessions into the tiered memory and measure what its working set keeps.

    python bench/memory_replay.py TRACES.jsonl [--hours 4 --hours 48] [--window 64000]
        [--decay-steps 32] [--decay-days 7] [--sweep] [--steps-out steps.jsonl]

Every session of TRACES.jsonl whose tool is a shell (``bash``) is one agent. Its task
(the first user message) is saved as TASK; each shell call becomes the memory work a
coding agent would do with it:

- a file view (``cat``, ``sed -n``, ``head``, ``tail``, ``nl``, ``grep`` on one file) or a
  file written (a heredoc, ``sed -i``) is the file's CODE item: saved the first time,
  used (and its content replaced by the new view) every time after;
- a run of a script or of the tests (``python``, ``pytest``) is a TEST_RESULT if it
  succeeded and an ERROR if it failed (non-zero exit, a traceback); running the same
  command again uses that item;
- anything else (``ls``, ``find``, ``grep -r``, ``git``) is not remembered.

The session's model calls are spread evenly over a simulated clock of ``--hours``
(4 and 48 by default: the same work in four hours and over two days). Before each
model call the replay runs ``store.before_model_call(agent, working-set tokens,
--window)`` (re-tiering, and a flash save at 80 % of the window), then records:

- the working set's tokens (what the memory holds in context) against everything
  saved so far (what keeping everything would hold);
- whether the task is HOT;
- of the items this step's calls then use (items that exist already), how many are
  HOT or WARM at that moment: the items the agent touches next.

Reported per clock: the mean over all steps of the working set's share of
everything (the seed's "average context size"), the same weighted by tokens, the
share of steps with the task HOT, and the share of next-touched items in HOT or WARM.
``--steps-out`` writes every step's record as JSON lines. ``--sweep`` repeats the
replay over a grid of decay constants, which is how the defaults were chosen.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import statistics
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from toolctx.memory import AgentMemory, ImportanceScorer, MemoryConfig, MemoryStore, Tier

START = 1_800_000_000.0
_VIEWERS = {"cat", "head", "tail", "nl", "sed", "grep", "less", "more", "awk"}
_PREFIX = re.compile(r"^\s*cd\s+\S+\s*&&\s*")
_RETURNCODE = re.compile(r"<returncode>(-?\d+)</returncode>")
_FAILED = re.compile(r"Traceback \(most recent call last\)|^\w*Error\b|^FAILED|\bfailed\b", re.MULTILINE)


class Clock:
    """Simulated UNIX seconds, moved by the replay only."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


@dataclass(frozen=True)
class Action:
    """What one shell call means for the memory: an item key, its type and its new content."""

    key: str
    item_type: str
    content: str


def _paths(words: list[str]) -> list[str]:
    return [w for w in words if not w.startswith("-") and ("/" in w or re.search(r"\.\w{1,5}$", w)) and "*" not in w]


def _normal_path(path: str) -> str:
    return re.sub(r"^(\./|/testbed/)", "", path)


def classify(command: str, output: str) -> Action | None:
    """The memory action of one shell call, or None for calls a coding agent would not remember."""
    command = _PREFIX.sub("", command.strip())
    body = output
    code_match = _RETURNCODE.search(output)
    returncode = int(code_match.group(1)) if code_match else 0
    first_line = command.splitlines()[0] if command else ""
    heredoc = re.match(r"cat\s*>\s*(\S+)\s*<<", first_line)
    if heredoc:
        return Action("file:" + _normal_path(heredoc.group(1)), "CODE", command)
    try:
        words = shlex.split(first_line.split("|")[0])
    except ValueError:
        return None
    if not words:
        return None
    program = words[0]
    if program in ("python", "python3", "pytest") or "pytest" in words[:3]:
        failed = returncode != 0 or _FAILED.search(body) is not None
        key = "run:" + re.sub(r"\s*2>&1.*$", "", first_line)
        return Action(key, "ERROR" if failed else "TEST_RESULT", body)
    if program in _VIEWERS and "-r" not in words and "-R" not in words:
        files = _paths(words[1:])
        if len(files) == 1:
            return Action("file:" + _normal_path(files[0]), "CODE", body)
    return None


@dataclass
class Session:
    id: str
    task: str
    steps: list[list[Action]] = field(default_factory=list)


def coding_sessions(path: Path) -> Iterator[Session]:
    """The sessions whose tool calls are shell commands, as memory actions per model call."""
    with path.open() as lines:
        for line in lines:
            trace = json.loads(line)
            calls = [c for t in trace["turns"] for s in t["steps"] for c in s["calls"]]
            if not calls or any(c["name"] != "bash" for c in calls):
                continue
            session = Session(trace["id"], trace["turns"][0]["user"])
            for turn in trace["turns"]:
                for step in turn["steps"]:
                    actions = (classify(str(c["args"].get("command", "")), c["output"]) for c in step["calls"])
                    session.steps.append([a for a in actions if a is not None])
            yield session


def replay(session: Session, hours: float, window: int, scorer: ImportanceScorer) -> list[dict[str, Any]]:
    """One session on a clock of ``hours``; a record per model call."""
    clock = Clock()
    gap = hours * 3600.0 / max(len(session.steps), 1)
    records = []
    with MemoryStore("sqlite://", config=MemoryConfig(clock=clock, scorer=scorer)) as store:
        agent = store.agent("agent")
        task_id = agent.save("TASK", session.task).id
        known: dict[str, int] = {}
        for number, actions in enumerate(session.steps):
            clock.now += gap
            flash = store.before_model_call("agent", agent.stats().working_tokens, window)
            stats = agent.stats()
            touched = sorted({known[a.key] for a in actions if a.key in known})
            tiers = [agent.get(item_id).tier for item_id in touched]
            records.append(
                {
                    "session": session.id,
                    "step": number,
                    "working_tokens": stats.working_tokens,
                    "all_tokens": stats.total_tokens,
                    "task_hot": agent.get(task_id).tier is Tier.HOT,
                    "touched": len(touched),
                    "touched_hot_or_warm": sum(t in (Tier.HOT, Tier.WARM) for t in tiers),
                    "flash_saved": flash is not None,
                }
            )
            _apply(agent, actions, known)
    return records


def _apply(agent: AgentMemory, actions: list[Action], known: dict[str, int]) -> None:
    for action in actions:
        item_id = known.get(action.key)
        if item_id is None:
            known[action.key] = agent.save(action.item_type, action.content).id
        elif agent.get(item_id).content != action.content:
            agent.update(item_id, action.content)
        else:
            agent.use([item_id])


def summarise(records: list[dict[str, Any]]) -> dict[str, float]:
    shares = [r["working_tokens"] / r["all_tokens"] for r in records if r["all_tokens"]]
    touched = sum(r["touched"] for r in records)
    return {
        "steps": len(records),
        "mean_working_share": statistics.fmean(shares),
        "token_weighted_share": sum(r["working_tokens"] for r in records) / sum(r["all_tokens"] for r in records),
        "task_hot_share": sum(r["task_hot"] for r in records) / len(records),
        "touched": touched,
        "next_touched_hot_or_warm": sum(r["touched_hot_or_warm"] for r in records) / max(touched, 1),
        "flash_saves": sum(r["flash_saved"] for r in records),
    }


def run(
    sessions: list[Session], hours: float, window: int, scorer: ImportanceScorer, sink: Callable[[Any], None]
) -> dict[str, float]:
    records = []
    for session in sessions:
        for record in replay(session, hours, window, scorer):
            sink({**record, "hours": hours})
            records.append(record)
    return summarise(records)


def line(hours: float, scorer: ImportanceScorer, result: dict[str, float]) -> str:
    return (
        f"| {hours:g} h | {scorer.decay_steps:g} | {scorer.decay_days:g} | {scorer.access_factor:g} "
        f"| {result['steps']:,} "
        f"| {1 - result['mean_working_share']:.1%} | {1 - result['token_weighted_share']:.1%} "
        f"| {result['task_hot_share']:.1%} | {result['next_touched_hot_or_warm']:.1%} ({result['touched']:,}) "
        f"| {result['flash_saves']} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", type=Path)
    parser.add_argument("--hours", type=float, action="append", help="simulated session length (repeatable)")
    parser.add_argument("--window", type=int, default=64_000, help="model window in tokens (deepseek-chat: 64k)")
    parser.add_argument("--decay-steps", type=float, default=ImportanceScorer().decay_steps)
    parser.add_argument("--decay-days", type=float, default=ImportanceScorer().decay_days)
    parser.add_argument("--access-factor", type=float, default=ImportanceScorer().access_factor)
    parser.add_argument("--sweep", action="store_true", help="a grid of decay constants instead of one")
    parser.add_argument("--steps-out", type=Path, help="write every step's record here (JSON lines)")
    args = parser.parse_args()
    if not args.traces.is_file():
        parser.error(f"{args.traces} is not a file; pass the path of a traces .jsonl file")
    sessions = list(coding_sessions(args.traces))
    if not sessions:
        parser.error(f"{args.traces} holds no session whose tool is bash")
    hours = args.hours or [4.0, 48.0]
    grid = (
        [(s, args.decay_days, a) for s in (8, 12, 16, 24, 32) for a in (0.1, 0.3, 0.6)]
        if args.sweep
        else [(args.decay_steps, args.decay_days, args.access_factor)]
    )
    out = args.steps_out.open("w") if args.steps_out else None

    def sink(record: Any) -> None:
        if out is not None:
            out.write(json.dumps(record) + "\n")

    print(
        f"{len(sessions)} coding sessions, {sum(len(s.steps) for s in sessions):,} model calls, window {args.window:,}"
    )
    print(
        "| clock | decay_steps | decay_days | access_factor | steps | working set smaller (mean) "
        "| (token-weighted) | task HOT | next-touched HOT/WARM (items) | flash saves |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for decay_steps, decay_days, access_factor in grid:
        scorer = ImportanceScorer(decay_steps=decay_steps, decay_days=decay_days, access_factor=access_factor)
        for clock_hours in hours:
            print(line(clock_hours, scorer, run(sessions, clock_hours, args.window, scorer, sink)), flush=True)
    if out is not None:
        out.close()


if __name__ == "__main__":
    main()
