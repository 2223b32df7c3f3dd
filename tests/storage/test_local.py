from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from toolctx.errors import SessionBusyError, SessionNotFoundError
from toolctx.naming import LOCK_NAME
from toolctx.storage import LocalStore


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_nothing_is_created_until_the_first_write(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "ctx" / "s1")
    assert store.list() == []
    assert not (tmp_path / "ctx").exists()
    store.put("a.json", [b"1"])
    assert (tmp_path / "ctx" / "s1" / "a.json").exists()
    store.close(remove=True)


def test_permissions_are_owner_only(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    store.put("a.json", [b"1"])
    store.append("m.jsonl", b"x")
    assert mode(tmp_path / "s") == 0o700
    assert mode(tmp_path / "s" / "a.json") == 0o600
    assert mode(tmp_path / "s" / "m.jsonl") == 0o600
    store.close(remove=True)


def test_an_existing_directory_is_never_adopted(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "user.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        LocalStore(tmp_path / "s").put("a.json", [b"1"])
    assert (tmp_path / "s" / "user.txt").read_text() == "mine"


def test_close_remove_keeps_foreign_files_and_the_directory_holding_them(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    store.put("a.json", [b"1"])
    (tmp_path / "s" / "user.txt").write_text("mine")
    store.delete("a.json")
    store.close(remove=True)
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["user.txt"]


def test_close_remove_deletes_the_empty_directory_and_leftover_temp_files(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    store.put("a.json", [b"1"])
    (tmp_path / "s" / ".a.json.0123abcd.tmp").write_bytes(b"partial")
    store.delete("a.json")
    store.close(remove=True)
    assert not (tmp_path / "s").exists()


def test_writes_do_not_follow_symlinks(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    store = LocalStore(tmp_path / "s")
    store.put("seed.json", [b"1"])
    os.symlink(victim, tmp_path / "s" / "a.json")
    with pytest.raises(OSError):
        store.get("a.json")
    assert "a.json" not in store.list()
    store.put("a.json", [b"replaced"])  # rename replaces the link itself, not its target
    assert victim.read_text() == "precious"
    store.close(remove=True)


def test_a_failed_write_leaves_no_partial_blob(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolctx.storage import local

    store = LocalStore(tmp_path / "s")
    store.put("seed.json", [b"1"])

    def full_disk(fd: int, buffers: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(local.os, "writev", full_disk)
    with pytest.raises(OSError, match="No space"):
        store.put("a.json", [b"data"])
    monkeypatch.undo()
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["seed.json", LOCK_NAME]
    store.close(remove=True)


def test_the_lock_records_the_owner_and_keeps_out_other_processes(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    store.put("a.json", [b"1"])
    marker = (tmp_path / "s" / LOCK_NAME).read_text()
    assert f'"pid":{os.getpid()}' in marker
    code = (
        "import sys\nfrom toolctx.storage import LocalStore\nfrom toolctx.errors import SessionBusyError\n"
        "try:\n    LocalStore(sys.argv[1], existing=True)\nexcept SessionBusyError as e:\n    print('busy', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "s")], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("busy")
    store.close()
    reopened = LocalStore(tmp_path / "s", existing=True)
    assert reopened.get("a.json") == b"1"
    reopened.close(remove=True)


def test_a_second_store_in_the_same_process_is_also_kept_out(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    store.put("a.json", [b"1"])
    with pytest.raises(SessionBusyError, match="another live process"):
        LocalStore(tmp_path / "s", existing=True)
    store.close(remove=True)


def test_opening_a_missing_or_linked_directory_fails(tmp_path: Path) -> None:
    with pytest.raises(SessionNotFoundError):
        LocalStore(tmp_path / "nope", existing=True)
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    with pytest.raises(SessionNotFoundError):
        LocalStore(tmp_path / "link", existing=True)


def test_short_writes_are_completed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolctx.storage import local

    real_writev = os.writev

    def dribble(fd: int, buffers: list[bytes]) -> int:  # at most 7 bytes per call, like a slow pipe
        first = bytes(buffers[0])[:7] if buffers else b""
        return real_writev(fd, [first])

    monkeypatch.setattr(local.os, "writev", dribble)
    store = LocalStore(tmp_path / "s")
    store.put("a.json", [b"0123456789", b"", b"abcdefghijklmnop", b"XYZ"])
    store.append("m.jsonl", b"line one\n")
    monkeypatch.undo()
    assert store.get("a.json") == b"0123456789abcdefghijklmnopXYZ"
    assert store.get("m.jsonl") == b"line one\n"
    store.close(remove=True)
