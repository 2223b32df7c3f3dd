"""The exact decimal digits of any integer, however long.

``str(n)`` refuses integers of more than 4,300 digits (``sys.set_int_max_str_digits``,
a guard against its quadratic time), and raising that limit is process-wide. This
splits the integer's bits in halves and joins the halves' digits with
:mod:`decimal`, whose multiplication is fast on long numbers: a million digits in
about a second, where the unlimited ``str`` takes twenty.
"""

from __future__ import annotations

import decimal

__all__ = ["decimal_digits"]

_SMALL_BITS = 128


def decimal_digits(number: int) -> str:
    """``number`` written in decimal, exactly as ``str`` would without its digit limit.

    Never changes the process's limit; a plain ``str`` for the usual short integer.
    """
    try:
        return str(number)
    except ValueError:  # past the interpreter's digit limit
        pass
    powers: dict[int, decimal.Decimal] = {}

    def power(bits: int) -> decimal.Decimal:  # 2**bits, exactly; each one computed once
        found = powers.get(bits)
        if found is None:
            half = bits >> 1
            found = decimal.Decimal(2) ** bits if bits <= _SMALL_BITS else power(half) * power(bits - half)
            powers[bits] = found
        return found

    def digits(value: int, bits: int) -> decimal.Decimal:  # value < 2**bits
        if bits <= _SMALL_BITS:
            return decimal.Decimal(value)
        half = bits >> 1
        high = value >> half
        return digits(value - (high << half), half) + digits(high, bits - half) * power(half)

    with decimal.localcontext() as context:
        context.prec, context.Emax, context.Emin = decimal.MAX_PREC, decimal.MAX_EMAX, decimal.MIN_EMIN
        context.traps[decimal.Inexact] = True  # (exact by construction; a rounding would be a bug, not a value)
        text = str(digits(abs(number), number.bit_length()))
    return "-" + text if number < 0 else text
