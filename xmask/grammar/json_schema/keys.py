"""Object keys: which schema a property's value gets, and the key grammars of additional
properties (complements of the declared names, ``patternProperties`` classes,
``propertyNames``).

Printable ASCII in keys is matched only literally (its canonical spelling); escaped
characters are covered once by a shared rule (see :meth:`Keys.emit_key_dfa`).

Example::

    >>> from .converter import Converter
    >>> from .layout import Layout
    >>> conv = Converter({"properties": {"a": {"type": "string"}}}, Layout())
    >>> m = conv.merger.merge(conv.atoms.flatten(conv.doc.nid(conv.doc.root)))
    >>> [conv.ctx.ptr(a[1]) for a in conv.keys.prop_atoms(m, "a")]
    ['#/properties/a']
"""

from __future__ import annotations

import re
from bisect import bisect_left
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

from ...errors import GrammarLimitError
from ..code_point_dfa import (
    MAX_DFA_STATES,
    UNICODE_SCALARS,
    Dfa,
    dfa_complement,
    dfa_explore,
    dfa_from_step,
    dfa_literals,
    dfa_minimize,
    dfa_product,
    dfa_with_length,
    memo_fits,
    memo_put,
    split_points,
)
from ..dfa_expr import dfa_from_expr, dfa_to_expr, word_complement_expr
from ..ir import Bytes, CharClass, Expr, Repeat, make_choice, make_seq
from ..string_format import ESCAPABLE, JSON_CHAR_PERMISSIVE, encode_ranges_canonical
from ..text_exclusion import automaton_rules, exclude_words
from .atoms import AtomTable
from .context import Context
from .merge import Merger
from .merged import Merged
from .strings import Strings, any_string_dfa
from .validator import CannotValidate, FormatUnknown, Validator
from .vocabulary import FALSE, STR

__all__ = ["Keys"]


class Keys:
    """Property value atoms and additional-key grammars of merged object schemas."""

    def __init__(self, ctx: Context, atoms: AtomTable, merger: Merger, strings: Strings, validator: Validator):
        self.ctx = ctx
        self.atoms = atoms
        self.merger = merger
        self.strings = strings
        self.validator = validator
        self.names_memo: Dict[tuple, Optional[Dfa]] = {}  # see prop_names_dfa

    def prop_atoms(self, m: Merged, name: str) -> FrozenSet:
        """The value atoms of property ``name`` in ``m`` (``properties``, matching
        ``patternProperties``, else ``additionalProperties``, per object unit)."""
        acc: set = set()
        declared_anywhere = False
        for props, pats, addl, _ in m.obj_units:
            hit = False
            if name in props:
                acc |= self.atoms.flatten(props[name])
                hit = True
                declared_anywhere = True
            for pat, pn, ppath in pats:
                d = self.strings.pattern_dfa_or_none(pat, ppath)
                if d is not None and d.matches(name):
                    acc |= self.atoms.flatten(pn)
                    hit = True
            if not hit and addl is not None:
                acc |= self.atoms.flatten(addl)
        if self.ctx.strict and not m.has_addl and not declared_anywhere and m.obj_units and self.strict_objects(m):
            if not any(self.pattern_matches_any(u, name) for u in m.obj_units):
                return frozenset((FALSE,))
        if FALSE in acc:
            return frozenset((FALSE,))
        return frozenset(acc)

    def strict_objects(self, m: Merged) -> bool:
        """Whether some object unit of ``m`` declares properties or patterns (strict mode closes it)."""
        return any(props or pats for props, pats, _, _ in m.obj_units)

    def pattern_matches_any(self, unit, name: str) -> bool:
        """Whether ``name`` matches a ``patternProperties`` pattern of ``unit``."""
        for pat, _, ppath in unit[1]:
            d = self.strings.pattern_dfa_or_none(pat, ppath)
            if d is not None and d.matches(name):
                return True
        return False

    def name_allowed(self, m: Merged, name: str) -> bool:
        """Whether ``propertyNames`` allows ``name`` (undecidable names are reported and allowed)."""
        for pn in m.prop_names:
            try:
                if not self.validator.validate(name, pn):
                    return False
            except FormatUnknown:
                return False  # not using the name only rejects valid texts
            except CannotValidate as e:
                self.ctx.unsupported(e.message, e.path)
        return True

    def key_classes(self, m: Merged, declared: List[str], hint: str) -> List[Tuple[Expr, FrozenSet]]:
        """(key expression, value atoms) for the keys outside ``declared``, one per set of
        ``patternProperties`` patterns a key matches."""
        pats: List[Tuple[int, str, int, str]] = []  # (unit index, pattern, schema nid, path)
        for ui, (props, upats, addl, _) in enumerate(m.obj_units):
            for pat, pn, ppath in upats:
                if self.strings.pattern_dfa_or_none(pat, ppath) is not None:
                    pats.append((ui, pat, pn, ppath))
        strict_forbid = self.ctx.strict and not m.has_addl and self.strict_objects(m)

        def atoms_for(matched: FrozenSet[int]) -> FrozenSet:
            acc: set = set()
            for ui, (props, upats, addl, _) in enumerate(m.obj_units):
                mine = [pats[i] for i in matched if pats[i][0] == ui]
                if mine:
                    for _, _, pn, _ in mine:
                        acc |= self.atoms.flatten(pn)
                elif addl is not None:
                    acc |= self.atoms.flatten(addl)
            if not matched and strict_forbid:
                return frozenset((FALSE,))
            return frozenset((FALSE,)) if FALSE in acc else frozenset(acc)

        names_key = tuple(m.prop_names)
        if not pats:
            atoms = atoms_for(frozenset())
            if FALSE in atoms:
                return []
            key = self.key_expr(declared, None, (), names_key, m, hint)
            return [] if key is None else [(key, atoms)]
        try:
            dfas = [self.strings.pattern_dfa(p[1]) for p in pats]
            prod, labels = _classify_product(dfas)
        except GrammarLimitError as e:
            self.ctx.unsupported(f"patternProperties too complex: {e}", pats[0][3])
            return []
        out = []
        pat_key = tuple(p[1] for p in pats)
        for label in sorted(set(labels), key=sorted):
            atoms = atoms_for(label)
            if FALSE in atoms:
                continue
            cls = Dfa(prod.edges, [lab == label for lab in labels])
            key = self.key_expr(declared, cls, (pat_key, tuple(sorted(label))), names_key, m, hint)
            if key is not None:
                out.append((key, atoms))
        return out

    def prop_names_dfa(self, m: Merged) -> Optional[Dfa]:
        """DFA of the allowed key strings from ``propertyNames`` (None: any); memoized per
        conversion by the ``propertyNames`` nodes (every object sharing them asks again)."""
        if not m.prop_names:
            return None
        key = tuple(m.prop_names)
        if key not in self.names_memo:
            # (what it reports is reported again by an identical call, and deduplicated)
            self.names_memo[key] = self._prop_names_dfa(m)
        return self.names_memo[key]

    def _prop_names_dfa(self, m: Merged) -> Optional[Dfa]:
        d = None
        for pn in m.prop_names:
            atoms = self.atoms.flatten(pn)
            if FALSE in atoms:
                return dfa_literals([])
            if any(a[0] != "own" for a in atoms):
                self.ctx.unsupported("propertyNames with anyOf/oneOf/not is not supported", self.ctx.ptr(pn))
                continue
            pm = self.merger.merge(atoms)
            if STR not in pm.kinds:
                return dfa_literals([])
            if pm.enum is not None:
                x = dfa_literals([v for v in pm.enum if isinstance(v, str) and self.validator.enum_value_ok(v, pm)])
            else:
                key = ("str", pm.min_len, pm.max_len,
                       tuple(p for p, path in pm.patterns if self.strings.regex(p, path) is not None),
                       tuple(f for f, path in pm.formats if self.strings.string_format_ok(f, path)),
                       tuple(p for p, path in pm.not_patterns if self.strings.regex(p, path) is not None),
                       tuple(f for f, _ in pm.not_formats), tuple(pm.not_strings))
                if key[1] == 0 and key[2] is None and not any(key[3:]):
                    continue
                x = self.strings.string_dfa(key)
                if x is None:  # length only
                    x = dfa_with_length(any_string_dfa(), pm.min_len, pm.max_len)
            for kind, path, msg in pm.gated:
                if kind in (None, STR):
                    self.ctx.unsupported(msg, path)
            d = x if d is None else dfa_product(d, x, "and")
        return d

    def key_expr(self, declared: List[str], cls: Optional[Dfa], cls_key, names_key, m: Merged,
                 hint: str) -> Optional[Expr]:
        """A JSON string key: decoded value in ``cls`` (None: any), allowed by propertyNames,
        and not one of ``declared``."""
        key = ("key", tuple(sorted(declared)), cls_key, names_key)

        def build():
            if self.ctx.excludes:
                return self.excluded_key(declared, cls, m)
            literal = False
            try:
                d = cls
                name_dfa = self.prop_names_dfa(m)
                if name_dfa is not None:
                    d = name_dfa if d is None else dfa_product(d, name_dfa, "and")
                if declared and d is None and all(_LITERAL_KEY.fullmatch(w) for w in declared):
                    literal = True  # the usual case: any key but the declared ones
                elif declared:
                    names = dfa_literals(declared)
                    d = dfa_complement(names) if d is None else dfa_product(d, names, "diff")
            except GrammarLimitError as e:
                self.ctx.unsupported(f"object key constraints too complex: {e}", self.ctx.where(m))
                return None
            q = Bytes(b'"')
            if literal:
                body = self.emit_key_complement(declared, f"{hint}_key")
                return None if body is None else make_seq([q, body, q])
            if d is None:
                # (the constant only for the one key of this form per grammar: the IR serialization
                # keeps which nodes are shared)
                if not names_key and cls is None:
                    return _ANY_KEY
                return make_seq([q, Repeat(JSON_CHAR_PERMISSIVE, 0, None), q])
            body = self.emit_key_dfa(d, f"{hint}_key")
            return None if body is None else make_seq([q, body, q])
        return self.ctx.shared_rule(key, f"{hint}_key", build)

    def excluded_key(self, declared: List[str], cls: Optional[Dfa], m: Merged) -> Optional[Expr]:
        """An additional key whose JSON text contains no excluded word (any key but the
        ``declared`` ones; other key constraints with excludes are unsupported)."""
        path = self.ctx.where(m)
        if cls is not None or m.prop_names or not all(_LITERAL_KEY.fullmatch(w) for w in declared):
            self.ctx.unsupported("excludes with patternProperties, propertyNames or non-ASCII property "
                                 "names next to additional properties are not supported", path, "no additional keys")
            return None
        if declared:  # printable ASCII only literally, so a declared name has one spelling
            char = make_choice([CharClass(_LIT), encode_ranges_canonical(ESCAPABLE)])
            d = dfa_product(dfa_from_expr(Repeat(char, 0, None)), dfa_literals(declared), "diff")
        else:
            d = dfa_from_expr(Repeat(JSON_CHAR_PERMISSIVE, 0, None))
        body = automaton_rules(exclude_words(d, self.ctx.excludes), self.ctx.sink, "key")
        q = Bytes(b'"')
        return None if body is None else make_seq([q, body, q])

    def emit_key_dfa(self, d: Dfa, hint: str) -> Optional[Expr]:
        """Keys: printable ASCII is matched only literally (its canonical spelling).

        When every escapable code point (see :data:`ESCAPABLE`) leads either nowhere or to a
        state accepting every continuation -- the usual case for complements of declared
        names -- the key is split into the escape-free strings of ``d`` and
        ``prefix ESC any*``, so the large escape grammar appears once instead of on every
        automaton edge.
        """
        d = dfa_minimize(d)
        esc_any = self._key_esc_char()
        split = _key_split(d)
        if split is None:
            return dfa_to_expr(d, self.ctx.sink, hint, label=lambda rs: encode_ranges_canonical(rs, esc_any),
                               label_key=("key_char", esc_any))
        lit, lit_pre = split
        pre = (lambda: dfa_to_expr(lit_pre, self.ctx.sink, hint + "_pre")) if lit_pre is not None else None
        e1 = dfa_to_expr(lit, self.ctx.sink, hint)
        return self._emit_key_split(e1, pre, esc_any)

    def emit_key_complement(self, words: List[str], hint: str) -> Optional[Expr]:
        """``emit_key_dfa`` of the keys other than ``words`` (all of printable ASCII, see
        :data:`_LITERAL_KEY`), without building the full automaton: the escape-free keys are
        ``word_complement_expr`` over printable ASCII, and every state leads to the
        accept-all state on an escapable character, whose escape-free prefixes are any
        printable ASCII string (the same language; the shape is ``word_complement_expr``'s)."""
        esc_any = self._key_esc_char()
        e1 = word_complement_expr(words, _LIT, self.ctx.sink, hint)
        return self._emit_key_split(e1, lambda: _ANY_LIT_EXPR, esc_any)

    def _key_esc_char(self) -> Expr:
        return self.ctx.shared_rule("key_esc_char", "key_esc_char",
                                    lambda: encode_ranges_canonical(ESCAPABLE))

    def _emit_key_split(self, e1: Optional[Expr], pre, esc_any: Expr) -> Optional[Expr]:
        """Keys as the escape-free strings ``e1`` (emitted already: rule names follow the
        emission order), or an escape-free prefix, one escaped character and anything after
        it; ``pre()`` emits the prefixes, ``pre`` is None when there are none."""
        alts = [e1] if e1 is not None else []
        if pre is not None:
            e2 = pre()
            if e2 is not None:
                rest = self.ctx.shared_rule("key_any_rest", "key_any_rest", lambda: Repeat(
                    make_choice([_LIT_CLASS, esc_any]), 0, None))
                alts.append(make_seq([e2, esc_any, rest]))
        return make_choice(alts) if alts else None


_LIT = ((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E))  # printable ASCII other than '"' and '\\'
_LIT_CLASS = CharClass(_LIT)  # (in the one key_any_rest rule of a grammar)
_QUOTE = Bytes(b'"')
#: any key (nodes are immutable: built once, not at every object)
_ANY_KEY = make_seq([_QUOTE, Repeat(JSON_CHAR_PERMISSIVE, 0, None), _QUOTE])
#: a key written only literally (every character in ``_LIT``)
_LITERAL_KEY = re.compile(r'[ !#-\[\]-~]*')
#: any string of ``_LIT`` characters (emitted from its one-state DFA: no rules)
_ANY_LIT_EXPR = dfa_to_expr(Dfa([tuple((lo, hi, 0) for lo, hi in _LIT)], [True]), None)


def _key_split(d: Dfa) -> Optional[Tuple[Dfa, Optional[Dfa]]]:
    """For :meth:`Keys.emit_key_dfa` of the minimal ``d``: None when an escapable code point
    leads somewhere other than nowhere or the accept-all state; else the escape-free automaton
    (``d`` on ``_LIT``) and the one of the escape-free prefixes (None: none).  Memoized by
    content (the same key automata recur)."""
    key = d.content_key() if memo_fits(d.n_states) else None
    hit = _KEY_SPLITS.get(key, _MISSING) if key is not None else _MISSING
    if hit is not _MISSING:
        return hit
    n = d.n_states
    univ = -1
    for q in range(n):
        if d.accept[q] and _covers(d.edges[q], UNICODE_SCALARS, q):
            univ = q
            break
    acc2 = []
    out: Optional[Tuple[Dfa, Optional[Dfa]]] = None
    for q in range(n):
        targets = _targets_over(d.edges[q], ESCAPABLE)
        if targets == {-1}:
            acc2.append(False)
        elif univ >= 0 and targets == {univ}:
            acc2.append(True)
        else:
            break
    else:
        lit_edges = [tuple((max(lo, a), min(hi, b), t) for lo, hi, t in es for a, b in _LIT
                           if max(lo, a) <= min(hi, b)) for es in d.edges]
        lit_edges = [tuple(sorted(es)) for es in lit_edges]
        out = (Dfa(lit_edges, list(d.accept)), Dfa(lit_edges, acc2) if any(acc2) else None)
    if key is not None:
        memo_put(_KEY_SPLITS, key, out)
    return out


_MISSING = object()
_KEY_SPLITS: Dict[object, Optional[Tuple[Dfa, Optional[Dfa]]]] = {}
_PRODUCTS: Dict[tuple, Tuple[Dfa, List[FrozenSet[int]]]] = {}


def _targets_over(edges, ranges) -> set:
    """Targets of ``edges`` over the code points of ``ranges`` (-1: some are not covered)."""
    out = set()
    for lo, hi in ranges:
        pos = lo
        for a, b, t in edges:
            if b < pos or a > hi:
                continue
            if a > pos:
                out.add(-1)
            out.add(t)
            pos = b + 1
            if pos > hi:
                break
        if pos <= hi:
            out.add(-1)
    return out


def _covers(edges, ranges, target: int) -> bool:
    return _targets_over(edges, ranges) == {target}




def _classify_product(dfas: Sequence[Dfa]) -> Tuple[Dfa, List[FrozenSet[int]]]:
    """Product of ``dfas`` over all code points; each state is labelled with the set of
    component automata accepting there (the returned DFA's own accept flags are unused).
    Memoized by the automata's content (errors are not: they are raised again)."""
    if not all(memo_fits(d.n_states) for d in dfas):
        return _classify_product_uncached(dfas)
    key = tuple(d.content_key() for d in dfas)
    hit = _PRODUCTS.get(key)
    if hit is None:
        hit = _classify_product_uncached(dfas)
        memo_put(_PRODUCTS, key, hit)
    return hit


def _classify_product_uncached(dfas: Sequence[Dfa]) -> Tuple[Dfa, List[FrozenSet[int]]]:
    cuts: List[List[Tuple[int, int]]] = [list(UNICODE_SCALARS)]
    for d in dfas:
        for es in d.edges:
            cuts.append([(lo, hi) for lo, hi, _ in es])
    alphabet = [iv for iv in split_points(cuts) if not 0xD800 <= iv[0] <= 0xDFFF]
    start = tuple(0 for _ in dfas)
    # each component state's target on each alphabet interval (every edge covers whole
    # intervals), so a product state's moves are its rows read column by column
    if sum(d.n_states for d in dfas) * len(alphabet) > _MAX_ROW_CELLS:
        return _classify_product_by_steps(dfas, alphabet, start)
    los = [lo for lo, _ in alphabet]
    dead = (-1,) * len(alphabet)
    tables = []
    for d in dfas:
        rows = []
        for es in d.edges:
            row = list(dead)
            for lo, hi, t in es:
                i = bisect_left(los, lo)
                while i < len(los) and los[i] <= hi:
                    row[i] = t
                    i += 1
            rows.append(tuple(row))
        tables.append(rows)

    def moves(key):
        cols = zip(*[rows[q] if q >= 0 else dead for rows, q in zip(tables, key)])
        for (lo, hi), nxt in zip(alphabet, cols):
            yield lo, hi, nxt

    try:
        prod = dfa_explore(start, moves, lambda key: True)
    except GrammarLimitError:
        raise GrammarLimitError(f"pattern product exceeds {MAX_DFA_STATES} states") from None
    # the component states of each product state (states are numbered as discovered, so a
    # state's key is known before its own edges are read)
    index = {lo: i for i, lo in enumerate(los)}
    keys: List[Optional[tuple]] = [start] + [None] * (prod.n_states - 1)
    for q in range(prod.n_states):
        for lo, _, t in prod.edges[q]:
            if keys[t] is None:
                i = index[lo]
                keys[t] = tuple(rows[p][i] if p >= 0 else -1 for rows, p in zip(tables, keys[q]))
    return prod, _labels(dfas, keys)


_MAX_ROW_CELLS = 2_000_000  # (component states x intervals) tabulated; beyond, step by step


def _classify_product_by_steps(dfas, alphabet, start):
    def step(key, cp):
        return tuple(d.step(q, cp) if q >= 0 else -1 for d, q in zip(dfas, key))

    try:
        prod = dfa_from_step(start, step, lambda key: True, alphabet)
    except GrammarLimitError:
        raise GrammarLimitError(f"pattern product exceeds {MAX_DFA_STATES} states") from None
    keys = [start] + [None] * (prod.n_states - 1)
    for q in range(prod.n_states):
        for lo, _, t in prod.edges[q]:
            if keys[t] is None:
                keys[t] = step(keys[q], lo)
    return prod, _labels(dfas, keys)


def _labels(dfas, keys) -> List[FrozenSet[int]]:
    return [frozenset(j for j, q in enumerate(k) if q >= 0 and dfas[j].accept[q]) for k in keys]
