"""The normalised schema of one location: the conjunction of its own keywords, merged.

``Merged`` holds intersected kinds, tightened bounds, the patterns/formats to intersect and,
per applying schema object, its array and object keywords as *units* (``arr_units``,
``obj_units``), which the generators combine per item position and per property name.

Example::

    >>> m = Merged()
    >>> m.tighten_lo(Fraction(1), False); m.tighten_lo(Fraction(1), True); (m.lo, m.lo_x)
    (Fraction(1, 1), True)
"""

from __future__ import annotations

from fractions import Fraction
from typing import Dict, List, Optional, Tuple

from ...errors import InvalidSchemaError
from ..schema_check import is_count
from .vocabulary import ALL_KINDS, MAX_COUNT_BOUND

__all__ = ["Merged", "as_count", "without_contains"]


class Merged:
    """The conjunction of the own keywords of a set of schema objects."""

    __slots__ = (
        "kinds", "enum", "lo", "lo_x", "hi", "hi_x", "mult", "not_mult", "min_len", "max_len",
        "patterns", "not_patterns", "formats", "not_formats", "not_strings", "arr_units",
        "min_items", "max_items", "contains", "unique", "obj_units", "required", "min_props",
        "max_props", "prop_names", "gated", "nids", "has_addl", "has_rest", "names", "extra_keys",
        "uneval_approx", "declared", "mentions", "big",
    )

    def __init__(self):
        self.kinds = set(ALL_KINDS)
        self.enum: Optional[list] = None
        self.lo = self.hi = None
        self.lo_x = self.hi_x = False
        self.mult: Optional[Fraction] = None
        self.not_mult: List[Fraction] = []
        self.min_len, self.max_len = 0, None
        self.patterns: List[Tuple[str, str]] = []
        self.not_patterns: List[Tuple[str, str]] = []
        self.formats: List[Tuple[str, str]] = []
        self.not_formats: List[Tuple[str, str]] = []
        self.not_strings: List[str] = []
        self.arr_units: List[Tuple[Optional[list], Optional[int], str]] = []
        self.min_items, self.max_items = 0, None
        self.contains: List[Tuple[int, int, Optional[int], str]] = []
        self.unique: Optional[str] = None
        self.obj_units: List[Tuple[Dict[str, int], List[Tuple[str, int, str]], Optional[int], str]] = []
        self.required: Dict[str, None] = {}
        self.min_props, self.max_props = 0, None
        self.prop_names: List[int] = []
        self.gated: List[Tuple[Optional[str], str, str]] = []  # (kind or None, pointer, message)
        self.nids: List[int] = []
        self.has_addl = False
        self.has_rest = False
        self.names: Dict[str, int] = {}  # property name -> index of its first mention
        self.declared: Dict[str, int] = {}  # name -> mention index of its first ``properties``
        self.mentions = 0  # running index of name mentions (properties / required)
        self.extra_keys: List[Tuple[Tuple[str, ...], Tuple[str, ...], int]] = []
        self.big: Dict[str, str] = {}  # "len"/"items"/"props" -> pointer of a bound above MAX_COUNT_BOUND
        # unevaluated* applied with an under-approximated evaluated set (stricter than the
        # schema): fine for generation, but no disjointness proof may rely on it
        self.uneval_approx = False

    def tighten_lo(self, v: Fraction, excl: bool) -> None:
        """Raise the lower bound to ``v`` (exclusive when ``excl``) if that is tighter."""
        if self.lo is None or v > self.lo or (v == self.lo and excl):
            self.lo, self.lo_x = v, excl

    def tighten_hi(self, v: Fraction, excl: bool) -> None:
        """Lower the upper bound to ``v`` (exclusive when ``excl``) if that is tighter."""
        if self.hi is None or v < self.hi or (v == self.hi and excl):
            self.hi, self.hi_x = v, excl


def as_count(v, path: str, m: Optional[Merged] = None, what: str = "") -> int:
    """A count keyword's value, capped at ``MAX_COUNT_BOUND + 1`` (a 400-digit ``minLength``
    must not reach arithmetic or ``float()``); the pointer of a capped bound is kept in
    ``m.big[what]`` for the limit error raised where the bound is used."""
    if not is_count(v):
        raise InvalidSchemaError(f"expected a non-negative integer, got {v!r}", path)
    c = int(v)
    if c > MAX_COUNT_BOUND:
        if m is not None:
            m.big.setdefault(what, path)
        return MAX_COUNT_BOUND + 1
    return c


def without_contains(m: Merged) -> Merged:
    """A copy of ``m`` without its ``contains`` constraints."""
    c = Merged()
    for s in Merged.__slots__:
        setattr(c, s, getattr(m, s))
    c.contains = []
    return c
