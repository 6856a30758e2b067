"""Arrays: ``prefixItems``/``items`` per position, item counts, ``contains`` with
``minContains``/``maxContains`` (count states), ``uniqueItems`` over small finite domains.

Item values are references to value rules (:meth:`.context.Context.value_ref`), generated
later by the converter's driver.

Example::

    >>> from .converter import Converter
    >>> from .layout import Layout
    >>> conv = Converter({"type": "array", "items": {"type": "null"}, "maxItems": 2}, Layout(False))
    >>> print(conv.run())
    root ::= "[" (root_item (", " root_item)? | "") "]"
    root_item ::= "null"
"""

from __future__ import annotations

from typing import Any, Dict, FrozenSet, List, Optional, Tuple

from ...errors import GrammarLimitError
from ..ir import EPSILON, Bytes, Expr, Repeat, RuleRef, make_choice, make_seq
from .atoms import AtomTable
from .context import Context
from .counting import counted
from .literals import Literals
from .merge import Merger
from .merged import Merged, without_contains
from .negation import Negation
from .validator import CannotValidate, FormatUnknown, Validator
from .values import canon
from .vocabulary import BOOL, FALSE, MAX_COUNT_BOUND, MAX_COUNT_STATES, NEVER, NULL

__all__ = ["Arrays"]


class Arrays:
    """Array grammars of merged schemas."""

    def __init__(self, ctx: Context, atoms: AtomTable, merger: Merger, negation: Negation,
                 validator: Validator, literals: Literals):
        self.ctx = ctx
        self.atoms = atoms
        self.merger = merger
        self.negation = negation
        self.validator = validator
        self.literals = literals

    def gen_array(self, m: Merged, depth: int, hint: str) -> Optional[Expr]:
        """The arrays of ``m`` (items per position, counts, ``contains``, ``uniqueItems``); None: none."""
        L = self.ctx.layout
        plen = max((len(u[0]) for u in m.arr_units if u[0] is not None), default=0)
        has_prefix = any(u[0] is not None for u in m.arr_units)

        def atoms_at(j: Optional[int]) -> FrozenSet:
            acc: set = set()
            for prefix, rest, _ in m.arr_units:
                if j is not None and prefix is not None and j < len(prefix):
                    acc |= self.atoms.flatten(prefix[j])
                elif rest is not None:
                    acc |= self.atoms.flatten(rest)
            if self.ctx.strict and has_prefix and not m.has_rest and (j is None or j >= plen):
                return frozenset((FALSE,))
            return frozenset(acc) if FALSE not in acc else frozenset((FALSE,))

        if m.unique is not None and (m.max_items is None or m.max_items > 1):
            e = self.gen_unique_array(m, depth, hint, atoms_at, plen) if not m.contains else False
            if e is not False:
                return e
            self.ctx.unsupported("uniqueItems is not enforced", m.unique)

        lo, hi = m.min_items, m.max_items
        rest_atoms = atoms_at(None)
        if FALSE in rest_atoms:
            hi = plen if hi is None else min(hi, plen)
        if hi is not None and hi < lo:
            return None
        if hi is not None and hi > MAX_COUNT_BOUND or lo > MAX_COUNT_BOUND:
            raise GrammarLimitError(f"array length bound above {MAX_COUNT_BOUND}", path=m.big.get("items"))
        contains = [(c, a, b, path) for c, a, b, path in m.contains if a > 0 or b is not None]
        if contains:
            return self.gen_array_contains(m, contains, plen, rest_atoms, lo, hi, depth, hint)
        d1 = depth + 1
        sep = L.sep(depth)
        npos = plen if hi is None else min(plen, hi)  # prefix positions that can be written
        items = [self.ctx.value_ref(atoms_at(j), d1, f"{hint}_{j}") for j in range(npos)]
        if npos == 0:
            # no prefix: rest (sep rest){lo'-1, hi-1} with lo' = max(lo, 1)
            body = None
            if hi is None or hi >= 1:
                rest_ref = self.ctx.value_ref(rest_atoms, d1, f"{hint}_item")
                if rest_ref is not None:
                    r_lo = max(lo, 1)
                    body = make_seq([rest_ref, counted(self.ctx, make_seq([sep, rest_ref]), r_lo - 1,
                                                       None if hi is None else hi - 1, f"{hint}_items")])
        else:
            # after all npos prefix elements
            if npos < plen or (hi is not None and hi <= plen):
                after: Optional[Expr] = EPSILON if lo <= npos else None
            else:
                rest_ref = self.ctx.value_ref(rest_atoms, d1, f"{hint}_item")
                r_lo = max(0, lo - plen)
                if rest_ref is None:
                    after = EPSILON if r_lo == 0 else None
                else:
                    after = counted(self.ctx, make_seq([sep, rest_ref]), r_lo, None if hi is None else hi - plen,
                                    f"{hint}_items")
            cur = after
            for j in range(npos - 1, -1, -1):
                item = items[j]
                take = None
                if item is not None and cur is not None:
                    take = make_seq([sep, item, cur]) if j > 0 else make_seq([item, cur])
                stop = EPSILON if (j > 0 and j >= lo) else None  # exactly j elements
                alts = [x for x in (take, stop) if x is not None]
                cur = make_choice(alts) if alts else None
            body = cur
        return self._brackets(body, lo == 0, depth)

    def gen_any_array(self, depth: int, hint: str) -> Expr:
        """:meth:`gen_array` of the merge of no keywords (the any-value rule that every
        schema with an unconstrained member or item has): the same expression and rule-table
        calls, without the steps that find nothing (no prefix, no counts, no contains)."""
        item = self.ctx.value_ref(frozenset(), depth + 1, f"{hint}_item")
        body = None
        if item is not None:
            # (what counted() gives for no bounds)
            body = make_seq([item, Repeat(make_seq([self.ctx.layout.sep(depth), item]), 0, None)])
        return self._brackets(body, True, depth)

    def _brackets(self, body: Optional[Expr], may_be_empty: bool, depth: int) -> Optional[Expr]:
        """``[`` items ``]`` for the item sequences ``body`` (None: none), or ``[]`` when
        ``may_be_empty``; None when neither."""
        L = self.ctx.layout
        alts = []
        if body is not None:
            alts.append(make_seq([L.open(depth), body, L.close(depth)]))
        if may_be_empty:
            alts.append(L.empty())
        if not alts:
            return None
        return make_seq([Bytes(b"["), make_choice(alts), Bytes(b"]")])

    def gen_unique_array(self, m: Merged, depth: int, hint: str, atoms_at, plen: int):
        """uniqueItems over small finite item domains (enum/const, booleans, null) at every
        position (``prefixItems`` and the rest): arrays of distinct values, one rule per set
        of used values (its size is the position).  False if not applicable."""
        values: List[Any] = []
        index: Dict[Any, int] = {}
        domains: List[int] = []  # bit set of the allowed values, per position 0..plen (plen: the rest)
        for j in list(range(plen)) + [None]:
            acc = atoms_at(j)
            bits = 0
            if FALSE not in acc:
                if any(a[0] != "own" for a in acc):
                    return False
                im = self.merger.merge(acc)
                if im.enum is not None:
                    cands = im.enum
                elif im.kinds <= {NULL, BOOL}:
                    cands = ([None] if NULL in im.kinds else []) + ([True, False] if BOOL in im.kinds else [])
                else:
                    return False
                for v in cands:
                    try:
                        ok = all(self.validator.validate(v, n, own_only=True) for n in im.nids)
                    except FormatUnknown:
                        ok = False  # dropping a value only rejects valid texts
                    except CannotValidate:
                        return False
                    if not ok:
                        continue
                    c = canon(v)
                    if c not in index:
                        if len(values) == 8:
                            return False
                        index[c] = len(values)
                        values.append(v)
                    bits |= 1 << index[c]
            domains.append(bits)
        lo, hi = m.min_items, m.max_items
        longest = plen + bin(domains[plen]).count("1")  # at most every value once after the prefix
        hi = longest if hi is None else min(hi, longest)
        if hi < lo:
            return None
        L = self.ctx.layout
        sep = L.sep(depth)
        lits = [self.literals.literal(v, depth + 1) for v in values]
        names: Dict[int, str] = {}
        todo: List[int] = []

        def ref(used: int) -> Expr:  # the array so far holds the values in ``used``
            if used not in names:
                names[used] = self.ctx.sink.fresh(f"{hint}_uniq{used}")
                self.ctx.rules[names[used]] = None
                todo.append(used)
            return RuleRef(names[used])

        start = ref(0)
        while todo:
            used = todo.pop()
            count = bin(used).count("1")
            alts = []
            if count and count >= lo:
                alts.append(EPSILON)
            if count < hi:
                allowed = domains[min(count, plen)] & ~used
                for i, lit in enumerate(lits):
                    if allowed & (1 << i):
                        alts.append(make_seq(([sep] if count else []) + [lit, ref(used | (1 << i))]))
            self.ctx.rules[names[used]] = make_choice(alts) if alts else NEVER
        alts = []
        if hi >= 1 and values:
            alts.append(make_seq([L.open(depth), start, L.close(depth)]))
        if lo == 0:
            alts.append(L.empty())
        return make_seq([Bytes(b"["), make_choice(alts), Bytes(b"]")]) if alts else None

    def gen_array_contains(self, m, contains, plen, rest_atoms, lo, hi, depth, hint) -> Optional[Expr]:
        """Arrays with ``contains`` counts: one rule per (items written, matches) state."""
        L = self.ctx.layout
        if len(contains) > 1 or plen > 0:
            self.ctx.unsupported("contains with prefixItems or several contains is not supported", contains[0][3])
            contains = contains[:1] if plen == 0 else []
            if not contains:
                return self.gen_array(without_contains(m), depth, hint)
        cnid, cmin, cmax, path = contains[0]
        if cmax is not None:
            neg = self.negation.negate(cnid)
            if neg is None:
                self.ctx.unsupported("maxContains is not enforced", path.rsplit("/", 1)[0] + "/maxContains")
                cmax = None
        d1 = depth + 1
        any_ref = self.ctx.value_ref(rest_atoms, d1, f"{hint}_item")
        yes_ref = self.ctx.value_ref(rest_atoms | self.atoms.flatten(cnid), d1, f"{hint}_match")
        no_ref = None
        if cmax is not None:
            no_atoms = rest_atoms | self.atoms.disj_atoms(self.negation.negate(cnid))
            no_ref = self.ctx.value_ref(no_atoms, d1, f"{hint}_nomatch")
        if cmax is not None and cmax < cmin:
            return None
        # states (n, k): n elements written (capped), k matches (capped)
        ncap = hi if hi is not None else max(lo, 1)
        kcap = cmax + 1 if cmax is not None else cmin
        if (ncap + 1) * (kcap + 1) > MAX_COUNT_STATES:
            raise GrammarLimitError("array count constraints need too many states",
                                    path=m.big.get("items", path))
        sep = L.sep(depth)
        names: Dict[Tuple[int, int], str] = {}

        def ref(n, k):
            if hi is not None and n > hi:
                return None
            n = min(n, ncap)
            if cmax is not None and k > cmax:
                return None
            k = min(k, kcap)
            key = (n, k)
            if key not in names:
                names[key] = self.ctx.sink.fresh(f"{hint}_c{n}_{k}")
                self.ctx.rules[names[key]] = None
                todo.append(key)
            return RuleRef(names[key])

        todo: List[Tuple[int, int]] = []
        start = ref(0, 0)
        while todo:
            n, k = todo.pop()
            alts = []
            if n >= max(lo, 1) and k >= cmin and (cmax is None or k <= cmax):
                alts.append(EPSILON)
            lead = [sep] if n > 0 else []
            nxt_yes = ref(n + 1, k + 1)
            if yes_ref is not None and nxt_yes is not None:
                alts.append(make_seq(lead + [yes_ref, nxt_yes]))
            other = no_ref if cmax is not None else any_ref
            nxt_no = ref(n + 1, k)
            if other is not None and nxt_no is not None:
                alts.append(make_seq(lead + [other, nxt_no]))
            self.ctx.rules[names[(n, k)]] = make_choice(alts) if alts else NEVER
        body = start
        alts = [make_seq([L.open(depth), body, L.close(depth)])]
        if lo == 0 and cmin == 0:
            alts.append(L.empty())
        return make_seq([Bytes(b"["), make_choice(alts), Bytes(b"]")])
