"""Regression tests for converter bugs found by the JSON-Schema-Test-Suite scoring
(``tests/conformance/test_jsts.py``).  Checked with the reference recognizer (byte level, no
tokenizer); where the ``jsonschema`` package is installed, every expectation on a value is
cross-checked with it (format assertions on)."""

import json

import pytest

from xmask.errors import UnsupportedSchemaError
from xmask.grammar.json_schema import json_schema_to_grammar
from xmask.grammar.recognizer import Recognizer

try:
    import jsonschema as _jsonschema
except ImportError:  # pragma: no cover
    _jsonschema = None


def _oracle(schema, value):
    if _jsonschema is None:
        return None
    cls = _jsonschema.validators.validator_for(schema, default=_jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER).is_valid(value)


def check(schema, valid=(), invalid=(), raw_valid=(), raw_invalid=(), oracle=True):
    r = Recognizer(json_schema_to_grammar(schema, strict_mode=False))
    for v in valid:
        if oracle:
            assert _oracle(schema, v) in (None, True), f"test bug: oracle says invalid: {v!r}"
        assert r.accepts(json.dumps(v).encode()), f"valid rejected: {v!r}"
    for v in invalid:
        if oracle:
            assert _oracle(schema, v) in (None, False), f"test bug: oracle says valid: {v!r}"
        assert not r.accepts(json.dumps(v).encode()), f"invalid accepted: {v!r}"
    for t in raw_valid:
        assert r.accepts(t.encode()), f"valid rejected: {t!r}"
    for t in raw_invalid:
        assert not r.accepts(t.encode()), f"invalid accepted: {t!r}"


def unsupported(schema, path):
    with pytest.raises(UnsupportedSchemaError) as e:
        json_schema_to_grammar(schema, strict_mode=False)
    assert e.value.path == path, e.value.path


# ------------------------------------------------------------------ soundness: hostname A-labels

def test_hostname_rejects_reserved_ldh_labels():
    # "xn--" A-labels are valid only if their Punycode decodes to a valid U-label: not
    # checkable by a grammar, so every label with "--" in positions 3-4 is rejected
    check({"format": "hostname"},
          valid=["a--b.com", "ab-c.de", "a-b-c", "abc", "ab", "a", "x" * 63 + ".com"],
          invalid=["xn--X", "xn--hello-txk", "XN--aa---o47jg78q", "ab--c", "-ab", "ab-", "x" * 64 + ".com",
                   "xn--9n2bp8q.xn--9t4b11yi5a"],  # (the last is valid, but rejected)
          oracle=False)
    check({"format": "idn-hostname"}, valid=["a.b", "host-name"], invalid=["xn--X", "-> $1.00 <--", "a..b"],
          oracle=False)


# ------------------------------------------------------------------ soundness: negated restricted formats

def test_restricted_formats_are_negated_through_supersets():
    # the grammars of time, hostname, email... reject some valid strings (leap seconds with
    # offsets, A-labels, ...): their complement would accept valid strings, so the negation
    # is the complement of a superset (a restriction)
    check({"not": {"format": "time"}}, valid=["x", "25:00:00Z"],
          invalid=["23:59:60Z", "12:00:00Z", 1], raw_invalid=['"01:29:60+01:30"'], oracle=False)
    check({"not": {"format": "hostname"}}, valid=["a_b", "-a"],
          invalid=["a.b"], raw_invalid=['"xn--9n2bp8q.xn--9t4b11yi5a"'], oracle=False)
    check({"if": {"format": "email"}, "then": {"maxLength": 5}, "else": {"minLength": 3}},
          valid=["a@b.c", "abc"], invalid=["ab", "abc@d.e"], raw_invalid=['"a@b"'], oracle=False)
    unsupported({"not": {"format": "idn-hostname"}}, "#/not")


def test_exact_formats_can_be_negated():
    check({"not": {"format": "ipv4"}}, valid=["1.2.3", "x"], invalid=["1.2.3.4", 5], oracle=False)
    check({"not": {"format": "date"}}, valid=["2023-02-29"], invalid=["2024-02-29"], oracle=False)


def test_restricted_format_disjointness_not_assumed():
    # "01:29:60+01:30" is a valid time (23:59:60 UTC) that the time grammar rejects; it also
    # matches the pattern: the oneOf must not be taken as exclusive
    check({"oneOf": [{"format": "time"}, {"pattern": "60"}]}, valid=["x60", "12:00:00Z"],
          raw_invalid=['"01:29:60+01:30"', '"23:59:60Z"'], oracle=False)
    # a dotted quad is a hostname too
    check({"oneOf": [{"format": "hostname"}, {"format": "ipv4"}, {"format": "ipv6"}]},
          valid=["a.b", "::1"], invalid=["1.2.3.4"], oracle=False)


def test_enum_value_of_undecidable_format_is_dropped():
    check({"enum": ["01:29:60+01:30", "12:00:00Z"], "format": "time"},
          valid=["12:00:00Z"], raw_invalid=['"01:29:60+01:30"'], oracle=False)


# ------------------------------------------------------------------ formats added or widened

def test_time_leap_second():
    check({"format": "time"}, valid=["23:59:60Z", "23:59:60+00:00", "23:59:60.5-00:00"],
          invalid=["22:59:60Z", "23:58:60Z", "23:59:61Z", "23:59:60+01:00"], oracle=False)
    check({"format": "date-time"}, valid=["1998-12-31T23:59:60Z"], invalid=["1998-12-31T23:58:60Z"], oracle=False)


def test_email_quoted_local_part_and_address_literals():
    check({"format": "email"},
          valid=['"joe bloggs"@example.com', '"joe..bloggs"@example.com', '"a\\"b"@x.y', "a@[127.0.0.1]",
                 "a@" + "b" * 70 + ".com"],
          invalid=["a@[127.0.0.300]", "a@[::1]", '"a"b"@x.y', "te..st@x.y", "a@-b.com", "a@b-.com"],
          raw_invalid=['"a@[IPv6:::1]"'],  # valid, but IPv6 literals are not accepted
          oracle=False)
    # format + maxLength stays within the automaton limits
    check({"type": "string", "format": "email", "maxLength": 100}, valid=["a@b.co"], invalid=["a@" + "b" * 98 + ".co"],
          oracle=False)


def test_iri_and_uri_template():
    check({"format": "iri"}, valid=["http://ƒøø.ßår/?∂éœ=πîx#πîüx", "urn:example:resource"],
          invalid=["/abc", "âππ", "http://[::ffff:192.168.0.01]"], oracle=False)
    check({"format": "iri-reference"}, valid=["âππ", "#ƒrägmênt"], invalid=["#ƒräg\\mênt"], oracle=False)
    check({"format": "uri-template"}, valid=["http://x/{term:1}/{term}", "", "{+var}", "{a.b}", "a'b"],
          invalid=["{}", "{a,,b}", "{v:0}", "{v:10000}", "foo}bar", "{a..b}", "a b"], oracle=False)


# ------------------------------------------------------------------ numbers in enum/const

def test_integral_enum_numbers_accept_both_spellings():
    check({"const": 1}, valid=[1, 1.0], invalid=[2, True], raw_invalid=["1.00"])
    check({"const": -2.0}, valid=[-2, -2.0], invalid=[2])
    check({"enum": [0]}, valid=[0, 0.0, -0.0], invalid=[False])
    check({"const": 9007199254740992}, valid=[9007199254740992, 9007199254740992.0])
    # draft 4: 1.0 is not an integer
    check({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer", "enum": [1]},
          valid=[1], raw_invalid=["1.0"], oracle=False)


# ------------------------------------------------------------------ unevaluated*

def test_unevaluated_items_see_contains():
    s = {"contains": {"type": "string"}, "minContains": 0, "unevaluatedItems": False}
    check(s, valid=[[], ["foo", "bar"]], invalid=[[0], ["foo", 0]])


def test_unevaluated_properties_through_all_of_and_ref():
    check({"allOf": [{"properties": {"foo": {"type": "string"}}}], "properties": {"bar": {}},
           "unevaluatedProperties": False},
          valid=[{"bar": 1, "foo": "x"}, {}], invalid=[{"foo": "x", "baz": 1}, {"foo": 1}])
    check({"$ref": "#/$defs/a", "unevaluatedProperties": {"type": "integer"},
           "$defs": {"a": {"patternProperties": {"^x": True}}}},
          valid=[{"xa": "s", "b": 1}], invalid=[{"b": "s"}])
    # additionalProperties in place evaluates everything
    check({"allOf": [{"additionalProperties": True}], "unevaluatedProperties": False}, valid=[{"a": 1}])
    # not: annotations are dropped
    check({"not": {"properties": {"foo": {"const": 1}}, "required": ["foo"]},
           "unevaluatedProperties": False}, valid=[{}], invalid=[{"foo": 2}])
    # cousins cannot see each other
    check({"allOf": [{"properties": {"foo": True}}, {"unevaluatedProperties": False}]},
          valid=[{}], invalid=[{"foo": 1}])


def test_unevaluated_properties_through_taken_branches():
    # oneOf: the branch taken evaluates its names (exact)
    s = {"oneOf": [{"properties": {"foo": {"const": "a"}}, "required": ["foo"]},
                   {"properties": {"bar": {"const": "b"}}, "required": ["bar"]}],
         "unevaluatedProperties": False}
    check(s, valid=[{"foo": "a"}, {"bar": "b"}], invalid=[{"foo": "a", "bar": "x"}, {"foo": "a", "baz": 1}, {}])
    # if/then/else: "if" annotations count only when it holds
    s = {"if": {"properties": {"foo": {"const": "then"}}, "required": ["foo"]},
         "then": {"properties": {"bar": {"type": "string"}}, "required": ["bar"]},
         "else": {"properties": {"baz": {"type": "string"}}, "required": ["baz"]},
         "unevaluatedProperties": False}
    check(s, valid=[{"foo": "then", "bar": "x"}, {"baz": "x"}],
          invalid=[{"foo": "then", "bar": "x", "baz": "y"}, {"foo": "else", "baz": "x"}])
    # dependentSchemas: evaluated only when the trigger is present
    s = {"properties": {"foo": {"type": "string"}}, "dependentSchemas": {"foo": {"properties": {"bar": {"const": "bar"}},
                                                                               "required": ["bar"]}},
         "unevaluatedProperties": False}
    check(s, valid=[{"foo": "x", "bar": "bar"}, {}], invalid=[{"bar": "bar"}, {"foo": "x", "bar": "bar", "z": 1}])
    # anyOf: only the branch the grammar follows counts (a restriction: never looser)
    s = {"anyOf": [{"properties": {"foo": {"const": 1}}, "required": ["foo"]},
                   {"properties": {"bar": {"const": 2}}, "required": ["bar"]}],
         "unevaluatedProperties": False}
    check(s, valid=[{"foo": 1}, {"bar": 2}], invalid=[{"foo": 1, "bar": 3}, {"foo": 1, "baz": 1}],
          raw_invalid=['{"foo": 1, "bar": 2}'])  # valid (both branches hold), rejected
    # an if without then/else: its annotations count when it holds
    s = {"if": {"properties": {"foo": {"const": 1}}}, "unevaluatedProperties": False}
    check(s, valid=[{}, {"foo": 1}], invalid=[{"foo": 2}])
    # ... unless its condition cannot be negated (a restriction: never looser)
    s = {"if": {"patternProperties": {"foo": {"type": "string"}}}, "unevaluatedProperties": False}
    check(s, valid=[{}], invalid=[{"bar": "a"}], raw_invalid=['{"foo": "a"}'])


def test_unevaluated_approximation_is_not_a_disjointness_proof():
    # under the anyOf approximation {"foo": 1, "bar": 2} looks forbidden by the first oneOf
    # branch; it is valid for it, and for the second branch too: oneOf must reject it
    s = {"oneOf": [{"anyOf": [{"properties": {"foo": {"const": 1}}, "required": ["foo"]},
                              {"properties": {"bar": {"const": 2}}, "required": ["bar"]}],
                    "unevaluatedProperties": False},
                   {"required": ["bar"]}]}
    try:
        r = Recognizer(json_schema_to_grammar(s, strict_mode=False))
    except UnsupportedSchemaError:
        return
    for text in ('{"foo": 1, "bar": 2}', '{"bar": 2, "foo": 1}', '{"bar": 2}'):
        assert not r.accepts(text.encode()), text
    assert r.accepts(b'{"foo": 1}')


def test_unevaluated_items_through_all_of():
    check({"allOf": [{"prefixItems": [True, {"type": "string"}]}], "unevaluatedItems": False},
          valid=[[1, "a"], [1]], invalid=[[1, "a", 2], [1, 2]])
    check({"allOf": [{"items": True}], "unevaluatedItems": False}, valid=[[1, 2, 3]])
    check({"type": "array", "oneOf": [{"prefixItems": [{"const": 1}], "minItems": 1}, {"maxItems": 0}],
           "unevaluatedItems": False}, valid=[[1], []], invalid=[[1, 2], [2]])
    unsupported({"$defs": {"a": {"$dynamicAnchor": "a"}}, "items": {"$dynamicRef": "#a"}, "unevaluatedItems": False},
                "#/items/$dynamicRef")


# ------------------------------------------------------------------ annotations, references

def test_content_schema_is_an_annotation():
    check({"contentMediaType": "application/json", "contentEncoding": "base64",
           "contentSchema": {"type": "object", "required": ["foo"]}},
          valid=["e30=", "not base64", 100])


def test_fragment_ref_against_urn_base():
    schema = {"$ref": "urn:uuid:deadbeef-4321-ffff-ffff-1234feebdaed",
              "$defs": {"foo": {"$id": "urn:uuid:deadbeef-4321-ffff-ffff-1234feebdaed",
                                "$defs": {"bar": {"type": "string"}}, "$ref": "#/$defs/bar"}}}
    check(schema, valid=["bar"], invalid=[12])


# ------------------------------------------------------------------ uniqueItems

def test_unique_items_with_prefix_items_over_finite_domains():
    s = {"prefixItems": [{"type": "boolean"}, {"type": "boolean"}], "uniqueItems": True, "items": False}
    check(s, valid=[[False, True], [True, False], [], [True]], invalid=[[False, False], [True, True], [True, False, 1]])
    s = {"prefixItems": [{"const": 1}], "items": {"enum": [1, 2, 3]}, "uniqueItems": True}
    check(s, valid=[[1], [1, 2, 3], [1, 3]], invalid=[[1, 1], [2], [1, 2, 2], [1, 2, 3, 1]])
    unsupported({"prefixItems": [{"type": "boolean"}], "uniqueItems": True}, "#/uniqueItems")


def test_idn_email_local_part():
    check({"format": "idn-email"},
          valid=["δοκιμή@example.com", '"δοκιμή"@example.com', "\u0085@example.com", "𝕏@example.com",
                 "joe.bloggs@example.com"],
          invalid=["user＠example.com", "2962", "a..b@example.com"],
          raw_invalid=['"\\ud800@example.com"'], oracle=False)


def test_restricted_formats_use_supersets_in_disjointness_proofs():
    # date-time is restricted (leap seconds), but a superset still proves it disjoint from date
    check({"oneOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}]},
          valid=["2024-01-01", "2024-01-01T00:00:00Z"], invalid=["x", 1], oracle=False)
    check({"oneOf": [{"type": "string", "format": "hostname"}, {"type": "string", "format": "ipv6"}]},
          valid=["a.b", "::1"], invalid=["a:b"], oracle=False)
