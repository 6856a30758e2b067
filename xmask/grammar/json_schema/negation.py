"""Symbolic negation of a schema: alternatives (atom sets) whose union is its complement.

Covers types, bounds, lengths, ``pattern``, exact ``format``s, ``const``/``enum`` (strings,
numbers, booleans, null), ``required``, ``properties``, ``additionalProperties: false``,
``items``, counts, ``allOf``, ``anyOf`` and ``not``; anything else is not negatable (None).
Negated keywords become synthetic schemas with private keywords (``\\x00kinds``,
``\\x00not_pattern``, ...) that the merge understands.

Example::

    >>> from .converter import Converter
    >>> from .layout import Layout
    >>> conv = Converter({"type": "string"}, Layout())
    >>> [sorted(conv.ctx.node(a[1])["\\x00kinds"]) for alt in conv.negation.negate(2) for a in alt]
    [['array', 'boolean', 'fraction', 'integer', 'null', 'object']]
"""

from __future__ import annotations

from typing import FrozenSet, List, Optional

from ...errors import UnsupportedSchemaError
from .numbers import to_fraction
from ..string_format import format_expr, format_superset_expr
from .atoms import AtomTable
from .context import Context
from .values import frac_json, is_num, kind_of
from .vocabulary import (
    ALL_KINDS, ANNOTATIONS, ARR, BOOL, FALSE, FRAC, INT, KNOWN_KEYWORDS, NULL, OBJ, STR, TYPE_KINDS,
)

__all__ = ["Negation"]


class Negation:
    """Negates schema nodes into alternatives of synthetic atom sets."""

    def __init__(self, ctx: Context, atoms: AtomTable):
        self.ctx = ctx
        self.doc = ctx.doc
        self.atoms = atoms
        self.neg_stack: set = set()  # nodes being negated (cycles through $ref)

    def negate(self, nid: int) -> Optional[List[FrozenSet]]:
        """Alternatives (atom sets) whose union is the complement of schema ``nid``; None if
        not expressible."""
        saved = self.atoms.origin
        self.atoms.origin = self.doc.nodes[nid][2]
        try:
            return self._negate(nid)
        finally:
            self.atoms.origin = saved

    def _negate(self, nid: int) -> Optional[List[FrozenSet]]:
        obj, base, p = self.doc.nodes[nid]
        if obj is True:
            return []
        if obj is False:
            return [frozenset()]
        alts: List[FrozenSet] = []
        if isinstance(obj.get("$ref"), str):
            try:
                t = self.doc.resolve(obj["$ref"], base, f"{p}/$ref")
            except UnsupportedSchemaError:
                return None
            if t == nid:
                return None
            sub = self._negate_guarded(t)
            if sub is None:
                return None
            alts += sub
            if self.doc.draft <= 7:
                return alts
        for k, v in obj.items():
            if k in ANNOTATIONS or k == "$ref":
                continue
            kp = f"{p}/{k}"
            part = self._negate_keyword(obj, k, v, base, kp)
            if part is None:
                if k not in KNOWN_KEYWORDS:
                    continue  # unknown keywords are annotations
                return None
            alts += part
        out = []
        seen = set()
        for a in alts:
            if FALSE in a or a in seen:
                continue
            seen.add(a)
            out.append(a)
        return out

    def kinds_atoms(self, kinds) -> FrozenSet:
        """The atoms of a synthetic schema admitting exactly the value ``kinds``."""
        ks = tuple(sorted(kinds))
        return self.atoms.synth_atoms(("kinds", ks), {"\x00kinds": list(ks)})

    def _with_kind(self, kinds, extra: dict, key) -> FrozenSet:
        ks = tuple(sorted(kinds))
        obj = dict(extra)
        obj["\x00kinds"] = list(ks)
        return self.atoms.synth_atoms(("kw", ks, key), obj)

    def _negate_keyword(self, obj, k, v, base, kp) -> Optional[List[FrozenSet]]:
        num = {INT, FRAC}
        if k == "type":
            types = v if isinstance(v, list) else [v]
            ks = set()
            for t in types:
                if t not in TYPE_KINDS:
                    return None
                ks |= TYPE_KINDS[t]
            rest = ALL_KINDS - ks
            return [self.kinds_atoms(rest)] if rest else []
        if k in ("enum", "const"):
            vals = v if k == "enum" else [v]
            if not isinstance(vals, list):
                return None
            kinds_present = {kind_of(x) for x in vals}
            out = [self.kinds_atoms(ALL_KINDS - kinds_present - ({INT, FRAC} if kinds_present & num else set()))]
            if NULL in kinds_present:
                pass
            if BOOL in kinds_present:
                rem = [b for b in (True, False) if not any(x is b for x in vals)]
                if rem:
                    out.append(self.atoms.synth_atoms(("const", tuple(rem)), {"enum": rem}))
            if STR in kinds_present:
                strs = tuple(sorted(x for x in vals if isinstance(x, str)))
                out.append(self._with_kind({STR}, {"\x00not_strings": list(strs)}, ("nstr", strs)))
            if kinds_present & num:
                points = sorted({to_fraction(x) for x in vals if is_num(x)})
                prev = None
                for pt in points + [None]:
                    extra = {}
                    if prev is not None:
                        extra["exclusiveMinimum"] = frac_json(prev)
                    if pt is not None:
                        extra["exclusiveMaximum"] = frac_json(pt)
                    out.append(self._with_kind(num, extra, ("nrange", prev, pt)))
                    prev = pt
            if kinds_present & {OBJ, ARR}:
                return None
            return [a for a in out if a]
        if k in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
            if isinstance(v, bool):
                return []
            if not is_num(v):
                return None
            excl_flag = obj.get("exclusive" + k[0].upper() + k[1:]) is True if k in ("minimum", "maximum") else True
            if k in ("minimum", "exclusiveMinimum"):
                extra = {"exclusiveMaximum" if not excl_flag else "maximum": v}
            else:
                extra = {"exclusiveMinimum" if not excl_flag else "minimum": v}
            # other kinds satisfy a numeric bound: the complement is numbers beyond it
            return [self._with_kind(num, extra, (k, v, excl_flag))]
        if k == "multipleOf":
            if not is_num(v):
                return None
            return [self._with_kind(num, {"\x00not_multiple": v}, ("nmult", v))]
        if k in ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"):
            if not is_num(v):
                return None
            c = int(v)
            kind = {"L": STR, "I": ARR, "P": OBJ}[k[3] if k.startswith("min") else k[3]]
            if k.startswith("min"):
                if c == 0:
                    return []
                return [self._with_kind({kind}, {"max" + k[3:]: c - 1}, (k, c))]
            return [self._with_kind({kind}, {"min" + k[3:]: c + 1}, (k, c))]
        if k == "pattern":
            return [self._with_kind({STR}, {"\x00not_pattern": v}, ("npat", v))]
        if k == "format":
            if format_expr(v) is None or format_superset_expr(v) is None:
                return None  # the complement of a restricted format would accept valid strings
            # strings outside a superset of the format (the format itself when exact)
            return [self._with_kind({STR}, {"\x00not_format": v}, ("nfmt", v))]
        if k == "required":
            if not isinstance(v, list):
                return None
            return [self._with_kind({OBJ}, {"properties": {name: False}}, ("absent", name)) for name in v]
        if k == "properties":
            if not isinstance(v, dict):
                return None
            out = []
            for name, s in v.items():
                if s is True:
                    continue
                nsub = {"not": s}
                out.append(self._with_kind({OBJ}, {"required": [name], "properties": {name: nsub}},
                                           ("nprop", name, id(s))))
                self.doc.keep.append(s)
            return out
        if k == "additionalProperties" and v is False:
            names = tuple(sorted(obj.get("properties") or {}))
            pats = tuple(sorted(obj.get("patternProperties") or {}))
            return [self._with_kind({OBJ}, {"\x00extra_key": [list(names), list(pats)]}, ("extra", names, pats))]
        if k in ("patternProperties",) and "additionalProperties" in obj:
            return None
        if k == "items" and isinstance(v, (dict, bool)) and "prefixItems" not in obj:
            if v is True:
                return []
            self.doc.keep.append(v)
            return [self._with_kind({ARR}, {"contains": {"not": v}}, ("nitems", id(v)))]
        if k == "not":
            sub = self.doc.nid(v, base, kp)
            return [self.atoms.flatten(sub)]
        if k == "allOf":
            out = []
            for i, s in enumerate(v):
                sub = self.doc.nid(s, base, f"{kp}/{i}")
                r = self._negate_guarded(sub)
                if r is None:
                    return None
                out += r
            return out
        if k == "anyOf":
            conj: set = set()
            for i, s in enumerate(v):
                sub = self.doc.nid(s, base, f"{kp}/{i}")
                r = self._negate_guarded(sub)
                if r is None:
                    return None
                conj |= self.atoms.disj_atoms(r) if r else {FALSE}
            return [frozenset(conj)]
        if k in ("if", "then", "else", "additionalItems", "minContains", "maxContains"):
            if k == "if" and ("then" in obj or "else" in obj):
                return None
            return []
        return None

    def _negate_guarded(self, nid: int) -> Optional[List[FrozenSet]]:
        if nid in self.neg_stack or len(self.neg_stack) > 50:
            return None
        self.neg_stack.add(nid)
        try:
            return self.negate(nid)
        finally:
            self.neg_stack.discard(nid)
