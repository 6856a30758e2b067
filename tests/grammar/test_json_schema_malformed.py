"""Malformed JSON Schemas raise xmask errors naming the JSON pointer of the bad keyword.

A keyword whose value has the wrong JSON type used to be ignored, so ``{"type": "object",
"properties": "not an object"}`` accepted any object (a silent loosening).  Now every such
keyword raises ``InvalidSchemaError`` (also with ``lenient=True``: lenient only drops valid
keywords xmask cannot enforce); schema text with ``NaN``/``Infinity`` raises
``InvalidJSONError`` with its line and column; absurd numbers raise ``UnsupportedSchemaError``
or ``GrammarLimitError`` at their pointer.  The table is cross-checked against the draft
2020-12 meta-schema (``jsonschema``) when it is installed, so a "malformed" case cannot be a
valid schema by mistake.  A hypothesis test mutates valid schemas and accepts only success or
an ``XmaskError``.
"""

import json
import os
import pickle

import pytest

import xmask
from xmask.errors import (
    GrammarLimitError,
    InvalidJSONError,
    InvalidSchemaError,
    UnsupportedSchemaError,
    XmaskError,
)
from xmask.grammar.recognizer import Recognizer

try:
    import jsonschema as _jsonschema
except ImportError:  # pragma: no cover
    _jsonschema = None

COUNTS = ["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
          "minContains", "maxContains"]

# (keyword, malformed value, pointer suffix after the keyword)
BAD = [
    ("type", 5, ""), ("type", "strin", ""), ("type", ["string", 3], "/1"), ("type", [], ""),
    ("type", {"type": "string"}, ""), ("type", ["string", "nul"], "/1"),
    ("properties", "not an object", ""), ("properties", ["x"], ""), ("properties", {"b": 5}, "/b"),
    ("properties", {"b/c": "x"}, "/b~1c"),
    ("patternProperties", ["x"], ""), ("patternProperties", {"^x": "y"}, "/^x"),
    ("additionalProperties", "no", ""), ("additionalProperties", 0, ""),
    ("unevaluatedProperties", [], ""), ("propertyNames", "x", ""),
    ("items", 3, ""), ("items", "x", ""), ("items", [{}, 1], "/1"),
    ("prefixItems", {"type": "string"}, ""), ("prefixItems", [3], "/0"),
    ("additionalItems", 1, ""), ("unevaluatedItems", None, ""),
    ("contains", "x", ""), ("contains", [{}], ""),
    ("enum", "a", ""), ("enum", {"a": 1}, ""), ("enum", None, ""),
    ("required", "a", ""), ("required", [None], "/0"), ("required", ["a", 1], "/1"),
    ("required", True, ""), ("required", {"a": 1}, ""),
    ("dependentRequired", ["a"], ""), ("dependentRequired", {"a": "b"}, "/a"),
    ("dependentRequired", {"a": [1]}, "/a/0"),
    ("dependentSchemas", [], ""), ("dependentSchemas", {"a": 1}, "/a"),
    ("dependencies", {"a": 1}, "/a"), ("dependencies", [], ""),
    *[(k, v, "") for k in COUNTS for v in (-1, 1.5, "3", True, None, [2])],
    ("minimum", "1", ""), ("maximum", None, ""), ("exclusiveMinimum", "x", ""),
    ("exclusiveMaximum", [], ""), ("multipleOf", 0, ""), ("multipleOf", -2, ""),
    ("multipleOf", "2", ""), ("multipleOf", True, ""), ("minimum", {"a": 1}, ""),
    ("pattern", 5, ""), ("pattern", ["a"], ""), ("format", 5, ""), ("format", None, ""),
    ("$ref", 5, ""), ("$ref", {"x": 1}, ""),
    ("$defs", [], ""), ("$defs", {"y": 3}, "/y"), ("definitions", "x", ""),
    ("definitions", {"y": []}, "/y"),
    ("allOf", [], ""), ("anyOf", {}, ""), ("oneOf", [3], "/0"), ("allOf", "x", ""),
    ("anyOf", [{}, "x"], "/1"), ("oneOf", [], ""),
    ("not", 3, ""), ("not", [], ""), ("if", "x", ""), ("then", [], ""), ("else", None, ""),
    ("uniqueItems", "yes", ""), ("uniqueItems", 1, ""),
]

# (keyword, well-formed value): the same keywords with values of the right type
GOOD = [
    ("type", "string"), ("type", ["string", "null"]), ("properties", {"b": {"type": "integer"}}),
    ("patternProperties", {"^x": True}), ("additionalProperties", False),
    ("unevaluatedProperties", False), ("propertyNames", {"maxLength": 3}),
    ("items", {"type": "integer"}), ("prefixItems", [{"type": "integer"}]),
    ("contains", {"type": "integer"}), ("enum", ["a", 1, None]), ("const", {"x": [1]}),
    ("required", ["a"]), ("required", []), ("dependentRequired", {"a": ["b"]}),
    ("dependentSchemas", {"a": {"required": ["b"]}}),
    *[(k, v) for k in COUNTS for v in (0, 3, 5.0)],
    ("minimum", 1), ("maximum", 2.5), ("exclusiveMinimum", -1), ("exclusiveMaximum", 10 ** 30),
    ("multipleOf", 0.5), ("multipleOf", 3), ("pattern", "^a+$"), ("format", "date"),
    ("$defs", {"y": {"type": "string"}}), ("allOf", [{"type": "string"}]),
    ("anyOf", [{"type": "string"}, {"type": "integer"}]), ("oneOf", [{"type": "string"}, True]),
    ("not", {"type": "string"}), ("if", {"type": "string"}), ("then", {"minLength": 1}),
    ("else", False), ("uniqueItems", False),
]


def _placements(keyword, value):
    """The keyword placed at non-root locations: (schema, pointer of the keyword)."""
    return [
        ({"type": "object", "properties": {"a": {keyword: value}}}, f"#/properties/a/{_esc(keyword)}"),
        ({"$defs": {"x": {keyword: value}}, "$ref": "#/$defs/x"}, f"#/$defs/x/{_esc(keyword)}"),
        ({"anyOf": [{"type": "null"}, {"items": {keyword: value}}]}, f"#/anyOf/1/items/{_esc(keyword)}"),
    ]


def _esc(token):
    return token.replace("~", "~0").replace("/", "~1")


BAD_CASES = [pytest.param(schema, ptr + suffix, id=f"{kw}={json.dumps(v)}@{ptr}")
             for kw, v, suffix in BAD for schema, ptr in _placements(kw, v)]
GOOD_CASES = [pytest.param(schema, id=f"{kw}={json.dumps(v)}@{ptr}")
              for kw, v in GOOD for schema, ptr in _placements(kw, v)]

_COMPILER = {}


def _compiler():
    if not _COMPILER:
        _COMPILER["c"] = xmask.GrammarCompiler(xmask.default_tokenizer_info())
    return _COMPILER["c"]


@pytest.mark.parametrize("schema,path", BAD_CASES)
def test_malformed_keyword_raises_with_its_pointer(schema, path):
    with pytest.raises(InvalidSchemaError) as e:
        xmask.Grammar.from_json_schema(schema)
    assert e.value.path == path
    assert str(e.value).endswith(f"(at {path})")
    assert isinstance(e.value, (RuntimeError, ValueError))


@pytest.mark.parametrize("schema,path", BAD_CASES)
def test_lenient_does_not_silence_malformed_keywords(schema, path):
    with pytest.raises(InvalidSchemaError) as e:
        xmask.Grammar.from_json_schema(schema, lenient=True)
    assert e.value.path == path


@pytest.mark.parametrize("schema,path", BAD_CASES)
def test_malformed_keyword_raises_through_the_compiler(schema, path):
    for s in (schema, json.dumps(schema)):
        with pytest.raises(InvalidSchemaError) as e:
            _compiler().compile_json_schema(s)
        assert e.value.path == path
    with pytest.raises(InvalidSchemaError):
        _compiler().compile_json_schema(schema, lenient=True, strict_mode=False)


@pytest.mark.skipif(_jsonschema is None, reason="jsonschema not installed")
@pytest.mark.parametrize("schema,path", BAD_CASES)
def test_table_is_malformed_per_the_meta_schema(schema, path):
    # additionalItems is a keyword up to 2019-09 (xmask reads it in every draft)
    validator = (_jsonschema.Draft201909Validator if "additionalItems" in path
                 else _jsonschema.Draft202012Validator)
    with pytest.raises(_jsonschema.SchemaError):
        validator.check_schema(schema)


@pytest.mark.parametrize("schema", GOOD_CASES)
def test_well_typed_keywords_still_compile(schema):
    if _jsonschema is not None:
        _jsonschema.Draft202012Validator.check_schema(schema)
    xmask.Grammar.from_json_schema(schema, lenient=True)


def test_issue_examples_no_longer_accept_anything():
    for schema in ({"type": "object", "properties": "not an object"}, {"patternProperties": ["x"]}):
        with pytest.raises(InvalidSchemaError):
            xmask.Grammar.from_json_schema(schema)
    # the well-formed spelling still constrains the members
    g = xmask.Grammar.from_json_schema({"type": "object", "properties": {"a": {"type": "integer"}},
                                        "additionalProperties": False})
    r = Recognizer(g)
    assert r.accepts(b'{"a": 1}') and not r.accepts(b'{"anything": [1, 2]}')


def test_older_draft_forms_are_still_accepted():
    for schema in (
        {"type": "array", "items": [{"type": "integer"}], "additionalItems": False},
        {"type": "number", "minimum": 0, "exclusiveMinimum": True},
        {"definitions": {"x": {"type": "string"}}, "$ref": "#/definitions/x"},
        {"type": "object", "dependencies": {"a": ["b"], "c": {"required": ["d"]}}},
        {"type": "integer", "maxLength": 5.0, "minimum": 1.0},
    ):
        xmask.Grammar.from_json_schema(schema)


def test_unknown_keywords_and_values_are_not_schemas():
    # unknown keywords, const/enum members and annotations hold arbitrary JSON
    for schema in (
        {"x-anything": {"type": 5}, "title": 3, "default": {"properties": "x"}},
        {"const": {"properties": "not a schema", "required": [None]}},
        {"enum": [{"type": 5}, [1, 2], None]},
        {"properties": {"type": {"type": "string"}, "properties": {"const": 1}}},
    ):
        xmask.Grammar.from_json_schema(schema)


def test_non_schema_root_and_non_json_values():
    with pytest.raises(InvalidSchemaError) as e:
        xmask.Grammar.from_json_schema("[1, 2]")
    assert e.value.path == "#"
    with pytest.raises(InvalidSchemaError) as e:
        xmask.Grammar.from_json_schema({"properties": {"a": {"minimum": float("nan")}}})
    assert e.value.path == "#/properties/a/minimum"
    with pytest.raises(InvalidSchemaError) as e:
        xmask.Grammar.from_json_schema({"const": {"a": [1, float("inf")]}})
    assert e.value.path == "#/const/a/1"
    with pytest.raises(InvalidSchemaError) as e:
        xmask.Grammar.from_json_schema({"enum": [{1: "non-string key"}]})
    assert e.value.path == "#/enum/0"
    with pytest.raises(InvalidSchemaError) as e:
        xmask.Grammar.from_json_schema({"enum": [object()]})
    assert e.value.path == "#/enum/0"


# ------------------------------------------------------------ numbers and text Python accepts

@pytest.mark.parametrize("text,const,line,column", [
    ('{"minimum": NaN}', "NaN", 1, 13),
    ('{"type": "number",\n "maximum": Infinity}', "Infinity", 2, 13),
    ('{"enum": ["NaN", -Infinity]}', "-Infinity", 1, 18),
    ('{"properties": {"Infinity": {"const": NaN}}}', "NaN", 1, 39),
])
def test_nan_and_infinity_in_schema_text_raise_invalid_json(text, const, line, column):
    with pytest.raises(InvalidJSONError) as e:
        xmask.Grammar.from_json_schema(text)
    assert f"{const} is not a JSON value" in str(e.value)
    assert f"line {line} column {column}" in str(e.value)
    assert e.value.position == text.index(const, text.index(":"))
    with pytest.raises(InvalidJSONError):
        _compiler().compile_json_schema(text)


def test_nan_spelled_inside_strings_is_fine():
    g = xmask.Grammar.from_json_schema('{"properties": {"NaN": {"const": "Infinity"}}, "required": ["NaN"]}')
    assert Recognizer(g).accepts(b'{"NaN": "Infinity"}')


def test_schema_bytes_that_are_not_utf8():
    with pytest.raises(InvalidJSONError):
        xmask.Grammar.from_json_schema(b'{"type": "\xff"}')


BIG = "9" * 400


@pytest.mark.parametrize("text,error,path", [
    ('{"minLength": %s}' % BIG, GrammarLimitError, "#/minLength"),
    ('{"type": "string", "maxLength": %s}' % BIG, GrammarLimitError, "#/maxLength"),
    ('{"type": "object", "properties": {"a": {"maxLength": %s}}}' % BIG, GrammarLimitError,
     "#/properties/a/maxLength"),
    ('{"type": "array", "minItems": %s}' % BIG, GrammarLimitError, "#/minItems"),
    ('{"type": "array", "contains": {}, "maxContains": %s, "minItems": 3}' % BIG,
     GrammarLimitError, "#/maxContains"),
    ('{"type": "object", "maxProperties": %s, "minProperties": 1}' % BIG, GrammarLimitError,
     "#/maxProperties"),
    ('{"minimum": 1e400}', UnsupportedSchemaError, "#/minimum"),
    ('{"$defs": {"x": {"multipleOf": 1e999}}}', UnsupportedSchemaError, "#/$defs/x/multipleOf"),
    ('{"const": [1, -1e400]}', UnsupportedSchemaError, "#/const/1"),
    ('{"minLength": 1e400}', UnsupportedSchemaError, "#/minLength"),
])
def test_absurd_numbers_raise_xmask_errors_with_pointer(text, error, path):
    with pytest.raises(error) as e:
        xmask.Grammar.from_json_schema(text)
    assert e.value.path == path


def test_huge_counts_on_other_kinds_are_harmless():
    # a 400-digit maxLength on a schema that cannot be a string constrains nothing
    g = xmask.Grammar.from_json_schema('{"type": "integer", "maxLength": %s}' % BIG)
    assert Recognizer(g).accepts(b"12")


def test_big_integer_bounds_and_values_compile():
    r = Recognizer(xmask.Grammar.from_json_schema('{"type": "integer", "minimum": %s}' % BIG))
    assert r.accepts(("1" + BIG).encode()) and not r.accepts(b"5")
    r = Recognizer(xmask.Grammar.from_json_schema('{"enum": [%s]}' % BIG))
    assert r.accepts(BIG.encode())


@pytest.mark.parametrize("schema,path", [
    ({"not": {"required": [None]}}, "#/not/required/0"),
    ({"if": {"required": [1]}, "then": {}}, "#/if/required/0"),
    ({"oneOf": [{"required": ["a"]}, {"dependentRequired": {"a": [None]}}]}, "#/oneOf/1/dependentRequired/a/0"),
    ({"not": {"properties": {"a": 3}}}, "#/not/properties/a"),
    ({"not": {"enum": "a"}}, "#/not/enum"),
    ({"not": {"type": ["string", None]}}, "#/not/type/1"),
])
def test_malformed_keywords_under_negation(schema, path):
    with pytest.raises(InvalidSchemaError) as e:
        xmask.Grammar.from_json_schema(schema)
    assert e.value.path == path


def test_invalid_schema_error_pickles_intact():
    try:
        xmask.Grammar.from_json_schema({"properties": {"a": {"minLength": "3"}}})
    except InvalidSchemaError as err:
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is InvalidSchemaError
        assert back.path == err.path == "#/properties/a/minLength"
        assert str(back) == str(err) and back.args == err.args
        assert isinstance(back, xmask.XmaskError) and isinstance(back, ValueError)
    else:  # pragma: no cover
        pytest.fail("no error")
    assert xmask.InvalidSchemaError is InvalidSchemaError
    assert "InvalidSchemaError" in xmask.__all__


def test_long_bounded_pattern_property_grammar_prints():
    g = xmask.Grammar.from_json_schema(
        {"type": "object", "patternProperties": {"^[a-z]{0,1000}$": {"type": "integer"}}})
    text = str(g)
    assert text.startswith("root ::= ")


# ------------------------------------------------------------ property test: mutated schemas

import hypothesis  # noqa: E402  (in the test extra)
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SEEDS = [
    {"type": "object", "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 20},
                                      "age": {"type": "integer", "minimum": 0, "maximum": 150},
                                      "tags": {"type": "array", "items": {"enum": ["a", "b"]},
                                               "maxItems": 3, "uniqueItems": True}},
     "required": ["name"], "additionalProperties": False},
    {"type": "array", "prefixItems": [{"const": 1}, {"type": "boolean"}],
     "items": {"type": "number", "multipleOf": 0.5}, "contains": {"const": 2}, "maxContains": 2},
    {"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
                                                          "next": {"$ref": "#/$defs/node"}},
                        "patternProperties": {"^x-": {"type": "string", "pattern": "^[a-z]+$"}}}},
     "$ref": "#/$defs/node"},
    {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}],
     "not": {"const": "2020-01-01"}},
    {"oneOf": [{"type": "integer", "exclusiveMinimum": 0}, {"type": "string", "maxLength": 2}],
     "if": {"type": "integer"}, "then": {"maximum": 10}, "else": {"minLength": 1}},
    {"type": "object", "propertyNames": {"pattern": "^[a-c]+$"}, "minProperties": 1,
     "maxProperties": 2, "dependentRequired": {"a": ["b"]},
     "dependentSchemas": {"c": {"required": ["a"]}}, "unevaluatedProperties": False},
]

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10 ** 30), 10 ** 30) | st.sampled_from([10 ** 400, -1, 0, 5.0])
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=6)
    | st.sampled_from(["string", "object", "#", "#/$defs/node", "^a", "date", "integer"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["type", "items", "properties", "a", "required", "minimum", "$ref", "x"]),
        inner, max_size=3),
    max_leaves=8)


def _locations(value, path=()):
    """Every (container path, key) of the nested dicts/lists in ``value``."""
    out = []
    if isinstance(value, dict):
        for k, v in value.items():
            out.append((path, k))
            out += _locations(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.append((path, i))
            out += _locations(v, path + (i,))
    return out


@pytest.mark.filterwarnings("ignore:JSON Schema loosened")
@settings(max_examples=int(os.environ.get("XMASK_FUZZ_EXAMPLES", "200")), deadline=None, derandomize=not os.environ.get("XMASK_FUZZ_EXAMPLES"),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_mutated_schemas_end_in_success_or_an_xmask_error(data):
    schema = json.loads(json.dumps(data.draw(st.sampled_from(SEEDS))))
    for _ in range(data.draw(st.integers(1, 3))):
        locs = _locations(schema)
        path, key = data.draw(st.sampled_from(locs))
        holder = schema
        for p in path:
            holder = holder[p]
        holder[key] = data.draw(_json_values)
    as_text = data.draw(st.booleans())
    s = json.dumps(schema) if as_text else schema
    try:
        g = xmask.Grammar.from_json_schema(s, lenient=data.draw(st.booleans()),
                                           strict_mode=data.draw(st.booleans()))
        str(g)
    except XmaskError:
        pass
