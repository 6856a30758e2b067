"""Numeric range grammars (xmask.grammar.json_schema.numbers): exhaustive value checks against the
compiled engine."""

import itertools
import re
from decimal import Decimal
from fractions import Fraction

import pytest

import xmask
from xmask.errors import GrammarLimitError
from xmask.grammar.json_schema.numbers import (
    integer_grammar,
    number_expr,
    number_grammar,
    to_fraction,
)
from xmask.grammar.recognizer import Recognizer

_ENGINE = {}


def _engine():
    if not _ENGINE:
        info = xmask.default_tokenizer_info()
        _ENGINE["comp"] = xmask.GrammarCompiler(info)
        _ENGINE["stop"] = info.stop_token_ids[0]
    return _ENGINE["comp"], _ENGINE["stop"]


class Acceptor:
    """Compiles once; ``acc(text)`` is True iff the whole text is a sentence."""

    def __init__(self, grammar):
        comp, self.stop = _engine()
        self.cg = comp.compile_grammar(grammar)

    def __call__(self, text: str) -> bool:
        m = xmask.GrammarMatcher(self.cg)
        return m.accept_string(text) and m.accept_token(self.stop)


# ---------------------------------------------------------------------------- integers

INT_RANGES = [(-5, 123), (0, 0), (-100, -7), (None, 5), (3, None), (-1, 1), (10, 99), (0, 1000),
              (-999, -100), (7, 7), (None, -13), (-13, None), (1, 9), (100, 100), (-20, 20), (95, 105)]


@pytest.mark.parametrize("lo,hi", INT_RANGES)
@pytest.mark.parametrize("mult", [None, 1, 3, 7, 10])
def test_integer_ranges_exhaustive(lo, hi, mult):
    a = (lo if lo is not None else -150) - 50
    b = (hi if hi is not None else 150) + 50
    grammar = integer_grammar(lo, hi, multiple_of=mult)
    if lo is not None and hi is not None and mult and not any(v % mult == 0 for v in range(lo, hi + 1)):
        with pytest.raises(xmask.GrammarError):  # empty language: the compiler refuses it
            Acceptor(grammar)
        return
    acc = Acceptor(grammar)
    for v in range(a, b + 1):
        expected = (lo is None or v >= lo) and (hi is None or v <= hi) and (mult is None or v % mult == 0)
        assert acc(str(v)) == expected, (lo, hi, mult, v)
    zero_ok = (lo is None or lo <= 0) and (hi is None or hi >= 0)
    assert acc("-0") == zero_ok
    for bad in ("01", "-01", "1.0", "1e1", "--1", "", "+1", " 1"):
        assert not acc(bad), bad


def test_integer_exclusive_decimal_bounds():
    # x > 2.5 and x < 7 for integers: 3..6
    acc = Acceptor(number_grammar(2.5, 7, lo_exclusive=True, hi_exclusive=True, integer=True))
    assert [v for v in range(-5, 15) if acc(str(v))] == [3, 4, 5, 6]


def test_integer_multiple_of_decimal():
    # integers that are multiples of 1.5 are the multiples of 3
    acc = Acceptor(number_grammar(0, 30, integer=True, multiple_of=1.5))
    assert [v for v in range(0, 31) if acc(str(v))] == list(range(0, 31, 3))


def test_big_bounds():
    acc = Acceptor(integer_grammar(-(2 ** 63), 2 ** 63 - 1))
    assert acc(str(2 ** 63 - 1)) and acc(str(-(2 ** 63)))
    assert not acc(str(2 ** 63)) and not acc(str(-(2 ** 63) - 1))
    assert acc("0") and acc("123456789")


def test_empty_range():
    g = integer_grammar(5, 4)
    assert not Recognizer(g).accepts(b"5")
    assert number_expr(3, 3, lo_exclusive=True) is None


# ---------------------------------------------------------------------------- decimals

def _candidates():
    out = set()
    for ip in ["0", "1", "2", "5", "9", "10", "12", "99", "100", "101", "123", "1000"]:
        for fp in ["", "0", "00", "5", "05", "25", "50", "1", "9", "99", "001", "999", "5000"]:
            for sign in ["", "-"]:
                s = sign + ip + ("." + fp if fp else "")
                out.add(s)
                for e in ["e0", "e1", "e-1", "E+2", "e-05", "e-3", "e+02", "e2", "e-2", "E-0"]:
                    out.add(s + e)
    out.update(["1e-05", "5e-05", "1.5e+20", "-2.5e-07", "0.0001", "1e+16", "9.99e-1"])
    return sorted(out)


CANDIDATES = _candidates()
_NORMSCI = re.compile(r"-?([1-9](\.\d+)?|0(\.0+)?)[eE][+-]?\d+")

DEC_CASES = [
    (0.5, 100, False, False), (0.5, 100, True, True), (0, None, False, False), (0, None, True, False),
    (None, 0, False, True), (-2.5, 1.25, False, True), (None, None, False, False), (0.01, 0.99, False, False),
    (1, 10, False, False), (-100, -0.5, True, False), (0, 1, False, False), (12, 12, False, False),
    (1e-5, 1e-3, False, False), (-1e-4, 1e20, True, False), (0.1, None, False, False),
]


@pytest.mark.parametrize("lo,hi,lx,hx", DEC_CASES)
@pytest.mark.parametrize("mult", [None, 0.5, 0.01, 3])
def test_decimal_ranges(lo, hi, lx, hx, mult):
    flo = to_fraction(lo) if lo is not None else None
    fhi = to_fraction(hi) if hi is not None else None
    try:
        acc = Acceptor(number_grammar(lo, hi, lo_exclusive=lx, hi_exclusive=hx, multiple_of=mult))
    except xmask.GrammarError:  # empty language
        def acc(s):
            return False
    side_only = (flo is None or flo == 0) and (fhi is None or fhi == 0)
    for s in CANDIDATES:
        v = Fraction(Decimal(s))
        inside = ((flo is None or (v > flo if lx else v >= flo)) and (fhi is None or (v < fhi if hx else v <= fhi))
                  and (mult is None or (v / to_fraction(mult)).denominator == 1))
        got = acc(s)
        if got:
            assert inside, f"out-of-range value accepted: {s} for {lo, hi, lx, hx, mult}"
        elif inside:
            # the documented restriction: some exponent spellings are not accepted
            has_exp = "e" in s.lower()
            assert has_exp and (mult is not None or (not side_only and not _NORMSCI.fullmatch(s))), \
                f"in-range value rejected: {s} for {lo, hi, lx, hx, mult}"


def test_json_dumps_floats_in_range():
    # json.dumps writes small floats with exponents; they must be accepted in range
    acc = Acceptor(number_grammar(0, 1))
    for x in [1e-05, 2.5e-07, 0.5, 0.0, 1.0, 1e-10]:
        assert acc(repr(x)), repr(x)
    assert not acc(repr(1.5)) and not acc("1e+20") and not acc("-1e-05")


def test_float_bounds_use_shortest_repr():
    assert to_fraction(0.1) == Fraction(1, 10)
    acc = Acceptor(number_grammar(0.1, 0.3))
    assert acc("0.1") and acc("0.3") and acc("0.2") and not acc("0.30000000000000004")


def test_multiple_of_limit():
    with pytest.raises(GrammarLimitError):
        number_grammar(0, 10, multiple_of=123457)


def test_dfa_cycles_become_rules():
    # multiples of 3 in binary-ish digits: remainder automaton has cycles
    g = integer_grammar(0, None, multiple_of=3)
    assert len(g.rules) > 1
    r = Recognizer(g)
    assert [v for v in range(0, 40) if r.accepts(str(v).encode())] == list(range(0, 40, 3))


@pytest.mark.parametrize("lo,hi", list(itertools.product([None, -3, 0, 2], [None, -1, 0, 5])))
def test_recognizer_agrees_small(lo, hi):
    g = integer_grammar(lo, hi)
    r = Recognizer(g)
    for v in range(-15, 16):
        assert r.accepts(str(v).encode()) == ((lo is None or v >= lo) and (hi is None or v <= hi))
