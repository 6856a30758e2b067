"""Strings: ``minLength``/``maxLength``, ``pattern``, ``format`` and their negations, as
grammars over the JSON text of the string.

A string constraint is first reduced to a hashable *key* (:meth:`Strings.string_key`);
lengths alone are a counted repetition of JSON characters, a single pattern or format is
encoded directly, anything else is intersected as automata over decoded code points
(:meth:`Strings.string_dfa`) and then encoded as JSON text (``\\uXXXX`` escapes included).

Example::

    >>> from .converter import Converter
    >>> from .layout import Layout
    >>> from .merged import Merged
    >>> strings = Converter(True, Layout()).strings
    >>> m = Merged(); m.patterns.append(("^a+$", "#/pattern"))
    >>> strings.string_dfa(strings.string_key(m)).matches("aaa")
    True
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from ...errors import GrammarError, GrammarLimitError, RegexSyntaxError, UnsupportedSchemaError
from ..code_point_dfa import Dfa, dfa_complement, dfa_literals, dfa_product, dfa_with_length
from ..dfa_expr import dfa_from_expr, dfa_to_expr
from ..expr_length import format_min_code_points, min_code_points
from ..ir import Bytes, CharClass, Expr, Repeat, make_choice, make_seq
from ..string_format import (
    JSON_CHAR,
    JSON_CHAR_ASCII,
    JSON_CHAR_PERMISSIVE,
    JSON_CHAR_TAIL,
    encode_char_class_as_json,
    encode_expr_as_json,
    format_expr,
    format_superset_expr,
)
from ..text_exclusion import automaton_rules, exclude_words
from .context import Context
from .counting import counted, repeat
from .merged import Merged
from .vocabulary import CALLED_STRING_MAX, CALLED_STRING_MIN, DIRECT_STRING, MAX_COUNT_BOUND, NUMERIC_FORMATS

__all__ = ["Strings", "any_string_dfa"]


class Strings:
    """String constraints of merged schemas: keys, automata and grammars (memoized)."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.regex_memo: Dict[str, Any] = {}  # pattern -> code-point expression (None: unsupported)
        self.dfa_memo: Dict[Any, Optional[Dfa]] = {}

    def gen_string(self, m: Merged, hint: str) -> Optional[Expr]:
        """The strings of ``m``, one shared rule per string constraint; None: none."""
        key = self.string_key(m)
        if key is None:
            return None
        return self.ctx.shared_rule(key, "string", lambda: self.build_string(key, m))

    def string_key(self, m: Merged) -> Optional[tuple]:
        """The string constraint of ``m`` as a hashable key (None: no string fits)."""
        fmts = []
        for fmt, path in m.formats:
            if fmt in NUMERIC_FORMATS and fmt not in ("float", "double"):
                self.ctx.unsupported(f"format {fmt!r} on strings is not supported", path)
                continue
            if fmt in ("float", "double"):
                self.ctx.unsupported(f"format {fmt!r} on strings is not supported", path)
                continue
            if format_expr(fmt) is None:
                self.ctx.unsupported(f"unknown format {fmt!r}", path)
                continue
            fmts.append(fmt)
        pats = []
        for pat, path in m.patterns:
            if self.regex(pat, path) is not None:
                pats.append(pat)
        not_pats = []
        for pat, path in m.not_patterns:
            if self.regex(pat, path) is not None:
                not_pats.append(pat)
        not_fmts = [f for f, _ in m.not_formats]
        lo, hi = m.min_len, m.max_len
        if hi is not None and hi < lo:
            return None
        if hi is not None and hi > MAX_COUNT_BOUND or lo > MAX_COUNT_BOUND:
            raise GrammarLimitError(f"string length bound above {MAX_COUNT_BOUND}", path=m.big.get("len"))
        if lo and (pats or fmts) and lo <= self._shortest(pats, fmts):
            lo = 0  # the pattern's or format's strings are never shorter: the same language
        return ("str", lo, hi, tuple(sorted(set(pats))), tuple(sorted(set(fmts))), tuple(sorted(set(not_pats))),
                tuple(sorted(set(not_fmts))), tuple(sorted(set(m.not_strings))))

    def _shortest(self, pats, fmts) -> int:
        """The largest of the shortest lengths (code points) of the strings of each pattern
        (parsed already) and format (known)."""
        n = 0
        for p in pats:
            e = self.regex_memo[p]
            n = max(n, _shared(_SHARED_SHORTEST, p, lambda: min_code_points(e)))
        for f in fmts:
            n = max(n, format_min_code_points(f))
        return n

    def regex(self, pattern: str, path: str):
        """(code-point expr, lazily built DFA holder) of an unanchored pattern, or None."""
        if pattern in self.regex_memo:
            r = self.regex_memo[pattern]
            if r is None:
                self.ctx.unsupported("pattern is not supported", path)
            return r
        try:
            from ..regex import regex_to_expr
        except ImportError:
            self.regex_memo[pattern] = None
            self.ctx.unsupported("pattern is not supported (no regex support)", path)
            return None
        try:
            e = _shared(_SHARED_REGEXES, pattern, lambda: regex_to_expr(pattern, search=True))
        except (RegexSyntaxError, GrammarError, ValueError) as err:
            self.regex_memo[pattern] = None
            self.ctx.unsupported(f"pattern not supported: {err}", path)
            return None
        self.regex_memo[pattern] = e
        return e

    def pattern_dfa(self, pattern: str) -> Optional[Dfa]:
        """The DFA of the unanchored ``pattern`` (which must parse), memoized."""
        key = ("re", pattern)
        if key not in self.dfa_memo:
            e = self.regex_memo.get(pattern)
            if e is None:
                e = self.regex(pattern, "#")
            self.dfa_memo[key] = None if e is None else _shared_dfa(key, e)
        return self.dfa_memo[key]

    def pattern_dfa_or_none(self, pat: str, path: str) -> Optional[Dfa]:
        """The DFA of ``pat``, or None (reported) when it is unsupported or too large."""
        if self.regex(pat, path) is None:
            return None
        try:
            return self.pattern_dfa(pat)
        except GrammarLimitError as e:
            self.ctx.unsupported(f"pattern too complex: {e}", path)
            return None

    def format_dfa(self, fmt: str, superset: bool = False) -> Optional[Dfa]:
        """The DFA of format ``fmt`` (``superset``: of :func:`format_superset_expr`)."""
        key = ("fmt-superset" if superset else "fmt", fmt)
        if key not in self.dfa_memo:
            e = format_superset_expr(fmt) if superset else format_expr(fmt)
            self.dfa_memo[key] = None if e is None else _shared_dfa(key, e)
        return self.dfa_memo[key]

    def string_format_ok(self, f: str, path: str) -> bool:
        """Whether ``f`` is a known format (an unknown one is reported)."""
        if format_expr(f) is None:
            self.ctx.unsupported(f"unknown format {f!r}", path)
            return False
        return True

    def string_dfa(self, key) -> Optional[Dfa]:
        """The DFA over decoded code points of the string constraint ``key``; None = any string.
        (A pure function of ``key``, whose patterns all parse: memoized process-wide.)"""
        return _shared(_SHARED_DFAS, key, lambda: self._string_dfa(key))

    def _string_dfa(self, key) -> Optional[Dfa]:
        _, lo, hi, pats, fmts, not_pats, not_fmts, not_strings = key
        d: Optional[Dfa] = None

        def conj(x: Dfa):
            nonlocal d
            d = x if d is None else dfa_product(d, x, "and")

        for pat in pats:
            conj(self.pattern_dfa(pat))
        for f in fmts:
            conj(self.format_dfa(f))
        for pat in not_pats:
            conj(dfa_complement(self.pattern_dfa(pat)))
        for f in not_fmts:
            # the complement of a superset: exact for exact formats, else a subset of the
            # strings not of the format
            fd = self.format_dfa(f, superset=True)
            if fd is not None:
                conj(dfa_complement(fd))
        if not_strings:
            conj(dfa_complement(dfa_literals(list(not_strings))))
        if lo > 0 or hi is not None:
            if d is None:
                return None  # plain length limits are handled without automata
            short, long_ = d.length_bounds()
            if short is None:
                return d
            if short < lo or (hi is not None and (long_ is None or long_ > hi)):
                d = dfa_with_length(d, lo, hi)
        return d

    def build_string(self, key, m: Merged) -> Optional[Expr]:
        """The grammar of the strings of ``key`` (see :meth:`string_key`)."""
        _, lo, hi, pats, fmts, not_pats, not_fmts, not_strings = key
        q = Bytes(b'"')
        if self.ctx.excludes and not (pats or fmts):
            return self.build_excluded_string(key, m)
        if not (pats or fmts or not_pats or not_fmts or not_strings):
            if lo == 0 and hi is None:
                return _ANY_STRING_TEXT
            return make_seq([q, self.counted_chars(lo, hi), q])
        path = self.ctx.where(m)
        if len(pats) + len(fmts) == 1 and not (not_pats or not_fmts or not_strings) and lo == 0 and hi is None:
            e = self.regex_memo[pats[0]] if pats else format_expr(fmts[0])
            enc = _shared_json_encoding(("re", pats[0]) if pats else ("fmt", fmts[0]), e)
            return None if enc is None else make_seq([q, enc, q])
        try:
            d = self.string_dfa(key)
        except GrammarLimitError as err:
            self.ctx.unsupported(f"string constraints too complex to intersect: {err}", path)
            return make_seq([q, Repeat(JSON_CHAR_PERMISSIVE, 0, None), q])
        if d is None:
            return make_seq([q, self.counted_chars(lo, hi), q])
        body = self.emit_string_dfa(d, "str")
        return None if body is None else make_seq([q, body, q])

    def counted_chars(self, lo: int, hi: Optional[int]) -> Expr:
        """``lo`` to ``hi`` JSON string characters (code points), as text.

        Short bounds repeat :data:`JSON_CHAR` (a chain of about 20 automaton states per
        character position: a multi-byte character or an escape is a path of its own).  From
        :data:`CALLED_STRING_MIN` characters on, a position is one state that reads an ASCII
        character itself and calls one shared rule for any other (``str_char_tail``, kept
        called by the automaton builder), which returns to the next position: 20x fewer states
        to build and to classify, and the classifier's plain-text search follows that call.
        Up to :data:`CALLED_STRING_MAX` (and ``max_repeat``) such positions form one chain;
        longer bounds are chunked (:func:`.counting.counted`) in the first form, because a
        chunk's end, with the call, makes each token crossing it cost twice the work to check."""
        n = lo if hi is None else hi
        if n < CALLED_STRING_MIN or n > min(CALLED_STRING_MAX, self.ctx.limits.max_repeat):
            return counted(self.ctx, JSON_CHAR, lo, hi, "str_chunk", DIRECT_STRING)
        tail = self.ctx.shared_rule(("json_char_tail",), "str_char_tail", lambda: JSON_CHAR_TAIL)
        return repeat(make_choice([JSON_CHAR_ASCII, tail]), lo, hi)

    def build_excluded_string(self, key, m: Merged) -> Optional[Expr]:
        """A string without pattern/format whose JSON text contains no excluded word: the
        automaton of its JSON text (lengths counted in decoded characters) intersected with
        :func:`.text_exclusion.avoid_dfa`."""
        _, lo, hi, _, _, not_pats, not_fmts, not_strings = key
        path = self.ctx.where(m)
        if not_pats or not_fmts or not_strings:
            self.ctx.unsupported("excludes together with a negated string constraint ('not') are not "
                                 "supported", path, "negation dropped")
        text = Repeat(JSON_CHAR_PERMISSIVE, 0, None) if lo == 0 and hi is None else Repeat(JSON_CHAR, lo, hi)
        try:
            body = automaton_rules(exclude_words(dfa_from_expr(text), self.ctx.excludes), self.ctx.sink, "str")
        except GrammarLimitError as err:
            raise UnsupportedSchemaError(f"string length bounds too large to combine with excludes: {err}",
                                         path) from None
        q = Bytes(b'"')
        return None if body is None else make_seq([q, body, q])

    def emit_string_dfa(self, d: Dfa, hint: str) -> Optional[Expr]:
        """A string body over decoded code points ``d``, emitted as JSON text."""
        return dfa_to_expr(d, self.ctx.sink, hint, label=lambda rs: encode_char_class_as_json(CharClass(tuple(rs))),
                           label_key=("json_char",))

    def proof_dfa(self, m: Merged) -> Optional[Dfa]:
        """A superset automaton of the strings of ``m`` for disjointness proofs (None: unknown)."""
        d = None
        for p, path in m.patterns:
            if self.regex_memo.get(p, 0) is None:
                return None
            if p not in self.regex_memo:
                try:
                    from ..regex import regex_to_expr
                    self.regex_memo[p] = regex_to_expr(p, search=True)
                except Exception:
                    self.regex_memo[p] = None
                    return None
            x = self.pattern_dfa(p)
            d = x if d is None else dfa_product(d, x, "and")
        for f, _ in m.formats:
            x = self.format_dfa(f, superset=True)  # restricted formats are proper subsets
            if x is None:
                continue
            d = x if d is None else dfa_product(d, x, "and")
        if d is not None and (m.min_len or m.max_len is not None):
            d = dfa_with_length(d, m.min_len, m.max_len)
        return d


# patterns recur across a server's schemas; a date-time DFA costs ~10 ms to build).  Only
# successes are kept, so errors are raised again exactly as the first time.  Bounded: the
# memo is emptied when full.
_SHARED_MEMO_SIZE = 512
_SHARED_DFAS: Dict[tuple, Dfa] = {}
_SHARED_REGEXES: Dict[str, Expr] = {}  # pattern -> its expression (unanchored search)
_SHARED_ENCODINGS: Dict[tuple, Optional[Expr]] = {}
_SHARED_SHORTEST: Dict[str, int] = {}  # pattern -> min_code_points of its expression


def _shared(memo: dict, key, build):
    hit = memo.get(key)
    if hit is None and key not in memo:
        hit = build()
        if len(memo) >= _SHARED_MEMO_SIZE:
            memo.clear()
        memo[key] = hit
    return hit


def _shared_dfa(key: tuple, e: Expr) -> Dfa:
    """``dfa_from_expr(e)``, where ``e`` is the expression of the pattern or format ``key``."""
    return _shared(_SHARED_DFAS, key, lambda: dfa_from_expr(e))


def _shared_json_encoding(key: tuple, e: Expr) -> Optional[Expr]:
    """``encode_expr_as_json(e)``, where ``e`` is the expression of the pattern or format ``key``."""
    return _shared(_SHARED_ENCODINGS, key, lambda: encode_expr_as_json(e))


_ANY_STRING: Optional[Dfa] = None
_QUOTE = Bytes(b'"')
#: the JSON text of any string: the body of the one rule of the string key without constraints
#: (built once; nodes are immutable, and the IR serialization keeps which nodes are shared, so
#: a constant must not appear twice in one grammar where fresh nodes did)
_ANY_STRING_TEXT = make_seq([_QUOTE, Repeat(JSON_CHAR_PERMISSIVE, 0, None), _QUOTE])


def any_string_dfa() -> Dfa:
    """The automaton of every string (built once)."""
    global _ANY_STRING
    if _ANY_STRING is None:
        _ANY_STRING = dfa_from_expr(Repeat(CharClass((), negated=True), 0, None))
    return _ANY_STRING
