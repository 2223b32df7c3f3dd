"""Secret redaction, applied to arguments and results before anything is stored.

On by default. What is redacted:

- the value under any dict key (or argument name) that looks secret: a key whose
  last word is ``api_key``/``apikey``, ``token``, ``password``/``passwd``,
  ``secret``, ``authorization``, ``private_key``, ``access_key`` or
  ``credential(s)``, in snake, kebab, dotted or camel case (``access_token``,
  ``X-Api-Key``, ``clientSecret``); ``max_tokens`` or ``token_count`` are not secret;
- inside any string: bearer tokens (``Bearer <token>``), OpenAI/Anthropic-style
  ``sk-...`` keys, Stripe ``sk_live_``/``rk_live_`` keys, AWS access key ids
  (``AKIA...``/``ASIA...``), GitHub tokens (``ghp_``, ``gho_``, ``ghu_``, ``ghs_``,
  ``ghr_``, ``github_pat_``), Slack tokens (``xoxb-`` ...), Google API keys
  (``AIza...``), JSON Web Tokens and PEM private-key blocks.

Each redacted value becomes ``"[REDACTED]"``. Turn redaction off with
``session(redact=False)``; extend it with ``Redactor(keys=..., patterns=...)``.

Redaction works on the JSON bytes about to be stored. One pass (Hyperscan, see
``toolctx._secret_scan``) finds which of the literal fragments the rules need are
present, and only their rules run: clean outputs (the usual case) cost that one
scan; a key word in output that holds no keys (source code that mentions
``token`` in a plain string result) costs nothing more; an anchor such as
``sk-`` runs only its own pattern. Only then is the value parsed, walked and,
if a secret was found, re-encoded.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from toolctx._secret_scan import Prefilter
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


@dataclass(frozen=True)
class SecretPattern:
    """A secret format found inside strings.

    ``regex`` matches it; if it has a capturing group, only the group is replaced
    (``Bearer [REDACTED]``). ``anchors`` are literal fragments every match
    contains, in any (ASCII) letter case with ``caseless=True``; without anchors
    the pattern runs on every output.
    """

    name: str
    regex: str
    anchors: tuple[str, ...]
    caseless: bool = False


DEFAULT_KEYS: tuple[str, ...] = (
    "api_key",
    "apikey",
    "token",
    "password",
    "passwd",
    "secret",
    "authorization",
    "private_key",
    "access_key",
    "credential",
    "credentials",
)
"""Key names (in snake case) whose values are secret when a key ends with them."""

DEFAULT_PATTERNS: tuple[SecretPattern, ...] = (
    SecretPattern("bearer", r"(?i:bearer)\s+([A-Za-z0-9._~+/\-]{8,}=*)", ("bearer",), caseless=True),
    SecretPattern("sk-key", r"\bsk-[A-Za-z0-9_\-]{20,}", ("sk-",)),
    SecretPattern("stripe", r"\b[rs]k_live_[A-Za-z0-9]{16,}", ("k_live_",)),
    SecretPattern("aws-key-id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", ("AKIA", "ASIA")),
    SecretPattern(
        "github",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    SecretPattern("slack", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", ("xox",)),
    SecretPattern("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}", ("AIza",)),
    SecretPattern("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", ("eyJ",)),
    SecretPattern(
        "private-key",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
        ("-----BEGIN",),
    ),
)

_HOOKS = ("redact_value", "redact_text", "is_secret_key", "_replace_match", "_match_key")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[\-. ]+")


def _key_fragments(word: str) -> set[str]:
    """Spellings of a snake-case key word with any separator (letter case is ignored)."""
    parts = word.split("_")
    return {sep.join(parts) for sep in ("_", "-", ".", " ", "")}


class Redactor:
    """Replaces secrets in JSON outputs; see the module docstring for the default rules.

    ``keys``: snake-case names; a dict key (or argument name) is secret when, once
    split into words, it ends with one of them. ``patterns``: secret formats found
    inside strings. Subclass and override :meth:`redact_value`, :meth:`redact_text`
    or :meth:`is_secret_key` for anything else: an override runs on every output in
    which the scan found a key word or an anchor (or always, with a pattern that
    has no anchors).
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
        words = "|".join(re.escape(k) for k in sorted(self.keys, key=len, reverse=True))
        self._key_rule = re.compile(rf"(?:^|_)(?:{words})$") if self.keys else None
        self._string_rule = re.compile("|".join(f"(?:{p.regex})" for p in self.patterns)) if self.patterns else None
        key_fragments = {f for k in self.keys for f in _key_fragments(k)}
        self._prefilter = Prefilter(
            caseless=key_fragments | {a for p in self.patterns if p.caseless for a in p.anchors},
            exact=(a for p in self.patterns if not p.caseless for a in p.anchors),
        )
        self._key_fragments = frozenset(key_fragments)
        # Which patterns each anchor stands for; a pattern without anchors cannot be
        # pre-screened, so it runs on every output.
        self._anchored: dict[str, set[int]] = {}
        for index, pattern in enumerate(self.patterns):
            for anchor in pattern.anchors:
                self._anchored.setdefault(anchor, set()).add(index)
        self._unanchored = frozenset(i for i, p in enumerate(self.patterns) if not p.anchors)
        # A subclass that changes how values, strings or keys are judged gets the full
        # walk through its own methods whenever the scan found anything.
        self._custom = any(getattr(type(self), name) is not getattr(Redactor, name) for name in _HOOKS)
        self._is_secret_key = functools.lru_cache(maxsize=4096)(self._match_key)
        self._rule_of = functools.lru_cache(maxsize=256)(self._compile_rule)

    def __repr__(self) -> str:
        return f"Redactor(keys={list(self.keys)}, patterns={[p.name for p in self.patterns]})"

    def __call__(self, data: bytes) -> tuple[bytes, bool]:
        """Redact JSON ``data`` (as orjson writes it); returns the bytes to store and whether anything changed."""
        return self._redact_json(data, self._prefilter.found(data))

    def redact_call(self, args_json: bytes, result_json: bytes) -> tuple[bytes, bytes]:
        """Redact a call's argument and result JSON, with one scan when both are small."""
        if len(result_json) <= _JOINED_SCAN_LIMIT:
            # Compact JSON never holds a raw newline and no fragment does either, so
            # nothing can match across the join: one scan answers for both.
            found = self._prefilter.found(args_json + b"\n" + result_json)
            if not found and not self._unanchored:
                return args_json, result_json
            return self._redact_json(args_json, found)[0], self._redact_json(result_json, found)[0]
        return self(args_json)[0], self(result_json)[0]

    def _redact_json(self, data: bytes, found: frozenset[str]) -> tuple[bytes, bool]:
        """Apply the rules whose fragments were found: the walk is skipped when none can match."""
        if not found and not self._unanchored:
            return data, False
        keys = self._custom or not found.isdisjoint(self._key_fragments)
        rule = self._rule_for(found)
        if rule is None and (not keys or data[:1] not in (b"{", b"[")):
            return data, False  # only key words were found, and a lone string or number has no keys
        value = orjson.loads(data)
        redacted = self.redact_value(value) if self._custom else self._walk(value, keys, rule)
        if redacted == value:
            return data, False
        return orjson.dumps(redacted), True

    def _rule_for(self, found: frozenset[str]) -> re.Pattern[str] | None:
        if self._custom:
            return self._string_rule
        chosen = set(self._unanchored)
        for fragment in found:
            chosen.update(self._anchored.get(fragment, ()))
        return self._rule_of(frozenset(chosen))

    def _compile_rule(self, chosen: frozenset[int]) -> re.Pattern[str] | None:
        if not chosen:
            return None
        return re.compile("|".join(f"(?:{self.patterns[i].regex})" for i in sorted(chosen)))

    def _walk(self, value: Any, keys: bool, rule: re.Pattern[str] | None) -> Any:
        if isinstance(value, str):
            return value if rule is None else rule.sub(self._replace_match, value)
        if isinstance(value, dict):
            return {
                k: self.replacement if keys and v is not None and self.is_secret_key(k) else self._walk(v, keys, rule)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self._walk(v, keys, rule) for v in value]
        return value

    def _match_key(self, key: str) -> bool:
        if self._key_rule is None:
            return False
        words = _SEPARATORS.sub("_", _CAMEL.sub("_", key)).lower()
        return self._key_rule.search(words) is not None

    def is_secret_key(self, key: str) -> bool:
        """Whether values under ``key`` are redacted."""
        return bool(self._is_secret_key(key))

    def redact_text(self, text: str) -> str:
        """``text`` with every secret pattern replaced."""
        if self._string_rule is None:
            return text
        return self._string_rule.sub(self._replace_match, text)

    def _replace_match(self, match: re.Match[str]) -> str:
        whole = match.group(0)
        for index, group in enumerate(match.groups(), 1):
            if group is not None:  # only the captured secret part, keeping e.g. "Bearer "
                start, end = match.span(index)
                offset = match.start()
                return whole[: start - offset] + self.replacement + whole[end - offset :]
        return self.replacement

    def redact_value(self, value: Any) -> Any:
        """A redacted copy of a JSON value (dicts, lists, strings, numbers), by every rule."""
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, dict):
            return {
                k: self.replacement if v is not None and self.is_secret_key(k) else self.redact_value(v)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.redact_value(v) for v in value]
        return value


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
