"""The redaction rules exactly as the toolctx.redaction docstring states them, by both scan engines."""

from __future__ import annotations

import base64
import os
import sys
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.redaction.test_secret_forms import FORMS, ORDINARY
from toolctx import ConfigError
from toolctx._serialize import encode
from toolctx.redaction import REDACTED, Redactor, SecretPattern, default_redactor


def portable_redactor(**options: Any) -> Redactor:
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, "hyperscan", None)  # as in a core install without toolctx[fast]
        redactor = Redactor(**options)
    assert redactor._prefilter.engine == "re"
    return redactor


PORTABLE = portable_redactor()


@pytest.fixture(params=["hyperscan", "re"])
def redactor(request: pytest.FixtureRequest) -> Redactor:
    return default_redactor() if request.param == "hyperscan" else PORTABLE


def stored(redactor: Redactor, value: Any) -> Any:
    return orjson.loads(redactor.redact_call(b'{"q":"x"}', encode(value)[0])[1])


@pytest.mark.parametrize(
    "key",
    [
        "api_keys",
        "SECRET_KEY",
        "secretKey",
        "passphrase",
        "Cookie",
        "cookies",
        "Set-Cookie",
        "api--key",
        "API__KEY",
        "__api_key__",
        "api%5Fkey",
        "X-API-KEY",
        "AccountKey",
        "aws_secret_access_key",
        "SecretAccessKey",
        "ｐａｓｓｗｏｒｄ",
        "ＡＰＩ＿ＫＥＹ",
        "api key",
        "Proxy-Authorization",
        "db.password",
        "passwords",
    ],
)
def test_secret_keys(redactor: Redactor, key: str) -> None:
    assert redactor.is_secret_key(key)
    assert stored(redactor, {key: "v-123", "other": "kept"}) == {key: REDACTED, "other": "kept"}
    assert stored(redactor, {"nested": [{key: {"deep": 1}}]}) == {"nested": [{key: REDACTED}]}


def test_custom_keys_in_any_script_and_case(redactor: Redactor) -> None:
    engine = redactor._prefilter.engine
    custom = (Redactor if engine == "hyperscan" else portable_redactor)(keys=["contraseña", "密码", "ssn"])
    assert stored(custom, {"CONTRASEÑA": "x1", "Contraseña": "x2", "密码": "y", "SSN": "z"}) == {
        "CONTRASEÑA": REDACTED,
        "Contraseña": REDACTED,
        "密码": REDACTED,
        "SSN": REDACTED,
    }
    assert custom.redact_text("CONTRASEÑA: hunter22") == f"CONTRASEÑA: {REDACTED}"
    assert custom.redact_text("密码=hunter2") == f"密码={REDACTED}"
    assert custom.redact_text("ssn=123-45-6789") == f"ssn={REDACTED}"
    assert custom.redact_text("password=hunter2") == "password=hunter2"  # only the keys given


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # What is replaced
        ('password = "pa ss word"', f'password = "{REDACTED}"'),
        ('password = "Tr0ub4dor&3"', f'password = "{REDACTED}"'),
        ("api_key='k-1', debug=True", f"api_key='{REDACTED}', debug=True"),
        ('{"token": 12345}', f'{{"token": {REDACTED}}}'),
        ('{"api_keys": ["a1", "b2"]}', f'{{"api_keys": [{REDACTED}]}}'),
        ("Authorization: Bearer abc123defg, next", f"Authorization: Bearer {REDACTED}"),
        ('"Authorization": "Digest user=a, response=9f8e"', f'"Authorization": "Digest {REDACTED}"'),
        ("authorization = 'Bearer abc123defg'", f"authorization = '{REDACTED}'"),
        ("Cookie: a=1; b=2\nAccept: json", f"Cookie: {REDACTED}\nAccept: json"),
        ('cookie = "abc123"', f'cookie = "{REDACTED}"'),
        ("postgres://app:Xk9vQ2rL@db/x", f"postgres://app:{REDACTED}@db/x"),
        ("bEARER abcdefghijklmnop1234", f"bEARER {REDACTED}"),
        ("x -----BEGIN PRIVATE KEY-----\nMIIBVgIBADANBg", f"x {REDACTED}"),
        ('{"pem": "-----BEGIN EC PRIVATE KEY-----\\nMHcC\\n"}', f'{{"pem": "{REDACTED}"}}'),
        ("ｐａｓｓｗｏｒｄ：ｈｕｎｔｅｒ２", f"ｐａｓｓｗｏｒｄ：{REDACTED}"),
        ("password=hunter2 token=t0k3n", f"password={REDACTED} token={REDACTED}"),
        ("password=token=abc1", f"password={REDACTED}"),  # overlapping matches merge
        # What is kept
        ("password=password", "password=password"),
        ('password = "password"', 'password = "password"'),  # quoted or not, the key's own name is no secret
        ("postgres://app:password@db/x", "postgres://app:password@db/x"),
        ("token = self.token", "token = self.token"),
        ("password: str", "password: str"),
        ("password = None", "password = None"),
        ("Password: Required", "Password: Required"),
        ("Password: see below", "Password: see below"),
        ("{'secret': '********'}", "{'secret': '********'}"),
        ("token = tokenizer(text)", "token = tokenizer(text)"),
        (f"password={REDACTED}", f"password={REDACTED}"),
        (f"Cookie: {REDACTED}", f"Cookie: {REDACTED}"),
        ("https://example.com:8443/a@b", "https://example.com:8443/a@b"),
    ],
)
def test_assignments_and_formats_in_text(redactor: Redactor, text: str, expected: str) -> None:
    assert redactor.redact_text(text) == expected
    assert stored(redactor, {"v": text}) == {"v": expected}


def test_nothing_found_returns_the_very_same_objects(redactor: Redactor) -> None:
    text = "quarterly revenue grew"
    assert redactor.redact_text(text) is text
    data = os.urandom(4096).replace(b"SK", b"sk")
    assert redactor.redact_bytes(data) is data
    clean = encode({"q": text})[0]
    assert redactor(clean)[0] is clean


def test_a_bytes_value_is_stored_as_bytes_with_each_secret_replaced(redactor: Redactor) -> None:
    binary = b"\x89PNG\x00\xff\xfe" + b"AKIAIOSFODNN7EXAMPLE" + b"\x00\x01 password=hunter2 \xff"
    value = stored(redactor, binary)
    assert list(value) == ["$bytes"]
    raw = base64.b64decode(value["$bytes"])
    assert raw == b"\x89PNG\x00\xff\xfe" + REDACTED.encode() + b"\x00\x01 password=" + REDACTED.encode() + b" \xff"
    nested = stored(redactor, {"files": [b"plain bytes", b"token=" + b"abc123"], "name": "f"})
    assert [base64.b64decode(v["$bytes"]) for v in nested["files"]] == [b"plain bytes", b"token=" + REDACTED.encode()]
    assert nested["name"] == "f"


@pytest.mark.parametrize("size", [1_000, 2_000_000])
def test_bytes_without_secrets_are_stored_untouched(redactor: Redactor, size: int) -> None:
    binary = (bytes(range(256)) * (size // 256))[:size]
    data = encode(binary)[0]
    assert redactor.redact_call(b"{}", data)[1] is data


def test_a_look_alike_of_the_bytes_form_is_an_ordinary_dict(redactor: Redactor) -> None:
    assert stored(redactor, {"$bytes": "not base64 password=hunter2"}) == {"$bytes": f"not base64 password={REDACTED}"}
    assert stored(redactor, {"$bytes": "aGVsbG8=", "token": "t"}) == {"$bytes": "aGVsbG8=", "token": REDACTED}


def test_a_subclass_can_redact_bytes_its_own_way() -> None:
    class NoBytes(Redactor):
        def redact_bytes(self, data: bytes) -> bytes:
            return b"" if data else data

    assert stored(NoBytes(), {"blob": b"anything", "token": "t"}) == {"blob": {"$bytes": ""}, "token": REDACTED}


def test_a_pattern_with_a_screen_runs_only_where_the_screen_matches() -> None:
    pattern = SecretPattern("ticket", r"TKT-([0-9]{6})", ("TKT-",), screen=r"TKT-[0-9]{6}")
    for redactor in (Redactor(keys=(), patterns=[pattern]), portable_redactor(keys=(), patterns=[pattern])):
        assert redactor.redact_text("see TKT-123456 and TKT-12") == f"see TKT-{REDACTED} and TKT-12"
        assert redactor._prefilter.found(b"TKT-12") == {b"TKT-"}  # the literal, not the screen


def test_bad_patterns_are_refused() -> None:
    with pytest.raises(ConfigError, match="exactly one anchor"):
        Redactor(patterns=[SecretPattern("two", "a|b", ("a", "b"), screen="a|b")])
    with pytest.raises(ConfigError, match="not a valid regex"):
        Redactor(patterns=[SecretPattern("bad", "(", ("(",))])


@pytest.mark.parametrize(("form", "text", "secret"), FORMS, ids=[form for form, _, _ in FORMS])
def test_redacting_twice_changes_nothing_more(redactor: Redactor, form: str, text: str, secret: str) -> None:
    once = redactor.redact_text(f"x {text} y")
    assert redactor.redact_text(once) == once


# Inputs built to make a backtracking matcher retry from every position: each must take
# linear time (a quadratic rule would take minutes on these), and both engines must agree.
ADVERSARIAL = [
    b"token=" * 40_000,
    b"token" * 60_000,
    b"password:" + b" " * 200_000,
    b"api" + b"-" * 200_000 + b"key=x",
    b'password="' + b"a" * 300_000,
    b"password=[" + b"a" * 300_000,
    b"://" * 80_000,
    b"://a:" * 60_000,
    b"eyJ" * 80_000,
    b"eyJaaaaaaaaa." * 20_000,
    b"-----BEGIN PRIVATE KEY-----" * 10_000,
    b"-----BEGIN PRIVATE KEY-----" + b"-" * 200_000,
    b"sk-" * 80_000,
    b"Bearer " * 40_000,
    b"bearer " + b"a" * 300_000,
    b"AKIA" * 60_000,
    "ｐ".encode() * 80_000,
    b"\\uff50" * 40_000,
    b"Cookie: " * 30_000,
    b"x" * 300_000 + b"password=hunter2",
    b"password='" + b"a" * 180 + b"12345678901' ",  # placeholder tests on the longest value they judge
    b"token: '" + b"Ab " * 66 + b"x' ",
]


@pytest.mark.parametrize("data", ADVERSARIAL, ids=[d[:12].decode(errors="replace") for d in ADVERSARIAL])
def test_adversarial_inputs_take_linear_time_and_both_engines_agree(data: bytes) -> None:
    fast = default_redactor()
    assert fast.redact_bytes(data) == PORTABLE.redact_bytes(data)
    big = data * (1 + (1 << 20) // len(data))  # past 1 MiB, where rules are tried where their literal is
    assert fast.redact_bytes(big) == PORTABLE.redact_bytes(big)
    text = encode(data.decode(errors="replace"))[0]
    assert fast(text) == PORTABLE(text)


PIECES = [text for _, text, _ in FORMS] + ORDINARY + ["", " ", "\n", '"', "=", ":", "x", "token", "Password"]
json_values = st.recursive(
    st.none() | st.integers() | st.lists(st.sampled_from(PIECES), max_size=4).map("".join) | st.binary(max_size=40),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(["q", "token", "api_key", "note", "max_tokens", "Cookie"]), children, max_size=3
        )
    ),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)  # the first example builds the redactors
@given(json_values)
def test_both_engines_redact_everything_the_same_way(value: Any) -> None:
    data = encode(value)[0]
    fast = default_redactor()
    assert fast(data) == PORTABLE(data)
    args = encode({"v": value}, sort_keys=True)[0]
    assert fast.redact_call(args, data) == PORTABLE.redact_call(args, data)
    # Running only the rules whose fragments the scan found gives what every rule gives.
    assert orjson.loads(fast(data)[0]) == fast.redact_value(orjson.loads(data))


@pytest.mark.parametrize(
    "text",
    [
        'log: password=hunter2 "quoted" back\\slash\ttab\r\n\x08\x0c end',
        "password=hunter2 with a bell \x07 and an escape \x1b[0m",
        "a path C:\\u0041 and password=hunter2",
        "ｐａｓｓｗｏｒｄ=hunter2 é",
        "nothing to see",
    ],
)
def test_a_string_result_is_written_as_orjson_writes_it(redactor: Redactor, text: str) -> None:
    data = encode(text)[0]
    stored, changed = redactor(data)
    assert stored == orjson.dumps(redactor.redact_text(text))
    assert changed == (redactor.redact_text(text) != text)


@pytest.mark.parametrize("key", ["api/key", "api:key", "Private+Key", "access·key", "secret key"])
def test_dict_keys_split_at_any_punctuation(redactor: Redactor, key: str) -> None:
    assert redactor.is_secret_key(key)
    assert stored(redactor, {key: "v-123"}) == {key: REDACTED}


LARGE_PIECES = [
    'password=hunter2 "quoted" back\\slash\ttab\r\n\x08\x0c\x07\x1b[0m é 😀 ',
    "a literal \\u0041 and \\u001b in source, token: t0k3n-value\n",
    'json.dumps: {"api_key": "k-123"} and {\\"token\\": \\"t-456\\"}\n',
    "ｐａｓｓｗｏｒｄ＝hunter2 and \\uff50\\uff41\\uff53\\uff53\\uff57\\uff4f\\uff52\\uff44=hunter3\n",
    "AKIAIOSFODNN7EXAMPLE sk-proj1234567890abcdefghijKLMN postgres://u:pw9@h/x\n",
    "ordinary filler line without anything in it\n" * 40,
]


PLAIN_PIECES = [  # no control character but the short-escaped ones, no backslash before u or /
    'password=hunter2 "quoted" back\\slash\ttab\r\n\x08\x0c é 😀 ',
    'json.dumps: {"api_key": "k-123"} and {\\"token\\": \\"t-456\\"}\n',
    "ｐａｓｓｗｏｒｄ＝hunter2 and AKIAIOSFODNN7EXAMPLE, postgres://u:pw9@h/x\n",
    "ordinary filler line without anything in it\n" * 40,
]


@pytest.mark.parametrize(
    "pieces",
    [LARGE_PIECES, PLAIN_PIECES, LARGE_PIECES[5:]],
    ids=["secrets and controls", "secrets", "clean"],
)
def test_a_large_string_result_is_written_as_orjson_writes_it(redactor: Redactor, pieces: list[str]) -> None:
    # Past 1 MiB a string result is read and written as JSON directly, without a str.
    text = "".join(pieces) * (1 + (1 << 20) // len("".join(pieces)))
    data = encode(text)[0]
    stored, changed = redactor(data)
    expected = redactor.redact_text(text)
    assert stored == orjson.dumps(expected)
    assert changed == (expected != text)
    assert stored is data or changed


@pytest.mark.parametrize(
    "text",
    [
        "a literal \\u00e9 and a regex \\/x\\/ in source, password=hunter2\n",
        "a literal \\\\u00e9 and \\\\/ after two backslashes, token: t0k3n-value\n",
    ],
)
def test_large_string_results_with_backslashes_before_u_or_slash(redactor: Redactor, text: str) -> None:
    text = text * (1 + (1 << 20) // len(text))
    data = encode(text)[0]
    assert redactor(data)[0] == orjson.dumps(redactor.redact_text(text))
