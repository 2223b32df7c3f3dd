"""Secret redaction, applied to arguments and results before anything is stored.

On by default; ``session(redact=False)`` turns it off and ``session(redact=Redactor(...))``
changes the rules. Each secret found is replaced by ``[REDACTED]`` (the ``replacement``);
the tool's caller still gets the real value.

**Secret keys.** A key is secret when, split into words, it ends with one of
:data:`DEFAULT_KEYS` (``api_key``, ``apikey``, ``token``, ``password``, ``passwd``,
``passphrase``, ``secret``, ``secret_key``, ``authorization``, ``private_key``,
``access_key``, ``account_key``, ``credential``, ``cookie``), or with one of them plus
``s`` (``api_keys``, ``cookies``; but ``tokens`` is not secret). Words are split at every
run of characters that are not letters or digits (``_``, ``-``, ``.``, spaces, repeated or
not), at URL-encoded ``%5F``, ``%2D``, ``%2E`` and ``%20``, and where a lower-case letter or
a digit meets an upper-case one; letter case is ignored, and full-width forms read as
ASCII. So ``access_token``, ``X-Api-Key``, ``clientSecret``, ``DB_PASSWORD``,
``SECRET_KEY``, ``api--key``, ``api%5Fkey``, ``Set-Cookie`` and ``ｐａｓｓｗｏｒｄ`` are
secret; ``max_tokens``, ``token_count``, ``secret_name``, ``password_hint`` and ``key`` are
not.

- In a JSON object (a dict, or a call's arguments by name) the whole value under a secret
  key is replaced, whatever it is (string, number, list or object); ``null`` stays ``null``.
- In text, an assignment to a secret key: the key (letters, digits, ``_``, ``.``, ``-``,
  ``%`` and non-ASCII characters, up to 64 of them before its longest word, and not the
  ``n``, ``r`` or ``t`` of an escaped line end ``\\n``; between its own words spaces are
  allowed too, as in ``API key``), optionally closed by a quote (``"api_key":``;
  ``\\"api_key\\":`` in JSON held in a string), spaces or tabs, ``=`` or ``:`` (or
  full-width ``＝``, ``：``) optionally followed by ``=`` or ``>``, spaces or tabs, then the
  value, which is replaced:

  - quoted (``"..."``, ``'...'``, ```...```): up to the closing quote, a backslash or the
    end of the line;
  - a list on one line, ``[...]``, with no brackets or braces inside: all of its inside;
  - else bare: one or more characters up to whitespace or one of ``"'`,;&<>()[]{}\\``,
    and only if whitespace, one of ``"'`,;&<>)]}\\`` or the end follows
    (``token = tokenizer(text)`` is a call, not a value).

  The value is kept when it cannot be a secret: a type or a literal (``str``, ``string``,
  ``bytes``, ``int``, ``integer``, ``bool``, ``boolean``, ``float``, ``number``, ``any``,
  ``object``, ``optional``, ``required``, ``secretstr``, ``none``, ``null``, ``nil``,
  ``true``, ``false``, ``undefined``, in any case); a bare dotted name of letters and ``_``
  (``self.password``, ``settings.API_KEY``, parts of at most 32); a bare name that is itself
  a secret key (``password=password``, ``token=access_token``); a value with no letter or
  digit (``****``); the replacement itself; or, after a colon, a bare value of fewer than
  8 ASCII letters (``Password: see below``). A key whose last word is ``authorization``,
  ``cookie`` or ``cookies`` followed by a colon is an HTTP header: its value is the rest of
  the line, up to a quote, a backslash or the line's end, after an optional scheme word that
  is kept (``basic``, ``bearer``, ``digest``, ``token``, ``negotiate``, ``ntlm``, ``hmac``,
  ``apikey``, ``aws4-hmac-sha256``): ``Authorization: Basic [REDACTED]``,
  ``Cookie: [REDACTED]``, ``Set-Cookie: [REDACTED]``.

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

**Full-width forms.** A run of full-width forms (U+FF01-U+FF5E and U+3000, as UTF-8 or as
the JSON escape ``\\uff50`` that ``json.dumps`` writes) that holds a full-width letter or
digit is read as the ASCII it stands for, so ``ｐａｓｓｗｏｒｄ＝hunter2`` is
``password=hunter2``; the secret's characters are replaced in the original text. In bytes,
a run counts where the 16 bytes on each side of it are UTF-8.

A rule finds its matches left to right, each search resuming where the last match ended
(a match that the checks above reject still ends there); replacements that overlap or
touch merge into one. Text is matched as its UTF-8 bytes.

**Cost.** Redaction works on the JSON bytes about to be stored. One scan (Hyperscan, or
``re`` without it; see ``toolctx._secret_scan``) says which literal fragments the rules need
are present, narrowed for the key words to where an ``=`` or ``:`` follows; only their rules
run, and only if one can match is the value parsed, walked and re-encoded. Clean outputs,
the usual case, cost that one scan. Every default rule runs in time linear in its input:
each starts with a literal, looks back a bounded number of characters, and its repeats are
bounded or run possessively to the end of a character class, so no match is retried from
inside another; in texts of 1 MiB or more a rule is tried only where its literal occurs,
when that is rare enough.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import functools
import re
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from toolctx._secret_scan import FULL_WIDTH, Folded, Lowered, Prefilter, Screen, splice, whole_spans
from toolctx.errors import ConfigError

__all__ = [
    "DEFAULT_KEYS",
    "DEFAULT_PATTERNS",
    "REDACTED",
    "Redactor",
    "SecretPattern",
    "default_redactor",
    "resolve_redactor",
]

REDACTED = "[REDACTED]"
_JOINED_SCAN_LIMIT = 16 * 1024  # below this, joining a call's args and result costs less than a second scan
_LARGE = 1 << 20  # from this size on, a rule is tried where its literal occurs rather than in a pass


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
"""Secret formats found inside text (see the module docstring for each)."""

_STARTS = frozenset(DEFAULT_PATTERNS)  # patterns known to start where one of their anchors does
_HOOKS = ("redact_value", "redact_text", "redact_bytes", "is_secret_key", "_match_key")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_PERCENT = re.compile(r"%(?:5[fF]|2[dDeE0])")
_SEPARATORS = re.compile(r"[\W_]+")

# Assignments in text (``KEY = value``). The key is found by its longest word, the words after
# that one matched with any separators between them, the rest read back to where the key
# starts, and the whole judged by the same test as a dict key.
_KEY_BEFORE = re.compile(rb"[A-Za-z0-9_.%\-\x80-\xff]*")  # matched on the reversed text before the word
_WORD_GAP = rb"(?:[-_. ]|%5f|%2d|%2e|%20)*"  # between two words of a key, in lowered text
_KEY_END = rb"(?:[-_.]|%5f|%2d|%2e)*"  # separators that may trail a key (``__api_key__``)
_CLOSE = rb"(?:\\{0,4}[\"'`])?+[ \t]{0,8}+"
_OPERATOR = rb"(?P<op>[:=]|\xef\xbc[\x9a\x9d]|\\u[fF][fF]1[aAdD])[=>]?[ \t]{0,8}+"
_VALUE = (
    rb"(?:\[(?P<list>[^\[\]{}\r\n]++)\]|\\{0,4}\"(?P<dq>[^\"\\\r\n]++)|\\{0,4}'(?P<sq>[^'\\\r\n]++)"
    rb"|`(?P<bq>[^`\\\r\n]++)|(?P<bare>[^\s\"'`,;&<>()\[\]{}\\]++))"
)
_SCHEMES = rb"(?:basic|bearer|digest|token|negotiate|ntlm|hmac|apikey|aws4-hmac-sha256)"
# After a colon (a header), the rest of the line; after ``=`` (code), a value like any other.
_LINE_VALUE = (
    rb"(?::|\xef\xbc\x9a|\\u[fF][fF]1[aA])[ \t]{0,8}+(?:\\{0,4}[\"'`])?+(?:"
    + _SCHEMES
    + rb"[ \t]++)?(?P<line>[^\r\n\"'`\\]++)"
)
_LINE_WORDS = frozenset({b"authorization", b"cookie"})
# The screen of a key word: the same up to the operator, also in JSON-escaped text.
_SCREEN_TAIL = rb"(?:\\{0,9}[\"'`])?(?:[ \t]|\\t){0,8}(?:[:=]|\xef\xbc[\x9a\x9d]|\\{1,2}u[fF][fF]1[aAdD])"
_AFTER_BARE = frozenset([b"", *(bytes([c]) for c in b" \t\n\r\x0b\x0c\"'`,;&<>)]}\\")])
_COLONS = (b":", b"\xef\xbc\x9a", b"\\uff1a")
_NOT_SECRET = frozenset(
    b"none null nil true false undefined str string bytes int integer bool boolean float number any object "
    b"optional required secretstr".split()
)
_NOT_SECRET_LENGTH = max(map(len, _NOT_SECRET))
_NAME = re.compile(rb"[$@]?[A-Za-z_][A-Za-z0-9_\-]*")
_DOTTED_NAME = re.compile(rb"[$@]?[A-Za-z_]{1,32}(?:\.[A-Za-z_]{1,32})++")
_WORDY = re.compile(rb"[A-Za-z0-9\x80-\xff]")
_JSON_LONGER = bytes(1 if b in b'"\\\b\t\n\f\r' else 0 for b in range(256))
_BLOB_HEAD = b'{"$bytes":"'
_BLOB_MARK = '"$bytes":"'
# A full-width letter or digit (０-９, Ａ-Ｚ, ａ-ｚ), as UTF-8 or JSON-escaped: then full-width forms are read.
_FOLD_SCREENS = (
    Screen("full-width", rb"\xef(?:\xbc[\x90-\x99\xa1-\xba]|\xbd[\x81-\x9a])", b"\xef", caseless=False),
    Screen("full-width-escaped", rb"\\uff(?:1[0-9]|2[1-9a-f]|3[0-9a]|4[1-9a-f]|5[0-9a])", b"\\u"),
)
_FOLD = frozenset(s.name for s in _FOLD_SCREENS)


def _words(key: str) -> str:
    """``key`` as lower-case snake-case words: ``X-Api-Key``, ``apiKey``, ``api%5Fkey`` and ``ａｐｉ＿ｋｅｙ`` alike."""
    if not key.isascii():
        key = key.translate(FULL_WIDTH)
    if "%" in key:
        key = _PERCENT.sub("_", key)
    return _SEPARATORS.sub("_", _CAMEL.sub("_", key)).lower().strip("_")


def _chars(text: str) -> bytes:
    return b"".join(re.escape(c.encode()) if c.isascii() else rb"[\x80-\xff]{1,4}" for c in text)


def _key_literal(word: str, possessive: bool) -> tuple[bytes, bool, bytes]:
    """How a key word is found in text: its longest word (or ASCII run in it), whether in any case, and the rest.

    The rest is a regex for the words after that one; ``possessive`` for ``re`` (whose
    separators are then never given back), plain for a screen that Hyperscan compiles.
    """
    parts = word.split("_")
    index = max(range(len(parts)), key=lambda i: len(parts[i]))
    part = parts[index]
    runs = list(re.finditer(r"[a-z0-9]{2,}", part))
    if runs:
        run = max(runs, key=lambda m: len(m.group()))
        literal, caseless, after = run.group().encode(), True, part[run.end() :]
    else:  # no ASCII to lower: found as written
        literal, caseless, after = part.encode(), False, ""
    gap, end = (_WORD_GAP + b"+", _KEY_END + b"+") if possessive else (_WORD_GAP, _KEY_END)
    rest = _chars(after) + b"".join(gap + _chars(p) for p in parts[index + 1 :])
    return literal, caseless, rest + (b"" if word == "token" else b"s?") + end


@dataclass(frozen=True)
class _Rule:
    name: str
    regex: re.Pattern[bytes]
    caseless: bool
    triggers: frozenset[Hashable]  # fragments whose presence makes it run (none: always)
    literals: tuple[Hashable, ...] = ()  # when set, every match starts where one of these does
    assignment: bool = False


class Redactor:
    """Replaces secrets in JSON outputs, text and bytes; see the module docstring for the rules.

    ``keys``: snake-case names; a dict key, an argument name or the key of an assignment
    in text is secret when, split into words, it ends with one of them (or one of them
    plus ``s``, except ``token``). ``patterns``: secret formats found inside text.
    ``replacement``: what each secret becomes. Subclass and override
    :meth:`redact_value`, :meth:`redact_text`, :meth:`redact_bytes` or
    :meth:`is_secret_key` for anything else: an override runs on every output in which
    the scan found a key word or an anchor (or always, with a pattern that has no anchors).
    """

    def __init__(
        self,
        keys: Iterable[str] = DEFAULT_KEYS,
        patterns: Sequence[SecretPattern] = DEFAULT_PATTERNS,
        replacement: str = REDACTED,
    ) -> None:
        self.keys = tuple(k.lower() for k in keys)
        self.patterns = tuple(patterns)
        self.replacement = replacement
        self._replacement = replacement.encode("utf-8", "surrogatepass")
        words = sorted({_words(k) for k in self.keys} - {""}, key=len, reverse=True)
        alternatives = "|".join(re.escape(w) + ("" if w == "token" else "s?") for w in words)
        self._key_rule = re.compile(rf"(?:^|_)(?:{alternatives})$") if words else None
        rules: list[_Rule] = []
        screens: list[Screen] = []
        caseless: set[str] = set()
        exact: set[str | bytes] = {_BLOB_MARK}
        screens.extend(_FOLD_SCREENS)
        by_literal: dict[tuple[bytes, bool], list[tuple[bytes, bytes]]] = {}
        for word in words:
            literal, in_any_case, rest = _key_literal(word, possessive=True)
            by_literal.setdefault((literal, in_any_case), []).append((rest, _key_literal(word, possessive=False)[2]))
        for (literal, in_any_case), rests in sorted(by_literal.items()):
            name = f"key:{literal.decode('utf-8', 'replace')}"
            longest_first = sorted(set(rests), key=lambda pair: len(pair[0]), reverse=True)
            rest = b"(?:" + b"|".join(r for r, _ in longest_first) + b")"
            screen = b"(?:" + b"|".join(r for _, r in longest_first) + b")"
            screens.append(Screen(name, re.escape(literal) + screen + _SCREEN_TAIL, literal, in_any_case))
            value = _OPERATOR + _VALUE
            if literal in _LINE_WORDS:
                value = b"(?:" + _LINE_VALUE + b"|" + value + b")"
            regex = re.compile(re.escape(literal) + b"(?P<rest>" + rest + b")" + _CLOSE + value)
            anchor = literal.decode() if in_any_case else literal
            rules.append(_Rule(name, regex, in_any_case, frozenset({name}), (anchor,), assignment=True))
        # Any key word, wherever it is, may be part of a dict key: is_secret_key() judges those.
        self._key_words = frozenset(lit.decode() if any_case else lit for lit, any_case in by_literal)
        for pattern in self.patterns:
            try:
                regex = re.compile(pattern.regex.encode("utf-8", "surrogatepass"))
            except re.error as exc:
                raise ConfigError(f"secret pattern {pattern.name!r} is not a valid regex: {exc}") from exc
            triggers: frozenset[Hashable] = frozenset(pattern.anchors)
            literals: tuple[Hashable, ...] = pattern.anchors
            if pattern.screen:
                if len(pattern.anchors) != 1:
                    raise ConfigError(f"secret pattern {pattern.name!r} has a screen, so it needs exactly one anchor")
                name, anchor = f"pattern:{pattern.name}", pattern.anchors[0]
                screens.append(Screen(name, pattern.screen.encode(), anchor.encode(), pattern.caseless))
                triggers = frozenset({name})
                literals = (anchor if pattern.caseless else anchor.encode(),)
            else:
                (caseless if pattern.caseless else exact).update(pattern.anchors)
            rules.append(_Rule(pattern.name, regex, pattern.caseless, triggers, literals * (pattern in _STARTS)))
        self._rules = tuple(rules)
        self._unanchored = tuple(r for r in rules if not r.triggers)
        placed = {literal for rule in rules for literal in rule.literals}
        self._prefilter = Prefilter(caseless, exact, screens=screens, place=placed)
        # A subclass that changes how values, strings or keys are judged gets the full
        # walk through its own methods whenever the scan found anything.
        self._custom = any(getattr(type(self), name) is not getattr(Redactor, name) for name in _HOOKS)
        self._is_secret_key = functools.lru_cache(maxsize=4096)(self._match_key)
        self._rules_for = functools.lru_cache(maxsize=256)(self._select)

    def __repr__(self) -> str:
        return f"Redactor(keys={list(self.keys)}, patterns={[p.name for p in self.patterns]})"

    # -- JSON, as sessions store it ------------------------------------------------------------

    def __call__(self, data: bytes) -> tuple[bytes, bool]:
        """Redact JSON ``data`` (as orjson writes it); returns the bytes to store and whether anything changed."""
        if data.startswith(_BLOB_HEAD):
            blob = self._top_blob(data)
            if blob is not None:
                return blob
        if len(data) < _LARGE or data[:1] != b'"' or self._custom:
            return self._redact_json(data, self._prefilter.found(data))
        # Without Hyperscan a scan costs more than a parse: scan the text once, not its JSON first.
        found = None if self._prefilter.engine == "re" else self._prefilter.found(data)
        if found is None or self._rules_for(found) or not found.isdisjoint(_FOLD):
            text = self._large_text(data, found)
            if text is not None:
                return text
        return self._redact_json(data, self._prefilter.found(data) if found is None else found)

    def redact_call(self, args_json: bytes, result_json: bytes) -> tuple[bytes, bytes]:
        """Redact a call's argument and result JSON, with one scan when both are small."""
        args, result, _ = self._redact_call(args_json, result_json, None)
        return args, result

    def _redact_call(
        self, args_json: bytes, result_json: bytes, call_id: str | None
    ) -> tuple[bytes, bytes, str | None]:
        """:meth:`redact_call`, and the framework's id of the call (text) in the same scan."""
        if type(self).redact_call is not Redactor.redact_call:  # a subclass's own way: used as it is
            args, result = self.redact_call(args_json, result_json)
            return args, result, None if call_id is None else self.redact_text(call_id)
        if len(result_json) <= _JOINED_SCAN_LIMIT and not result_json.startswith(_BLOB_HEAD):
            # Compact JSON never holds a raw newline and no fragment matches one, so
            # nothing can match across the joins: one scan answers for all three.
            joined = args_json + b"\n" + result_json
            if call_id is not None:
                joined += b"\n" + call_id.encode("utf-8", "surrogatepass")
            found = self._prefilter.found(joined)
            if not found and not self._unanchored:
                return args_json, result_json, self.redact_text(call_id) if call_id and self._custom else call_id
            # Something is there: a scan of the (small) arguments says if it is in them.
            args = self._redact_json(args_json, self._prefilter.found(args_json))[0]
            result_json = self._redact_json(result_json, found)[0]
        else:
            args, result_json = self(args_json)[0], self(result_json)[0]
        return args, result_json, None if call_id is None else self.redact_text(call_id)

    def _large_text(self, data: bytes, found: frozenset[Hashable] | None) -> tuple[bytes, bool] | None:
        """A large result that is one string, redacted without building a ``str`` (None: not as orjson writes it).

        orjson escapes only ``"``, ``\\`` and control characters; without a ``\\u00XX`` (a
        rare control character) each of its escapes is one of Python's, so ``escape_decode``
        gives the text's UTF-8 at once. The secrets found in it are then replaced in the
        JSON itself, each offset moved by the escapes before it: exactly what orjson would
        write for the redacted text.
        """
        if _escaped(data, b"\\u") or _escaped(data, b"\\/"):
            return None  # control characters (or another writer): parsed as any JSON
        view = memoryview(data)
        raw: bytes = codecs.escape_decode(view[1:-1])[0]
        rules, fold = (None, None) if found is None else (self._rules_for(found), not found.isdisjoint(_FOLD))
        spans = whole_spans(raw, self._secret_spans(raw, rules, fold, text=True))
        if not spans:
            return data, False
        longer = raw.translate(_JSON_LONGER)  # 1 where the JSON writes the byte as two
        replacement = orjson.dumps(self.replacement)[1:-1]
        parts: list[bytes | memoryview] = []
        text_at, json_at, kept = 0, 1, 0
        for start, end in spans:
            json_start = json_at + start - text_at + longer.count(1, text_at, start)
            json_end = json_start + end - start + longer.count(1, start, end)
            parts += (view[kept:json_start], replacement)
            text_at = end
            json_at = kept = json_end
        parts.append(view[kept:])
        return b"".join(parts), True

    def _redact_json(self, data: bytes, found: frozenset[Hashable]) -> tuple[bytes, bool]:
        """Apply the rules whose fragments were found: the parse is skipped when none can match."""
        if not found and not self._unanchored:
            return data, False
        if self._custom:
            value = orjson.loads(data)
            redacted = self.redact_value(value)
            return (data, False) if redacted == value else (orjson.dumps(redacted), True)
        rules = self._rules_for(found)
        fold = not found.isdisjoint(_FOLD)
        blobs = _BLOB_MARK in found
        keys = fold or not found.isdisjoint(self._key_words)
        if not rules and not fold and not blobs and not (keys and data[:1] in (b"{", b"[")):
            return data, False  # only a key word was found, and a lone string or number has no keys
        value = orjson.loads(data)
        redacted = self._walk(value, keys, rules, fold, blobs)
        if redacted is value:
            return data, False
        return orjson.dumps(redacted), True

    def _select(self, found: frozenset[Hashable]) -> tuple[_Rule, ...]:
        return tuple(r for r in self._rules if not r.triggers or not r.triggers.isdisjoint(found))

    def _walk(self, value: Any, keys: bool, rules: tuple[_Rule, ...], fold: bool, blobs: bool) -> Any:
        """``value`` with secrets replaced; the very same object where nothing changed."""
        kind = type(value)
        if kind is str:
            return self._text(value, None, rules, fold)
        if kind is dict:
            if blobs and len(value) == 1 and "$bytes" in value:
                blob = self._blob(value)
                if blob is not None:
                    return blob
            out = {}
            changed = False
            for k, v in value.items():
                if keys and v is not None and v != self.replacement and self._is_secret_key(k):
                    new = self.replacement
                else:
                    new = self._walk(v, keys, rules, fold, blobs)
                changed = changed or new is not v
                out[k] = new
            return out if changed else value
        if kind is list:
            items = [self._walk(v, keys, rules, fold, blobs) for v in value]
            return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
        return value

    # -- text and bytes --------------------------------------------------------------------------

    def redact_text(self, text: str) -> str:
        """``text`` with every secret in it replaced (the same object if it holds none)."""
        return self._text(text, None, None, None)

    def redact_bytes(self, data: bytes) -> bytes:
        """``data`` with the bytes of every secret replaced by those of the replacement (``data`` if none).

        The bytes are read as text in any ASCII-compatible encoding (UTF-8, Latin-1,
        ...); full-width letters are read as ASCII when ``data`` is UTF-8.
        """
        spans = self._secret_spans(data, None, None, text=False)
        return splice(data, spans, self._replacement) if spans else data

    def _text(self, text: str, raw: bytes | None, rules: tuple[_Rule, ...] | None, fold: bool | None) -> str:
        """``text`` redacted by ``rules`` (and read full-width if ``fold``), or by what a scan of it finds (None)."""
        if fold:
            fold = not text.isascii() or "\\u" in text
        if rules is not None and not rules and not fold:
            return text
        if raw is None:
            raw = text.encode("utf-8", "surrogatepass")
        spans = self._secret_spans(raw, rules, fold, text=True)
        return splice(raw, spans, self._replacement).decode("utf-8", "surrogatepass") if spans else text

    def _secret_spans(
        self, data: bytes, rules: tuple[_Rule, ...] | None, fold: bool | None, *, text: bool
    ) -> list[tuple[int, int]]:
        """Where the secrets in UTF-8 (or any ASCII-compatible) ``data`` are.

        ``rules`` and ``fold`` come from a scan of the JSON around ``data``; without
        them, or for large data where placing each literal pays, ``data`` is scanned
        itself (``fold=None``: see for yourself). ``text``: ``data`` is known to be UTF-8.
        """
        if fold is None and len(data) >= _LARGE and (not data.isascii() or b"\\u" in data):
            # Large: place literals once, in the text to match. Without Hyperscan scans are
            # costly, so look for full-width forms directly; with it, a quick scan first.
            fold = self._prefilter.engine == "re" or not self._prefilter.found(data).isdisjoint(_FOLD)
        if fold:
            folded = Folded(data, text=text)
            if folded:
                return folded.original(self._secret_spans(folded.data, None, False, text=True))
            fold = False
        located = None
        if rules is None or len(data) >= _LARGE:
            if len(data) >= _LARGE:
                located = self._prefilter.locate(data, len(data) >> 11)
                found = located[0]
            else:
                found = self._prefilter.found(data)
            rules = self._rules_for(found) if found or self._unanchored else ()
            fold = fold is not False and not found.isdisjoint(_FOLD)
        if fold:
            folded = Folded(data, text=text)
            if folded:  # full-width letters: match on their ASCII reading
                return folded.original(self._secret_spans(folded.data, None, False, text=True))
        return self._spans(data, rules, located) if rules else []

    def _spans(
        self,
        data: bytes,
        rules: Iterable[_Rule],
        located: tuple[frozenset[Hashable], dict[Hashable, list[int]]] | None,
    ) -> list[tuple[int, int]]:
        """Every match of every rule, wherever it starts (overlaps are merged when spliced)."""
        spans: list[tuple[int, int]] = []
        lowered = Lowered(data)
        for rule in rules:
            regex = rule.regex
            starts = None if located is None else _starts(rule, *located)
            matches: list[re.Match[bytes]] = []
            if starts is None:  # left to right, each search resuming where the last match ended
                matches += regex.finditer(lowered.whole() if rule.caseless else data)
            else:  # a few known places: the same matches, trying just those (lowering only around them)
                end = 0
                for at in starts:
                    if at >= end:
                        match = lowered.match(regex, at) if rule.caseless else regex.match(data, at)
                        if match is not None:
                            matches.append(match)
                            end = match.end()
            for match in matches:
                span = self._assigned(match, data) if rule.assignment else _secret_span(match)
                if span is not None:
                    spans.append(span)
        return spans

    def _assigned(self, match: re.Match[bytes], data: bytes) -> tuple[int, int] | None:
        """The value's span of a ``KEY = value`` match, if the value may be a secret and the key is secret."""
        kind = match.lastgroup or "bare"
        value_start, value_end = match.span(kind)
        value = data[value_start:value_end]
        if self._replacement in (value, data[value_start - 1 : value_end + 1]):
            return None  # already redacted
        if kind != "line":
            if not _WORDY.search(value):
                return None  # no letter or digit: already masked (``****``), or punctuation
            if len(value) <= _NOT_SECRET_LENGTH and value.lower() in _NOT_SECRET:
                return None  # a type or a literal: ``token: str``, ``password = None``
            if kind == "bare":
                if data[value_end : value_end + 1] not in _AFTER_BARE:
                    return None  # ``token = tokenizer(text)``: a call, not a value
                if _DOTTED_NAME.fullmatch(value) or (_NAME.fullmatch(value) and self.is_secret_key(value.decode())):
                    return None  # a name passed on: ``password=password``, ``token = self.token``
                if match["op"].lower() in _COLONS and len(value) < 8 and value.isalpha():
                    return None  # after a colon, a short word is prose: ``password: see below``
        start = match.start()
        floor = max(0, start - 64)
        begin = start - _KEY_BEFORE.match(data[floor:start][::-1]).end()  # type: ignore[union-attr]
        if begin < start and begin and data[begin - 1] == 0x5C and data[begin] in b"nrt":
            begin += 1  # an escaped newline (JSON inside a string) ends the line before the key
        if not self.is_secret_key(data[begin : match.end("rest")].decode("utf-8", "replace")):
            return None
        return value_start, value_end

    # -- keys, bytes values, whole values ----------------------------------------------------------

    def _match_key(self, key: str) -> bool:
        if self._key_rule is None:
            return False
        return self._key_rule.search(_words(key)) is not None

    def is_secret_key(self, key: str) -> bool:
        """Whether values under ``key`` (or assigned to it in text) are redacted."""
        return bool(self._is_secret_key(key))

    def _blob(self, value: dict[str, Any]) -> dict[str, Any] | None:
        """A redacted ``{"$bytes": base64}`` value, or None when it does not hold base64."""
        text = value["$bytes"]
        raw = _from_base64(text) if isinstance(text, str) else None
        if raw is None:
            return None
        redacted = self.redact_bytes(raw)
        if redacted is raw:
            return value
        return {"$bytes": base64.b64encode(redacted).decode("ascii")}

    def _top_blob(self, data: bytes) -> tuple[bytes, bool] | None:
        """A whole result that is bytes: decoded straight from the JSON, no parse and no scan of the base64."""
        if not data.endswith(b'"}') or data.find(b'"', len(_BLOB_HEAD)) != len(data) - 2:
            return None
        raw = _from_base64(memoryview(data)[len(_BLOB_HEAD) : -2])
        if raw is None:
            return None
        redacted = self.redact_bytes(raw)
        if redacted is raw:
            return data, False
        return _BLOB_HEAD + base64.b64encode(redacted) + b'"}', True

    def redact_value(self, value: Any) -> Any:
        """A redacted copy of a JSON value (dicts, lists, strings, numbers), by every rule."""
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, dict):
            raw = _from_base64(value["$bytes"]) if len(value) == 1 and isinstance(value.get("$bytes"), str) else None
            if raw is not None:
                redacted = self.redact_bytes(raw)
                return value if redacted == raw else {"$bytes": base64.b64encode(redacted).decode("ascii")}
            return {
                k: self.replacement if v is not None and self.is_secret_key(k) else self.redact_value(v)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.redact_value(v) for v in value]
        return value


def _secret_span(match: re.Match[bytes]) -> tuple[int, int]:
    """The first group that took part in the match (the secret after ``Bearer``), else the whole match."""
    for index in range(1, (match.re.groups or 0) + 1):
        if match.start(index) >= 0:
            return match.span(index)
    return match.span()


def _starts(rule: _Rule, found: frozenset[Hashable], positions: dict[Hashable, list[int]]) -> list[int] | None:
    """Where ``rule`` can match, when every literal it starts with was placed; None means a pass."""
    if not rule.literals:
        return None
    starts: list[int] = []
    for literal in rule.literals:
        if literal in found:
            places = positions.get(literal)
            if places is None:
                return None  # too frequent to place: one pass is cheaper
            starts += places
    return sorted(set(starts))


def _escaped(data: bytes, escape: bytes, most: int = 4096) -> bool:
    """Whether JSON ``data`` holds ``escape`` (``\\u``, say) as an escape, not after an escaped backslash.

    Past ``most`` look-alikes it answers yes: the caller then takes its general path.
    """
    at = data.find(escape)
    while at >= 0 and most:
        run = at
        while run and data[run - 1] == 0x5C:  # backslashes just before it
            run -= 1
        if (at - run) % 2 == 0:
            return True
        at = data.find(escape, at + 2)
        most -= 1
    return at >= 0


def _from_base64(text: str | memoryview) -> bytes | None:
    """The bytes a ``{"$bytes": ...}`` value holds, or None if ``text`` is not the base64 toolctx writes."""
    try:
        raw = binascii.a2b_base64(text)  # lenient (faster): an exact length shows nothing was skipped
    except (binascii.Error, ValueError):
        return None
    return raw if len(text) == (len(raw) + 2) // 3 * 4 else None


@functools.cache
def default_redactor() -> Redactor:
    """The redactor sessions use unless told otherwise (built on first use)."""
    return Redactor()


def resolve_redactor(redact: object) -> Redactor | None:
    """Normalise a ``redact`` option: True (the default rules), False/None (off) or a Redactor."""
    if redact is True:
        return default_redactor()
    if redact is False or redact is None:
        return None
    if isinstance(redact, Redactor):
        return redact
    raise ConfigError(
        f"redact must be True (the default rules), False (off) or a toolctx.redaction.Redactor, got {redact!r:.80}"
    )
