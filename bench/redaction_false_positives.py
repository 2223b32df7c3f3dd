"""What redaction removes from real sessions, and how much of it was no secret at all.

    python bench/redaction_false_positives.py [--traces ../shared/traces/dev.jsonl] [--show]

Runs the default redactor over every tool output, tool-call argument and assistant text
(each step's text and each turn's closing reply) of the trace file, the way a session
stores them: a value under a secret key of a JSON object is replaced whole, text goes
through the assignment rules and the secret formats. For each redaction it notes the rule
that made it and the value it removed, and sorts the value into a kind by the patterns
kept below (:data:`KINDS`): a format string or template field, a masked value, a dummy
value, a value that names a secret, the alphabet, the text after a closing quote, or none
of these ("secret or unclassified"). The kinds are judged from the removed value and the
few characters before it, never from which session it came from, so the same list
classifies the figures of any version of the redactor: run it with ``PYTHONPATH``
pointing at another checkout to compare.

Prints, per source of sessions, redactions by rule and by part, and by kind; ``--show``
lists each distinct value of the unclassified kind with its count, to audit by hand.

``--tree DIR`` reads the text files under ``DIR`` instead (sources, configuration, docs:
the suffixes in :data:`TEXT_SUFFIXES`, each file as one text, at most 400 KB), the source
being the file's suffix: code and configuration that ordinary agents read back, such as an
installed package tree, where every redaction of the unclassified kind is worth a look.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

import toolctx
from toolctx.redaction import Redactor, default_redactor

DEFAULT_TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces" / "dev.jsonl"
UNCLASSIFIED = "secret or unclassified"

# Dummy words of tests and docs, and the words that name a secret (a value made of these only).
_DUMMY = (
    "test tests testing dummy fake example sample placeholder mock demo changeme change me secret secrets password "
    "passwd pass pw pwd token key api auth value something foo bar baz dev default your my here hashed hash"
)
_DUMMY_WORDS = frozenset(_DUMMY.split())
_FIELD = re.compile(r"%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[sdrifgxXeEcu]|\{[^{}]*\}|\$\{|\$\(|\$[A-Z_]|<[^<>]+>")
_MASKED = re.compile(r"(?i)x{4,}|\*{3,}|•{3,}|^(.)\1*$")
_NAMES_A_SECRET = re.compile(r"(?i)^[a-z_\-.]*(?:secret|password|passwd|token|key)[_\-]?\d*$")
_WORDS = re.compile(r"[A-Za-z]+|\d+")


def _dummy(value: str) -> bool:
    words = _WORDS.findall(re.sub(r"(?<=[a-z])(?=[A-Z])", " ", value))
    letters = [w.lower() for w in words if not w.isdigit()]
    return bool(letters) and all(_spelled(w) for w in letters) and all(len(w) <= 4 for w in words if w.isdigit())


def _spelled(word: str) -> bool:
    ends = {0}
    for end in range(1, len(word) + 1):
        if any(start in ends and word[start:end] in _DUMMY_WORDS for start in range(end)):
            ends.add(end)
    return len(word) in ends


KINDS: list[tuple[str, Callable[[str, str], bool]]] = [
    ("format string or template field", lambda value, before: _FIELD.search(value) is not None),
    ("masked", lambda value, before: _MASKED.search(value) is not None),
    ("after a closing quote", lambda value, before: before.endswith(('"', "'")) and value[:1] in " ),;+]}"),
    ("dummy value", lambda value, before: _dummy(value)),
    ("names a secret", lambda value, before: _NAMES_A_SECRET.match(value) is not None),
    ("the alphabet", lambda value, before: len(value) >= 6 and value.lower() in "abcdefghijklmnopqrstuvwxyz"),
]
"""The kinds of value that are no secret, each judged from the removed value and the characters before it."""


def kind_of(value: str, before: str) -> str:
    for kind, test in KINDS:
        if test(value.strip(), before):
            return kind
    return UNCLASSIFIED


def parts(path: Path) -> Iterator[tuple[str, str, Any]]:
    """(source, part, value) for every output, argument set and assistant text of the trace file."""
    with path.open("rb") as lines:
        for line in lines:
            session = orjson.loads(line)
            source = session["source"]
            for turn in session["turns"]:
                for step in turn["steps"]:
                    yield source, "assistant texts", step.get("text") or ""
                    for call in step["calls"]:
                        yield source, "arguments", call["args"]
                        yield source, "outputs", call["output"]
                yield source, "assistant texts", turn.get("final") or ""


TEXT_SUFFIXES = (".py", ".pyi", ".yaml", ".yml", ".cfg", ".ini", ".toml", ".md", ".rst", ".txt", ".conf", ".env")
_LARGEST = 400_000  # bytes of a file read (larger ones are data, not what an agent reads whole)


def tree_parts(root: Path) -> Iterator[tuple[str, str, Any]]:
    """(suffix, "files", text) for every text file under ``root`` (links not followed), in path order."""
    for path in sorted(root.rglob("*")):
        if path.suffix not in TEXT_SUFFIXES or path.is_symlink() or not path.is_file():
            continue
        try:
            if path.stat().st_size > _LARGEST:
                continue
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        yield path.suffix, "files", text


def redactions(redactor: Redactor, value: Any) -> Iterator[tuple[str, str, str]]:
    """(rule, removed value, the 3 characters before it) for each redaction in ``value``."""
    if isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
        found = redactor._prefilter.found(data)
        for rule in redactor._rules_for(found):
            for start, end in redactor._spans(data, [rule], None):
                yield (
                    rule.name,
                    data[start:end].decode(errors="replace"),
                    data[max(0, start - 3) : start].decode(errors="replace"),
                )
    elif isinstance(value, dict):
        for key, item in value.items():
            if item is not None and redactor.is_secret_key(key):
                yield "key (JSON)", orjson.dumps(item).decode(), ""
            else:
                yield from redactions(redactor, item)
    elif isinstance(value, list):
        for item in value:
            yield from redactions(redactor, item)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--tree", type=Path, help="read the text files under this folder instead of the traces")
    parser.add_argument("--show", action="store_true", help="list each unclassified value with its count")
    options = parser.parse_args()
    if options.tree is not None and not options.tree.is_dir():
        parser.error(f"--tree {str(options.tree)!r} is not a folder")
    redactor = default_redactor()
    by_rule: Counter[tuple[str, str, str]] = Counter()
    by_kind: Counter[tuple[str, str, str]] = Counter()
    unclassified: Counter[tuple[str, str, str]] = Counter()
    for source, part, value in tree_parts(options.tree) if options.tree is not None else parts(options.traces):
        for rule, removed, before in redactions(redactor, value):
            kind = kind_of(removed, before)
            by_rule[source, part, rule] += 1
            by_kind[source, part, kind] += 1
            if kind == UNCLASSIFIED:
                unclassified[source, part, removed] += 1
    print(f"redactor: {Path(toolctx.__file__).parent}\n")
    print("| source | part | rule | redactions |\n|---|---|---|---:|")
    for (source, part, rule), count in sorted(by_rule.items()):
        print(f"| {source} | {part} | {rule} | {count:,} |")
    print("\n| source | part | kind | redactions |\n|---|---|---|---:|")
    for (source, part, kind), count in sorted(by_kind.items()):
        print(f"| {source} | {part} | {kind} | {count:,} |")
    print("\n| source | part | redactions | of them no secret (a kind above) |\n|---|---|---:|---:|")
    totals: Counter[tuple[str, str]] = Counter()
    false: Counter[tuple[str, str]] = Counter()
    for (source, part, kind), count in by_kind.items():
        totals[source, part] += count
        false[source, part] += 0 if kind == UNCLASSIFIED else count
    for key in sorted(totals):
        print(f"| {key[0]} | {key[1]} | {totals[key]:,} | {false[key]:,} |")
    if options.show:
        print("\n| source | part | unclassified value | count |\n|---|---|---|---:|")
        for (source, part, removed), count in sorted(unclassified.items()):
            print(f"| {source} | {part} | {removed[:60]!r} | {count:,} |")


if __name__ == "__main__":
    main()
