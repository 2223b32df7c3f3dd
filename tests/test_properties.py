"""Invariants that must hold for any tool names, arguments and results."""

from __future__ import annotations

import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolctx import ToolctxWarning, persist_context, session
from toolctx._hashing import hash_args

names = st.text(min_size=1, max_size=80) | st.sampled_from(["../../x", "/etc/passwd", "..", "a\x00b", "x" * 500])
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False)
    | st.text(max_size=30),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10,
)
calls = st.lists(st.tuples(names, st.dictionaries(st.text(max_size=10), json_values, max_size=3)), max_size=12)
fast = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def all_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


@fast
@given(calls)
def test_file_names_are_unique_and_stay_in_the_session_directory(sequence: list[tuple[str, dict[str, Any]]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with session(root / "ctx", threshold=0) as s:
            pointers = [s.save_context(name, args, f"result {i}") for i, (name, args) in enumerate(sequence)]
            filenames = [p.filename for p in pointers]
            assert len(set(filenames)) == len(filenames)
            assert len({p.id for p in pointers}) == len(pointers)
            # The same calls again, with the same results: they share the files already written.
            again = [s.save_context(name, args, f"result {i}") for i, (name, args) in enumerate(sequence)]
            assert len({p.id for p in pointers + again}) == 2 * len(pointers)
            assert {p.filename for p in again} <= set(filenames)
            assert [c.id for c in s.load_contexts(again)] == [p.id for p in again]
            if sequence:
                # + the lock and the folder's mark; no manifest unless kept
                assert len(all_files(s.session_dir)) == len(filenames) + 2
            for path in all_files(root):
                assert path.parent == s.session_dir
        assert all_files(root) == []


@fast
@given(st.lists(names, min_size=1, max_size=4))
def test_names_are_unique_across_concurrent_threads(tool_names: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp, session(Path(tmp), threshold=0) as s:
        barrier = threading.Barrier(4)

        def work(t: int) -> None:
            barrier.wait()
            for i in range(25):
                s.save_context(tool_names[i % len(tool_names)], {"thread": t, "i": i}, i)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        pointers = s.get_all_pointers()
        assert len(pointers) == 100
        assert len({p.filename for p in pointers}) == 100
        assert len(list(s.session_dir.glob("*.json"))) == 100


hostile_values = json_values | st.integers() | st.binary(max_size=10) | st.builds(object) | st.just("\ud800")


@fast
@given(names, hostile_values, st.booleans(), st.integers(min_value=0, max_value=64))
def test_nothing_remains_after_the_session_exits_normally_or_by_exception(
    name: str, result: Any, fail: bool, threshold: int
) -> None:
    tool = persist_context(name=name)(lambda value: value)
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", ToolctxWarning)  # fallback-form notices are expected here
        root = Path(tmp) / "ctx"
        try:
            with session(root, threshold=threshold, memory_budget=100) as s:
                for _ in range(3):
                    assert tool(result) is result
                assert len(s) == 3
                if fail:
                    raise RuntimeError("agent crashed")
        except RuntimeError:
            assert fail
        assert all_files(Path(tmp)) == []
        assert not root.exists() or list(root.iterdir()) == []


@fast
@given(st.integers(), st.text(max_size=20), json_values)
def test_positional_and_keyword_calls_hash_the_same(a: int, b: str, c: Any) -> None:
    @persist_context
    def tool(a: int, b: str = "default", *, c: Any = None) -> None:
        return None

    with tempfile.TemporaryDirectory() as tmp, session(Path(tmp)) as s:
        tool(a, b, c=c)
        tool(a, b=b, c=c)
        tool(b=b, a=a, c=c)
        tool(c=c, b=b, a=a)
        hashes = {p.args_hash for p in s.get_all_pointers()}
        assert s.redactor is not None
        _, expected = hash_args({"a": a, "b": b, "c": c}, s.redactor)  # hashed after redaction
    assert hashes == {expected}
