"""``unevaluated*`` bookkeeping (xmask.grammar.json_schema.unevaluated): which subschemas'
annotations count, per distributed branch, and the grammars that follow from it."""

import pytest
from schema_samples import converter, root

from xmask.grammar.json_schema import json_schema_to_grammar
from xmask.grammar.json_schema.merged import Merged
from xmask.grammar.json_schema.unevaluated import evaluated_subtree, has_unevaluated, in_place_applicators
from xmask.grammar.recognizer import Recognizer


def pointers(conv, nodes):
    return sorted(conv.doc.nodes[k][2] for k in nodes)


def test_in_place_subschemas_through_allof_and_ref():
    conv = converter({"$defs": {"d": {"properties": {"b": True}}},
                      "allOf": [{"properties": {"a": True}}, {"$ref": "#/$defs/d"}],
                      "properties": {"x": {"properties": {"no": True}}},
                      "unevaluatedProperties": False})
    n = root(conv)
    assert has_unevaluated(conv.doc, n)
    m = Merged()
    assert pointers(conv, evaluated_subtree(conv.doc, n, frozenset(), m)) == ["#/$defs/d", "#/allOf/0", "#/allOf/1"]
    assert not m.uneval_approx


def test_only_the_chosen_oneof_branch_counts():
    conv = converter({"oneOf": [{"properties": {"a": True}}, {"properties": {"b": True}}],
                      "unevaluatedProperties": False})
    n = root(conv)
    m = Merged()
    assert pointers(conv, evaluated_subtree(conv.doc, n, frozenset({("chose", n, 1)}), m)) == ["#/oneOf/1"]
    assert not m.uneval_approx
    m = Merged()
    assert evaluated_subtree(conv.doc, n, frozenset(), m) == []
    assert m.uneval_approx  # no marker: a strict subset of the evaluated set


def test_anyof_and_lone_if_under_approximate():
    conv = converter({"anyOf": [{"properties": {"a": True}}], "if": {"required": ["a"]},
                      "unevaluatedProperties": False})
    n = root(conv)
    m = Merged()
    evaluated_subtree(conv.doc, n, frozenset({("chose", n, 0)}), m)
    assert m.uneval_approx


def test_dynamic_reference_is_unknown():
    conv = converter({"allOf": [{"$dynamicRef": "#x"}], "unevaluatedItems": False}, lenient=True)
    assert evaluated_subtree(conv.doc, root(conv), frozenset(), Merged()) is None


def test_in_place_applicators():
    assert in_place_applicators({"allOf": []}) and in_place_applicators({"$ref": "#"})
    assert not in_place_applicators({"properties": {}, "items": True})


@pytest.mark.parametrize("schema,good,bad", [
    ({"type": "object", "allOf": [{"properties": {"a": {"type": "integer"}}}], "unevaluatedProperties": False},
     [b'{"a": 1}', b'{}'], [b'{"b": 1}', b'{"a": "x"}']),
    ({"type": "object", "oneOf": [{"properties": {"a": {"const": 1}}, "required": ["a"]},
                                  {"properties": {"b": {"const": 2}}, "required": ["b"]}],
      "unevaluatedProperties": False},
     [b'{"a": 1}', b'{"b": 2}'], [b'{"a": 1, "b": 2}', b'{"c": 1}']),
    ({"type": "array", "prefixItems": [{"type": "integer"}], "unevaluatedItems": {"type": "string"}},
     [b'[1]', b'[1, "x"]'], [b'[1, 2]']),
    ({"type": "array", "contains": {"type": "integer"}, "unevaluatedItems": {"type": "string"}},
     [b'[1, "x", 2]'], [b'[1, null]', b'["x"]']),
])
def test_grammars(schema, good, bad):
    r = Recognizer(json_schema_to_grammar(schema, any_whitespace=False, strict_mode=False))
    assert all(r.accepts(t) for t in good)
    assert not any(r.accepts(t) for t in bad)
