"""JSON string contents: code points <-> JSON-escaped text, and string ``format`` grammars.

A JSON Schema string constraint (``pattern``, ``format``, ``maxLength``, ``enum``) talks
about the *decoded* string value, while a grammar matches the JSON text, where any
character may be written escaped.  This module bridges the two:

* :func:`encode_char_class_as_json` -- one decoded code point from a set, as JSON text:
  the literal UTF-8 character (when JSON allows it unescaped), its short escape (``\\" \\\\
  \\/ \\b \\f \\n \\r \\t``) and its ``\\uXXXX`` escape (hex digits of either case; astral
  code points as a surrogate pair ``\\uD8xx\\uDCxx``).  Exactly one code point per match, so
  repeat counts are code-point lengths.  Lone surrogate escapes are never produced.
* :func:`encode_expr_as_json` -- the same mapping applied to a whole code-point expression
  (a regex or format grammar).
* :func:`json_string_literal` -- the JSON spellings of one fixed string (enum values, object
  keys): printable ASCII is written literally only (as ``json.dumps`` does); other
  characters accept every spelling (literal UTF-8, short escape, ``\\uXXXX``).
* :data:`JSON_CHAR` -- any one code point (exact: the surrogate-pair form counts as one).
* :func:`format_expr` -- code-point grammars of string formats.

Formats (code-point expressions, before JSON encoding); all are *sound* -- never looser than
the RFC -- and the documented simplifications only reject rare valid values:

==================  =====================================================================
date                RFC 3339 full-date; month lengths and leap years exact
time                RFC 3339 full-time: ``HH:MM:SS(.frac)?(Z|+HH:MM|-HH:MM)``; ``T``/``Z``
                    either case; the leap second ``23:59:60`` only with ``Z``/``+00:00``/
                    ``-00:00`` (other offsets would shift the UTC minute)
date-time           full-date ``T`` full-time
duration            RFC 3339 appendix A (ISO 8601) ``P...`` grammar, exact ABNF
email               RFC 5321 ``Mailbox``: dot-atom or quoted-string local part ``@`` a
                    domain of at least two labels or an ``[IPv4]`` address literal
                    (IPv6 and general address literals and single-label domains rejected:
                    an IPv6 literal would make ``format`` + ``maxLength`` automata too large)
idn-email           ``email`` with the RFC 6531 local part (non-ASCII characters allowed);
                    the domain stays ASCII (U-labels rejected)
hostname            RFC 1123 labels ``[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?`` that are not
                    reserved LDH labels (``--`` in positions 3-4, so ``xn--`` A-labels are
                    rejected: their validity needs Punycode and IDNA rules); total length
                    <= 253 guaranteed by a stricter shape: up to 3 labels, 4 labels with the
                    first <= 61 chars, or 5-8 labels of <= 30 chars
idn-hostname        the ASCII ``hostname`` grammar (U-labels and A-labels rejected)
ipv4                dotted quad, 0-255, no leading zeros
ipv6                RFC 4291 / RFC 3986 text forms (``::`` compression, embedded IPv4);
                    no zone id
uri                 RFC 3986 ``URI`` (absolute, optional query and fragment), exact ABNF
uri-reference       RFC 3986 ``URI-reference``, exact ABNF
iri                 RFC 3987 ``IRI``, exact ABNF
iri-reference       RFC 3987 ``IRI-reference``, exact ABNF
uri-template        RFC 6570 (level 4) ABNF; ``'`` allowed in literals (erratum 6937)
uuid                8-4-4-4-12 hex digits, either case
json-pointer        RFC 6901
relative-json-pointer  draft-handrews relative JSON pointer
==================  =====================================================================

:data:`EXACT_FORMATS` lists the formats whose grammar is exact; only those may be negated
(``not``, ``if``/``else``, ``oneOf`` exclusion), as the complement of a proper subset would
accept valid strings.  Disjointness proofs use :func:`format_superset_expr`.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .ir import (EPSILON, MAX_CODE_POINT, Bytes, CharClass, Choice, Expr, Repeat, RuleRef, Seq, make_choice,
                 make_seq, merge_ranges)

__all__ = [
    "JSON_CHAR",
    "JSON_CHAR_ASCII",
    "JSON_CHAR_TAIL",
    "EXACT_FORMATS",
    "JSON_CHAR_PERMISSIVE",
    "KNOWN_FORMATS",
    "ESCAPABLE",
    "encode_char_class_as_json",
    "encode_ranges_canonical",
    "escapes_expr",
    "encode_expr_as_json",
    "format_expr",
    "format_superset_expr",
    "json_string_literal",
]

_HEX = CharClass(((0x30, 0x39), (0x41, 0x46), (0x61, 0x66)))
_SHORT = {0x22: b'"', 0x5C: b"\\", 0x2F: b"/", 0x08: b"b", 0x0C: b"f", 0x0A: b"n", 0x0D: b"r", 0x09: b"t"}
_SCALARS = ((0, 0xD7FF), (0xE000, MAX_CODE_POINT))


def _hex_digit_class(lo: int, hi: int) -> Expr:
    ranges = []
    if lo <= 9:
        ranges.append((0x30 + lo, 0x30 + min(hi, 9)))
    if hi >= 10:
        a, b = max(lo, 10) - 10, hi - 10
        ranges.append((0x41 + a, 0x41 + b))
        ranges.append((0x61 + a, 0x61 + b))
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return Bytes(bytes([ranges[0][0]]))
    return CharClass(tuple(ranges))


def _hex_range(lo: int, hi: int, width: int) -> Expr:
    """Exactly ``width`` hex digits (either case) spelling a value in ``[lo, hi]``."""
    if width == 0:
        return EPSILON
    unit = 16 ** (width - 1)
    if lo == 0 and hi == 16 ** width - 1:
        return Repeat(_HEX, width, width) if width > 1 else _HEX
    dlo, dhi = lo // unit, hi // unit
    if dlo == dhi:
        return make_seq([_hex_digit_class(dlo, dlo), _hex_range(lo % unit, hi % unit, width - 1)])
    alts = []
    first, last = dlo, dhi
    if lo % unit != 0:
        alts.append(make_seq([_hex_digit_class(dlo, dlo), _hex_range(lo % unit, unit - 1, width - 1)]))
        first = dlo + 1
    tail = None
    if hi % unit != unit - 1:
        tail = make_seq([_hex_digit_class(dhi, dhi), _hex_range(0, hi % unit, width - 1)])
        last = dhi - 1
    if first <= last:
        rest = Repeat(_HEX, width - 1, width - 1) if width > 2 else (_HEX if width == 2 else EPSILON)
        alts.append(make_seq([_hex_digit_class(first, last), rest]))
    if tail is not None:
        alts.append(tail)
    return make_choice(alts)


def _intersect(ranges, lo: int, hi: int) -> List[Tuple[int, int]]:
    out = []
    for a, b in ranges:
        a2, b2 = max(a, lo), min(b, hi)
        if a2 <= b2:
            out.append((a2, b2))
    return out


def _u_escapes(ranges) -> List[Expr]:
    """``uXXXX`` / ``uXXXX\\uXXXX`` alternatives (after the backslash) for the code points."""
    alts: List[Expr] = []
    for lo, hi in _intersect(ranges, 0, 0xFFFF):
        # surrogates are already excluded from the ranges
        alts.append(make_seq([Bytes(b"u"), _hex_range(lo, hi, 4)]))
    pairs: List[Tuple[Tuple[int, int], Tuple[int, int]]] = []
    for lo, hi in _intersect(ranges, 0x10000, MAX_CODE_POINT):
        hlo, llo = 0xD800 + ((lo - 0x10000) >> 10), 0xDC00 + ((lo - 0x10000) & 0x3FF)
        hhi, lhi = 0xD800 + ((hi - 0x10000) >> 10), 0xDC00 + ((hi - 0x10000) & 0x3FF)
        if hlo == hhi:
            pairs.append(((hlo, hlo), (llo, lhi)))
            continue
        start, end = hlo, hhi
        if llo != 0xDC00:
            pairs.append(((hlo, hlo), (llo, 0xDFFF)))
            start = hlo + 1
        tail = None
        if lhi != 0xDFFF:
            tail = ((hhi, hhi), (0xDC00, lhi))
            end = hhi - 1
        if start <= end:
            pairs.append(((start, end), (0xDC00, 0xDFFF)))
        if tail:
            pairs.append(tail)
    for (h1, h2), (l1, l2) in pairs:
        alts.append(make_seq([Bytes(b"u"), _hex_range(h1, h2, 4), Bytes(b"\\u"), _hex_range(l1, l2, 4)]))
    return alts


_MISSING = object()
_MEMO_SIZE = 4096
_CANONICAL_MEMO: dict = {}
_PLAIN_MEMO: dict = {}


def _encode_ranges(ranges) -> Optional[Expr]:
    """JSON text of one code point from ``ranges`` (sorted, merged, no surrogates).

    Memoized like :func:`encode_ranges_canonical`: patterns, formats and literals spell the
    same characters and classes again and again (each ``\\uXXXX`` alternative is a tree)."""
    key = tuple(ranges)
    hit = _PLAIN_MEMO.get(key, _MISSING)
    if hit is _MISSING:
        hit = _encode_ranges_uncached(key)
        if len(_PLAIN_MEMO) >= _MEMO_SIZE:
            _PLAIN_MEMO.clear()
        _PLAIN_MEMO[key] = hit
    return hit


def _encode_ranges_uncached(ranges) -> Optional[Expr]:
    ranges = [r for r in _intersect(ranges, 0, MAX_CODE_POINT)]
    alts: List[Expr] = []
    literal = []
    for lo, hi in _intersect(ranges, 0x20, MAX_CODE_POINT):
        for a, b in ((lo, hi),):
            # remove '"' and '\\'
            parts = [(a, b)]
            for bad in (0x22, 0x5C):
                nxt = []
                for x, y in parts:
                    if x <= bad <= y:
                        if x < bad:
                            nxt.append((x, bad - 1))
                        if bad < y:
                            nxt.append((bad + 1, y))
                    else:
                        nxt.append((x, y))
                parts = nxt
            literal.extend(parts)
    if literal:
        if len(literal) == 1 and literal[0][0] == literal[0][1] and literal[0][0] < 0x80:
            alts.append(Bytes(bytes([literal[0][0]])))
        else:
            alts.append(CharClass(tuple(literal)))
    esc: List[Expr] = []
    short = sorted(ch for cp, ch in _SHORT.items() if _in(cp, ranges))
    if short:
        if len(short) == 1:
            esc.append(Bytes(short[0]))
        else:
            esc.append(CharClass(tuple((c[0], c[0]) for c in short)))
    esc.extend(_u_escapes(ranges))
    if esc:
        alts.append(make_seq([Bytes(b"\\"), make_choice(esc)]))
    if not alts:
        return None
    return make_choice(alts)


def _in(cp: int, ranges) -> bool:
    return any(lo <= cp <= hi for lo, hi in ranges)


#: Code points a canonical (``json.dumps``-style) spelling may escape: everything except
#: printable ASCII other than '"' and '\\'.
ESCAPABLE = ((0, 0x1F), (0x22, 0x22), (0x5C, 0x5C), (0x7F, 0xD7FF), (0xE000, MAX_CODE_POINT))


def escapes_expr(ranges) -> Optional[Expr]:
    """``\\`` followed by a short or ``\\uXXXX`` escape of a code point in ``ranges``."""
    short = sorted(ch for cp, ch in _SHORT.items() if _in(cp, ranges))
    esc: List[Expr] = []
    if short:
        esc.append(Bytes(short[0]) if len(short) == 1 else CharClass(tuple((c[0], c[0]) for c in short)))
    esc.extend(_u_escapes(ranges))
    return make_seq([Bytes(b"\\"), make_choice(esc)]) if esc else None


def encode_ranges_canonical(ranges, escape_all: Optional[Expr] = None) -> Optional[Expr]:
    """JSON text of one code point from ``ranges`` where printable ASCII (other than '"' and
    '\\') is written only literally, as ``json.dumps`` does; other code points in any
    spelling.  ``escape_all`` stands for :func:`escapes_expr` of all of :data:`ESCAPABLE`
    (e.g. a shared rule reference) and is used when ``ranges`` cover that whole set.

    Results are memoized (the expressions are immutable values): every object's key
    automaton asks for the same few classes, and all of ESCAPABLE costs ~0.3 ms to spell."""
    ranges = merge_ranges(ranges)
    key = (ranges, escape_all)
    hit = _CANONICAL_MEMO.get(key, _MISSING)
    if hit is _MISSING:
        hit = _encode_ranges_canonical(ranges, escape_all)
        if len(_CANONICAL_MEMO) >= _MEMO_SIZE:
            _CANONICAL_MEMO.clear()  # bounded; a rare refill is cheap
        _CANONICAL_MEMO[key] = hit
    return hit




def _encode_ranges_canonical(ranges, escape_all: Optional[Expr]) -> Optional[Expr]:
    alts: List[Expr] = []
    literal = _remove_points(_intersect(ranges, 0x20, MAX_CODE_POINT), (0x22, 0x5C))
    if literal:
        if len(literal) == 1 and literal[0][0] == literal[0][1] and literal[0][0] < 0x80:
            alts.append(Bytes(bytes([literal[0][0]])))
        else:
            alts.append(CharClass(tuple(literal)))
    special = []
    for lo, hi in ESCAPABLE:
        special.extend(_intersect(ranges, lo, hi))
    if special:
        if escape_all is not None and merge_ranges(special) == merge_ranges(ESCAPABLE):
            alts.append(escape_all)
        else:
            e = escapes_expr(special)
            if e is not None:
                alts.append(e)
    return make_choice(alts) if alts else None


def _remove_points(ranges, points) -> List[Tuple[int, int]]:
    parts = list(ranges)
    for bad in points:
        nxt = []
        for x, y in parts:
            if x <= bad <= y:
                if x < bad:
                    nxt.append((x, bad - 1))
                if bad < y:
                    nxt.append((bad + 1, y))
            else:
                nxt.append((x, y))
        parts = nxt
    return parts


def encode_char_class_as_json(cls: CharClass) -> Optional[Expr]:
    """The JSON text of one decoded code point in ``cls`` (None if the class is empty).

    Example::

        >>> from xmask.grammar.printer import expr_to_ebnf
        >>> print(expr_to_ebnf(encode_char_class_as_json(CharClass(((0x22, 0x22),)))))
        "\\\\" ("\\"" | "u0022")
    """
    if cls.byte_level:
        raise ValueError("a byte-level class has no code point meaning")
    return _encode_ranges(cls.positive_ranges())


#: Any one code point as JSON string text (surrogate pairs count as one; no lone surrogates).
JSON_CHAR: Expr = _encode_ranges(_SCALARS)

#: The JSON string characters written as one ASCII byte (printable, no '"' or '\\').
JSON_CHAR_ASCII: Expr = CharClass(((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7F)))

#: The other spellings of one code point (:data:`JSON_CHAR` minus :data:`JSON_CHAR_ASCII`): a
#: multi-byte UTF-8 character or an escape.  A bounded string keeps it as one shared, called
#: rule (see :mod:`.json_schema.strings`): each character position is then one state that
#: reads ASCII itself and calls this rule for the rest, instead of ~20 states per position.
JSON_CHAR_TAIL: Expr = make_choice([CharClass(((0x80, 0xD7FF), (0xE000, MAX_CODE_POINT))),
                                    escapes_expr(_SCALARS)])

#: Any JSON string character as RFC 8259 defines it (``\\uXXXX`` of any value, lone surrogate
#: halves included); used where no length or pattern is counted.
JSON_CHAR_PERMISSIVE: Expr = make_choice([
    CharClass(((0x22, 0x22), (0x5C, 0x5C), (0, 0x1F)), negated=True),
    make_seq([Bytes(b"\\"), make_choice([CharClass(tuple((c[0], c[0]) for c in _SHORT.values())),
                                         make_seq([Bytes(b"u"), Repeat(_HEX, 4, 4)])])]),
])


def json_string_literal(s: str) -> Expr:
    """The JSON text (without quotes) of the fixed string ``s``; printable ASCII literally,
    other characters in any spelling."""
    if s and s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return Bytes(s.encode("ascii"))  # the usual key or enum value: one literal
    parts: List[Expr] = []
    buf = bytearray()
    for ch in s:
        cp = ord(ch)
        if 0x20 <= cp < 0x7F and cp not in (0x22, 0x5C):
            buf.append(cp)
            continue
        if buf:
            parts.append(Bytes(bytes(buf)))
            buf = bytearray()
        if 0xD800 <= cp <= 0xDFFF:
            # a lone surrogate in the value: only its \\u escape spells it
            parts.append(make_seq([Bytes(b"\\u"), _hex_range(cp, cp, 4)]))
            continue
        parts.append(_encode_ranges(((cp, cp),)))
    if buf:
        parts.append(Bytes(bytes(buf)))
    return make_seq(parts)


def encode_expr_as_json(expr: Expr, memo: Optional[Dict[Expr, Expr]] = None) -> Optional[Expr]:
    """Map a code-point expression (no rule references) to the JSON text of its strings.

    Returns None when the expression matches nothing.
    """
    if memo is None:
        memo = {}
    hit = memo.get(expr)
    if hit is not None or expr in memo:
        return hit
    if isinstance(expr, Bytes):
        out = make_seq([_encode_ranges(((ord(c), ord(c)),)) for c in expr.data.decode("utf-8")])
    elif isinstance(expr, CharClass):
        out = encode_char_class_as_json(expr)
    elif isinstance(expr, Seq):
        items = [encode_expr_as_json(e, memo) for e in expr.items]
        out = None if any(i is None for i in items) else make_seq(items)
    elif isinstance(expr, Choice):
        items = [i for i in (encode_expr_as_json(e, memo) for e in expr.items) if i is not None]
        out = make_choice(items) if items else None
    elif isinstance(expr, Repeat):
        item = encode_expr_as_json(expr.item, memo)
        if item is None:
            out = EPSILON if expr.min == 0 else None
        else:
            out = Repeat(item, expr.min, expr.max)
    elif isinstance(expr, RuleRef):
        raise ValueError("rule references cannot be JSON-encoded")
    else:
        raise TypeError(f"unknown grammar node {expr!r}")
    memo[expr] = out
    return out


# ============================================================================ formats

def _c(*ranges) -> CharClass:
    rs = []
    for r in ranges:
        if isinstance(r, str):
            if len(r) == 1:
                rs.append((ord(r), ord(r)))
            else:
                rs.append((ord(r[0]), ord(r[-1])))
        else:
            rs.append(r)
    return CharClass(tuple(rs))


def _lit(s: str) -> Expr:
    return Bytes(s.encode("utf-8"))


def _rep(e: Expr, lo: int, hi: Optional[int]) -> Expr:
    return Repeat(e, lo, hi)


def _opt(e: Expr) -> Expr:
    return Repeat(e, 0, 1)


_D = _c("09")
_ALPHA = _c("AZ", "az")
_HEXD = _c("09", "AF", "af")


def _two(first: Expr, second: Expr) -> Expr:
    return make_seq([first, second])


def _date() -> Expr:
    year = _rep(_D, 4, 4)
    d28 = make_choice([_two(_lit("0"), _c("19")), _two(_lit("1"), _D), _two(_lit("2"), _c("08"))])
    d30 = make_choice([_two(_lit("0"), _c("19")), _two(_c("12"), _D), _lit("30")])
    d31 = make_choice([d30, _lit("31")])
    m31 = make_choice([_two(_lit("0"), _c("1", "3", "5", "7", "8")), _two(_lit("1"), _c("0", "2"))])
    m30 = make_choice([_two(_lit("0"), _c("4", "6", "9")), _lit("11")])
    mult4 = make_choice([_two(_lit("0"), _c("4", "8")), _two(_c("2", "4", "6", "8"), _c("0", "4", "8")),
                         _two(_c("1", "3", "5", "7", "9"), _c("2", "6"))])
    century4 = make_choice([_two(_c("0", "2", "4", "6", "8"), _c("0", "4", "8")),
                            _two(_c("1", "3", "5", "7", "9"), _c("2", "6"))])
    leap_year = make_choice([make_seq([_D, _D, mult4]), make_seq([century4, _lit("00")])])
    normal = make_seq([year, _lit("-"), make_choice([
        make_seq([m31, _lit("-"), d31]),
        make_seq([m30, _lit("-"), d30]),
        make_seq([_lit("02-"), d28]),
    ])])
    return make_choice([normal, make_seq([leap_year, _lit("-02-29")])])


def _time(any_leap: bool = False) -> Expr:
    """RFC 3339 full-time; ``any_leap``: second 60 at any time and offset (a superset)."""
    hour = make_choice([_two(_c("01"), _D), _two(_lit("2"), _c("03"))])
    minute = _two(_c("05"), _D)
    second = make_choice([_two(_c("05"), _D), _lit("60")]) if any_leap else _two(_c("05"), _D)
    frac = _opt(make_seq([_lit("."), _rep(_D, 1, None)]))
    offset = make_choice([_c("Z", "z"), make_seq([_c("+", "-"), hour, _lit(":"), minute])])
    if any_leap:
        return make_seq([hour, _lit(":"), minute, _lit(":"), second, frac, offset])
    # a leap second is 23:59:60 UTC; only the zero offsets are accepted for it (other
    # offsets would need the local time to match the offset: ~1,440 cases)
    leap = make_seq([_lit("23:59:60"), frac, make_choice([_c("Z", "z"), _two(_c("+", "-"), _lit("00:00"))])])
    return make_choice([make_seq([hour, _lit(":"), minute, _lit(":"), second, frac, offset]), leap])


def _duration() -> Expr:
    n = _rep(_D, 1, None)
    sec = _two(n, _lit("S"))
    minute = make_seq([n, _lit("M"), _opt(sec)])
    hour = make_seq([n, _lit("H"), _opt(minute)])
    dtime = _two(_lit("T"), make_choice([hour, minute, sec]))
    day = _two(n, _lit("D"))
    week = _two(n, _lit("W"))
    month = make_seq([n, _lit("M"), _opt(day)])
    year = make_seq([n, _lit("Y"), _opt(month)])
    ddate = make_seq([make_choice([day, month, year]), _opt(dtime)])
    return _two(_lit("P"), make_choice([ddate, dtime, week]))


def _label(max_len: int) -> Expr:
    """An RFC 1123 label of at most ``max_len`` (>= 2) characters."""
    ld = _c("AZ", "az", "09")
    ldh = _c("AZ", "az", "09", "-")
    return make_seq([ld, _opt(make_seq([_rep(ldh, 0, max_len - 2), ld]))])


def _nr_ldh_label(max_len: int) -> Expr:
    """An RFC 1123 label of at most ``max_len`` (>= 5) characters that is not a reserved
    LDH label (RFC 5890: ``--`` in positions 3 and 4, e.g. the ``xn--`` A-labels, whose
    validity depends on Punycode decoding and IDNA rules)."""
    ld = _c("AZ", "az", "09")
    ldh = _c("AZ", "az", "09", "-")
    third_fourth = make_choice([_two(ld, ldh), _two(_lit("-"), ld)])  # not both '-'
    return make_choice([
        ld,
        _two(ld, ld),
        make_seq([ld, ldh, ld]),
        make_seq([ld, ldh, ldh, ld]),
        make_seq([ld, ldh, third_fourth, _rep(ldh, 0, max_len - 5), ld]),
    ])


def _hostname() -> Expr:
    l63, l61, l30 = _nr_ldh_label(63), _nr_ldh_label(61), _nr_ldh_label(30)
    dot = _lit(".")
    # total length <= 253: 63 + 2 * 64 = 191, 61 + 3 * 64 = 253, 30 + 7 * 31 = 247
    up_to_3 = make_seq([l63, _rep(_two(dot, l63), 0, 2)])
    four = make_seq([l61, _rep(_two(dot, l63), 3, 3)])
    long_form = make_seq([l30, _rep(_two(dot, l30), 4, 7)])
    return make_choice([up_to_3, four, long_form])


def _dec_octet() -> Expr:
    return make_choice([
        make_seq([_lit("25"), _c("05")]),
        make_seq([_lit("2"), _c("04"), _D]),
        make_seq([_lit("1"), _D, _D]),
        make_seq([_c("19"), _D]),
        _D,
    ])


def _ipv4() -> Expr:
    o = _dec_octet()
    return make_seq([o, _lit("."), o, _lit("."), o, _lit("."), o])


def _ipv6() -> Expr:
    h16 = _rep(_HEXD, 1, 4)
    h16c = _two(h16, _lit(":"))
    ls32 = make_choice([make_seq([h16, _lit(":"), h16]), _ipv4()])

    def before(n):  # [ *n( h16 ":" ) h16 ]
        if n < 0:
            return EPSILON
        return _opt(make_seq([_rep(h16c, 0, n), h16]))

    alts = [
        make_seq([_rep(h16c, 6, 6), ls32]),
        make_seq([_lit("::"), _rep(h16c, 5, 5), ls32]),
        make_seq([before(0), _lit("::"), _rep(h16c, 4, 4), ls32]),
        make_seq([before(1), _lit("::"), _rep(h16c, 3, 3), ls32]),
        make_seq([before(2), _lit("::"), _rep(h16c, 2, 2), ls32]),
        make_seq([before(3), _lit("::"), h16c, ls32]),
        make_seq([before(4), _lit("::"), ls32]),
        make_seq([before(5), _lit("::"), h16]),
        make_seq([before(6), _lit("::")]),
    ]
    return make_choice(alts)


_UNRESERVED = _c("AZ", "az", "09", "-", ".", "_", "~")
_SUB_DELIMS = _c("!", "$", "&", "'", "(", ")", "*", "+", ",", ";", "=")
_PCT = make_seq([_lit("%"), _HEXD, _HEXD])


#: RFC 3987 ``ucschar`` and ``iprivate``.
_UCSCHAR = ((0xA0, 0xD7FF), (0xF900, 0xFDCF), (0xFDF0, 0xFFEF)) + tuple(
    (p << 16, (p << 16) + 0xFFFD) for p in range(1, 14)) + ((0xE1000, 0xEFFFD),)
_IPRIVATE = ((0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD))


def _uri_parts(iri: bool = False):
    """(absolute URI, relative reference) of RFC 3986, or with ``iri`` of RFC 3987."""
    unres = _UNRESERVED.ranges + (_UCSCHAR if iri else ())
    pchar_cls = CharClass(unres + _SUB_DELIMS.ranges + ((0x3A, 0x3A), (0x40, 0x40)))
    pchar = make_choice([pchar_cls, _PCT])
    segment = _rep(pchar, 0, None)
    segment_nz = _rep(pchar, 1, None)
    nc_cls = CharClass(unres + _SUB_DELIMS.ranges + ((0x40, 0x40),))
    segment_nz_nc = _rep(make_choice([nc_cls, _PCT]), 1, None)
    slash_seg = _two(_lit("/"), segment)
    path_abempty = _rep(slash_seg, 0, None)
    path_absolute = make_seq([_lit("/"), _opt(make_seq([segment_nz, _rep(slash_seg, 0, None)]))])
    path_rootless = make_seq([segment_nz, _rep(slash_seg, 0, None)])
    path_noscheme = make_seq([segment_nz_nc, _rep(slash_seg, 0, None)])
    userinfo = _rep(make_choice([CharClass(unres + _SUB_DELIMS.ranges + ((0x3A, 0x3A),)), _PCT]), 0, None)
    ipvfuture = make_seq([_c("v", "V"), _rep(_HEXD, 1, None), _lit("."),
                          _rep(CharClass(_UNRESERVED.ranges + _SUB_DELIMS.ranges + ((0x3A, 0x3A),)), 1, None)])
    ip_literal = make_seq([_lit("["), make_choice([_ipv6(), ipvfuture]), _lit("]")])
    reg_name = _rep(make_choice([CharClass(unres + _SUB_DELIMS.ranges), _PCT]), 0, None)
    host = make_choice([ip_literal, reg_name])
    authority = make_seq([_opt(_two(userinfo, _lit("@"))), host, _opt(_two(_lit(":"), _rep(_D, 0, None)))])
    f_char = make_choice([CharClass(pchar_cls.ranges + ((0x2F, 0x2F), (0x3F, 0x3F))), _PCT])
    q_char = make_choice([CharClass(pchar_cls.ranges + ((0x2F, 0x2F), (0x3F, 0x3F)) + (_IPRIVATE if iri else ())),
                          _PCT])
    query = _opt(_two(_lit("?"), _rep(q_char, 0, None)))
    fragment = _opt(_two(_lit("#"), _rep(f_char, 0, None)))
    scheme = make_seq([_ALPHA, _rep(_c("AZ", "az", "09", "+", "-", "."), 0, None)])
    hier = make_choice([make_seq([_lit("//"), authority, path_abempty]), path_absolute, path_rootless, EPSILON])
    uri = make_seq([scheme, _lit(":"), hier, query, fragment])
    rel_part = make_choice([make_seq([_lit("//"), authority, path_abempty]), path_absolute, path_noscheme, EPSILON])
    relative_ref = make_seq([rel_part, query, fragment])
    return uri, relative_ref


def _uri_template() -> Expr:
    """RFC 6570 level-4 URI Template (``'`` allowed in literals, as RFC 6570 erratum 6937
    and the JSON-Schema-Test-Suite have it)."""
    literal = make_choice([
        CharClass(((0x21, 0x21), (0x23, 0x24), (0x26, 0x3B), (0x3D, 0x3D), (0x3F, 0x5B), (0x5D, 0x5D),
                   (0x5F, 0x5F), (0x61, 0x7A), (0x7E, 0x7E)) + _UCSCHAR + _IPRIVATE),
        _PCT,
    ])
    varchar = make_choice([_c("AZ", "az", "09", "_"), _PCT])
    varname = make_seq([varchar, _rep(make_seq([_opt(_lit(".")), varchar]), 0, None)])
    max_length = make_seq([_c("19"), _rep(_D, 0, 3)])
    modifier = _opt(make_choice([_two(_lit(":"), max_length), _lit("*")]))
    varspec = make_seq([varname, modifier])
    operator = _opt(_c("+", "#", ".", "/", ";", "?", "&", "=", ",", "!", "@", "|"))
    expression = make_seq([_lit("{"), operator, varspec, _rep(_two(_lit(","), varspec), 0, None), _lit("}")])
    return _rep(make_choice([literal, expression]), 0, None)


_NON_ASCII = ((0x80, 0xD7FF), (0xE000, MAX_CODE_POINT))  # scalar values (no surrogates)


def _email(idn: bool = False) -> Expr:
    """RFC 5321 ``Mailbox``; with ``idn`` the RFC 6531 local part (any non-ASCII character
    in atoms and quoted strings; the domain stays ASCII)."""
    utf8 = _NON_ASCII if idn else ()
    atext = CharClass(_c("AZ", "az", "09", "!", "#", "$", "%", "&", "'", "*", "+", "-", "/", "=", "?", "^",
                         "_", "`", "{", "|", "}", "~").ranges + utf8)
    dot_atom = make_seq([_rep(atext, 1, None), _rep(_two(_lit("."), _rep(atext, 1, None)), 0, None)])
    qtext = CharClass(((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E)) + utf8)
    quoted_pair = _two(_lit("\\"), _c((0x20, 0x7E)))
    quoted = make_seq([_lit('"'), _rep(make_choice([qtext, quoted_pair]), 0, None), _lit('"')])
    # sub-domain = Let-dig [Ldh-str]: no length limit in the ABNF (and an unbounded label
    # keeps the automaton small, which matters next to maxLength)
    ld, ldh = _c("AZ", "az", "09"), _c("AZ", "az", "09", "-")
    label = make_seq([ld, _opt(make_seq([_rep(ldh, 0, None), ld]))])
    domain = make_seq([label, _rep(_two(_lit("."), label), 1, None)])
    literal = make_seq([_lit("["), _ipv4(), _lit("]")])
    return make_seq([make_choice([dot_atom, quoted]), _lit("@"), make_choice([domain, literal])])


def _uuid() -> Expr:
    def h(n):
        return _rep(_HEXD, n, n)
    return make_seq([h(8), _lit("-"), h(4), _lit("-"), h(4), _lit("-"), h(4), _lit("-"), h(12)])


def _json_pointer() -> Expr:
    ref_token = _rep(make_choice([CharClass(((0x2F, 0x2F), (0x7E, 0x7E)), negated=True),
                                  _two(_lit("~"), _c("0", "1"))]), 0, None)
    return _rep(_two(_lit("/"), ref_token), 0, None)


def _relative_json_pointer() -> Expr:
    nonneg = make_choice([_lit("0"), make_seq([_c("19"), _rep(_D, 0, None)])])
    return make_seq([nonneg, make_choice([_lit("#"), _json_pointer()])])


_CACHE: Dict[str, Expr] = {}


def _build(name: str) -> Optional[Expr]:
    if name == "date":
        return _date()
    if name == "time":
        return _time()
    if name == "date-time":
        return make_seq([_date(), _c("T", "t"), _time()])
    if name == "duration":
        return _duration()
    if name in ("email", "idn-email"):
        return _email(idn=name == "idn-email")
    if name in ("hostname", "idn-hostname"):
        return _hostname()
    if name == "ipv4":
        return _ipv4()
    if name == "ipv6":
        return _ipv6()
    if name == "uri":
        return _uri_parts()[0]
    if name == "uri-reference":
        uri, rel = _uri_parts()
        return make_choice([uri, rel])
    if name == "iri":
        return _uri_parts(iri=True)[0]
    if name == "iri-reference":
        return make_choice(list(_uri_parts(iri=True)))
    if name == "uri-template":
        return _uri_template()
    if name == "uuid":
        return _uuid()
    if name == "json-pointer":
        return _json_pointer()
    if name == "relative-json-pointer":
        return _relative_json_pointer()
    return None


KNOWN_FORMATS = ("date", "time", "date-time", "duration", "email", "idn-email", "hostname",
                 "idn-hostname", "ipv4", "ipv6", "uri", "uri-reference", "iri", "iri-reference",
                 "uri-template", "uuid", "json-pointer", "relative-json-pointer")

#: Formats whose grammar is exactly the format (the others are proper subsets: they reject
#: some valid strings, so their complement -- ``not``, ``else``, ``oneOf`` -- cannot be used).
EXACT_FORMATS = frozenset(("date", "duration", "ipv4", "ipv6", "uri", "uri-reference", "iri",
                           "iri-reference", "uri-template", "uuid", "json-pointer",
                           "relative-json-pointer"))


def _superset(name: str) -> Optional[Expr]:
    """A grammar containing every string of format ``name`` (for disjointness proofs)."""
    if name in EXACT_FORMATS:
        return format_expr(name)
    if name == "time":
        return _time(any_leap=True)
    if name == "date-time":
        return make_seq([_date(), _c("T", "t"), _time(any_leap=True)])
    if name == "hostname":  # RFC 1123 labels, any count, A-labels included
        label = _label(63)
        return make_seq([label, _rep(_two(_lit("."), label), 0, None)])
    if name in ("email", "idn-email"):  # something "@" something
        anything = _rep(CharClass(_SCALARS), 1, None)
        return make_seq([anything, _lit("@"), anything])
    return None


def format_superset_expr(name: str) -> Optional[Expr]:
    """A code-point expression containing every string of format ``name`` -- the format's
    own grammar when it is exact (``EXACT_FORMATS``), a looser one otherwise -- or None
    when there is no useful one (then any string)."""
    return _cached("\x00superset:" + name, lambda: _superset(name))


def _cached(key: str, build) -> Optional[Expr]:
    if key not in _CACHE:
        e = build()
        if e is None:
            return None
        _CACHE[key] = e
    return _CACHE[key]


def format_expr(name: str) -> Optional[Expr]:
    """The code-point expression of string format ``name``, or None if it is not supported.

    Example::

        >>> from xmask.grammar.dfa_expr import dfa_from_expr
        >>> d = dfa_from_expr(format_expr("date"))
        >>> d.matches("2024-02-29"), d.matches("2023-02-29"), d.matches("2023-04-31")
        (True, False, False)
    """
    return _cached(name, lambda: _build(name))
