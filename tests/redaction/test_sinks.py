"""One redaction everywhere toolctx writes what it was given: memory items, log records, warnings, error messages.

Each sink is read back the way a user reads it (a MemoryStore, the HTTP API, the
``toolctx memory`` command, the log, the exception) and must not show the secret that
went in; each can be turned off or given other rules.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import structlog.testing
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from toolctx import redaction
from toolctx._checks import whole_number
from toolctx._internal import internal_error, log
from toolctx.cli._app import app
from toolctx.errors import ConfigError, ToolctxWarning
from toolctx.memory import MemoryConfig, MemoryStore
from toolctx.redaction import REDACTED, Redactor, SecretPattern
from toolctx.server import create_app

SECRET = "hunter2"
TEXT = f"connect with password={SECRET} to the staging database"
AWS = "AKIAIOSFODNN7EXAMPLE"


@pytest.fixture
def memory_db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'memory.db'}"


@pytest.fixture
def restore_messages() -> Iterator[None]:
    yield
    redaction.redact_messages(True)


def test_a_memory_item_is_stored_redacted_and_read_back_so(memory_db: str) -> None:
    with MemoryStore(memory_db) as store:
        agent = store.agent("worker")
        saved = agent.save("TASK", TEXT)
        [second] = agent.save_many([("CODE", f"client = Client(api_key='{AWS}')")])
        assert saved.content == f"connect with password={REDACTED} to the staging database"
        assert agent.get(saved.id).content == saved.content
        assert AWS not in agent.get(second).content
        updated = agent.update(saved.id, f"token: {SECRET}-xyz-42")
        assert updated.content == f"token: {REDACTED}"
        checkpoint = agent.flash_save().checkpoint_id
        assert checkpoint is not None
        restored = agent.restore(checkpoint)
        assert all(SECRET not in item.content and AWS not in item.content for item in restored.items)
    with MemoryStore(memory_db) as reopened:  # what is in the database itself
        contents = [item.content for item in reopened.agent("worker").items(archived=True)]
        assert contents
        assert not [c for c in contents if SECRET in c or AWS in c]


def test_memory_redaction_can_be_turned_off_or_given_other_rules(memory_db: str) -> None:
    with MemoryStore(memory_db, config=MemoryConfig(redact=False)) as store:
        assert store.agent("plain").save("TASK", TEXT).content == TEXT
    employee = SecretPattern("employee-id", r"EMP-[0-9]{6}", ("EMP-",))
    with MemoryStore(memory_db, config=MemoryConfig(redact=Redactor(patterns=[employee]))) as store:
        assert store.agent("own").save("TASK", "ask EMP-123456").content == f"ask {REDACTED}"
    with pytest.raises(ConfigError, match="redact must be True"):
        MemoryConfig(redact="yes")  # type: ignore[arg-type]


def test_the_http_api_shows_memory_items_redacted(memory_db: str) -> None:
    with MemoryStore(memory_db) as store, TestClient(create_app(store), base_url="http://localhost") as client:
        base = "/api/agents/worker/context"
        response = client.post(f"{base}/save", json={"item_type": "TASK", "content": TEXT})
        assert response.status_code == 201, response.text
        listed = client.get(base)
        assert listed.status_code == 200
        assert SECRET not in listed.text
        assert REDACTED in listed.json()["items"][0]["content"]
        refused = client.post(f"{base}/save", json={"item_type": f"password={SECRET}", "content": "x"})
        assert refused.status_code == 422
        assert SECRET not in refused.text  # the refused value is echoed back, redacted
        invalid = client.post(f"{base}/save", json={"item_type": "TASK", "content": "x", "importance_score": TEXT})
        assert invalid.status_code == 422
        assert "staging database" in invalid.text  # a value the schema refused is echoed back too, redacted
        assert SECRET not in invalid.text


def test_the_memory_command_shows_items_redacted(memory_db: str) -> None:
    with MemoryStore(memory_db) as store:
        store.agent("worker").save("TASK", TEXT)
    runner = CliRunner()
    for extra in ([], ["--json"]):
        result = runner.invoke(app, ["memory", "items", "worker", "--db", memory_db, *extra], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.stderr
        assert SECRET not in result.stdout
        assert REDACTED in result.stdout
    shown = runner.invoke(app, ["memory", "items", "worker", "--db", memory_db, "--json"])
    assert orjson.loads(shown.stdout)[0]["content"] == f"connect with password={REDACTED} to the staging database"


def test_a_log_record_never_holds_a_secret_passed_in(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="toolctx"):
        log(logging.WARNING, f"could not use {TEXT}", value=TEXT, password=SECRET, items=[f"key {AWS}"], count=3)
    [record] = [r for r in caplog.records if r.name == "toolctx"]
    message = record.getMessage()
    assert SECRET not in message
    assert AWS not in message
    assert "count=3" in message
    assert REDACTED in message


def test_structlog_events_are_redacted_too() -> None:
    with structlog.testing.capture_logs() as logs:
        log(logging.INFO, "saved", value=TEXT, token=SECRET, size=10)
    [event] = logs
    assert event["value"] == f"connect with password={REDACTED} to the staging database"
    assert event["token"] == REDACTED
    assert event["size"] == 10


def test_an_internal_error_warns_and_logs_without_the_secret(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="toolctx"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        internal_error(f"could not store {TEXT!r}", ValueError(f"bad value {AWS}"))
    [warning] = [w for w in caught if issubclass(w.category, ToolctxWarning)]
    assert SECRET not in str(warning.message)
    assert AWS not in str(warning.message)
    assert REDACTED in str(warning.message)
    assert not [r for r in caplog.records if SECRET in r.getMessage() or AWS in r.getMessage()]


def test_an_error_message_never_quotes_a_secret_passed_in() -> None:
    with pytest.raises(ConfigError) as raised:
        whole_number("limit", TEXT)
    assert SECRET not in str(raised.value)
    assert "password=[REDACTED]" in str(raised.value)
    # Cut to 80 characters only once redacted: a long value still loses its secret.
    with pytest.raises(ConfigError) as cut:
        whole_number("limit", "x" * 50 + f" {AWS} " + "y" * 50)
    assert "AKIA" not in str(cut.value)
    assert "IOSFODNN7" not in str(cut.value)
    with pytest.raises(ConfigError) as raised:
        redaction.resolve_redactor(f"token={SECRET}")
    assert SECRET not in str(raised.value)
    with pytest.raises(ConfigError) as raised, MemoryStore("sqlite://") as store:
        store.agent("worker").save(f"password={SECRET}", "x")
    assert SECRET not in str(raised.value)
    assert SECRET not in repr(raised.value)
    assert SECRET not in str(raised.value.args)


@pytest.mark.usefixtures("restore_messages")
def test_message_redaction_can_be_turned_off_or_given_other_rules(caplog: pytest.LogCaptureFixture) -> None:
    redaction.redact_messages(False)
    assert SECRET in str(ConfigError(TEXT))
    employee = SecretPattern("employee-id", r"EMP-[0-9]{6}", ("EMP-",))
    redaction.redact_messages(Redactor(patterns=[employee]))
    assert str(ConfigError("for EMP-123456")) == f"for {REDACTED}"
    with caplog.at_level(logging.DEBUG, logger="toolctx"):
        log(logging.INFO, "seen EMP-654321")
    assert "EMP-654321" not in caplog.text
    with pytest.raises(ConfigError, match="redact must be True"):
        redaction.redact_messages("loud")  # type: ignore[arg-type]
    redaction.redact_messages(True)
    assert SECRET not in str(ConfigError(TEXT))
