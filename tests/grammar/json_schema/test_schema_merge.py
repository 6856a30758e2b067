"""Keyword merging (xmask.grammar.json_schema.merge / merged): the conjunction of the own
keywords of a location as one normalised schema."""

from fractions import Fraction

import pytest
from schema_samples import converter, root

from xmask.errors import InvalidSchemaError, UnsupportedSchemaError
from xmask.grammar.json_schema.merged import Merged, as_count, without_contains
from xmask.grammar.json_schema.vocabulary import MAX_COUNT_BOUND


def merged(schema, **options):
    conv = converter(schema, **options)
    return conv, conv.merger.merge(conv.atoms.flatten(root(conv)))


def test_bounds_tighten_and_exclusive_wins_a_tie():
    _, m = merged({"allOf": [{"minimum": 1, "maximum": 9}, {"exclusiveMinimum": 1}, {"maximum": 4.5}]})
    assert (m.lo, m.lo_x, m.hi, m.hi_x) == (Fraction(1), True, Fraction(9, 2), False)


def test_draft4_boolean_exclusive_bounds():
    _, m = merged({"$schema": "http://json-schema.org/draft-04/schema#", "minimum": 2, "exclusiveMinimum": True})
    assert (m.lo, m.lo_x) == (Fraction(2), True)


def test_types_intersect_and_number_covers_integer():
    _, m = merged({"type": ["number", "string"], "allOf": [{"type": ["integer", "null", "string"]}]})
    assert m.kinds == {"integer", "string"}


def test_enum_and_const_intersect_by_json_value():
    _, m = merged({"enum": [1, "a", True, None], "allOf": [{"enum": [1.0, True, "b"]}]})
    assert m.enum == [1, True]


def test_multiple_of_is_the_lcm_of_fractions():
    _, m = merged({"multipleOf": 0.5, "allOf": [{"multipleOf": 0.75}]})
    assert m.mult == Fraction(3, 2)


def test_lengths_and_counts():
    _, m = merged({"minLength": 2, "allOf": [{"minLength": 3, "maxLength": 8}, {"maxLength": 5}],
                   "minItems": 1, "maxProperties": 4})
    assert (m.min_len, m.max_len, m.min_items, m.max_props) == (3, 5, 1, 4)


def test_member_order_follows_the_first_properties_declaration():
    # "b" is only required by the first branch: it sits where the second declares it
    _, m = merged({"allOf": [{"required": ["b"]}, {"properties": {"a": {}, "b": {}}}]})
    assert sorted(m.names, key=lambda n: m.declared.get(n, m.names[n])) == ["a", "b"]
    assert list(m.required) == ["b"]


def test_one_object_unit_per_schema_object():
    conv, m = merged({"properties": {"a": {}}, "allOf": [{"patternProperties": {"^x": {}},
                                                         "additionalProperties": False}]})
    assert len(m.obj_units) == 2 and m.has_addl
    props, pats, addl, p = m.obj_units[1]
    assert [x[0] for x in pats] == ["^x"] and conv.doc.nodes[addl][0] is False and p == "#/allOf/0"


@pytest.mark.parametrize("schema", [{"type": "strin"}, {"enum": 3}, {"multipleOf": -1}, {"pattern": 3}])
def test_keywords_that_cannot_merge_raise_with_their_pointer(schema):
    with pytest.raises((UnsupportedSchemaError, InvalidSchemaError)) as info:
        merged(schema)
    assert info.value.path == "#/" + next(iter(schema))


def test_huge_counts_are_capped_and_remembered():
    m = Merged()
    assert as_count(10 ** 400, "#/maxLength", m, "len") == MAX_COUNT_BOUND + 1
    assert m.big == {"len": "#/maxLength"}
    with pytest.raises(InvalidSchemaError):
        as_count(-1, "#/minItems")


def test_without_contains_copies():
    _, m = merged({"contains": {"type": "string"}, "minItems": 2})
    c = without_contains(m)
    assert c.contains == [] and m.contains and c.min_items == 2
