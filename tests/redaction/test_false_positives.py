"""Code and text that mention secrets without holding one come out exactly as they went in.

A redacted copy of source code is what a model reads back and may copy into a file, so a
marker where there was no secret corrupts the user's code. Each case below is a short line
of the kinds found in coding sessions and in well-known Python projects (web framework
settings and tests, HTTP client examples, docs): format strings, template fields,
placeholders and dummy values, and prose or code around the words password, secret and
token. Each is checked in every place a session stores text, by both scan engines.
:data:`STILL_SECRET` lists look-alikes that are real secrets and must still be redacted.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.redaction.test_secret_forms import CONTEXTS
from toolctx.redaction import REDACTED, Redactor

# (kind, text): kept whole.
KEPT: list[tuple[str, str]] = [
    # Format strings and template fields: the value is filled in later.
    ("printf field", "raise ValueError('Change password: %s' % user)"),
    ("printf field in prose", "msg = _('Change password: %s') % obj"),
    ("printf after =", 'url = "login?password=%s" % quote(pw)'),
    ("printf pair", 'token = "%s:%s" % (user, key)'),
    ("printf with width", 'line = "secret=%-10s|" % name'),
    ("printf repr", 'raise ValueError("Invalid token: %r" % token)'),
    ("named printf field", 'log.info("token: %(token)s", {"token": t})'),
    ("str.format field", 'query = "api_key={}".format(key)'),
    ("str.format index", 'query = "password={0}".format(pw)'),
    ("str.format name", 'x = {"password": "{password}"}'),
    ("f-string field", 'header = f"token={token}"'),
    ("f-string attribute", 'line = f"SECRET_KEY = {settings.SECRET_KEY!r}"'),
    ("f-string URL", 'url = f"postgres://{user}:{password}@{host}/{db}"'),
    ("f-string header", 'headers = {"Authorization": f"Bearer {token}"}'),
    ("shell variable", "PASSWORD=$DB_PASS ./manage.py migrate"),
    ("shell braces", "password: ${DB_PASSWORD}"),
    ("shell braces in URL", "DATABASE_URL=postgres://app:${DB_PASSWORD}@db:5432/app"),
    ("shell command", 'TOKEN="$(cat /run/secrets/token)"'),
    ("jinja field", 'password: "{{ vault_db_password }}"'),
    ("JS template", "headers: { Authorization: `Bearer ${token}` }"),
    ("ERB field", "  password: <%= ENV['DB_PASSWORD'] %>"),
    ("angle placeholder", '"password": "<your-password>"'),
    ("angle header", "Authorization: Bearer <token>"),
    ("bracket placeholder", 'api_key = "[YOUR_API_KEY]"'),
    # Placeholders and dummy values that say they are not real.
    ("changeme", "SECRET_KEY = 'changeme'"),
    ("changeme in YAML", "  password: changeme"),
    ("stars", 'password = "********"'),
    ("bullets", "Password: ••••••••"),
    ("masked but for the end", 'token: "****a1b2"'),
    ("xxx", "token: xxx"),
    ("x run in a key format", 'OPENAI_API_KEY="sk-xxxxxxxxxxxxxxxxxxxxxxxx"'),
    ("x run in a GitHub token", "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
    ("your key here", "API_KEY=your-api-key-here"),
    ("YOUR_API_KEY", "api_key = 'YOUR_API_KEY'"),
    ("enter your password", "{'password': 'Enter your password here'}"),
    ("the key's own name", "User.objects.create_user('ada', password='password')"),
    ("the key's own name, upper case", "SECRET_KEY = 'SECRET_KEY'"),
    ("secret", "initial = {'login': 'cooper', 'password': 'secret'}"),
    ("test", "settings.configure(DEBUG=True, SECRET_KEY='test')"),
    ("test-secret-key", "    SECRET_KEY='test-secret-key',"),
    ("a settings name", 'SECRET_KEY = "project_tests_secret_key"'),
    ("dummy", 'client_secret = "dummy"'),
    ("fake", 'token = "fake-token"'),
    ("example", 'api_key = "example-api-key"'),
    ("test password", "user = User(username='ada', password='testpassword')"),
    ("counted", "{'name': 'ada', 'password': 'secret123'}"),
    ("hashed", "    password = 'hashed_password_1'"),
    ("something", "create_superuser(username='admin', password='something', email='a@b.c')"),
    ("value", "MY_SETTING = {'foo': 'value', 'secret': 'value', 'token': 'value'}"),
    ("alphabet", "new_secret = 'abcdefghijkl'"),
    ("dev", 'app.config.from_mapping(SECRET_KEY="dev")'),
    ("one character", "{'token': 'x', 'password': 'y'}"),
    ("URL user:pass", 'proxies = {"https": "http://user:pass@10.10.1.10:1080"}'),
    ("URL user:password", 'requests.get("https://user:password@httpbin.org/basic-auth/user/password")'),
    ("URL printf", '"postgres://%s:%s@%s/%s" % (user, password, host, name)'),
    # Prose and code around the words.
    ("getpass", "password = getpass()"),
    ("getpass prompt", 'password = getpass.getpass("Password: ")'),
    ("prompt then code", 'password = input("Password: ") or default_password'),
    ("print label", 'print("token:", token)'),
    ("concatenation", 'print("Your token: " + token)'),
    ("index", "token = tokens[0]"),
    ("attribute", "secret_key=settings.SECRET_KEY"),
    ("method", "def check_password(self, raw_password):"),
    ("condition", "if not password:"),
    ("one-line condition", "if not token: continue"),
    ("other keys", "token_type = 'bearer'; password_reset_timeout = 259200"),
    ("form field", "password = forms.CharField(strip=False, widget=forms.PasswordInput)"),
    ("error list", 'self.assertEqual(form.errors["password"], ["This field is required."])'),
    ("error sentence", "{'password': 'This password is too common.'}"),
    ("docstring param", "    :param password: the raw password to check."),
    ("docstring type", "    password (str): The user's password."),
    ("comment", "# Password: wrong. Ask again, the token: expired."),
    ("header index", "headers['Authorization'] = _basic_auth_str(username, password)"),
    ("django setting from env", "SECRET_KEY = os.environ.get('SECRET_KEY')"),
    ("flask config index", 'app.config["SECRET_KEY"] = os.urandom(16)'),
    ("empty", "'PASSWORD': '',"),
    ("development key", "SECRET_KEY = 'development key'"),
    ("type annotation", "def send(self, cookies: CookieJar | None = None, token: Token | None = None):"),
    ("union annotation", "    cookies: RequestsCookieJar | dict[str, str] | None"),
    ("docstring field", "    :param cookies: Dictionary or CookieJar object to attach."),
    ("docstring type field", "    :type password: PasswordValidator"),
    ("header name in a check", "assert b'Authorization:' not in sent"),
    ("header from a variable", 'session.headers.update({"Proxy-Authorization": proxy_auth})'),
    ("call argument", "r = requests.get(url, cookies=jar)"),
    ("sentence, then a role", "- Set the SameSite attribute on the session cookie. :pr:`1234`"),
    ("URL-encoded placeholder", '"http://user:pass%20pass@example.com/path"'),
    ("a state after a password's colon", "password: changed\n"),
    ("a state after a token's colon", "token: expired\n"),
    ("a one-line condition, then return", "if not password: return\n"),
    ("a one-line condition, then a call", "\n    if ok and password: abort\n"),
    ("a short word under a key no password is", "token: abc\n"),
    ("a name with a colon in it", '    "passwd:dir",\n'),
    # Code from installed packages' sources (``bench/redaction_false_positives.py --tree``).
    ("a comparison with a name", "        elif token == TOKEN_NAME:"),
    ("a comparison with an attribute", 'elif cmd == "pinauth" and secret == self.secret:'),
    ("a lexer's token compared with a word", "        elif token == 'keyword':"),
    ("a lexer's token compared with a mark", 'elif token == "#bygroup":'),
    ("await", "    token = await preview.tokens.create(expires_at)"),
    ("await, a key with words", "api_key = await get_api_key(options)"),
    ("a lambda", "get_token = lambda: os.environ['TOKEN']"),
    ("a variable passed on, then a comma", "        secrets=secrets_map,\n"),
    ("a variable in a dict", '            "secrets": secrets_map,\n'),
    ("a variable in a dict, then its end", '    "kwargs": {"token": traced_item},'),
    ("a type in a signature", "def token_line(token: SyntaxTreeNode, default: int | None = None) -> int:"),
    ("a type, then a comma", "        private_key: CertificateIssuerPrivateKeyTypes,\n"),
    ("a type with a digit, then a comma", "        private_key: PKCS7PrivateKeyTypes,\n"),
    ("a header typed as optional", "    authorization: Optional[str] = None,\n"),
    ("a header typed str", "    cookie: str\n"),
    ("a header typed as a union", "    cookie: str | None = None,\n"),
    ("a header typed, then the next parameter", "def set_ok(self, cookie: Cookie, request: Request) -> bool: ..."),
    ("a described argument", "        api_key: Explicitly-provided API key, or None if not set by the caller.\n"),
    ("a described argument, a long word", "        client_secret: Configuration options for the generated secret.\n"),
    ("a header's scheme alone", 'authorization = b"Basic " + base64.b64encode(userpass)'),
    ("an elided key", '    api_key="hf_...",  # Pass your HF token'),
    ("an elided key in a command", "secrets add -s OPENAI_API_KEY=sk-... -s TOKEN=..."),
    ("an optional type in a schema", '    "password": "string?",'),
    ("a TypeScript name asserted non-null", "const apiKey = process.env.OPENAI_API_KEY!;"),
    ("a TypeScript name in an object", "    apiKey: process.env.OPENAI_API_KEY!,\n"),
    ("angle fields joined", 'For example `{"Proxy-Authorization": "Basic <username>:<password>"}`.'),
    ("a header's scheme alone in a dict", 'headers = {"Authorization": "Basic " + encoded}'),
    ("a header typed in a schema", '    "authorization": "string?",'),
    ("a placeholder in JSON escaped as Go writes it", '{"token": "\\u003cYOUR_TOKEN\\u003e"}'),
    # Django's sources (``--tree`` over the 4.2 sdist)
    ("a token compared with a word in capitals", '        if csrf_token == "NOTPROVIDED":'),
    ("a token that is a phrase", '        token = "is not"'),
    ("a filler repeated", '        meta_token=16 * "a",'),
    ("a quoted filler repeated", '@override_settings(SECRET_KEY="abcd" * 20)'),
    ("a tuple unpacked", "\n        cookie, post_token, meta_token = args\n"),
    ("a tuple of names unpacked", "user, password = get_user(), get_password()"),
    ("a tuple of a name and a call", "\nuser, password = ada, getpass()\n"),
    ("a tuple of names swapped", "\n    old_token, token = token, new_token"),
    ("parameters, one with a default", "def connect(password, user='ada'):"),
    ("a method's parameters", "def check_password(self, raw_password):"),
    ("arguments after others", "request(method, path + resource, sandbox_token=self._sandbox_token, **kwargs)"),
    ("a grammar's rule", "#   token          = 1*tchar"),
    ("a call's arguments on their own line", '\ndecoded = jwt.decode(\n    token, key, algorithms="RS256")\n'),
    ("keyword arguments after a key's name", '\n    api_key, model="gpt-4o-mini", temperature=0.2)\n'),
    ("an arrow function", '\n(password, user) => "anonymous"\n'),
    ("a tuple's filler repeated", '\nDEBUG, SECRET_KEY = True, "abcd" * 20\n'),
    ("a tuple's working directory", '\npwd, user = "/home/ada", "ada"\n'),
    ("a tuple's scheme", '\ntoken, expires_in = "Bearer", 3600\n'),
    ("a tuple's lexer token", '\ntoken, kind = "not in", OP\n'),
    ("a tuple of names", "\npassword, user = user, password\n"),
    ("a loop over pairs", "\nfor user, password in pairs:\n"),
    ("a comparison on a header's line", '    "no_cookie": reason == REASON_NO_CSRF_COOKIE,'),
]

# (kind, text, the part that must go): real secrets next to the forms above.
STILL_SECRET: list[tuple[str, str, str]] = [
    ("YAML password", "  password: hunter2", "hunter2"),
    ("generated settings key", "SECRET_KEY = 'django-insecure-9x8y7z6w5v4u'", "django-insecure-9x8y7z6w5v4u"),
    ("flask bytes key", "app.secret_key = b'_5#y2L\"F4Q8z'", '_5#y2L"F4Q8z'),
    ("hex key", 'api_key = "a8f5f167f44f4964e6c998dee827110c"', "a8f5f167f44f4964e6c998dee827110c"),
    ("passphrase", 'password = "correct horse battery staple"', "correct horse battery staple"),
    ("a real default password", "DB_PASSWORD=postgres", "postgres"),
    ("a weak password", "password: admin123", "admin123"),
    ("a short word, YAML", "db:\n  password: admin\n", "admin"),
    ("a short word ending its line", "DB_PASSWORD: letmein\n", "letmein"),
    ("a short word in a sentence's end", "Default username and password: admin\n", "admin"),
    ("a year after a name", "password='Password2024'", "Password2024"),
    ("a test-looking user", "{'user': 'ada', 'password': 'ada1987'}", "ada1987"),
    ("URL with a real password", "postgres://app:Xk9vQ2rL@db.internal/app", "Xk9vQ2rL"),
    ("URL with a weak password", "redis://default:admin@cache:6379", "admin"),
    ("format field beside a secret", 'password = "%s-Xk9vQ2rL"', "Xk9vQ2rL"),
    ("OpenAI key", 'OPENAI_API_KEY="sk-proj1234567890abcdefghijKLMN"', "proj1234567890abcdefghijKLMN"),
    ("AWS key id", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
    ("GitHub token", "GITHUB_TOKEN=ghp_A1b2C3d4E5f6G7h8A1b2C3d4E5f6G7h8A1b2", "A1b2C3d4E5f6G7h8A1b2C3d4E5f6G7h8A1b2"),
    ("PEM key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA"),
    ("bearer", "Authorization: Bearer abcDEF123456789xyz", "abcDEF123456789xyz"),
    ("a sentence-length secret", 'token = "Xk9vQ2rL Wm3nB8tY Pq7sD4fG"', "Xk9vQ2rL"),
    ("cookie header", "Cookie: sessionid=9f8e7d6c5b4a; csrftoken=Xk9vQ2rL", "9f8e7d6c5b4a"),
    ("cookies with a value", "cookies: sessionid=9f8e7d6c5b4a", "9f8e7d6c5b4a"),
    ("URL-encoded password", "https://ann:Xk9%23vQ2rL@example.com/", "Xk9%23vQ2rL"),
    ("a password in a call", "login(password=hunter2)", "hunter2"),
    ("a password with a dollar", 'password = "Tr0ub4dor$XYZ"', "Tr0ub4dor$XYZ"),
    ("a password with angle brackets", 'password = "ab<cd>ef9"', "ab<cd>ef9"),
    ("a password compared with a literal", 'if password == "Xk9vQ2rL":', "Xk9vQ2rL"),
    ("a word compared with a password", "if password == 'hunter':", "hunter"),
    ("a YAML flow mapping", "db: {user: ada, password: hunter, port: 5432}", "hunter"),
    ("mount options", "mount -o username=ada,password=hunter,vers=3.0 //nas/share /mnt", "hunter"),
    ("a keyword argument with a digit, then a comma", "    login(user, password=hunter2, retry=3)", "hunter2"),
    ("a long word in YAML", "  password: CorrectHorseBatteryStaple\n", "CorrectHorseBatteryStaple"),
    ("a long word in YAML, then a comma", "  password: CorrectHorseBattery2,\n", "CorrectHorseBattery2"),
    ("an INI file", "[server]\npassword = hunter\n", "hunter"),
    ("a cookie header with a comma", "Cookie: sessionid=9f8e7d6c5b4a, theme=dark", "9f8e7d6c5b4a"),
    ("an opaque authorization header", "Authorization: Xk9vQ2rLWm3nB8tY\n", "Xk9vQ2rLWm3nB8tY"),
    ("a key cut short", 'api_key = "proj1234abcd..."', "proj1234abcd"),
    # the shapes of code kept above, holding a secret: printed objects, log lines, one-line lists
    ("a Kotlin data class printed", "User(id=1, name=ada, password=Sunshine, email=a@b.c)", "Sunshine"),
    ("a Java map printed", "{password=Sunshine, username=ada}", "Sunshine"),
    ("a log line of pairs", "INFO Connecting user=ada, password=Sunshine, host=db", "Sunshine"),
    ("a compose environment list", "environment: [POSTGRES_USER=app, POSTGRES_PASSWORD=Sunshine, DB=app]", "Sunshine"),
    ("a Go struct printed", "{Addr:localhost:6379 Password:Sunshine DB:0}", "Sunshine"),
    ("a Go struct, a hyphenated password", "{Host:db User:ada Password:Correct-Horse-Battery Name:app}", "Horse"),
    ("pairs after colons on one line", "Login attempt user: ada, password: Sunshine, ip: 10.0.0.1", "Sunshine"),
    ("an opaque header, then another", "authorization: k8s9fj3kdlwqpzmxnvb, x-request-id: 1", "k8s9fj3kdlwqpzmxnvb"),
    ("a shell comparison", "if [ $TOKEN == k8s9fj3kdlwqpzmxnvb ]; then", "k8s9fj3kdlwqpzmxnvb"),
    ("a capitalised word, then a key later on its line", "password: Sunshine and DB:0", "Sunshine"),
    ("a base32 secret before a comma", "  secret: JBSWY3DPEHPK3PXP,\n", "JBSWY3DPEHPK3PXP"),
    ("capitals, then lower case, before a comma", "  password: QWERTYuiop,\n", "QWERTYuiop"),
    ("a non-ASCII password, ASCII-only JSON", '{"password": "\\u043f\\u0430\\u0440\\u043e\\u043b\\u044c"}', "u0440"),
    ("a password with one non-ASCII letter, ASCII-only JSON", '{"password": "contrase\\u00f1a1"}', "u00f1a1"),
    ("a token that is a header value", 'token = "Bearer abcDEF123456789xyz"', "abcDEF123456789xyz"),
    ("a token compared with a literal", 'if api_token == "Xk9vQ2rLWm3nB8tY":', "Xk9vQ2rLWm3nB8tY"),
    # assignments that unpack a tuple: the value at the key's place
    ("a tuple, the key last", '\nuser, password = "ada", "Xk9vQ2rLWm3n"\n', "Xk9vQ2rLWm3n"),
    ("a tuple, the key first", '\npassword, user = "Xk9vQ2rLWm3n", "ada"\n', "Xk9vQ2rLWm3n"),
    ("a tuple, the key between", '\nhost, api_key, port = "db", "Xk9vQ2rLWm3n", 5432\n', "Xk9vQ2rLWm3n"),
    ("a key word, then a keyword argument", 'connect(token, password="Xk9vQ2rLWm3n")', "Xk9vQ2rLWm3n"),
    (
        "a key word in a string, then a keyword argument",
        'create(name="unknown_password", password="Xk9vQ2rLWm3n")',
        "Xk9vQ2rLWm3n",
    ),
    (
        "keyword arguments, one unpacked",
        '\ndef connect(\n    user, password="Xk9vQ2rLWm3n", **kwargs\n):',
        "Xk9vQ2rLWm3n",
    ),
    ("keyword-only arguments", '\n    host, password="Xk9vQ2rLWm3n", *, timeout=3\n', "Xk9vQ2rLWm3n"),
    ("a JavaScript declaration of two", '\nvar user, password = "Xk9vQ2rLWm3n", port;\n', "Xk9vQ2rLWm3n"),
    ("a log line after a word and a comma", "\nError, password = Xk9vQ2rLWm3n, retrying\n", "Xk9vQ2rLWm3n"),
    ("a greeting, then a token", "\nHi, token=ghx9Xk9vQ2rLWm3n, expires soon\n", "ghx9Xk9vQ2rLWm3n"),
    ("a tuple's values in brackets", '\nuser, password = ("ada", "Xk9vQ2rLWm3n")\n', "Xk9vQ2rLWm3n"),
    ("Perl's list assignment", '\nmy ($user, $password) = ("ada", "Xk9vQ2rLWm3n");\n', "Xk9vQ2rLWm3n"),
    ("a tuple's bare value", '\nuser, password = "ada", Xk9vQ2rLWm3n\n', "Xk9vQ2rLWm3n"),
    ("a tuple's targets apart by a tab", '\npassword,\tuser = "Xk9vQ2rLWm3n", "ada"\n', "Xk9vQ2rLWm3n"),
    ("a log line's last target, then a number", "\nERROR, token = Xk9vQ2rLWm3nA, 401\n", "Xk9vQ2rLWm3nA"),
    ("a log line's last target, then a call", "\nError, password = Xk9vQ2rLWm3n, retry(3)\n", "Xk9vQ2rLWm3n"),
    ("a JavaScript declaration, a name after", '\nvar user, password = "Xk9vQ2rLWm3n", port2;\n', "Xk9vQ2rLWm3n"),
    ("a tab-indented short declaration", '\n\tuser, password := "ada", "Xk9vQ2rLWm3n"\n', "Xk9vQ2rLWm3n"),
    ("a tuple in grep's output", '\nsettings.py:12:user, password = "ada", "Xk9vQ2rLWm3n"\n', "Xk9vQ2rLWm3n"),
    ("a tuple at a prompt", '\n>>> user, password = "ada", "Xk9vQ2rLWm3n"\n', "Xk9vQ2rLWm3n"),
    ("a tuple in parentheses", '\n(user, password) = ("ada", "Xk9vQ2rLWm3n")\n', "Xk9vQ2rLWm3n"),
    ("Go's short declaration", '\nuser, password := "ada", "Xk9vQ2rLWm3n"\n', "Xk9vQ2rLWm3n"),
    ("JavaScript's destructuring", '\nconst [token, user] = ["Xk9vQ2rLWm3n", "ada"];\n', "Xk9vQ2rLWm3n"),
]


@pytest.mark.parametrize("context", sorted(CONTEXTS))
@pytest.mark.parametrize(("kind", "text"), KEPT, ids=[kind for kind, _ in KEPT])
def test_code_without_a_secret_is_stored_unchanged(redactor: Redactor, context: str, kind: str, text: str) -> None:
    assert CONTEXTS[context](redactor, f"before {text} after") == f"before {text} after"


@pytest.mark.parametrize("context", sorted(CONTEXTS))
@pytest.mark.parametrize(("kind", "text", "secret"), STILL_SECRET, ids=[kind for kind, _, _ in STILL_SECRET])
def test_real_secrets_beside_them_are_still_redacted(
    redactor: Redactor, context: str, kind: str, text: str, secret: str
) -> None:
    stored = CONTEXTS[context](redactor, f"before {text} after")
    assert secret not in stored
    assert REDACTED in stored
    assert stored.startswith("before ")


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ('user, password = "ada", "Xk9vQ2rLWm3n"', 'user, password = "ada", "[REDACTED]"'),
        ('password, user = "Xk9vQ2rLWm3n", "ada"', 'password, user = "[REDACTED]", "ada"'),
        ('host, token, port = "db", "Xk9vQ2rLWm3n", 5432', 'host, token, port = "db", "[REDACTED]", 5432'),
    ],
)
def test_a_tuple_unpacked_loses_only_the_secret_keys_value(redactor: Redactor, text: str, stored: str) -> None:
    assert redactor.redact_text(text) == stored


@pytest.mark.parametrize(
    "text",
    [
        'user, api_keys = "ada", ["k1Xk9vQ2rL", "k2Xk9vQ2rL"]\n',
        'hosts, password = ["a", "b"], "Xk9vQ2rL"\n',
        "user, password = ada, Xk9vQ2rLWm3n\n",
        "ERROR, token = Xk9vQ2rLWm3nA, 401\n",
        'password, user = "Xk9vQ2rL", "ada"\n',
    ],
)
def test_a_tuple_redacted_once_is_left_as_it_is(redactor: Redactor, text: str) -> None:
    once = redactor.redact_text(text)
    assert "Xk9vQ2rL" not in once
    assert redactor.redact_text(once) == once
    assert redactor.redact_text(json.dumps({"out": once})) == json.dumps({"out": once})


def test_a_settings_file_read_back_is_the_file_that_was_written(redactor: Redactor) -> None:
    settings = (
        "DEBUG = True\n"
        "SECRET_KEY = 'test-secret-key'\n"
        "DATABASES = {'default': {'ENGINE': 'django.db.backends.sqlite3', 'PASSWORD': 'password'}}\n"
        "PASSWORD_RESET_TIMEOUT = 3600\n"
        "EMAIL_HOST_PASSWORD = os.environ['EMAIL_HOST_PASSWORD']\n"
        "CACHE_URL = 'redis://:{password}@cache:6379/0'\n"
    )
    assert redactor.redact_text(settings) == settings
    real = settings.replace("test-secret-key", "q8&Xk9vQ2rLWm3nB8tYPq7sD4fG")
    assert redactor.redact_text(real) == settings.replace("test-secret-key", REDACTED)


def test_the_documented_placeholder_words_are_the_ones_used() -> None:
    import toolctx.redaction as module
    from toolctx.redaction._placeholders import VOCABULARY

    doc = " ".join((module.__doc__ or "").split())
    listed = doc.partition("The words say a value is not real (")[2].partition("): ``test``,")[0]
    assert set(re.findall(r"``([a-z]+)``", listed)) == VOCABULARY


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("test", True),
        (" changeme ", True),
        ("{password}", True),
        ("hf_…", True),
        ("hunter2", False),
        ("admin", False),
        ("proj1234…", False),
        ("пароль...", False),
    ],
)
def test_a_redactor_says_which_values_are_placeholders(redactor: Redactor, value: str, expected: bool) -> None:
    assert redactor.is_placeholder(value) is expected
    assert redactor.redact_text(f"password = '{value.strip()}'") == (
        f"password = '{value.strip()}'" if expected else f"password = '{REDACTED}'"
    )
