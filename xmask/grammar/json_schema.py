"""JSON Schema -> grammar IR, with exact JSON Schema semantics or a clear error.

Entry points: :func:`json_schema_to_grammar` and :func:`json_schema_to_grammar_with_report`.

Semantics
---------
The grammar accepts a JSON text iff it is valid against the schema (draft 2020-12, plus the
draft-4/6/7 forms ``items: [...]``/``additionalItems``, ``definitions``, ``dependencies``,
boolean ``exclusiveMinimum``/``exclusiveMaximum`` and ``id``), except for the documented
*restrictions* below, which only ever reject valid texts.  Whatever cannot be enforced
exactly raises :class:`~xmask.errors.UnsupportedSchemaError` naming the JSON pointer of the
keyword; with ``lenient=True`` the keyword is dropped instead (a *loosening*) and reported.
A *malformed* schema (a keyword whose value has the wrong JSON type, see
:mod:`.schema_check`) raises :class:`~xmask.errors.InvalidSchemaError` with the keyword's
pointer, also with ``lenient=True``; ``NaN``/``Infinity`` in schema text raise
:class:`~xmask.errors.InvalidJSONError`.

How it works: every schema location is a set of *atoms* -- the own keywords of each schema
object that applies there (``allOf`` and ``$ref`` are followed in place), plus one atom per
disjunctive keyword (``anyOf``, ``oneOf``, ``not``, ``if``, dependencies).  Disjunctions are
distributed (``A and (B or C)`` = ``(A and B) or (A and C)``), so every grammar alternative
is a plain conjunction whose keywords are *merged* (types intersected, bounds tightened,
``properties`` combined per name, ...).  Each (atom set, depth) becomes one rule; recursion
through ``$ref`` is recursion between rules.

* ``oneOf`` is exact when the branches are provably disjoint (kinds, ``const``/``enum``
  values, numeric ranges, string automata, a required property with disjoint values,
  a property required by one branch and forbidden by the other, ...); otherwise each branch
  is conjoined with the negation of the branches it overlaps, when those are negatable.
* ``not`` (and the ``else`` side of ``if``) use a symbolic negation of the subschema that
  covers types, bounds, lengths, ``pattern``, ``format`` (exact for ``EXACT_FORMATS`` of
  :mod:`.string_format`; the other format grammars are proper subsets, so their negation
  is the complement of a *superset* -- a restriction -- and ``idn-hostname`` has none),
  ``const``/``enum`` (strings, numbers, booleans, null), ``required``, ``properties``,
  ``items``, counts, ``allOf``, ``anyOf``, ``not``.  The reference validator and the
  disjointness proofs never take a string rejected by a restricted format as invalid.
* ``enum``/``const`` sets are filtered with a reference validator against all other
  keywords at the location (disjunctions included), so any keyword next to ``enum`` or
  ``const`` is exact.
* ``uniqueItems`` is exact over small finite item domains (``enum``/``const``, booleans,
  null; up to 8 values), also with ``prefixItems``; otherwise unsupported.
* ``unevaluatedProperties``/``unevaluatedItems`` see the annotations (names, patterns,
  ``prefixItems`` lengths, ``contains`` matches, and everything after
  ``additionalProperties``/``items``/nested ``unevaluated*``) of the subschemas applied in
  place through ``allOf`` and ``$ref`` and through the branch of ``oneOf``/``if``/
  ``dependentSchemas`` each grammar alternative takes (recorded while distributing);
  ``not`` contributes none.  Disjointness proofs leave ``unevaluated*`` out.  ``contentSchema``,
  ``contentMediaType`` and ``contentEncoding`` are annotations (never asserted).
* ``contains``/``minContains`` are exact without ``prefixItems``; ``maxContains`` needs a
  negatable ``contains`` schema.
* strings: lengths count code points (an escape is one character; a surrogate-pair escape is
  one character); ``pattern`` is an unanchored search on the decoded value; the JSON text may
  spell any character as ``\\uXXXX`` (see :mod:`.string_format`).  Combinations of patterns,
  formats and lengths are intersected as automata.
* objects: additional keys are the exact complement (over decoded keys, so escaped
  spellings are covered) of the declared names and of the ``patternProperties`` patterns;
  a key matching several patterns gets all their schemas.  ``propertyNames`` (string
  constraints, ``enum``) is intersected with every key.
* large counts (``maxLength: 65535``, ``maxItems``) are factored into chunk rules
  (``x{0,M}`` as ``(x{a}){0,q-1} x{0,a-1} | (x{a}){q} x{0,r}``, recursively), which is exact and
  keeps automata at a few hundred states.
* draft-4/6/7: siblings of ``$ref`` are ignored; 2019-09/2020-12 (and no ``$schema``): they
  apply together with the target.

Restrictions (valid texts rejected):

* object members follow the declaration order of ``properties`` (then ``required``-only
  names), additional members come last (XGrammar's behaviour); ``any_order=True`` accepts
  any order for up to :data:`MAX_ANY_ORDER_PROPERTIES` declared properties.
* ``enum``/``const`` values, declared and additional object keys: printable ASCII
  characters are matched only literally (as ``json.dumps`` writes them; ``"\u0061"`` is
  never a key, though it is never wrongly accepted either); numbers only in their
  ``json.dumps`` spelling, plus (draft 6 and later) the integer and ``json.dumps(float)``
  spellings of an integral value (``1`` and ``1.0``; ``1.00`` or ``1e0`` are rejected).
* ``unevaluated*`` next to ``anyOf``: only the branch the alternative follows counts (an
  instance whose properties are evaluated by two branches together is rejected); next to
  an ``if`` without ``then``/``else`` whose condition cannot be negated: the ``if`` counts
  for nothing.
* ``type: integer`` accepts integer syntax only (``1.0`` is rejected); bounded non-integer
  numbers accept plain and normalized scientific spellings (see :mod:`.number_range`);
  with ``multipleOf`` (or non-integer-only numbers) only plain spellings.
* strings with a length, pattern or format reject lone surrogate escapes.
* string formats are the sound grammars of :mod:`.string_format`.
* with ``indent``, recursive values nest at most :data:`MAX_INDENT_DEPTH` levels.
* unknown ``format`` values on strings are unsupported (raise / dropped in lenient mode);
  OpenAPI numeric formats (``int32``, ``int64``, ``uint32``...) bound numbers; a format on a
  schema that cannot be a string is ignored.

Not supported (UnsupportedSchemaError): remote ``$ref``, ``$dynamicRef``/``$recursiveRef``,
``unevaluatedProperties``/``unevaluatedItems`` next to dynamic references, ``uniqueItems``
over infinite domains, ``not``/``if``/
``oneOf`` whose subschemas cannot be negated (e.g. ``additionalProperties`` schemas,
``patternProperties``, ``uniqueItems``, ``contains``, ``prefixItems``, restricted formats
inside the negated schema), string constraints whose automaton product exceeds the limits,
draft-3 keywords.

Whitespace (XGrammar-compatible): ``any_whitespace=True`` allows ``[ \\t\\n\\r]*`` (at most
``max_whitespace_cnt`` characters when given) around ``{ } [ ] , :`` inside values, none
before or after the root value.  ``any_whitespace=False``: ``separators`` (default
``(", ", ": ")``, or ``(",", ": ")`` with ``indent``) and, with ``indent=N``, newline plus
N spaces per level as ``json.dumps(indent=N)`` writes it (empty ``{}``/``[]``).

Example::

    >>> g = json_schema_to_grammar({"type": "object", "properties": {"a": {"type": "integer"}},
    ...                             "required": ["a"]}, any_whitespace=False)
    >>> from xmask.grammar.recognizer import Recognizer
    >>> r = Recognizer(g)
    >>> r.accepts(b'{"a": 1}'), r.accepts(b'{"a": "x"}')
    (True, False)
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections import deque
from fractions import Fraction
from typing import Any, Dict, FrozenSet, List, NamedTuple, Optional, Sequence, Tuple
from urllib.parse import unquote, urldefrag, urljoin

from .. import _deadline as deadline
from ..errors import (
    GrammarError, GrammarLimitError, InvalidJSONError, InvalidSchemaError, RegexSyntaxError,
    UnsupportedSchemaError,
)
from ..limits import DEFAULT_LIMITS, CompileLimits
from .ebnf import make_choice, make_seq
from .ir import EPSILON, Bytes, CharClass, Expr, Grammar, Repeat, RuleRef
from .schema_check import check_keywords, is_count, parse_schema_text
from .text_exclusion import automaton_rules, exclude_words, expr_avoiding
from .number_range import (
    Dfa,
    RuleSink,
    dfa_complement,
    dfa_from_expr,
    dfa_literals,
    dfa_minimize,
    dfa_product,
    dfa_to_expr,
    dfa_with_length,
    dfa_word_complement,
    number_expr,
    to_fraction,
)
from .string_format import (
    EXACT_FORMATS,
    JSON_CHAR,
    JSON_CHAR_PERMISSIVE,
    encode_char_class_as_json,
    ESCAPABLE,
    encode_expr_as_json,
    encode_ranges_canonical,
    format_expr,
    format_superset_expr,
    json_string_literal,
)

__all__ = [
    "MAX_ANY_ORDER_PROPERTIES",
    "MAX_INDENT_DEPTH",
    "json_schema_to_grammar",
    "json_schema_to_grammar_with_report",
]

# ---------------------------------------------------------------------------- limits
#: ``any_order=True`` supports at most this many declared properties per object.
MAX_ANY_ORDER_PROPERTIES = 8
#: With ``indent``, values nested deeper than this (through recursion) are not generated.
MAX_INDENT_DEPTH = 32
#: Nested disjunction expansions at one location.
MAX_DISJUNCTION_NESTING = 64
#: Count-tracking states of one object or array (``minProperties``, ``contains``, ...).
MAX_COUNT_STATES = 20_000
#: Largest finite length / item / property count bound.
MAX_COUNT_BOUND = 1_000_000
#: Repeat counts above this are factored into rule-backed chunks (compact automata).
_DIRECT_REPEAT = 12
#: string lengths up to this many characters are a plain chain (see ``_Converter.counted``)
_DIRECT_STRING = 256

# ---------------------------------------------------------------------------- kinds
NULL, BOOL, OBJ, ARR, STR, INT, FRAC = "null", "boolean", "object", "array", "string", "integer", "fraction"
ALL_KINDS = frozenset((NULL, BOOL, OBJ, ARR, STR, INT, FRAC))
_TYPE_KINDS = {
    "null": {NULL}, "boolean": {BOOL}, "object": {OBJ}, "array": {ARR}, "string": {STR},
    "integer": {INT}, "number": {INT, FRAC},
}
_KIND_ORDER = (NULL, BOOL, INT, FRAC, STR, ARR, OBJ)

_FALSE = ("false",)
_NEVER = CharClass(())
_WS_CLASS = CharClass(((0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20)))

# keywords handled structurally (not merged)
_STRUCTURAL = frozenset((
    "$ref", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentRequired",
    "dependentSchemas", "dependencies",
))
# keywords that are silently ignored (annotations, identifiers, containers)
_ANNOTATIONS = frozenset((
    "$schema", "$id", "id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$defs",
    "definitions", "$comment", "$vocabulary", "title", "description", "default", "examples",
    "example", "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding",
    "contentSchema",  # annotation only (2019-09+: content is never asserted by default)
))
# read together with another keyword ("contains", "items")
_COMPANIONS = frozenset(("minContains", "maxContains", "additionalItems"))
_IGNORED = _ANNOTATIONS | _COMPANIONS
# keywords the merge acts on (a schema object without any of them adds no constraint)
_OWN_KEYWORDS = frozenset((
    "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minLength", "maxLength", "pattern", "format", "items", "prefixItems",
    "minItems", "maxItems", "contains", "uniqueItems", "properties", "patternProperties",
    "additionalProperties", "unevaluatedProperties", "unevaluatedItems", "required",
    "minProperties", "maxProperties", "propertyNames", "extends", "disallow",
    "divisibleBy", "\x00kinds", "\x00not_pattern", "\x00not_format", "\x00not_strings", "\x00extra_key",
    "\x00not_multiple",
))
_NUMERIC_FORMATS = {
    "int8": (-(2 ** 7), 2 ** 7 - 1), "int16": (-(2 ** 15), 2 ** 15 - 1),
    "int32": (-(2 ** 31), 2 ** 31 - 1), "int64": (-(2 ** 63), 2 ** 63 - 1),
    "uint8": (0, 2 ** 8 - 1), "uint16": (0, 2 ** 16 - 1), "uint32": (0, 2 ** 32 - 1),
    "uint64": (0, 2 ** 64 - 1), "float": (None, None), "double": (None, None),
}
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_SINGLES = ("additionalProperties", "additionalItems", "contains", "propertyNames", "not",
                   "if", "then", "else", "unevaluatedProperties", "unevaluatedItems", "contentSchema")
_SUBSCHEMA_KEYS = frozenset(_SCHEMA_MAPS + _SCHEMA_LISTS + _SCHEMA_SINGLES + ("items",))


class _CannotValidate(Exception):
    """The reference validator met a keyword it cannot evaluate."""

    def __init__(self, path: str, message: str):
        super().__init__(message)
        self.path = path
        self.message = message


class _FormatUnknown(_CannotValidate):
    """A string rejected by the grammar of a format that is a proper subset of the format
    (see ``EXACT_FORMATS``): it may still be valid.  Dropping the value is safe (a
    restriction); treating it as invalid anywhere else (under ``not``, in a disjointness
    proof) is not."""


# ============================================================================ public API

def json_schema_to_grammar(schema, *, any_whitespace: bool = True, indent: Optional[int] = None,
                           separators: Optional[Tuple[str, str]] = None, strict_mode: bool = True,
                           max_whitespace_cnt: Optional[int] = None, lenient: bool = False,
                           any_order: bool = False, limits: Optional[CompileLimits] = None,
                           excludes: Sequence[str] = ()) -> Grammar:
    """Convert a JSON Schema to a :class:`~xmask.grammar.ir.Grammar`.

    Parameters
    ----------
    schema : str, dict, bool or pydantic model class
        The schema (JSON text, parsed JSON, or a class with ``model_json_schema()``).
    any_whitespace : bool
        Allow any JSON whitespace between tokens inside objects and arrays.
    indent : int, optional
        With ``any_whitespace=False``: ``json.dumps(indent=N)`` layout.
    separators : (str, str), optional
        With ``any_whitespace=False``: item and key separators.
    strict_mode : bool
        Unspecified ``additionalProperties`` (objects with ``properties``) and items after
        ``prefixItems`` default to false (XGrammar); ``False`` gives the spec defaults.
    max_whitespace_cnt : int, optional
        Bound on each whitespace run when ``any_whitespace=True``.
    lenient : bool
        Drop keywords that cannot be enforced (a warning per loosening) instead of raising.
    any_order : bool
        Accept object members in any order (objects with few declared properties).
    limits : xmask.CompileLimits, optional
        Caps on enum size, alternatives and rule count (defaults: ``CompileLimits()``).
    excludes : sequence of str
        Substrings that the JSON text of a string value without ``pattern``/``format``, or
        of a key, never contains (structural tags); ``enum``/``const`` values containing one
        are dropped.

    Raises
    ------
    UnsupportedSchemaError
        A keyword cannot be enforced exactly (``path`` is its JSON pointer).
    InvalidSchemaError
        A keyword's value has the wrong JSON type (``path`` is its JSON pointer); never
        silenced by ``lenient``.
    InvalidJSONError
        Schema text that is not JSON (``NaN``/``Infinity`` included).

    Example::

        >>> print(json_schema_to_grammar({"enum": ["a", 1]}))
        root ::= "\\"a\\"" | "1" | "1.0"
    """
    grammar, report = json_schema_to_grammar_with_report(
        schema, any_whitespace=any_whitespace, indent=indent, separators=separators,
        strict_mode=strict_mode, max_whitespace_cnt=max_whitespace_cnt, lenient=lenient,
        any_order=any_order, limits=limits, excludes=excludes)
    for item in report:
        warnings.warn(f"JSON Schema loosened: {item}", stacklevel=2)
    return grammar


def json_schema_to_grammar_with_report(schema, *, any_whitespace: bool = True,
                                       indent: Optional[int] = None,
                                       separators: Optional[Tuple[str, str]] = None,
                                       strict_mode: bool = True,
                                       max_whitespace_cnt: Optional[int] = None,
                                       lenient: bool = False,
                                       any_order: bool = False,
                                       limits: Optional[CompileLimits] = None,
                                       excludes: Sequence[str] = ()) -> Tuple[Grammar, List[str]]:
    """Like :func:`json_schema_to_grammar`, also returning the loosenings made in lenient mode
    (``"<json pointer>: <what was dropped>"``; always empty when ``lenient=False``).

    Example::

        >>> g, report = json_schema_to_grammar_with_report(
        ...     {"type": "array", "uniqueItems": True}, lenient=True)
        >>> report
        ['#/uniqueItems: uniqueItems is not enforced (dropped)']
    """
    schema = load_schema(schema)
    if max_whitespace_cnt is not None and max_whitespace_cnt < 0:
        raise ValueError("max_whitespace_cnt must be >= 0")
    conv = _Converter(schema, _Layout(any_whitespace, indent, separators, max_whitespace_cnt),
                      strict_mode=strict_mode, lenient=lenient, any_order=any_order,
                      limits=DEFAULT_LIMITS if limits is None else limits, excludes=excludes)
    return conv.run(), list(conv.report)


def load_schema(schema):
    """A schema given as JSON text (str/bytes), dict, bool or pydantic model, as a Python value.

    Raises ``InvalidJSONError`` for text that is not JSON, ``TypeError`` for other types.
    """
    if isinstance(schema, (bytes, bytearray)):
        try:
            schema = schema.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InvalidJSONError(f"JSON Schema text is not UTF-8: {e}", position=e.start) from None
    if isinstance(schema, str):
        return parse_schema_text(schema)
    if isinstance(schema, (dict, bool)):
        return schema
    if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        return schema.model_json_schema()
    if hasattr(schema, "model_json_schema"):
        return schema.model_json_schema()
    raise TypeError(f"schema must be JSON text, a dict, a bool or a pydantic model, not {type(schema).__name__}")


# ============================================================================ layout

class _Layout:
    """Where whitespace goes (see the module docstring)."""

    def __init__(self, any_ws: bool, indent, separators, max_ws: Optional[int]):
        self.any_ws = bool(any_ws)
        if isinstance(indent, bool):
            raise TypeError("indent must be an int or None")
        self.indent = None if self.any_ws else indent
        if isinstance(self.indent, int):
            self.indent_unit = " " * self.indent
        elif isinstance(self.indent, str):
            self.indent_unit = self.indent
        else:
            self.indent_unit = None
        if separators is None:
            separators = (",", ": ") if self.indent_unit is not None else (", ", ": ")
        if len(separators) != 2:
            raise ValueError("separators must be a pair (item_separator, key_separator)")
        self.item_sep, self.key_sep_text = separators
        self.ws = Repeat(_WS_CLASS, 0, max_ws) if max_ws != 0 else EPSILON
        self.depth_matters = self.indent_unit is not None
        # built once (asked for at every member and item)
        self._any_sep = make_seq([self.ws, Bytes(b","), self.ws])
        self._key_sep = (make_seq([self.ws, Bytes(b":"), self.ws]) if self.any_ws
                         else Bytes(self.key_sep_text.encode()))

    def _nl(self, depth: int) -> Expr:
        return Bytes(("\n" + self.indent_unit * depth).encode())

    def open(self, depth: int) -> Expr:
        if self.any_ws:
            return self.ws
        if self.indent_unit is not None:
            return self._nl(depth + 1)
        return EPSILON

    def close(self, depth: int) -> Expr:
        if self.any_ws:
            return self.ws
        if self.indent_unit is not None:
            return self._nl(depth)
        return EPSILON

    def sep(self, depth: int) -> Expr:
        if self.any_ws:
            return self._any_sep
        if self.indent_unit is not None:
            return make_seq([Bytes(self.item_sep.encode()), self._nl(depth + 1)])
        return Bytes(self.item_sep.encode())

    def key_sep(self) -> Expr:
        return self._key_sep

    def empty(self) -> Expr:
        return self.ws if self.any_ws else EPSILON


# ============================================================================ document

def _detect_draft(root) -> int:
    if isinstance(root, dict):
        s = root.get("$schema")
        if isinstance(s, str):
            for tag, n in (("draft-03", 3), ("draft-04", 4), ("draft-06", 6), ("draft-07", 7),
                           ("2019-09", 2019), ("2020-12", 2020)):
                if tag in s:
                    return n
    return 2020


def _join_uri(base: str, ref: str) -> str:
    """``ref`` resolved against ``base``; a fragment-only ``ref`` also against non-hierarchical
    bases (``urn:...``), which ``urljoin`` leaves alone."""
    if not base:
        return ref
    if ref.startswith("#"):
        return urldefrag(base)[0] + ref
    return urljoin(base, ref)


def _esc(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


class _Doc:
    """Indexes schema objects: node ids, base URIs, ``$id`` resources and anchors."""

    TRUE_NID = 0
    FALSE_NID = 1

    def __init__(self, root):
        self.root = root
        self.draft = _detect_draft(root)
        self.nodes: List[Tuple[Any, Optional[str], str]] = [(True, None, "#"), (False, None, "#")]
        self.by_id: Dict[int, int] = {}
        self.resources: Dict[str, Any] = {}
        self.anchors: Dict[Tuple[str, str], Any] = {}
        self.keep: List[Any] = []  # synthetic objects kept alive (their id() must not be reused)
        self.index(root, "", "#")
        self.resources.setdefault("", root)

    def nid(self, obj, base: Optional[str] = None, ptr: str = "#") -> int:
        if obj is True:
            return self.TRUE_NID
        if obj is False:
            return self.FALSE_NID
        n = self.by_id.get(id(obj))
        if n is None:
            n = self.index(obj, base or "", ptr)
        return n

    def index(self, obj, base: str, ptr: str, check: bool = True) -> int:
        """Register ``obj`` and its subschemas; returns the node id of ``obj``.  ``check``:
        raise InvalidSchemaError for malformed keywords (off for the converter's own objects)."""
        first = None
        stack = [(obj, base, ptr)]
        while stack:
            o, b, p = stack.pop()
            if o is True or o is False:
                if first is None:
                    first = self.TRUE_NID if o else self.FALSE_NID
                continue
            if not isinstance(o, dict):
                if first is None:
                    raise InvalidSchemaError(f"a schema must be an object or a boolean, not {type(o).__name__}", p)
                continue
            if id(o) in self.by_id:
                if first is None:
                    first = self.by_id[id(o)]
                continue
            if check:
                check_keywords(o, p, self.draft, subschemas=False)
            sid = o.get("$id")
            if not isinstance(sid, str) and self.draft <= 4 and isinstance(o.get("id"), str):
                sid = o.get("id")
            if isinstance(sid, str):
                if sid.startswith("#"):
                    self.anchors[(b, sid[1:])] = o
                else:
                    nb, frag = urldefrag(_join_uri(b, sid))
                    b = nb
                    self.resources.setdefault(b, o)
                    if frag and not frag.startswith("/"):
                        self.anchors[(b, frag)] = o
            for key in ("$anchor", "$dynamicAnchor"):
                if isinstance(o.get(key), str):
                    self.anchors[(b, o[key])] = o
            n = len(self.nodes)
            self.nodes.append((o, b, p))
            self.by_id[id(o)] = n
            if first is None:
                first = n
            if _SUBSCHEMA_KEYS.isdisjoint(o):
                continue  # a leaf schema (the usual case)
            for k in _SCHEMA_SINGLES:
                if k in o:
                    stack.append((o[k], b, f"{p}/{k}"))
            if "items" in o:
                it = o["items"]
                if isinstance(it, list):
                    for i, s in enumerate(it):
                        stack.append((s, b, f"{p}/items/{i}"))
                else:
                    stack.append((it, b, f"{p}/items"))
            for k in _SCHEMA_LISTS:
                v = o.get(k)
                if isinstance(v, list):
                    for i, s in enumerate(v):
                        stack.append((s, b, f"{p}/{k}/{i}"))
            for k in _SCHEMA_MAPS:
                v = o.get(k)
                if isinstance(v, dict):
                    for name, s in v.items():
                        if isinstance(s, (dict, bool)):
                            stack.append((s, b, f"{p}/{k}/{_esc(name)}"))
        return first

    def resolve(self, ref: str, base: Optional[str], where: str) -> int:
        """Node id of the target of ``$ref``; UnsupportedSchemaError if it is not local."""
        base = base or ""
        uri = _join_uri(base, ref)
        doc_uri, frag = urldefrag(uri)
        if doc_uri == "":
            target = self.resources.get("", self.root)
        else:
            target = self.resources.get(doc_uri)
            if target is None:
                target = self.resources.get(doc_uri.rstrip("#"))
        if target is None:
            raise UnsupportedSchemaError(f"remote $ref {ref!r} cannot be resolved", where)
        frag = unquote(frag)
        ptr = "#"
        if frag.startswith("/"):
            o = target
            for tok in frag[1:].split("/"):
                tok = tok.replace("~1", "/").replace("~0", "~")
                if isinstance(o, dict) and tok in o:
                    o = o[tok]
                elif isinstance(o, list) and tok.isdigit() and int(tok) < len(o):
                    o = o[int(tok)]
                else:
                    raise UnsupportedSchemaError(f"$ref {ref!r} points to nothing", where)
                ptr += "/" + _esc(tok)
            target = o
        elif frag:
            t = self.anchors.get((doc_uri, frag))
            if t is None and doc_uri == "":
                t = self.anchors.get(("", frag))
            if t is None:
                raise UnsupportedSchemaError(f"$ref {ref!r}: unknown anchor", where)
            target = t
        if not isinstance(target, (dict, bool)):
            raise UnsupportedSchemaError(f"$ref {ref!r} does not point to a schema", where)
        base_of = self.nodes[self.by_id[id(target)]][1] if id(target) in self.by_id else doc_uri
        return self.nid(target, base_of, ptr)

    def synth(self, obj, where: str) -> int:
        """Register a synthetic schema object (built by the converter); ``where`` is the
        pointer of the keyword it was derived from (used in error messages)."""
        self.keep.append(obj)
        return self.index(obj, "", where, check=False)


# ============================================================================ merged constraints

class _Merged:
    """The conjunction of the own keywords of a set of schema objects."""

    __slots__ = (
        "kinds", "enum", "lo", "lo_x", "hi", "hi_x", "mult", "not_mult", "min_len", "max_len",
        "patterns", "not_patterns", "formats", "not_formats", "not_strings", "arr_units",
        "min_items", "max_items", "contains", "unique", "obj_units", "required", "min_props",
        "max_props", "prop_names", "gated", "nids", "has_addl", "has_rest", "names", "extra_keys",
        "uneval_approx", "declared", "mentions", "big",
    )

    def __init__(self):
        self.kinds = set(ALL_KINDS)
        self.enum: Optional[list] = None
        self.lo = self.hi = None
        self.lo_x = self.hi_x = False
        self.mult: Optional[Fraction] = None
        self.not_mult: List[Fraction] = []
        self.min_len, self.max_len = 0, None
        self.patterns: List[Tuple[str, str]] = []
        self.not_patterns: List[Tuple[str, str]] = []
        self.formats: List[Tuple[str, str]] = []
        self.not_formats: List[Tuple[str, str]] = []
        self.not_strings: List[str] = []
        self.arr_units: List[Tuple[Optional[list], Optional[int], str]] = []
        self.min_items, self.max_items = 0, None
        self.contains: List[Tuple[int, int, Optional[int], str]] = []
        self.unique: Optional[str] = None
        self.obj_units: List[Tuple[Dict[str, int], List[Tuple[str, int, str]], Optional[int], str]] = []
        self.required: Dict[str, None] = {}
        self.min_props, self.max_props = 0, None
        self.prop_names: List[int] = []
        self.gated: List[Tuple[Optional[str], str, str]] = []  # (kind or None, pointer, message)
        self.nids: List[int] = []
        self.has_addl = False
        self.has_rest = False
        self.names: Dict[str, int] = {}  # property name -> index of its first mention
        self.declared: Dict[str, int] = {}  # name -> mention index of its first ``properties``
        self.mentions = 0  # running index of name mentions (properties / required)
        self.extra_keys: List[Tuple[Tuple[str, ...], Tuple[str, ...], int]] = []
        self.big: Dict[str, str] = {}  # "len"/"items"/"props" -> pointer of a bound above MAX_COUNT_BOUND
        # unevaluated* applied with an under-approximated evaluated set (stricter than the
        # schema): fine for generation, but no disjointness proof may rely on it
        self.uneval_approx = False

    def tighten_lo(self, v: Fraction, excl: bool) -> None:
        if self.lo is None or v > self.lo or (v == self.lo and excl):
            self.lo, self.lo_x = v, excl

    def tighten_hi(self, v: Fraction, excl: bool) -> None:
        if self.hi is None or v < self.hi or (v == self.hi and excl):
            self.hi, self.hi_x = v, excl


def _is_num(v) -> bool:
    return isinstance(v, (int, float, Fraction)) and not isinstance(v, bool)


def _as_count(v, path: str, m: Optional[_Merged] = None, what: str = "") -> int:
    """A count keyword's value, capped at ``MAX_COUNT_BOUND + 1`` (a 400-digit ``minLength``
    must not reach arithmetic or ``float()``); the pointer of a capped bound is kept in
    ``m.big[what]`` for the limit error raised where the bound is used."""
    if not is_count(v):
        raise InvalidSchemaError(f"expected a non-negative integer, got {v!r}", path)
    c = int(v)
    if c > MAX_COUNT_BOUND:
        if m is not None:
            m.big.setdefault(what, path)
        return MAX_COUNT_BOUND + 1
    return c


def _kind_of(v) -> str:
    if v is None:
        return NULL
    if isinstance(v, bool):
        return BOOL
    if isinstance(v, int):
        return INT
    if isinstance(v, float):
        return INT if v.is_integer() else FRAC
    if isinstance(v, str):
        return STR
    if isinstance(v, list):
        return ARR
    if isinstance(v, dict):
        return OBJ
    raise TypeError(f"not a JSON value: {v!r}")


def _json_eq(a, b) -> bool:
    """JSON Schema equality: numbers by value, booleans distinct from numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_num(a) and _is_num(b):
        return to_fraction(a) == to_fraction(b) if not (a == b) else True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_eq(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_eq(a[k], b[k]) for k in a)
    if type(a) is not type(b) and not (_is_num(a) and _is_num(b)):
        return False
    return a == b


def _canon(v):
    """A hashable key with JSON Schema equality (numbers by value, booleans apart)."""
    if v is None:
        return ("n",)
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, (int, float, Fraction)):
        return ("#", to_fraction(v))
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, list):
        return ("a", tuple(_canon(x) for x in v))
    if isinstance(v, dict):
        return ("o", frozenset((k, _canon(x)) for k, x in v.items()))
    raise TypeError(f"not a JSON value: {v!r}")


def _dedupe(values) -> list:
    out, seen = [], set()
    for v in values:
        sig = json.dumps(v, sort_keys=True)
        if sig not in seen:
            seen.add(sig)
            out.append(v)
    return out


def _frac_lcm(a: Fraction, b: Fraction) -> Fraction:
    num = a.numerator * b.numerator // math.gcd(a.numerator, b.numerator)
    den = math.gcd(a.denominator, b.denominator)
    return Fraction(num, den)


def _code_points(s: str) -> int:
    return len(s)


# ============================================================================ converter

class _Converter:
    def __init__(self, schema, layout: _Layout, *, strict_mode: bool, lenient: bool, any_order: bool,
                 limits: CompileLimits = DEFAULT_LIMITS, excludes: Sequence[str] = ()):
        self.doc = _Doc(schema)
        # substrings no string value without pattern/format and no key may contain (in its
        # JSON text), see :mod:`.text_exclusion`
        self.excludes = tuple(excludes)
        self.limits = limits
        self.layout = layout
        self.strict = strict_mode
        self.lenient = lenient
        self.any_order = any_order
        self.report: List[str] = []
        self._reported = set()
        self.rules: Dict[str, Optional[Expr]] = {"root": None}
        self.sink = RuleSink(self.rules, max_rules=limits.max_schema_rules)
        self.memo: Dict[Tuple[FrozenSet, int], str] = {}
        self.queue: deque = deque()
        self.flat_memo: Dict[int, FrozenSet] = {}
        self.merge_memo: Dict[FrozenSet, _Merged] = {}
        self.object_units: Dict[Tuple[int, bool], tuple] = {}  # see _merge_object
        self.inline_memo: Dict[Tuple[FrozenSet, int], Optional[Expr]] = {}
        self.gen_memo: Dict[Tuple[FrozenSet, int], Optional[Expr]] = {}
        self.shared: Dict[Any, Optional[Expr]] = {}
        self.synth_memo: Dict[Any, int] = {}
        self.synth_alts: List[List[FrozenSet]] = []
        self.dfa_memo: Dict[Any, Optional[Dfa]] = {}
        self.regex_memo: Dict[str, Any] = {}
        self.alt_budget = 0
        self.neg_stack: set = set()
        self.order: Dict[int, int] = {}
        self.enum_keys: Dict[int, Any] = {}
        self.origin = "#"  # pointer reported for derived (synthetic) schemas
        self.merge_atoms: FrozenSet = frozenset()  # the atom set merge() is working on
        self.merge_proof = False  # merge() for a disjointness proof (see merge)

    # ------------------------------------------------------------------ errors / reports
    def unsupported(self, message: str, path: str, action: str = "dropped") -> None:
        """Raise, or in lenient mode record the loosening."""
        if not self.lenient:
            raise UnsupportedSchemaError(message, path)
        item = f"{path}: {message} ({action})"
        if item not in self._reported:
            self._reported.add(item)
            self.report.append(item)

    def ptr(self, nid: int) -> str:
        return self.doc.nodes[nid][2]

    def node(self, nid: int):
        return self.doc.nodes[nid][0]

    # ------------------------------------------------------------------ driver
    def run(self) -> Grammar:
        root_atoms = self.flatten(self.doc.nid(self.doc.root))
        self.memo[(root_atoms, 0)] = "root"
        self.sink.fresh("root")
        self.queue.append(("root", root_atoms, 0))
        return Grammar(self.drain(), root="root")

    def drain(self) -> Dict[str, Expr]:
        """Generate the queued rules; the rule table (never-matching rules for empty ones)."""
        while self.queue:
            name, atoms, depth = self.queue.popleft()
            try:
                expr = self.value_expr(atoms, depth, name, ())
            except RecursionError:
                raise GrammarLimitError("JSON Schema is too deeply nested") from None
            self.rules[name] = expr if expr is not None else _NEVER  # (sink caps the rule count)
        return {k: (v if v is not None else _NEVER) for k, v in self.rules.items()}

    def value_ref(self, atoms: FrozenSet, depth: int, hint: str) -> Optional[Expr]:
        """A reference to the rule of the values satisfying ``atoms`` (None: none can)."""
        if _FALSE in atoms:
            return None
        if self.layout.depth_matters:
            if depth > MAX_INDENT_DEPTH:
                return None
        else:
            depth = 0
        key = (atoms, depth)
        name = self.memo.get(key)
        if name is None:
            name = self.sink.fresh(hint)
            self.rules[name] = None
            self.memo[key] = name
            self.queue.append((name, atoms, depth))
        return RuleRef(name)

    def shared_rule(self, key, hint: str, build) -> Optional[Expr]:
        """A rule for an expression shared by content (strings, numbers, key classes)."""
        if key in self.shared:
            return self.shared[key]
        e = build()
        if e is None:
            self.shared[key] = None
            return None
        if isinstance(e, (Bytes, RuleRef)) or e == EPSILON:
            self.shared[key] = e
            return e
        name = self.sink.fresh(hint)
        self.rules[name] = e
        self.shared[key] = RuleRef(name)
        return self.shared[key]

    # ------------------------------------------------------------------ atoms
    def flatten(self, nid: int) -> FrozenSet:
        """The atoms of the schema ``nid`` (``allOf`` and ``$ref`` followed in place)."""
        hit = self.flat_memo.get(nid)
        if hit is not None:
            return hit
        atoms = set()
        seen = {nid}
        stack = [nid]
        doc = self.doc
        while stack:
            n = stack.pop()
            if n not in self.order:
                self.order[n] = len(self.order)  # first visit, depth-first: merge order
            obj, base, p = doc.nodes[n]
            if obj is True:
                continue
            if obj is False:
                atoms.add(_FALSE)
                continue
            nexts: List[int] = []  # subschemas applying in place, in document order
            ref = obj.get("$ref")
            if isinstance(ref, str):
                try:
                    t = doc.resolve(ref, base, f"{p}/$ref")
                except UnsupportedSchemaError as e:
                    self.unsupported(str(e.args[0]).split(" (at ")[0], e.path)
                    t = None
                if t is not None:
                    nexts.append(t)
                if doc.draft <= 7:
                    for t in reversed(nexts):
                        if t not in seen:
                            seen.add(t)
                            stack.append(t)
                    continue  # siblings of $ref are ignored before 2019-09
            for k in ("$dynamicRef", "$recursiveRef"):
                if k in obj:
                    self.unsupported(f"{k} is not supported", f"{p}/{k}")
            own = any(k in _OWN_KEYWORDS for k in obj)
            if own:
                atoms.add(("own", n))
            sub = obj.get("allOf")
            if isinstance(sub, list):
                for i, s in enumerate(sub):
                    nexts.append(doc.nid(s, base, f"{p}/allOf/{i}"))
            for t in reversed(nexts):
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
            for k in ("anyOf", "oneOf"):
                if isinstance(obj.get(k), list):
                    if not obj[k]:
                        raise UnsupportedSchemaError(f"{k} must not be empty", f"{p}/{k}")
                    atoms.add((k, n))
            if "not" in obj:
                atoms.add(("not", n))
            if "if" in obj and ("then" in obj or "else" in obj or self._has_unevaluated(n)):
                # (an "if" alone constrains nothing, but its annotations reach unevaluated*)
                atoms.add(("if", n))
            for k in ("dependentRequired", "dependentSchemas", "dependencies"):
                v = obj.get(k)
                if isinstance(v, dict):
                    for name in v:
                        atoms.add(("dep", n, k, name))
        out = frozenset(atoms)
        if _FALSE in out:
            out = frozenset((_FALSE,))
        self.flat_memo[nid] = out
        return out

    def synth(self, key, obj) -> int:
        n = self.synth_memo.get(key)
        if n is None:
            n = self.synth_memo[key] = self.doc.synth(obj, self.origin)
        return n

    def synth_atoms(self, key, obj) -> FrozenSet:
        return self.flatten(self.synth(key, obj))

    def disjunction_atom(self, alternatives: List[FrozenSet]) -> tuple:
        self.synth_alts.append(alternatives)
        return ("alt", len(self.synth_alts) - 1)

    # ------------------------------------------------------------------ distribution
    def value_expr(self, atoms: FrozenSet, depth: int, hint: str, stack: tuple) -> Optional[Expr]:
        deadline.check()
        if _FALSE in atoms:
            return None
        disj = [a for a in atoms if a[0] != "own" and a[0] != "chose"]
        if not disj:
            # memo: negated additionalProperties (gen_extra_key) reaches the same atom sets by
            # many orders of required names; the expression does not depend on the hint
            key = (atoms, depth)
            if key not in self.gen_memo:
                self.gen_memo[key] = self.gen(self.merge(atoms), atoms, depth, hint)
            return self.gen_memo[key]
        finite = self.finite_values(atoms)
        if finite is not None:
            return finite(depth)
        if len(stack) > MAX_DISJUNCTION_NESTING:
            raise UnsupportedSchemaError("disjunctions (anyOf/oneOf/...) nested too deeply at one location",
                                         self.ptr(self._some_nid(atoms)))
        d = min(disj, key=repr)
        rest = atoms - {d}
        alts = self.alternatives(d, rest)
        self.alt_budget += len(alts)
        if self.alt_budget > self.limits.max_alternatives * 16:
            raise GrammarLimitError(
                "JSON Schema expands to too many alternatives (anyOf/oneOf distribution; "
                f"{16 * self.limits.max_alternatives} in all = 16 x CompileLimits.max_alternatives)",
                path=self.ptr(self._some_nid(atoms)))
        out: List[Expr] = []
        seen = set()
        for s in alts:
            if _FALSE in s:
                continue
            if s == atoms or s in stack:
                raise UnsupportedSchemaError("circular schema reference that does not descend into the instance",
                                             self.ptr(self._some_nid(atoms)))
            key = (s, depth)
            if key in self.inline_memo:
                e = self.inline_memo[key]
            else:
                e = self.value_expr(s, depth, hint, stack + (atoms,))
                self.inline_memo[key] = e
            if e is not None and e not in seen:
                seen.add(e)
                out.append(e)
        if len(out) > self.limits.max_alternatives:
            raise GrammarLimitError(
                f"JSON Schema expands to more than {self.limits.max_alternatives} alternatives "
                "at one location (CompileLimits.max_alternatives)", path=self.ptr(self._some_nid(atoms)))
        return make_choice(out) if out else None

    def _some_nid(self, atoms) -> int:
        for a in sorted(atoms, key=repr):
            if len(a) > 1 and isinstance(a[1], int) and a[0] != "alt":
                return a[1]
        return 0

    def alternatives(self, d: tuple, rest: FrozenSet) -> List[FrozenSet]:
        kind = d[0]
        if kind == "alt":
            return [rest | a for a in self.synth_alts[d[1]]]
        n = d[1]
        obj, base, p = self.doc.nodes[n]
        # with unevaluated* at this location, each alternative records the branch it took
        # (a "chose" marker), whose annotations then count as evaluated
        watch = any(a[0] == "own" and self._has_unevaluated(a[1]) for a in rest)

        def mark(key) -> FrozenSet:
            return frozenset((("chose", n, key),)) if watch else frozenset()

        if kind == "anyOf":
            return [rest | self.flatten(self.doc.nid(s, base, f"{p}/anyOf/{i}")) | mark(i)
                    for i, s in enumerate(obj["anyOf"])]
        if kind == "oneOf":
            return [a | mark(i) for i, a in self.one_of(n, rest)]
        if kind == "not":
            sub = self.doc.nid(obj["not"], base, f"{p}/not")
            neg = self.negate(sub)
            if neg is None:
                self.unsupported("this 'not' subschema cannot be negated exactly", f"{p}/not")
                return [rest]
            return [rest | a for a in neg]
        if kind == "if":
            cond = self.doc.nid(obj["if"], base, f"{p}/if")
            cond_atoms = self.flatten(cond)  # first: "if" members come before "then" members
            then = self.flatten(self.doc.nid(obj.get("then", True), base, f"{p}/then"))
            other = self.flatten(self.doc.nid(obj.get("else", True), base, f"{p}/else"))
            neg = self.negate(cond)
            if neg is None and "then" not in obj and "else" not in obj:
                return [rest]  # only for unevaluated*: its annotations are then not counted
            if neg is None:
                self.unsupported("the 'if' subschema cannot be negated exactly",
                                 f"{p}/if", "loosened: then/else treated as anyOf")
                return [rest | then, rest | other]
            return [rest | cond_atoms | then | mark("then")] + [rest | a | other | mark("else") for a in neg]
        if kind == "dep":
            _, _, k, name = d
            val = obj[k][name]
            self.origin = f"{p}/{k}/{_esc(name)}"
            absent = self.synth_atoms(("absent", name), {"properties": {name: False}})
            if isinstance(val, list):
                if not all(isinstance(x, str) for x in val):
                    raise UnsupportedSchemaError("dependency lists must contain strings", f"{p}/{k}/{_esc(name)}")
                req = self.synth_atoms(("required", (name,) + tuple(val)), {"required": [name] + list(val)})
                return [rest | absent, rest | req]
            if isinstance(val, (dict, bool)):
                req = self.synth_atoms(("required", (name,)), {"required": [name]})
                sub = self.flatten(self.doc.nid(val, base, f"{p}/{k}/{_esc(name)}"))
                return [rest | absent, rest | req | sub | mark((k, name))]
            raise UnsupportedSchemaError("invalid dependency value", f"{p}/{k}/{_esc(name)}")
        raise AssertionError(kind)

    def one_of(self, n: int, rest: FrozenSet) -> List[Tuple[int, FrozenSet]]:
        obj, base, p = self.doc.nodes[n]
        subs = [self.doc.nid(s, base, f"{p}/oneOf/{i}") for i, s in enumerate(obj["oneOf"])]
        branches = [rest | self.flatten(s) for s in subs]
        live = [i for i, b in enumerate(branches) if _FALSE not in b]
        conflicts: Dict[int, List[int]] = {i: [] for i in live}
        for x in range(len(live)):
            for y in range(x + 1, len(live)):
                i, j = live[x], live[y]
                if not self.disjoint(branches[i], branches[j], 3):
                    conflicts[i].append(j)
                    conflicts[j].append(i)
        if not any(conflicts.values()):
            return [(i, branches[i]) for i in live]
        out = []
        for i in live:
            extra = set()
            for j in conflicts[i]:
                neg = self.negate(subs[j])
                if neg is None:
                    self.unsupported("oneOf branches are not provably exclusive",
                                     f"{p}/oneOf", "loosened: treated as anyOf")
                    return [(k, branches[k]) for k in live]
                extra.add(self.disjunction_atom(neg))
            out.append((i, branches[i] | frozenset(extra)))
        return out

    # ------------------------------------------------------------------ merging
    def merge(self, atoms: FrozenSet, proof: bool = False) -> _Merged:
        """The conjunction of the own atoms.  ``proof``: for disjointness proofs, which need
        a superset of the instances: ``unevaluated*`` (applied from an evaluated set that may
        be under-approximated) is left out."""
        key = (atoms, "proof") if proof else atoms
        hit = self.merge_memo.get(key)
        if hit is not None:
            return hit
        m = _Merged()
        saved = self.merge_atoms, self.merge_proof
        self.merge_atoms, self.merge_proof = atoms, proof
        try:
            for a in sorted((a for a in atoms if a[0] == "own"), key=lambda a: (self.order.get(a[1], 1 << 30), a[1])):
                self._merge_node(m, a[1])
        finally:
            self.merge_atoms, self.merge_proof = saved
        self.merge_memo[key] = m
        return m

    def _merge_node(self, m: _Merged, n: int) -> None:
        obj, base, p = self.doc.nodes[n]
        m.nids.append(n)
        doc = self.doc
        for k, v in obj.items():
            if k in _STRUCTURAL or k in _IGNORED:
                continue
            kp = f"{p}/{k}"
            if k == "type":
                types = v if isinstance(v, list) else [v]
                ks = set()
                for t in types:
                    if not isinstance(t, str) or t not in _TYPE_KINDS:
                        if isinstance(t, str) and t == "any":
                            ks |= ALL_KINDS
                            continue
                        raise UnsupportedSchemaError(f"unknown type {t!r}", kp)
                    ks |= _TYPE_KINDS[t]
                m.kinds &= ks
            elif k in ("enum", "const"):
                vals = v if k == "enum" else [v]
                if k == "enum" and not isinstance(v, list):
                    raise UnsupportedSchemaError("enum must be an array", kp)
                if len(vals) > self.limits.max_enum_values:
                    raise GrammarLimitError(f"enum with more than {self.limits.max_enum_values} values")
                if m.enum is None:
                    m.enum = list(vals)
                else:
                    keep = {_canon(y) for y in vals}
                    m.enum = [x for x in m.enum if _canon(x) in keep]
            elif k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                if isinstance(v, bool):
                    continue  # draft-4 flag, read with minimum/maximum below
                if not _is_num(v):
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
            elif k == "multipleOf":
                if not _is_num(v) or v <= 0:
                    raise UnsupportedSchemaError("multipleOf must be a positive number", kp)
                f = to_fraction(v)
                m.mult = f if m.mult is None else _frac_lcm(m.mult, f)
            elif k == "\x00not_multiple":
                m.not_mult.append(to_fraction(v))
            elif k == "minLength":
                m.min_len = max(m.min_len, _as_count(v, kp, m, "len"))
            elif k == "maxLength":
                c = _as_count(v, kp, m, "len")
                m.max_len = c if m.max_len is None else min(m.max_len, c)
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
            elif k == "minItems":
                m.min_items = max(m.min_items, _as_count(v, kp, m, "items"))
            elif k == "maxItems":
                c = _as_count(v, kp, m, "items")
                m.max_items = c if m.max_items is None else min(m.max_items, c)
            elif k == "contains":
                lo = obj.get("minContains", 1)
                hi = obj.get("maxContains")
                lo = _as_count(lo, f"{p}/minContains", m, "items")
                hi = None if hi is None else _as_count(hi, f"{p}/maxContains", m, "items")
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
            elif k == "minProperties":
                m.min_props = max(m.min_props, _as_count(v, kp, m, "props"))
            elif k == "maxProperties":
                c = _as_count(v, kp, m, "props")
                m.max_props = c if m.max_props is None else min(m.max_props, c)
            elif k == "propertyNames":
                m.prop_names.append(doc.nid(v, base, kp))
            elif k in ("extends", "disallow", "divisibleBy"):
                m.gated.append((None, kp, f"draft-3 keyword {k} is not supported"))
            # anything else: unknown keywords are annotations
        for key in ("properties", "required"):
            names = obj.get(key)
            if isinstance(names, (dict, list)):
                for name in names:
                    if isinstance(name, str):
                        m.names.setdefault(name, m.mentions)
                        if key == "properties":
                            m.declared.setdefault(name, m.mentions)
                        m.mentions += 1

    def _in_place_applicators(self, obj) -> bool:
        return any(k in obj for k in ("allOf", "anyOf", "oneOf", "$ref", "if", "not",
                                      "dependentSchemas", "dependencies", "$dynamicRef"))

    def _merge_items(self, m: _Merged, obj, n: int, p: str) -> None:
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
            sub = None if self.merge_proof else self._evaluated_subtree(n, m)
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
                        rest = self.synth(("uneval_or_contains", n), {"anyOf": contains + [obj["unevaluatedItems"]]})
        if has_rest:
            m.has_rest = True
        m.arr_units.append((prefix, rest, p))

    def _merge_object(self, m: _Merged, obj, n: int, p: str) -> None:
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

    def _object_unit(self, m: _Merged, obj, n: int, p: str):
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
                props[name] = t if t is not None else self.doc.nid(s, base, f"{p}/properties/{_esc(name)}")
        pp = obj.get("patternProperties")
        if isinstance(pp, dict):
            for pat, s in pp.items():
                pats.append((pat, self.doc.nid(s, base, f"{p}/patternProperties/{_esc(pat)}"),
                             f"{p}/patternProperties/{_esc(pat)}"))
        if "additionalProperties" in obj:
            addl = self.doc.nid(obj["additionalProperties"], base, f"{p}/additionalProperties")
            has_addl = True
        elif "unevaluatedProperties" in obj and self.merge_proof:
            has_addl = True  # left out: a superset
        elif "unevaluatedProperties" in obj:
            sub = self._evaluated_subtree(n, m)
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
                            pats.append((pat, self.doc.TRUE_NID, f"{sp}/patternProperties/{_esc(pat)}"))
                    addl = self.doc.nid(obj["unevaluatedProperties"], base, f"{p}/unevaluatedProperties")
        return (props, pats, addl, p), has_addl

    def _has_unevaluated(self, n: int) -> bool:
        obj = self.doc.nodes[n][0]
        return isinstance(obj, dict) and ("unevaluatedProperties" in obj or "unevaluatedItems" in obj)

    def _evaluated_subtree(self, n: int, m: _Merged) -> Optional[List[int]]:
        """The schema objects whose annotations reach the ``unevaluated*`` keywords of node
        ``n`` in the alternative being merged: those applied in place through ``allOf`` and
        ``$ref``, and through the branch of ``anyOf``/``oneOf``/``if``/``dependentSchemas``
        that the alternative took (its "chose" marker); ``not`` discards its annotations.
        This is a subset of the evaluated set (exact unless an ``anyOf``, whose other
        branches may hold too, or an ``if`` without ``then``/``else`` is met, or a marker is
        missing), so ``unevaluated*`` is applied at least as strictly as the schema says;
        ``m.uneval_approx`` records a strict subset.  None for dynamic references."""
        doc = self.doc
        chosen = {(a[1], a[2]) for a in self.merge_atoms if a[0] == "chose"}
        out: List[int] = []
        seen, stack = {n}, [n]
        while stack:
            k = stack.pop()
            obj, base, p = doc.nodes[k]
            if not isinstance(obj, dict):
                continue
            if "$dynamicRef" in obj or "$recursiveRef" in obj:
                return None
            nexts = []
            if isinstance(obj.get("$ref"), str):
                try:
                    nexts.append(doc.resolve(obj["$ref"], base, f"{p}/$ref"))
                except UnsupportedSchemaError:
                    return None
                if doc.draft <= 7:  # siblings of $ref are ignored
                    for t in nexts:
                        if t not in seen:
                            seen.add(t)
                            stack.append(t)
                    continue
            if k != n:
                out.append(k)
            if isinstance(obj.get("allOf"), list):
                nexts += [doc.nid(x, base, f"{p}/allOf/{i}") for i, x in enumerate(obj["allOf"])]
            for kw in ("anyOf", "oneOf"):
                if isinstance(obj.get(kw), list):
                    m.uneval_approx |= kw == "anyOf"
                    hit = [i for i in range(len(obj[kw])) if (k, i) in chosen]
                    m.uneval_approx |= not hit
                    nexts += [doc.nid(obj[kw][i], base, f"{p}/{kw}/{i}") for i in hit]
            if "if" in obj:
                if (k, "then") in chosen:
                    nexts.append(doc.nid(obj["if"], base, f"{p}/if"))
                    if "then" in obj:
                        nexts.append(doc.nid(obj["then"], base, f"{p}/then"))
                elif (k, "else") in chosen:
                    if "else" in obj:
                        nexts.append(doc.nid(obj["else"], base, f"{p}/else"))
                else:
                    m.uneval_approx = True
            for kw in ("dependentSchemas", "dependencies"):
                deps = obj.get(kw)
                if isinstance(deps, dict):
                    for name, dep in deps.items():
                        if isinstance(dep, (dict, bool)):
                            if (k, (kw, name)) in chosen:
                                nexts.append(doc.nid(dep, base, f"{p}/{kw}/{_esc(name)}"))
                            else:
                                # absent: no annotations; or not distributed here
                                m.uneval_approx = True
            for t in nexts:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return out

    # ------------------------------------------------------------------ generation
    def gen(self, m: _Merged, atoms: FrozenSet, depth: int, hint: str) -> Optional[Expr]:
        if m.enum is not None:
            return self.gen_enum(m, depth, hint)
        if m.extra_keys and OBJ in m.kinds:
            return self.gen_extra_key(m, atoms, depth, hint)
        kinds = m.kinds
        for kind, path, msg in m.gated:
            if kind is None or kind in kinds:
                self.unsupported(msg, path)
        alts: List[Expr] = []
        if NULL in kinds:
            alts.append(Bytes(b"null"))
        if BOOL in kinds:
            alts.append(make_choice([Bytes(b"true"), Bytes(b"false")]))
        if INT in kinds or FRAC in kinds:
            e = self.gen_number(m, hint)
            if e is not None:
                alts.append(e)
        if STR in kinds:
            e = self.gen_string(m, hint)
            if e is not None:
                alts.append(e)
        if ARR in kinds:
            e = self.gen_array(m, depth, hint)
            if e is not None:
                alts.append(e)
        if OBJ in kinds:
            e = self.gen_object(m, depth, hint)
            if e is not None:
                alts.append(e)
        return make_choice(alts) if alts else None

    def gen_extra_key(self, m: _Merged, atoms: FrozenSet, depth: int, hint: str) -> Optional[Expr]:
        """Objects that must have a key outside a set of names and patterns (the negation of
        ``additionalProperties: false``), when the object itself admits only declared keys:
        one alternative per declared key that qualifies, made required."""
        names, patterns, nid = m.extra_keys[0]
        probe = self.merge(frozenset(a for a in atoms if not (a[0] == "own" and a[1] == nid)))
        if self.key_classes(probe, list(probe.names), hint):
            self.unsupported("negated additionalProperties is not supported here", self.ptr(nid))
            return self.value_expr(frozenset(a for a in atoms if a != ("own", nid)), depth, hint, ())
        alts = []
        base = frozenset(a for a in atoms if a != ("own", nid)) | self._kinds_atoms({OBJ})

        def qualifies(d: str) -> bool:  # a key outside the names and patterns of the negation
            if d in names:
                return False
            return not any(self.pattern_dfa_or_none(pat, self.ptr(nid)) is not None
                           and self.pattern_dfa(pat).matches(d) for pat in patterns)

        if any(qualifies(d) for d in probe.required):
            # a key the object must have anyway already satisfies the negation: no branching
            # (several negations would otherwise branch on every order of the same names)
            return self.value_expr(base, depth, hint, (atoms,))
        for d in probe.names:
            if not qualifies(d):
                continue
            s = base | self.synth_atoms(("required", (d,)), {"required": [d]})
            e = self.value_expr(s, depth, hint, (atoms,))
            if e is not None:
                alts.append(e)
        return make_choice(alts) if alts else None

    # ------------------------------------------------------------------ enum / literals
    def finite_values(self, atoms: FrozenSet):
        """When an ``enum``/``const`` applies at this location, every other keyword --
        disjunctions included -- is decided by validating the finitely many candidates.
        Returns a function of the depth producing the literals, or None."""
        cands = None
        for a in atoms:
            if a[0] == "own":
                obj = self.node(a[1])
                if "enum" in obj and isinstance(obj["enum"], list):
                    cands = obj["enum"]
                    break
                if "const" in obj:
                    cands = [obj["const"]]
                    break
        if cands is None:
            return None
        try:
            values = [v for v in _dedupe(cands) if self.validate_atoms(v, atoms)]
            if self.excludes:
                values = [v for v in values if self.literal_allowed(v)]
        except _CannotValidate:
            return None  # fall back to the structural construction
        return lambda depth: make_choice([self.literal(v, depth) for v in values]) if values else None

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
                ok = any(self.validate_atoms(v, alt) for alt in self.synth_alts[a[1]])
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
                        ok = self.validate(v, doc.nid(dep, base, f"{p}/{k}/{_esc(name)}"))
                else:
                    raise AssertionError(kind)
            if not ok:
                return False
        return True

    def enum_value_ok(self, v, m: _Merged) -> bool:
        """Whether the ``enum``/``const`` candidate ``v`` satisfies the other keywords of
        ``m`` (a value that cannot be validated is kept, reported in lenient mode)."""
        try:
            return all(self.validate(v, n, own_only=True) for n in m.nids)
        except _FormatUnknown:
            return False  # dropping a value only rejects valid texts
        except _CannotValidate as e:
            self.unsupported(e.message, e.path)
            return True

    def gen_enum(self, m: _Merged, depth: int, hint: str) -> Optional[Expr]:
        out = []
        seen = set()
        for v in m.enum:
            ok = self.enum_value_ok(v, m)
            sig = _canon(v)  # 1 and 1.0 are one value (with the same spellings)
            if ok and self.excludes and not self.literal_allowed(v):
                ok = False
            if ok and sig not in seen:
                seen.add(sig)
                out.append(self.literal(v, depth))
        if not out:
            return None
        return make_choice(out)

    def literal(self, v, depth: int) -> Expr:
        parts: list = []
        self._literal_parts(v, depth, parts)
        return make_seq(parts)

    def _literal_parts(self, v, depth: int, parts: list) -> None:
        # Appends to one flat list: a make_seq per nesting level would re-flatten every inner
        # level again (quadratic: a const nested 6,000 deep took minutes).
        L = self.layout
        if v is None:
            parts.append(Bytes(b"null"))
        elif v is True:
            parts.append(Bytes(b"true"))
        elif v is False:
            parts.append(Bytes(b"false"))
        elif isinstance(v, (int, float)):
            parts.append(make_choice([Bytes(t.encode()) for t in self.number_spellings(v)]))
        elif isinstance(v, str):
            parts += [Bytes(b'"'), self.literal_body(v), Bytes(b'"')]
        elif isinstance(v, list):
            if not v:
                parts += [Bytes(b"["), L.empty(), Bytes(b"]")]
                return
            parts += [Bytes(b"["), L.open(depth)]
            for i, x in enumerate(v):
                if i:
                    parts.append(L.sep(depth))
                self._literal_parts(x, depth + 1, parts)
            parts += [L.close(depth), Bytes(b"]")]
        elif isinstance(v, dict):
            if not v:
                parts += [Bytes(b"{"), L.empty(), Bytes(b"}")]
                return
            parts += [Bytes(b"{"), L.open(depth)]
            for i, (k, x) in enumerate(v.items()):
                if i:
                    parts.append(L.sep(depth))
                parts += [Bytes(b'"'), self.literal_body(k), Bytes(b'"'), L.key_sep()]
                self._literal_parts(x, depth + 1, parts)
            parts += [L.close(depth), Bytes(b"}")]
        else:
            raise UnsupportedSchemaError(f"not a JSON value in enum/const: {v!r}", "#")

    def literal_body(self, s: str) -> Expr:
        """The JSON text of string ``s`` without quotes, spellings with an excluded substring
        left out (callers drop values without spellings first, see ``literal_allowed``)."""
        body = json_string_literal(s)
        if not self.excludes:
            return body
        key = ("lit_excl", s)
        if key not in self.shared:
            self.shared[key] = expr_avoiding(body, self.excludes, self.sink, "lit")
        e = self.shared[key]
        return _NEVER if e is None else e

    def literal_allowed(self, v) -> bool:
        """False when a string (or key) inside ``v`` has no spelling free of excluded words."""
        if isinstance(v, str):
            return self.literal_body(v) is not _NEVER
        if isinstance(v, list):
            return all(self.literal_allowed(x) for x in v)
        if isinstance(v, dict):
            return all(self.literal_allowed(k) and self.literal_allowed(x) for k, x in v.items())
        return True

    def number_spellings(self, v) -> List[str]:
        """The spellings of an ``enum``/``const`` number: its ``json.dumps`` text and, for an
        integral value (draft 6 and later, where ``1.0`` is an integer), both the integer
        and the ``json.dumps(float)`` form (``1`` / ``1.0``; zero also as ``-0`` / ``-0.0``)."""
        out = [json.dumps(v)]
        integral = isinstance(v, int) or (isinstance(v, float) and math.isfinite(v) and v.is_integer())
        if self.doc.draft >= 6 and integral:
            n = int(v)
            cands = [json.dumps(n)] if abs(n) < 10 ** 30 else []
            if abs(n) < 2 ** 53 or (abs(n) < 2 ** 1024 and float(n) == n):
                cands.append(json.dumps(float(n)))
            if n == 0:
                cands += ["-0", "-0.0"]
            out += [c for c in cands if c not in out]
        return out

    # ------------------------------------------------------------------ numbers
    def gen_number(self, m: _Merged, hint: str) -> Optional[Expr]:
        lo, lo_x, hi, hi_x = m.lo, m.lo_x, m.hi, m.hi_x
        for fmt, path in m.formats:
            if fmt in _NUMERIC_FORMATS:
                a, b = _NUMERIC_FORMATS[fmt]
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
                                   integer=integer, non_integer=nonint, not_multiple_of=not_mult, sink=self.sink,
                                   hint="integer" if integer else "number")
            except (GrammarLimitError, ValueError) as e:
                self.unsupported(f"numeric constraint not expressible: {e}", self.ptr(m.nids[0]) if m.nids else "#")
                return number_expr(integer=integer, sink=self.sink)
        return self.shared_rule(key, "integer" if integer else "number", build)

    # ------------------------------------------------------------------ strings
    def gen_string(self, m: _Merged, hint: str) -> Optional[Expr]:
        key = self.string_key(m)
        if key is None:
            return None
        return self.shared_rule(key, "string", lambda: self.build_string(key, m))

    def string_key(self, m: _Merged) -> Optional[tuple]:
        """The string constraint of ``m`` as a hashable key (None: no string fits)."""
        fmts = []
        for fmt, path in m.formats:
            if fmt in _NUMERIC_FORMATS and fmt not in ("float", "double"):
                self.unsupported(f"format {fmt!r} on strings is not supported", path)
                continue
            if fmt in ("float", "double"):
                self.unsupported(f"format {fmt!r} on strings is not supported", path)
                continue
            if format_expr(fmt) is None:
                self.unsupported(f"unknown format {fmt!r}", path)
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
        return ("str", lo, hi, tuple(sorted(set(pats))), tuple(sorted(set(fmts))), tuple(sorted(set(not_pats))),
                tuple(sorted(set(not_fmts))), tuple(sorted(set(m.not_strings))))

    def regex(self, pattern: str, path: str):
        """(code-point expr, lazily built DFA holder) of an unanchored pattern, or None."""
        if pattern in self.regex_memo:
            r = self.regex_memo[pattern]
            if r is None:
                self.unsupported("pattern is not supported", path)
            return r
        try:
            from .regex import regex_to_expr
        except ImportError:
            self.regex_memo[pattern] = None
            self.unsupported("pattern is not supported (no regex support)", path)
            return None
        try:
            e = regex_to_expr(pattern, search=True)
        except (RegexSyntaxError, GrammarError, ValueError) as err:
            self.regex_memo[pattern] = None
            self.unsupported(f"pattern not supported: {err}", path)
            return None
        self.regex_memo[pattern] = e
        return e

    def pattern_dfa(self, pattern: str) -> Optional[Dfa]:
        key = ("re", pattern)
        if key not in self.dfa_memo:
            e = self.regex_memo.get(pattern)
            if e is None:
                e = self.regex(pattern, "#")
            self.dfa_memo[key] = None if e is None else _shared_dfa(key, e)
        return self.dfa_memo[key]

    def format_dfa(self, fmt: str, superset: bool = False) -> Optional[Dfa]:
        """The DFA of format ``fmt`` (``superset``: of :func:`format_superset_expr`)."""
        key = ("fmt-superset" if superset else "fmt", fmt)
        if key not in self.dfa_memo:
            e = format_superset_expr(fmt) if superset else format_expr(fmt)
            self.dfa_memo[key] = None if e is None else _shared_dfa(key, e)
        return self.dfa_memo[key]

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

    def build_string(self, key, m: _Merged) -> Optional[Expr]:
        _, lo, hi, pats, fmts, not_pats, not_fmts, not_strings = key
        q = Bytes(b'"')
        if self.excludes and not (pats or fmts):
            return self.build_excluded_string(key, m)
        if not (pats or fmts or not_pats or not_fmts or not_strings):
            if lo == 0 and hi is None:
                return make_seq([q, Repeat(JSON_CHAR_PERMISSIVE, 0, None), q])
            return make_seq([q, self.counted(JSON_CHAR, lo, hi, "str_chunk", _DIRECT_STRING), q])
        path = self.ptr(m.nids[0]) if m.nids else "#"
        if len(pats) + len(fmts) == 1 and not (not_pats or not_fmts or not_strings) and lo == 0 and hi is None:
            e = self.regex_memo[pats[0]] if pats else format_expr(fmts[0])
            enc = _shared_json_encoding(("re", pats[0]) if pats else ("fmt", fmts[0]), e)
            return None if enc is None else make_seq([q, enc, q])
        try:
            d = self.string_dfa(key)
        except GrammarLimitError as err:
            self.unsupported(f"string constraints too complex to intersect: {err}", path)
            return make_seq([q, Repeat(JSON_CHAR_PERMISSIVE, 0, None), q])
        if d is None:
            return make_seq([q, self.counted(JSON_CHAR, lo, hi, "str_chunk", _DIRECT_STRING), q])
        body = self.emit_string_dfa(d, "str")
        return None if body is None else make_seq([q, body, q])

    def build_excluded_string(self, key, m: _Merged) -> Optional[Expr]:
        """A string without pattern/format whose JSON text contains no excluded word: the
        automaton of its JSON text (lengths counted in decoded characters) intersected with
        :func:`.text_exclusion.avoid_dfa`."""
        _, lo, hi, _, _, not_pats, not_fmts, not_strings = key
        path = self.ptr(m.nids[0]) if m.nids else "#"
        if not_pats or not_fmts or not_strings:
            self.unsupported("excludes together with a negated string constraint ('not') are not "
                             "supported", path, "negation dropped")
        text = Repeat(JSON_CHAR_PERMISSIVE, 0, None) if lo == 0 and hi is None else Repeat(JSON_CHAR, lo, hi)
        try:
            body = automaton_rules(exclude_words(dfa_from_expr(text), self.excludes), self.sink, "str")
        except GrammarLimitError as err:
            raise UnsupportedSchemaError(f"string length bounds too large to combine with excludes: {err}",
                                         path) from None
        q = Bytes(b'"')
        return None if body is None else make_seq([q, body, q])

    def emit_string_dfa(self, d: Dfa, hint: str) -> Optional[Expr]:
        return dfa_to_expr(d, self.sink, hint, label=lambda rs: encode_char_class_as_json(CharClass(tuple(rs))))

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
        n = d.n_states
        univ = -1
        for q in range(n):
            if d.accept[q] and _covers(d.edges[q], _SCALARS, q):
                univ = q
                break
        acc2 = []
        simple = True
        for q in range(n):
            targets = _targets_over(d.edges[q], ESCAPABLE)
            if targets == {-1}:
                acc2.append(False)
            elif univ >= 0 and targets == {univ}:
                acc2.append(True)
            else:
                simple = False
                break
        if not simple:
            return dfa_to_expr(d, self.sink, hint, label=lambda rs: encode_ranges_canonical(rs, esc_any))
        lit_edges = [tuple((max(lo, a), min(hi, b), t) for lo, hi, t in es for a, b in _LIT
                           if max(lo, a) <= min(hi, b)) for es in d.edges]
        lit_edges = [tuple(sorted(es)) for es in lit_edges]
        pre = (lambda: dfa_to_expr(Dfa(lit_edges, acc2), self.sink, hint + "_pre")) if any(acc2) else None
        return self._emit_key_split(Dfa(lit_edges, list(d.accept)), pre, esc_any, hint)

    def emit_key_complement(self, words: List[str], hint: str) -> Optional[Expr]:
        """``emit_key_dfa`` of the keys other than ``words`` (all of printable ASCII, see
        :data:`_LITERAL_KEY`), without building the full automaton: the escape-free keys are
        ``dfa_word_complement`` over printable ASCII, and every state leads to the
        accept-all state on an escapable character, whose escape-free prefixes are any
        printable ASCII string (the same expression, rule for rule)."""
        esc_any = self._key_esc_char()
        return self._emit_key_split(dfa_word_complement(words, _LIT), lambda: _ANY_LIT_EXPR, esc_any, hint)

    def _key_esc_char(self) -> Expr:
        return self.shared_rule("key_esc_char", "key_esc_char",
                                lambda: encode_ranges_canonical(ESCAPABLE))

    def _emit_key_split(self, lit: Dfa, pre, esc_any: Expr, hint: str) -> Optional[Expr]:
        """Keys as the escape-free strings of ``lit``, or an escape-free prefix, one escaped
        character and anything after it; ``pre()`` emits the prefixes (after ``lit``: rule
        names follow the emission order), ``pre`` is None when there are none."""
        e1 = dfa_to_expr(lit, self.sink, hint)
        alts = [e1] if e1 is not None else []
        if pre is not None:
            e2 = pre()
            if e2 is not None:
                rest = self.shared_rule("key_any_rest", "key_any_rest", lambda: Repeat(
                    make_choice([CharClass(_LIT), esc_any]), 0, None))
                alts.append(make_seq([e2, esc_any, rest]))
        return make_choice(alts) if alts else None

    def counted(self, item: Expr, lo: int, hi: Optional[int], hint: str,
                direct: int = _DIRECT_REPEAT) -> Expr:
        """``item{lo,hi}``; counts above ``direct`` are factored through chunk rules
        ``item{a}`` (a about the square root but at least ``direct``, recursively), which is
        exact and keeps automata small.  Chunks make tokens that cross a chunk end
        context-dependent (checked per mask), so string characters use a large ``direct``
        (:data:`_DIRECT_STRING`): a plain chain of states, where the mask cache merges all
        states further than the longest token from the bound."""
        if hi is not None and hi <= direct or hi is None and lo <= direct:
            return _rep(item, lo, hi)
        head = self._exactly(item, lo, hint, direct=direct)
        tail = Repeat(item, 0, None) if hi is None else self._up_to(item, hi - lo, hint, direct)
        return make_seq([head, tail])

    def _chunk(self, item: Expr, n: int, hint: str, direct: int) -> Expr:
        return self.shared_rule(("chunk", item, n), hint,
                                lambda: self._exactly(item, n, hint, inline=True, direct=direct))

    def _exactly(self, item: Expr, n: int, hint: str, inline: bool = False,
                 direct: int = _DIRECT_REPEAT) -> Expr:
        if n <= direct:
            return _rep(item, n, n)
        a = max(math.isqrt(n), direct)
        q, r = divmod(n, a)
        chunk = self._chunk(item, a, hint, direct)
        return make_seq([self._exactly(chunk, q, hint), _rep(item, r, r)])

    def _up_to(self, item: Expr, m: int, hint: str, direct: int = _DIRECT_REPEAT) -> Expr:
        """``item{0,m}``: n = a*k + s with s < a for k < q, and s <= r for k = q."""
        if m <= direct:
            return _rep(item, 0, m)
        a = max(math.isqrt(m + 1), direct)
        q, r = divmod(m, a)
        chunk = self._chunk(item, a, hint, direct)
        return make_choice([
            make_seq([self._up_to(chunk, q - 1, hint), self._up_to(item, a - 1, hint, direct)]),
            make_seq([self._exactly(chunk, q, hint), self._up_to(item, r, hint, direct)]),
        ])

    # ------------------------------------------------------------------ arrays
    def gen_array(self, m: _Merged, depth: int, hint: str) -> Optional[Expr]:
        L = self.layout
        plen = max((len(u[0]) for u in m.arr_units if u[0] is not None), default=0)
        has_prefix = any(u[0] is not None for u in m.arr_units)

        def atoms_at(j: Optional[int]) -> FrozenSet:
            acc: set = set()
            for prefix, rest, _ in m.arr_units:
                if j is not None and prefix is not None and j < len(prefix):
                    acc |= self.flatten(prefix[j])
                elif rest is not None:
                    acc |= self.flatten(rest)
            if self.strict and has_prefix and not m.has_rest and (j is None or j >= plen):
                return frozenset((_FALSE,))
            return frozenset(acc) if _FALSE not in acc else frozenset((_FALSE,))

        if m.unique is not None and (m.max_items is None or m.max_items > 1):
            e = self.gen_unique_array(m, depth, hint, atoms_at, plen) if not m.contains else False
            if e is not False:
                return e
            self.unsupported("uniqueItems is not enforced", m.unique)

        lo, hi = m.min_items, m.max_items
        rest_atoms = atoms_at(None)
        if _FALSE in rest_atoms:
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
        items = [self.value_ref(atoms_at(j), d1, f"{hint}_{j}") for j in range(npos)]
        if npos == 0:
            # no prefix: rest (sep rest){lo'-1, hi-1} with lo' = max(lo, 1)
            body = None
            if hi is None or hi >= 1:
                rest_ref = self.value_ref(rest_atoms, d1, f"{hint}_item")
                if rest_ref is not None:
                    r_lo = max(lo, 1)
                    body = make_seq([rest_ref, self.counted(make_seq([sep, rest_ref]), r_lo - 1,
                                                            None if hi is None else hi - 1, f"{hint}_items")])
        else:
            # after all npos prefix elements
            if npos < plen or (hi is not None and hi <= plen):
                after: Optional[Expr] = EPSILON if lo <= npos else None
            else:
                rest_ref = self.value_ref(rest_atoms, d1, f"{hint}_item")
                r_lo = max(0, lo - plen)
                if rest_ref is None:
                    after = EPSILON if r_lo == 0 else None
                else:
                    after = self.counted(make_seq([sep, rest_ref]), r_lo, None if hi is None else hi - plen,
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
        alts = []
        if body is not None:
            alts.append(make_seq([L.open(depth), body, L.close(depth)]))
        if lo == 0:
            alts.append(L.empty())
        if not alts:
            return None
        return make_seq([Bytes(b"["), make_choice(alts), Bytes(b"]")])

    def gen_unique_array(self, m: _Merged, depth: int, hint: str, atoms_at, plen: int):
        """uniqueItems over small finite item domains (enum/const, booleans, null) at every
        position (``prefixItems`` and the rest): arrays of distinct values, one rule per set
        of used values (its size is the position).  False if not applicable."""
        values: List[Any] = []
        index: Dict[Any, int] = {}
        domains: List[int] = []  # bit set of the allowed values, per position 0..plen (plen: the rest)
        for j in list(range(plen)) + [None]:
            acc = atoms_at(j)
            bits = 0
            if _FALSE not in acc:
                if any(a[0] != "own" for a in acc):
                    return False
                im = self.merge(acc)
                if im.enum is not None:
                    cands = im.enum
                elif im.kinds <= {NULL, BOOL}:
                    cands = ([None] if NULL in im.kinds else []) + ([True, False] if BOOL in im.kinds else [])
                else:
                    return False
                for v in cands:
                    try:
                        ok = all(self.validate(v, n, own_only=True) for n in im.nids)
                    except _FormatUnknown:
                        ok = False  # dropping a value only rejects valid texts
                    except _CannotValidate:
                        return False
                    if not ok:
                        continue
                    c = _canon(v)
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
        L = self.layout
        sep = L.sep(depth)
        lits = [self.literal(v, depth + 1) for v in values]
        names: Dict[int, str] = {}
        todo: List[int] = []

        def ref(used: int) -> Expr:  # the array so far holds the values in ``used``
            if used not in names:
                names[used] = self.sink.fresh(f"{hint}_uniq{used}")
                self.rules[names[used]] = None
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
            self.rules[names[used]] = make_choice(alts) if alts else _NEVER
        alts = []
        if hi >= 1 and values:
            alts.append(make_seq([L.open(depth), start, L.close(depth)]))
        if lo == 0:
            alts.append(L.empty())
        return make_seq([Bytes(b"["), make_choice(alts), Bytes(b"]")]) if alts else None

    def gen_array_contains(self, m, contains, plen, rest_atoms, lo, hi, depth, hint) -> Optional[Expr]:
        L = self.layout
        if len(contains) > 1 or plen > 0:
            self.unsupported("contains with prefixItems or several contains is not supported", contains[0][3])
            contains = contains[:1] if plen == 0 else []
            if not contains:
                return self.gen_array(_strip_contains(m), depth, hint)
        cnid, cmin, cmax, path = contains[0]
        if cmax is not None:
            neg = self.negate(cnid)
            if neg is None:
                self.unsupported("maxContains is not enforced", path.rsplit("/", 1)[0] + "/maxContains")
                cmax = None
        d1 = depth + 1
        any_ref = self.value_ref(rest_atoms, d1, f"{hint}_item")
        yes_ref = self.value_ref(rest_atoms | self.flatten(cnid), d1, f"{hint}_match")
        no_ref = None
        if cmax is not None:
            no_ref = self.value_ref(rest_atoms | self.disj_atoms(self.negate(cnid)), d1, f"{hint}_nomatch")
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
                names[key] = self.sink.fresh(f"{hint}_c{n}_{k}")
                self.rules[names[key]] = None
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
            self.rules[names[(n, k)]] = make_choice(alts) if alts else _NEVER
        body = start
        alts = [make_seq([L.open(depth), body, L.close(depth)])]
        if lo == 0 and cmin == 0:
            alts.append(L.empty())
        return make_seq([Bytes(b"["), make_choice(alts), Bytes(b"]")])

    def disj_atoms(self, alternatives: Optional[List[FrozenSet]]) -> FrozenSet:
        if alternatives is None:
            return frozenset()
        if len(alternatives) == 1:
            return alternatives[0]
        return frozenset((self.disjunction_atom(alternatives),))

    # ------------------------------------------------------------------ objects
    def prop_atoms(self, m: _Merged, name: str) -> FrozenSet:
        acc: set = set()
        declared_anywhere = False
        for props, pats, addl, _ in m.obj_units:
            hit = False
            if name in props:
                acc |= self.flatten(props[name])
                hit = True
                declared_anywhere = True
            for pat, pn, ppath in pats:
                d = self.pattern_dfa_or_none(pat, ppath)
                if d is not None and d.matches(name):
                    acc |= self.flatten(pn)
                    hit = True
            if not hit and addl is not None:
                acc |= self.flatten(addl)
        if self.strict and not m.has_addl and not declared_anywhere and m.obj_units and self._strict_objects(m):
            if not any(self.pattern_matches_any(u, name) for u in m.obj_units):
                return frozenset((_FALSE,))
        if _FALSE in acc:
            return frozenset((_FALSE,))
        return frozenset(acc)

    def _strict_objects(self, m: _Merged) -> bool:
        return any(props or pats for props, pats, _, _ in m.obj_units)

    def pattern_matches_any(self, unit, name: str) -> bool:
        for pat, _, ppath in unit[1]:
            d = self.pattern_dfa_or_none(pat, ppath)
            if d is not None and d.matches(name):
                return True
        return False

    def pattern_dfa_or_none(self, pat: str, path: str) -> Optional[Dfa]:
        if self.regex(pat, path) is None:
            return None
        try:
            return self.pattern_dfa(pat)
        except GrammarLimitError as e:
            self.unsupported(f"pattern too complex: {e}", path)
            return None

    def name_allowed(self, m: _Merged, name: str) -> bool:
        for pn in m.prop_names:
            try:
                if not self.validate(name, pn):
                    return False
            except _FormatUnknown:
                return False  # not using the name only rejects valid texts
            except _CannotValidate as e:
                self.unsupported(e.message, e.path)
        return True

    def key_classes(self, m: _Merged, declared: List[str], hint: str) -> List[Tuple[Expr, FrozenSet]]:
        """(key expression, value atoms) for the keys outside ``declared``, one per set of
        ``patternProperties`` patterns a key matches."""
        pats: List[Tuple[int, str, int, str]] = []  # (unit index, pattern, schema nid, path)
        for ui, (props, upats, addl, _) in enumerate(m.obj_units):
            for pat, pn, ppath in upats:
                if self.pattern_dfa_or_none(pat, ppath) is not None:
                    pats.append((ui, pat, pn, ppath))
        strict_forbid = self.strict and not m.has_addl and self._strict_objects(m)

        def atoms_for(matched: FrozenSet[int]) -> FrozenSet:
            acc: set = set()
            for ui, (props, upats, addl, _) in enumerate(m.obj_units):
                mine = [pats[i] for i in matched if pats[i][0] == ui]
                if mine:
                    for _, _, pn, _ in mine:
                        acc |= self.flatten(pn)
                elif addl is not None:
                    acc |= self.flatten(addl)
            if not matched and strict_forbid:
                return frozenset((_FALSE,))
            return frozenset((_FALSE,)) if _FALSE in acc else frozenset(acc)

        names_key = tuple(m.prop_names)
        if not pats:
            atoms = atoms_for(frozenset())
            if _FALSE in atoms:
                return []
            key = self.key_expr(declared, None, (), names_key, m, hint)
            return [] if key is None else [(key, atoms)]
        try:
            dfas = [self.pattern_dfa(p[1]) for p in pats]
            prod, labels = _classify_product(dfas)
        except GrammarLimitError as e:
            self.unsupported(f"patternProperties too complex: {e}", pats[0][3])
            return []
        out = []
        pat_key = tuple(p[1] for p in pats)
        for label in sorted(set(labels), key=sorted):
            atoms = atoms_for(label)
            if _FALSE in atoms:
                continue
            cls = Dfa(prod.edges, [lab == label for lab in labels])
            key = self.key_expr(declared, cls, (pat_key, tuple(sorted(label))), names_key, m, hint)
            if key is not None:
                out.append((key, atoms))
        return out

    def prop_names_dfa(self, m: _Merged) -> Optional[Dfa]:
        """DFA of the allowed key strings from ``propertyNames`` (None: any)."""
        if not m.prop_names:
            return None
        d = None
        for pn in m.prop_names:
            atoms = self.flatten(pn)
            if _FALSE in atoms:
                return dfa_literals([])
            if any(a[0] != "own" for a in atoms):
                self.unsupported("propertyNames with anyOf/oneOf/not is not supported", self.ptr(pn))
                continue
            pm = self.merge(atoms)
            if STR not in pm.kinds:
                return dfa_literals([])
            if pm.enum is not None:
                x = dfa_literals([v for v in pm.enum if isinstance(v, str) and self.enum_value_ok(v, pm)])
            else:
                key = ("str", pm.min_len, pm.max_len,
                       tuple(p for p, path in pm.patterns if self.regex(p, path) is not None),
                       tuple(f for f, path in pm.formats if self._string_format_ok(f, path)),
                       tuple(p for p, path in pm.not_patterns if self.regex(p, path) is not None),
                       tuple(f for f, _ in pm.not_formats), tuple(pm.not_strings))
                if key[1] == 0 and key[2] is None and not any(key[3:]):
                    continue
                x = self.string_dfa(key)
                if x is None:  # length only
                    x = dfa_with_length(_any_string_dfa(), pm.min_len, pm.max_len)
            for kind, path, msg in pm.gated:
                if kind in (None, STR):
                    self.unsupported(msg, path)
            d = x if d is None else dfa_product(d, x, "and")
        return d

    def _string_format_ok(self, f: str, path: str) -> bool:
        if format_expr(f) is None:
            self.unsupported(f"unknown format {f!r}", path)
            return False
        return True

    def key_expr(self, declared: List[str], cls: Optional[Dfa], cls_key, names_key, m: _Merged,
                 hint: str) -> Optional[Expr]:
        """A JSON string key: decoded value in ``cls`` (None: any), allowed by propertyNames,
        and not one of ``declared``."""
        key = ("key", tuple(sorted(declared)), cls_key, names_key)

        def build():
            if self.excludes:
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
                self.unsupported(f"object key constraints too complex: {e}", self.ptr(m.nids[0]) if m.nids else "#")
                return None
            q = Bytes(b'"')
            if literal:
                body = self.emit_key_complement(declared, f"{hint}_key")
                return None if body is None else make_seq([q, body, q])
            if d is None:
                return make_seq([q, Repeat(JSON_CHAR_PERMISSIVE, 0, None), q])
            body = self.emit_key_dfa(d, f"{hint}_key")
            return None if body is None else make_seq([q, body, q])
        return self.shared_rule(key, f"{hint}_key", build)

    def excluded_key(self, declared: List[str], cls: Optional[Dfa], m: _Merged) -> Optional[Expr]:
        """An additional key whose JSON text contains no excluded word (any key but the
        ``declared`` ones; other key constraints with excludes are unsupported)."""
        path = self.ptr(m.nids[0]) if m.nids else "#"
        if cls is not None or m.prop_names or not all(_LITERAL_KEY.fullmatch(w) for w in declared):
            self.unsupported("excludes with patternProperties, propertyNames or non-ASCII property "
                             "names next to additional properties are not supported", path, "no additional keys")
            return None
        if declared:  # printable ASCII only literally, so a declared name has one spelling
            char = make_choice([CharClass(_LIT), encode_ranges_canonical(ESCAPABLE)])
            d = dfa_product(dfa_from_expr(Repeat(char, 0, None)), dfa_literals(declared), "diff")
        else:
            d = dfa_from_expr(Repeat(JSON_CHAR_PERMISSIVE, 0, None))
        body = automaton_rules(exclude_words(d, self.excludes), self.sink, "key")
        q = Bytes(b'"')
        return None if body is None else make_seq([q, body, q])

    def gen_object(self, m: _Merged, depth: int, hint: str) -> Optional[Expr]:
        L = self.layout
        d1 = depth + 1
        # a name sits where ``properties`` first declares it, else where it is first mentioned:
        # a name an earlier allOf branch only requires must not precede the properties a later
        # branch declares before it
        order = sorted(m.names, key=lambda n: m.declared.get(n, m.names[n]))
        members = []  # (name, member expr or None, required)
        for name in order:
            req = name in m.required
            atoms = self.prop_atoms(m, name)
            val = None
            if _FALSE not in atoms and self.name_allowed(m, name):
                val = self.value_ref(atoms, d1, f"{hint}_{name}")
            if val is None:
                if req:
                    return None
                continue
            if self.excludes and not self.literal_allowed(name):
                if req:
                    return None
                continue
            key = make_seq([Bytes(b'"'), self.literal_body(name), Bytes(b'"')])
            members.append((name, make_seq([key, L.key_sep(), val]), req))
        n_req = sum(1 for _, _, r in members if r)
        if m.max_props is not None and n_req > m.max_props:
            return None
        declared = list(order)
        extra = []
        for key, atoms in self.key_classes(m, declared, hint):
            val = self.value_ref(atoms, d1, f"{hint}_addl")
            if val is not None:
                extra.append(make_seq([key, L.key_sep(), val]))
        addl = make_choice(extra) if extra else None
        if addl is not None and len(extra) > 1:
            addl = self.shared_rule(("addl", addl), f"{hint}_addl_member", lambda: make_choice(extra))
        if self.any_order and (len(members) > 1 or (members and addl is not None)):
            if len(members) > MAX_ANY_ORDER_PROPERTIES:
                self.unsupported(f"any_order supports at most {MAX_ANY_ORDER_PROPERTIES} properties; "
                                 "using declaration order", self.ptr(m.nids[0]) if m.nids else "#", "restricted")
                body = self.members_in_order(members, addl, m, depth, hint)
            else:
                body = self.members_any_order(members, addl, m, depth, hint)
        else:
            body = self.members_in_order(members, addl, m, depth, hint)
        alts = []
        if body is not None:
            alts.append(make_seq([L.open(depth), body, L.close(depth)]))
        if n_req == 0 and m.min_props == 0:
            alts.append(L.empty())
        if not alts:
            return None
        return make_seq([Bytes(b"{"), make_choice(alts), Bytes(b"}")])

    def _count_cap(self, m: _Merged, n_members: int) -> int:
        if m.max_props is not None:
            cap = m.max_props
        else:
            cap = max(m.min_props, 1)
        if m.max_props is not None and m.max_props > MAX_COUNT_BOUND or m.min_props > MAX_COUNT_BOUND:
            raise GrammarLimitError(f"property count bound above {MAX_COUNT_BOUND}", path=m.big.get("props"))
        return cap

    def members_in_order(self, members, addl, m: _Merged, depth: int, hint: str) -> Optional[Expr]:
        """Non-empty member sequences in declaration order, additional members last.

        E(i, c): the members from position i on, when c members were written (c saturates
        at ``cap`` when there is no maxProperties); E(n, c) are the additional members.
        """
        L = self.layout
        sep = L.sep(depth)
        n = len(members)
        cap = self._count_cap(m, n)
        lo_p, hi_p = m.min_props, m.max_props
        if sum(min(i, cap) + 1 for i in range(n + 1)) > MAX_COUNT_STATES:
            raise GrammarLimitError("object property counts need too many states", path=m.big.get("props"))

        def norm(c: int) -> int:
            return c if hi_p is not None else min(c, cap)

        def tail_additional(c: int) -> Optional[Expr]:
            need = max(0, lo_p - c)
            room = None if hi_p is None else hi_p - c
            if c == 0:
                need = max(need, 1)
            if room is not None and room < need:
                return None
            if addl is None:
                return EPSILON if need == 0 else None
            if room == 0:
                return EPSILON
            if c == 0:
                rest = self.counted(make_seq([sep, addl]), need - 1, None if room is None else room - 1,
                                    f"{hint}_more")
                return make_seq([addl, rest])
            if c >= lo_p and hi_p is None:
                return Repeat(make_seq([sep, addl]), 0, None)
            return self.counted(make_seq([sep, addl]), need, room, f"{hint}_more")

        if lo_p == 0 and hi_p is None:
            return self._members_chain(members, sep, tail_additional, hint)
        exprs: Dict[Tuple[int, int], Optional[Expr]] = {}
        refs: Dict[Tuple[int, int], Optional[Expr]] = {}

        def ref_of(i: int, c: int) -> Optional[Expr]:
            key = (i, c)
            if key in refs:
                return refs[key]
            e = exprs.get(key)
            if e is not None and not _small(e) and i > 0:
                name = self.sink.fresh(f"{hint}_m{i}_{c}")
                self.rules[name] = e
                e = RuleRef(name)
            refs[key] = e
            return e

        for c in range(0, min(n, cap) + 1):
            exprs[(n, c)] = tail_additional(c)
        for i in range(n - 1, -1, -1):
            _, mem, req = members[i]
            for c in range(0, min(i, cap) + 1):
                alts = []
                if hi_p is None or c + 1 <= hi_p:
                    nxt = ref_of(i + 1, norm(c + 1))
                    if nxt is not None:
                        alts.append(make_seq(([sep] if c > 0 else []) + [mem, nxt]))
                if not req:
                    skip = ref_of(i + 1, c)
                    if skip is not None:
                        alts.append(skip)
                exprs[(i, c)] = make_choice(alts) if alts else None
        return exprs.get((0, 0))

    def _members_chain(self, members, sep, tail_additional, hint: str) -> Optional[Expr]:
        """Members in order without count limits.  A(j): members j.. after at least one was
        written, ``(sep m_j)? A(j+1)`` (one reference to A(j+1)); F(j): nothing written yet,
        ``m_j A(j+1) | F(j+1)``."""
        n = len(members)
        a_refs: List[Optional[Expr]] = [None] * (n + 1)
        a_refs[n] = tail_additional(1)
        for j in range(n - 1, -1, -1):
            _, mem, req = members[j]
            nxt = a_refs[j + 1]
            if nxt is None:
                continue
            step = make_seq([sep, mem])
            body = make_seq([step if req else Repeat(step, 0, 1), nxt])
            if j > 0 and not _small(body):
                name = self.sink.fresh(f"{hint}_after{j}")
                self.rules[name] = body
                body = RuleRef(name)
            a_refs[j] = body
        f_ref: Optional[Expr] = tail_additional(0)
        for j in range(n - 1, -1, -1):
            _, mem, req = members[j]
            take = make_seq([mem, a_refs[j + 1]]) if a_refs[j + 1] is not None else None
            alts = [x for x in (take, None if req else f_ref) if x is not None]
            body = make_choice(alts) if alts else None
            if body is not None and j > 0 and not _small(body):
                name = self.sink.fresh(f"{hint}_first{j}")
                self.rules[name] = body
                body = RuleRef(name)
            f_ref = body
        return f_ref

    def members_any_order(self, members, addl, m: _Merged, depth: int, hint: str) -> Optional[Expr]:
        L = self.layout
        sep = L.sep(depth)
        n = len(members)
        cap = self._count_cap(m, n)
        lo_p, hi_p = m.min_props, m.max_props
        req_mask = 0
        for i, (_, _, r) in enumerate(members):
            if r:
                req_mask |= 1 << i
        if (1 << n) * (cap + 1) > MAX_COUNT_STATES:
            raise GrammarLimitError("any_order object needs too many states")
        names: Dict[Tuple[int, int], str] = {}
        todo: List[Tuple[int, int]] = []

        def ref(s: int, c: int) -> Optional[Expr]:
            if hi_p is not None and c > hi_p:
                return None
            c = c if hi_p is not None else min(c, cap)
            key = (s, c)
            if key not in names:
                names[key] = self.sink.fresh(f"{hint}_any{s}_{c}")
                self.rules[names[key]] = None
                todo.append(key)
            return RuleRef(names[key])

        start = ref(0, 0)
        while todo:
            s, c = todo.pop()
            alts = []
            lead = [sep] if c > 0 else []
            if c > 0 and (s & req_mask) == req_mask and c >= lo_p:
                alts.append(EPSILON)
            for i, (_, mem, _) in enumerate(members):
                if not s & (1 << i):
                    nxt = ref(s | (1 << i), c + 1)
                    if nxt is not None:
                        alts.append(make_seq(lead + [mem, nxt]))
            if addl is not None:
                nxt = ref(s, c + 1)
                if nxt is not None:
                    alts.append(make_seq(lead + [addl, nxt]))
            self.rules[names[(s, c)]] = make_choice(alts) if alts else _NEVER
        return start

    # ------------------------------------------------------------------ disjointness
    def disjoint(self, a: FrozenSet, b: FrozenSet, budget: int) -> bool:
        """True only if no instance satisfies both atom sets (a sound, partial test)."""
        if _FALSE in a or _FALSE in b:
            return True
        ma = self.merge(frozenset(x for x in a if x[0] == "own"), proof=True)
        mb = self.merge(frozenset(x for x in b if x[0] == "own"), proof=True)
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
        except _CannotValidate:
            pass
        if ma.enum is not None or mb.enum is not None:
            # enumerated values: only the value checks above can decide
            return False
        for k in common:
            if k in (NULL, BOOL):
                return False
            if k in (INT, FRAC):
                if not _ranges_disjoint(ma, mb):
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
                if not _counts_disjoint(ma.min_items, ma.max_items, mb.min_items, mb.max_items):
                    return False
        return True

    def _value_kinds(self, m: _Merged) -> set:
        if m.enum is not None:
            return {_kind_of(v) for v in m.enum} & m.kinds
        return set(m.kinds)

    def _valid_atoms(self, v, m: _Merged) -> bool:
        return all(self.validate(v, n, own_only=True) for n in m.nids)

    def _strings_disjoint(self, ma: _Merged, mb: _Merged) -> bool:
        if _counts_disjoint(ma.min_len, ma.max_len, mb.min_len, mb.max_len):
            return True
        if not (ma.patterns or ma.formats or mb.patterns or mb.formats):
            return False
        try:
            da = self._simple_string_dfa(ma)
            db = self._simple_string_dfa(mb)
            if da is None or db is None:
                return False
            return dfa_product(da, db, "and").is_empty()
        except (GrammarLimitError, UnsupportedSchemaError):
            return False

    def _simple_string_dfa(self, m: _Merged) -> Optional[Dfa]:
        d = None
        for p, path in m.patterns:
            if self.regex_memo.get(p, 0) is None:
                return None
            if p not in self.regex_memo:
                try:
                    from .regex import regex_to_expr
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

    def _objects_disjoint(self, ma: _Merged, mb: _Merged, budget: int) -> bool:
        if _counts_disjoint(ma.min_props, ma.max_props, mb.min_props, mb.max_props):
            return True
        names = set(ma.required) | set(mb.required)
        for name in sorted(names):
            pa, pb = self.prop_atoms(ma, name), self.prop_atoms(mb, name)
            ra, rb = name in ma.required, name in mb.required
            if ra and _FALSE in pb or rb and _FALSE in pa:
                return True
            if ra and rb and self.disjoint(pa, pb, budget):
                return True
        return False

    # ------------------------------------------------------------------ negation
    def negate(self, nid: int) -> Optional[List[FrozenSet]]:
        """Alternatives (atom sets) whose union is the complement of schema ``nid``; None if
        not expressible."""
        saved = self.origin
        self.origin = self.doc.nodes[nid][2]
        try:
            return self._negate(nid)
        finally:
            self.origin = saved

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
            if k in _ANNOTATIONS or k == "$ref":
                continue
            kp = f"{p}/{k}"
            part = self._negate_keyword(obj, k, v, base, kp)
            if part is None:
                if k not in _KNOWN_KEYWORDS:
                    continue  # unknown keywords are annotations
                return None
            alts += part
        out = []
        seen = set()
        for a in alts:
            if _FALSE in a or a in seen:
                continue
            seen.add(a)
            out.append(a)
        return out

    def _kinds_atoms(self, kinds) -> FrozenSet:
        ks = tuple(sorted(kinds))
        return self.synth_atoms(("kinds", ks), {"\x00kinds": list(ks)})

    def _not_kind(self, kind: str) -> FrozenSet:
        return self._kinds_atoms(ALL_KINDS - ({kind} if kind != "number" else {INT, FRAC}))

    def _with_kind(self, kinds, extra: dict, key) -> FrozenSet:
        ks = tuple(sorted(kinds))
        obj = dict(extra)
        obj["\x00kinds"] = list(ks)
        return self.synth_atoms(("kw", ks, key), obj)

    def _negate_keyword(self, obj, k, v, base, kp) -> Optional[List[FrozenSet]]:
        num = {INT, FRAC}
        if k == "type":
            types = v if isinstance(v, list) else [v]
            ks = set()
            for t in types:
                if t not in _TYPE_KINDS:
                    return None
                ks |= _TYPE_KINDS[t]
            rest = ALL_KINDS - ks
            return [self._kinds_atoms(rest)] if rest else []
        if k in ("enum", "const"):
            vals = v if k == "enum" else [v]
            if not isinstance(vals, list):
                return None
            kinds_present = {_kind_of(x) for x in vals}
            out = [self._kinds_atoms(ALL_KINDS - kinds_present - ({INT, FRAC} if kinds_present & num else set()))]
            if NULL in kinds_present:
                pass
            if BOOL in kinds_present:
                rem = [b for b in (True, False) if not any(x is b for x in vals)]
                if rem:
                    out.append(self.synth_atoms(("const", tuple(rem)), {"enum": rem}))
            if STR in kinds_present:
                strs = tuple(sorted(x for x in vals if isinstance(x, str)))
                out.append(self._with_kind({STR}, {"\x00not_strings": list(strs)}, ("nstr", strs)))
            if kinds_present & num:
                points = sorted({to_fraction(x) for x in vals if _is_num(x)})
                prev = None
                for pt in points + [None]:
                    extra = {}
                    if prev is not None:
                        extra["exclusiveMinimum"] = _frac_json(prev)
                    if pt is not None:
                        extra["exclusiveMaximum"] = _frac_json(pt)
                    out.append(self._with_kind(num, extra, ("nrange", prev, pt)))
                    prev = pt
            if kinds_present & {OBJ, ARR}:
                return None
            return [a for a in out if a]
        if k in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
            if isinstance(v, bool):
                return []
            if not _is_num(v):
                return None
            excl_flag = obj.get("exclusive" + k[0].upper() + k[1:]) is True if k in ("minimum", "maximum") else True
            if k in ("minimum", "exclusiveMinimum"):
                extra = {"exclusiveMaximum" if not excl_flag else "maximum": v}
            else:
                extra = {"exclusiveMinimum" if not excl_flag else "minimum": v}
            # other kinds satisfy a numeric bound: the complement is numbers beyond it
            return [self._with_kind(num, extra, (k, v, excl_flag))]
        if k == "multipleOf":
            if not _is_num(v):
                return None
            return [self._with_kind(num, {"\x00not_multiple": v}, ("nmult", v))]
        if k in ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"):
            if not _is_num(v):
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
            return [self.flatten(sub)]
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
                conj |= self.disj_atoms(r) if r else {_FALSE}
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

    # ------------------------------------------------------------------ validator
    def validate(self, v, nid: int, own_only: bool = False, _depth: int = 0) -> bool:
        """Reference validator (used for enum filtering and disjointness proofs)."""
        if _depth > 200:
            raise _CannotValidate(self.ptr(nid), "schema recursion too deep to validate")
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
        kind = _kind_of(v)
        for k, kv in obj.items():
            kp = f"{p}/{k}"
            if k in _ANNOTATIONS or k in ("$ref", "minContains", "maxContains"):
                continue
            if own_only and k in _STRUCTURAL:
                continue
            if k == "type":
                types = kv if isinstance(kv, list) else [kv]
                if not any(t == "any" or kind in _TYPE_KINDS.get(t, ()) for t in types):
                    return False
            elif k == "\x00kinds":
                if kind not in kv:
                    return False
            elif k == "enum":
                if not isinstance(kv, list):
                    raise _CannotValidate(kp, "enum must be an array")
                keys = self.enum_keys.get(id(kv))
                if keys is None:
                    keys = self.enum_keys[id(kv)] = (kv, {_canon(x) for x in kv})
                if _canon(v) not in keys[1]:
                    return False
            elif k == "const":
                if not _json_eq(v, kv):
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
                if k == "minLength" and _code_points(v) < kv:
                    return False
                if k == "maxLength" and _code_points(v) > kv:
                    return False
                if k in ("pattern", "\x00not_pattern"):
                    if self.regex_memo.get(kv, 0) is None or self.regex(kv, kp) is None:
                        raise _CannotValidate(kp, "pattern is not supported")
                    if self.pattern_dfa(kv).matches(v) != (k == "pattern"):
                        return False
                if k in ("format", "\x00not_format"):
                    if kv in _NUMERIC_FORMATS or format_expr(kv) is None:
                        raise _CannotValidate(kp, f"unknown format {kv!r}")
                    # in the format if its grammar matches; not in it if a superset does not
                    if self.format_dfa(kv).matches(v):
                        matched = True
                    elif kv in EXACT_FORMATS or not (self.format_dfa(kv, superset=True)
                                                     or _any_string_dfa()).matches(v):
                        matched = False
                    else:
                        raise _FormatUnknown(kp, f"format {kv!r} cannot be decided for {v!r}")
                    if matched != (k == "format"):
                        return False
            elif kind in (INT, FRAC) and k == "format" and kv in _NUMERIC_FORMATS:
                a, b = _NUMERIC_FORMATS[kv]
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
                raise _CannotValidate(kp, f"{k} is not supported")
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
                        if _json_eq(v[i], v[j]):
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
            if self._in_place_applicators(obj):
                raise _CannotValidate(kp, "unevaluatedItems is not supported")
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
            return all(self.validate(v[name], doc.nid(s, base, f"{kp}/{_esc(name)}"), False, d)
                       for name, s in kv.items() if name in v)
        if k == "patternProperties":
            for pat, s in kv.items():
                ppath = f"{kp}/{_esc(pat)}"
                dfa = self.pattern_dfa_or_none(pat, ppath)
                if dfa is None:
                    raise _CannotValidate(ppath, "pattern is not supported")
                for name, x in v.items():
                    if dfa.matches(name) and not self.validate(x, doc.nid(s, base, ppath), False, d):
                        return False
            return True
        if k in ("additionalProperties", "unevaluatedProperties"):
            if k == "unevaluatedProperties":
                if self._in_place_applicators(obj):
                    raise _CannotValidate(kp, "unevaluatedProperties is not supported")
                if "additionalProperties" in obj:
                    return True
            props = obj.get("properties") or {}
            pats = []
            for pat in (obj.get("patternProperties") or {}):
                dfa = self.pattern_dfa_or_none(pat, f"{kp}")
                if dfa is None:
                    raise _CannotValidate(kp, "pattern is not supported")
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
                elif not self.validate(v, doc.nid(dep, base, f"{kp}/{_esc(name)}"), False, d):
                    return False
            return True
        return True


_KNOWN_KEYWORDS = frozenset((
    "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minLength", "maxLength", "pattern", "format", "items", "prefixItems", "additionalItems", "minItems",
    "maxItems", "contains", "minContains", "maxContains", "uniqueItems", "properties", "patternProperties",
    "additionalProperties", "required", "minProperties", "maxProperties", "propertyNames",
    "dependentRequired", "dependentSchemas", "dependencies", "unevaluatedProperties", "unevaluatedItems",
    "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "$ref", "$dynamicRef", "$recursiveRef",
    "contentSchema", "\x00kinds", "\x00not_pattern", "\x00not_format", "\x00not_strings", "\x00not_multiple",
    "\x00extra_key",
    "extends", "disallow", "divisibleBy",
))


# ============================================================================ parts (hooks)

class ObjectView(NamedTuple):
    """The members of the objects at one schema location (see :meth:`SchemaParts.object_view`).

    ``members``: ``(name, value part, required)`` in declaration order; ``additional``: the
    value part of keys outside the declared names (None: no other key allowed);
    ``min_props`` / ``max_props``: the member count bounds (``max_props`` None: unbounded);
    ``pointer``: the schema location; ``additional_declared``: an ``additionalProperties``
    keyword applies (else other keys are allowed only because nothing forbids them).
    """

    members: list
    additional: Optional[FrozenSet]
    min_props: int
    max_props: Optional[int]
    pointer: str
    additional_declared: bool


class StringView(NamedTuple):
    """The strings allowed at one schema location (see :meth:`SchemaParts.string_view`).

    ``dfa``: an automaton over the decoded code points (None: any string); ``plain``: no
    constraint at all (no enum, length, pattern or format); ``filtered``: the string is
    subject to ``excludes`` (it has no pattern or format).
    """

    dfa: Optional[Dfa]
    plain: bool
    filtered: bool


class SchemaParts:
    """Grammar pieces of one JSON Schema, for formats that wrap JSON values in other syntax
    (the XML argument styles of structural tags, :mod:`.xml_arguments`).

    A *part* is an opaque schema location (start with :attr:`root`).  :meth:`branches`
    distributes its disjunctions, :meth:`object_view` lists an object's members,
    :meth:`value` gives the rule of its JSON values of some kinds, :meth:`string_view` its
    strings as an automaton over decoded characters.  Every rule goes into one table
    (:meth:`fresh` / :meth:`define` add the caller's own), which :meth:`rules` returns.

    Example::

        >>> parts = SchemaParts({"type": "object", "properties": {"n": {"type": "integer"}}})
        >>> view = parts.object_view(parts.root)
        >>> [(name, required) for name, _, required in view.members]
        [('n', False)]
    """

    def __init__(self, schema, *, any_whitespace: bool = True, max_whitespace_cnt: Optional[int] = None,
                 strict_mode: bool = True, any_order: bool = False, excludes: Sequence[str] = (),
                 lenient: bool = False, limits: Optional[CompileLimits] = None):
        schema = load_schema(schema)
        self._c = _Converter(schema, _Layout(any_whitespace, None, None, max_whitespace_cnt),
                             strict_mode=strict_mode, lenient=lenient, any_order=any_order,
                             limits=DEFAULT_LIMITS if limits is None else limits, excludes=excludes)
        c = self._c
        self.root: FrozenSet = c.flatten(c.doc.nid(c.doc.root))

    @property
    def report(self) -> List[str]:
        """The loosenings made in lenient mode."""
        return list(self._c.report)

    def pointer(self, part: FrozenSet) -> str:
        """A JSON pointer of the schema at ``part`` (for error messages)."""
        return self._c.ptr(self._c._some_nid(part))

    @property
    def sink(self) -> RuleSink:
        """The shared rule table's sink (for emitting automata with ``dfa_to_expr``)."""
        return self._c.sink

    def fresh(self, hint: str) -> str:
        """A new rule name (reserved in the shared table)."""
        return self._c.sink.fresh(hint)

    def define(self, name: str, expr: Expr) -> None:
        self._c.rules[name] = expr

    def branches(self, part: FrozenSet) -> List[FrozenSet]:
        """``part`` as disjunction-free alternatives (``anyOf``/``oneOf``/... distributed)."""
        c = self._c
        out: List[FrozenSet] = []
        stack = [(part, 0)]
        while stack:
            atoms, n = stack.pop()
            if _FALSE in atoms:
                continue
            disj = [a for a in atoms if a[0] != "own" and a[0] != "chose"]
            if not disj:
                if atoms not in out:
                    out.append(atoms)
                continue
            if n > MAX_DISJUNCTION_NESTING:
                raise UnsupportedSchemaError("disjunctions nested too deeply at one location", self.pointer(atoms))
            d = min(disj, key=repr)
            stack.extend((s, n + 1) for s in reversed(c.alternatives(d, atoms - {d})))
            if len(out) + len(stack) > c.limits.max_alternatives:
                raise GrammarLimitError(f"JSON Schema expands to more than {c.limits.max_alternatives} "
                                        "alternatives at one location (CompileLimits.max_alternatives)",
                                        path=self.pointer(part))
        return out

    def kinds(self, branch: FrozenSet) -> FrozenSet[str]:
        """The JSON types a disjunction-free ``branch`` admits (``number`` for integers too)."""
        m = self._c.merge(branch)
        out = set()
        for k in m.kinds:
            out.add("number" if k in (INT, FRAC) else k)
        if m.enum is not None:
            out = {("number" if _kind_of(v) in (INT, FRAC) else _kind_of(v)) for v in m.enum} & (out | {"number"})
        return frozenset(out)

    def object_view(self, branch: FrozenSet) -> Optional[ObjectView]:
        """The object members at a disjunction-free ``branch`` (None: no object fits)."""
        c = self._c
        m = c.merge(branch)
        if OBJ not in m.kinds or m.enum is not None or m.extra_keys:
            if m.enum is not None or m.extra_keys:
                raise UnsupportedSchemaError("enum/const or negated additionalProperties on the arguments "
                                             "object are not supported in XML styles", self.pointer(branch))
            return None
        p = self.pointer(branch)
        if m.prop_names or any(upats for _, upats, _, _ in m.obj_units):
            raise UnsupportedSchemaError("patternProperties / propertyNames on the arguments object are not "
                                         "supported in XML styles", p)
        members = []
        for name in sorted(m.names, key=lambda n: m.declared.get(n, m.names[n])):
            atoms = c.prop_atoms(m, name)
            if _FALSE in atoms or not c.name_allowed(m, name):
                if name in m.required:
                    return None
                continue
            members.append((name, atoms, name in m.required))
        additional: Optional[FrozenSet] = None
        declared = any(addl is not None for _, _, addl, _ in m.obj_units)
        if not (c.strict and not m.has_addl and c._strict_objects(m)):
            acc: set = set()
            for _, _, addl, _ in m.obj_units:
                if addl is not None:
                    acc |= c.flatten(addl)
            if _FALSE not in acc:
                additional = frozenset(acc)
        if m.max_props is not None and m.max_props > MAX_COUNT_BOUND or m.min_props > MAX_COUNT_BOUND:
            raise GrammarLimitError(f"property count bound above {MAX_COUNT_BOUND}", path=p)
        return ObjectView(members, additional, m.min_props, m.max_props, p, declared)

    def array_view(self, branch: FrozenSet) -> Optional[Tuple[FrozenSet, int, Optional[int]]]:
        """``(item part, min items, max items)`` of the arrays at a disjunction-free
        ``branch`` (None: no array fits); ``prefixItems``, ``contains`` and ``uniqueItems``
        raise ``UnsupportedSchemaError``."""
        c = self._c
        m = c.merge(branch)
        if ARR not in m.kinds:
            return None
        if m.enum is not None or m.contains or m.unique is not None or any(u[0] is not None for u in m.arr_units):
            raise UnsupportedSchemaError("enum/const, prefixItems, contains or uniqueItems on an array "
                                         "written as XML items are not supported", self.pointer(branch))
        acc: set = set()
        for _, rest, _ in m.arr_units:
            if rest is not None:
                acc |= c.flatten(rest)
        hi = m.max_items
        if _FALSE in acc:
            hi = 0
        if hi is not None and hi < m.min_items:
            return None
        if hi is not None and hi > MAX_COUNT_BOUND or m.min_items > MAX_COUNT_BOUND:
            raise GrammarLimitError(f"array length bound above {MAX_COUNT_BOUND}", path=self.pointer(branch))
        return (frozenset((_FALSE,)) if _FALSE in acc else frozenset(acc)), m.min_items, hi

    def value(self, part: FrozenSet, kinds: Sequence[str], hint: str = "value") -> Optional[Expr]:
        """A rule of the JSON values at ``part`` whose type is one of ``kinds`` (JSON type
        names); None when there are none."""
        c = self._c
        ks = tuple(sorted(set(kinds)))
        atoms = part | c.synth_atoms(("parts-kinds", ks), {"type": list(ks)})
        return c.value_ref(atoms, 1, hint)

    def string_view(self, part: FrozenSet) -> Optional[StringView]:
        """The strings at ``part`` (None: no string fits)."""
        c = self._c
        atoms = part | c.synth_atoms(("parts-kinds", ("string",)), {"type": "string"})
        dfas: List[Optional[Dfa]] = []
        plain = True
        filtered = True
        for b in self.branches(atoms):
            m = c.merge(b)
            if STR not in m.kinds:
                continue
            if m.enum is not None:
                words = [v for v in m.enum if isinstance(v, str) and c.enum_value_ok(v, m)]
                if words:
                    dfas.append(dfa_literals(words))
                plain = False
                continue
            key = c.string_key(m)
            if key is None:
                continue
            _, lo, hi, pats, fmts, not_pats, not_fmts, not_strings = key
            if pats or fmts:
                filtered = False
            if pats or fmts or not_pats or not_fmts or not_strings or lo > 0 or hi is not None:
                plain = False
            d = c.string_dfa(key)
            if d is None and (lo > 0 or hi is not None):
                d = dfa_with_length(_any_string_dfa(), lo, hi)
            dfas.append(d)
        if not dfas:
            return None
        if any(d is None for d in dfas):
            return StringView(None, plain and len(dfas) == 1, filtered)
        d = dfas[0]
        for x in dfas[1:]:
            d = dfa_product(d, x, "or")
        return StringView(d, False, filtered)

    def rules(self) -> Dict[str, Expr]:
        """The rule table: every rule the parts referenced, and the caller's own."""
        rules = self._c.drain()
        del rules["root"]  # reserved by the converter, unused here: the caller names its root
        return rules


def _frac_json(f: Fraction):
    """Synthetic schemas carry exact bounds as Fractions (never serialized)."""
    return int(f) if f.denominator == 1 else f


def _rep(item: Expr, lo: int, hi: Optional[int]) -> Expr:
    if hi == 0:
        return EPSILON
    if lo == 1 and hi == 1:
        return item
    return Repeat(item, lo, hi)


def _small(e: Expr) -> bool:
    return isinstance(e, (Bytes, RuleRef)) or e == EPSILON


def _counts_disjoint(alo, ahi, blo, bhi) -> bool:
    return (ahi is not None and ahi < blo) or (bhi is not None and bhi < alo)


def _ranges_disjoint(a: _Merged, b: _Merged) -> bool:
    def below(hi, hi_x, lo, lo_x):  # every value <= hi is < lo
        if hi is None or lo is None:
            return False
        return hi < lo or (hi == lo and (hi_x or lo_x))
    return below(a.hi, a.hi_x, b.lo, b.lo_x) or below(b.hi, b.hi_x, a.lo, a.lo_x)


def _strip_contains(m: _Merged) -> _Merged:
    c = _Merged()
    for s in _Merged.__slots__:
        setattr(c, s, getattr(m, s))
    c.contains = []
    return c


_LIT = ((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E))  # printable ASCII other than '"' and '\\'
#: a key written only literally (every character in ``_LIT``)
_LITERAL_KEY = re.compile(r'[ !#-\[\]-~]*')
#: any string of ``_LIT`` characters (emitted from its one-state DFA: no rules)
_ANY_LIT_EXPR = dfa_to_expr(Dfa([tuple((lo, hi, 0) for lo, hi in _LIT)], [True]), None)
_SCALARS = ((0, 0xD7FF), (0xE000, 0x10FFFF))


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


# Process-wide memos of pure functions of a pattern or format name (the same formats and
# patterns recur across a server's schemas; a date-time DFA costs ~10 ms to build).  Only
# successes are kept, so errors are raised again exactly as the first time.  Bounded: the
# memo is emptied when full.
_SHARED_MEMO_SIZE = 512
_SHARED_DFAS: Dict[tuple, Dfa] = {}
_SHARED_ENCODINGS: Dict[tuple, Optional[Expr]] = {}


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


def _any_string_dfa() -> Dfa:
    global _ANY_STRING
    if _ANY_STRING is None:
        _ANY_STRING = dfa_from_expr(Repeat(CharClass((), negated=True), 0, None))
    return _ANY_STRING


def _classify_product(dfas: Sequence[Dfa]) -> Tuple[Dfa, List[FrozenSet[int]]]:
    """Product of ``dfas`` over all code points; each state is labelled with the set of
    component automata accepting there (the returned DFA's own accept flags are unused)."""
    from .number_range import MAX_DFA_STATES, _merge_edges, _split_points

    cuts: List[List[Tuple[int, int]]] = [[(0, 0xD7FF), (0xE000, 0x10FFFF)]]
    for d in dfas:
        for es in d.edges:
            cuts.append([(lo, hi) for lo, hi, _ in es])
    alphabet = [iv for iv in _split_points(cuts) if not 0xD800 <= iv[0] <= 0xDFFF]
    start = tuple(0 for _ in dfas)
    ids = {start: 0}
    keys = [start]
    edges = []
    i = 0
    while i < len(keys):
        cur = keys[i]
        out = []
        for lo, hi in alphabet:
            nxt = tuple(d.step(q, lo) if q >= 0 else -1 for d, q in zip(dfas, cur))
            t = ids.get(nxt)
            if t is None:
                if len(keys) >= MAX_DFA_STATES:
                    raise GrammarLimitError(f"pattern product exceeds {MAX_DFA_STATES} states")
                t = ids[nxt] = len(keys)
                keys.append(nxt)
            out.append((lo, hi, t))
        edges.append(_merge_edges(out))
        i += 1
    labels = [frozenset(j for j, q in enumerate(k) if q >= 0 and dfas[j].accept[q]) for k in keys]
    return Dfa(edges, [True] * len(keys)), labels
