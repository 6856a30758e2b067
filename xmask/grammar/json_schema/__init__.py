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
  spell any character as ``\\uXXXX`` (see :mod:`..string_format`).  Combinations of patterns,
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
  numbers accept plain and normalized scientific spellings (see :mod:`.numbers`);
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

Modules (one concern each): :mod:`.api` (entry points, lenient report), :mod:`.document`
(loading, drafts, ``$ref``), :mod:`.atoms` (locations as atom sets), :mod:`.merge` /
:mod:`.merged` (keyword merging into a normalised schema), :mod:`.unevaluated`,
:mod:`.combinators`, :mod:`.negation`, :mod:`.disjointness`, :mod:`.validator` (reference
validator), :mod:`.literals` (enum/const), :mod:`.numbers`, :mod:`.strings`, :mod:`.arrays`,
:mod:`.objects`, :mod:`.keys`, :mod:`.counting`, :mod:`.layout`, :mod:`.context` (shared
state), :mod:`.converter` (the driver), :mod:`.parts` (pieces for XML argument styles).
"""

from .api import json_schema_to_grammar, json_schema_to_grammar_with_report
from .document import load_schema
from .parts import ObjectView, SchemaParts, StringView
from .vocabulary import MAX_ANY_ORDER_PROPERTIES, MAX_INDENT_DEPTH

__all__ = [
    "MAX_ANY_ORDER_PROPERTIES",
    "MAX_INDENT_DEPTH",
    "json_schema_to_grammar",
    "json_schema_to_grammar_with_report",
    "load_schema",
    "SchemaParts",
    "ObjectView",
    "StringView",
]
