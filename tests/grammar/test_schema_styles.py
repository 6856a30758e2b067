"""Structural tags' ``json_schema`` content in every style (xmask.grammar.schema_styles):
documents in each model's argument syntax accepted, malformed ones rejected (the Recognizer
is the oracle), ``excludes`` / ``any_order`` / ``max_whitespace_cnt``, malformed options, masks
equal to the slow reference on Qwen2.5, and the same verdicts as XGrammar where xmask is not
deliberately stricter."""

import itertools
import random

import numpy as np
import pytest
from conftest import tokenizer_json

import xmask
from xmask.grammar.json_schema import json_schema_to_grammar
from xmask.grammar.recognizer import Recognizer
from xmask.grammar.schema_styles import STYLES, json_schema_format_grammar

XML = [s for s in STYLES if s != "json"]
D = "\uff5cDSML\uff5c"
_COHERE_TYPE = {"string": "raw", "number": "json", "boolean": "json", "null": "json", "object": "dict",
                "array": "list"}

TOOL = {  # a realistic tool: string + integer + optional enum
    "type": "object",
    "properties": {
        "location": {"type": "string", "description": "City and country"},
        "days": {"type": "integer", "description": "Forecast length"},
        "unit": {"enum": ["celsius", "fahrenheit"]},
    },
    "required": ["location", "days"],
}


def param(style, name, value, kind="string"):
    """One parameter written in ``style`` (``kind``: the JSON type of ``value``)."""
    if style == "qwen_xml":
        return f"<parameter={name}>{value}</parameter>"
    if style == "minimax_xml":
        return f'<parameter name="{name}">{value}</parameter>'
    if style == "glm_xml":
        return f"<arg_key>{name}</arg_key>\n<arg_value>{value}</arg_value>"
    if style == "kimi_k3_xml":
        return f'<|open|>argument key="{name}" type="{kind}"<|sep|>{value}<|close|>argument<|sep|>'
    if style in ("deepseek_xml", "deepseek_v4_1_xml"):
        lead = D if style == "deepseek_xml" else D + " "
        flag = "true" if kind == "string" else "false"
        return f'<{lead}parameter name="{name}" string="{flag}">{value}</{lead}parameter>'
    if style == "cohere_xml":
        return f'<cofl:value name="{name}" type="{_COHERE_TYPE[kind]}">{value}</cofl:value>'
    assert style == "minimax_m3_xml"
    return f"]<]minimax[>[<{name}>{value}]<]minimax[>[</{name}>"


def tool_docs(style):
    """(valid, invalid) argument texts for TOOL."""
    loc = param(style, "location", "Paris, FR")
    days = param(style, "days", "3", "number")
    unit = param(style, "unit", "celsius")
    valid = [loc + days, loc + "\n" + days + "\n" + unit + "\n", "\n" + loc + "  " + days,
             param(style, "location", "a < b & c > d") + days, param(style, "location", "") + days,
             loc + param(style, "days", "-12", "number")]
    invalid = ["", loc, days + loc, loc + loc + days, loc + days + days, loc + days + unit + unit,
               loc + days + param(style, "unit", "kelvin"), loc + param(style, "days", "1.5", "number"),
               loc + param(style, "days", "three", "number"), loc + days + param(style, "extra", "1", "number"),
               param(style, "location", "x" + param(style, "days", "1", "number")) + days]
    if style != "minimax_m3_xml":  # m3 values have no surrounding whitespace
        valid.append(loc + param(style, "days", "\n 3 \n", "number"))
    else:
        invalid.append(loc + param(style, "days", " 3", "number"))
    return valid, invalid


def check(grammar, valid, invalid):
    r = Recognizer(grammar)
    for doc in valid:
        assert r.accepts(doc.encode()), doc
    for doc in invalid:
        assert not r.accepts(doc.encode()), doc


# ---------------------------------------------------------------------------- documents per style


@pytest.mark.parametrize("style", XML)
def test_tool_arguments_in_each_style(style):
    check(json_schema_format_grammar(TOOL, style=style), *tool_docs(style))


def test_json_style_is_the_structural_tag_json():
    g = json_schema_format_grammar(TOOL)
    check(g, ['{"location": "Paris", "days": 3}', '{ "location" : "P",\n"days": 3, "unit": "celsius"}'],
          [' {"location": "P", "days": 3}', '{"location": "P", "days": 3} ', '{"days": 3, "location": "P"}',
           '{"location": "P", "days": 3, "x": 1}', '{"location": "P"}'])
    assert g == json_schema_to_grammar(TOOL, any_whitespace=True, strict_mode=True)


NESTED = {
    "type": "object",
    "properties": {
        "o": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
        "a": {"type": "array", "items": {"type": "integer"}},
        "b": {"type": "boolean"},
        "n": {"type": ["string", "null"]},
    },
    "required": ["o", "a", "b"],
}


@pytest.mark.parametrize("style", [s for s in XML if s not in ("cohere_xml", "minimax_m3_xml")])
def test_nested_values_are_json(style):
    p = lambda *a: param(style, *a)  # noqa: E731
    o, a, b = p("o", '{"x": 1}', "object"), p("a", "[1, 2]", "array"), p("b", "true", "boolean")
    check(json_schema_format_grammar(NESTED, style=style),
          [o + a + b, o + p("a", "[]", "array") + b, o + a + b + p("n", "null", "null"),
           o + a + b + p("n", "hello", "string")],
          [p("o", '{"y": 1}', "object") + a + b, o + p("a", '[1, "x"]', "array") + b,
           o + a + p("b", "yes", "boolean"), o + a + b + p("n", "null", "null") + p("n", "x", "string")])


def test_cohere_nests_dicts_and_lists():
    p = lambda *a: param("cohere_xml", *a)  # noqa: E731
    items = '<cofl:value type="json">1</cofl:value><cofl:value type="json">2</cofl:value>'
    o, a, b = p("o", p("x", "1", "number"), "object"), p("a", items, "array"), p("b", "true", "boolean")
    check(json_schema_format_grammar(NESTED, style="cohere_xml"),
          [o + a + b, o + p("a", "", "array") + b, o + a + b + p("n", "null", "null")],
          [p("o", '{"x": 1}', "object") + a + b, o + p("a", "[1, 2]", "array") + b,
           o + p("a", '<cofl:value type="raw">x</cofl:value>', "array") + b])


def test_minimax_m3_nests_parameters_and_items():
    p = lambda *a: param("minimax_m3_xml", *a)  # noqa: E731
    items = p("item", "1", "number") + "\n" + p("item", "2", "number")
    o, a, b = p("o", p("x", "1", "number"), "object"), p("a", items, "array"), p("b", "true", "boolean")
    check(json_schema_format_grammar(NESTED, style="minimax_m3_xml"),
          [o + a + b, o + p("a", "", "array") + b],
          [p("o", '{"x": 1}', "object") + a + b, o + p("a", "[1, 2]", "array") + b, o + a + p("b", " true", "boolean")])


def test_attributes_name_the_value_kind():
    schema = {"type": "object", "properties": {"v": {"type": ["integer", "string"]}}, "required": ["v"]}
    check(json_schema_format_grammar(schema, style="kimi_k3_xml"),
          [param("kimi_k3_xml", "v", "7", "number"), param("kimi_k3_xml", "v", "seven", "string")],
          [param("kimi_k3_xml", "v", "7", "integer"), param("kimi_k3_xml", "v", "7", "boolean")])
    check(json_schema_format_grammar(schema, style="deepseek_xml"),
          [param("deepseek_xml", "v", "7", "number"), param("deepseek_xml", "v", "7", "string")],
          [param("deepseek_xml", "v", "seven", "number")])


def test_string_constraints_are_raw_and_exact():
    schema = {"type": "object", "properties": {"p": {"type": "string", "pattern": "^[a-z]+$"},
                                                "m": {"type": "string", "maxLength": 40}}}
    for style in ("qwen_xml", "minimax_m3_xml"):
        p = lambda *a: param(style, *a)  # noqa: E731
        check(json_schema_format_grammar(schema, style=style),
              [p("p", "abc"), p("m", "x" * 40), p("m", "a<b")],
              [p("p", "ABC"), p("p", '"abc"'), p("m", "x" * 41),
               # the closing tag never hides inside a value, even where the length allows it
               p("m", "a" + ("</parameter>" if style == "qwen_xml" else "]<]minimax[>[") + "b")])


def test_names_additional_and_escaped():
    schema = {"type": "object", "properties": {"a&b": {"type": "string"}},
              "additionalProperties": {"type": "integer"}}
    check(json_schema_format_grammar(schema, style="qwen_xml"),
          ["<parameter=a&b>x</parameter><parameter=n_1>2</parameter>"],
          ["<parameter=a&b>x</parameter><parameter=a&b>2</parameter>",  # a declared name is not additional
           "<parameter=n 1>2</parameter>", "<parameter=n>x</parameter>"])
    check(json_schema_format_grammar(schema, style="cohere_xml"),
          ['<cofl:value name="a&amp;b" type="raw">x</cofl:value><cofl:value name="k &lt;" type="json">2</cofl:value>'],
          ['<cofl:value name="a&b" type="raw">x</cofl:value>',
           '<cofl:value name="a&amp;b" type="json">2</cofl:value>'])


def test_root_alternatives():
    schema = {"anyOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                        {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]}]}
    p = lambda *a: param("glm_xml", *a)  # noqa: E731
    check(json_schema_format_grammar(schema, style="glm_xml"), [p("a", "x"), p("b", "1", "number")],
          ["", p("a", "x") + p("b", "1", "number"), p("b", "x")])


# ---------------------------------------------------------------------------- options


@pytest.mark.parametrize("style", XML)
def test_any_order_is_exact(style):
    loc, days, unit = param(style, "location", "P"), param(style, "days", "3", "number"), param(style, "unit", "celsius")
    check(json_schema_format_grammar(TOOL, style=style, any_order=True),
          [days + loc, unit + days + loc, loc + unit + days],
          [loc, unit + loc, days + loc + days, loc + days + unit + unit])


def test_member_sequences_are_exact():
    """Every sequence of up to 4 parameters (declared a, b, c and an additional z) is accepted
    iff it satisfies required, uniqueness, order (unless any_order) and min/maxProperties."""
    rnd = random.Random(3)
    for _ in range(40):
        decl = ["a", "b", "c"][:rnd.randint(0, 3)]
        req = [x for x in decl if rnd.random() < 0.4]
        addl, any_order = rnd.random() < 0.5, rnd.random() < 0.5
        lo, hi = rnd.choice([0, 0, 1, 2]), rnd.choice([None, None, 1, 2, 3])
        schema = {"type": "object", "properties": {x: {"type": "integer"} for x in decl}, "required": req,
                  "additionalProperties": {"type": "integer"} if addl else False, "minProperties": lo}
        if hi is not None:
            schema["maxProperties"] = hi
        r = Recognizer(json_schema_format_grammar(schema, style="qwen_xml", any_order=any_order))
        for n in range(5):
            for seq in itertools.product(decl + ["z"], repeat=n):
                named = [x for x in seq if x != "z"]
                ok = (len(set(named)) == len(named) and set(req) <= set(named) and (addl or "z" not in seq)
                      and lo <= n and (hi is None or n <= hi))
                if ok and not any_order:
                    idx = [decl.index(x) for x in named]
                    ok = idx == sorted(idx) and seq[len(named):] == ("z",) * (n - len(named))
                doc = "".join(f"<parameter={x}>1</parameter>" for x in seq)
                assert r.accepts(doc.encode()) == ok, (schema, any_order, seq)


@pytest.mark.parametrize("style", ["json", "qwen_xml", "deepseek_xml"])
def test_max_whitespace_cnt(style):
    g = json_schema_format_grammar(TOOL, style=style, max_whitespace_cnt=2)
    if style == "json":
        ok, bad = '{"location": "P",  "days": 3}', '{"location": "P",   "days": 3}'
    else:
        loc = param(style, "location", "P")
        ok, bad = loc + "\n\n" + param(style, "days", "  3", "number"), loc + "\n\n\n" + param(style, "days", "3", "number")
    check(g, [ok], [bad])


def test_excludes_json():
    schema = {"type": "object", "properties": {"q": {"type": "string"}, "e": {"enum": ["ok", "is bad"]},
                                                "o": {"type": "object"}, "p": {"type": "string", "pattern": "^[a-z]+$"}},
              "required": ["q"]}
    check(json_schema_format_grammar(schema, excludes=["bad"]),
          ['{"q": "x"}', '{"q": "ba\\u0064"}', '{"q": "x", "e": "ok"}', '{"q": "x", "p": "bad"}',
           '{"q": "x", "o": {"k": [1, "b"]}}'],
          ['{"q": "xbadx"}', '{"q": "x", "e": "is bad"}', '{"q": "x", "o": {"bad": 1}}',
           '{"q": "x", "o": {"k": ["a bad"]}}', '{"q": "x", "o": {"k": {"badge": 1}}}'])
    # lengths are kept (XGrammar drops them), counted in decoded characters
    g = json_schema_format_grammar({"type": "string", "maxLength": 3}, excludes=["ab"])
    check(g, ['"a\\u0062c"', '"ba"'], ['"abc"', '"aaaa"'])


@pytest.mark.parametrize("style", ["qwen_xml", "glm_xml", "kimi_k3_xml", "deepseek_v4_1_xml"])
def test_excludes_xml(style):
    schema = dict(TOOL, additionalProperties={"type": "string"})
    g = json_schema_format_grammar(schema, style=style, excludes=["DROP", "x_"])
    days = param(style, "days", "3", "number")
    check(g, [param(style, "location", "DRO P") + days, param(style, "location", "P") + days + param(style, "y", "v")],
          [param(style, "location", "a DROP b") + days, param(style, "location", "DROP") + days,
           param(style, "location", "P") + days + param(style, "x_1", "v"),
           param(style, "location", "P") + days + param(style, "y", "xx_")])


def test_excludes_reach_json_inside_xml_values():
    schema = {"type": "object", "properties": {"o": {"type": "object"}, "a": {"type": "array", "items": {"type": "string"}}}}
    g = json_schema_format_grammar(schema, style="qwen_xml", excludes=["rm -rf"])
    check(g, ['<parameter=o>{"cmd": "ls"}</parameter>', '<parameter=a>["rm -r f"]</parameter>'],
          ['<parameter=o>{"cmd": "rm -rf /"}</parameter>', '<parameter=o>{"rm -rf": 1}</parameter>',
           '<parameter=a>["x", "sudo rm -rf"]</parameter>'])


def test_long_length_bounds_with_an_end_tag_raise_clearly():
    schema = {"type": "object", "properties": {"s": {"type": "string", "maxLength": 100_000}}}
    with pytest.raises(xmask.GrammarError):
        json_schema_format_grammar(schema, style="qwen_xml")
    with pytest.raises(xmask.UnsupportedSchemaError):
        json_schema_format_grammar({"type": "string", "maxLength": 100_000}, excludes=["x"])


def test_excluded_name_drops_parameter():
    g = json_schema_format_grammar(TOOL, style="qwen_xml", excludes=["uni"])
    check(g, [param("qwen_xml", "location", "P") + param("qwen_xml", "days", "1")],
          [param("qwen_xml", "location", "P") + param("qwen_xml", "days", "1") + param("qwen_xml", "unit", "celsius")])


@pytest.mark.parametrize("options, path", [
    ({"style": "yaml"}, "fmt.style"),
    ({"style": None}, "fmt.style"),
    ({"any_order": 1}, "fmt.any_order"),
    ({"max_whitespace_cnt": 0}, "fmt.max_whitespace_cnt"),
    ({"max_whitespace_cnt": -1}, "fmt.max_whitespace_cnt"),
    ({"max_whitespace_cnt": True}, "fmt.max_whitespace_cnt"),
    ({"excludes": "bad"}, "fmt.excludes"),
    ({"excludes": ["ok", ""]}, "fmt.excludes[1]"),
    ({"excludes": [3]}, "fmt.excludes[0]"),
    ({"style": "qwen_xml", "excludes": ["x", " pad"]}, "fmt.excludes[1]"),
    ({"style": "glm_xml", "excludes": ["pad\n"]}, "fmt.excludes[0]"),
    ({"style": "cohere_xml", "excludes": ["x"]}, "fmt.excludes"),
    ({"style": "minimax_m3_xml", "excludes": ["x"]}, "fmt.excludes"),
])
def test_malformed_options_raise_with_path(options, path):
    with pytest.raises(xmask.InvalidStructuralTagError) as e:
        json_schema_format_grammar(TOOL, path="fmt", **options)
    assert e.value.path == path
    assert path in str(e.value)


def test_json_style_excludes_may_have_whitespace():
    json_schema_format_grammar(TOOL, excludes=[" pad "])


def test_schema_errors_raise_with_pointer():
    with pytest.raises(xmask.InvalidSchemaError) as e:
        json_schema_format_grammar({"type": "object", "properties": {"a": {"minLength": "3"}}}, style="qwen_xml")
    assert e.value.path == "#/properties/a/minLength"
    with pytest.raises(xmask.UnsupportedSchemaError):
        json_schema_format_grammar({"type": "string"}, style="qwen_xml")  # no arguments object
    with pytest.raises(xmask.UnsupportedSchemaError):
        json_schema_format_grammar({"type": "object", "additionalProperties": True}, style="minimax_m3_xml")
    big = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(9)}}
    with pytest.raises(xmask.UnsupportedSchemaError):
        json_schema_format_grammar(big, style="qwen_xml", any_order=True)


# ---------------------------------------------------------------------------- masks on a real tokenizer


@pytest.fixture(scope="module")
def qwen():
    import tokenizers

    path = str(tokenizer_json("qwen2.5"))
    info = xmask.TokenizerInfo.from_huggingface(path, vocab_size=151936)  # the model's padded logits width
    return info, tokenizers.Tokenizer.from_file(path), xmask.GrammarCompiler(info)


def _walk(compiled, ids, info):
    """Accept ``ids`` one by one; at every step the fast mask equals the slow reference and
    allows the next token."""
    m = xmask.GrammarMatcher(compiled, terminate_without_stop_token=True)
    words = (info.vocab_size + 31) // 32
    for k in range(len(ids) + 1):
        fast = np.full((1, words), 0x5A5A5A5A, dtype=np.int32)
        ref = np.full((1, words), 0x5A5A5A5A, dtype=np.int32)
        m.fill_next_token_bitmask(fast)
        m._reference_fill_next_token_bitmask(ref)
        np.testing.assert_array_equal(fast, ref, err_msg=f"step {k}")
        if k < len(ids):
            assert (int(fast[0, ids[k] >> 5]) >> (ids[k] & 31)) & 1, f"step {k}: token {ids[k]} masked"
            assert m.accept_token(ids[k]), k
    return m


@pytest.mark.parametrize("style", ["qwen_xml", "deepseek_xml"])
def test_masks_equal_reference_qwen(qwen, style):
    info, tok, compiler = qwen
    compiled = compiler.compile_grammar(json_schema_format_grammar(TOOL, style=style))
    doc = ("\n" + param(style, "location", "San Francisco, CA") + "\n" + param(style, "days", "5", "number")
           + "\n" + param(style, "unit", "fahrenheit") + "\n")
    ids = tok.encode(doc, add_special_tokens=False).ids
    assert _walk(compiled, ids, info).is_completed()
    # a bad value is masked: after the days opening, a letter can not come
    head = param(style, "location", "SF") + param(style, "days", "5", "number").split("5")[0]
    m = _walk(compiled, tok.encode(head, add_special_tokens=False).ids, info)
    assert not m.accept_string("x")


@pytest.mark.parametrize("style", ["cohere_xml", "minimax_m3_xml"])
def test_nested_parameter_masks_equal_reference_qwen(qwen, style):
    info, tok, compiler = qwen
    compiled = compiler.compile_grammar(json_schema_format_grammar(NESTED, style=style))
    p = lambda *a: param(style, *a)  # noqa: E731
    if style == "cohere_xml":
        items = '<cofl:value type="json">1</cofl:value><cofl:value type="json">-2</cofl:value>'
    else:
        items = p("item", "1", "number") + "\n" + p("item", "-2", "number")
    doc = p("o", p("x", "7", "number"), "object") + "\n" + p("a", items, "array") + "\n" + p("b", "false", "boolean")
    assert _walk(compiled, tok.encode(doc, add_special_tokens=False).ids, info).is_completed()


def test_excluded_word_split_across_tokens_is_masked(qwen):
    info, tok, compiler = qwen
    compiled = compiler.compile_grammar(json_schema_format_grammar(TOOL, style="qwen_xml", excludes=["DROP TABLE"]))
    prefix = "<parameter=location>x; DROP TA"
    ids = tok.encode(prefix, add_special_tokens=False).ids
    m = _walk(compiled, ids, info)
    bm = np.zeros((1, (info.vocab_size + 31) // 32), dtype=np.int32)
    m.fill_next_token_bitmask(bm)
    allowed = [t for t in range(info.vocab_size) if (int(bm[0, t >> 5]) >> (t & 31)) & 1]
    texts = [info.decoded_vocab[t] for t in allowed]
    assert not any(t.startswith(b"BLE") for t in texts)  # no token completes the word
    assert b"B" in texts and b"BL" in texts  # its proper prefixes stay open
    assert not m.accept_string("BLE")
    assert m.accept_string("BLX</parameter>")
    # the same across the JSON style
    cj = compiler.compile_grammar(json_schema_format_grammar(TOOL, excludes=["DROP TABLE"]))
    m = _walk(cj, tok.encode('{"location": "x; DROP TA', add_special_tokens=False).ids, info)
    assert not m.accept_string("BLE")


# ---------------------------------------------------------------------------- against XGrammar


def _xgrammar_accepts(xgr, schema, style, doc, **options):
    tag = {"type": "structural_tag", "format": {"type": "json_schema", "json_schema": schema, "style": style, **options}}
    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo([])).compile_grammar(xgr.Grammar.from_structural_tag(tag))
    m = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
    return m.accept_string(doc) and m.is_terminated()


@pytest.mark.parametrize("style", STYLES)
def test_same_verdicts_as_xgrammar(style):
    """Where xmask is not deliberately stricter (no repeated parameters, no any_order), the
    verdicts agree with XGrammar 0.2.8's."""
    xgr = pytest.importorskip("xgrammar")
    if style == "json":
        valid = ['{"location": "Paris", "days": 3}', '{"location": "P", "days": 3, "unit": "celsius"}']
        invalid = [' {"location": "P", "days": 3}', '{"days": 3, "location": "P"}', '{"location": "P"}',
                   '{"location": "P", "days": 3, "x": 1}']
        options = [{}, {"excludes": ["Par"]}, {"max_whitespace_cnt": 1}]
    else:
        valid, invalid = tool_docs(style)
        options = [{}, {"max_whitespace_cnt": 1}]
        if style not in ("cohere_xml", "minimax_m3_xml"):
            options.append({"excludes": ["Par", "</"]})
    for opts in options:
        r = Recognizer(json_schema_format_grammar(TOOL, style=style, **opts))
        for doc in valid + invalid:
            assert r.accepts(doc.encode()) == _xgrammar_accepts(xgr, TOOL, style, doc, **opts), (opts, doc)
