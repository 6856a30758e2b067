"""Keyword merging: the own keywords of an atom set combined into one :class:`.merged.Merged`
(types intersected, bounds tightened, ``properties`` combined per name, ...).

Atoms merge in document order (``AtomTable.order``), which fixes the order of object members.
``unevaluated*`` turns into ``additional*``-like units over the annotations of
:func:`.unevaluated.evaluated_subtree`.

Example::

    >>> from .converter import Converter
    >>> from .layout import Layout
    >>> conv = Converter({"allOf": [{"maximum": 5}, {"maximum": 3, "minimum": 1}]}, Layout())
    >>> m = conv.merger.merge(conv.atoms.flatten(conv.doc.nid(conv.doc.root)))
    >>> (m.lo, m.hi)
    (Fraction(1, 1), Fraction(3, 1))
"""

from __future__ import annotations

from typing import Dict, FrozenSet, List, Optional, Tuple

from ...errors import GrammarLimitError, UnsupportedSchemaError
from .numbers import to_fraction
from .atoms import AtomTable
from .context import Context
from .document import escape_pointer
from .merged import Merged, as_count
from .unevaluated import evaluated_subtree
from .values import canon, frac_lcm, is_num
from .vocabulary import ALL_KINDS, ARR, IGNORED, OBJ, STRUCTURAL, TYPE_KINDS

__all__ = ["Merger"]

#: count keywords: (the ``Merged`` attribute, the ``Merged.big`` entry, a lower bound)
_COUNT_KEYWORDS = {
    "minLength": ("min_len", "len", True), "maxLength": ("max_len", "len", False),
    "minItems": ("min_items", "items", True), "maxItems": ("max_items", "items", False),
    "minProperties": ("min_props", "props", True), "maxProperties": ("max_props", "props", False),
}


class Merger:
    """Merges atom sets (memoized per atom set; object units per node)."""

    def __init__(self, ctx: Context, atoms: AtomTable):
        self.ctx = ctx
        self.doc = ctx.doc
        self.atoms = atoms
        self.merge_memo: Dict[FrozenSet, Merged] = {}
        self.object_units: Dict[Tuple[int, bool], tuple] = {}  # see _merge_object
        self.merge_atoms: FrozenSet = frozenset()  # the atom set merge() is working on
        self.merge_proof = False  # merge() for a disjointness proof (see merge)

    def merge(self, atoms: FrozenSet, proof: bool = False) -> Merged:
        """The conjunction of the own atoms.  ``proof``: for disjointness proofs, which need
        a superset of the instances: ``unevaluated*`` (applied from an evaluated set that may
        be under-approximated) is left out."""
        key = (atoms, "proof") if proof else atoms
        hit = self.merge_memo.get(key)
        if hit is not None:
            return hit
        m = Merged()
        saved = self.merge_atoms, self.merge_proof
        self.merge_atoms, self.merge_proof = atoms, proof
        try:
            owns = [a[1] for a in atoms if a[0] == "own"]
            if len(owns) > 1:
                order = self.atoms.order
                owns.sort(key=lambda n: (order.get(n, 1 << 30), n))
            for n in owns:
                self._merge_node(m, n)
        finally:
            self.merge_atoms, self.merge_proof = saved
        self.merge_memo[key] = m
        return m

    def _merge_node(self, m: Merged, n: int) -> None:
        obj, base, p = self.doc.nodes[n]
        m.nids.append(n)
        doc = self.doc
        for k, v in obj.items():
            if k in STRUCTURAL or k in IGNORED:
                continue
            kp = f"{p}/{k}"
            if k == "type":
                types = v if isinstance(v, list) else [v]
                ks = set()
                for t in types:
                    if not isinstance(t, str) or t not in TYPE_KINDS:
                        if isinstance(t, str) and t == "any":
                            ks |= ALL_KINDS
                            continue
                        raise UnsupportedSchemaError(f"unknown type {t!r}", kp)
                    ks |= TYPE_KINDS[t]
                m.kinds &= ks
            elif k in ("enum", "const"):
                vals = v if k == "enum" else [v]
                if k == "enum" and not isinstance(v, list):
                    raise UnsupportedSchemaError("enum must be an array", kp)
                if len(vals) > self.ctx.limits.max_enum_values:
                    raise GrammarLimitError(f"enum with more than {self.ctx.limits.max_enum_values} values")
                if m.enum is None:
                    m.enum = list(vals)
                else:
                    keep = {canon(y) for y in vals}
                    m.enum = [x for x in m.enum if canon(x) in keep]
            elif k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                if isinstance(v, bool):
                    continue  # draft-4 flag, read with minimum/maximum below
                if not is_num(v):
                    raise UnsupportedSchemaError(f"{k} must be a number", kp)
                f = to_fraction(v)
                if k == "minimum":
                    m.tighten_lo(f, obj.get("exclusiveMinimum") is True)
                elif k == "maximum":
                    m.tighten_hi(f, obj.get("exclusiveMaximum") is True)
                elif k == "exclusiveMinimum":
                    m.tighten_lo(f, True)
                else:
                    m.tighten_hi(f, True)
            elif k in _COUNT_KEYWORDS:
                attr, what, lower = _COUNT_KEYWORDS[k]
                c, cur = as_count(v, kp, m, what), getattr(m, attr)
                setattr(m, attr, max(cur, c) if lower else c if cur is None else min(cur, c))
            elif k == "multipleOf":
                if not is_num(v) or v <= 0:
                    raise UnsupportedSchemaError("multipleOf must be a positive number", kp)
                f = to_fraction(v)
                m.mult = f if m.mult is None else frac_lcm(m.mult, f)
            elif k == "\x00not_multiple":
                m.not_mult.append(to_fraction(v))
            elif k == "pattern":
                if not isinstance(v, str):
                    raise UnsupportedSchemaError("pattern must be a string", kp)
                if (v, ) not in [(x,) for x, _ in m.patterns]:
                    m.patterns.append((v, kp))
            elif k == "\x00not_pattern":
                m.not_patterns.append((v, kp))
            elif k == "format":
                if isinstance(v, str):
                    m.formats.append((v, kp))
            elif k == "\x00not_format":
                m.not_formats.append((v, kp))
            elif k == "\x00not_strings":
                m.not_strings.extend(v)
            elif k == "\x00kinds":
                m.kinds &= set(v)
            elif k == "\x00extra_key":
                m.extra_keys.append((tuple(v[0]), tuple(v[1]), n))
            elif k in ("items", "prefixItems"):
                if k == "items" and "prefixItems" in obj:
                    continue  # read with prefixItems
                self._merge_items(m, obj, n, p)
            elif k == "contains":
                lo = obj.get("minContains", 1)
                hi = obj.get("maxContains")
                lo = as_count(lo, f"{p}/minContains", m, "items")
                hi = None if hi is None else as_count(hi, f"{p}/maxContains", m, "items")
                m.contains.append((doc.nid(v, base, kp), lo, hi, kp))
            elif k == "uniqueItems":
                if v is True:
                    m.unique = kp
            elif k in ("properties", "patternProperties", "additionalProperties", "unevaluatedProperties"):
                if k in ("patternProperties", "additionalProperties", "unevaluatedProperties") and "properties" in obj:
                    continue
                if k in ("additionalProperties", "unevaluatedProperties") and "patternProperties" in obj:
                    continue
                if k == "unevaluatedProperties" and "additionalProperties" in obj:
                    continue
                self._merge_object(m, obj, n, p)
            elif k == "unevaluatedItems":
                if any(x in obj for x in ("items", "prefixItems")):
                    continue
                self._merge_items(m, obj, n, p)
            elif k == "required":
                if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                    m.gated.append((OBJ, kp, "required must be an array of strings"))
                    continue
                for x in v:
                    m.required[x] = None
            elif k == "propertyNames":
                m.prop_names.append(doc.nid(v, base, kp))
            elif k in ("extends", "disallow", "divisibleBy"):
                m.gated.append((None, kp, f"draft-3 keyword {k} is not supported"))
            # anything else: unknown keywords are annotations
        # (locals: objects with many properties run this loop once per name)
        seen, declared, mentions = m.names, m.declared, m.mentions
        for key in ("properties", "required"):
            names = obj.get(key)
            if isinstance(names, (dict, list)):
                props = key == "properties"
                for name in names:
                    if isinstance(name, str):
                        seen.setdefault(name, mentions)
                        if props:
                            declared.setdefault(name, mentions)
                        mentions += 1
        m.mentions = mentions

    def _merge_items(self, m: Merged, obj, n: int, p: str) -> None:
        base = self.doc.nodes[n][1]
        prefix = None
        rest: Optional[int] = None
        has_rest = False
        if isinstance(obj.get("prefixItems"), list):
            prefix = [self.doc.nid(s, base, f"{p}/prefixItems/{i}") for i, s in enumerate(obj["prefixItems"])]
            if "items" in obj:
                rest, has_rest = self.doc.nid(obj["items"], base, f"{p}/items"), True
        elif isinstance(obj.get("items"), list):
            prefix = [self.doc.nid(s, base, f"{p}/items/{i}") for i, s in enumerate(obj["items"])]
            if "additionalItems" in obj:
                rest, has_rest = self.doc.nid(obj["additionalItems"], base, f"{p}/additionalItems"), True
        elif "items" in obj:
            rest, has_rest = self.doc.nid(obj["items"], base, f"{p}/items"), True
        if not has_rest and "unevaluatedItems" in obj:
            sub = None if self.merge_proof else evaluated_subtree(self.doc, n, self.merge_atoms, m)
            if self.merge_proof:
                has_rest = True  # left out: a superset
            elif sub is None:
                m.gated.append((ARR, f"{p}/unevaluatedItems",
                                "unevaluatedItems next to a dynamic reference is not supported"))
            else:
                # evaluated: indices below the longest prefixItems, items matching any contains,
                # everything when an in-place subschema has items/unevaluatedItems
                subs = [self.doc.nodes[k][0] for k in sub]
                width = len(prefix or ())
                contains = [obj["contains"]] if "contains" in obj else []
                vacuous = False
                for o in subs:
                    if isinstance(o.get("prefixItems"), list):
                        width = max(width, len(o["prefixItems"]))
                        vacuous |= "items" in o
                    elif isinstance(o.get("items"), list):
                        width = max(width, len(o["items"]))
                        vacuous |= "additionalItems" in o
                    else:
                        vacuous |= "items" in o
                    vacuous |= "unevaluatedItems" in o
                    if "contains" in o:
                        contains.append(o["contains"])
                has_rest = True
                if not vacuous:
                    if width > len(prefix or ()):
                        prefix = list(prefix or ()) + [self.doc.TRUE_NID] * (width - len(prefix or ()))
                    rest = self.doc.nid(obj["unevaluatedItems"], base, f"{p}/unevaluatedItems")
                    if contains and obj["unevaluatedItems"] is not True:
                        # items matching a "contains" are evaluated: the rest must match one of them
                        rest = self.atoms.synth(("uneval_or_contains", n),
                                                {"anyOf": contains + [obj["unevaluatedItems"]]})
        if has_rest:
            m.has_rest = True
        m.arr_units.append((prefix, rest, p))

    def _merge_object(self, m: Merged, obj, n: int, p: str) -> None:
        if "unevaluatedProperties" not in obj or "additionalProperties" in obj:
            # then the unit depends on the node (and merge_proof) only: built once per node, as
            # distributing disjunctions merges the same nodes into very many alternatives
            key = (n, self.merge_proof)
            hit = self.object_units.get(key)
            if hit is None:
                hit = self.object_units[key] = self._object_unit(m, obj, n, p)
        else:
            hit = self._object_unit(m, obj, n, p)
        unit, has_addl = hit
        if has_addl:
            m.has_addl = True
        m.obj_units.append(unit)

    def _object_unit(self, m: Merged, obj, n: int, p: str):
        """(the ``obj_units`` entry of the object keywords of node ``n``, whether it sets
        ``has_addl``); ``m`` is read (and its ``gated``/``uneval_approx`` set) only for
        ``unevaluatedProperties``."""
        base = self.doc.nodes[n][1]
        by_id = self.doc.by_id
        props: Dict[str, int] = {}
        pats: List[Tuple[str, int, str]] = []
        addl: Optional[int] = None
        has_addl = False
        pv = obj.get("properties")
        if isinstance(pv, dict):
            for name, s in pv.items():
                t = by_id.get(id(s)) if type(s) is dict else None  # (an indexed subschema)
                props[name] = t if t is not None else self.doc.nid(s, base, f"{p}/properties/{escape_pointer(name)}")
        pp = obj.get("patternProperties")
        if isinstance(pp, dict):
            for pat, s in pp.items():
                pats.append((pat, self.doc.nid(s, base, f"{p}/patternProperties/{escape_pointer(pat)}"),
                             f"{p}/patternProperties/{escape_pointer(pat)}"))
        if "additionalProperties" in obj:
            addl = self.doc.nid(obj["additionalProperties"], base, f"{p}/additionalProperties")
            has_addl = True
        elif "unevaluatedProperties" in obj and self.merge_proof:
            has_addl = True  # left out: a superset
        elif "unevaluatedProperties" in obj:
            sub = evaluated_subtree(self.doc, n, self.merge_atoms, m)
            if sub is None:
                m.gated.append((OBJ, f"{p}/unevaluatedProperties",
                                "unevaluatedProperties next to a dynamic reference is not supported"))
            else:
                # evaluated: the names and patterns of the in-place subschemas (which are merged
                # here too, with their own schemas), everything with additional/unevaluatedProperties
                subs = [self.doc.nodes[k] for k in sub]
                has_addl = True
                if not any("additionalProperties" in o or "unevaluatedProperties" in o for o, _, _ in subs):
                    for o, _, sp in subs:
                        for name in o.get("properties") or ():
                            props.setdefault(name, self.doc.TRUE_NID)
                        for pat in o.get("patternProperties") or ():
                            pats.append((pat, self.doc.TRUE_NID, f"{sp}/patternProperties/{escape_pointer(pat)}"))
                    addl = self.doc.nid(obj["unevaluatedProperties"], base, f"{p}/unevaluatedProperties")
        return (props, pats, addl, p), has_addl
