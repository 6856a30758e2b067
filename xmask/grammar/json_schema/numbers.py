"""Numbers: numeric ranges -> grammar IR, and the numbers of a merged schema (:func:`gen_number`).

JSON number text (RFC 8259)::

    number  = "-"? int frac? exp?      int = "0" | [1-9][0-9]*
    frac    = "." [0-9]+               exp = [eE] [+-]? [0-9]+

The functions here build the IR of exactly the JSON number texts whose *value* satisfies a
constraint (bounds, ``multipleOf``).  They are built as deterministic automata from a small
step function (a value comparator that reads the text left to right), minimized, and
emitted as IR.  This keeps every construction obviously exact:

* :func:`integer_expr` -- integer syntax ``-?(0|[1-9][0-9]*)`` (``-0`` is the value 0)
  with value in ``[lo, hi]`` (either side may be open) and optionally a multiple of ``k``
  (a DFA of remainders mod ``k`` over the digits).
* :func:`number_expr` -- full number syntax with value in a (possibly exclusive) decimal
  interval, optionally ``multipleOf`` a decimal.  Exponent forms:

  - a side-only bound at zero (e.g. ``minimum: 0`` or ``exclusiveMaximum: 0``), or no bound:
    every spelling is accepted, exponents included;
  - other bounds: plain forms (``12``, ``-0.5``, ``3.250``) exactly, plus *normalized
    scientific* forms ``d(.ddd)?e[+-]?N`` with one nonzero leading digit (what Python's
    ``json.dumps``/``repr`` writes, e.g. ``1e-05``, ``1.5e+20``) and zero forms
    ``0(.0*)?eN``, exactly.  Non-normalized exponent forms such as ``0.5e1`` or ``15e-1``
    are rejected (documented restriction: a sound subset; never an out-of-range value);
  - with ``multipleOf``: exponent forms are rejected (plain forms are exact).

The automata are :class:`~..code_point_dfa.Dfa` objects, emitted by :func:`~..dfa_expr.dfa_to_expr`.

Example::

    >>> from xmask.grammar.recognizer import Recognizer
    >>> g = integer_grammar(-5, 123)
    >>> r = Recognizer(g)
    >>> [r.accepts(s) for s in (b"-5", b"-6", b"0", b"123", b"124", b"007")]
    [True, False, True, True, False, False]
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Dict, Optional, Sequence, Tuple, Union

from ...errors import GrammarLimitError
from ..code_point_dfa import Dfa, dfa_explore, dfa_minimize
from ..dfa_expr import dfa_to_expr
from ..ir import Bytes, CharClass, Expr, Grammar, Repeat, make_choice, make_seq
from ..rule_sink import RuleSink
from .context import Context
from .merged import Merged
from .vocabulary import FRAC, INT, NUMERIC_FORMATS

__all__ = [
    "MAX_NUMBER_DIGITS",
    "MAX_MULTIPLE_OF_STATES",
    "integer_expr",
    "integer_grammar",
    "number_expr",
    "number_grammar",
    "to_fraction",
    "gen_number",
]

#: Cap on the digits of a numeric bound (e.g. 1e400 has 401 digits).
MAX_NUMBER_DIGITS = 400
#: Cap on the modulus of a ``multipleOf`` remainder automaton.
MAX_MULTIPLE_OF_STATES = 10_000

Number = Union[int, float, Decimal, Fraction, str]


# ============================================================================ numbers

def to_fraction(x: Number) -> Fraction:
    """Exact value of a schema number: floats use their shortest repr (``0.1`` is 1/10)."""
    if isinstance(x, bool):
        raise TypeError("a boolean is not a number")
    if isinstance(x, int):
        return Fraction(x)
    if isinstance(x, Fraction):
        return x
    if isinstance(x, float):
        if x != x or x in (float("inf"), float("-inf")):
            raise ValueError(f"not a finite number: {x!r}")
        return Fraction(Decimal(repr(x)))
    if isinstance(x, Decimal):
        if not x.is_finite():
            raise ValueError(f"not a finite number: {x!r}")
        return Fraction(x)
    if isinstance(x, str):
        try:
            d = Decimal(x)
        except InvalidOperation:
            raise ValueError(f"not a number: {x!r}") from None
        return to_fraction(d)
    raise TypeError(f"not a number: {x!r}")


def _decimal_digits(x: Fraction) -> Tuple[str, str]:
    """``x >= 0`` with a finite decimal expansion -> (integer digits, fraction digits without
    trailing zeros).  Raises ValueError when the expansion is infinite (e.g. 1/3)."""
    if x < 0:
        raise ValueError("negative")
    num, den = x.numerator, x.denominator
    k = 0
    d = den
    for p in (2, 5):
        while d % p == 0:
            d //= p
    if d != 1:
        raise ValueError(f"{x} has no finite decimal expansion")
    while den != 1 and (10 ** k) % den != 0:
        k += 1
    scaled = num * (10 ** k // den)
    s = str(scaled).rjust(k + 1, "0")
    ip, fp = (s[:-k], s[-k:]) if k else (s, "")
    fp = fp.rstrip("0")
    if len(ip) + len(fp) > MAX_NUMBER_DIGITS:
        raise GrammarLimitError(f"numeric bound {x} has more than {MAX_NUMBER_DIGITS} digits")
    return ip, fp


_DIGIT_ALPHABET = [(c, c) for c in b"0123456789.-+eE"]


class _Cmp:
    """Online comparison of an unsigned decimal text with a fixed bound ``b`` (>= 0).

    State: (phase, n, lex) -- phase 0: integer part, ``n`` digits read (capped at
    ``len(bi) + 1``), ``lex`` the lexicographic comparison with ``bi[:n]``; phase 1: fraction,
    ``n`` fraction digits read (capped at ``len(bf)``), ``lex`` the running comparison with
    the bound's fraction padded with zeros (once nonzero it is final).
    """

    __slots__ = ("bi", "bf")

    def __init__(self, b: Fraction):
        self.bi, self.bf = _decimal_digits(b)

    def start(self):
        return (0, 0, 0)

    def int_digit(self, st, d: str):
        _, n, lex = st
        bi = self.bi
        if n < len(bi) and lex == 0:
            lex = (d > bi[n]) - (d < bi[n])
        return (0, min(n + 1, len(bi) + 1), lex)

    def end_int(self, st):
        """Comparison of the integer part with the bound's integer part."""
        _, n, lex = st
        if n < len(self.bi):
            return -1
        if n > len(self.bi):
            return 1
        return lex

    def to_frac(self, st):
        c = self.end_int(st)
        return (1, 0, c)

    def frac_digit(self, st, d: str):
        _, n, lex = st
        if lex != 0:
            return st
        bf = self.bf
        bd = bf[n] if n < len(bf) else "0"
        lex = (d > bd) - (d < bd)
        return (1, min(n + 1, len(bf)), lex)

    def final(self, st) -> int:
        phase, n, lex = st
        if phase == 0:
            c = self.end_int(st)
            if c != 0:
                return c
            return -1 if self.bf else 0
        if lex != 0:
            return lex
        return -1 if n < len(self.bf) else 0


def _check_cmp(c: int, bound_kind: str, exclusive: bool) -> bool:
    if bound_kind == "lo":
        return c > 0 or (c == 0 and not exclusive)
    return c < 0 or (c == 0 and not exclusive)


def _bound_digits(cmps, states) -> set:
    """The digits (0-9) at which the comparators ``cmps`` (in ``states``; None = not started)
    may change their answer on the next digit: each one's bound digit at its position (0 past
    the fraction's end), plus 0 (leading zeros, nonzero fraction flags)."""
    pts = {0}
    for c, st in zip(cmps, states):
        if c is None:
            continue
        phase, n, lex = c.start() if st is None else st
        if lex != 0:
            continue
        if phase == 0:
            if n < len(c.bi):
                pts.add(ord(c.bi[n]) - 48)
        else:
            pts.add(ord(c.bf[n]) - 48 if n < len(c.bf) else 0)
    return pts


def _digit_dfa(start, step, accepting, critical, extra: bytes) -> Dfa:
    """``dfa_from_step`` over the digits and the ``extra`` symbols (below '0'), with ``step``
    called once per run of digits strictly between two of ``critical(state)``'s digits (and
    once for each of those): a comparator's answer changes only at its bound's digit, so the
    run shares one successor.  Three to five calls per state instead of ten: the exploration
    was most of a cold bound's cost (~20 us per state)."""
    def moves(st):
        for c in extra:
            nxt = step(st, c)
            if nxt is not None:
                yield c, c, nxt
        d = 0
        for p in sorted(critical(st)) + [10]:
            if d < p:
                nxt = step(st, 48 + d)
                if nxt is not None:
                    yield 48 + d, 47 + p, nxt
            if p < 10:
                nxt = step(st, 48 + p)
                if nxt is not None:
                    yield 48 + p, 48 + p, nxt
            d = p + 1

    return dfa_explore(start, moves, accepting)


def _magnitude_plain_dfa(lo: Optional[Fraction], lo_excl: bool, hi: Optional[Fraction],
                         hi_excl: bool, *, int_only: bool, mult: Optional[Fraction],
                         single_digit_int: bool = False, nonint: bool = False,
                         not_mults: Sequence[Fraction] = ()) -> Dfa:
    """Unsigned ``(0|[1-9][0-9]*)(\\.[0-9]+)?`` (``int_only``: no fraction;
    ``single_digit_int``: integer part one digit 1-9) with value in the interval, a multiple
    of ``mult`` (if given), not a multiple of any of ``not_mults``, and (``nonint``) not an
    integer.  Memoized process-wide (a pure function; the same bounds recur across schemas)."""
    key = (lo, lo_excl, hi, hi_excl, int_only, mult, single_digit_int, nonint, tuple(not_mults))
    d = _MAGNITUDE_DFAS.get(key)
    if d is None:
        if len(_MAGNITUDE_DFAS) >= 1024:
            _MAGNITUDE_DFAS.clear()
        d = _MAGNITUDE_DFAS[key] = _magnitude_plain_dfa_uncached(
            lo, lo_excl, hi, hi_excl, int_only=int_only, mult=mult,
            single_digit_int=single_digit_int, nonint=nonint, not_mults=not_mults)
    return d


_MAGNITUDE_DFAS: Dict[tuple, Dfa] = {}


def _magnitude_plain_dfa_uncached(lo: Optional[Fraction], lo_excl: bool, hi: Optional[Fraction],
                                  hi_excl: bool, *, int_only: bool, mult: Optional[Fraction],
                                  single_digit_int: bool = False, nonint: bool = False,
                                  not_mults: Sequence[Fraction] = ()) -> Dfa:
    clo = _Cmp(lo) if lo is not None else None
    chi = _Cmp(hi) if hi is not None else None
    mods = ([(mult, True)] if mult is not None else []) + [(f, False) for f in not_mults]
    # a value is a multiple of p/q  <=>  value * 10^k is a multiple of p * 10^k / q, for any k
    # with q | 10^k; one common k for all constraints
    k = 0
    for f, _ in mods:
        while (10 ** k) % f.denominator != 0:
            k += 1
            if k > 30:
                raise GrammarLimitError(f"multipleOf {f} has no finite decimal expansion")
    moduli = tuple(f.numerator * (10 ** k // f.denominator) for f, _ in mods)
    wants = tuple(w for _, w in mods)
    size = 1
    for mo in moduli:
        size *= mo
    if size > MAX_MULTIPLE_OF_STATES:
        raise GrammarLimitError(f"multipleOf needs {size} remainder states (limit {MAX_MULTIPLE_OF_STATES})")
    any_want = any(wants)
    zeros = tuple(0 for _ in moduli)

    # state: (phase, cmp_lo, cmp_hi, rems, fpos, extra, nz)
    #   phase 0 start, 1 after a leading '0', 2 in integer digits, 3 after '.', 4 in fraction
    #   rems: integer part mod each modulus in phases 1-2, (value*10^k so far) mod in 3-4
    #   fpos: fraction digits read (capped at k); extra: a nonzero digit beyond the k-th
    #   fraction digit (the value*10^k is then not an integer); nz: a nonzero fraction digit
    def step(st, cp):
        ch = chr(cp)
        phase, cl, chh, rems, fpos, extra, nz = st
        if "0" <= ch <= "9":
            d = cp - 48
            if phase == 0:
                if single_digit_int and d == 0:
                    return None
                return (1 if d == 0 else 2,
                        clo.int_digit(clo.start(), ch) if clo else None,
                        chi.int_digit(chi.start(), ch) if chi else None,
                        tuple(d % mo for mo in moduli), 0, False, False)
            if phase == 1 or (phase == 2 and single_digit_int):
                return None
            if phase == 2:
                return (2, clo.int_digit(cl, ch) if clo else None,
                        chi.int_digit(chh, ch) if chi else None,
                        tuple((r * 10 + d) % mo for r, mo in zip(rems, moduli)), 0, False, False)
            if phase in (3, 4):
                if moduli:
                    if fpos < k:
                        rems = tuple((r + d * 10 ** (k - 1 - fpos)) % mo for r, mo in zip(rems, moduli))
                        fpos += 1
                    elif d != 0:
                        if any_want:
                            return None
                        extra = True
                return (4, clo.frac_digit(cl, ch) if clo else None,
                        chi.frac_digit(chh, ch) if chi else None, rems, fpos, extra,
                        (nz or d != 0) if nonint else False)
            return None
        if ch == "." and phase in (1, 2) and not int_only:
            return (3, clo.to_frac(cl) if clo else None, chi.to_frac(chh) if chi else None,
                    tuple((r * 10 ** k) % mo for r, mo in zip(rems, moduli)), 0, False, False)
        return None

    def accepting(st):
        phase, cl, chh, rems, fpos, extra, nz = st
        if phase not in (1, 2, 4) or (nonint and not nz):
            return False
        if phase != 4:
            rems = tuple((r * 10 ** k) % mo for r, mo in zip(rems, moduli))
        for r, want in zip(rems, wants):
            if want and r != 0:
                return False
            if not want and r == 0 and not extra:
                return False
        if clo is not None and not _check_cmp(clo.final(cl), "lo", lo_excl):
            return False
        if chi is not None and not _check_cmp(chi.final(chh), "hi", hi_excl):
            return False
        return True

    start = (0, None, None, zeros, 0, False, False)
    extra = b"" if int_only else b"."
    if moduli:  # a digit's remainder is its own: every digit may lead elsewhere
        return dfa_minimize(_digit_dfa(start, step, accepting, lambda st: range(10), extra))
    cmps = (clo, chi)
    return dfa_minimize(_digit_dfa(start, step, accepting, lambda st: _bound_digits(cmps, st[1:3]), extra))


_DIGIT = CharClass(((0x30, 0x39),))
_NONZERO = CharClass(((0x31, 0x39),))
_DIGITS = Repeat(_DIGIT, 1, None)
_UINT = make_choice([Bytes(b"0"), make_seq([_NONZERO, Repeat(_DIGIT, 0, None)])])
_FRAC = make_seq([Bytes(b"."), _DIGITS])
_EXP = make_seq([CharClass(((0x45, 0x45), (0x65, 0x65))), Repeat(CharClass(((0x2B, 0x2B), (0x2D, 0x2D))), 0, 1), _DIGITS])
_EXP_MARK = CharClass(((0x45, 0x45), (0x65, 0x65)))


def _exp_int_dfa(lo: Optional[int], hi: Optional[int]) -> Dfa:
    """Exponent text ``[+-]?[0-9]+`` (leading zeros allowed) with value in ``[lo, hi]``."""
    clo = _Cmp(Fraction(abs(lo))) if lo is not None else None
    chi = _Cmp(Fraction(abs(hi))) if hi is not None else None

    # state: (phase, neg, cl, ch, nonzero) ; phase 0 start, 1 after sign, 2 digits
    def step(st, cp):
        ch = chr(cp)
        phase, neg, cl, chh, nz = st
        if ch in "+-" and phase == 0:
            return (1, ch == "-", cl, chh, nz)
        if ch.isdigit():
            if not nz and ch == "0":
                return (2, neg, cl, chh, False)  # leading zeros do not count
            cl2 = clo.int_digit(cl if nz else clo.start(), ch) if clo else None
            ch2 = chi.int_digit(chh if nz else chi.start(), ch) if chi else None
            return (2, neg, cl2, ch2, True)
        return None

    def value_cmp(cmp_obj, cstate, nz, neg, bound) -> int:
        """Sign of (value - bound)."""
        if not nz:
            return (0 > bound) - (0 < bound)
        if neg:
            return -1 if bound >= 0 else -cmp_obj.end_int(cstate)
        return 1 if bound <= 0 else cmp_obj.end_int(cstate)

    def accepting(st):
        phase, neg, cl, chh, nz = st
        if phase != 2:
            return False
        if lo is not None and value_cmp(clo, cl, nz, neg, lo) < 0:
            return False
        if hi is not None and value_cmp(chi, chh, nz, neg, hi) > 0:
            return False
        return True

    start = (0, False, clo.start() if clo else None, chi.start() if chi else None, False)
    cmps = (clo, chi)
    # digits before the first nonzero one do not reach the comparators (their state is then
    # the start, as _bound_digits reads None)
    return dfa_minimize(_digit_dfa(start, step, accepting,
                                   lambda st: _bound_digits(cmps, st[2:4] if st[4] else (None, None)),
                                   b"+-"))


def _ceil_log10(x: Fraction) -> int:
    """Smallest E with 10^E >= x (x > 0)."""
    e = len(str(x.numerator)) - len(str(x.denominator))
    while Fraction(10) ** e < x:
        e += 1
    while Fraction(10) ** (e - 1) >= x:
        e -= 1
    return e


def _floor_log10(x: Fraction) -> int:
    """Largest E with 10^E <= x (x > 0)."""
    e = len(str(x.numerator)) - len(str(x.denominator))
    while Fraction(10) ** e > x:
        e -= 1
    while Fraction(10) ** (e + 1) <= x:
        e += 1
    return e


def _positive_part(lo: Optional[Fraction], lo_excl: bool, hi: Optional[Fraction], hi_excl: bool,
                   *, integer: bool, mult: Optional[Fraction], sink: Optional[RuleSink], hint: str,
                   exponents: bool, nonint: bool = False, not_mults=()) -> Optional[Expr]:
    """Unsigned texts with value in the interval, where ``lo >= 0`` and the value 0 is excluded
    (the caller handles zero spellings).  ``lo = 0`` means (0, ...]."""
    if lo is None or lo < 0:
        lo, lo_excl = Fraction(0), True
    if lo == 0:
        lo_excl = True
    if hi is not None and (hi < lo or (hi == lo and (hi_excl or lo_excl))):
        return None
    if integer:
        ilo = _int_lo(lo, lo_excl)
        ihi = _int_hi(hi, hi_excl) if hi is not None else None
        if ihi is not None and ihi < ilo:
            return None
        d = _magnitude_plain_dfa(Fraction(ilo), False, None if ihi is None else Fraction(ihi), False,
                                 int_only=True, mult=mult, not_mults=not_mults)
        return dfa_to_expr(d, sink, hint)
    if hi is None and lo == 0 and mult is None and exponents and not nonint and not not_mults:
        # every nonzero unsigned number, exponent forms included
        nz = make_seq([_NONZERO, Repeat(_DIGIT, 0, None)])
        zero_int_nonzero_frac = make_seq([Bytes(b"0."), Repeat(Bytes(b"0"), 0, None), _NONZERO, Repeat(_DIGIT, 0, None)])
        nonzero_int = make_seq([nz, Repeat(_FRAC, 0, 1)])
        return make_seq([make_choice([nonzero_int, zero_int_nonzero_frac]), Repeat(_EXP, 0, 1)])
    d = _magnitude_plain_dfa(lo, lo_excl, hi, hi_excl, int_only=False, mult=mult, nonint=nonint,
                             not_mults=not_mults)
    plain = dfa_to_expr(d, sink, hint)
    if not exponents or mult is not None or nonint or not_mults:
        return plain
    # normalized scientific forms  m e E  with m in [1, 10): value in [10^E, 10^(E+1))
    alts = [plain] if plain is not None else []
    # decades fully inside the interval: E1 <= E <= E2 (None = unbounded)
    e1 = None if lo == 0 else (_ceil_log10_strict(lo) if lo_excl else _ceil_log10(lo))
    e2 = None if hi is None else _floor_log10(hi) - 1
    if e1 is None or e2 is None or e1 <= e2:
        mant = make_seq([_NONZERO, Repeat(_FRAC, 0, 1)])
        eexpr = dfa_to_expr(_exp_int_dfa(e1, e2), sink, hint + "_exp")
        if eexpr is not None:
            alts.append(make_seq([mant, _EXP_MARK, eexpr]))
    partial = set()
    if lo != 0:
        partial.add(_floor_log10(lo))
    if hi is not None:
        partial.add(_floor_log10(hi))
    for e in sorted(partial):
        if (e1 is None or e >= e1) and (e2 is None or e <= e2):
            continue  # a full decade, already covered
        scale = Fraction(10) ** e
        mlo, mlo_x = Fraction(1), False
        mhi, mhi_x = Fraction(10), True
        if lo / scale > mlo or (lo / scale == mlo and lo_excl):
            mlo, mlo_x = lo / scale, lo_excl
        if hi is not None and (hi / scale < mhi or (hi / scale == mhi and hi_excl)):
            mhi, mhi_x = hi / scale, hi_excl
        if mhi < mlo or (mhi == mlo and (mlo_x or mhi_x)):
            continue
        md = _magnitude_plain_dfa(mlo, mlo_x, mhi, mhi_x, int_only=False, mult=None,
                                  single_digit_int=True)
        mexpr = dfa_to_expr(md, sink, hint + "_mant")
        if mexpr is None:
            continue
        eexpr = dfa_to_expr(_exp_int_dfa(e, e), sink, hint + "_exp")
        alts.append(make_seq([mexpr, _EXP_MARK, eexpr]))
    return make_choice(alts) if alts else None


def _ceil_log10_strict(x: Fraction) -> int:
    """Smallest E with 10^E > x."""
    e = _ceil_log10(x)
    if Fraction(10) ** e == x:
        e += 1
    return e


def _int_lo(lo: Fraction, excl: bool) -> int:
    n = -((-lo.numerator) // lo.denominator)  # ceil
    if excl and Fraction(n) == lo:
        n += 1
    return n


def _int_hi(hi: Fraction, excl: bool) -> int:
    n = hi.numerator // hi.denominator  # floor
    if excl and Fraction(n) == hi:
        n -= 1
    return n


def number_expr(lo: Optional[Number] = None, hi: Optional[Number] = None, *,
                lo_exclusive: bool = False, hi_exclusive: bool = False,
                multiple_of: Optional[Number] = None, integer: bool = False,
                non_integer: bool = False, not_multiple_of: Sequence[Number] = (),
                sink: Optional[RuleSink] = None, hint: str = "num") -> Optional[Expr]:
    """JSON number texts with value in the interval (and a multiple of ``multiple_of``).

    ``integer=True`` uses integer syntax only (``-?(0|[1-9][0-9]*)``); ``non_integer=True``
    accepts only non-integer values, in plain spelling (``-?int.frac`` with a nonzero
    fraction digit; exponent forms are rejected).  ``not_multiple_of``: values that are not
    multiples of any of these (plain spellings only).  Returns None when no value qualifies.
    See the module docstring for which exponent forms are accepted.
    """
    if integer and non_integer:
        return None
    flo = to_fraction(lo) if lo is not None else None
    fhi = to_fraction(hi) if hi is not None else None
    mult = to_fraction(multiple_of) if multiple_of is not None else None
    if mult is not None and mult <= 0:
        raise ValueError("multipleOf must be > 0")
    if mult is not None and integer and mult.denominator != 1:
        # an integer n is a multiple of p/q (reduced)  <=>  p divides n*q  <=>  p divides n
        mult = Fraction(mult.numerator)
    if mult is not None and mult == 1 and integer:
        mult = None
    not_mults = []
    for x in not_multiple_of:
        f = to_fraction(x)
        if f <= 0:
            raise ValueError("multipleOf must be > 0")
        if integer and f.denominator != 1:
            f = Fraction(f.numerator)
        if integer and f == 1:
            return None  # every integer is a multiple of 1
        not_mults.append(f)
    if flo is not None and fhi is not None:
        if fhi < flo or (fhi == flo and (lo_exclusive or hi_exclusive)):
            return None
    if integer:
        if flo is not None:
            flo, lo_exclusive = Fraction(_int_lo(flo, lo_exclusive)), False
        if fhi is not None:
            fhi, hi_exclusive = Fraction(_int_hi(fhi, hi_exclusive)), False
        if flo is not None and fhi is not None and fhi < flo:
            return None
    exponents = not integer and mult is None and not non_integer and not not_mults
    unbounded = flo is None and fhi is None
    if unbounded and mult is None and not non_integer and not not_mults:
        if integer:
            return make_seq([Repeat(Bytes(b"-"), 0, 1), _UINT])
        return make_seq([Repeat(Bytes(b"-"), 0, 1), _UINT, Repeat(_FRAC, 0, 1), Repeat(_EXP, 0, 1)])
    alts = []
    # zero
    zero_ok = ((flo is None or flo < 0 or (flo == 0 and not lo_exclusive))
               and (fhi is None or fhi > 0 or (fhi == 0 and not hi_exclusive)))
    if zero_ok and not non_integer and not not_mults:
        if integer:
            alts.append(make_seq([Repeat(Bytes(b"-"), 0, 1), Bytes(b"0")]))
        else:
            zfrac = Repeat(make_seq([Bytes(b"."), Repeat(Bytes(b"0"), 1, None)]), 0, 1)
            z = [Repeat(Bytes(b"-"), 0, 1), Bytes(b"0"), zfrac]
            if exponents:
                z.append(Repeat(_EXP, 0, 1))
            alts.append(make_seq(z))
    # positive values
    if fhi is None or fhi > 0:
        pos = _positive_part(flo, lo_exclusive, fhi, hi_exclusive, integer=integer, mult=mult,
                             sink=sink, hint=hint + "_pos", exponents=exponents, nonint=non_integer,
                             not_mults=not_mults)
        if pos is not None:
            alts.append(pos)
    # negative values: magnitude in [-hi, -lo]
    if flo is None or flo < 0:
        nlo = -fhi if fhi is not None else None
        nhi = -flo if flo is not None else None
        neg = _positive_part(nlo, hi_exclusive, nhi, lo_exclusive, integer=integer, mult=mult,
                             sink=sink, hint=hint + "_neg", exponents=exponents, nonint=non_integer,
                             not_mults=not_mults)
        if neg is not None:
            alts.append(make_seq([Bytes(b"-"), neg]))
    if not alts:
        return None
    return make_choice(alts)


def integer_expr(lo: Optional[int] = None, hi: Optional[int] = None, *,
                 multiple_of: Optional[Number] = None, sink: Optional[RuleSink] = None,
                 hint: str = "int") -> Optional[Expr]:
    """JSON integer texts with value in ``[lo, hi]`` (inclusive; None = open side)."""
    return number_expr(lo, hi, multiple_of=multiple_of, integer=True, sink=sink, hint=hint)


def number_grammar(*args, **kwargs) -> Grammar:
    """:func:`number_expr` as a standalone grammar (root ``root``; a never-matching grammar
    when no value qualifies)."""
    sink = RuleSink(prefix="num")
    sink.fresh("root")
    e = number_expr(*args, sink=sink, **kwargs)
    if e is None:
        e = CharClass(())
    rules = {"root": e}
    rules.update(sink.rules)
    return Grammar(rules, root="root")


def integer_grammar(lo: Optional[int] = None, hi: Optional[int] = None, **kwargs) -> Grammar:
    """:func:`integer_expr` as a standalone grammar."""
    return number_grammar(lo, hi, integer=True, **kwargs)


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
