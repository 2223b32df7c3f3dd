"""How keys are read: the words of a key, and assignments to a secret key in text.

The rules these implement are stated in ``_rules`` (**Secret keys**); this module holds
their syntax. A key is judged by its words (:func:`words`); in text, an assignment
``KEY = value`` is found by the key's longest word, and :func:`assigned_spans` judges the
match: whether the value may be a secret and whether the whole key is secret.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import NamedTuple

from toolctx.redaction._forms import FULL_WIDTH, INVISIBLE
from toolctx.redaction._prefilter import Screen
from toolctx.redaction._syntax import (
    DOTTED_NAME,
    NAME,
    NOT_SECRET,
    VALUE,
    WORDY,
    line_start,
    unescaped,
)
from toolctx.redaction._unpacking import SCREEN_TARGETS, TAIL, declared, unpacked_value

__all__ = ["KeyAssignment", "assigned_spans", "key_assignments", "key_test", "second_meaning", "words"]

_AS_SHOWN = {**FULL_WIDTH, **INVISIBLE}  # full-width forms as ASCII, invisible characters as none
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_PERCENT = re.compile(r"%[0-9a-fA-F]{2}")  # any URL-encoded character: ``api%5Fkey``, ``%22token%22``
_SEPARATORS = re.compile(r"[\W_]+")

# Assignments in text (``KEY = value``). The key is found by its longest word, the words after
# that one matched with any separators between them, the rest read back to where the key
# starts, and the whole judged by the same test as a dict key.
_KEY_BEFORE = re.compile(rb"[A-Za-z0-9_.%\-\x80-\xff]*")  # matched on the reversed text before the word
_WORD_GAP = rb"(?:[-_. ]|%5f|%2d|%2e|%20)*"  # between two words of a key, in lowered text
_KEY_END = rb"(?:[-_.]|%5f|%2d|%2e)*"  # separators that may trail a key (``__api_key__``)
_CLOSE = rb"(?:\\{0,4}[\"'`]|%2[27])?+[ \t]{0,8}+"
_OPERATOR = rb"(?P<op>[:=]|\xef\xbc[\x9a\x9d]|\\u[fF][fF]1[aAdD])[=>]?[ \t]{0,8}+"
# A character escaped as ``\uXXXX`` (JSON written ASCII-only, as Python's json.dumps does) is part of a quoted value.
_SCHEME_WORDS = (
    b"basic",
    b"bearer",
    b"digest",
    b"token",
    b"negotiate",
    b"ntlm",
    b"hmac",
    b"apikey",
    b"aws4-hmac-sha256",
)
_SCHEMES = b"(?:" + b"|".join(_SCHEME_WORDS) + b")"
# After a colon (a header), the rest of the line; after ``=`` (code), a value like any other.
_LINE_VALUE = (
    rb"(?::|\xef\xbc\x9a|\\u[fF][fF]1[aA])[ \t]{0,8}+(?:\\{0,4}[\"'`])?+(?:"
    + _SCHEMES
    + rb"[ \t]++)?(?P<line>[^\r\n\"'`\\]++)"
)
_LINE_WORDS = frozenset({b"authorization", b"cookie"})
# The screen of a key word: the same up to the operator, also in JSON-escaped text.
_SCREEN_TAIL = rb"(?:\\{0,9}[\"'`]|%2[27])?(?:[ \t]|\\t){0,8}(?:[:=]|\xef\xbc[\x9a\x9d]|\\{1,2}u[fF][fF]1[aAdD]|%3[ad])"
# URL-encoded (``password%3Dhunter2``, ``%22token%22%3A%22...``): the value ends where an encoded space, quote,
# ``&``, ``,``, ``;`` or control character does (``%7Bpassword%7D`` is then judged as ``{password}``).
_ENCODED_VALUE = (
    rb"(?P<eop>%3[aAdD])(?:%2[27])?+"
    rb"(?P<enc>(?:[^\s\"'`,;&<>()\[\]{}\\%]++|%(?![01]|2[0267cC]|3[bB])[0-9a-fA-F]{2})++)"
)
_AFTER_BARE = frozenset([b"", *(bytes([c]) for c in b" \t\n\r\x0b\x0c\"'`,;&<>)]}\\")])
_AFTER_CLOSING = frozenset(bytes([c]) for c in b" \t),;]}+.")
_BARE = re.compile(rb"[ \t]*+[^\s\"'`,;&<>()\[\]{}\\]*+")
_SENTENCE_END = re.compile(rb"\.[ \t]")  # between a key and its operator: the key ended a sentence
_CODE = re.compile(rb"[(){}\[\]|]")  # in no credential, token or cookie a header carries
_LETTERS_NAME = re.compile(rb"[A-Za-z_]++")
_MORE_WORDS = re.compile(rb"[ \t]++[A-Za-z]")  # more words after a value on its line
_ANNOTATION_END = re.compile(rb"[ \t]*+(?:\||=(?!=)|\)|\])")
_FIELD_LIST = re.compile(rb":(?:param|parameter|arg|argument|key|keyword|type|var|ivar|cvar)[ \t]++[\w.\[\], |]*+$")
_COLONS = (b":", b"\xef\xbc\x9a", b"\\uff1a", b"%3a")
_NOT_SECRET_LENGTH = max(map(len, NOT_SECRET))
# What a short word alone after a password key's colon says, when it is no password: a state, an answer.
_STATES = frozenset(
    b"changed expired invalid wrong missing unset empty hidden masked reset updated saved set ok yes no unknown "
    b"default enabled disabled blank omitted removed given needed absent present return break pass raise yield".split()
)
# code: a line opening a condition (``if user and password: abort``), or ``not`` right before the key
_CONDITION = re.compile(rb"[ \t]*+(?:if|elif|while|assert|return|lambda)[ \t(]")
_PASSWORD_KEY = re.compile(r"pass|pwd")  # (the keys, as words() writes them, whose value a short word can be)
# a sentence's first word: ``Configuration``, ``Explicitly-provided`` (``correcthorsebattery`` may be a password)
_PROSE_WORD = re.compile(rb"[A-Z][a-z]++(?:-[A-Za-z][a-z]*+)*+")
_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*+")
_NAME_WORD = re.compile(rb"[A-Z]?[a-z]++|[A-Z]+(?![a-z])")  # the words of a name: ``HTTP``, ``Password``, ``Mgr``
# what a lexer's token is compared with: ``'keyword'``, ``"#bygroup"``, ``"COLLATE"``
_LEXEME = re.compile(rb"#?(?:[a-z_]++|[A-Z_]{1,16})")
_PHRASE = re.compile(rb"[a-z]++(?: [a-z]++)++")  # words a token never holds: ``token = "is not"``
_REPEATED = re.compile(rb"[ \t]*+\*[ \t]*+\\{0,4}[0-9\"']")  # a filler repeated: ``16 * "a"``
_REPEATED_QUOTED = re.compile(rb"\\{0,4}[\"'][ \t]*+\*[ \t]*+[0-9]")  # (after its closing quote: ``"ab" * 20``)
_LITERALS = frozenset(("dq", "sq", "bq", "list"))  # the kinds of value written as a literal, quoted or a list
_TUPLE_TARGET = re.compile(rb"[ \t]*+(?:[A-Za-z_][\w.]*+[ \t]*+,[ \t]*+)++")  # ``cookie, token = ``
_SPACE = frozenset((b"", b" ", b"\t", b"\n", b"\r"))
_ESCAPED_SPACE = re.compile(rb"\\++[nrt]")  # a line end or tab escaped once or more (JSON in a string)
_KEY_LATER = re.compile(rb"[ \t][A-Za-z_][\w.-]*+[:=]")  # another key on a value's line: ``Password:x DB:0``
_LINE_END = re.compile(rb"\r|\n|\\++[nr]")  # where a value's line ends (escaped too: text inside JSON)
_LOWER = re.compile(rb"[a-z]")
_ACRONYM = 4  # capitals in a row a name of code may hold: ``HTTP``, ``PKCS``
_NAMED = re.compile(rb"[A-Za-z_]++|[$@]?[A-Za-z_]{1,32}(?:\.[A-Za-z_]{1,32})++")  # a name, or a dotted one
_DIGIT = re.compile(rb"[0-9]")
_SNAKE = re.compile(rb"[a-z]++(?:_[a-z]++)++")  # a variable's name: ``callback_id``, ``secrets_map``
_LINE_END_AFTER = re.compile(rb"[ \t]*+(?:\r|\n|\\++[nr]|$)")  # (escaped too: text inside JSON)
_PATH = re.compile(rb"~?/|\.\.?/|[A-Za-z]:[\\/]")  # a working directory: ``/home/ada``, ``C:\\work``


def second_meaning(key: str, value: object) -> bool:
    """Whether ``value`` under secret ``key`` (in a JSON object) is what the key's other meaning holds.

    ``pass`` alone is also a verdict or a count (``{"pass": 10}``); ``pwd`` also names the
    working directory (``{"pwd": "/home/ada"}``).
    """
    if isinstance(value, bool | int | float):
        return words(key) == "pass"
    return (
        isinstance(value, str)
        and _PATH.match(value.encode("utf-8", "surrogatepass")) is not None
        and (words(key).endswith(("_pwd", "_pwds")) or words(key) in ("pwd", "pwds"))
    )


def _code_name(value: bytes) -> bool:
    """Whether ``value`` reads as a name in code (``secrets_map``, ``PKCS7PrivateKeyTypes``, ``t_string``) rather
    than a password: an identifier with a lower-case letter, not ending in a digit (``hunter2``), with no run of
    capitals longer than an acronym's 4, three quarters of whose letters are in words of three or more
    (``Xk9vQ2rL`` has none)."""
    if not _IDENTIFIER.fullmatch(value) or value[-1:].isdigit() or not _LOWER.search(value):
        return False
    parts = _NAME_WORD.findall(value)
    if any(len(p) > _ACRONYM and p.isupper() for p in parts):
        return False  # a run of capitals longer than an acronym: ``JBSWY3DPEHPK3PXP``, ``QWERTYuiop``
    return 4 * sum(len(p) for p in parts if len(p) >= 3) >= 3 * sum(map(len, parts))


def _quoted_key(match: re.Match[bytes], value_start: int) -> bool:
    """Whether the key of an assignment ``match`` is closed by a quote, as in a dict of code: ``"token": t``
    (``value_start``: where its bare value starts)."""
    between = match.string[match.end("rest") : value_start]
    return b'"' in between or b"'" in between


_FLOW_BREAK = re.compile(rb"[(\[\"']")


def _in_flow_mapping(data: bytes, key: int) -> bool:
    """Whether the key at ``key`` is one of a mapping written on one line (``{user: ada, password: hunter}``):
    a ``{`` before it on its line, with no bracket or quote between them (``{"body": "def f(token: T, ...``)."""
    opening = data.rfind(b"{", line_start(data, key), key)
    return opening >= 0 and not _FLOW_BREAK.search(data, opening, key)


def _in_call(data: bytes, key: int) -> bool:
    """Whether the key at ``key`` is inside a ``(`` opened earlier on its line: a signature ``def f(token: T, ...``."""
    start = line_start(data, key)
    return data.rfind(b"(", start, key) > data.rfind(b")", start, key)


def _space_at(data: bytes, at: int) -> bool:
    """Whether whitespace (or an escaped line end or tab) or the end of ``data`` is at ``at``."""
    return data[at : at + 1] in _SPACE or _ESCAPED_SPACE.match(data, at) is not None


def _line_end(data: bytes, at: int) -> int:
    """Where the line holding ``at`` ends: at a line end, or an escaped one (text inside JSON), or the data's end."""
    found = _LINE_END.search(data, at)
    return len(data) if found is None else found.start()


def words(key: str) -> str:
    """``key`` as lower-case snake-case words: ``X-Api-Key``, ``apiKey``, ``api%5Fkey``, ``ａｐｉ＿ｋｅｙ`` and
    ``api_\u200bkey`` (an invisible character in it) alike."""
    if not key.isascii():
        key = key.translate(_AS_SHOWN)
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


def key_test(words_: Iterable[str]) -> re.Pattern[str] | None:
    """The test a key's :func:`words` pass when the key ends with one of ``words_`` (None: no key is secret)."""
    ordered = sorted(words_, key=len, reverse=True)
    alternatives = "|".join(re.escape(w) + ("" if w == "token" else "s?") for w in ordered)
    return re.compile(rf"(?:^|_)(?:{alternatives})$") if ordered else None


class KeyAssignment(NamedTuple):
    """The rule finding ``KEY = value`` for the key words sharing one literal, and its screen."""

    name: str
    literal: bytes
    caseless: bool
    regex: re.Pattern[bytes]
    screen: Screen
    unpacking: re.Pattern[bytes]  # the key, then more targets of a tuple unpacked: ``password, user = ...``
    unpacking_screen: Screen  # (its own: most text with the key unpacks no tuple)


def key_assignments(words_: Iterable[str]) -> list[KeyAssignment]:
    """One rule for each literal the key ``words_`` (snake case, longest first) are found by."""
    by_literal: dict[tuple[bytes, bool], list[tuple[bytes, bytes]]] = {}
    for word in words_:
        literal, in_any_case, rest = _key_literal(word, possessive=True)
        by_literal.setdefault((literal, in_any_case), []).append((rest, _key_literal(word, possessive=False)[2]))
    found: list[KeyAssignment] = []
    for (literal, in_any_case), rests in sorted(by_literal.items()):
        name = f"key:{literal.decode('utf-8', 'replace')}"
        longest_first = sorted(set(rests), key=lambda pair: len(pair[0]), reverse=True)
        rest = b"(?:" + b"|".join(r for r, _ in longest_first) + b")"
        screen = b"(?:" + b"|".join(r for _, r in longest_first) + b")"
        value = b"(?:" + _OPERATOR + b"(?:" + VALUE + rb"|(?P<opened>\())|" + _ENCODED_VALUE + b")"
        if literal in _LINE_WORDS:
            value = b"(?:" + _LINE_VALUE + b"|" + value + b")"
        key = re.escape(literal) + b"(?P<rest>" + rest + b")" + _CLOSE
        regex = re.compile(key + value)
        # (apart: names after the key would hide a key among them from the rule above, ``f(token, password=x)``)
        unpacking = re.compile(key + TAIL + _OPERATOR + b"(?:" + VALUE + rb"|(?P<opened>\())")
        found.append(
            KeyAssignment(
                name,
                literal,
                in_any_case,
                regex,
                Screen(name, re.escape(literal) + screen + _SCREEN_TAIL, literal, in_any_case),
                unpacking,
                Screen(f"{name},", re.escape(literal) + screen + b"(?:" + SCREEN_TARGETS + b")", literal, in_any_case),
            )
        )
    return found


def _bare(
    match: re.Match[bytes], data: bytes, span: tuple[int, int], colon: bool, is_secret_key: Callable[[str], bool]
) -> bool | None:
    """How a bare value (at ``span``) reads: None when it is code or prose, no value; else whether it is a short
    word alone after a colon (a password, or a state: judged once the key is known)."""
    value_start, value_end = span
    value = data[value_start:value_end]
    after = data[value_end : value_end + 1]
    if after not in _AFTER_BARE:
        return None  # ``token = tokenizer(text)``: a call, not a value
    if _REPEATED.match(data, value_end):
        return None  # a filler repeated: ``meta_token = 16 * "a"``
    if DOTTED_NAME.fullmatch(value.rstrip(b"!")) or (NAME.fullmatch(value) and is_secret_key(value.decode())):
        return None  # a name passed on: ``password=password``, ``token = self.token``
    if not colon and after == b")" and _LETTERS_NAME.fullmatch(value):
        return None  # a name passed on in a call: ``get(url, cookies=jar)``
    if (
        (
            after == b","
            and (
                _LINE_END_AFTER.match(data, value_end + 1)
                or (colon and _in_call(data, match.start()))
                or (not colon and _space_at(data, value_end + 1) and _SNAKE.fullmatch(value))
            )
        )
        or (after == b"}" and colon)
    ) and (
        # an item of a list in code: a name passed on (``secrets=secrets_map,``, ``{"token": item}``) or a type
        # (``private_key: KeyFlexible,``), unless in a mapping written on one line (``{user: ada, password: x}``)
        _LETTERS_NAME.fullmatch(value)
        if not colon
        else _code_name(value) and (_quoted_key(match, value_start) or not _in_flow_mapping(data, match.start()))
    ):
        return None
    if (
        colon
        and _PROSE_WORD.fullmatch(value)
        and value.count(b"-") <= 1
        and data[value_start - 1 : value_start] in (b" ", b"\t")
        and _MORE_WORDS.match(data, value_end)
        and not _KEY_LATER.search(data, value_end, _line_end(data, value_end))
    ):
        return None  # prose: ``api_key: Explicitly-provided API key, or None``, ``client_secret: Options for``
    if colon and NAME.fullmatch(value) and _ANNOTATION_END.match(data, value_end):
        return None  # a type: ``cookies: CookieJar | None = None``, ``f(token: AccessKey)``
    word = value.rstrip(b".,;:!?")
    if colon and len(word) < 8 and word.isalpha():
        if word != value or _MORE_WORDS.match(data, value_end) or data[value_start - 1] not in b" \t":
            return None  # prose (``password: see below``), or a name (``passwd:dir``): no YAML value
        return True  # alone at the end of its line: a password (YAML's ``password: admin``), or a state
    return False


def assigned_spans(
    match: re.Match[bytes],
    data: bytes,
    replacement: bytes,
    is_secret_key: Callable[[str], bool],
    placeholder: Callable[[bytes], bool],
) -> tuple[tuple[int, int], ...]:
    """The spans of a ``KEY = value`` match's values that may be secrets, if the key is secret: the value; in a
    tuple unpacked, the value at the key's place (``_unpacking``), and for the last target its own too unless
    both are literals and no ``let``, ``var`` or ``const`` declares the names: ``Error, password = x, 401`` may
    be a log line, and JavaScript declares each name apart (``var user, password = "x", port``) where Go's
    ``var`` unpacks a tuple.

    ``placeholder`` says whether a value only stands in for a secret (``_placeholders``).
    """
    kind = match.lastgroup or "bare"
    value_start, value_end = match.span(kind)
    if replacement in (data[value_start:value_end], data[value_start - 1 : value_end + 1]):
        return ()  # already redacted
    paired = None
    begin = -1  # (found when needed: most matches are judged without it)
    if kind not in ("line", "enc") and (
        "tail" in match.re.groupindex or data.rfind(b",", max(0, match.start() - 80), match.start()) >= 0
    ):  # (a tuple's targets: names after the key, or a comma before it)
        begin = _key_start(match, data)
        paired = unpacked_value(match, data, begin, replacement)
    own = kind != "opened" and "tail" not in match.re.groupindex  # (the last target: its own value)
    spans: list[tuple[int, int]] = []
    if paired:  # a tuple unpacked: the value at the key's place, judged as any
        if replacement in (data[paired[1] : paired[2]], data[paired[1] - 1 : paired[2] + 1]):
            return ()  # already redacted
        if (span := _judged(match, data, begin, paired, True, is_secret_key, placeholder)) is not None:
            spans.append(span)
    if own and not (paired and paired[0] in _LITERALS and kind in _LITERALS and not declared(data, begin)):
        found = (kind, value_start, value_end)
        if (span := _judged(match, data, begin, found, False, is_secret_key, placeholder)) is not None:
            spans.append(span)
    return tuple(spans)


def _key_start(match: re.Match[bytes], data: bytes) -> int:
    """Where the key of an assignment ``match`` starts: read back from its longest word (at most 64 bytes), but
    not from the ``n``, ``r`` or ``t`` of an escaped line end (JSON inside a string)."""
    start = match.start()
    begin = start - _KEY_BEFORE.match(data[max(0, start - 64) : start][::-1]).end()  # type: ignore[union-attr]
    if begin < start and begin and data[begin - 1] == 0x5C and data[begin] in b"nrt":
        begin += 1
    return begin


def _judged(
    match: re.Match[bytes],
    data: bytes,
    begin: int,
    found: tuple[str, int, int],
    paired: bool,
    is_secret_key: Callable[[str], bool],
    placeholder: Callable[[bytes], bool],
) -> tuple[int, int] | None:
    """:func:`assigned_spans` of a value ``found`` (its kind, start and end) for the key starting at ``begin``
    (-1: not found yet); ``paired``: the value at the key's place in a tuple unpacked."""
    kind, value_start, value_end = found
    value = data[value_start:value_end]
    if paired and kind == "bare" and _code_name(value):
        return None  # a name of code: ``password, user = user, password``
    if kind in ("dq", "sq") and b"\\u" in value:
        value = unescaped(value)  # (judged as it reads: ``\u003cyour-token\u003e`` is ``<your-token>``)
    op = "eop" if kind == "enc" else "op"
    colon = not paired and (kind == "line" or match[op].lower() in _COLONS)  # (``:=`` is no colon)
    compared = match[op] == b"=" and data[match.end(op) : match.end(op) + 1] == b"="
    if compared and kind == "bare" and not _DIGIT.search(value):
        return None  # ``if token == TOKEN_NAME:``, ``secret == self.secret``: a comparison with a name
    short_word = False  # a bare word of a few letters alone after a colon: a password, or a state
    if kind == "line" and match["rest"].rstrip(b"-_.%25fde").endswith(b"s"):
        # ``cookies:`` names no header (``Cookie:``, ``Set-Cookie:`` do): its value is the first word, as for
        # any key (``cookies: RequestsCookieJar | None`` is a type)
        kind = "bare"
        value_end = _BARE.match(data, value_start).end()  # type: ignore[union-attr]
        value = data[value_start:value_end]
    if _SENTENCE_END.search(data, match.start(), match.start(op) if kind != "line" else value_start):
        return None  # ``... the session cookie. :pr:`2607```: a sentence ended before the colon
    if kind == "line":
        first = value.split(None, 1)[0] if value.strip() else b""
        schemed = data[match.end("rest") : value_start].rstrip(b" \t").lower().endswith(_SCHEME_WORDS)
        if (
            not schemed
            and b"=" not in first
            and (
                _CODE.search(first)
                or (first.endswith(b",") and _NAMED.fullmatch(first[:-1]) is not None)  # ``f(cookie: Cookie, x)``
                or first.rstrip(b":?").lower() in NOT_SECRET
            )
        ):
            # ``"Proxy-Authorization": auth_value})``, ``:param cookie: (optional) ...``, ``cookie: str | None = None``,
            # ``def f(cookie: Cookie, request: Request)``: code or prose, no header
            return None
        if b" == " in value:
            return None  # a comparison: ``"no_cookie": reason == REASON_NO_CSRF_COOKIE,``
        if first != value.strip() and placeholder(first):
            return None  # ``Authorization: Bearer <token> on each request``, ``b'Authorization:' not in sent``
        if value.strip().lower() in _SCHEME_WORDS:
            return None  # a scheme alone, the credential joined in code: ``{"Authorization": "Basic " + encoded}``
    else:
        if kind != "bare" and value[:1] in _AFTER_CLOSING:
            return None  # the text after a closing quote: ``input("Password: ") or default``
        if not WORDY.search(value):
            return None  # no letter or digit: already masked (``****``), or punctuation
        if len(value) <= _NOT_SECRET_LENGTH + 1 and value.rstrip(b":?").lower() in NOT_SECRET:
            return None  # a type, a literal or a keyword: ``token: str``, ``password = None``, ``token = await f()``
        if kind != "bare" and value.strip().lower() in _SCHEME_WORDS:
            return None  # a header's scheme alone: ``authorization = b"Basic " + encoded``
        if kind in ("dq", "sq") and _REPEATED_QUOTED.match(data, value_end):
            return None  # a filler repeated: ``SECRET_KEY = "abcd" * 20``
        if kind == "bare":
            judged = _bare(match, data, (value_start, value_end), colon, is_secret_key)
            if judged is None:
                return None
            short_word = judged
    if begin < 0:
        begin = _key_start(match, data)
    if not is_secret_key(data[begin : match.end("rest")].decode("utf-8", "replace")):
        return None
    if _FIELD_LIST.search(data, max(0, begin - 64), begin):
        return None  # ``:param cookies: Dictionary or CookieJar``: a parameter described, not assigned
    if placeholder(value):
        return None  # ``password='test'``, ``SECRET_KEY = '{secret}'``, ``'Change password: %s'``
    key = words(data[begin : match.end("rest")].decode("utf-8", "replace"))
    if short_word and (
        value.lower() in _STATES
        or not _PASSWORD_KEY.search(key)
        or _CONDITION.match(data, line_start(data, begin), begin)
        or data[begin - 4 : begin] in (b"not ", b"not\t")
    ):
        return None  # ``token: expired``, ``password: changed``, ``if not password: return``: no password
    if key.endswith("token") and (
        (compared and _LEXEME.fullmatch(value)) or (kind in ("dq", "sq") and _PHRASE.fullmatch(value))
    ):
        return None  # a lexer's token: ``elif token == "keyword":``, ``token = "not in"``
    if (
        kind == "bare"
        and not colon
        and _LETTERS_NAME.fullmatch(value)
        and _TUPLE_TARGET.fullmatch(data, line_start(data, begin), begin)
    ):
        return None  # a tuple unpacked: ``cookie, token = args``
    if key == "pass" and colon and kind == "bare":
        return None  # a test's verdict or count: ``PASS: test_parse``, ``pass: 10``
    if (key in ("pwd", "pwds") or key.endswith(("_pwd", "_pwds"))) and _PATH.match(value):
        return None  # the working directory: ``PWD=/home/ada``
    return value_start, value_end
