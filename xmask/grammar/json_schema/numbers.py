"""Numbers: the merged numeric keywords as one shared rule (see :func:`..number_range.number_expr`).

Example::

    >>> from .context import Context
    >>> from .layout import Layout
    >>> from .merged import Merged
    >>> ctx = Context(True, Layout(True, None, None, None))
    >>> m = Merged(); m.kinds = {"integer"}; m.lo = Fraction(0)
    >>> gen_number(ctx, m, "n")
    RuleRef(name='integer')
"""

from __future__ import annotations

from fractions import Fraction
from typing import Optional

from ...errors import GrammarLimitError
from ..ir import Expr
from ..number_range import number_expr
from .context import Context
from .merged import Merged
from .vocabulary import FRAC, INT, NUMERIC_FORMATS

__all__ = ["gen_number"]


def gen_number(ctx: Context, m: Merged, hint: str) -> Optional[Expr]:
    """The numbers of ``m`` (bounds, ``multipleOf``, OpenAPI numeric formats), one shared rule."""
    lo, lo_x, hi, hi_x = m.lo, m.lo_x, m.hi, m.hi_x
    for fmt, path in m.formats:
        if fmt in NUMERIC_FORMATS:
            a, b = NUMERIC_FORMATS[fmt]
            if a is not None and (lo is None or a > lo):
                lo, lo_x = Fraction(a), False
            if b is not None and (hi is None or b < hi):
                hi, hi_x = Fraction(b), False
    integer = FRAC not in m.kinds
    nonint = INT not in m.kinds  # non-integer values only, e.g. from "not": {"type": "integer"}
    not_mult = tuple(sorted(set(m.not_mult)))
    key = ("num", lo, lo_x, hi, hi_x, m.mult, integer, nonint, not_mult)

    def build():
        try:
            return number_expr(lo, hi, lo_exclusive=lo_x, hi_exclusive=hi_x, multiple_of=m.mult,
                               integer=integer, non_integer=nonint, not_multiple_of=not_mult, sink=ctx.sink,
                               hint="integer" if integer else "number")
        except (GrammarLimitError, ValueError) as e:
            ctx.unsupported(f"numeric constraint not expressible: {e}", ctx.where(m))
            return number_expr(integer=integer, sink=ctx.sink)
    return ctx.shared_rule(key, "integer" if integer else "number", build)
