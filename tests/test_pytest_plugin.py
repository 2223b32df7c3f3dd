"""The pytest plugin costs a project that has toolctx installed nothing until a test asks for a toolctx fixture."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("toolctx", "sqlalchemy", "pydantic", "structlog", "orjson", "xxhash", "numpy", "fastapi")


def modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def test_loading_the_plugin_imports_no_part_of_toolctx_and_no_dependency() -> None:
    before = modules_after("import pytest")
    after = modules_after("import pytest, toolctx_pytest")
    assert heavy(after - before) == []


def test_the_fixtures_import_toolctx_when_a_test_uses_one(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_lazy="""
import sys

def test_without_fixture():
    assert "toolctx.sessions" not in sys.modules

def test_with_fixture(toolctx_clock):
    assert "toolctx.sessions" in sys.modules
    assert toolctx_clock.now().year == 2025
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:toolctx", "-p", "toolctx_pytest", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
