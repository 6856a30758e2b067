"""The converter's vocabulary: value kinds, keyword classes and size bounds.

A *kind* refines the JSON types: ``integer`` and ``fraction`` (a non-integral number) are
disjoint, so ``number`` is both.  Keywords fall in classes by how the converter treats them:
structural (followed or distributed), annotations (ignored), own keywords (merged).

Example::

    >>> sorted(TYPE_KINDS["number"])
    ['fraction', 'integer']
"""

from __future__ import annotations

from ..ir import CharClass

__all__ = [
    "MAX_ANY_ORDER_PROPERTIES", "MAX_INDENT_DEPTH", "MAX_DISJUNCTION_NESTING", "MAX_COUNT_STATES",
    "MAX_COUNT_BOUND", "DIRECT_REPEAT", "DIRECT_STRING", "CALLED_STRING_MIN", "CALLED_STRING_MAX", "NULL",
    "BOOL", "OBJ", "ARR", "STR", "INT",
    "FRAC", "ALL_KINDS", "TYPE_KINDS", "FALSE", "NEVER", "STRUCTURAL", "ANNOTATIONS", "COMPANIONS",
    "IGNORED", "OWN_KEYWORDS", "KNOWN_KEYWORDS", "NUMERIC_FORMATS", "SCHEMA_MAPS", "SCHEMA_LISTS",
    "SCHEMA_SINGLES", "SUBSCHEMA_KEYS", "LATER_KEYWORDS",
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
DIRECT_REPEAT = 12
#: string lengths up to this many characters are a plain chain (see :func:`.counting.counted`)
DIRECT_STRING = 256
#: string lengths from this many characters use one state per position (see
#: :meth:`.strings.Strings.counted_chars`) ...
CALLED_STRING_MIN = 64
#: ... up to this many (and ``CompileLimits.max_repeat``); longer ones are chunked as above
CALLED_STRING_MAX = 10_000

# ---------------------------------------------------------------------------- kinds
NULL, BOOL, OBJ, ARR, STR, INT, FRAC = "null", "boolean", "object", "array", "string", "integer", "fraction"
ALL_KINDS = frozenset((NULL, BOOL, OBJ, ARR, STR, INT, FRAC))
TYPE_KINDS = {
    "null": {NULL}, "boolean": {BOOL}, "object": {OBJ}, "array": {ARR}, "string": {STR},
    "integer": {INT}, "number": {INT, FRAC},
}

#: the atom of the schema ``false`` (an atom set holding it admits no value)
FALSE = ("false",)
#: the expression matching nothing
NEVER = CharClass(())

# keywords handled structurally (not merged)
STRUCTURAL = frozenset((
    "$ref", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentRequired",
    "dependentSchemas", "dependencies",
))
# keywords that are silently ignored (annotations, identifiers, containers)
ANNOTATIONS = frozenset((
    "$schema", "$id", "id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$defs",
    "definitions", "$comment", "$vocabulary", "title", "description", "default", "examples",
    "example", "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding",
    "contentSchema",  # annotation only (2019-09+: content is never asserted by default)
))
# read together with another keyword ("contains", "items")
COMPANIONS = frozenset(("minContains", "maxContains", "additionalItems"))
IGNORED = ANNOTATIONS | COMPANIONS
# keywords the merge acts on (a schema object without any of them adds no constraint)
OWN_KEYWORDS = frozenset((
    "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minLength", "maxLength", "pattern", "format", "items", "prefixItems",
    "minItems", "maxItems", "contains", "uniqueItems", "properties", "patternProperties",
    "additionalProperties", "unevaluatedProperties", "unevaluatedItems", "required",
    "minProperties", "maxProperties", "propertyNames", "extends", "disallow",
    "divisibleBy", "\x00kinds", "\x00not_pattern", "\x00not_format", "\x00not_strings", "\x00extra_key",
    "\x00not_multiple",
))
NUMERIC_FORMATS = {
    "int8": (-(2 ** 7), 2 ** 7 - 1), "int16": (-(2 ** 15), 2 ** 15 - 1),
    "int32": (-(2 ** 31), 2 ** 31 - 1), "int64": (-(2 ** 63), 2 ** 63 - 1),
    "uint8": (0, 2 ** 8 - 1), "uint16": (0, 2 ** 16 - 1), "uint32": (0, 2 ** 32 - 1),
    "uint64": (0, 2 ** 64 - 1), "float": (None, None), "double": (None, None),
}
SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
SCHEMA_SINGLES = ("additionalProperties", "additionalItems", "contains", "propertyNames", "not",
                  "if", "then", "else", "unevaluatedProperties", "unevaluatedItems", "contentSchema")
SUBSCHEMA_KEYS = frozenset(SCHEMA_MAPS + SCHEMA_LISTS + SCHEMA_SINGLES + ("items",))
KNOWN_KEYWORDS = frozenset((
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

# keywords of 2019-09 and later
_SINCE_2019 = frozenset(("dependentRequired", "dependentSchemas", "prefixItems", "unevaluatedProperties",
                         "unevaluatedItems", "minContains", "maxContains"))
#: draft -> the keywords of later drafts: a schema declaring that draft in ``$schema`` does not
#: have them, so they are ignored there, as every unknown keyword is (the draft's own
#: validators do so).  Drafts 2019-09 and 2020-12 read every keyword.
LATER_KEYWORDS = {
    4: frozenset(("const", "contains", "propertyNames", "if", "then", "else")) | _SINCE_2019,
    6: frozenset(("if", "then", "else")) | _SINCE_2019,
    7: _SINCE_2019,
}
