"""``bench/redaction_false_positives.py --tree``: the text files of a folder, redacted as an agent's read-backs are."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

from redaction_false_positives import tree_parts  # noqa: E402


def test_a_tree_is_read_file_by_file_text_only(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "settings.yaml").write_text("db:\n  password: hunter\n")
    (tmp_path / "pkg" / "code.py").write_text("if not password: return\n")
    (tmp_path / "pkg" / "blob.bin").write_bytes(b"password: hunter\n")  # (not a text suffix)
    (tmp_path / "pkg" / "latin.txt").write_bytes(b"caf\xe9")  # (not UTF-8: skipped)
    (tmp_path / "link.py").symlink_to(tmp_path / "pkg" / "code.py")
    assert [(s, text) for s, _, text in tree_parts(tmp_path)] == [
        (".py", "if not password: return\n"),
        (".yaml", "db:\n  password: hunter\n"),
    ]


def test_the_report_of_a_tree_lists_what_it_redacted(tmp_path: Path) -> None:
    (tmp_path / "settings.yaml").write_text("db:\n  password: hunter\n")
    (tmp_path / "code.py").write_text("if not password: return\n")
    done = subprocess.run(
        [sys.executable, str(BENCH / "redaction_false_positives.py"), "--tree", str(tmp_path), "--show"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "| .yaml | files | key:password | 1 |" in done.stdout, done.stdout
    assert "| .yaml | files | 'hunter' | 1 |" in done.stdout, done.stdout
    assert ".py |" not in done.stdout, done.stdout  # (the condition is no secret: nothing redacted there)


def test_a_tree_that_is_no_folder_is_refused_by_name(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "redaction_false_positives.py"), "--tree", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "is not a folder" in done.stderr
