"""Fuzzing: whatever the tool name, arguments and result, the tool behaves exactly as it would undecorated."""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolctx import ToolctxWarning, persist_context, session


class Opaque:
    def __init__(self, tag: int) -> None:
        self.tag = tag


class ToolFailure(Exception):
    pass


def nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def with_cycle(base: list[Any]) -> list[Any]:
    base.append(base)
    return base


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text()
    | st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3)
    | st.binary(max_size=16)
    | st.builds(Opaque, st.integers())
)
values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=6) | st.integers(), children, max_size=4)
        | st.tuples(children, children)
        | st.lists(children, max_size=3).map(with_cycle)
    ),
    max_leaves=20,
)
results = (
    values
    | st.integers(min_value=0, max_value=400).map(nested)
    | st.integers(min_value=40_000, max_value=200_000).map(lambda n: "é" * n)
)
names = st.text(max_size=300) | st.sampled_from(
    ["../../x", "/etc/passwd", "..", "a\x00b", "~root", "C:\\x", "x" * 10_000]
)
arguments = st.dictionaries(st.text(max_size=20), values, max_size=4)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(name=names, args=arguments, result=results, fails=st.booleans(), threshold=st.sampled_from([0, 64, 32 * 1024]))
def test_the_tool_always_returns_its_own_result_or_raises_its_own_error(
    name: str, args: dict[str, Any], result: Any, fails: bool, threshold: int
) -> None:
    error = ToolFailure("tool failed")

    def tool(**kwargs: Any) -> Any:
        if fails:
            raise error
        return result

    decorated = persist_context(name=name or "t")(tool)
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", ToolctxWarning)  # fallback-form notices are expected here
        root = Path(tmp)
        with session(root / "ctx", threshold=threshold, memory_budget=256) as s:
            if fails:
                with pytest.raises(ToolFailure) as raised:
                    decorated(**args)
                assert raised.value is error
            else:
                assert decorated(**args) is result
            assert len(s) == 1
            [pointer] = s.get_all_pointers()
            assert pointer.is_error == fails
            for path in root.rglob("*"):
                assert path == root / "ctx" or path.parent in (root / "ctx", s.session_dir), path
            loaded = s.load_contexts([pointer])
            assert len(loaded) == 1
        assert [p for p in root.rglob("*") if p.is_file()] == []
