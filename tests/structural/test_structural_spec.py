"""Structural-tag input: malformed tags raise InvalidStructuralTagError naming the JSON path,
the pydantic models round-trip, the legacy (tags, triggers) form and every input kind work, and
``import xmask`` does not import pydantic."""

import json
import subprocess
import sys

import pytest

import xmask
from xmask.grammar.recognizer import Recognizer

C = {"type": "const_string", "value": "x"}


def tag(begin="<a>", content=C, end="</a>"):
    return {"type": "tag", "begin": begin, "content": content, "end": end}


def st(fmt):
    return {"type": "structural_tag", "format": fmt}


BAD = [
    ({"type": "structural_tag"}, "format", "missing required field 'format'"),
    ({"type": "other", "format": C}, "type", "structural_tag"),
    (st({"type": "nope"}), "format.type", "unknown format type"),
    (st({"value": "x"}), "format", "needs a 'type'"),
    (st({"type": "const_string"}), "format.value", "missing"),
    (st({"type": "const_string", "value": 5}), "format.value", "must be a string"),
    (st({"type": "sequence", "elements": []}), "format.elements", "non-empty"),
    (st({"type": "sequence", "elements": [C, {"type": "tag", "begin": 1, "content": C,
                                              "end": "e"}]}), "format.elements[1].begin", "string"),
    (st({"type": "or", "elements": [C, {"type": "regex", "pattern": "("}]}),
     "format.elements[1].pattern", "RegexSyntaxError"),
    (st({"type": "grammar", "grammar": "root ::= ("}), "format.grammar", "GrammarSyntaxError"),
    (st({"type": "json_schema", "json_schema": {"type": "integer", "minimum": "x"}}),
     "format", "InvalidSchemaError"),
    (st({"type": "json_schema", "json_schema": 3}), "format.json_schema", "object or a boolean"),
    (st({"type": "json_schema", "json_schema": {}, "style": "bogus"}), "format.style", "unknown style"),
    (st({"type": "json_schema", "json_schema": {}, "max_whitespace_cnt": 0}),
     "format.max_whitespace_cnt", ">= 1"),
    (st({"type": "repeat", "min": -1, "max": 2, "content": C}), "format.min", ">= 0"),
    (st({"type": "repeat", "min": 3, "max": 2, "content": C}), "format.max", ">= 'min'"),
    (st({"type": "repeat", "min": True, "max": 2, "content": C}), "format.min", "integer"),
    (st({"type": "any_text", "max_chars": -1}), "format.max_chars", ">= 0"),
    (st({"type": "any_text", "max_tokens": 0}), "format.max_tokens", "at least 1"),
    (st({"type": "any_text", "excludes": [""]}), "format.excludes[0]", "non-empty"),
    (st(tag(end=[])), "format.end", "empty array"),
    (st(tag(content={"type": "any_text"}, end="")), "format.end", "non-empty"),
    (st(tag(content={"type": "sequence", "elements": [C, {"type": "star", "content": C}]},
            end=[""])), "format.end", "unbounded"),
    (st({"type": "triggered_tags", "triggers": [], "tags": [tag()]}), "format.triggers", "non-empty"),
    (st({"type": "triggered_tags", "triggers": [""], "tags": [tag()]}), "format.triggers[0]",
     "non-empty"),
    (st({"type": "triggered_tags", "triggers": ["<a"], "tags": []}), "format.tags", "non-empty"),
    (st({"type": "triggered_tags", "triggers": ["<b"], "tags": [tag()]}),
     "format.tags[0].begin", "none of the triggers"),
    (st({"type": "triggered_tags", "triggers": ["<", "<a"], "tags": [tag()]}),
     "format.tags[0].begin", "more than one trigger"),
    (st({"type": "triggered_tags", "triggers": ["<a", "<c"], "tags": [tag()]}),
     "format.triggers[1]", "begins no tag"),
    (st({"type": "triggered_tags", "triggers": ["<a"], "tags": [tag()], "excludes": ["<"]}),
     "format.excludes[0]", "prefix of trigger"),
    (st({"type": "triggered_tags", "triggers": ["<a"], "tags": [tag()], "at_least_one": 1}),
     "format.at_least_one", "boolean"),
    (st({"type": "triggered_tags", "triggers": ["<a"],
         "tags": [tag(content={"type": "nope"})]}), "format.tags[0].content.type", "unknown"),
    (st({"type": "triggered_tags", "triggers": ["<a"],
         "tags": [tag(begin={"type": "token", "token": 3})]}), "format.tags[0].begin", "string"),
    (st({"type": "dispatch", "rules": []}), "format.rules", "non-empty"),
    (st({"type": "dispatch", "rules": [["", C]]}), "format.rules[0][0]", "non-empty"),
    (st({"type": "dispatch", "rules": [["a", C], ["ab", C]]}), "format.rules[0][0]", "prefix"),
    (st({"type": "dispatch", "rules": [["ab", C]], "excludes": ["a"]}), "format.excludes[0]",
     "prefix"),
    (st({"type": "dispatch", "rules": [["ab"]]}), "format.rules[0]", "pair"),
    (st({"type": "token", "token": -1}), "format.token", "non-negative"),
    (st({"type": "token", "token": "<|x|>"}), "format.token", "needs a tokenizer"),
    (st({"type": "exclude_token", "exclude_tokens": [1.5]}), "format.exclude_tokens[0]", "token"),
    (st({"type": "tags_with_separator", "tags": [], "separator": ","}), "format.tags", "non-empty"),
    (st({"type": "tag", "begin": "<a>", "content": C, "end": {"type": "const_string",
                                                              "value": "x"}}),
     "format.end", "token format"),
]


@pytest.mark.parametrize("doc,path,words", BAD, ids=[b[1] + ":" + b[2] for b in BAD])
def test_malformed_names_the_path(doc, path, words):
    with pytest.raises(xmask.InvalidStructuralTagError) as info:
        xmask.Grammar.from_structural_tag(json.dumps(doc))
    assert info.value.path == path, str(info.value)
    assert words in str(info.value)
    assert isinstance(info.value, RuntimeError)


def test_not_json_and_bad_types():
    with pytest.raises(xmask.InvalidJSONError):
        xmask.Grammar.from_structural_tag('{"format": ')
    with pytest.raises(TypeError):
        xmask.Grammar.from_structural_tag(42)
    with pytest.raises(TypeError):
        xmask.Grammar.from_structural_tag("a", "b", "c")


def test_inner_error_keeps_its_cause():
    with pytest.raises(xmask.InvalidStructuralTagError) as info:
        xmask.Grammar.from_structural_tag(st({"type": "regex", "pattern": "a("}))
    assert isinstance(info.value.__cause__, xmask.RegexSyntaxError)


def test_free_text_limit_is_a_grammar_limit_error():
    with pytest.raises(xmask.GrammarLimitError, match="format"):
        xmask.Grammar.from_structural_tag(st({"type": "any_text", "max_chars": 100000,
                                              "excludes": ["abc"]}))


def test_import_xmask_does_not_import_pydantic():
    code = ("import sys, xmask; t = '{\"format\": {\"type\": \"const_string\", \"value\": \"a\"}}'; "
            "xmask.Grammar.from_structural_tag(t); "
            "xmask.GrammarCompiler(xmask.default_tokenizer_info()).compile_structural_tag(t); "
            "assert 'pydantic' not in sys.modules; xmask.StructuralTag; "
            "assert 'pydantic' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def _accepts(grammar, text):
    return Recognizer(grammar).accepts(text.encode())


def test_pydantic_models_round_trip():
    from xmask.structural_tag import (AnyTextFormat, ConstStringFormat, JSONSchemaFormat,
                                      OrFormat, RepeatFormat, SequenceFormat, StructuralTag,
                                      TagFormat, TriggeredTagsFormat)

    model = StructuralTag(format=SequenceFormat(elements=[
        TriggeredTagsFormat(triggers=["<f"], tags=[TagFormat(
            begin="<f>", content=JSONSchemaFormat(json_schema={"type": "integer"}), end="</f>")],
            stop_after_first=True),
        OrFormat(elements=[ConstStringFormat(value="!"), RepeatFormat(
            min=0, max=2, content=AnyTextFormat(max_chars=1))])]))
    text = model.model_dump_json()
    assert StructuralTag.from_json(text) == model
    assert StructuralTag.from_json(json.loads(text)) == model
    grammars = [xmask.Grammar.from_structural_tag(x) for x in (model, text, json.loads(text))]
    assert grammars[0] == grammars[1] == grammars[2]
    assert _accepts(grammars[0], "hi <f>12</f>!") and not _accepts(grammars[0], "<f>x</f>")
    info = xmask.default_tokenizer_info()
    cg = xmask.GrammarCompiler(info).compile_structural_tag(model)
    m = xmask.GrammarMatcher(cg)
    assert m.accept_string("hi <f>12</f>!") and m.is_completed()


def test_model_defaults_match_xgrammar_names():
    from xmask import structural_tag as S

    assert S.AnyTextFormat().model_dump() == {"type": "any_text", "excludes": [],
                                              "max_tokens": None, "max_chars": None}
    assert S.JSONSchemaFormat(json_schema={}).style == "json"
    assert S.DispatchFormat(rules=[("a", S.ConstStringFormat(value="b"))]).loop is True
    assert S.StructuralTagItem(begin="a", schema={}, end="b").schema_ == {}
    with pytest.raises(Exception):
        S.AnyTextFormat(max_chars=-1)
    for name in S.__all__:
        assert hasattr(S, name)


def test_legacy_forms():
    from xmask.structural_tag import StructuralTag, StructuralTagItem

    items = [StructuralTagItem(begin="<f=a>", schema=json.dumps({"type": "integer"}), end="</f>"),
             StructuralTagItem(begin="<f=b>", schema={"type": "string"}, end="</f>")]
    forms = [
        xmask.Grammar.from_structural_tag(items, ["<f="]),
        xmask.Grammar.from_structural_tag(tags=items, triggers=["<f="]),
        xmask.Grammar.from_structural_tag([{"begin": "<f=a>", "schema": {"type": "integer"},
                                            "end": "</f>"},
                                           {"begin": "<f=b>", "schema": {"type": "string"},
                                            "end": "</f>"}], ["<f="]),
        xmask.Grammar.from_structural_tag(StructuralTag.from_legacy_structural_tag(items, ["<f="])),
    ]
    assert all(g == forms[0] for g in forms)
    assert _accepts(forms[0], 'x <f=a>1</f> y <f=b>"s"</f>')
    assert not _accepts(forms[0], 'x <f=a>"s"</f>')
    compiler = xmask.GrammarCompiler(xmask.default_tokenizer_info())
    a = compiler.compile_structural_tag(items, ["<f="])
    assert compiler.compile_structural_tag(tags=items, triggers=["<f="]) is a  # cached


def test_type_may_be_left_out_for_tags_and_top_level():
    g = xmask.Grammar.from_structural_tag({"format": {"begin": "<", "content": C, "end": ">"}})
    assert _accepts(g, "<x>")


def test_token_ids_lower_to_token_sets():
    g = xmask.Grammar.from_structural_tag(st({"type": "sequence", "elements": [
        {"type": "token", "token": 7},
        {"type": "exclude_token", "exclude_tokens": [1, 2]},
        {"type": "any_tokens", "exclude_tokens": [3], "max_tokens": 2},
        {"type": "token_dispatch", "rules": [[9, C]], "exclude_tokens": [4]}]}))
    text = str(g)
    assert "Token(7)" in text and "ExcludeToken(1, 2)" in text
    assert "ExcludeToken(3){0,2}" in text and "ExcludeToken(4, 9)" in text
