"""The secret rules, stated in full: this text is the rule list of ``toolctx.redaction``'s documentation.

Keep it and the definitions below (:data:`DEFAULT_KEYS`, :data:`DEFAULT_PATTERNS`, and the
syntax of keys and assignments in ``_keys``) telling the same story: the tests check that every
key and pattern is listed, in order.

**Secret keys.** A key is secret when, split into words, it ends with one of
:data:`DEFAULT_KEYS` (``api_key``, ``apikey``, ``token``, ``password``, ``passwd``,
``passphrase``, ``pass``, ``pwd``, ``secret``, ``secret_key``, ``authorization``, ``private_key``,
``access_key``, ``account_key``, ``credential``, ``cookie``), or with one of them plus
``s`` (``api_keys``, ``cookies``; but ``tokens`` is not secret). Words are split at every
run of characters that are not letters or digits (``_``, ``-``, ``.``, spaces, repeated or
not), at each URL-encoded character (``%5F``, ``%2D``, ``%22``, ...), and where a lower-case letter or
a digit meets an upper-case one; letter case is ignored, and full-width forms read as
ASCII. So ``access_token``, ``X-Api-Key``, ``clientSecret``, ``DB_PASSWORD``,
``SECRET_KEY``, ``api--key``, ``api%5Fkey``, ``Set-Cookie`` and ``ｐａｓｓｗｏｒｄ`` are
secret; ``max_tokens``, ``token_count``, ``secret_name``, ``password_hint``, ``bypass``,
``OLDPWD`` and ``key`` are not. Two key words have a second meaning, which is kept: ``pass``
alone is also a test's verdict or count (after ``:`` a bare value is kept, ``PASS: test_x``,
``pass: 10``, and in a JSON object a number or boolean), and ``pwd`` also names the working
directory (a value that is a path, starting with ``/``, ``~/``, ``./``, ``../`` or a drive
such as ``C:\\``, is kept: ``PWD=/home/ada``).

- In a JSON object (a dict, or a call's arguments by name) the whole value under a secret
  key is replaced, whatever it is (string, number, list or object); ``null`` stays ``null``.
  A key that holds a secret itself (``{"sk-live-...": 1}``) is redacted as text is; keys
  that then read alike are numbered: ``[REDACTED]``, ``[REDACTED] (2)``.
- In text, an assignment to a secret key: the key (letters, digits, ``_``, ``.``, ``-``,
  ``%`` and non-ASCII characters, up to 64 of them before its longest word, and not the
  ``n``, ``r`` or ``t`` of an escaped line end ``\\n``; between its own words spaces are
  allowed too, as in ``API key``), optionally closed by a quote (``"api_key":``;
  ``\\"api_key\\":`` in JSON held in a string), spaces or tabs, ``=`` or ``:`` (or
  full-width ``＝``, ``：``) optionally followed by ``=`` or ``>``, spaces or tabs, then the
  value, which is replaced:

  - quoted (``"..."``, ``'...'``, ```...```): up to the closing quote, a backslash or the
    end of the line; in double or single quotes, a character escaped as ``\\uXXXX`` (JSON
    written ASCII-only, as Python's ``json.dumps`` writes ``"contrase\\u00f1a"``) is part of
    the value, which is judged as it reads (``\\u003cyour-token\\u003e`` is
    ``<your-token>``, a placeholder);
  - a list on one line, ``[...]``, with no brackets or braces inside: all of its inside;
  - else bare: one or more characters up to whitespace or one of ``"'`,;&<>()[]{}\\``,
    and only if whitespace, one of ``"'`,;&<>)]}\\`` or the end follows
    (``token = tokenizer(text)`` is a call, not a value).
  - after a URL-encoded ``=`` or ``:`` (``%3D``, ``%3A``, and an encoded quote ``%22`` or
    ``%27`` after it or closing the key): up to whitespace, one of ``"'`,;&<>()[]{}\\`` or
    an encoded space, quote, ``&``, ``,``, ``;`` or control character
    (``next=%2Flogin%3Fpassword%3D[REDACTED]%26x%3D1``).

  A string literal's prefix (``b'...'``, ``r"..."``, ``f"..."``) is not part of the value.
  The value is kept when it cannot be a secret: a type or a literal (``str``, ``string``,
  ``bytes``, ``int``, ``integer``, ``bool``, ``boolean``, ``float``, ``number``, ``any``,
  ``object``, ``optional``, ``required``, ``secretstr``, ``none``, ``null``, ``nil``,
  ``true``, ``false``, ``undefined``, ``continue``, ``function``, ``nonlocal``, and the
  keywords ``await``, ``lambda``, ``yield``, ``new`` and ``typeof``, in any case, with or
  without a ``:`` or ``?`` after them: ``token = await loader()``, ``"password":
  "string?"``); a value that is a header scheme word alone, quoted (or a list, or
  URL-encoded), under any key (``authorization = b"Basic " + encoded``; a header's line too,
  below); after ``==`` (a comparison), a bare value with no digit (``if token ==
  TOKEN_NAME:``, ``secret == self.secret``), and for a key ending with ``token``, letters
  and ``_`` all in one case (at most 16 in capitals) after an optional ``#`` (a lexer's
  token: ``elif token == "keyword":``, ``csrf_token == "NOTPROVIDED"``); for a key ending
  with ``token``, a quoted value of lower-case words with a space between each, which no
  token holds (``token = "is not"``); a value repeated by ``*`` and a number (a filler:
  ``meta_token=16 * "a"``, ``SECRET_KEY="abcd" * 20``); after ``=``, a bare name of letters
  and ``_`` assigned with other names, a tuple unpacked (``cookie, token = args``); a bare
  dotted name of letters and ``_`` (``self.password``, ``settings.API_KEY``, parts of at
  most 32; TypeScript's ``!`` after it aside); a bare name that is itself a secret key
  (``password=password``, ``token=access_token``); a value with no letter or digit
  (``****``); the replacement itself; after a colon, a bare value of fewer than 8 ASCII
  letters with a ``.``, ``,``, ``;``, ``:``, ``!`` or ``?`` after them, or more words after
  them on their line (``Password: see below``, ``Password: wrong.``), which is prose; with
  no word after it (a space, then a letter) on its line, as YAML writes ``password: admin``,
  the value of a password key (``pass``, ``pwd`` in it) is redacted unless it is a state
  (``changed``, ``expired``, ``ok``, ...) or the line is code (``if user and password:
  abort``, ``if not password:``); after a colon and a space, a capitalised word (with one
  hyphen at most) with more words after it on its line, none of them a key (a word then
  ``:`` or ``=``), which is prose (``api_key: Explicitly-provided API key, or None``;
  ``{Password:Sunshine DB:0}`` is redacted); after a colon, a bare name followed by ``|``,
  ``=`` (not ``==``), ``)`` or ``]``, which is a type (``cookies: CookieJar | None``); after
  ``=``, a bare name of letters and ``_`` followed by ``)``, or by ``,`` at the end of its
  line, or a name of lower-case words joined by ``_`` (``secrets_map``) followed by ``,``
  and whitespace, which is passed on in a call (``get(url, cookies=jar)``,
  ``secrets=secrets_map,``; ``User(name=ada, password=Sunshine, id=1)`` is redacted); after
  a colon, a bare name of code followed by ``,`` at the end of its line or after a ``(``
  with no ``)`` after it before the key on its line, or by ``}`` (``private_key:
  KeyFlexible,``, ``def f(token: Node, n: int)``, ``{"token": item}``), which is a type or a
  name passed on, unless the key is unquoted after a ``{`` earlier on its line with no
  ``(``, ``[`` or quote between them, as a mapping written on one line (``{user: ada,
  password: hunter}`` is redacted); a name of code is an identifier with a lower-case
  letter, not ending in a digit, with no run of more than 4 capitals, three quarters of
  whose letters are in words of three or more (``secrets_map``, ``PKCS7PrivateKeyTypes``;
  not ``hunter2``, ``Xk9vQ2rL`` or ``QWERTYuiop``); a quoted value that starts with a space,
  a tab or one of ``),;]}+.``, which is the text after a closing quote (``print("token:",
  token)``); or a placeholder (below). Nothing is replaced when a ``.`` and a space or tab
  stand between the key and the ``:`` or ``=`` (a sentence ended: ``the session cookie.
  :pr:``), or when the key is described in a field list (``:param``, ``:parameter``,
  ``:arg``, ``:argument``, ``:key``, ``:keyword``, ``:type``, ``:var``, ``:ivar`` or
  ``:cvar``, then words: ``:param cookies: Dictionary or CookieJar``).

  An assignment that unpacks a tuple gives the key the value at its place among the targets:
  in ``user, password = "ada", "Xk9vQ2rL"``, ``password, user = "Xk9vQ2rL", "ada"``,
  ``(host, token) = ("db", "Xk9vQ2rL")``, ``user, password = ("ada", "Xk9vQ2rL")``, ``user,
  password := "ada", "Xk9vQ2rL"`` (Go), ``const [token, user] = ["Xk9vQ2rL", "ada"];`` and
  ``my ($user, $password) = ("ada", "Xk9vQ2rL");`` only ``Xk9vQ2rL`` is judged as the key's
  value (as above; there a bare name of code, as defined above, is kept). It is read so only
  in a statement read whole: the targets (names, with ``$`` or ``@`` or not) start their
  line, after indentation, a prompt (``>>>``, ``...``), a diff's ``+`` or ``-``, ``grep
  -n``'s ``file:12:``, ``let``, ``var``, ``const``, ``val`` or ``my``, in brackets or not;
  then ``=`` or ``:=`` with a space or tab on each side; then as many values as targets,
  each quoted, bare or a list, in brackets or not, up to the end of the line, a ``;``, ``#``
  or ``//``. A call at the key's place is no value (``user, password = ada, getpass()``).
  Where the key is the last target its own value (the first) is judged too, unless both are
  literals (quoted, or lists) and no ``let``, ``var`` or ``const`` declares the names:
  ``Error, password = Xk9vQ2rL, 401`` may be a log line, and JavaScript declares each name
  apart (``var user, password = "Xk9vQ2rL", port;``). Outside such a statement names after a
  key make no assignment (``def f(password, user=None)``, ``jwt.decode(token, key,
  algorithms="RS256")``, ``(password, user) => x``), and the last target is judged by its
  own value alone (``cookie, token = args``).

  **Placeholders** stand in for a secret; code read back must be the code that was
  written, so they are kept. A value (quoted, bare or a header's line) is a placeholder
  when, without the spaces around it, it is:

  - at most one character long, one character over and over (``xxxx-xxxx``, ``••••``), or
    masked: it holds six or more ``x`` in a row (``sk-xxxxxxxxxxxxxxxxxxxx``), three or more
    ``*`` or ``•``, or starts with four or more of ``* # x •`` and ends with at most four
    letters or digits (``****a1b2``);
  - the alphabet in order, 6 or more letters of it (``abcdefghijkl``);
  - elided: ending with ``...`` or ``…`` after at most 4 ASCII letters and digits, a
    non-ASCII character counting as the bytes of its UTF-8 (``...``,
    ``hf_...``, ``sk-…``);
  - a template field, or a value holding one: a named field ``%(name)s``, ``{name}``
    (``{self.token!r}``, ``{x:>10}``), ``${NAME}``, ``$(command)``, ``{{ name }}``,
    ``#{name}`` or ``<%= name %>``; positional fields (``%s``, ``%-10s``, ``%r``, ``{}``,
    ``{0}``) with no letter or digit besides them (``%s``, ``%s:%s``); or, as the whole
    value, ``<name>`` (``<your-api-key>``), or ``[NAME]`` or ``$NAME`` in capitals, or up
    to four of these joined by ``:``, ``@`` or ``/`` (``<username>:<password>``);
  - a sentence: three or more words with a space between each, starting with a letter and
    ending with ``.``, ``!``, ``?`` or ``:`` (``This field is required.``);
  - made only of placeholder words, in any case, split at ``-``, ``_``, ``.``, spaces,
    between lower and upper case and between letters and digits, with digits only as one
    digit, one digit repeated or digits counting up (``1``, ``000``, ``123``); a word may be
    several placeholder words run together (``changeme``, ``testpassword``). The words say a
    value is not real (``test``, ``tests``, ``testing``, ``dummy``, ``fake``, ``example``,
    ``examples``, ``sample``, ``samples``, ``placeholder``, ``mock``, ``mocked``, ``demo``,
    ``stub``, ``todo``, ``fixme``, ``redacted``, ``hidden``, ``masked``, ``removed``,
    ``omitted``, ``not``, ``real``, ``change``, ``changeit``, ``changeme``, ``me``, ``it``,
    ``insecure``), fill a gap in an example (``your``, ``my``, ``our``, ``the``, ``some``,
    ``this``, ``that``, ``here``, ``goes``, ``insert``, ``enter``, ``put``, ``replace``,
    ``with``, ``value``, ``values``, ``something``, ``foo``, ``bar``, ``baz``, ``qux``,
    ``quux``, ``dev``, ``development``, ``local``, ``default``, ``unit``, ``for``, ``only``, ``new``), or
    name a secret (``secret``, ``secrets``, ``password``, ``passwords``, ``passwd``,
    ``pass``, ``pw``, ``pwd``, ``passphrase``, ``token``, ``tokens``, ``key``, ``keys``,
    ``api``, ``apikey``, ``auth``, ``access``, ``private``, ``credential``,
    ``credentials``, ``client``, ``hashed``, ``hash``, ``signing``): ``test``,
    ``test-secret-key``, ``your-api-key-here``, ``secret123``, ``hashed_password_1``;
  - a name that is itself a secret key: words of letters, then a digit, one digit repeated
    or digits counting up (``project_tests_secret_key``, ``MySecretPassword``).

  Weak passwords are not placeholders: ``admin``, ``root``, ``postgres``, ``letmein``,
  ``123456`` and ``Password2024`` are the real credentials of real systems and are
  redacted. A URL-encoded value (``pass%20pass``) is judged as it reads decoded.

  A key whose last word is ``authorization`` or ``cookie`` followed by a colon is an HTTP
  header: its value is the rest of the line, up to a quote, a backslash or the line's end,
  after an optional scheme word that is kept (``basic``, ``bearer``, ``digest``, ``token``,
  ``negotiate``, ``ntlm``, ``hmac``, ``apikey``, ``aws4-hmac-sha256``): ``Authorization:
  Basic [REDACTED]``, ``Cookie: [REDACTED]``, ``Set-Cookie: [REDACTED]``. (``cookies`` names
  no header: its value is read as any other.) With no scheme word before it, the line is
  code when its first word holds no ``=`` and holds one of ``( ) { } [ ] |``, which no
  credential holds (``"Proxy-Authorization": auth_value})``), is a name of letters and ``_``
  or a dotted name followed by ``,`` (``def f(self, cookie: Cookie, request: Request)``), or
  is a type or a literal as listed above, with or without a ``:`` or ``?`` after it
  (``authorization: str``, ``cookie: str | None = None``); it is kept then, when it or its
  first word is a placeholder (``Authorization: Bearer <token> on each request``; the
  ``not`` of ``b'Authorization:' not in sent``), when it is a scheme word alone
  (``{"Authorization": "Basic " + encoded}``), and when it holds `` == `` (a comparison:
  ``"no_cookie": reason == NO_COOKIE,``).

**Secret formats**, found in any text (:data:`DEFAULT_PATTERNS`). *Not after X* means
the character before the match is not one of X; *token characters* are ``A-Z a-z 0-9 _ -``;
the whole match is replaced unless the table says which part.

=====================  ========================  ============================================
name                   not after                 match
=====================  ========================  ============================================
``bearer``             ``A-Z a-z 0-9 _``         ``Bearer`` in any case, 1-8 spaces or tabs,
                                                 then a token of 8 or more of
                                                 ``A-Z a-z 0-9 . _ ~ + / -`` and any ``=``
                                                 that holds a digit or is 20 or more long:
                                                 that token
``url-credentials``                              ``://``, a user of 0-256 characters, ``:``, a
                                                 password of 1-256 characters, ``@``: the
                                                 password (``postgres://app:[REDACTED]@db``).
                                                 Neither takes whitespace, control characters,
                                                 quotes, a backslash, ``/``, ``?`` or ``#``;
                                                 the user takes no ``@`` or ``:`` either (the
                                                 password ends at its last ``@``)
``private-key``                                  ``-----BEGIN``, up to three words of upper-case
                                                 letters or digits, ``PRIVATE KEY`` (``BLOCK``)
                                                 ``-----``, everything up to the next ``-----``,
                                                 ``"`` or ``'`` (or a backslash before one), the
                                                 ``-----END ... PRIVATE KEY-----`` line if that
                                                 is what follows
``jwt``                ``A-Z a-z 0-9 -``         ``eyJ`` + 8 or more token characters + ``.`` +
                                                 8 or more + ``.`` + any number of them
``sk-key``             ``A-Z a-z 0-9 _``         ``sk-`` + 20 or more token characters (OpenAI,
                                                 Anthropic ``sk-ant-``, DeepSeek, OpenRouter)
``stripe``             ``A-Z a-z 0-9``           ``sk_live_``, ``sk_test_`` or ``sk_prod_`` + 10
                                                 or more letters or digits
``stripe-restricted``  ``A-Z a-z 0-9``           the same with ``rk_``
``aws-key-id``         ``A-Z a-z 0-9``           ``AKIA``, ``ASIA``, ``ABIA`` or ``ACCA`` + 16
                                                 upper-case letters or digits, not followed by
                                                 a letter or digit
``github``             ``A-Z a-z 0-9 _``         ``ghp_``, ``gho_``, ``ghu_``, ``ghs_`` or
                                                 ``ghr_`` + 36 or more letters or digits;
                                                 ``github_pat_`` + 22 or more letters, digits
                                                 or ``_``
``gitlab``             ``A-Z a-z 0-9 _``         ``glpat-``, ``glptt-``, ``gldt-``, ``glrt-``,
                                                 ``glsoat-``, ``glcbt-``, ``glft-``, ``glimt-``,
                                                 ``glagent-``, ``gloas-`` or ``glffct-`` + 20 or
                                                 more token characters
``grafana``            ``A-Z a-z 0-9 _``         ``glsa_`` + 32 letters or digits + ``_`` + 8
                                                 hex digits; ``glc_`` + 32 or more of
                                                 ``A-Z a-z 0-9 + /`` and up to two ``=``
``slack``              ``A-Z a-z 0-9``           ``xox`` + one of ``abposre`` + ``-`` or ``.``
                                                 + 10 or more of ``A-Z a-z 0-9 . -``
``slack-app``                                    ``xapp-`` + a digit + ``-`` + 10 or more of
                                                 ``A-Z a-z 0-9 -``
``slack-webhook``                                ``hooks.slack.com/`` + ``services``,
                                                 ``workflows`` or ``triggers`` + ``/`` + 20 or
                                                 more of ``A-Z a-z 0-9 + /``
``google-api-key``     ``A-Z a-z 0-9 _``         ``AIza`` + 35 token characters
``npm``                ``A-Z a-z 0-9 _``         ``npm_`` + 36 or more letters or digits
``huggingface``        ``A-Z a-z 0-9 _``         ``hf_`` + 30 or more letters or digits
``pypi``                                         ``pypi-AgEIcHlwaS5vcmc`` or
                                                 ``pypi-AgENdGVzdC5weXBpLm9yZw`` + 50 or more
                                                 token characters
``sendgrid``                                     ``SG.`` + 22 token characters + ``.`` + 43
``shopify``                                      ``shpat_``, ``shpca_``, ``shppa_`` or
                                                 ``shpss_`` + 32 hex digits
``digitalocean``                                 ``doo_v1_``, ``dop_v1_`` or ``dor_v1_`` + 64
                                                 lower-case hex digits
``twilio``             ``A-Z a-z 0-9``           ``SK`` + 32 hex digits, not followed by a
                                                 letter or digit
``square``                                       ``sq0atp-`` or ``sq0csp-`` + 22 or more token
                                                 characters
``databricks``         ``A-Z a-z 0-9``           ``dapi`` + 32 lower-case hex digits (and ``-``
                                                 and a digit)
``vault``              ``A-Z a-z 0-9 _``         ``hvs.`` or ``hvb.`` + 90 or more token
                                                 characters
``age``                                          ``AGE-SECRET-KEY-1`` + 58 upper-case letters or
                                                 digits
``groq``               ``A-Z a-z 0-9 _``         ``gsk_`` + 48 or more letters or digits
``perplexity``                                   ``pplx-`` + 40 or more letters or digits
``xai``                ``A-Z a-z 0-9 _``         ``xai-`` + 60 or more letters or digits
``replicate``          ``A-Z a-z 0-9 _``         ``r8_`` + 30 or more letters or digits
``linear``                                       ``lin_api_`` + 40 letters or digits
``postman``                                      ``PMAK-`` + 24 hex digits + ``-`` + 34 hex
                                                 digits
``heroku``                                       ``HRKU-AA`` + 58 token characters
``sentry``                                       ``sntrys_`` or ``sntryu_`` + 40 or more of
                                                 ``A-Z a-z 0-9 + / = _``
``doppler``                                      ``dp.pt.`` + 43 letters or digits
``atlassian``                                    ``ATATT3`` + 150 or more of
                                                 ``A-Z a-z 0-9 _ - =``
``1password``                                    ``ops_eyJ`` + 100 or more of
                                                 ``A-Z a-z 0-9 + /`` and up to three ``=``
``telegram-bot``       anything but a digit      ``:`` + ``AA`` + 33 token characters, not
                                                 followed by a token character: the part from
                                                 ``AA`` on
=====================  ========================  ============================================

**Bytes.** A ``bytes`` value is stored as ``{"$bytes": base64}``; its raw bytes are read
as text (UTF-8 or any ASCII-compatible encoding) by the same rules, each secret's bytes are
replaced by those of the replacement, and the result is stored as base64 again. The stored
value keeps its ``$bytes`` form and decodes to the original bytes with the secrets replaced
(so its length changes); the secret itself is never stored. The base64 text is not read.

**Base64 in text.** A run of base64 characters (``A-Z a-z 0-9 + /``, or ``- _`` for URL-safe
base64, then any ``=`` padding) that has 12 characters in a row holding an upper-case
letter, a lower-case letter and a digit, and that holds the base64 of a rule's literal (a
key word in lower case, upper case or capitalised, or a pattern's anchor: ``cGFzc3dvcmQ``
for ``password``, ``QUtJQ`` for ``AKIA``), is decoded, from its start or from after one of
its last ``/ + - _`` before that literal (``/tmp/QUtJQ...``); when the decoded bytes hold a
secret by the rules above, the run is replaced whole from where it decoded.

**Text as it shows.** A run of full-width forms (U+FF01-U+FF5E and U+3000, as UTF-8 or as
the JSON escape ``\\uff50`` that ``json.dumps`` writes) that holds a full-width letter or
digit is read as the ASCII it stands for, so ``ｐａｓｓｗｏｒｄ＝hunter2`` is
``password=hunter2``; a JSON escape of an ASCII letter, digit or one of ``+-./:=@_`` is read
as that character (``"\\u0070assword": "\\u0068unter2"``; never an escaped quote or
backslash, which would change what is quoted); and invisible characters (U+200B-U+200D,
U+2060, U+FEFF, the soft hyphen U+00AD, as UTF-8 or escaped) are read as nothing, so
``pass\\u200bword=hunter2`` and ``AKIA\\u200bIOSFODNN7EXAMPLE`` are found. The secret's
characters are replaced in the original text. In bytes, a run counts where the 16 bytes on
each side of it are UTF-8.

A secret format's match is kept when it is masked (six or more ``x`` in a row, as in
``ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx``); where the table names the part replaced
(the token after ``bearer``, the password of ``url-credentials``), that part is kept when it
is a placeholder, as above (``http://user:pass@proxy``, ``://{user}:{password}@{host}``).

A rule finds its matches left to right, each search resuming where the last match ended
(a match that the checks above reject still ends there); replacements that overlap or
touch merge into one. Text is matched as its UTF-8 bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_KEYS", "DEFAULT_PATTERNS", "REDACTED", "STARTS_AT_ANCHOR", "SecretPattern"]

REDACTED = "[REDACTED]"
"""What each secret becomes, unless a :class:`Redactor` is given another ``replacement``."""


@dataclass(frozen=True)
class SecretPattern:
    """A secret format found inside text.

    ``regex`` is matched against the UTF-8 bytes of the text (so ``\\w``, ``\\d`` and
    ``\\s`` are ASCII); if it has capturing groups, only the first one that took part in
    the match is replaced (``Bearer [REDACTED]``). ``anchors`` are literal fragments
    every match contains; with ``caseless=True`` they occur in any letter case and
    ``regex`` is matched against the text with its ASCII letters lowered (so write it in
    lower case). Without anchors the pattern runs on every output. ``screen``, optional,
    is a regular expression (no lookaround, no possessive quantifier) that contains the
    one anchor and matches wherever ``regex`` does, in the text and in its JSON-escaped
    form: the pattern then runs only on outputs the screen matches.

    A pattern runs fastest when it starts with its anchor: ``re`` then skips to it.
    """

    name: str
    regex: str
    anchors: tuple[str, ...]
    caseless: bool = False
    screen: str = ""


DEFAULT_KEYS: tuple[str, ...] = (
    "api_key",
    "apikey",
    "token",
    "password",
    "passwd",
    "passphrase",
    "pass",
    "pwd",
    "secret",
    "secret_key",
    "authorization",
    "private_key",
    "access_key",
    "account_key",
    "credential",
    "cookie",
)
"""Key names (in snake case) whose values are secret when a key ends with them (or with them plus ``s``, but
``tokens`` is not secret)."""

_URL_PART = r"\x00-\x20\"'`\\"  # whitespace, control characters, quotes and backslash end a URL part

DEFAULT_PATTERNS: tuple[SecretPattern, ...] = (
    SecretPattern(
        "bearer",
        r"bearer(?<![a-z0-9_]bearer)[ \t]{1,8}+((?=[a-z._~+/\-]{0,256}[0-9]|[a-z0-9._~+/\-]{20})"
        r"[a-z0-9._~+/\-]{8,}+=*+)",
        ("bearer",),
        caseless=True,
        screen=r"bearer(?:[ \t]|\\t){1,8}[a-z0-9._~+/\-]{8}",
    ),
    SecretPattern(
        "url-credentials",
        rf"://[^{_URL_PART}/?#@:]{{0,256}}+:([^{_URL_PART}/?#]{{1,256}})@",
        ("://",),
        screen=rf"://[^{_URL_PART}/?#@:]{{0,256}}:[^{_URL_PART}/?#]{{1,256}}@",
    ),
    SecretPattern(
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]{1,16} ){0,3}PRIVATE KEY(?: BLOCK)?-----(?:[^-\"'\\]++|\\[^\"']|-(?!----))*+"
        r"(?:-----END (?:[A-Z0-9]{1,16} ){0,3}PRIVATE KEY(?: BLOCK)?-----)?",
        ("-----BEGIN ",),
    ),
    SecretPattern(
        "jwt",
        r"eyJ(?<![A-Za-z0-9\-]eyJ)[A-Za-z0-9_\-]{8,}+\.[A-Za-z0-9_\-]{8,}+\.[A-Za-z0-9_\-]*+",
        ("eyJ",),
    ),
    SecretPattern("sk-key", r"sk-(?<![A-Za-z0-9_]sk-)[A-Za-z0-9_\-]{20,}+", ("sk-",)),
    SecretPattern(
        "stripe",
        r"sk_(?<![A-Za-z0-9]sk_)(?:live|test|prod)_[A-Za-z0-9]{10,}+",
        ("sk_live_", "sk_test_", "sk_prod_"),
    ),
    SecretPattern(
        "stripe-restricted",
        r"rk_(?<![A-Za-z0-9]rk_)(?:live|test|prod)_[A-Za-z0-9]{10,}+",
        ("rk_live_", "rk_test_", "rk_prod_"),
    ),
    SecretPattern(
        "aws-key-id",
        r"A(?:KIA|SIA|BIA|CCA)(?<![A-Za-z0-9]A[A-Z]{3})[A-Z0-9]{16}(?![A-Za-z0-9])",
        ("AKIA", "ASIA", "ABIA", "ACCA"),
    ),
    SecretPattern(
        "github",
        r"g(?<![A-Za-z0-9_]g)(?:h[pousr]_[A-Za-z0-9]{36,}+|ithub_pat_[A-Za-z0-9_]{22,}+)",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    SecretPattern(
        "gitlab",
        r"gl(?<![A-Za-z0-9_]gl)(?:pat|ptt|dt|rt|soat|cbt|ft|imt|agent|oas|ffct)-[A-Za-z0-9_\-]{20,}+",
        ("glpat-", "glptt-", "gldt-", "glrt-", "glsoat-", "glcbt-", "glft-", "glimt-", "glagent-", "gloas-", "glffct-"),
    ),
    SecretPattern(
        "grafana",
        r"gl(?<![A-Za-z0-9_]gl)(?:sa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|c_[A-Za-z0-9+/]{32,}+={0,2})",
        ("glsa_", "glc_"),
    ),
    SecretPattern("slack", r"xox[abposre][.\-](?<![A-Za-z0-9]xox[a-z][.\-])[A-Za-z0-9.\-]{10,}+", ("xox",)),
    SecretPattern("slack-app", r"xapp-[0-9]-[A-Za-z0-9\-]{10,}+", ("xapp-",)),
    SecretPattern(
        "slack-webhook",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{20,}+",
        ("hooks.slack.com/",),
    ),
    SecretPattern("google-api-key", r"AIza(?<![A-Za-z0-9_]AIza)[0-9A-Za-z_\-]{35}", ("AIza",)),
    SecretPattern("npm", r"npm_(?<![A-Za-z0-9_]npm_)[A-Za-z0-9]{36,}+", ("npm_",)),
    SecretPattern("huggingface", r"hf_(?<![A-Za-z0-9_]hf_)[A-Za-z0-9]{30,}+", ("hf_",)),
    SecretPattern(
        "pypi",
        r"pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_\-]{50,}+",
        ("pypi-AgEIcHlwaS5vcmc", "pypi-AgENdGVzdC5weXBpLm9yZw"),
    ),
    SecretPattern("sendgrid", r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}", ("SG.",)),
    SecretPattern("shopify", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", ("shpat_", "shpca_", "shppa_", "shpss_")),
    SecretPattern("digitalocean", r"do[opr]_v1_[a-f0-9]{64}", ("doo_v1_", "dop_v1_", "dor_v1_")),
    SecretPattern(
        "twilio",
        r"SK(?<![A-Za-z0-9]SK)[0-9a-fA-F]{32}(?![A-Za-z0-9])",
        ("SK",),
        screen=r"SK[0-9a-fA-F]{32}",
    ),
    SecretPattern("square", r"sq0(?:atp|csp)-[0-9A-Za-z_\-]{22,}+", ("sq0atp-", "sq0csp-")),
    SecretPattern("databricks", r"dapi(?<![A-Za-z0-9]dapi)[a-f0-9]{32}(?:-[0-9])?", ("dapi",)),
    SecretPattern("vault", r"hv[sb]\.(?<![A-Za-z0-9_]hv[sb]\.)[A-Za-z0-9_\-]{90,}+", ("hvs.", "hvb.")),
    SecretPattern("age", r"AGE-SECRET-KEY-1[0-9A-Z]{58}", ("AGE-SECRET-KEY-1",)),
    SecretPattern("groq", r"gsk_(?<![A-Za-z0-9_]gsk_)[A-Za-z0-9]{48,}+", ("gsk_",)),
    SecretPattern("perplexity", r"pplx-[A-Za-z0-9]{40,}+", ("pplx-",)),
    SecretPattern("xai", r"xai-(?<![A-Za-z0-9_]xai-)[A-Za-z0-9]{60,}+", ("xai-",)),
    SecretPattern("replicate", r"r8_(?<![A-Za-z0-9_]r8_)[A-Za-z0-9]{30,}+", ("r8_",)),
    SecretPattern("linear", r"lin_api_[A-Za-z0-9]{40}", ("lin_api_",)),
    SecretPattern("postman", r"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}", ("PMAK-",)),
    SecretPattern("heroku", r"HRKU-AA[0-9A-Za-z_\-]{58}", ("HRKU-",)),
    SecretPattern("sentry", r"sntry[su]_[A-Za-z0-9+/=_]{40,}+", ("sntrys_", "sntryu_")),
    SecretPattern("doppler", r"dp\.pt\.[A-Za-z0-9]{43}", ("dp.pt.",)),
    SecretPattern("atlassian", r"ATATT3[A-Za-z0-9_\-=]{150,}+", ("ATATT3",)),
    SecretPattern("1password", r"ops_eyJ[A-Za-z0-9+/]{100,}+={0,3}", ("ops_eyJ",)),
    SecretPattern(
        "telegram-bot",
        r":(AA[A-Za-z0-9_\-]{33})(?<=[0-9]:AA[A-Za-z0-9_\-]{33})(?![A-Za-z0-9_\-])",
        (":AA",),
    ),
)
"""Secret formats found inside text (each is described in the table of secret formats above)."""

STARTS_AT_ANCHOR = frozenset(DEFAULT_PATTERNS)  # patterns known to start where one of their anchors does
