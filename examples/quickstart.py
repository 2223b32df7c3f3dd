"""toolctx quickstart: an offline, scripted agent exploring a folder with three real tools.

The "agent" answers a question about a code base by listing files, searching them
and reading the promising ones, exactly as a model-driven loop would, but with its
steps scripted so the example runs anywhere without an API key. toolctx stores
every tool output; at answer time the agent selects the relevant outputs, loads
them back, and when the session ends everything is cleaned up.

Run it with ``make demo`` or ``python examples/quickstart.py [FOLDER]``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import toolctx
from toolctx import persist_context, session


@persist_context
def list_files(folder: str, pattern: str = "*.py") -> list[str]:
    """List files under a folder."""
    return sorted(str(p.relative_to(folder)) for p in Path(folder).rglob(pattern))


@persist_context
def search_files(folder: str, text: str) -> list[dict[str, object]]:
    """Find lines containing a text, case-insensitively."""
    hits: list[dict[str, object]] = []
    needle = text.lower()
    for path in sorted(Path(folder).rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if needle in line.lower():
                hits.append({"file": str(path.relative_to(folder)), "line": number, "text": line.strip()})
    return hits


@persist_context(description="read {path}")
def read_file(folder: str, path: str) -> str:
    """Read a whole file."""
    return (Path(folder) / path).read_text(encoding="utf-8")


def main(folder: str) -> None:
    question = "Where does toolctx decide whether a result stays in memory or goes to disk?"
    with tempfile.TemporaryDirectory(prefix="toolctx-demo-") as context_dir:
        # Results of 16 KiB or more go to disk here (32 KiB by default), so both kinds show up.
        with session(context_dir, threshold=16 * 1024) as s:
            print(f"Question: {question}\n")
            with s.query(question):
                files = list_files(folder)
                print(f"list_files -> {len(files)} files")
                hits = search_files(folder, "threshold")
                print(f"search_files('threshold') -> {len(hits)} matching lines")
                ranked = sorted({str(h["file"]) for h in hits}, key=lambda f: -sum(h["file"] == f for h in hits))
                for path in ranked[:2]:
                    text = read_file(folder, path)
                    print(f"read_file({path!r}) -> {len(text):,} characters")

            print(f"\nStored {len(s)} tool outputs in session {s.session_id}:")
            for p in s.get_all_pointers():
                place = f"disk: {p.filename}" if p.filepath else "memory"
                print(f"  {p.handle:<14} {p.size:>7,} B  {p.tool_description:<38} [{place}]")
            on_disk = sorted(f.name for f in s.session_dir.iterdir()) if s.session_dir.exists() else []
            print(f"\nFiles under {s.session_dir}:\n  " + "\n  ".join(on_disk))

            selected = s.select_relevant_contexts("read sessions threshold memory", k=2)
            print("\nSelected for the answer:", ", ".join(f"{p.handle} ({p.tool_description})" for p in selected))
            best = s.load_contexts(selected[:1])[0]
            source = str(best.result)
            print(f"Loaded {best.tool_description!r} back in full ({len(source):,} characters); it mentions:")
            mentions = [(n, t.strip()) for n, t in enumerate(source.splitlines(), 1) if "threshold" in t]
            for number, text in mentions[:3]:
                print(f"  line {number}: {text}")

            session_dir = s.session_dir
        print(f"\nSession ended: {session_dir} exists afterwards? {session_dir.exists()}")
        print(f"Pointers left: {len(s)}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(Path(toolctx.__file__).parent))
