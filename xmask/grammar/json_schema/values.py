"""JSON values as JSON Schema compares them: kinds, equality, hashable keys.

Numbers compare by value (``1 == 1.0``), booleans never equal numbers.

Example::

    >>> json_eq(1, 1.0), json_eq(True, 1), canon([1.0]) == canon([1])
    (True, False, True)
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

from .numbers import to_fraction
from .vocabulary import ARR, BOOL, FRAC, INT, NULL, OBJ, STR

__all__ = ["is_num", "kind_of", "json_eq", "canon", "dedupe", "frac_lcm", "code_points", "frac_json"]


def is_num(v) -> bool:
    """Whether ``v`` is a JSON number (booleans are not)."""
    return isinstance(v, (int, float, Fraction)) and not isinstance(v, bool)



def kind_of(v) -> str:
    """The kind of JSON value ``v`` (an integral float is an integer)."""
    if v is None:
        return NULL
    if isinstance(v, bool):
        return BOOL
    if isinstance(v, int):
        return INT
    if isinstance(v, float):
        return INT if v.is_integer() else FRAC
    if isinstance(v, str):
        return STR
    if isinstance(v, list):
        return ARR
    if isinstance(v, dict):
        return OBJ
    raise TypeError(f"not a JSON value: {v!r}")


def json_eq(a, b) -> bool:
    """JSON Schema equality: numbers by value, booleans distinct from numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_num(a) and is_num(b):
        return to_fraction(a) == to_fraction(b) if not (a == b) else True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_eq(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_eq(a[k], b[k]) for k in a)
    if type(a) is not type(b) and not (is_num(a) and is_num(b)):
        return False
    return a == b


def canon(v):
    """A hashable key with JSON Schema equality (numbers by value, booleans apart)."""
    if v is None:
        return ("n",)
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, (int, float, Fraction)):
        return ("#", to_fraction(v))
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, list):
        return ("a", tuple(canon(x) for x in v))
    if isinstance(v, dict):
        return ("o", frozenset((k, canon(x)) for k, x in v.items()))
    raise TypeError(f"not a JSON value: {v!r}")


def dedupe(values) -> list:
    """``values`` without repeats (same ``json.dumps`` text), in order."""
    out, seen = [], set()
    for v in values:
        sig = json.dumps(v, sort_keys=True)
        if sig not in seen:
            seen.add(sig)
            out.append(v)
    return out


def frac_lcm(a: Fraction, b: Fraction) -> Fraction:
    """The least common multiple of two positive fractions."""
    num = a.numerator * b.numerator // math.gcd(a.numerator, b.numerator)
    den = math.gcd(a.denominator, b.denominator)
    return Fraction(num, den)


def code_points(s: str) -> int:
    """The length of ``s`` in code points (what ``minLength``/``maxLength`` count)."""
    return len(s)




def frac_json(f: Fraction):
    """Synthetic schemas carry exact bounds as Fractions (never serialized)."""
    return int(f) if f.denominator == 1 else f
