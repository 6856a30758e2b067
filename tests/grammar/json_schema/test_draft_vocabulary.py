"""Draft vocabulary: a schema declaring draft-04/06/07 in ``$schema`` does not have the keywords
of later drafts (``if``/``then``/``else`` came in draft-07, ``const``/``contains``/
``propertyNames`` in draft-06, ``dependentRequired``/``prefixItems``/``unevaluated*``/
``minContains`` in 2019-09), so they assert nothing there -- what that draft's validators do --
and a ``SchemaKeywordWarning`` says they are ignored.  Under 2019-09/2020-12 (or no
``$schema``) they apply.

Found in MaskBench: a draft-04 schema with ``if``/``then`` whose valid instances (by the draft-04
validator) were rejected.
"""

import json
import warnings

import pytest
from conftest import tokenizer_json

import xmask
from maskutil import walk_equals_reference
from xmask.errors import SchemaKeywordWarning

D4 = "http://json-schema.org/draft-04/schema#"
D6 = "http://json-schema.org/draft-06/schema#"
D7 = "http://json-schema.org/draft-07/schema#"
D2020 = "https://json-schema.org/draft/2020-12/schema"

try:  # optional oracle: the labels below are the draft's own validator's
    import jsonschema
except ImportError:  # pragma: no cover
    jsonschema = None

_COMPILER = {}


def _compiler():
    if not _COMPILER:
        _COMPILER["c"] = xmask.GrammarCompiler(xmask.default_tokenizer_info())
    return _COMPILER["c"]


def accepts(schema, value) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SchemaKeywordWarning)
        cg = _compiler().compile_json_schema(schema, strict_mode=False, any_whitespace=False)
    m = xmask.GrammarMatcher(cg)
    return m.accept_string(json.dumps(value)) and m.accept_token(m.stop_token_ids[0])


def with_draft(uri, schema):
    return {"$schema": uri, **schema} if uri else schema


# (schema without $schema, a value the keyword rejects, a value it accepts, drafts lacking it)
CASES = [
    ({"type": "object", "if": {"properties": {"t": {"const": "a"}}, "required": ["t"]},
      "then": {"required": ["x"]}}, {"t": "a"}, {"t": "a", "x": 1}, (D4, D6)),
    ({"type": "object", "if": {"required": ["t"]}, "else": {"required": ["x"]}}, {}, {"x": 1}, (D4, D6)),
    ({"const": 3}, 4, 3, (D4,)),
    ({"type": "array", "contains": {"type": "string"}}, [1], [1, "a"], (D4,)),
    ({"type": "object", "propertyNames": {"maxLength": 2}}, {"long": 1}, {"ab": 1}, (D4,)),
    ({"type": "object", "dependentRequired": {"a": ["b"]}}, {"a": 1}, {"a": 1, "b": 2}, (D4, D6, D7)),
    ({"type": "object", "dependentSchemas": {"a": {"required": ["b"]}}}, {"a": 1}, {"a": 1, "b": 2}, (D4, D6, D7)),
    ({"type": "array", "prefixItems": [{"type": "string"}]}, [1], ["a"], (D4, D6, D7)),
    ({"type": "object", "properties": {"a": {}}, "unevaluatedProperties": False}, {"b": 1}, {"a": 1}, (D4, D6, D7)),
    ({"type": "array", "contains": {"type": "string"}, "minContains": 2}, ["a", 1], ["a", "b"], (D4, D6, D7)),
]


@pytest.mark.parametrize("schema,rejected,accepted,lacking", CASES)
def test_later_keywords_assert_nothing_in_earlier_drafts(schema, rejected, accepted, lacking):
    for uri in (D4, D6, D7, D2020, None):
        s = with_draft(uri, schema)
        applies = uri not in lacking
        assert accepts(s, accepted), (uri, s, accepted)
        assert accepts(s, rejected) is not applies, (uri, s, rejected)
        if jsonschema is not None:
            cls = jsonschema.validators.validator_for(s, default=jsonschema.Draft202012Validator)
            assert cls(s).is_valid(rejected) is not applies, (uri, "oracle disagrees")


def test_ignored_keyword_is_reported_once_with_its_pointer():
    s = {"$schema": D4, "type": "object", "properties": {"a": {"type": "object", "const": {}}},
         "if": {"required": ["a"]}, "then": {"required": ["b"]}}
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        xmask.Grammar.from_json_schema(s, strict_mode=False)
    msgs = sorted(str(x.message) for x in w if issubclass(x.category, SchemaKeywordWarning))
    assert len(msgs) == 3, msgs
    assert any("'const' at #/properties/a/const is ignored" in m and "draft-04" in m for m in msgs), msgs
    assert any("'if' at #/if" in m for m in msgs) and any("'then' at #/then" in m for m in msgs), msgs
    with warnings.catch_warnings():  # in its own draft the keyword is silent
        warnings.simplefilter("error", SchemaKeywordWarning)
        xmask.Grammar.from_json_schema(dict(s, **{"$schema": D7}), strict_mode=False)


def test_ref_into_a_draft4_schema_sees_the_same_vocabulary():
    s = {"$schema": D4, "definitions": {"v": {"type": "integer", "const": 1}},
         "type": "object", "properties": {"n": {"$ref": "#/definitions/v"}}}
    assert accepts(s, {"n": 2}) and accepts(s, {"n": 1}) and not accepts(s, {"n": "x"})


def test_masks_equal_reference_on_llama3():
    """The MaskBench shape (draft-04, ``if``/``then`` inside array items): the instance the
    draft-04 validator accepts walks token by token with masks equal to the slow reference."""
    import tokenizers

    path = tokenizer_json("llama3")
    info = xmask.TokenizerInfo.from_huggingface(path.parent)
    hf = tokenizers.Tokenizer.from_file(str(path))
    schema = {"$schema": D4, "type": "object", "additionalProperties": False, "properties": {
        "extensions": {"type": "array", "items": {
            "properties": {"type": {"type": "string"}, "title": {"type": "string"}},
            "if": {"properties": {"type": {"const": "action"}}},
            "then": {"required": ["title", "category"]}}}}}
    value = {"extensions": [{"type": "action", "order": 2, "category": "c"}]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SchemaKeywordWarning)
        cg = xmask.GrammarCompiler(info).compile_json_schema(schema, strict_mode=False)
    ids = hf.encode(json.dumps(value), add_special_tokens=False).ids
    walk_equals_reference(xmask.GrammarMatcher(cg), ids + [info.stop_token_ids[0]], info.vocab_size)
    cg7 = xmask.GrammarCompiler(info).compile_json_schema(dict(schema, **{"$schema": D7}), strict_mode=False)
    m7 = xmask.GrammarMatcher(cg7)  # in draft-07 "then" applies: "title" is missing
    assert not (m7.accept_string(json.dumps(value)) and m7.accept_token(info.stop_token_ids[0]))
