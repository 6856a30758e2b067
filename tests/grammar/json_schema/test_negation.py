"""Symbolic negation (xmask.grammar.json_schema.negation): the alternatives of ``negate(s)``
hold exactly for the values ``s`` rejects, checked with the reference validator."""

import pytest
from schema_samples import VALUES, converter, root

from xmask.grammar.json_schema.validator import CannotValidate

NEGATABLE = [
    {"type": "string"}, {"type": ["integer", "null"]}, {"type": "number"}, {"minimum": 2},
    {"exclusiveMaximum": 2.5}, {"multipleOf": 3}, {"minLength": 2}, {"maxLength": 1}, {"maxItems": 1},
    {"minProperties": 2}, {"pattern": "^a"}, {"format": "date"}, {"enum": [1, "a", True, None]},
    {"const": 2.5}, {"const": False}, {"required": ["a"]}, {"properties": {"a": {"type": "integer"}}},
    {"items": {"type": "string"}}, {"not": {"type": "string"}}, {"allOf": [{"minimum": 0}, {"maximum": 5}]},
    {"anyOf": [{"type": "string"}, {"maximum": 0}]}, {"type": "object", "required": ["a", "b"]},
    {"$defs": {"x": {"type": "boolean"}}, "$ref": "#/$defs/x"}, True, False, {},
]


@pytest.mark.parametrize("schema", NEGATABLE, ids=lambda s: str(s)[:40])
def test_negation_is_the_complement(schema):
    conv = converter(schema)
    n = root(conv)
    alternatives = conv.negation.negate(n)
    assert alternatives is not None
    checked = 0
    for v in VALUES:
        try:
            inside = conv.validator.validate(v, n)
            outside = any(conv.validator.validate_atoms(v, alt) for alt in alternatives)
        except CannotValidate:
            continue
        assert inside != outside, v
        checked += 1
    assert checked > len(VALUES) // 2


@pytest.mark.parametrize("schema", [
    {"patternProperties": {"^a": {}}, "additionalProperties": {"type": "string"}},
    {"if": {"type": "string"}, "then": {"minLength": 1}},
    {"format": "idn-hostname"},
    {"enum": [[1]]},
], ids=lambda s: str(s)[:40])
def test_what_cannot_be_negated_exactly_is_none(schema):
    conv = converter(schema)
    assert conv.negation.negate(root(conv)) is None


def test_self_reference_is_not_negatable():
    conv = converter({"$defs": {"r": {"$ref": "#/$defs/r"}}, "$ref": "#/$defs/r"})
    assert conv.negation.negate(root(conv)) is None
