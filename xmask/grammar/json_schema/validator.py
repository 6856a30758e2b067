"""A reference JSON Schema validator over the indexed document.

Used where finitely many values decide a question: filtering ``enum``/``const`` candidates
against the other keywords of their location, and disjointness proofs.  It raises
:class:`CannotValidate` for what it cannot decide (the caller then falls back to the
structural construction) and :class:`FormatUnknown` for a string that a restricted format
grammar rejects but that may still be of the format.

Example::

    >>> from .converter import Converter
    >>> from .layout import Layout
    >>> conv = Converter({"type": "integer", "minimum": 3}, Layout())
    >>> [conv.validator.validate(v, 2) for v in (4, 2, 3.5)]
    [True, False, False]
"""

from __future__ import annotations

from typing import Any, Dict, FrozenSet

from .numbers import to_fraction
from ..string_format import EXACT_FORMATS, format_expr
from .atoms import AtomTable
from .context import Context
from .document import escape_pointer
from .merged import Merged
from .strings import Strings, any_string_dfa
from .unevaluated import in_place_applicators
from .values import canon, code_points, json_eq, kind_of
from .vocabulary import ANNOTATIONS, ARR, FRAC, INT, NUMERIC_FORMATS, OBJ, STR, STRUCTURAL, TYPE_KINDS

__all__ = ["Validator", "CannotValidate", "FormatUnknown"]


class CannotValidate(Exception):
    """The reference validator met a keyword it cannot evaluate."""

    def __init__(self, path: str, message: str):
        super().__init__(message)
        self.path = path
        self.message = message


class FormatUnknown(CannotValidate):
    """A string rejected by the grammar of a format that is a proper subset of the format
    (see ``EXACT_FORMATS``): it may still be valid.  Dropping the value is safe (a
    restriction); treating it as invalid anywhere else (under ``not``, in a disjointness
    proof) is not."""




class Validator:
    """Validates values against nodes (``validate``) and atom sets (``validate_atoms``)."""

    def __init__(self, ctx: Context, atoms: AtomTable, strings: Strings):
        self.ctx = ctx
        self.doc = ctx.doc
        self.atoms = atoms
        self.strings = strings
        self.enum_keys: Dict[int, Any] = {}  # id(enum list) -> (the list, its canon keys)

    def validate(self, v, nid: int, own_only: bool = False, _depth: int = 0) -> bool:
        """Reference validator (used for enum filtering and disjointness proofs)."""
        if _depth > 200:
            raise CannotValidate(self.ctx.ptr(nid), "schema recursion too deep to validate")
        obj, base, p = self.doc.nodes[nid]
        if obj is True:
            return True
        if obj is False:
            return False
        d = _depth + 1
        doc = self.doc
        if not own_only and isinstance(obj.get("$ref"), str):
            t = doc.resolve(obj["$ref"], base, f"{p}/$ref")
            if not self.validate(v, t, False, d):
                return False
            if doc.draft <= 7:
                return True
        kind = kind_of(v)
        for k, kv in obj.items():
            kp = f"{p}/{k}"
            if k in ANNOTATIONS or k in ("$ref", "minContains", "maxContains"):
                continue
            if own_only and k in STRUCTURAL:
                continue
            if k == "type":
                types = kv if isinstance(kv, list) else [kv]
                if not any(t == "any" or kind in TYPE_KINDS.get(t, ()) for t in types):
                    return False
            elif k == "\x00kinds":
                if kind not in kv:
                    return False
            elif k == "enum":
                if not isinstance(kv, list):
                    raise CannotValidate(kp, "enum must be an array")
                keys = self.enum_keys.get(id(kv))
                if keys is None:
                    keys = self.enum_keys[id(kv)] = (kv, {canon(x) for x in kv})
                if canon(v) not in keys[1]:
                    return False
            elif k == "const":
                if not json_eq(v, kv):
                    return False
            elif k == "\x00not_strings":
                if isinstance(v, str) and v in kv:
                    return False
            elif kind in (INT, FRAC) and k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                               "multipleOf", "\x00not_multiple"):
                if isinstance(kv, bool):
                    continue
                x, b = to_fraction(v), to_fraction(kv)
                if k == "minimum" and (x < b or (x == b and obj.get("exclusiveMinimum") is True)):
                    return False
                if k == "maximum" and (x > b or (x == b and obj.get("exclusiveMaximum") is True)):
                    return False
                if k == "exclusiveMinimum" and x <= b:
                    return False
                if k == "exclusiveMaximum" and x >= b:
                    return False
                if k == "multipleOf" and (x / b).denominator != 1:
                    return False
                if k == "\x00not_multiple" and (x / b).denominator == 1:
                    return False
            elif kind == STR and k in ("minLength", "maxLength", "pattern", "format", "\x00not_pattern",
                                       "\x00not_format"):
                if k == "minLength" and code_points(v) < kv:
                    return False
                if k == "maxLength" and code_points(v) > kv:
                    return False
                if k in ("pattern", "\x00not_pattern"):
                    if self.strings.regex_memo.get(kv, 0) is None or self.strings.regex(kv, kp) is None:
                        raise CannotValidate(kp, "pattern is not supported")
                    if self.strings.pattern_dfa(kv).matches(v) != (k == "pattern"):
                        return False
                if k in ("format", "\x00not_format"):
                    if kv in NUMERIC_FORMATS or format_expr(kv) is None:
                        raise CannotValidate(kp, f"unknown format {kv!r}")
                    # in the format if its grammar matches; not in it if a superset does not
                    if self.strings.format_dfa(kv).matches(v):
                        matched = True
                    elif kv in EXACT_FORMATS or not (self.strings.format_dfa(kv, superset=True)
                                                     or any_string_dfa()).matches(v):
                        matched = False
                    else:
                        raise FormatUnknown(kp, f"format {kv!r} cannot be decided for {v!r}")
                    if matched != (k == "format"):
                        return False
            elif kind in (INT, FRAC) and k == "format" and kv in NUMERIC_FORMATS:
                a, b = NUMERIC_FORMATS[kv]
                if a is not None and not (a <= v <= b):
                    return False
            elif kind == ARR and k in ("items", "prefixItems", "additionalItems", "minItems", "maxItems",
                                       "contains", "uniqueItems", "unevaluatedItems"):
                if not self._validate_array(v, obj, k, kv, base, kp, d):
                    return False
            elif kind == OBJ and k in ("properties", "patternProperties", "additionalProperties", "required",
                                       "minProperties", "maxProperties", "propertyNames", "dependentRequired",
                                       "dependentSchemas", "dependencies", "unevaluatedProperties"):
                if not self._validate_object(v, obj, k, kv, base, kp, d):
                    return False
            elif k == "allOf":
                if not all(self.validate(v, doc.nid(s, base, f"{kp}/{i}"), False, d) for i, s in enumerate(kv)):
                    return False
            elif k == "anyOf":
                if not any(self.validate(v, doc.nid(s, base, f"{kp}/{i}"), False, d) for i, s in enumerate(kv)):
                    return False
            elif k == "oneOf":
                if sum(1 for i, s in enumerate(kv) if self.validate(v, doc.nid(s, base, f"{kp}/{i}"), False, d)) != 1:
                    return False
            elif k == "not":
                if self.validate(v, doc.nid(kv, base, kp), False, d):
                    return False
            elif k == "if":
                cond = self.validate(v, doc.nid(kv, base, kp), False, d)
                branch = "then" if cond else "else"
                if branch in obj and not self.validate(v, doc.nid(obj[branch], base, f"{p}/{branch}"), False, d):
                    return False
            elif k in ("$dynamicRef", "$recursiveRef", "extends", "disallow", "divisibleBy"):
                raise CannotValidate(kp, f"{k} is not supported")
        return True

    def _validate_array(self, v, obj, k, kv, base, kp, d) -> bool:
        doc = self.doc
        if k == "minItems":
            return len(v) >= kv
        if k == "maxItems":
            return len(v) <= kv
        if k == "uniqueItems":
            if kv is True:
                for i in range(len(v)):
                    for j in range(i + 1, len(v)):
                        if json_eq(v[i], v[j]):
                            return False
            return True
        if k == "contains":
            n = sum(1 for x in v if self.validate(x, doc.nid(kv, base, kp), False, d))
            lo = obj.get("minContains", 1)
            hi = obj.get("maxContains")
            return n >= lo and (hi is None or n <= hi)
        if k == "prefixItems":
            return all(self.validate(x, doc.nid(s, base, f"{kp}/{i}"), False, d) for i, (x, s) in enumerate(zip(v, kv)))
        if k == "items":
            if isinstance(kv, list):
                return all(self.validate(x, doc.nid(s, base, f"{kp}/{i}"), False, d)
                           for i, (x, s) in enumerate(zip(v, kv)))
            start = len(obj["prefixItems"]) if isinstance(obj.get("prefixItems"), list) else 0
            sub = doc.nid(kv, base, kp)
            return all(self.validate(x, sub, False, d) for x in v[start:])
        if k == "additionalItems":
            if isinstance(obj.get("items"), list):
                sub = doc.nid(kv, base, kp)
                return all(self.validate(x, sub, False, d) for x in v[len(obj["items"]):])
            return True
        if k == "unevaluatedItems":
            if in_place_applicators(obj):
                raise CannotValidate(kp, "unevaluatedItems is not supported")
            if "items" in obj and not isinstance(obj["items"], list):
                return True
            start = len(obj.get("prefixItems") or (obj["items"] if isinstance(obj.get("items"), list) else []))
            sub = doc.nid(kv, base, kp)
            evaluated = doc.nid(obj["contains"], base, f"{kp[:-len('unevaluatedItems')]}contains") \
                if "contains" in obj else None
            return all(self.validate(x, sub, False, d) or
                       (evaluated is not None and self.validate(x, evaluated, False, d)) for x in v[start:])
        return True

    def _validate_object(self, v, obj, k, kv, base, kp, d) -> bool:
        doc = self.doc
        if k == "required":
            return all(x in v for x in kv) if isinstance(kv, list) else True
        if k == "minProperties":
            return len(v) >= kv
        if k == "maxProperties":
            return len(v) <= kv
        if k == "properties":
            return all(self.validate(v[name], doc.nid(s, base, f"{kp}/{escape_pointer(name)}"), False, d)
                       for name, s in kv.items() if name in v)
        if k == "patternProperties":
            for pat, s in kv.items():
                ppath = f"{kp}/{escape_pointer(pat)}"
                dfa = self.strings.pattern_dfa_or_none(pat, ppath)
                if dfa is None:
                    raise CannotValidate(ppath, "pattern is not supported")
                for name, x in v.items():
                    if dfa.matches(name) and not self.validate(x, doc.nid(s, base, ppath), False, d):
                        return False
            return True
        if k in ("additionalProperties", "unevaluatedProperties"):
            if k == "unevaluatedProperties":
                if in_place_applicators(obj):
                    raise CannotValidate(kp, "unevaluatedProperties is not supported")
                if "additionalProperties" in obj:
                    return True
            props = obj.get("properties") or {}
            pats = []
            for pat in (obj.get("patternProperties") or {}):
                dfa = self.strings.pattern_dfa_or_none(pat, f"{kp}")
                if dfa is None:
                    raise CannotValidate(kp, "pattern is not supported")
                pats.append(dfa)
            sub = doc.nid(kv, base, kp)
            for name, x in v.items():
                if name in props or any(p.matches(name) for p in pats):
                    continue
                if not self.validate(x, sub, False, d):
                    return False
            return True
        if k == "propertyNames":
            sub = doc.nid(kv, base, kp)
            return all(self.validate(name, sub, False, d) for name in v)
        if k in ("dependentRequired", "dependentSchemas", "dependencies"):
            for name, dep in kv.items():
                if name not in v:
                    continue
                if isinstance(dep, list):
                    if not all(x in v for x in dep):
                        return False
                elif not self.validate(v, doc.nid(dep, base, f"{kp}/{escape_pointer(name)}"), False, d):
                    return False
            return True
        return True

    def validate_atoms(self, v, atoms: FrozenSet) -> bool:
        """Validate a value against a conjunction of atoms (reference semantics)."""
        doc = self.doc
        for a in sorted(atoms, key=lambda a: a[0] != "own"):
            kind = a[0]
            if kind == "false":
                return False
            if kind == "chose":
                continue
            if kind == "own":
                ok = self.validate(v, a[1], own_only=True)
            elif kind == "alt":
                ok = any(self.validate_atoms(v, alt) for alt in self.atoms.synth_alts[a[1]])
            else:
                obj, base, p = doc.nodes[a[1]]
                if kind == "anyOf":
                    ok = any(self.validate(v, doc.nid(x, base, f"{p}/anyOf/{i}")) for i, x in enumerate(obj["anyOf"]))
                elif kind == "oneOf":
                    ok = sum(1 for i, x in enumerate(obj["oneOf"])
                             if self.validate(v, doc.nid(x, base, f"{p}/oneOf/{i}"))) == 1
                elif kind == "not":
                    ok = not self.validate(v, doc.nid(obj["not"], base, f"{p}/not"))
                elif kind == "if":
                    cond = self.validate(v, doc.nid(obj["if"], base, f"{p}/if"))
                    br = "then" if cond else "else"
                    ok = br not in obj or self.validate(v, doc.nid(obj[br], base, f"{p}/{br}"))
                elif kind == "dep":
                    _, _, k, name = a
                    dep = obj[k][name]
                    if not isinstance(v, dict) or name not in v:
                        ok = True
                    elif isinstance(dep, list):
                        ok = all(x in v for x in dep)
                    else:
                        ok = self.validate(v, doc.nid(dep, base, f"{p}/{k}/{escape_pointer(name)}"))
                else:
                    raise AssertionError(kind)
            if not ok:
                return False
        return True

    def enum_value_ok(self, v, m: Merged) -> bool:
        """Whether the ``enum``/``const`` candidate ``v`` satisfies the other keywords of
        ``m`` (a value that cannot be validated is kept, reported in lenient mode)."""
        try:
            return all(self.validate(v, n, own_only=True) for n in m.nids)
        except FormatUnknown:
            return False  # dropping a value only rejects valid texts
        except CannotValidate as e:
            self.ctx.unsupported(e.message, e.path)
            return True
