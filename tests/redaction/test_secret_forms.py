"""Every secret form the default rules cover, redacted wherever it may sit, by both scan engines.

Each form is a piece of text and the part of it that must not be stored. It is put in a
plain-text result, in a dict value, in a result that is JSON held in a string (its quotes
escaped once more), in a bytes result, in the arguments, and in a text large enough
(over 1 MiB) that rules are tried only where their literal occurs.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from toolctx._serialize import encode
from toolctx.redaction import DEFAULT_PATTERNS, REDACTED, Redactor, default_redactor


def _fake(alphabet: str, length: int) -> str:
    return (alphabet * (length // len(alphabet) + 1))[:length]


MIXED = "A1b2C3d4E5f6G7h8"
HEX = "0123456789abcdef"

# (form, text, the part that must go)
FORMS: list[tuple[str, str, str]] = [
    # Secret keys in text
    ("password=", "password=hunter2", "hunter2"),
    ("env DB_PASSWORD=", "DB_PASSWORD=s3cr3t-value", "s3cr3t-value"),
    ("yaml password:", "database:\n  password: hunter2x\n  host: db", "hunter2x"),
    ("yaml password: long word", "password: correcthorsebattery", "correcthorsebattery"),
    ("ini password =", "[db]\npassword = p4ssw0rd\n", "p4ssw0rd"),
    ("SECRET_KEY setting", "SECRET_KEY = 'django-insecure-9x8y7z'", "django-insecure-9x8y7z"),
    ("passphrase", "passphrase: open-sesame-42", "open-sesame-42"),
    ("api_key in JSON string", json.dumps({"api_key": "abc123def456"}), "abc123def456"),
    ("api_keys plural list", json.dumps({"api_keys": ["k1-abc123", "k2-def456"]}), "k1-abc123"),
    ("api_keys plural list, second", json.dumps({"api_keys": ["k1-abc123", "k2-def456"]}), "k2-def456"),
    ("api--key repeated separator", "api--key=abc123def456", "abc123def456"),
    ("API__KEY doubled underscore", "API__KEY=abc123def456", "abc123def456"),
    ("X-Api-Key header", "X-Api-Key: 0123456789abcdef", "0123456789abcdef"),
    ("clientSecret camel case", '{"clientSecret": "cs-9f8e7d6c"}', "cs-9f8e7d6c"),
    ("python dict repr", "{'user': 'ada', 'password': 'Qz8-vW3e-Lp1'}", "Qz8-vW3e-Lp1"),
    ("kwarg literal", "client = Client(api_key='ak-123456789')", "ak-123456789"),
    ("query access_token", "GET /callback?access_token=ya29.a0AfH6SMBx3&state=xyz", "ya29.a0AfH6SMBx3"),
    ("url-encoded api%5Fkey", "/v1/items?api%5Fkey=abc123def456&page=2", "abc123def456"),
    ("npmrc _authToken", "//registry.npmjs.org/:_authToken=0b1c2d3e-4f5a-6b7c-8d9e", "0b1c2d3e-4f5a-6b7c-8d9e"),
    (
        "azure AccountKey",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6"
        "IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;EndpointSuffix=core.windows.net",
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6",
    ),
    (
        "aws secret access key",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    ("aws credentials JSON", '{"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG"}', "wJalrXUtnFEMI/K7MDENG"),
    ("full-width key", "ｐａｓｓｗｏｒｄ=hunter2", "hunter2"),
    ("full-width colon", "password：hunter22x", "hunter22x"),
    # Headers
    ("bearer", "Authorization: Bearer abcDEF123456789xyz", "abcDEF123456789xyz"),
    ("bearer alone", "use bearer eyJ0eXAi0123456789 for it", "eyJ0eXAi0123456789"),
    ("basic auth header", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
    ("token auth header", "Authorization: token 9f8e7d6c5b4a39281706", "9f8e7d6c5b4a39281706"),
    ("cookie header", "Cookie: sessionid=9f8e7d6c5b4a; csrftoken=abc123", "9f8e7d6c5b4a"),
    ("cookie header, second cookie", "Cookie: sessionid=9f8e7d6c5b4a; csrftoken=abc123", "abc123"),
    ("set-cookie header", "Set-Cookie: sid=31d4d96e407aad42; Path=/; HttpOnly", "31d4d96e407aad42"),
    # Credentials in URLs
    ("postgres DSN", "postgres://app:pa55w0rd@db.internal:5432/app", "pa55w0rd"),
    ("https userinfo", "https://alice:s3cr3tpw@example.com/repo.git", "s3cr3tpw"),
    ("redis empty user", "redis://:hunter2pw@cache:6379/0", "hunter2pw"),
    ("password with @", "mysql://root:p@ssw0rd@localhost/db", "p@ssw0rd"),
    # Prefixed tokens
    ("openai", "key sk-proj1234567890abcdefghijKLMN in config", "sk-proj1234567890abcdefghijKLMN"),
    ("anthropic", "sk-ant-api03-" + _fake(MIXED, 40), _fake(MIXED, 40)),
    ("stripe live", "sk_live_" + _fake(MIXED, 24), _fake(MIXED, 24)),
    ("stripe restricted test", "rk_test_" + _fake(MIXED, 24), _fake(MIXED, 24)),
    ("aws key id", "AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
    ("aws sts key id", "id=ASIAY34FZKBOKMUTVV7A.", "Y34FZKBOKMUTVV7A"),
    ("github pat", "ghp_" + _fake(MIXED, 36), _fake(MIXED, 36)),
    ("github app", "ghs_" + _fake(MIXED, 36), _fake(MIXED, 36)),
    ("github fine-grained", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "11ABCDEFG0123456789_abcdefghijklmnop"),
    ("gitlab", "glpat-" + _fake(MIXED, 20), _fake(MIXED, 20)),
    ("grafana service account", "glsa_" + _fake(MIXED, 32) + "_0a1b2c3d", _fake(MIXED, 32)),
    ("slack bot", "xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOpQrStUvWx"),
    ("slack app", "xapp-1-A0123456789-1234567890123-abcdef0123456789", "abcdef0123456789"),
    (
        "slack webhook",
        "https://hooks.slack.com/services/T0A1B2C3D/B4E5F6G7H/" + _fake(MIXED, 24),
        "B4E5F6G7H/" + _fake(MIXED, 24),
    ),
    ("google api key", "AIzaSyA0123456789abcdefghijklmnopqrstuv", "SyA0123456789abcdefghijklmnopqrstuv"),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    (
        "pem private key",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nq83kdl3\n-----END RSA PRIVATE KEY-----",
        "MIIEpAIBAAKCAQEA",
    ),
    ("pem openssh key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n", "b3BlbnNzaC1rZXktdjE"),
    ("npm", "npm_" + _fake(MIXED, 36), _fake(MIXED, 36)),
    ("hugging face", "hf_" + _fake("AbCdEfGhIjKlMnOpQrStUvWxYz", 34), _fake("AbCdEfGhIjKlMnOpQrStUvWxYz", 34)),
    ("pypi", "pypi-AgEIcHlwaS5vcmc" + _fake(MIXED, 60), _fake(MIXED, 60)),
    ("sendgrid", "SG." + _fake(MIXED, 22) + "." + _fake(MIXED, 43), _fake(MIXED, 43)),
    ("shopify", "shpat_" + _fake(HEX, 32), _fake(HEX, 32)),
    ("digitalocean", "dop_v1_" + _fake(HEX, 64), _fake(HEX, 64)),
    ("twilio", "SK" + _fake(HEX, 32), _fake(HEX, 32)),
    ("square", "sq0atp-" + _fake(MIXED, 22), _fake(MIXED, 22)),
    ("databricks", "dapi" + _fake(HEX, 32), _fake(HEX, 32)),
    ("vault", "hvs." + _fake(MIXED, 95), _fake(MIXED, 95)),
    ("age", "AGE-SECRET-KEY-1" + _fake("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58), "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"),
    ("groq", "gsk_" + _fake(MIXED, 52), _fake(MIXED, 52)),
    ("perplexity", "pplx-" + _fake(MIXED, 48), _fake(MIXED, 48)),
    ("xai", "xai-" + _fake(MIXED, 80), _fake(MIXED, 80)),
    ("replicate", "r8_" + _fake(MIXED, 37), _fake(MIXED, 37)),
    ("linear", "lin_api_" + _fake(MIXED, 40), _fake(MIXED, 40)),
    ("postman", "PMAK-" + _fake(HEX, 24) + "-" + _fake(HEX, 34), _fake(HEX, 34)),
    ("heroku", "HRKU-AA" + _fake(MIXED, 58), _fake(MIXED, 58)),
    ("sentry", "sntryu_" + _fake(HEX, 64), _fake(HEX, 64)),
    ("doppler", "dp.pt." + _fake(MIXED, 43), _fake(MIXED, 43)),
    ("atlassian", "ATATT3" + _fake("xFfGF0", 186), _fake("xFfGF0", 186)),
    ("1password", "ops_eyJ" + _fake(MIXED, 120), _fake(MIXED, 120)),
    ("telegram bot", "bot 123456789:AA" + _fake(MIXED, 33), _fake(MIXED, 33)),
]


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


PEM = b"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"

# Forms once stored raw: keys named ``pass`` and ``pwd``, JSON escapes, URL encoding, base64 and invisible
# characters hiding a key or a secret. (A secret used as a dict key has its own test below.)
HIDDEN_FORMS: list[tuple[str, str, str]] = [
    ("pwd in JSON text", '{"user": "ada", "pwd": "hunter2x"}', "hunter2x"),
    ("pass assignment", "pass=hunter2x", "hunter2x"),
    ("DB_PASS setting", "DB_PASS: hunter2x", "hunter2x"),
    ("quoted pass", "pass: 'hunter2x'", "hunter2x"),
    ("escaped value", '{"password": "\\u0068unter2x"}', "unter2x"),
    ("escaped key", '{"\\u0070assword": "hunter2x"}', "hunter2x"),
    ("escaped operator", "password\\u003dhunter2x", "hunter2x"),
    ("url-encoded assignment", "q=password%3Dhunter2x&y=1", "hunter2x"),
    ("url-encoded in a redirect", "next=%2Flogin%3Fpassword%3Dhunter2x%26x%3D1", "hunter2x"),
    ("url-encoded JSON", "data=%7B%22token%22%3A%22abc123def456%22%7D", "abc123def456"),
    ("url-encoded value in a URL", "https://x.example/cb?token=abc%2Fdef123&x=1", "abc%2Fdef123"),
    ("base64 of an AWS key id", "blob " + _b64(b"AKIAIOSFODNN7EXAMPLE"), _b64(b"AKIAIOSFODNN7EXAMPLE")),
    ("base64 after a path", "/tmp/x/" + _b64(b"id: AKIAIOSFODNN7EXAMPLE"), _b64(b"id: AKIAIOSFODNN7EXAMPLE")),
    ("url-safe base64", base64.urlsafe_b64encode(b"\xfb\xff token=hunter2x").decode(), "-_8gdG9rZW49aHVudGVyMng"),
    ("base64 of an assignment", "Basic-ish " + _b64(b"password=hunter2x"), _b64(b"password=hunter2x")),
    ("base64 of a PEM key", "key: " + _b64(PEM), _b64(PEM)[:40]),
    ("zero-width space in a key", "pass\u200bword=hunter2x", "hunter2x"),
    ("zero-width joiner in a key", "api_\u200dkey: hunter2x", "hunter2x"),
    ("zero-width space in a token", "AKIA\u200bIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
    ("soft hyphen in a key", "pass\u00adword=hunter2x", "hunter2x"),
    ("escaped zero-width in a key", "pass\\u200bword=hunter2x", "hunter2x"),
]


# Ordinary text that must come out exactly as it went in.
ORDINARY: list[str] = [
    "token = tokenizer(text)",
    "tokens = tokenizer.encode(text, max_tokens=1024)",
    "The password must be at least 8 characters long.",
    "Forgot your password? Enter your password: it is case sensitive.",
    "Password: see below",
    "Keep the secret sauce secret; the token economy grows.",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "def login(user: str, password: str, token: Optional[str] = None) -> bool:",
    "client.login(username=user, password=password)",
    "self.token = token",
    "api_key = settings.API_KEY",
    "password = None",
    "token: str",
    "secret_name: prod-db\npassword_hint: first pet",
    "num_tokens = 5; token_count: 12",
    "the bearer of bad news",
    "bearer instruments",
    "basic authentication is configured",
    "https://example.com:8443/path?x=1",
    "git@github.com:org/repo.git and ssh://git@github.com/org/repo",
    "task-1234567890abcdefghijklmnopqrstu",
    "from sklearn import svm  # sk-learn",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIB\n-----END PUBLIC KEY-----",
    "{'password': '********************'}",
    "cookie = request.COOKIES.get(name)",
    "raw_cookie = get_str_from_wsgi(self.environ, 'HTTP_COOKIE', '')",
    "ASIA and AKIA are prefixes",
    "AIza is how a Google key starts",
    "xoxo, see you",
    "全角の句読点，「ですます」。",
    "PASS: NonFilterableExpression raised nothing",
    "Pass: True; pass: 10; PASS: test_parse_args",
    "PWD=/testbed OLDPWD=/root; pwd: ~/src; pwd=../work",
    "bypass=abcdefgh123 compass: north-north-east",
    '{"html": "\\u003cb\\u003ebold\\u003c/b\\u003e", "esc": "\\u001b[31mred"}',
    "\ufeffname,score\nada,10",
    "see docs: password%3D%7Bpassword%7D and token%3Dtest",
    "blob " + _b64(b"password: see below, the token is fine"),
    "sha256:" + _b64(bytes(range(32))),
]

ORDINARY_KEYS = ["max_tokens", "token_count", "tokens", "secret_name", "author", "keyword", "password_hint", "key"]


def stored_result(redactor: Redactor, result: Any, args: Any = None) -> Any:
    """What a session would store for a call returning ``result``."""
    args_json = encode(args if args is not None else {"q": "x"}, sort_keys=True)[0]
    return orjson.loads(redactor.redact_call(args_json, encode(result)[0])[1])


def stored_args(redactor: Redactor, args: dict[str, Any]) -> Any:
    return orjson.loads(redactor.redact_call(encode(args, sort_keys=True)[0], b'"ok"')[0])


def as_bytes(value: Any) -> bytes:
    assert isinstance(value, dict)
    assert list(value) == ["$bytes"]  # a redacted bytes value keeps its stored form
    return base64.b64decode(value["$bytes"])


CONTEXTS: dict[str, Callable[[Redactor, str], str]] = {
    "text result": stored_result,
    "dict value": lambda r, text: stored_result(r, {"log": [{"line": text}]})["log"][0]["line"],
    "json string result": lambda r, text: json.loads(stored_result(r, json.dumps({"body": text})))["body"],
    "bytes result": lambda r, text: as_bytes(stored_result(r, text.encode())).decode(),
    "argument": lambda r, text: stored_args(r, {"command": text})["command"],
    "large text": lambda r, text: (
        stored_result(r, "filler line\n" * 90_000 + text + "\nend").rpartition("filler line\n")[2].removesuffix("\nend")
    ),
}


@pytest.mark.parametrize("context", sorted(CONTEXTS))
@pytest.mark.parametrize(("form", "text", "secret"), FORMS, ids=[form for form, _, _ in FORMS])
def test_every_form_is_redacted_wherever_it_sits(
    redactor: Redactor, context: str, form: str, text: str, secret: str
) -> None:
    assert secret in text
    stored = CONTEXTS[context](redactor, f"before {text} after")
    assert secret not in stored
    assert REDACTED in stored
    assert stored.startswith("before ")


@pytest.mark.parametrize("context", sorted(CONTEXTS))
@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_kept(redactor: Redactor, context: str, text: str) -> None:
    assert CONTEXTS[context](redactor, f"before {text} after") == f"before {text} after"


@pytest.mark.parametrize("key", ORDINARY_KEYS)
def test_ordinary_keys_are_kept_in_text_too(redactor: Redactor, key: str) -> None:
    for text in (f"{key}=12345", f"{key}: abc123", f'{{"{key}": "abc123"}}'):
        assert redactor.redact_text(text) == text


def test_every_default_pattern_has_a_form() -> None:
    covered = set()
    for _, text, _ in FORMS:
        raw = text.encode()
        for pattern in DEFAULT_PATTERNS:
            rule = next(r for r in default_redactor()._rules if r.name == pattern.name)
            text_for_rule = raw.lower() if rule.caseless else raw
            if rule.regex.search(text_for_rule):
                covered.add(pattern.name)
    assert covered == {p.name for p in DEFAULT_PATTERNS}


def test_the_documented_rule_list_names_every_default_key_and_pattern_in_order() -> None:
    import toolctx.redaction as module

    doc = module.__doc__ or ""
    listed_keys = re.search(r":data:`DEFAULT_KEYS` \((.*?)\)", doc, re.DOTALL)
    assert listed_keys is not None
    assert tuple(re.findall(r"``(\w+)``", listed_keys.group(1))) == module.DEFAULT_KEYS
    lines = doc.splitlines()
    rules = [i for i, line in enumerate(lines) if line.startswith("=====")]
    assert len(rules) == 3  # the formats table: its head, the line under it, its foot
    table = lines[rules[1] + 1 : rules[2]]
    listed_patterns = [m.group(1) for line in table if (m := re.match(r"``([\w-]+)``", line))]
    assert listed_patterns == [p.name for p in DEFAULT_PATTERNS]


def test_uuids_and_hashes_under_a_secret_key_are_redacted(redactor: Redactor) -> None:
    value = {"token": "123e4567-e89b-12d3-a456-426614174000", "sha": "3f786850e387550fdab836ed7e6dc881de23001b"}
    assert stored_result(redactor, value) == {"token": REDACTED, "sha": value["sha"]}
    assert redactor.redact_text(f"token={value['token']}") == f"token={REDACTED}"


@pytest.mark.parametrize("context", sorted(CONTEXTS))
@pytest.mark.parametrize(("form", "text", "secret"), HIDDEN_FORMS, ids=[form for form, _, _ in HIDDEN_FORMS])
def test_hidden_forms_are_redacted_wherever_they_sit(
    redactor: Redactor, context: str, form: str, text: str, secret: str
) -> None:
    assert secret in text
    stored = CONTEXTS[context](redactor, f"before {text} after")
    assert secret not in stored
    assert REDACTED in stored
    assert stored.startswith("before ")


def test_a_secret_used_as_a_dict_key_is_redacted(redactor: Redactor) -> None:
    token = "sk-live-" + _fake(MIXED, 24)
    other = "sk-live-" + _fake(HEX, 24)
    stored = stored_result(redactor, {token: 1, other: 2, "nested": [{f"password={token}": 3}], "plain": 4})
    assert token not in str(stored)
    assert other not in str(stored)
    assert stored == {REDACTED: 1, f"{REDACTED} (2)": 2, "nested": [{f"password={REDACTED}": 3}], "plain": 4}
    assert stored_args(redactor, {"headers": {token: "x"}}) == {"headers": {REDACTED: "x"}}
    assert redactor.redact_value({token: 1}) == {REDACTED: 1}


def test_a_secret_key_with_an_invisible_character_is_still_a_secret_key(redactor: Redactor) -> None:
    assert stored_result(redactor, {"pass\u200bword": "hunter2x", "pwd": "hunter2x"}) == {
        "pass\u200bword": REDACTED,
        "pwd": REDACTED,
    }
    assert redactor.is_secret_key("DB_\ufeffPASSWORD")


def test_the_second_meanings_of_pass_and_pwd_are_kept(redactor: Redactor) -> None:
    verdicts = {"pass": 10, "fail": 0, "results": [{"pass": True}], "pwd": "/home/ada", "PWD": "~/src"}
    assert stored_result(redactor, verdicts) == verdicts
    assert stored_args(redactor, {"pwd": "C:\\work"}) == {"pwd": "C:\\work"}
    secrets = {"pass": "hunter2x", "pwd": "hunter2x", "db_pass": 123456}
    assert stored_result(redactor, secrets) == dict.fromkeys(secrets, REDACTED)
