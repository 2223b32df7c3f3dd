from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolctx import ConfigError, persist_context, session
from toolctx.redaction import REDACTED, Redactor, SecretPattern, default_redactor

SECRETS = {
    "bearer": "Authorization: Bearer abcDEF123456789xyz",
    "openai": "key sk-proj1234567890abcdefghijKLMN in config",
    "stripe": "sk_live_0123456789abcdefABCD",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "github": "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
    "github-pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "slack": "xoxb-1234567890-abcdefghij",
    "google": "AIzaSyA0123456789abcdefghijklmnopqrstuv",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
}


def redact(value: Any, redactor: Redactor | None = None) -> Any:
    out, _ = (redactor or default_redactor())(orjson.dumps(value))
    return orjson.loads(out)


@pytest.mark.parametrize(
    "key",
    [
        "api_key",
        "apiKey",
        "ApiKey",
        "X-Api-Key",
        "API_KEY",
        "token",
        "access_token",
        "accessToken",
        "refresh-token",
        "password",
        "Password",
        "db.password",
        "passwd",
        "secret",
        "clientSecret",
        "Authorization",
        "private_key",
        "aws_access_key",
        "credentials",
        "credential",
    ],
)
def test_values_under_secret_keys_are_redacted(key: str) -> None:
    assert redact({key: "hunter2", "other": "kept"}) == {key: REDACTED, "other": "kept"}
    assert redact({"nested": [{key: 12345}]}) == {"nested": [{key: REDACTED}]}
    assert redact({key: {"user": "a", "pass": "b"}}) == {key: REDACTED}


@pytest.mark.parametrize(
    "key", ["max_tokens", "token_count", "tokens", "secret_name", "author", "keyword", "password_hint_shown", "key"]
)
def test_ordinary_keys_are_kept(key: str) -> None:
    assert redact({key: "value 1"}) == {key: "value 1"}


def test_null_under_a_secret_key_stays_null() -> None:
    assert redact({"password": None}) == {"password": None}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_secret_formats_inside_strings_are_redacted(kind: str) -> None:
    text = f"before {SECRETS[kind]} after"
    redacted = redact({"log": [text]})["log"][0]
    assert redacted.startswith("before ")
    assert REDACTED in redacted
    for fragment in ("abcDEF123456789xyz", "proj1234567890", "0123456789abcdefABCD", "IOSFODNN7", "MIIEpAIBAA"):
        assert fragment not in redacted


def test_bearer_keeps_the_scheme_word() -> None:
    assert redact("Authorization: Bearer abcDEF123456789xyz") == f"Authorization: Bearer {REDACTED}"


def test_clean_outputs_pass_through_untouched() -> None:
    data = orjson.dumps({"hits": [{"title": "Token economics and secret sauce of passwords"}], "n": 3})
    out, changed = default_redactor()(data)
    assert out == data
    assert changed is False
    clean = orjson.dumps({"query": "quarterly revenue", "page": 3})
    assert default_redactor()(clean)[0] is clean  # no anchor: not even parsed


def test_custom_rules_and_replacement() -> None:
    redactor = Redactor(
        keys=["ssn"],
        patterns=[SecretPattern("ticket", r"TKT-\d{6}", ("TKT-",))],
        replacement="***",
    )
    assert redact({"ssn": "123", "password": "kept now", "note": "see TKT-123456"}, redactor) == {
        "ssn": "***",
        "password": "kept now",
        "note": "see ***",
    }
    assert "ticket" in repr(redactor)


def test_a_pattern_without_anchors_is_still_applied() -> None:
    redactor = Redactor(keys=(), patterns=[SecretPattern("digits", r"\d{4}-\d{4}", ())])
    assert redact({"card": "1234-5678"}, redactor) == {"card": REDACTED}


def test_stored_arguments_results_and_errors_hold_no_secret(context_dir: Path) -> None:
    secret_result = {"user": "ada", "password": "hunter2-pw", "log": SECRETS["bearer"]}

    @persist_context
    def login(user: str, api_key: str, payload: str = "x") -> dict[str, Any]:
        return secret_result

    @persist_context(description="login {user} with {api_key}")
    def described(user: str, api_key: str) -> str:
        return "ok"

    @persist_context
    def failing(token: str) -> None:
        raise PermissionError(f"token {SECRETS['openai']} was refused")

    with session(context_dir, threshold=0) as s:
        assert login("ada", api_key="sk-live-abcdefghijklmnopqrstuvwx") is secret_result  # caller sees it all
        described("ada", "sk-live-abcdefghijklmnopqrstuvwx")
        with pytest.raises(PermissionError):
            failing("tok-123456")
        stored = s.load_contexts(s.get_all_pointers())
        on_disk = b"".join(p.read_bytes() for p in s.session_dir.iterdir())
    assert stored[0].args == {"api_key": REDACTED, "payload": "x", "user": "ada"}
    assert stored[0].result == {"user": "ada", "password": REDACTED, "log": f"Authorization: Bearer {REDACTED}"}
    assert stored[1].tool_description == f"login ada with {REDACTED}"
    assert stored[2].error is not None
    assert stored[2].error.message == f"token key {REDACTED} in config was refused"
    for secret in (b"hunter2-pw", b"abcdefghijklmnopqrstuvwx", b"abcDEF123456789xyz", b"tok-123456", b"proj12345"):
        assert secret not in on_disk


def test_memory_path_is_redacted_too(context_dir: Path) -> None:
    with session(context_dir) as s:
        pointer = s.save_context("fetch", {"authorization": "Basic dXNlcjpwYXNz"}, {"token": "t0k3n"})
        [stored] = s.load_contexts([pointer])
    assert pointer.args == {"authorization": REDACTED}
    assert stored.result == {"token": REDACTED}


def test_redaction_can_be_turned_off(context_dir: Path) -> None:
    with session(context_dir, redact=False) as s:
        assert s.redactor is None
        pointer = s.save_context("fetch", {"api_key": "k-123"}, {"password": "p"})
        assert s.load_contexts([pointer])[0].result == {"password": "p"}
        assert pointer.args == {"api_key": "k-123"}


def test_bad_redact_option(context_dir: Path) -> None:
    with pytest.raises(ConfigError, match="redact must be"):
        session(context_dir, redact="yes")  # type: ignore[arg-type]


SECRETS_LIST = list(SECRETS.values())
KEYS = st.sampled_from(["q", "token", "apiKey", "note", "max_tokens", "password", "x"])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=30) | st.sampled_from(SECRETS_LIST),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=12,
)


@given(json_values)
def test_running_only_the_rules_whose_fragments_were_found_redacts_like_every_rule(value: Any) -> None:
    redactor = default_redactor()
    data = orjson.dumps(value)
    out, changed = redactor(data)
    everything = redactor.redact_value(orjson.loads(data))
    assert orjson.loads(out) == everything
    assert changed == (everything != orjson.loads(data))
    args_out, result_out = redactor.redact_call(orjson.dumps({"q": value}), data)
    assert orjson.loads(result_out) == everything
    assert orjson.loads(args_out) == redactor.redact_value({"q": orjson.loads(data)})


def test_a_key_word_in_a_string_result_costs_no_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    redactor = Redactor()
    source = orjson.dumps("def refresh_token(password):\n    return secret_store[password]  # token")
    monkeypatch.setattr("toolctx.redaction._redactor.orjson.loads", lambda *_: pytest.fail("the output was parsed"))
    out, changed = redactor(source)
    assert out is source
    assert not changed


def test_an_anchor_runs_only_its_own_pattern(monkeypatch: pytest.MonkeyPatch) -> None:
    redactor = Redactor()
    data = orjson.dumps({"log": "task-1 passed; " + SECRETS["openai"]})
    out, changed = redactor(data)
    assert changed
    assert SECRETS["openai"].split()[1] not in out.decode()
    assert [rule.name for rule in redactor._rules_for(redactor._prefilter.found(data))] == ["sk-key"]


def test_a_subclass_overriding_redact_value_still_sees_every_output_with_a_fragment() -> None:
    class Upper(Redactor):
        def redact_value(self, value: Any) -> Any:
            return super().redact_value(value.upper() if isinstance(value, str) else value)

    out, changed = Upper()(orjson.dumps("a token here"))
    assert changed
    assert orjson.loads(out) == "A TOKEN HERE"


def test_without_hyperscan_the_same_secrets_are_redacted_the_same_way(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "hyperscan", None)  # as in a core install without toolctx[fast]
    portable = Redactor()
    assert portable._prefilter.engine == "re"
    fast = default_redactor()
    assert fast._prefilter.engine == "hyperscan"
    values: list[Any] = [
        *SECRETS.values(),
        {"api_key": "k", "nested": [{"clientSecret": "s", "note": SECRETS["jwt"]}]},
        "def refresh_token(password): ...",
        {"max_tokens": 5, "q": "plain"},
    ]
    for value in values:
        data = orjson.dumps(value)
        assert portable(data) == fast(data)
        assert portable.redact_call(b'{"token":"t"}', data) == fast.redact_call(b'{"token":"t"}', data)


def test_a_subclass_overriding_redact_text_or_is_secret_key_is_applied_to_stored_outputs() -> None:
    class Ssn(Redactor):
        def redact_text(self, text: str) -> str:
            return re.sub(r"\d{3}-\d{2}-\d{4}", "[SSN]", super().redact_text(text))

        def is_secret_key(self, key: str) -> bool:
            return key == "ssn" or super().is_secret_key(key)

    redactor = Ssn()
    _, result = redactor.redact_call(b'{"q":"token"}', orjson.dumps({"note": "ssn 123-45-6789", "ssn": "x"}))
    assert orjson.loads(result) == {"note": "ssn [SSN]", "ssn": REDACTED}


def test_a_subclass_redacting_calls_its_own_way_redacts_every_stored_call(tmp_path: Path) -> None:
    class Internal(Redactor):
        def redact_call(self, args_json: bytes, result_json: bytes) -> tuple[bytes, bytes]:
            return args_json.replace(b"internal-42", b"[X]"), result_json.replace(b"internal-42", b"[X]")

        def redact_text(self, text: str) -> str:
            return super().redact_text(text).replace("internal-42", "[X]")

    with session(tmp_path, redact=Internal()) as s:
        pointer = s.save_context("lookup", {"host": "internal-42"}, "served by internal-42", call_id="internal-42")
        [context] = s.load_contexts([pointer])
    assert context.args == {"host": "[X]"}
    assert context.result == "served by [X]"
    assert context.call_id == "[X]"


def test_a_bearer_token_in_any_letter_case_is_redacted() -> None:
    for scheme in ("Bearer", "bEARER", "BeArEr"):
        out = redact({"header": f"Authorization: {scheme} abcdefghijklmnop1234"})
        assert out == {"header": f"Authorization: {scheme} {REDACTED}"}


def test_a_call_is_redacted_with_its_id_as_a_session_stores_it() -> None:
    redactor = default_redactor()
    args, result = orjson.dumps({"api_key": "k-123456", "q": "x"}), orjson.dumps("token=abc123def")
    secret_id = "call-" + SECRETS["github"]
    out_args, out_result, out_id = redactor.redact_call_with_id(args, result, secret_id)
    assert (out_args, out_result) == redactor.redact_call(args, result)
    assert orjson.loads(out_args) == {"api_key": REDACTED, "q": "x"}
    assert out_id == f"call-{REDACTED}"
    assert redactor.redact_call_with_id(args, result, "call_1")[2] == "call_1"
    assert redactor.redact_call_with_id(b'{"q":"x"}', b'"ok"', None) == (b'{"q":"x"}', b'"ok"', None)


def test_a_subclass_extending_redact_call_with_super_redacts_stored_calls(tmp_path: Path) -> None:
    class Internal(Redactor):
        def redact_call(self, args_json: bytes, result_json: bytes) -> tuple[bytes, bytes]:
            args, result = super().redact_call(args_json, result_json)
            return args, result.replace(b"internal-42", b"[X]")

    redactor = Internal()
    _, result = redactor.redact_call(b'{"q":"x"}', orjson.dumps("internal-42 password=hunter22"))
    assert orjson.loads(result) == f"[X] password={REDACTED}"
    with session(tmp_path, redact=redactor) as s:
        pointer = s.save_context("lookup", {"token": "t-1"}, "served by internal-42", call_id="call_1")
        [context] = s.load_contexts([pointer])
    assert context.args == {"token": REDACTED}
    assert context.result == "served by [X]"
    assert context.call_id == "call_1"
