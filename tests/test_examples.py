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
    assert re.search(r"\[disk: read_file_[0-9a-f]{16}_\d+_\d+_[0-9a-z]{10}\.json\]", out)
    assert "[memory]" in out
    assert "session.lock" in out  # the lock that tells a live session from an orphan
    assert "Selected for the answer: ctx:" in out
    assert re.search(r"Loaded 'read [a-z_/]+\.py' back in full", out)
    assert "exists afterwards? False" in out
    assert "Pointers left: 0" in out
    assert list(tmp_path.iterdir()) == []  # its temporary context directory is gone too


def test_readme_own_loop_example_prints_the_stored_result_and_cleans_up(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    code = re.search(r"## Your own loop\n.*?```python\n(.*?)```", readme, re.S)
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


def test_the_framework_examples_store_stand_in_read_back_and_clean_up(tmp_path: Path) -> None:
    for script in ("langchain_agent.py", "openai_agents_agent.py"):
        out = run([str(ROOT / "examples" / script)], tmp_path).stdout
        assert "sales_report returned 51,960 characters; toolctx stored them as ctx:" in out
        assert re.search(r"on disk: sales_report_[0-9a-f]{16}_\d+_\d+_[0-9a-z]{10}\.json", out)
        assert "What the model saw instead (2," in out
        assert "[toolctx stand-in]" in out
        assert "The model called read_context and got:" in out
        assert "characters 0-400 of 51,960" in out
        assert "Answer: Region 0 made 1001 k€ in January 2026." in out
        assert "exists afterwards? False" in out
        assert list(tmp_path.iterdir()) == []


BLOCK = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {blocked!r}:
            raise ImportError(f"No module named {{name!r}}")
sys.meta_path.insert(0, Block())
import toolctx
try:
    import {adapter}
except ImportError as exc:
    print("ImportError:", exc)
"""


def test_adapters_without_their_framework_name_the_extra_to_install(tmp_path: Path) -> None:
    for adapter, blocked, extra in [
        ("toolctx_langchain", {"langchain", "langchain_core"}, "toolctx[langchain]"),
        ("toolctx_openai_agents", {"agents"}, "toolctx[openai-agents]"),
        ("toolctx.memory", {"sqlalchemy"}, "toolctx[memory]"),
        ("toolctx.server", {"fastapi"}, "toolctx[server]"),
    ]:
        out = run(["-c", BLOCK.format(adapter=adapter, blocked=blocked)], tmp_path).stdout
        assert out.startswith("ImportError:")
        assert f"pip install '{extra}'" in out


def test_a_postgresql_store_without_psycopg_names_the_extra(tmp_path: Path) -> None:
    script = BLOCK.format(adapter="toolctx.memory", blocked={"psycopg"}) + (
        "try:\n"
        "    toolctx.memory.MemoryStore('postgresql://nobody@127.0.0.1:1/none')\n"
        "except ImportError as exc:\n"
        "    print('ImportError:', exc)\n"
    )
    out = run(["-c", script], tmp_path).stdout
    assert out.startswith("ImportError:")
    assert "pip install 'toolctx[postgres]'" in out


def test_the_fresh_context_example_builds_validates_and_clears_a_context_for_this_repository(tmp_path: Path) -> None:
    before = sorted(p.name for p in ROOT.iterdir())
    out = run([str(ROOT / "examples" / "fresh_context.py")], tmp_path).stdout
    assert re.search(r"Tokens: [\d,]+ of 40,000 \(reserve 10,000\)", out)  # a quarter of a small budget
    assert "Conversation history: []" in out
    assert "  file  toolctx/fresh/_truncate.py (task, " in out
    assert "Valid: True" in out
    assert "Warning: task file 'docs/no-such-file.md' named by the task does not exist; left out" in out
    assert "Messages for the model: ['system', 'user'], first user line: '## Task'" in out
    assert "Active contexts after the task: 0" in out
    assert sorted(p.name for p in ROOT.iterdir()) == before


def test_the_assembler_examples_execute_the_plan_within_the_budget(tmp_path: Path) -> None:
    for script, offline in (
        ("assembly_openai_loop.py", "No OPENAI_API_KEY: running against a scripted client, offline."),
        ("assembly_langchain.py", "No MODEL: running with a scripted chat model, offline."),
    ):
        env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "MODEL")}
        env.update(TOOLCTX_CONTEXT_DIR=str(tmp_path / "ctx"), TMPDIR=str(tmp_path))
        out = subprocess.run(
            [sys.executable, str(ROOT / "examples" / script)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=tmp_path,
        ).stdout
        assert out.splitlines()[0] == offline
        used = [int(n.replace(",", "")) for n in re.findall(r"Model call: ([\d,]+) of 1,600 tokens", out)]
        assert len(used) == 5
        assert max(used) <= 1600
        assert re.search(r"Compacted: freed [\d,]+ tokens", out)
        assert "Answer: Done: read the service log." in out
        assert "Answer: Done: read the timeout setting." in out
        assert "Plan: Goal: Explain the slow requests | - [x] 1: read the service log | - [x] 2:" in out
        assert list(tmp_path.iterdir()) == []
