"""Disjointness proofs (xmask.grammar.json_schema.disjointness): every proof is sound (no
sample value satisfies both sides) and the cases ``oneOf`` exactness relies on are proven."""

import pytest
from schema_samples import VALUES, converter

from xmask.grammar.json_schema.validator import CannotValidate

DISJOINT = [
    ({"type": "string"}, {"type": "integer"}),
    ({"type": "number", "maximum": 1}, {"type": "integer", "minimum": 2}),
    ({"type": "number", "exclusiveMaximum": 2}, {"type": "number", "minimum": 2}),
    ({"const": "a"}, {"const": "b"}),
    ({"enum": [1, 2]}, {"type": "string"}),
    ({"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "^b"}),
    ({"type": "string", "maxLength": 1}, {"type": "string", "minLength": 2}),
    ({"type": "array", "maxItems": 0}, {"type": "array", "minItems": 1}),
    ({"type": "object", "required": ["k"], "properties": {"k": {"const": 1}}},
     {"type": "object", "required": ["k"], "properties": {"k": {"const": 2}}}),
    ({"type": "object", "required": ["k"]}, {"type": "object", "properties": {"k": False}}),
    ({"type": "string", "format": "date"}, {"type": "string", "pattern": "^x"}),
]
OVERLAPPING = [
    ({"type": "string"}, {"minLength": 1}),
    ({"minimum": 1}, {"maximum": 1}),
    ({"type": "object", "required": ["a"]}, {"type": "object", "required": ["b"]}),
    ({"type": "string", "pattern": "a"}, {"type": "string", "pattern": "b"}),
    ({"enum": [1, "a"]}, {"type": "string"}),
]


def prove(a, b):
    conv = converter({"oneOf": [a, b]})
    sa, sb = (conv.atoms.flatten(conv.doc.nid(s)) for s in conv.doc.root["oneOf"])
    return conv, sa, sb, conv.disjointness.disjoint(sa, sb, 3)


@pytest.mark.parametrize("a,b", DISJOINT, ids=lambda s: str(s)[:30])
def test_proven_disjoint(a, b):
    assert prove(a, b)[3]
    assert prove(b, a)[3]


@pytest.mark.parametrize("a,b", OVERLAPPING + DISJOINT, ids=lambda s: str(s)[:30])
def test_every_proof_is_sound(a, b):
    conv, sa, sb, disjoint = prove(a, b)
    if not disjoint:
        return
    for v in VALUES + ["x", "2020-01-01", "bb", {"k": 1}, {"k": 2}]:
        try:
            assert not (conv.validator.validate_atoms(v, sa) and conv.validator.validate_atoms(v, sb)), v
        except CannotValidate:
            pass


@pytest.mark.parametrize("a,b", OVERLAPPING, ids=lambda s: str(s)[:30])
def test_overlapping_not_proven(a, b):
    assert not prove(a, b)[3]
