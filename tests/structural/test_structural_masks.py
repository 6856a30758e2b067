"""Structural tags end to end on Llama-3 and Qwen2.5 (padded vocabulary): every mask along a
document equals the slow reference (free text, several calls, a trigger split across tokens),
invalid arguments are masked, and each format accepts / rejects what it should."""

import json

import pytest
from stag_util import Tok, allowed

import xmask


@pytest.fixture(scope="module", params=["llama3", "qwen2.5"])
def tok(request):
    return Tok(request.param)


WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOL_TAG = {"type": "structural_tag", "format": {
    "type": "triggered_tags", "triggers": ["<tool_call>"], "tags": [{
        "begin": '<tool_call>\n{"name": "get_weather", "arguments": ',
        "content": {"type": "json_schema", "json_schema": WEATHER},
        "end": "}\n</tool_call>"}]}}

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "%s"}}\n</tool_call>'


def test_tool_calls_masks_equal_reference(tok):
    compiled = tok.compiler.compile_structural_tag(json.dumps(TOOL_TAG))
    doc = ("Let me check the <tool weather <tool_ca.\n" + CALL % "Paris" + "\nand " +
           CALL % "Rome" + " done")
    m = tok.walk(compiled, tok.encode(doc), tok.name)
    assert m.is_completed()


def test_trigger_split_across_tokens(tok):
    compiled = tok.compiler.compile_structural_tag(TOOL_TAG)
    # the trigger arrives in pieces: "<", "tool", "_call", ">" ... never as one token
    ids = tok.encode("Hi <") + tok.encode("tool") + tok.encode("_call") + \
        tok.encode(CALL[len("<tool_call"):] % "Oslo")
    assert tok.walk(compiled, ids, tok.name).is_completed()


def test_invalid_arguments_are_masked(tok):
    compiled = tok.compiler.compile_structural_tag(TOOL_TAG)
    m = xmask.GrammarMatcher(compiled)
    assert m.accept_string('ok <tool_call>\n{"name": "get_weather", "arguments": {')
    fast, ref = tok.rows(m)
    assert (fast == ref).all()
    for bad in ('"town', "]", "}x"):
        for t in tok.encode(bad)[:1]:
            assert not allowed(fast, t) or tok.tokenizer.decode([t]) in ('"', " "), bad
    assert not m.accept_string('"town": "x"}')
    # after the trigger the fixed part of the tag is forced
    m2 = xmask.GrammarMatcher(compiled)
    assert m2.accept_string("x <tool_call>")
    assert m2.find_jump_forward_string().startswith('\n{"name": "get_weather"')
    assert not m2.accept_string("oops")


def test_free_text_excludes_and_tag_end(tok):
    st = {"format": {"type": "sequence", "elements": [
        {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"},
        {"type": "any_text", "excludes": ["<think>"]}]}}
    compiled = tok.compiler.compile_structural_tag(st)
    doc = "<think>a </think almost </thin and <b></think>answer, no think tag"
    assert tok.walk(compiled, tok.encode(doc), tok.name).is_completed()
    for bad in ("<think>x</think>y<think>", "<think>x</think>then <think>z", "no think"):
        m = xmask.GrammarMatcher(compiled)
        assert not (m.accept_string(bad) and m.is_completed()), bad


CASES = [
    ({"type": "const_string", "value": "Hello, world"}, ["Hello, world"], ["Hello", "Hello, world!"]),
    ({"type": "regex", "pattern": r"\d{2}-[a-z]+"}, ["12-ab"], ["1-ab", "12-"]),
    ({"type": "grammar", "grammar": 'root ::= "x" r\nr ::= [a-c]*'}, ["xabc", "x"], ["xd"]),
    ({"type": "sequence", "elements": [{"type": "const_string", "value": "a"},
                                       {"type": "regex", "pattern": "[0-9]+"}]}, ["a12"], ["a"]),
    ({"type": "or", "elements": [{"type": "const_string", "value": "yes"},
                                 {"type": "const_string", "value": "no"}]}, ["yes", "no"], ["maybe"]),
    ({"type": "optional", "content": {"type": "const_string", "value": "x"}}, ["", "x"], ["xx"]),
    ({"type": "star", "content": {"type": "const_string", "value": "ab"}}, ["", "abab"], ["aba"]),
    ({"type": "plus", "content": {"type": "const_string", "value": "ab"}}, ["ab", "ababab"], [""]),
    ({"type": "repeat", "min": 2, "max": 3, "content": {"type": "const_string", "value": "x,"}},
     ["x,x,", "x,x,x,"], ["x,", "x,x,x,x,"]),
    ({"type": "repeat", "min": 1, "max": -1, "content": {"type": "const_string", "value": "q"}},
     ["q", "qqqqq"], [""]),
    ({"type": "any_text", "max_chars": 5}, ["", "héllo"], ["hello!"]),
    ({"type": "any_text", "excludes": ["bad", "<|"]}, ["good text", "ba d"], ["so bad", "a<|b"]),
    ({"type": "tag", "begin": "<a>", "content": {"type": "any_text"}, "end": ["</a>", "</b>"]},
     ["<a>x</a>", "<a>y</b>", "<a></a"[:-1] + "a>"], ["<a>x</a>y</a>", "<a>x"]),
    ({"type": "tags_with_separator", "separator": ", ", "tags": [
        {"begin": "<a>", "content": {"type": "const_string", "value": "1"}, "end": "</a>"},
        {"begin": "<b>", "content": {"type": "const_string", "value": "2"}, "end": "</b>"}]},
     ["", "<a>1</a>", "<a>1</a>, <b>2</b>, <a>1</a>"], ["<a>1</a>,", "x<a>1</a>"]),
    ({"type": "triggered_tags", "triggers": ["<f"], "at_least_one": True, "tags": [
        {"begin": "<f>", "content": {"type": "const_string", "value": "1"}, "end": "</f>"}]},
     ["<f>1</f>", "<f>1</f> then <f>1</f>"], ["text <f>1</f>", ""]),
    ({"type": "triggered_tags", "triggers": ["<f"], "stop_after_first": True, "tags": [
        {"begin": "<f>", "content": {"type": "const_string", "value": "1"}, "end": "</f>"}]},
     ["", "text", "text <f>1</f>"], ["<f>1</f> more", "<f>2</f>"]),
    ({"type": "dispatch", "loop": True, "excludes": ["STOP"], "rules": [
        ["@num:", {"type": "regex", "pattern": "[0-9]+;"}],
        ["@word:", {"type": "regex", "pattern": "[a-z]+;"}]]},
     ["plain", "x @num:12; y @word:abc;", "@num:1;@num:2;"], ["@num:x;", "STOP", "@word:1;"]),
    ({"type": "json_schema", "json_schema": WEATHER}, ['{"city": "Paris"}', '{ "city" : "x" }'],
     ['{"city": 1}', '{"city": "x", "y": 1}']),
    ({"type": "qwen_xml_parameter", "json_schema": WEATHER},
     ["<parameter=city>Paris</parameter>", "<parameter=city>\nSão Paulo\n</parameter>"],
     ["<parameter=town>x</parameter>", "<parameter=city>x"]),
    ({"type": "json_schema", "style": "qwen_xml", "json_schema": WEATHER},
     ["<parameter=city>Oslo</parameter>"], ["<parameter=city></parameter>x"]),
]


@pytest.mark.parametrize("fmt,good,bad", CASES, ids=[c[0]["type"] + str(i) for i, c in enumerate(CASES)])
def test_format_documents(tok, fmt, good, bad):
    compiled = tok.compiler.compile_structural_tag({"type": "structural_tag", "format": fmt})
    for doc in good:
        m = tok.walk(compiled, tok.encode(doc), f"{tok.name} {doc!r}")
        assert m.is_completed(), doc
    for doc in bad:
        m = xmask.GrammarMatcher(compiled)
        assert not (m.accept_string(doc) and m.is_completed()), doc


def test_rollback_fork_and_serialization_keep_masks(tok):
    compiled = tok.compiler.compile_structural_tag(TOOL_TAG)
    ids = tok.encode("Hi <tool " + CALL % "Lima" + " bye")
    m = xmask.GrammarMatcher(compiled)
    for t in ids:
        assert m.accept_token(t)
    again = xmask.CompiledGrammar.deserialize_json(compiled.serialize_json(), tok.info)
    for k in (1, 3, 7, len(ids) - 2):
        m.rollback(k)
        m2 = xmask.GrammarMatcher(again)
        for t in ids[:len(ids) - k]:
            assert m2.accept_token(t)
        fast, ref = tok.rows(m)
        assert (fast == ref).all()
        assert (tok.rows(m2)[0] == fast).all() and (tok.rows(m.fork())[0] == fast).all()
        for t in ids[len(ids) - k:]:
            assert m.accept_token(t)
    assert m.is_completed()


def test_nested_formats_masks(tok):
    fmt = {"type": "sequence", "elements": [
        {"type": "tag", "begin": "<think>", "end": ["</think>", "</THINK>"], "content": {
            "type": "triggered_tags", "triggers": ["[["], "tags": [
                {"begin": "[[note]]", "content": {"type": "any_text"}, "end": "[[/note]]"}]}},
        {"type": "dispatch", "loop": False, "rules": [
            ["CALL ", {"type": "json_schema", "json_schema": WEATHER}]]}]}
    compiled = tok.compiler.compile_structural_tag({"format": fmt})
    doc = ('<think>plan [ not [[note]] a [[ b [/note] [[/note]] ok </think fine</THINK>'
           'answer: CALL {"city": "Bern"}')
    assert tok.walk(compiled, tok.encode(doc), tok.name).is_completed()
    m = xmask.GrammarMatcher(compiled)
    assert not m.accept_string("<think>x [[bad")
