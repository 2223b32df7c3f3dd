"""The README example and the examples/ scripts run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TOOLCTX_CONTEXT_DIR": str(tmp_path / "ctx"), "TMPDIR": str(tmp_path)}
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, check=True, cwd=tmp_path)


def test_quickstart_stores_selects_loads_and_cleans_up(tmp_path: Path) -> None:
    out = run([str(ROOT / "examples" / "quickstart.py")], tmp_path).stdout
    assert "Stored 4 tool outputs" in out
    assert re.search(r"\[disk: read_file_[0-9a-f]{16}_\d+_\d+_[0-9a-f]{6}\.json\]", out)
    assert "[memory]" in out
    assert "manifest.jsonl" in out
    assert "Selected for the answer: ctx:" in out
    assert re.search(r"Loaded 'read [a-z_/]+\.py' back in full", out)
    assert "exists afterwards? False" in out
    assert "Pointers left: 0" in out
    assert list(tmp_path.iterdir()) == []  # its temporary context directory is gone too


def test_readme_example_runs_as_written(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    code = re.search(r"## Ten lines\n\n```python\n(.*?)```", readme, re.S)
    assert code is not None
    out = run(["-c", code.group(1)], tmp_path)
    assert out.stdout.splitlines() == [
        "['rotate api keys result 0', 'rotate api keys result 1', "
        "'rotate api keys result 2', 'rotate api keys result 3', "
        "'rotate api keys result 4']"
    ]
    assert out.stderr == ""
    ctx = tmp_path / "ctx"
    assert not ctx.exists() or list(ctx.rglob("*")) == []
