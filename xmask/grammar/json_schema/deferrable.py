"""Which queued value rules a lazy conversion may leave for later (issue 10: a lazy front end).

A conversion queues one value rule per (atom set, depth) (:meth:`.context.Context.value_ref`)
and generates them in order (:meth:`.converter.Converter.drain`).  A compile that wants its first
mask soon needs only the rules the first tokens reach, but the rules it does build depend on the
others in two ways that must hold before any mask is given out:

* **productivity**: a member whose value no JSON text satisfies is left out of its object by the
  automaton's pruning, and an object requiring such a member has no value at all; a rule left for
  later must therefore be known to have some value;
* **errors and reports**: a schema that cannot be converted (``UnsupportedSchemaError``), and in
  lenient mode every loosening, must be reported by the compile, not by a later fill.

:func:`deferrable` answers both conservatively, from the schema nodes alone (no conversion, no
side effect on the conversion's state): True only for atom sets whose constraints are a few
plain keywords (types, length and count bounds, plain numeric bounds, enums of scalars,
``properties`` / ``required`` / ``additionalProperties`` / ``items``, ``false``, a known string
``format`` with no enum, const, maxLength or longer minLength than its shortest strings beside
it, a small OpenAPI numeric format on numbers) that have a value, and whose
nested schemas use only such keywords too.  Anything else is False: converted at once, as before.
Compile limits (rule counts, the deadline) can still be passed by a deferred rule; whoever builds
it later reports them.

Example::

    >>> from .converter import Converter
    >>> from .layout import Layout
    >>> conv = Converter({"type": "object", "properties": {"a": {"type": "string"},
    ...                   "b": {"type": "string", "minLength": 3, "maxLength": 1}}}, Layout())
    >>> check = Deferrable(conv.ctx)
    >>> a = conv.atoms.flatten(conv.doc.nid(conv.doc.root["properties"]["a"]))
    >>> b = conv.atoms.flatten(conv.doc.nid(conv.doc.root["properties"]["b"]))
    >>> check.deferrable(a, 1), check.deferrable(b, 1)
    (True, False)
"""

from __future__ import annotations

import math
from typing import Dict, FrozenSet, Optional, Tuple

from ...errors import XmaskError
from ..expr_length import format_min_code_points
from ..string_format import KNOWN_FORMATS
from .context import Context
from .vocabulary import (ANNOTATIONS, COMPANIONS, KNOWN_KEYWORDS, MAX_ANY_ORDER_PROPERTIES,
                         MAX_COUNT_BOUND, MAX_INDENT_DEPTH, NUMERIC_FORMATS)

__all__ = ["Deferrable"]

# the keywords a deferrable schema may use (beyond annotations and unknown keywords, which the
# converter ignores; the document already checked every keyword's type when it was indexed)
_PLAIN = frozenset(("type", "enum", "const", "minimum", "maximum", "minLength", "maxLength",
                    "items", "minItems", "maxItems", "properties", "required",
                    "additionalProperties", "$ref", "format"))
# a format the converter knows, alone on its node's strings (no maxLength, enum or const
# beside it, a minLength only if no string of the format is shorter): the converter takes its
# fixed, non-empty grammar as it is
_KNOWN_FORMATS = frozenset(KNOWN_FORMATS)
_NOT_WITH_FORMAT = ("maxLength", "enum", "const")
# OpenAPI numeric formats whose bounds are plain ones (within _SAFE_INT)
_SMALL_NUMERIC_FORMATS = frozenset(("int8", "int16", "int32", "uint8", "uint16", "uint32", "float",
                                    "double"))
_CONSTRAINING = KNOWN_KEYWORDS - ANNOTATIONS - COMPANIONS
_TYPE_NAMES = frozenset(("null", "boolean", "object", "array", "string", "integer", "number"))
# bounds within which the converter builds lengths and counts without an error: past
# MAX_COUNT_BOUND it refuses them (GrammarLimitError), within it a long bound only takes a
# chunked form (counting.py, strings.counted_chars), which raises nothing but compile limits
_MAX_LENGTH = MAX_COUNT_BOUND
_MAX_ITEMS = MAX_COUNT_BOUND
_MAX_DEPTH = 24  # nesting a check follows before it gives up (not deferred)
_SAFE_INT = 1 << 53


class Deferrable:
    """The checks of one conversion (memoized per schema node; no effect on the conversion)."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.doc = ctx.doc
        # lenient mode reports loosenings as it meets them and ``excludes`` (structural tags)
        # forbid substrings: neither is deferred (their reports and proofs need the whole walk)
        self.enabled = not ctx.lenient and not ctx.excludes
        self._plain: Dict[int, bool] = {}
        self._sat: Dict[Tuple[int, int], bool] = {}

    def deferrable(self, atoms: FrozenSet, depth: int) -> bool:
        """Whether the value rule of ``atoms`` (at ``depth``) may be generated later: it has a
        value and its conversion reports nothing and raises nothing (see the module doc)."""
        if not self.enabled:
            return False
        node = self._single(atoms)
        if node is None:
            return False
        try:
            return self._plain_tree(node, 0) and self._has_value(node, depth, 0)
        except (XmaskError, RecursionError):
            return False

    # ---- one constraining node per location -----------------------------------------------

    def _single(self, atoms: FrozenSet) -> Optional[int]:
        """The one node whose keywords constrain ``atoms`` (the TRUE node when none does), or
        None when ``atoms`` are not that simple (disjunctions, merges, ``false``)."""
        found = self.doc.TRUE_NID
        for a in atoms:
            if a[0] != "own":
                return None
            if found != self.doc.TRUE_NID:
                return None  # two constraining nodes: a merge
            found = a[1]
        return found

    def _target(self, nid: int) -> Optional[int]:
        """The node constraining the values at schema node ``nid`` (``$ref`` followed), the
        TRUE node for no constraint, None when that is not a single plain node."""
        for _ in range(_MAX_DEPTH):
            obj, base, ptr = self.doc.nodes[nid]
            if obj is True:
                return self.doc.TRUE_NID
            if obj is False or not isinstance(obj, dict):
                return None
            ref = obj.get("$ref")
            if ref is None:
                return nid if not _CONSTRAINING.isdisjoint(obj) else self.doc.TRUE_NID
            if not isinstance(ref, str) or (self.doc.draft > 7 and not _CONSTRAINING.isdisjoint(
                    k for k in obj if k != "$ref")):
                return None  # 2019-09+: $ref beside other keywords is a merge
            nid = self.doc.resolve(ref, base, f"{ptr}/$ref")
        return None

    def _sub(self, nid: int, sub) -> int:
        """The node id of ``sub``, a schema nested in node ``nid`` (indexed with the document:
        a lookup)."""
        return self.doc.nid(sub, self.doc.nodes[nid][1])

    # ---- no report, no error: every nested schema plain ----------------------------------

    def _plain_tree(self, nid: int, level: int) -> bool:
        """Whether the node and every schema nested in it (through ``properties``,
        ``additionalProperties``, ``items`` and ``$ref``) use only plain keywords.  A cycle is
        plain when each node on it is (nothing on it can raise)."""
        hit = self._plain.get(nid)
        if hit is not None:
            return hit
        if level > _MAX_DEPTH:
            return False
        self._plain[nid] = True  # assumed while its subschemas are checked (cycles)
        ok = self._plain_node(nid, level)
        self._plain[nid] = ok
        if not ok:
            # a node assumed plain during the walk may have been cached on that assumption
            self._plain = {k: v for k, v in self._plain.items() if not v}
        return ok

    def _plain_node(self, nid: int, level: int) -> bool:
        obj = self.doc.nodes[nid][0]
        if obj is True or obj is False:
            return True  # (``false`` raises nothing: whether it leaves a value is _has_value's)
        if not isinstance(obj, dict):
            return False
        if not _PLAIN.issuperset(k for k in obj if k in _CONSTRAINING):
            return False
        if "$ref" in obj:
            t = self._target(nid)
            if t is None or (t != nid and not self._plain_tree(t, level + 1)):
                return False
        if not self._plain_values(obj):
            return False
        props = obj.get("properties")
        if props is not None:
            if not isinstance(props, dict):
                return False
            if self.ctx.any_order and len(props) > MAX_ANY_ORDER_PROPERTIES:
                return False  # reported as restricted
            for sub in props.values():
                if not isinstance(sub, (dict, bool)) or not self._plain_tree(self._sub(nid, sub),
                                                                             level + 1):
                    return False
        for key in ("additionalProperties", "items"):
            if key in obj:
                if not isinstance(obj[key], (dict, bool)):
                    return False  # (the list form of items: tuples, not plain)
                if not self._plain_tree(self._sub(nid, obj[key]), level + 1):
                    return False
        return True

    def _plain_values(self, obj: dict) -> bool:
        """Keyword values the converter takes without a limit or a chunked form."""
        t = obj.get("type")
        names = None
        if t is not None:
            names = [t] if isinstance(t, str) else t
            if not isinstance(names, list) or not names or not _TYPE_NAMES.issuperset(names):
                return False
        if "format" in obj and not _plain_format(obj, names if t is not None else None):
            return False
        for k in ("minLength", "maxLength"):
            if k in obj and not _count(obj[k], _MAX_LENGTH):
                return False
        for k in ("minItems", "maxItems"):
            if k in obj and not _count(obj[k], _MAX_ITEMS):
                return False
        for k in ("minimum", "maximum"):
            if k in obj and not _number(obj[k]):
                return False
        if "enum" in obj:
            e = obj["enum"]
            if not isinstance(e, list) or not e or not all(_scalar(v) for v in e):
                return False
        if "const" in obj and not _scalar(obj["const"]):
            return False
        req = obj.get("required")
        if req is not None and not (isinstance(req, list) and all(isinstance(r, str) for r in req)):
            return False
        return True

    # ---- some value exists (least fixpoint: a node on a cycle is not assumed) --------------

    def _has_value(self, nid: int, depth: int, level: int) -> bool:
        key = (nid, depth)
        hit = self._sat.get(key)
        if hit is not None:
            return hit
        if level > _MAX_DEPTH:
            return False
        self._sat[key] = False  # on a cycle: not proven (a required self-reference has no value)
        # (answers found under that assumption can only be too pessimistic: they stay cached)
        ok = self._sat[key] = self._node_has_value(nid, depth, level)
        return ok

    def _node_has_value(self, nid: int, depth: int, level: int) -> bool:
        obj = self.doc.nodes[nid][0]
        if obj is True or obj is False:
            return obj
        if "$ref" in obj:
            t = self._target(nid)
            return t is not None and self._has_value(t, depth, level + 1)
        t = obj.get("type")
        types = set(_TYPE_NAMES if t is None else ([t] if isinstance(t, str) else t))
        if "enum" in obj or "const" in obj:
            members = [obj["const"]] if "const" in obj else obj["enum"]
            if "const" in obj and "enum" in obj:
                return False
            if set(obj).intersection(_CONSTRAINING) - {"type", "enum", "const"}:
                return False  # a member must also meet the bounds: not checked here
            return any(_kind(v) & types for v in members)
        if "null" in types or "boolean" in types:
            return True
        if "string" in types and obj.get("minLength", 0) <= obj.get("maxLength", _MAX_LENGTH):
            return True
        lo, hi = obj.get("minimum"), obj.get("maximum")
        if obj.get("format") in NUMERIC_FORMATS:  # (on a schema that cannot be a string: plain)
            a, b = NUMERIC_FORMATS[obj["format"]]
            lo = a if lo is None or (a is not None and a > lo) else lo
            hi = b if hi is None or (b is not None and b < hi) else hi
        if "number" in types and (lo is None or hi is None or lo <= hi):
            return True
        if "integer" in types and (lo is None or hi is None or math.ceil(lo) <= math.floor(hi)):
            return True
        if "array" in types and self._array_has_value(obj, nid, depth, level):
            return True
        return "object" in types and self._object_has_value(obj, nid, depth, level)

    def _array_has_value(self, obj: dict, nid: int, depth: int, level: int) -> bool:
        lo, hi = obj.get("minItems", 0), obj.get("maxItems")
        if hi is not None and hi < lo:
            return False
        if lo == 0:
            return True
        if "items" not in obj:
            return self._depth_ok(depth)
        return self._depth_ok(depth) and self._has_value(self._sub(nid, obj["items"]),
                                                         depth + 1, level + 1)

    def _object_has_value(self, obj: dict, nid: int, depth: int, level: int) -> bool:
        required = obj.get("required", [])
        if not required:
            return True
        props = obj.get("properties") or {}
        if not self._depth_ok(depth):
            return False
        for name in dict.fromkeys(required):
            if name not in props:
                return False  # from additionalProperties, or closed in strict mode: not proven
            if not self._has_value(self._sub(nid, props[name]), depth + 1, level + 1):
                return False
        return True

    def _depth_ok(self, depth: int) -> bool:
        # with an indent, values nested deeper than MAX_INDENT_DEPTH are not generated
        return not self.ctx.layout.depth_matters or depth + 1 <= MAX_INDENT_DEPTH - 1


def _plain_format(obj: dict, types) -> bool:
    """Whether the ``format`` of ``obj`` (whose ``type`` names are ``types``, None for any)
    converts without a report or an error, and leaves a value beside a ``minLength``."""
    fmt = obj["format"]
    if not isinstance(fmt, str):
        return False
    if types is None or "string" in types:
        # a string format alone, or with a minLength its strings always meet (then dropped)
        if fmt not in _KNOWN_FORMATS or any(k in obj for k in _NOT_WITH_FORMAT):
            return False
        lo = obj.get("minLength", 0)
        return lo == 0 or (type(lo) is int and lo <= format_min_code_points(fmt))
    # not a string: a numeric format bounds the numbers (a small one: plain bounds), any
    # other format is ignored
    return fmt not in NUMERIC_FORMATS or fmt in _SMALL_NUMERIC_FORMATS


def _count(v, cap: int) -> bool:
    return type(v) is int and 0 <= v <= cap


def _number(v) -> bool:
    return (type(v) is int and -_SAFE_INT < v < _SAFE_INT) or (type(v) is float and math.isfinite(v))


def _scalar(v) -> bool:
    return v is None or type(v) is bool or type(v) is str or _number(v)


def _kind(v) -> set:
    """The ``type`` names a scalar enum member satisfies."""
    if v is None:
        return {"null"}
    if type(v) is bool:
        return {"boolean"}
    if type(v) is str:
        return {"string"}
    if type(v) is int or float(v).is_integer():
        return {"integer", "number"}
    return {"number"}
