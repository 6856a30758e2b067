"""Disjointness proofs: a sound, partial test that no instance satisfies two atom sets (used
to make ``oneOf`` exact without negating its branches).

Kinds, ``const``/``enum`` values, numeric ranges, string automata, counts, and a required
property with disjoint values or forbidden by the other side.  Proofs merge with
``proof=True`` (``unevaluated*`` left out: a superset).

Example::

    >>> from .converter import Converter
    >>> from .layout import Layout
    >>> conv = Converter({"oneOf": [{"type": "string"}, {"minimum": 1, "type": "integer"}]}, Layout())
    >>> a, b = (conv.atoms.flatten(conv.doc.nid(s)) for s in conv.doc.root["oneOf"])
    >>> conv.disjointness.disjoint(a, b, 3)
    True
"""

from __future__ import annotations

from typing import FrozenSet

from ...errors import GrammarLimitError, UnsupportedSchemaError
from ..code_point_dfa import dfa_product
from .keys import Keys
from .merge import Merger
from .merged import Merged
from .strings import Strings
from .validator import CannotValidate, Validator
from .values import kind_of
from .vocabulary import ARR, BOOL, FALSE, FRAC, INT, NULL, OBJ, STR

__all__ = ["Disjointness", "counts_disjoint", "ranges_disjoint"]


class Disjointness:
    """Proves atom sets disjoint."""

    def __init__(self, merger: Merger, validator: Validator, strings: Strings, keys: Keys):
        self.merger = merger
        self.validator = validator
        self.strings = strings
        self.keys = keys

    def disjoint(self, a: FrozenSet, b: FrozenSet, budget: int) -> bool:
        """True only if no instance satisfies both atom sets (a sound, partial test)."""
        if FALSE in a or FALSE in b:
            return True
        ma = self.merger.merge(frozenset(x for x in a if x[0] == "own"), proof=True)
        mb = self.merger.merge(frozenset(x for x in b if x[0] == "own"), proof=True)
        ka, kb = self._value_kinds(ma), self._value_kinds(mb)
        common = ka & kb
        if not common:
            return True
        try:
            if ma.enum is not None:
                if not any(self._valid_atoms(v, ma) and self._valid_atoms(v, mb) for v in ma.enum):
                    return True
            if mb.enum is not None:
                if not any(self._valid_atoms(v, ma) and self._valid_atoms(v, mb) for v in mb.enum):
                    return True
        except CannotValidate:
            pass
        if ma.enum is not None or mb.enum is not None:
            # enumerated values: only the value checks above can decide
            return False
        for k in common:
            if k in (NULL, BOOL):
                return False
            if k in (INT, FRAC):
                if not ranges_disjoint(ma, mb):
                    return False
            elif k == STR:
                if not self._strings_disjoint(ma, mb):
                    return False
            elif k in (OBJ, ARR) and (ma.uneval_approx or mb.uneval_approx):
                return False  # stricter than the schema there: no proof may rely on it
            elif k == OBJ:
                if budget <= 0 or not self._objects_disjoint(ma, mb, budget - 1):
                    return False
            elif k == ARR:
                if not counts_disjoint(ma.min_items, ma.max_items, mb.min_items, mb.max_items):
                    return False
        return True

    def _value_kinds(self, m: Merged) -> set:
        if m.enum is not None:
            return {kind_of(v) for v in m.enum} & m.kinds
        return set(m.kinds)

    def _valid_atoms(self, v, m: Merged) -> bool:
        return all(self.validator.validate(v, n, own_only=True) for n in m.nids)

    def _strings_disjoint(self, ma: Merged, mb: Merged) -> bool:
        if counts_disjoint(ma.min_len, ma.max_len, mb.min_len, mb.max_len):
            return True
        if not (ma.patterns or ma.formats or mb.patterns or mb.formats):
            return False
        try:
            da = self.strings.proof_dfa(ma)
            db = self.strings.proof_dfa(mb)
            if da is None or db is None:
                return False
            return dfa_product(da, db, "and").is_empty()
        except (GrammarLimitError, UnsupportedSchemaError):
            return False

    def _objects_disjoint(self, ma: Merged, mb: Merged, budget: int) -> bool:
        if counts_disjoint(ma.min_props, ma.max_props, mb.min_props, mb.max_props):
            return True
        names = set(ma.required) | set(mb.required)
        for name in sorted(names):
            pa, pb = self.keys.prop_atoms(ma, name), self.keys.prop_atoms(mb, name)
            ra, rb = name in ma.required, name in mb.required
            if ra and FALSE in pb or rb and FALSE in pa:
                return True
            if ra and rb and self.disjoint(pa, pb, budget):
                return True
        return False


def counts_disjoint(alo, ahi, blo, bhi) -> bool:
    """Whether the count ranges [alo, ahi] and [blo, bhi] (None: unbounded) are disjoint."""
    return (ahi is not None and ahi < blo) or (bhi is not None and bhi < alo)


def ranges_disjoint(a: Merged, b: Merged) -> bool:
    """Whether the numeric bounds of ``a`` and ``b`` leave no common number."""
    def below(hi, hi_x, lo, lo_x):  # every value <= hi is < lo
        if hi is None or lo is None:
            return False
        return hi < lo or (hi == lo and (hi_x or lo_x))
    return below(a.hi, a.hi_x, b.lo, b.lo_x) or below(b.hi, b.hi_x, a.lo, a.lo_x)
