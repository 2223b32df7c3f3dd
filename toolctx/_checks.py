"""The checks every public entry point runs on the values it is given.

One function per kind of value, each raising :class:`~toolctx.errors.ConfigError`
(a ``ValueError``) that names the option, shows the value (secrets redacted) and says what to pass.
``bool`` is refused wherever a number is expected: ``True`` is an ``int`` in
Python, but never a sensible count, size or score.
"""

from __future__ import annotations

import math
import re
from typing import Literal

from toolctx._scrub import shown
from toolctx.errors import ConfigError

__all__ = ["fraction", "non_empty_text", "output_limit", "real_number", "safe_name", "whole_number"]

_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def whole_number(
    name: str, value: object, *, minimum: int = 0, maximum: int | None = None, unit: str | None = None
) -> int:
    """``value`` if it is an ``int`` (not a bool) in ``[minimum, maximum]``; ``unit`` names what it counts."""
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and minimum <= value
        and (maximum is None or value <= maximum)
    ):
        return value
    bounds = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
    counted = f"whole number of {unit}" if unit else "whole number"
    raise ConfigError(f"{name} must be a {counted} {bounds}, got {shown(value)}")


def real_number(
    name: str, value: object, *, minimum: float | None = None, above: float | None = None, unit: str | None = None
) -> float:
    """``value`` as a finite float (ints accepted, bools and NaN/infinities not).

    ``minimum`` is inclusive, ``above`` exclusive; ``unit`` names what it counts.
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or (minimum is not None and value < minimum)
        or (above is not None and value <= above)
    ):
        bound = f" > {above:g}" if above is not None else "" if minimum is None else f" >= {minimum:g}"
        counted = f"finite number of {unit}" if unit else "finite number"
        raise ConfigError(f"{name} must be a {counted}{bound}, got {shown(value)}")
    return float(value)


def fraction(name: str, value: object, *, zero: bool = True) -> float:
    """``value`` as a float in ``[0, 1]`` (``(0, 1]`` with ``zero=False``)."""
    ok = not isinstance(value, bool) and isinstance(value, int | float) and 0.0 <= value <= 1.0
    if not ok or (not zero and value == 0.0):
        interval = "[0, 1]" if zero else "(0, 1]"
        raise ConfigError(f"{name} must be a number in {interval}, got {shown(value)}")
    return float(value)  # type: ignore[arg-type]


def non_empty_text(name: str, value: object, *, max_length: int | None = None) -> str:
    """``value`` if it is a ``str`` with something other than whitespace in it (and not too long)."""
    if not isinstance(value, str) or not value.strip() or (max_length is not None and len(value) > max_length):
        limit = "" if max_length is None else f" of up to {max_length} characters"
        raise ConfigError(f"{name} must be a non-empty string{limit}, got {shown(value)}")
    return value


def output_limit(name: str, value: object) -> int | Literal["never", "always"]:
    """``value`` if it is a tool's output limit: a whole number of tokens >= 1, ``"never"`` or ``"always"``."""
    if value == "never" and isinstance(value, str):
        return "never"
    if value == "always" and isinstance(value, str):
        return "always"
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise ConfigError(
        f"{name} must be a whole number of tokens >= 1, 'never' (the output is never replaced by a stand-in) "
        f"or 'always' (a stand-in whenever it is shorter than the output), got {shown(value)}"
    )


def safe_name(what: str, value: object, *, max_length: int) -> str:
    """``value`` if it can name a file or directory anywhere: ASCII letters, digits, ``_``, ``-`` and ``.``.

    It must start with a letter or digit and hold no ``..``, so it can never be a
    path separator, a parent reference or a hidden file.
    """
    if not isinstance(value, str) or len(value) > max_length or _SAFE_NAME.fullmatch(value) is None or ".." in value:
        raise ConfigError(
            f"{what} {shown(value, 100)} is not allowed: use 1-{max_length} ASCII letters, digits, '_', '-' or '.', "
            "starting with a letter or digit and without '..'"
        )
    return value
