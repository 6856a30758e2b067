"""JSON Schema -> grammar (xmask.grammar.json_schema): semantics, whitespace modes, errors,
lenient reports and limits (MaskBench and the JSON-Schema-Test-Suite are scored in
tests/conformance).

Instances are serialized with ``json.dumps`` (what MaskBench does) and checked with the
compiled engine; where the ``jsonschema`` package is installed, the hand-written labels are
cross-checked with it so that a wrong expectation cannot hide a bug.
"""

import json
import random
import warnings

import pytest

import xmask
from xmask.errors import UnsupportedSchemaError
from xmask.grammar.json_schema import json_schema_to_grammar, json_schema_to_grammar_with_report
from xmask.grammar.recognizer import Recognizer

try:  # optional oracle for the hand-written expectations
    import jsonschema as _jsonschema
except ImportError:  # pragma: no cover
    _jsonschema = None

_ENGINE = {}


def _engine():
    if not _ENGINE:
        info = xmask.default_tokenizer_info()
        _ENGINE["comp"] = xmask.GrammarCompiler(info)
        _ENGINE["stop"] = info.stop_token_ids[0]
    return _ENGINE["comp"], _ENGINE["stop"]


def compile_grammar(grammar):
    return _engine()[0].compile_grammar(grammar)


def accepts(grammar_or_compiled, text: str) -> bool:
    """True iff ``text`` is a complete sentence of the grammar (engine, fresh matcher)."""
    comp, stop = _engine()
    cg = grammar_or_compiled if isinstance(grammar_or_compiled, xmask.CompiledGrammar) else comp.compile_grammar(grammar_or_compiled)
    m = xmask.GrammarMatcher(cg)
    return m.accept_string(text) and m.accept_token(stop)


def _oracle(schema, value):
    if _jsonschema is None or not isinstance(schema, (dict, bool)):
        return None
    cls = _jsonschema.validators.validator_for(schema, default=_jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER).is_valid(value)


def check(schema, valid=(), invalid=(), raw_valid=(), raw_invalid=(), oracle=True, **opts):
    """Values in ``valid``/``invalid`` are json.dumps-ed (with the matching separators);
    ``raw_*`` are texts used as is."""
    opts.setdefault("strict_mode", False)
    g = json_schema_to_grammar(schema, **opts)
    cg = compile_grammar(g)
    dump = _dumper(opts)
    for v in valid:
        if oracle:
            o = _oracle(schema, v)
            assert o in (None, True), f"test bug: oracle says invalid: {v!r}"
        assert accepts(cg, dump(v)), f"valid rejected: {dump(v)!r}"
    for v in invalid:
        if oracle:
            o = _oracle(schema, v)
            assert o in (None, False), f"test bug: oracle says valid: {v!r}"
        assert not accepts(cg, dump(v)), f"invalid accepted: {dump(v)!r}"
    for t in raw_valid:
        assert accepts(cg, t), f"valid rejected: {t!r}"
    for t in raw_invalid:
        assert not accepts(cg, t), f"invalid accepted: {t!r}"
    return g


def _dumper(opts):
    if opts.get("any_whitespace", True) is False:
        indent = opts.get("indent")
        seps = opts.get("separators")
        return lambda v: json.dumps(v, indent=indent, separators=seps)
    return json.dumps


# ============================================================================ basics

def test_types():
    check({"type": "string"}, valid=["", "a", "héllo", "\n\"\\"], invalid=[1, None, [], {}])
    check({"type": "integer"}, valid=[0, -5, 10 ** 20], invalid=[1.5, "1", True])
    check({"type": "number"}, valid=[0, 1.5, -2e-5, 1e300], invalid=["1", None])
    check({"type": "boolean"}, valid=[True, False], invalid=[0, "true"])
    check({"type": "null"}, valid=[None], invalid=[0, "null", False])
    check({"type": ["string", "null"]}, valid=["x", None], invalid=[1, []])
    check({"type": "object"}, valid=[{}, {"a": [1, {"b": None}]}], invalid=[[], 1])
    check({"type": "array"}, valid=[[], [1, "a", [None]]], invalid=[{}, "[]"])


def test_boolean_schemas():
    check(True, valid=[1, "x", None, {"a": [1]}])
    check({"properties": {"a": False}}, valid=[{}, {"b": 1}, 5], invalid=[{"a": 1}])
    with pytest.raises(xmask.GrammarError):  # the empty language cannot be compiled
        compile_grammar(json_schema_to_grammar(False))


def test_const_enum():
    check({"const": "a\"b"}, valid=["a\"b"], invalid=["a", "ab"])
    check({"enum": ["x", 1, None, [1, 2], {"k": [True]}]},
          valid=["x", 1, None, [1, 2], {"k": [True]}], invalid=["y", 2, [2, 1], {"k": []}, True])
    check({"enum": [1, True]}, valid=[1, True], invalid=[False, 0])
    # non-ASCII: json.dumps writes \\u escapes, the literal UTF-8 is accepted too
    check({"enum": ["café", "😀"]}, valid=["café", "😀"], raw_valid=['"café"', '"\\ud83d\\ude00"'],
          invalid=["cafe"])
    # enum values filtered by sibling keywords
    check({"enum": ["a", "bb", "ccc", 4], "type": "string", "minLength": 2},
          valid=["bb", "ccc"], invalid=["a", 4])


def test_enum_objects_any_whitespace():
    g = check({"enum": [{"a": [1, 2]}]}, valid=[{"a": [1, 2]}])
    assert accepts(g, '{ "a" :\n[ 1 ,2 ] }')
    assert not accepts(g, ' {"a": [1, 2]}')  # no whitespace at the root


def test_large_enum_compact():
    vals = [f"value_{i}" for i in range(10_000)]
    g = json_schema_to_grammar({"enum": vals})  # compile cost is measured in bench/, not here
    cg = compile_grammar(g)
    assert accepts(cg, '"value_9999"') and not accepts(cg, '"value_10000"')


# ============================================================================ whitespace modes

NESTED = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "child": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "array"}}},
        "e": {"type": "object"},
    },
}
NESTED_VALUES = [
    {"name": "n", "tags": ["a", "b"], "child": {"x": 1, "y": []}, "e": {}},
    {"name": "n", "tags": [], "child": {}},
    {"tags": ["only"]},
    {},
    {"child": {"y": [1, {"k": [2, 3]}, {}]}, "e": {"a": {"b": [None]}}},
]


@pytest.mark.parametrize("opts", [
    dict(any_whitespace=False),
    dict(any_whitespace=False, indent=2),
    dict(any_whitespace=False, indent=4),
    dict(any_whitespace=False, separators=(",", ":")),
    dict(any_whitespace=False, indent=1, separators=(",", ": ")),
    dict(any_whitespace=True),
])
def test_whitespace_modes_match_json_dumps(opts):
    g = json_schema_to_grammar(NESTED, strict_mode=False, **opts)
    cg = compile_grammar(g)
    dump = _dumper(opts)
    for v in NESTED_VALUES:
        assert accepts(cg, dump(v)), dump(v)
    if not opts.get("any_whitespace", True):
        # other layouts are rejected
        v = NESTED_VALUES[0]
        for other in (json.dumps(v, indent=3), json.dumps(v, separators=(",", ":")), json.dumps(v)):
            if other != dump(v):
                assert not accepts(cg, other), other


def test_any_whitespace_random_layouts():
    g = json_schema_to_grammar(NESTED, strict_mode=False)
    cg = compile_grammar(g)
    rng = random.Random(7)
    for v in NESTED_VALUES:
        text = json.dumps(v, indent=rng.choice([None, 1, 2, "\t"]))
        assert accepts(cg, text), text
        assert not accepts(cg, " " + text) and not accepts(cg, text + "\n")


def test_max_whitespace_cnt():
    g = json_schema_to_grammar({"type": "array", "items": {"type": "integer"}}, max_whitespace_cnt=2)
    assert accepts(g, "[  1 ,  2  ]")
    assert not accepts(g, "[   1]")


# ============================================================================ objects

def test_properties_required_order():
    s = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["b"]}
    check(s, valid=[{"b": "x"}, {"a": 1, "b": "x"}], invalid=[{}, {"a": 1}, {"a": "1", "b": "x"}, {"b": 1}])
    # declaration order is enforced (a restriction): b before a is rejected by default ...
    g = json_schema_to_grammar(s, strict_mode=False)
    assert not accepts(g, '{"b": "x", "a": 1}')
    # ... and accepted with any_order
    g2 = json_schema_to_grammar(s, strict_mode=False, any_order=True)
    assert accepts(g2, '{"b": "x", "a": 1}') and accepts(g2, '{"a": 1, "b": "x"}')
    assert not accepts(g2, '{"a": 1}') and not accepts(g2, '{"b": "x", "b": "y"}')


def test_ordered_members_every_subset_once_spelled():
    # every subset of the members, in declaration order, with and without additional members
    # after them: valid iff the required ones are there and additional values are strings
    s = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"},
                                          "c": {"type": "null"}, "d": {"type": "integer"}},
         "required": ["b"], "additionalProperties": {"type": "string"}}
    values = {"a": 1, "b": True, "c": None, "d": 7}
    valid, invalid = [], []
    for mask in range(16):
        obj = {k: values[k] for i, k in enumerate("abcd") if mask >> i & 1}
        for extra in ({}, {"x": "s"}, {"x": "s", "y": "t"}, {"x": 1}):
            inst = dict(obj, **extra)
            ok = "b" in obj and all(isinstance(v, str) for v in extra.values())
            (valid if ok else invalid).append(inst)
    for opts in ({"any_whitespace": False}, {"any_whitespace": True}):
        g = check(s, valid=valid, invalid=invalid, **opts)
        # each member is spelled once in the grammar, not once per position it can follow
        text = str(g)
        for k in "abcd":
            assert text.count(f'"\\"{k}\\"') == 1, (k, text)


def test_additional_properties_false_true_schema():
    base = {"type": "object", "properties": {"a": {"type": "integer"}}}
    check(dict(base, additionalProperties=False), valid=[{}, {"a": 1}], invalid=[{"b": 1}, {"a": 1, "b": 2}])
    check(dict(base, additionalProperties=True), valid=[{"a": 1, "b": [1]}, {"zz": None}], invalid=[{"a": "x"}])
    check(dict(base, additionalProperties={"type": "string"}),
          valid=[{"a": 1, "b": "x"}, {"c": "y"}], invalid=[{"b": 1}, {"a": "s"}])


def test_additional_key_cannot_spell_a_declared_name():
    s = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}}
    g = check(s, valid=[{"a": 1, "ab": "x", "": "y"}], invalid=[{"a": "x"}])
    # "\\u0061" decodes to "a": it may not take the additional (string) schema
    assert not accepts(g, '{"\\u0061": "x"}')
    assert not accepts(g, '{"a": 1, "\\u0061": "x"}')
    # escapes in genuinely additional keys are fine
    assert accepts(g, '{"a": 1, "\\n": "x"}') and accepts(g, '{"\\u00e9": "x"}')


def test_strict_mode_defaults():
    s = {"type": "object", "properties": {"a": {"type": "integer"}}}
    g_strict = json_schema_to_grammar(s, strict_mode=True)
    g_spec = json_schema_to_grammar(s, strict_mode=False)
    assert not accepts(g_strict, '{"a": 1, "b": 2}') and accepts(g_spec, '{"a": 1, "b": 2}')
    arr = {"type": "array", "prefixItems": [{"type": "integer"}]}
    assert not accepts(json_schema_to_grammar(arr, strict_mode=True), "[1, 2]")
    assert accepts(json_schema_to_grammar(arr, strict_mode=False), "[1, 2]")
    # {"type": "object"} stays any object in strict mode (XGrammar)
    assert accepts(json_schema_to_grammar({"type": "object"}), '{"x": 1}')


def test_pattern_properties():
    s = {"type": "object", "patternProperties": {"^x-": {"type": "integer"}, "y$": {"type": "string"}},
         "properties": {"x-fixed": {"minimum": 5}}, "additionalProperties": False}
    check(s, valid=[{"x-a": 1}, {"ay": "s"}, {"x-fixed": 7}, {}],
          invalid=[{"x-a": "s"}, {"b": 1}, {"x-y": 1}, {"x-y": "s"}, {"x-fixed": 3}, {"x-fixed": "s"}])
    # a key matching both patterns needs both schemas: impossible here
    check({"patternProperties": {"a": {"type": "integer"}, "b": {"minimum": 3}}},
          valid=[{"ab": 3}, {"a": 1}, {"b": 4.5}, {"c": "x"}], invalid=[{"ab": 2}, {"ab": "x"}])


def test_property_names():
    s = {"type": "object", "propertyNames": {"pattern": "^[a-z]+$", "maxLength": 3}}
    check(s, valid=[{}, {"ab": 1, "xyz": 2}], invalid=[{"abcd": 1}, {"A": 1}, {"": 1}])
    check({"propertyNames": {"enum": ["a", "b"]}}, valid=[{"a": 1, "b": 2}], invalid=[{"c": 1}])
    check({"properties": {"toolong": {}}, "propertyNames": {"maxLength": 3}}, valid=[{"ab": 1}],
          invalid=[{"toolong": 1}])


def test_min_max_properties():
    s = {"type": "object", "properties": {"a": {}, "b": {}, "c": {}}, "minProperties": 2, "maxProperties": 3,
         "additionalProperties": {"type": "integer"}}
    check(s, valid=[{"a": 1, "b": 2}, {"a": 1, "z": 2}, {"a": 1, "b": 1, "c": 1}, {"x": 1, "y": 2}],
          invalid=[{}, {"a": 1}, {"a": 1, "b": 1, "c": 1, "d": 1}, {"x": 1, "y": 2, "z": 3, "w": 4}])


def test_required_only_names():
    check({"required": ["a"]}, valid=[{"a": 1}, {"a": None, "b": 2}, 5], invalid=[{}, {"b": 1}])


# ============================================================================ arrays

def test_items_and_counts():
    check({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3},
          valid=[[1, 2], [1, 2, 3]], invalid=[[], [1], [1, 2, 3, 4], [1, "2"]])


def test_prefix_items_2020_and_draft7():
    s = {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": {"type": "boolean"}}
    check(s, valid=[[], ["a"], ["a", 1], ["a", 1, True, False]], invalid=[[1], ["a", "b"], ["a", 1, 2]])
    s7 = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array",
          "items": [{"type": "string"}, {"type": "integer"}], "additionalItems": False}
    check(s7, valid=[[], ["a"], ["a", 1]], invalid=[["a", 1, True], [1]])
    check({"prefixItems": [{"const": 1}], "minItems": 2, "maxItems": 2}, valid=[[1, "x"]], invalid=[[1], [2, 2], [1, 2, 3]])


def test_contains():
    s = {"type": "array", "items": {"type": "integer"}, "contains": {"minimum": 10}}
    check(s, valid=[[10], [1, 20, 3]], invalid=[[], [1, 2]])
    s2 = dict(s, minContains=2)
    check(s2, valid=[[10, 11], [10, 1, 11]], invalid=[[10], [1, 10]])
    s3 = dict(s, maxContains=1)
    check(s3, valid=[[10], [1, 10, 2]], invalid=[[10, 11], []])


def test_unique_items_unsupported_and_lenient():
    s = {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}
    with pytest.raises(UnsupportedSchemaError) as e:
        json_schema_to_grammar(s)
    assert e.value.path == "#/uniqueItems"
    g, report = json_schema_to_grammar_with_report(s, lenient=True)
    assert report == ["#/uniqueItems: uniqueItems is not enforced (dropped)"]
    with pytest.warns(UserWarning, match="uniqueItems"):
        json_schema_to_grammar(s, lenient=True)
    # trivially satisfied
    json_schema_to_grammar(dict(s, maxItems=1))


def test_unique_items_finite_domain():
    check({"type": "array", "items": {"enum": ["a", "b", "c"]}, "uniqueItems": True, "minItems": 1},
          valid=[["a"], ["c", "a"], ["b", "a", "c"]], invalid=[[], ["a", "a"], ["a", "b", "c", "a"], ["d"]])
    check({"type": "array", "items": {"type": "boolean"}, "uniqueItems": True},
          valid=[[], [True], [False, True]], invalid=[[True, True]])


@pytest.mark.parametrize("lo,hi", [(0, 13), (2, 30), (15, 40), (0, 200), (50, None)])
def test_item_counts_factorization_exact(lo, hi):
    schema = {"type": "array", "items": {"const": 0}, "minItems": lo}
    if hi is not None:
        schema["maxItems"] = hi
    g = json_schema_to_grammar(schema)
    cg = compile_grammar(g)
    top = (hi if hi is not None else lo + 20) + 3
    for n in range(0, top):
        assert accepts(cg, json.dumps([0] * n)) == (n >= lo and (hi is None or n <= hi)), n


# ============================================================================ strings

def test_length_counts_code_points_and_escapes():
    s = {"type": "string", "minLength": 2, "maxLength": 3}
    check(s, valid=["ab", "abc", "\n\t", "é😀", "a\"b"], invalid=["a", "abcd", "😀", "\n\n\n\n"])
    g = json_schema_to_grammar(s)
    assert accepts(g, '"\\ud83d\\ude00\\u00e9"')  # 2 code points via escapes
    assert not accepts(g, '"\\ud83d\\ude00"')  # 1 code point
    assert accepts(g, '"\\u0061\\u0062"')


@pytest.mark.parametrize("n", [0, 1, 5, 12, 13, 17, 40, 100, 255])
def test_max_length_factorization_exact(n):
    g = json_schema_to_grammar({"type": "string", "minLength": n // 2, "maxLength": n})
    cg = compile_grammar(g)
    for k in sorted({0, n // 2 - 1, n // 2, n - 1, n, n + 1, n + 2} - {-1}):
        assert accepts(cg, json.dumps("x" * k)) == (n // 2 <= k <= n), k


def test_large_lengths_compile_exactly():
    for n in (1000, 32767, 65535):
        cg = compile_grammar(json_schema_to_grammar({"type": "string", "maxLength": n}))
        assert accepts(cg, json.dumps("y" * n)) and not accepts(cg, json.dumps("y" * (n + 1)))


def test_pattern_is_a_search_on_the_decoded_value():
    check({"type": "string", "pattern": "b+c"}, valid=["abbcd", "bc"], invalid=["ac", "b c", ""])
    check({"type": "string", "pattern": "^a"}, valid=["a", "abc"], invalid=["ba"])
    check({"type": "string", "pattern": "^[a-z]+$"}, valid=["abc"], invalid=["ab1", "", "ABC"])
    g = json_schema_to_grammar({"type": "string", "pattern": '^a"b\\\\c$'})
    assert accepts(g, json.dumps('a"b\\c')) and accepts(g, '"a\\u0022b\\\\c"')
    g2 = json_schema_to_grammar({"pattern": "^é$"})
    assert accepts(g2, '"é"') and accepts(g2, '"\\u00e9"') and accepts(g2, '"\\u00E9"') and not accepts(g2, '"e"')
    g3 = json_schema_to_grammar({"pattern": "^\\n$"})
    assert accepts(g3, '"\\n"') and accepts(g3, '"\\u000a"') and not accepts(g3, '"n"')
    g4 = json_schema_to_grammar({"pattern": "^.$"})  # astral code point: one character
    assert accepts(g4, '"\\ud83d\\ude00"') and accepts(g4, '"😀"') and not accepts(g4, '"ab"')


def test_pattern_with_length():
    check({"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 4},
          valid=["ab", "abcd"], invalid=["a", "abcde", "ab1"])
    check({"type": "string", "pattern": "x", "maxLength": 3}, valid=["x", "axb"], invalid=["abcx", "ab"])
    check({"allOf": [{"pattern": "a"}, {"pattern": "b"}]}, valid=["ab", "ba", 1], invalid=["a", "b"])


FORMAT_CASES = {
    "date": (["2024-02-29", "2023-12-31", "2000-02-29"], ["2023-02-29", "2023-04-31", "1900-02-29", "2023-1-01", "x"]),
    "time": (["12:00:00Z", "23:59:59.123+05:30", "00:00:00-00:00"], ["24:00:00Z", "12:00:00", "12:60:00Z"]),
    "date-time": (["2022-01-01T12:00:00Z", "2022-01-01t12:00:00.5+01:00"], ["2022-01-01 12:00:00Z", "2022-13-01T00:00:00Z"]),
    "duration": (["P1Y2M3D", "PT1H", "P4W", "P1DT2H3M4S"], ["P", "1Y", "PT", "P1H"]),
    "email": (["john.doe@example.com", "a+b@x.io"], ["invalid_email", "a@@b.com", "a@b", "@b.com", "a b@c.com"]),
    "hostname": (["example.com", "a-b.c", "localhost"], ["-a.com", "a-.com", "a..b", "Invalid Host", "a" * 64]),
    "ipv4": (["1.2.3.4", "255.255.255.255", "0.0.0.0"], ["256.1.1.1", "1.2.3", "01.2.3.4", "1.2.3.4.5"]),
    "ipv6": (["::1", "2001:db8::1", "1:2:3:4:5:6:7:8", "::ffff:1.2.3.4", "::"], ["1:2:3:4:5:6:7:8:9", ":::", "12345::", "1::2::3"]),
    "uri": (["https://example.com/a?b=c#d", "mailto:a@b.c", "urn:isbn:123"], ["notaurl", "http://a b", "//x.com", ""]),
    "uri-reference": (["/a/b", "https://x.org", "", "a?b"], ["a b", "%zz"]),
    "uuid": (["123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000"], ["123e4567e89b12d3a456426614174000", "x"]),
    "json-pointer": (["", "/a/b", "/a~0b~1"], ["a", "/~2"]),
}


@pytest.mark.parametrize("fmt", sorted(FORMAT_CASES))
def test_formats(fmt):
    good, bad = FORMAT_CASES[fmt]
    check({"type": "string", "format": fmt}, valid=good, invalid=bad, oracle=False)


def test_format_with_max_length():
    check({"type": "string", "format": "ipv4", "maxLength": 9}, valid=["1.2.3.4"], invalid=["10.20.30.40"], oracle=False)


def test_unknown_format():
    with pytest.raises(UnsupportedSchemaError) as e:
        json_schema_to_grammar({"type": "string", "format": "color"})
    assert e.value.path == "#/format"
    g, report = json_schema_to_grammar_with_report({"type": "string", "format": "color"}, lenient=True)
    assert "unknown format 'color'" in report[0]
    # formats do not constrain other types
    check({"type": "integer", "format": "color"}, valid=[1])
    check({"type": "integer", "format": "int32"}, valid=[2 ** 31 - 1], invalid=[2 ** 31], oracle=False)


# ============================================================================ numbers

def test_numeric_bounds():
    check({"type": "integer", "minimum": -5, "maximum": 123}, valid=[-5, 0, 123], invalid=[-6, 124])
    check({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10}, valid=[1, 9], invalid=[0, 10])
    check({"$schema": "http://json-schema.org/draft-04/schema#", "type": "number", "minimum": 0,
           "exclusiveMinimum": True, "maximum": 1, "exclusiveMaximum": True},
          valid=[0.5, 1e-05], invalid=[0, 1, 0.0, 1.0])
    check({"type": "number", "minimum": 0.5, "maximum": 100}, valid=[0.5, 1, 99.99, 100, 100.0],
          invalid=[0.49, 100.01, -1, 1e+20])
    check({"type": "number", "minimum": 0}, valid=[0, 1e+300, 1e-300, 0.0], invalid=[-1e-300, -0.5])


def test_multiple_of():
    check({"type": "integer", "multipleOf": 7}, valid=[0, 7, -14, 700], invalid=[1, 15])
    check({"type": "number", "multipleOf": 0.01}, valid=[1, 1.5, 1.25], invalid=[1.255, 0.001])
    check({"type": "number", "multipleOf": 2.5, "maximum": 10}, valid=[2.5, 5, 10, 0], invalid=[1, 12.5])
    check({"allOf": [{"multipleOf": 2}, {"multipleOf": 3}], "type": "integer"}, valid=[6, 12], invalid=[4, 9])


# ============================================================================ combinators

def test_any_of():
    check({"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 5}]},
          valid=["ab", 5], invalid=["abc", 4, None])


def test_any_of_with_siblings():
    s = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
         "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}
    check(s, valid=[{"a": 1}, {"b": 1}, {"a": 1, "b": 2}], invalid=[{}, {"a": "x"}])


def test_one_of_disjoint():
    check({"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
          valid=["a", ["a"]], invalid=[1])
    s = {"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind"]},
        {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"type": "string"}}, "required": ["kind"]},
    ]}
    check(s, valid=[{"kind": "a", "x": 1}, {"kind": "b", "y": "s"}], invalid=[{"kind": "c"}, {"kind": "a", "x": "s"}])


def test_one_of_overlapping_uses_negation():
    s = {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}
    check(s, valid=[{"a": 1}, {"b": 1}], invalid=[{"a": 1, "b": 2}, {}])
    check({"oneOf": [{"type": "number"}, {"type": "integer"}]}, valid=[1.5], invalid=[1, "x"])
    check({"oneOf": [{"minimum": 5}, {"maximum": 10}], "type": "integer"}, valid=[1, 11], invalid=[5, 7, 10])


def test_one_of_closed_single_key_objects():
    """oneOf over closed objects with one optional key each: a value must match exactly one
    branch, so {} (matches all) and two keys (matches none) are invalid.  The negated
    ``additionalProperties: false`` of the other branches is satisfied by the key the first
    branch requires, which keeps the expansion linear in the branch count."""
    keys = "abcdef"
    s = {"oneOf": [{"type": "object", "properties": {k: {"type": "integer"}},
                    "additionalProperties": False} for k in keys]}
    check(s, valid=[{k: 1} for k in keys],
          invalid=[{}, {"a": 1, "b": 2}, {"a": "x"}, {"z": 1}, [], 1])


def test_one_of_unsupported():
    s = {"oneOf": [{"type": "array", "uniqueItems": True}, {"type": "array", "minItems": 1}]}
    with pytest.raises(UnsupportedSchemaError):
        json_schema_to_grammar(s, lenient=False)


def test_all_of_merging():
    s = {"allOf": [
        {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}, "required": ["a"]},
        {"properties": {"a": {"maximum": 10}, "b": {"type": "string"}}, "required": ["b"]},
    ]}
    check(s, valid=[{"a": 0, "b": ""}, {"a": 10, "b": "x", "c": 1}],
          invalid=[{"a": 11, "b": "x"}, {"a": 1}, {"b": "x"}, {"a": -1, "b": "x"}])
    # additionalProperties of one branch applies to names declared only by the other
    s2 = {"allOf": [{"properties": {"a": {}}, "additionalProperties": False}, {"properties": {"b": {}}}]}
    check(s2, valid=[{"a": 1}, {}], invalid=[{"b": 1}, {"a": 1, "b": 1}])
    check({"allOf": [{"type": ["string", "integer"]}, {"type": ["integer", "null"]}]}, valid=[1], invalid=["a", None])


def test_not():
    check({"not": {"type": "string"}}, valid=[1, None, {}], invalid=["a"])
    check({"type": "string", "not": {"enum": ["a", "b"]}}, valid=["c", "ab", ""], invalid=["a", "b"])
    check({"type": "integer", "not": {"const": 3}}, valid=[2, 4, -3], invalid=[3])
    check({"type": "object", "not": {"required": ["a"]}}, valid=[{}, {"b": 1}], invalid=[{"a": 1}])
    check({"type": "string", "not": {"pattern": "^a"}}, valid=["ba", ""], invalid=["a", "ab"])
    check({"not": {"not": {"type": "integer"}}}, valid=[1], invalid=["1"])
    check({"not": {}}, invalid=[1, "a"]) if False else None
    with pytest.raises(UnsupportedSchemaError) as e:
        json_schema_to_grammar({"not": {"uniqueItems": True}})
    assert e.value.path == "#/not"


def test_if_then_else():
    s = {"type": "object", "properties": {"kind": {"type": "string"}, "n": {"type": "integer"}},
         "if": {"properties": {"kind": {"const": "num"}}}, "then": {"required": ["n"]},
         "else": {"properties": {"n": False}}}
    check(s, valid=[{"kind": "num", "n": 1}, {"kind": "str"}], invalid=[{"kind": "num"}, {"kind": "str", "n": 1}, {}])


def test_dependencies():
    check({"dependentRequired": {"a": ["b"]}}, valid=[{}, {"b": 1}, {"a": 1, "b": 2}], invalid=[{"a": 1}])
    check({"dependentSchemas": {"a": {"properties": {"b": {"type": "string"}}, "required": ["b"]}}},
          valid=[{"a": 1, "b": "x"}, {"b": 2}], invalid=[{"a": 1}, {"a": 1, "b": 2}])
    check({"$schema": "http://json-schema.org/draft-07/schema#", "dependencies": {"a": ["b"], "c": {"required": ["d"]}}},
          valid=[{"a": 1, "b": 1}, {"c": 1, "d": 1}], invalid=[{"a": 1}, {"c": 1}])


# ============================================================================ references

def test_refs_and_recursion():
    s = {"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
                                                               "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                            "required": ["v"]}},
         "$ref": "#/$defs/node"}
    check(s, valid=[{"v": 1}, {"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}]}]}],
          invalid=[{"v": 1, "kids": [{}]}, {"kids": []}])


def test_ref_pointer_escapes():
    s = {"definitions": {"a/b": {"type": "integer"}, "c~d": {"type": "string"}, "e%f": {"type": "null"}},
         "properties": {"x": {"$ref": "#/definitions/a~1b"}, "y": {"$ref": "#/definitions/c~0d"},
                        "z": {"$ref": "#/definitions/e%25f"}}}
    check(s, valid=[{"x": 1, "y": "s", "z": None}], invalid=[{"x": "s"}, {"y": 1}, {"z": 1}])


def test_ref_ids_and_anchors():
    s = {"$id": "https://example.com/root.json",
         "$defs": {"a": {"$id": "other.json", "$defs": {"b": {"type": "integer"}}},
                   "c": {"$anchor": "cee", "type": "string"}},
         "properties": {"x": {"$ref": "other.json#/$defs/b"}, "y": {"$ref": "#cee"},
                        "z": {"$ref": "https://example.com/root.json#/$defs/c"}}}
    check(s, valid=[{"x": 1, "y": "s", "z": "t"}], invalid=[{"x": "1"}, {"y": 1}, {"z": 2}])


def test_ref_siblings_by_draft():
    s2020 = {"$defs": {"i": {"type": "integer"}}, "$ref": "#/$defs/i", "minimum": 5}
    check(s2020, valid=[5], invalid=[4, "x"])
    s7 = {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"i": {"type": "integer"}},
          "allOf": [{"$ref": "#/definitions/i", "minimum": 5}]}
    check(s7, valid=[4, 5], invalid=["x"])


def test_remote_ref_raises():
    with pytest.raises(UnsupportedSchemaError) as e:
        json_schema_to_grammar({"properties": {"a": {"$ref": "https://example.com/x.json"}}})
    assert e.value.path == "#/properties/a/$ref"


def test_circular_ref_without_descent():
    with pytest.raises(UnsupportedSchemaError):
        json_schema_to_grammar({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]}},
                                "$ref": "#/$defs/a"})


# ============================================================================ errors, reports, inputs

def test_unsupported_keywords_paths():
    cases = [
        ({"properties": {"a": {"type": "array", "uniqueItems": True}}}, "#/properties/a/uniqueItems"),
        ({"type": "string", "format": "nope"}, "#/format"),
        ({"$dynamicRef": "#x"}, "#/$dynamicRef"),
        ({"type": "array", "contains": {"type": "string"}, "uniqueItems": True}, "#/uniqueItems"),
    ]
    for schema, path in cases:
        with pytest.raises(UnsupportedSchemaError) as e:
            json_schema_to_grammar(schema)
        assert e.value.path == path, (schema, e.value.path)


def test_annotations_ignored():
    s = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://x/y", "title": "t",
         "description": "d", "default": 1, "examples": [1], "$comment": "c", "deprecated": True,
         "readOnly": True, "writeOnly": False, "contentMediaType": "text/plain", "x-custom": {"type": "string"},
         "type": "integer"}
    check(s, valid=[1], invalid=["a"])


def test_lenient_reports_and_no_warnings_when_exact():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        json_schema_to_grammar({"type": "integer"}, lenient=True)
    g, rep = json_schema_to_grammar_with_report(
        {"type": "object", "properties": {"a": {"type": "string", "format": "weird"},
                                          "b": {"type": "array", "uniqueItems": True}}}, lenient=True)
    assert sorted(rep) == ["#/properties/a/format: unknown format 'weird' (dropped)",
                           "#/properties/b/uniqueItems: uniqueItems is not enforced (dropped)"]
    assert accepts(g, '{"a": "x", "b": [1, 1]}')


def test_inputs_text_and_pydantic():
    g = json_schema_to_grammar('{"type": "integer"}')
    assert accepts(g, "12")
    pydantic = pytest.importorskip("pydantic")

    class Item(pydantic.BaseModel):
        name: str
        count: int = 0

    g = json_schema_to_grammar(Item, any_whitespace=False)
    assert accepts(g, json.dumps({"name": "x", "count": 2})) and not accepts(g, json.dumps({"count": 2}))


def test_recognizer_agrees_on_small_schema():
    g = json_schema_to_grammar({"type": "object", "properties": {"a": {"enum": [1, 2]}}, "required": ["a"]},
                               any_whitespace=False)
    r = Recognizer(g)
    assert r.accepts(b'{"a": 1}') and not r.accepts(b'{"a": 3}')


# ============================================================================ limits

def test_deep_nesting():
    s = {"type": "integer"}
    for _ in range(1000):
        s = {"type": "array", "items": s}
    g = json_schema_to_grammar(s)  # compile cost: bench/bench_compile_limits.py
    cg = compile_grammar(g)
    assert accepts(cg, "[" * 1000 + "1" + "]" * 1000)
    assert not accepts(cg, "[" * 999 + "1" + "]" * 999)


def test_pattern_big_repeat():
    g = json_schema_to_grammar({"type": "string", "pattern": "^a{0,3000}$"})
    cg = compile_grammar(g)  # compile cost: bench/bench_compile_limits.py
    assert accepts(cg, json.dumps("a" * 3000)) and not accepts(cg, json.dumps("a" * 3001))


def test_indent_recursion_depth_limited():
    s = {"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"}
    g = json_schema_to_grammar(s, any_whitespace=False, indent=2)
    v = [[[[]]]]
    assert accepts(g, json.dumps(v, indent=2))


def test_all_of_required_only_name_follows_later_declared_properties():
    """A name that an earlier allOf branch only requires comes after the properties declared
    by later branches (MaskBench Github_medium---o25771)."""
    s = {"allOf": [{"type": "object", "required": ["name", "type"], "properties": {"name": {"type": "string"}}},
                   {"properties": {"user": {"type": "string"}, "type": {"enum": ["file"]}}}]}
    check(s, valid=[{"name": "a", "user": "u", "type": "file"}, {"name": "a", "type": "file"}],
          invalid=[{"name": "a", "user": "u"}, {"name": "a", "user": 1, "type": "file"}],
          strict_mode=False)
