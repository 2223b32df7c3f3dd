"""The toolctx command: what it lists, shows and removes, its --json, and its errors and exit codes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from tests.conftest import files_under
from toolctx import session
from toolctx.cli._app import app
from toolctx.memory import MemoryStore

runner = CliRunner()

CRASH = """
import os, sys, toolctx
s = toolctx.session(sys.argv[1], session_id="crashed", threshold=0)
s.__enter__()
s.save_context("t", {"i": 1}, "x" * 100)
os._exit(1)
"""


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


def as_json(*args: str) -> object:
    code, out, err = invoke(*args, "--json")
    assert code == 0, err
    return orjson.loads(out)


@pytest.fixture
def kept(context_dir: Path) -> str:
    """A session kept on disk with two calls of `search` and one failed call of `fetch`."""
    with session(context_dir, session_id="kept-1", keep=True, threshold=0) as s:
        s.save_context("search", {"query": "retry"}, ["uploader.py", "client.py"])
        s.save_context("search", {"query": "timeout"}, ["net.py"])
        s.save_context("fetch", {"url": "x"}, None, error=TimeoutError("took too long"))
    return "kept-1"


@pytest.fixture
def memory_db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    with MemoryStore(url) as store:
        agent = store.agent("worker")
        agent.save("TASK", "Add retries to the uploader")
        agent.save("CODE", "def upload(): ...")
        agent.save("TEST_RESULT", "1 failed", importance_score=0.1)
    return url


def test_ls_lists_kept_sessions_and_their_contexts(context_dir: Path, kept: str) -> None:
    [listed] = as_json("ls", "--context-dir", str(context_dir))  # type: ignore[misc]
    assert listed["session_id"] == kept
    assert listed["state"] == "kept"
    assert listed["contexts"] == 3
    contexts = as_json("ls", kept, "--context-dir", str(context_dir))
    assert [c["tool_name"] for c in contexts] == ["search", "search", "fetch"]  # type: ignore[union-attr]
    assert [c["args"] for c in contexts][:2] == [{"query": "retry"}, {"query": "timeout"}]  # type: ignore[union-attr]
    code, out, _ = invoke("ls", kept, "--context-dir", str(context_dir))
    assert code == 0
    assert "search" in out
    assert "error" in out  # the failed fetch is marked


def test_looking_changes_nothing_and_the_session_still_resumes(context_dir: Path, kept: str) -> None:
    before = {p: p.read_bytes() for p in files_under(context_dir) if p.is_file()}
    ids = [c["id"] for c in as_json("ls", kept, "--context-dir", str(context_dir))]  # type: ignore[union-attr]
    shown = as_json("show", kept, ids[0], "--context-dir", str(context_dir))
    assert shown["result"] == ["uploader.py", "client.py"]  # type: ignore[index]
    assert {p: p.read_bytes() for p in files_under(context_dir) if p.is_file()} == before
    from toolctx import ContextSession

    with ContextSession.resume(kept, context_dir) as resumed:
        assert [p.id for p in resumed.get_all_pointers()] == ids


def test_show_prints_the_call_and_its_result_or_error(context_dir: Path, kept: str) -> None:
    ids = [c["id"] for c in as_json("ls", kept, "--context-dir", str(context_dir))]  # type: ignore[union-attr]
    code, out, _ = invoke("show", kept, f"ctx:{ids[1]}", "--context-dir", str(context_dir), "--no-pager")
    assert code == 0
    assert "search" in out
    assert '"timeout"' in out
    assert '"net.py"' in out
    code, out, _ = invoke("show", kept, ids[2], "--context-dir", str(context_dir))
    assert "error: TimeoutError: took too long" in out


def test_unknown_or_malformed_names_get_a_message_naming_them_and_their_exit_code(context_dir: Path, kept: str) -> None:
    before = files_under(context_dir)
    code, out, err = invoke("ls", "no-such-session", "--context-dir", str(context_dir))
    assert (code, out) == (3, "")
    assert "no toolctx session 'no-such-session'" in err
    code, _, err = invoke("ls", "../etc", "--context-dir", str(context_dir))
    assert code == 2
    assert "'../etc'" in err
    code, _, err = invoke("show", kept, "abcdef0123", "--context-dir", str(context_dir))
    assert code == 3
    assert "no context 'abcdef0123' in session 'kept-1'" in err
    code, _, err = invoke("show", kept, "not-an-id", "--context-dir", str(context_dir))
    assert code == 2
    assert "'not-an-id' is not one toolctx gives" in err
    assert files_under(context_dir) == before


def test_a_folder_toolctx_did_not_create_is_neither_listed_nor_read(context_dir: Path) -> None:
    mine = context_dir / "users-folder"
    mine.mkdir()
    (mine / "manifest.jsonl").write_text('{"op":"put"}\n')
    assert as_json("ls", "--context-dir", str(context_dir)) == []
    code, _, err = invoke("ls", "users-folder", "--context-dir", str(context_dir))
    assert code == 3
    assert "users-folder" in err
    code, out, err = invoke("ls", "--context-dir", str(context_dir / "absent"))
    assert (code, out) == (3, "")  # a folder named that does not exist is a mistake, not an empty listing
    assert f"no folder at --context-dir {str(context_dir / 'absent')!r}" in err


def test_gc_removes_the_folder_of_a_crashed_process_and_dry_run_only_names_it(context_dir: Path, kept: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run([sys.executable, "-c", CRASH, str(context_dir)], env=env, check=False)
    states = {s["session_id"]: s["state"] for s in as_json("ls", "--context-dir", str(context_dir))}  # type: ignore[union-attr]
    assert states == {"crashed": "orphaned", kept: "kept"}
    dry = as_json("gc", "--context-dir", str(context_dir), "--older-than", "0", "--dry-run")
    assert dry == {"dry_run": True, "removed": [str(context_dir / "crashed")]}
    assert (context_dir / "crashed").exists()
    code, out, _ = invoke("gc", "--context-dir", str(context_dir), "--older-than", "0s")
    assert code == 0
    assert "removed 1 session folder" in out
    assert not (context_dir / "crashed").exists()
    assert (context_dir / kept).exists()  # kept sessions stay without --include-kept
    code, _, err = invoke("gc", "--context-dir", str(context_dir), "--older-than", "soon")
    assert code == 2
    assert "--older-than 'soon' is not a duration" in err


def test_stats_totals_sessions_by_state_and_memory_by_agent(context_dir: Path, kept: str, memory_db: str) -> None:
    totals = as_json("stats", "--context-dir", str(context_dir), "--db", memory_db)
    assert totals["sessions"]["kept"]["sessions"] == 1  # type: ignore[index]
    assert totals["sessions"]["kept"]["contexts"] == 3  # type: ignore[index]
    [worker] = totals["memory"]  # type: ignore[index]
    assert (worker["agent_id"], worker["hot_count"] + worker["warm_count"] + worker["cold_count"]) == ("worker", 3)


def test_memory_commands_list_act_and_diff(memory_db: str) -> None:
    [agent] = as_json("memory", "agents", "--db", memory_db)  # type: ignore[misc]
    assert agent["agent_id"] == "worker"
    items = as_json("memory", "items", "worker", "--db", memory_db)
    assert sorted(i["item_type"] for i in items) == ["CODE", "TASK", "TEST_RESULT"]  # type: ignore[union-attr]
    cold = as_json("memory", "items", "worker", "--tier", "cold", "--db", memory_db)
    assert [i["item_type"] for i in cold] == ["TEST_RESULT"]  # type: ignore[union-attr]
    saved = as_json("memory", "flash-save", "worker", "--db", memory_db)
    assert saved["items_archived"] == 1  # type: ignore[index]
    assert as_json("memory", "items", "worker", "--tier", "COLD", "--db", memory_db) == []
    archived = as_json("memory", "items", "worker", "--tier", "COLD", "--archived", "--db", memory_db)
    assert [i["archived"] for i in archived] == [True]  # type: ignore[union-attr]
    [checkpoint] = as_json("memory", "checkpoints", "worker", "--db", memory_db)  # type: ignore[misc]
    assert checkpoint["id"] == saved["checkpoint_id"]  # type: ignore[index]
    with MemoryStore(memory_db) as store:
        store.agent("worker").save("ERROR", "ValueError in upload()")
    diff = as_json("memory", "diff", "worker", str(checkpoint["id"]), "--db", memory_db)
    assert [i["content"] for i in diff["added"]] == ["ValueError in upload()"]  # type: ignore[index]
    restored = as_json("memory", "restore", "worker", str(checkpoint["id"]), "--db", memory_db)
    assert len(restored["items"]) == saved["items_checkpointed"]  # type: ignore[index]
    code, out, _ = invoke("memory", "items", "worker", "--db", memory_db)
    assert code == 0
    assert "HOT" in out
    assert "Add retries to the uploader" in out


def test_memory_errors_name_the_value_and_leave_no_trace(tmp_path: Path, memory_db: str) -> None:
    code, _, err = invoke("memory", "items", "nobody", "--db", memory_db)
    assert code == 3
    assert "no agent 'nobody'" in err
    code, _, err = invoke("memory", "flash-save", "nobody", "--db", memory_db)
    assert code == 3
    with MemoryStore(memory_db) as store:
        assert store.agent_ids() == ["worker"]  # reading or acting on an unknown agent registers none
    code, _, err = invoke("memory", "items", "worker", "--tier", "LUKEWARM", "--db", memory_db)
    assert code == 2
    assert "'LUKEWARM' is not a tier" in err
    code, _, err = invoke("memory", "restore", "worker", "99", "--db", memory_db)
    assert code == 3
    assert "99" in err
    absent = tmp_path / "absent.db"
    code, _, err = invoke("memory", "agents", "--db", f"sqlite:///{absent}")
    assert code == 3
    assert str(absent) in err
    assert not absent.exists()
    code, _, err = invoke("memory", "agents", "--db", "nonsense://x")
    assert code == 2
    assert "nonsense://x" in err


def test_serve_refuses_bad_options_by_name() -> None:
    code, _, err = invoke("serve", "--host", "0.0.0.0")
    assert code == 2
    assert "without a token" in err
    code, _, err = invoke("serve", "--port", "70000")
    assert code == 2
    assert "--port" in err
    code, _, err = invoke("serve", "--token", " padded ")
    assert code == 2
    assert "token" in err
    code, _, err = invoke("serve", "--max-body-bytes", "0")
    assert code == 2
    assert "--max-body-bytes" in err


def test_the_installed_command_runs_in_a_fresh_process(context_dir: Path, kept: str) -> None:
    command = Path(sys.executable).with_name("toolctx")
    done = subprocess.run(
        [str(command), "ls", "--context-dir", str(context_dir), "--json"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert [s["session_id"] for s in orjson.loads(done.stdout)] == [kept]
    missing = subprocess.run(
        [sys.executable, "-m", "toolctx.cli", "show", kept, "ffffffff", "--context-dir", str(context_dir)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert missing.returncode == 3
    assert "no context 'ffffffff'" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_tables_for_people_show_the_same_numbers(context_dir: Path, kept: str, memory_db: str) -> None:
    code, out, _ = invoke("stats", "--context-dir", str(context_dir), "--db", memory_db)
    assert code == 0
    assert "kept" in out
    assert "worker" in out
    code, out, _ = invoke("memory", "agents", "--db", memory_db)
    assert code == 0
    assert "worker" in out
    code, out, _ = invoke("memory", "flash-save", "worker", "--db", memory_db)
    assert code == 0
    assert "1 archived" in out
    [checkpoint] = as_json("memory", "checkpoints", "worker", "--db", memory_db)  # type: ignore[misc]
    code, out, _ = invoke("memory", "checkpoints", "worker", "--db", memory_db)
    assert str(checkpoint["id"]) in out
    code, out, _ = invoke("memory", "diff", "worker", str(checkpoint["id"]), "--db", memory_db)
    assert "added (0): -" in out
    code, out, _ = invoke("memory", "restore", "worker", str(checkpoint["id"]), "--db", memory_db)
    assert f"restored checkpoint {checkpoint['id']}" in out
    code, out, _ = invoke("gc", "--context-dir", str(context_dir), "--dry-run")
    assert "would remove 0 session folders" in out


def test_an_empty_memory_says_so(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    MemoryStore(url).close()
    code, out, _ = invoke("memory", "agents", "--db", url)
    assert (code, out.strip()) == (0, "no agents in this memory yet")
    code, _, err = invoke("memory", "agents", "--db", " ")
    assert code == 2
    assert "--db is empty" in err


def test_a_database_that_cannot_be_reached_is_exit_code_4(postgres_url: str) -> None:
    unreachable = postgres_url.rsplit("@", 1)[0] + "@127.0.0.1:1/nowhere?connect_timeout=2"
    code, _, err = invoke("memory", "agents", "--db", unreachable)
    assert code == 4
    assert "busy or unreachable" in err


def test_serve_answers_with_the_dashboard_and_stops_cleanly(tmp_path: Path, memory_db: str) -> None:
    import socket
    import time
    import urllib.error
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "toolctx.cli", "serve", "--db", memory_db, "--port", str(port)]
    command += ["--max-body-bytes", "4096"]
    server = subprocess.Popen([*command, "--context-dir", str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/agents", timeout=2) as answer:
                    agents = orjson.loads(answer.read())["agents"]
                break
            except OSError:
                assert server.poll() is None, "toolctx serve exited"
                assert time.monotonic() < deadline, "toolctx serve did not answer"
                time.sleep(0.2)
        assert [a["agent_id"] for a in agents] == ["worker"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as page:
            assert b"ContextPanel" in page.read()
        too_big = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/agents/worker/context/save",
            data=orjson.dumps({"content": "x" * 10_000, "item_type": "TASK"}),
            headers={"Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(too_big, timeout=2)
        refused.value.close()
        assert refused.value.code == 413  # --max-body-bytes reached the server
    finally:
        server.terminate()
        out, _ = server.communicate(timeout=30)
    assert f"http://127.0.0.1:{port}/" in out
