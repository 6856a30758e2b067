"""Loading and ``$ref`` resolution (xmask.grammar.json_schema.document): JSON pointers with
escapes, ``$id`` bases, anchors, drafts, and the errors for what cannot be resolved."""

import pytest

from xmask.errors import InvalidJSONError, InvalidSchemaError, UnsupportedSchemaError
from xmask.grammar.json_schema import json_schema_to_grammar
from xmask.grammar.json_schema.document import Document, detect_draft, escape_pointer, load_schema
from xmask.grammar.recognizer import Recognizer


def target(doc: Document, ref: str, base: str = "") -> str:
    """The JSON pointer of the node ``ref`` resolves to."""
    return doc.nodes[doc.resolve(ref, base, "#/$ref")][2]


def test_pointer_refs_unescape_tilde_slash_and_percent():
    doc = Document({"$defs": {"a/b": {"type": "string"}, "m~n": {}, "x y": {}, "%": {}}})
    assert target(doc, "#/$defs/a~1b") == "#/$defs/a~1b"
    assert doc.nodes[doc.resolve("#/$defs/a~1b", "", "#")][0] == {"type": "string"}
    assert target(doc, "#/$defs/m~0n") == "#/$defs/m~0n"
    assert target(doc, "#/$defs/x%20y") == "#/$defs/x y"
    assert target(doc, "#/$defs/%25") == "#/$defs/%"


def test_escape_pointer_round_trips_with_resolution():
    name = "~a/b~"
    doc = Document({"properties": {name: {"type": "null"}}})
    assert target(doc, "#/properties/" + escape_pointer(name)) == "#/properties/~0a~1b~0"


def test_ref_into_items_arrays_by_index():
    doc = Document({"items": [{"type": "integer"}, {"type": "string"}]})
    assert doc.nodes[doc.resolve("#/items/1", "", "#")][0] == {"type": "string"}


def test_id_bases_and_anchors():
    root = {"$id": "https://x.test/root.json",
            "$defs": {"inner": {"$id": "inner.json", "$defs": {"n": {"$anchor": "num", "type": "number"}}}}}
    doc = Document(root)
    n = root["$defs"]["inner"]["$defs"]["n"]
    assert doc.nodes[doc.resolve("inner.json#num", "https://x.test/root.json", "#")][0] is n
    assert doc.nodes[doc.resolve("https://x.test/inner.json#/$defs/n", "", "#")][0] is n
    assert doc.nodes[doc.resolve("#num", "https://x.test/inner.json", "#")][0] is n


def test_draft4_id_fragment_is_an_anchor():
    root = {"$schema": "http://json-schema.org/draft-04/schema#",
            "definitions": {"a": {"id": "#thing", "type": "boolean"}}}
    doc = Document(root)
    assert doc.draft == 4
    assert doc.nodes[doc.resolve("#thing", "", "#")][0] is root["definitions"]["a"]


@pytest.mark.parametrize("uri,draft", [
    ("http://json-schema.org/draft-04/schema#", 4), ("http://json-schema.org/draft-07/schema#", 7),
    ("https://json-schema.org/draft/2019-09/schema", 2019), ("https://json-schema.org/draft/2020-12/schema", 2020),
    (None, 2020)])
def test_detect_draft(uri, draft):
    assert detect_draft({} if uri is None else {"$schema": uri}) == draft


@pytest.mark.parametrize("ref,message", [
    ("https://elsewhere.test/s.json", "remote $ref"),
    ("#/$defs/missing", "points to nothing"),
    ("#nowhere", "unknown anchor"),
    ("#/$defs/a/type", "does not point to a schema"),
])
def test_unresolvable_refs_raise_with_the_pointer_of_the_ref(ref, message):
    schema = {"$defs": {"a": {"type": "string"}}, "properties": {"p": {"$ref": ref}}}
    with pytest.raises(UnsupportedSchemaError) as info:
        json_schema_to_grammar(schema)
    assert message in str(info.value)
    assert info.value.path == "#/properties/p/$ref"


def test_ref_siblings_ignored_before_2019_and_applied_after():
    defs = {"s": {"type": "string"}}
    old = {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": defs,
           "properties": {"v": {"$ref": "#/definitions/s", "maxLength": 1}}}
    new = {"$defs": defs, "properties": {"v": {"$ref": "#/$defs/s", "maxLength": 1}}}
    r_old = Recognizer(json_schema_to_grammar(old, any_whitespace=False, strict_mode=False))
    r_new = Recognizer(json_schema_to_grammar(new, any_whitespace=False, strict_mode=False))
    assert r_old.accepts(b'{"v": "ab"}') and not r_new.accepts(b'{"v": "ab"}')
    assert r_new.accepts(b'{"v": "a"}') and not r_new.accepts(b'{"v": 1}')


def test_recursive_ref_is_recursion_between_rules():
    tree = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}},
            "additionalProperties": False}
    r = Recognizer(json_schema_to_grammar(tree, any_whitespace=False))
    assert r.accepts(b'{"kids": [{"kids": [{}]}, {}]}')
    assert not r.accepts(b'{"kids": [{"kids": [1]}]}')


def test_load_schema_forms():
    assert load_schema('{"type": "null"}') == {"type": "null"}
    assert load_schema(b'true') is True
    with pytest.raises(InvalidJSONError):
        load_schema(b'{"a": \xff}')
    with pytest.raises(InvalidJSONError):
        load_schema('{"minimum": NaN}')
    with pytest.raises(TypeError):
        load_schema(3)

    class Model:
        @classmethod
        def model_json_schema(cls):
            return {"type": "integer"}

    assert load_schema(Model) == {"type": "integer"}


def test_a_subschema_that_is_not_a_schema_is_invalid():
    with pytest.raises(InvalidSchemaError) as info:
        Document({"properties": {"a": 3}})
    assert info.value.path == "#/properties/a"
