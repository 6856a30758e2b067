"""The numeric-bound automata explore runs of digits at once (``numbers._digit_dfa``): the
minimal automaton must be the one a digit-by-digit exploration gives, for every kind of bound."""

import random
from fractions import Fraction

import pytest

from xmask.grammar.json_schema import numbers


def _every_digit(monkeypatch):
    monkeypatch.setattr(numbers, "_bound_digits", lambda cmps, states: set(range(10)))


def _bound(rng):
    kind = rng.randrange(4)
    if kind == 0:
        return Fraction(rng.randrange(0, 10 ** rng.randrange(1, 12)))
    if kind == 1:
        return Fraction(rng.randrange(1, 10 ** 6), 10 ** rng.randrange(1, 5))
    if kind == 2:
        return Fraction(rng.choice([1, 2, 5, 9, 10, 99, 100, 2147483647, 86400, 65535]))
    return Fraction(rng.randrange(0, 10 ** 4), rng.choice([2, 4, 5, 8, 25, 125]))


def _cases(n=120):
    rng = random.Random(7)
    out = []
    for _ in range(n):
        lo = _bound(rng) if rng.random() < 0.9 else None
        hi = _bound(rng) if rng.random() < 0.7 else None
        if lo is not None and hi is not None and hi < lo:
            lo, hi = hi, lo
        int_only = rng.random() < 0.4
        if int_only:
            lo = None if lo is None else Fraction(lo.numerator // lo.denominator)
            hi = None if hi is None else Fraction(hi.numerator // hi.denominator)
        single = not int_only and rng.random() < 0.2
        if single:
            lo, hi = Fraction(1) + (lo or 0) % 9, Fraction(10)
        out.append(dict(lo=lo, lo_excl=rng.random() < 0.3, hi=hi, hi_excl=rng.random() < 0.3,
                        int_only=int_only, mult=None, single_digit_int=single,
                        nonint=not int_only and not single and rng.random() < 0.2))
    return out


@pytest.mark.parametrize("case", _cases(), ids=lambda c: f"{c['lo']}-{c['hi']}")
def test_magnitude_runs_equal_digit_by_digit(case, monkeypatch):
    kw = dict(case)
    lo, lo_x, hi, hi_x = kw.pop("lo"), kw.pop("lo_excl"), kw.pop("hi"), kw.pop("hi_excl")
    runs = numbers._magnitude_plain_dfa_uncached(lo, lo_x, hi, hi_x, **kw)
    _every_digit(monkeypatch)
    digits = numbers._magnitude_plain_dfa_uncached(lo, lo_x, hi, hi_x, **kw)
    assert (runs.edges, runs.accept) == (digits.edges, digits.accept)


@pytest.mark.parametrize("lo,hi", [(None, -1), (0, 0), (1, None), (4, None), (-7, 12), (3, 3),
                                   (-120, -5), (None, 308), (-308, None), (95, 1204)])
def test_exponent_runs_equal_digit_by_digit(lo, hi, monkeypatch):
    runs = numbers._exp_int_dfa(lo, hi)
    _every_digit(monkeypatch)
    digits = numbers._exp_int_dfa(lo, hi)
    assert (runs.edges, runs.accept) == (digits.edges, digits.accept)


def _step_calls(monkeypatch=None):
    calls = []
    orig = numbers._digit_dfa

    def counting(start, step, accepting, critical, extra):
        def counted(st, cp):
            calls.append(cp)
            return step(st, cp)
        return orig(start, counted, accepting, critical, extra)

    numbers._digit_dfa = counting
    try:
        numbers._magnitude_plain_dfa_uncached(Fraction(1), False, Fraction(2147483647), False,
                                              int_only=True, mult=None)
    finally:
        numbers._digit_dfa = orig
    return len(calls)


def test_runs_skip_most_steps(monkeypatch):
    """The point of the runs: an int32 range takes under half the step calls."""
    runs = _step_calls()
    _every_digit(monkeypatch)
    assert runs * 2 < _step_calls()
