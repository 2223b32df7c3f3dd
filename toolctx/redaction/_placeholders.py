"""Values that stand in for a secret without being one: kept, so that code read back is the code that was written.

An assignment to a secret key in text (``password = ...``), the password of a URL and the
token after ``Bearer`` are replaced only when the value could be a secret. What is kept, and
why, is stated in ``_rules`` (**Placeholders**); this module holds the tests. Each one is
cheap and runs only on a value a rule has already matched, never on a whole output.

The word list is short on purpose. It holds words that say a value is not real (``test``,
``dummy``, ``example``, ``changeme``), words that fill a gap in an example (``your``,
``here``, ``value``, ``foo``), and the names of secrets themselves (``secret``,
``password``, ``token``, ``key``). It does not hold weak passwords (``admin``, ``root``,
``postgres``, ``letmein``, ``123456``): those are the real credentials of real systems,
and a value made of them is redacted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import unquote_to_bytes

__all__ = ["is_masked", "is_placeholder"]

_SAYS_NOT_REAL = (
    "test tests testing dummy fake example examples sample samples placeholder mock mocked demo stub todo fixme "
    "redacted hidden masked removed omitted not real change changeit changeme me it insecure"
)
_FILLS_A_GAP = (
    "your my our the some this that here goes insert enter put replace with value values something foo bar baz "
    "qux quux dev development local default unit for only new"
)
_NAMES_A_SECRET = (
    "secret secrets password passwords passwd pass pw pwd passphrase token tokens key keys api apikey auth access "
    "private credential credentials client hashed hash signing"
)
VOCABULARY = frozenset(f"{_SAYS_NOT_REAL} {_FILLS_A_GAP} {_NAMES_A_SECRET}".split())
"""The words a placeholder may be made of (with separators, in any case, and a digit or a run like ``123`` after)."""
_LONGEST_WORD = max(map(len, VOCABULARY))
_MOST = 200  # a longer value is not judged: it is redacted as it always was

# A template field: the value is filled in later, so it is not the secret.
_NAMED_FIELD = (
    rb"%\([^()\s]{1,64}\)[-#0 +]*[0-9]*(?:\.[0-9]+)?[A-Za-z]"  # %(name)s
    rb"|\$\{[^{}\s]{1,128}\}"  # ${NAME}, ${NAME:-default}, ${{ secrets.TOKEN }} once braces are counted
    rb"|\$\([^()]{1,128}\)"  # $(cat /run/secret)
    rb"|\{\{[^{}]{1,128}\}\}"  # {{ vault_password }}
    rb"|#\{[^{}]{1,64}\}"  # #{password}
    rb"|<%=?[^%]{0,64}%>"  # <%= password %>
    rb"|\{[A-Za-z_][A-Za-z0-9_.\[\]]{0,63}(?:![rsa])?(?::[^{}]{0,16})?\}"  # {password}, {self.token!r}, {x:>10}
)
# Fields that a secret's own characters could spell: a placeholder only when they are the whole value (or a
# few joined by punctuation: <username>:<password>).
_ONE_FIELD = (
    rb"(?:<[A-Za-z][A-Za-z0-9_.\- ]{0,63}>"  # <password>, <your-api-key>
    rb"|\[[A-Z][A-Z0-9_\- ]{1,63}\]"  # [YOUR_API_KEY]
    rb"|\$[A-Z_][A-Z0-9_]{0,63})"  # $DB_PASSWORD (environment variables are upper case)
)
_WHOLE_FIELD = re.compile(_ONE_FIELD + rb"(?:[:@/]" + _ONE_FIELD + rb"){0,3}")
_POSITIONAL_FIELD = rb"%[-#0 +]*[0-9]*(?:\.[0-9]+)?[sdifgeEGxXorcu]|\{[0-9]{0,2}(?:![rsa])?(?::[^{}]{0,16})?\}"
_NAMED = re.compile(_NAMED_FIELD)
_FIELDS = re.compile(_NAMED_FIELD + b"|" + _POSITIONAL_FIELD)
_WORDY = re.compile(rb"[A-Za-z0-9\x80-\xff]")
_MASKS = re.compile(rb"[xX]{6,}|\*{3,}|(?:\xe2\x80\xa2){3,}")  # xxxxxx, ***, •••
_MASKED_HEAD = re.compile(rb"(?:[*#xX]|\xe2\x80\xa2){4,}[A-Za-z0-9]{0,4}")  # ****1234: masked but for its end
_SEPARATORS = re.compile(rb"[-_. ]+")
_SENTENCE = re.compile(rb"[A-Za-z]\S*+(?: \S++){2,}+(?<=[.!?:])")
_WORDS = re.compile(rb"[A-Za-z0-9]++(?:[-_. ]++[A-Za-z0-9]++)*+")
_PARTS = re.compile(rb"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_NAME = re.compile(rb"([A-Za-z]++(?:[-_. ][A-Za-z]++)*+)[-_]?([0-9]{1,10})?")  # possessive: no retries
_ESCAPE = re.compile(rb"%[0-9A-Fa-f]{2}")
_COUNTING = "01234567890"
_SHOWN = re.compile(rb"[A-Za-z0-9\x80-\xff]+")  # letters and digits, any non-ASCII character's bytes among them
_ELIDED = 4  # bytes of those before an ellipsis that a value may show and still be elided
_ALPHABET = b"abcdefghijklmnopqrstuvwxyz"


def is_masked(secret: bytes) -> bool:
    """Whether a matched token is a masked one: a run of six or more ``x`` (``sk-xxxxxxxxxxxxxxxxxxxx``)."""
    return _MASKS.search(secret) is not None


def is_placeholder(value: bytes, is_secret_key: Callable[[str], bool]) -> bool:
    """Whether ``value`` (UTF-8), assigned to a secret key or written as a password, only stands in for a secret.

    ``is_secret_key`` judges a value that names a secret (``hashed_password``,
    ``django_tests_secret_key``) as it judges keys.
    """
    value = value.strip()
    if len(value) > _MOST:
        return False
    if len(value) <= 1 or _masked_whole(value) or is_masked(value):
        return True
    if len(value) >= 6 and value.lower() in _ALPHABET:
        return True  # the alphabet in order ("abcdefghijkl"), as tests fill a value
    if value.endswith((b"...", b"\xe2\x80\xa6")) and sum(map(len, _SHOWN.findall(value[:-3]))) <= _ELIDED:
        return True  # elided: "...", "hf_...", "sk-…" (a format's prefix at most)
    if b"%" in value or b"{" in value or b"<" in value or b"$" in value or b"[" in value:
        if _NAMED.search(value) is not None or _WHOLE_FIELD.fullmatch(value) is not None:
            return True
        fields = _FIELDS.sub(b"", value)
        if len(fields) < len(value) and _WORDY.search(fields) is None:
            return True  # only positional fields and punctuation: "%s", "%s:%s", "{}"
    if b" " in value and _SENTENCE.fullmatch(value) is not None:
        return True  # a sentence ("This field is required."), not a passphrase
    if b"%" in value and _ESCAPE.search(value):  # URL-encoded (``pass%20pass``): judged as it reads
        return is_placeholder(unquote_to_bytes(value), is_secret_key)
    if _WORDS.fullmatch(value) is None:
        return False
    return _of_placeholder_words(value) or _names_a_secret(value, is_secret_key)


def _masked_whole(value: bytes) -> bool:
    """One character over and over (``xxxx-xxxx``, ``••••``), or masked but for the last few characters."""
    plain = _SEPARATORS.sub(b"", value)
    if plain and len(set(plain.lower().decode("utf-8", "replace"))) == 1:
        return True
    return _MASKED_HEAD.fullmatch(value) is not None


def _counting(digits: bytes) -> bool:
    """A digit, repeated or counting up (``1``, ``000``, ``123``): what examples number their values with."""
    return len(set(digits)) == 1 or digits.decode() in _COUNTING


def _of_placeholder_words(value: bytes) -> bool:
    """Made of :data:`VOCABULARY` words only (``test-secret-key``, ``your_api_key_here``, ``testPassword1``)."""
    parts = _PARTS.findall(value)
    words = [p.lower().decode() for p in parts if not p.isdigit()]
    if not words or not all(_counting(p) for p in parts if p.isdigit()):
        return False
    return all(_spelled(word) for word in words)


def _spelled(word: str) -> bool:
    """Whether ``word`` (lower-case letters) is one or more :data:`VOCABULARY` words run together (``changeme``)."""
    if len(word) > 4 * _LONGEST_WORD:
        return False
    ends = [True] + [False] * len(word)
    for end in range(1, len(word) + 1):
        for start in range(max(0, end - _LONGEST_WORD), end):
            if ends[start] and word[start:end] in VOCABULARY:
                ends[end] = True
                break
    return ends[-1]


def _names_a_secret(value: bytes, is_secret_key: Callable[[str], bool]) -> bool:
    """A name that is itself a secret key, with a digit or a count after it (``hashed_password_123``)."""
    name = _NAME.fullmatch(value)
    if name is None or (name.group(2) is not None and not _counting(name.group(2))):
        return False
    return is_secret_key(name.group(1).decode())
