"""Secret redaction, applied to arguments and results before anything is stored.

On by default; ``session(redact=False)`` turns it off and ``session(redact=Redactor(...))``
changes the rules. The same rules keep secrets out of memory items
(``MemoryConfig(redact=...)``) and out of toolctx's own log records, warnings and exception
messages (:func:`redact_messages`). Each secret found is replaced by ``[REDACTED]`` (the
``replacement``); the tool's caller still gets the real value. Sessions redact each call with
:meth:`Redactor.redact_call_with_id`; a :class:`Redactor` also redacts any JSON, text,
bytes or value on its own.

**Cost.** Redaction works on the JSON bytes about to be stored. One scan (Hyperscan with
the ``fast`` extra, or ``re`` without it) says which literal fragments the rules need are
present, narrowed for the key words to where an ``=`` or ``:`` follows; only their rules
run, and only if one can match is the value parsed, walked and re-encoded. Clean outputs,
the usual case, cost that one scan (with ``re``, plus a pass of whole-buffer operations that
finds the runs of base64 in which the base64 of a literal is looked for). Every default
rule runs in time linear in its input: each starts with a literal, looks back a bounded
number of characters, and its repeats are bounded or run possessively to the end of a
character class, so no match is retried from inside another; in texts of 1 MiB or more a
rule is tried only where its literal occurs, when that is rare enough.

The rules follow.
"""

from __future__ import annotations

from toolctx.redaction import _rules
from toolctx.redaction._messages import redact_messages
from toolctx.redaction._redactor import Redactor, default_redactor, resolve_redactor
from toolctx.redaction._rules import DEFAULT_KEYS, DEFAULT_PATTERNS, REDACTED, SecretPattern

__all__ = [
    "DEFAULT_KEYS",
    "DEFAULT_PATTERNS",
    "REDACTED",
    "Redactor",
    "SecretPattern",
    "default_redactor",
    "redact_messages",
    "resolve_redactor",
]

if __doc__ and _rules.__doc__:  # the rule list is written beside the rules; it is read here
    __doc__ += "\n" + _rules.__doc__.split("\n\n", 2)[2]
