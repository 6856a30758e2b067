"""Counted repetition ``item{lo,hi}`` that stays compact for large counts.

Counts above a threshold are factored through chunk rules (``x{0,M}`` as ``(x{a}){0,q-1}
x{0,a-1} | (x{a}){q} x{0,r}``, recursively), which is exact and keeps automata at a few
hundred states.

Example::

    >>> from .context import Context
    >>> from .layout import Layout
    >>> counted(Context(True, Layout()), Bytes(b"a"), 2, 3, "a")
    Repeat(item=Bytes(data=b'a'), min=2, max=3)
"""

from __future__ import annotations

import math
from typing import Optional

from ..ir import EPSILON, Bytes, Expr, Repeat, RuleRef, Seq, make_choice, make_seq
from .context import Context
from .vocabulary import DIRECT_REPEAT

__all__ = ["counted", "repeat", "is_small"]


def counted(ctx: Context, item: Expr, lo: int, hi: Optional[int], hint: str,
            direct: int = DIRECT_REPEAT) -> Expr:
    """``item{lo,hi}``; counts above ``direct`` are factored through chunk rules
    ``item{a}`` (a about the square root but at least ``direct``, recursively), which is
    exact and keeps automata small.  Chunks make tokens that cross a chunk end
    context-dependent (checked per mask), so string characters use a large ``direct``
    (:data:`DIRECT_STRING`): a plain chain of states, where the mask cache merges all
    states further than the longest token from the bound.  (String bounds of 64 to 10,000
    characters do not come here: :meth:`.strings.Strings.counted_chars`.)"""
    if hi is not None and hi <= direct or hi is None and lo <= direct:
        return repeat(item, lo, hi)
    head = _exactly(ctx, item, lo, hint, direct=direct)
    tail = Repeat(item, 0, None) if hi is None else _up_to(ctx, item, hi - lo, hint, direct)
    return make_seq([head, tail])


def _chunk(ctx: Context, item: Expr, n: int, hint: str, direct: int) -> Expr:
    return ctx.shared_rule(("chunk", item, n), hint,
                           lambda: _exactly(ctx, item, n, hint, inline=True, direct=direct))


def _exactly(ctx: Context, item: Expr, n: int, hint: str, inline: bool = False,
             direct: int = DIRECT_REPEAT) -> Expr:
    if n <= direct:
        return repeat(item, n, n)
    a = max(math.isqrt(n), direct)
    q, r = divmod(n, a)
    chunk = _chunk(ctx, item, a, hint, direct)
    return make_seq([_exactly(ctx, chunk, q, hint), repeat(item, r, r)])


def _up_to(ctx: Context, item: Expr, m: int, hint: str, direct: int = DIRECT_REPEAT) -> Expr:
    """``item{0,m}``: n = a*k + s with s < a for k < q, and s <= r for k = q."""
    if m <= direct:
        return repeat(item, 0, m)
    a = max(math.isqrt(m + 1), direct)
    q, r = divmod(m, a)
    chunk = _chunk(ctx, item, a, hint, direct)
    return make_choice([
        make_seq([_up_to(ctx, chunk, q - 1, hint), _up_to(ctx, item, a - 1, hint, direct)]),
        make_seq([_exactly(ctx, chunk, q, hint), _up_to(ctx, item, r, hint, direct)]),
    ])


def repeat(item: Expr, lo: int, hi: Optional[int]) -> Expr:
    """``item{lo,hi}`` without a Repeat node where none is needed."""
    if hi == 0:
        return EPSILON
    if lo == 1 and hi == 1:
        return item
    return Repeat(item, lo, hi)


def is_small(e: Expr) -> bool:
    """An expression cheap enough to repeat inline (no rule of its own)."""
    return isinstance(e, (Bytes, RuleRef)) or (type(e) is Seq and e.items == ())  # (== EPSILON)
