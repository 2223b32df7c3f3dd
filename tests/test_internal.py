"""toolctx's own failures: reported as a warning that points at the user's code."""

from __future__ import annotations

from pathlib import Path

import pytest
import structlog.testing

from toolctx import ToolctxWarning, persist_context, session


@persist_context
def odd_tool() -> object:
    return object()  # not JSON: stored in the fallback form, with a warning


def test_a_warning_points_at_the_line_that_called_the_tool(context_dir: Path) -> None:
    with session(context_dir), pytest.warns(ToolctxWarning, match="fallback form") as caught:
        odd_tool()
    assert caught[0].filename == __file__
    assert caught[0].lineno == test_a_warning_points_at_the_line_that_called_the_tool.__code__.co_firstlineno + 2


def test_a_warning_from_save_context_points_at_its_caller(context_dir: Path) -> None:
    with session(context_dir) as s, pytest.warns(ToolctxWarning) as caught:
        s.save_context("t", {}, object())
    assert caught[0].filename == __file__


def test_an_escalated_warning_is_held_back_and_logged_never_raised() -> None:
    import warnings

    import toolctx.testing
    from toolctx._internal import internal_error

    with warnings.catch_warnings(), structlog.testing.capture_logs() as logs:
        warnings.simplefilter("error")
        internal_error("the disk is full", OSError(28, "No space left on device"))
    assert toolctx.testing.escalated_warnings() == ["the disk is full (OSError: [Errno 28] No space left on device)"]
    assert [entry["event"] for entry in logs] == ["internal_error", "warning_escalated"]
    assert logs[1]["log_level"] == "error"


def test_logging_that_fails_never_breaks_the_tool(context_dir: Path) -> None:
    """An application whose structlog output is gone (a closed stream) still gets its tools' results."""
    closed = open(context_dir / "log.txt", "w")  # noqa: SIM115 - closed on purpose
    closed.close()
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=closed))
    try:

        @persist_context
        def lookup(key: str) -> dict[str, str]:
            return {"key": key, "value": "v" * 100}

        with session(context_dir / "ctx") as s:
            assert lookup("a") == {"key": "a", "value": "v" * 100}
            with pytest.warns(ToolctxWarning):
                assert isinstance(odd_tool(), object)  # an internal error reported while logging is broken
            assert len(s.get_all_pointers()) == 2
    finally:
        structlog.reset_defaults()
