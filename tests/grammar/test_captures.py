"""``GrammarMatcher.get_captures``: matches of Lark ``rule[capture]`` / ``rule[capture="x"]``
and EBNF ``rule[capture="x"] ::=`` rules (``xmask/grammar/captures.py``), with XGrammar
0.2.8's meaning: every parse hypothesis records each completion of a captured rule, ordered by
position; ``deduplicate`` keeps the last completion per occurrence.  Fed token by token on
Llama-3, with rollback, fork, reset and serialization; compared with XGrammar where installed.
"""

import functools

import numpy as np
import pytest
import tokenizers
from conftest import tokenizer_json

import xmask

ARGS = ('start: call ("," call)*\n'
        'call[capture]: name "(" args ")"\n'
        'name[capture="fn"]: /[a-z_]+/\n'
        'args: (arg ("," arg)*)?\n'
        'arg[capture]: /[0-9]+/ | ESCAPED_STRING | call\n'
        '%import common.ESCAPED_STRING\n')


@functools.lru_cache(maxsize=None)
def llama():
    path = str(tokenizer_json("llama3"))
    return xmask.TokenizerInfo.from_huggingface(path), tokenizers.Tokenizer.from_file(path)


def matcher(lark, **kw):
    info = llama()[0]
    return xmask.GrammarMatcher(xmask.GrammarCompiler(info).compile_lark(lark), **kw)


def feed(m, text):
    for t in llama()[1].encode(text, add_special_tokens=False).ids:
        assert m.accept_token(t), text
    return m


def test_token_by_token_with_rollback_fork_reset():
    m = feed(feed(matcher(ARGS), 'get_weather("Paris",3),'), "now()")
    assert m.get_captures() == [
        ("fn", b"get_weather"), ("arg", b'"Paris"'), ("arg", b"3"),
        ("call", b'get_weather("Paris",3)'), ("fn", b"now"), ("call", b"now()")]
    raw = m.get_captures(deduplicate=False)
    assert raw[:3] == [("fn", b"g"), ("fn", b"ge"), ("fn", b"get")]  # every byte, inside tokens
    assert m.get_captures() == m.get_captures()  # asking twice changes nothing
    child = m.fork()
    m.rollback(len(llama()[1].encode("now()", add_special_tokens=False).ids))
    assert m.get_captures() == [
        ("fn", b"get_weather"), ("arg", b'"Paris"'), ("arg", b"3"),
        ("call", b'get_weather("Paris",3)')]
    assert child.get_captures()[-1] == ("call", b"now()")
    feed(m, "a(7)")
    assert m.get_captures()[-3:] == [("fn", b"a"), ("arg", b"7"), ("call", b"a(7)")]
    assert child.get_captures()[-2:] == [("fn", b"now"), ("call", b"now()")]
    m.reset()
    assert m.get_captures() == []
    info = llama()[0]
    assert m.accept_string('f(1)') and m.accept_token(info.stop_token_ids[0])
    assert m.get_captures() == [("fn", b"f"), ("arg", b"1"), ("call", b"f(1)")]


def test_masks_never_record_and_rejected_tokens_change_nothing():
    m = feed(matcher(ARGS), "f(12")
    before = m.get_captures(deduplicate=False)
    bitmask = xmask.allocate_token_bitmask(1, llama()[0].vocab_size)
    m.fill_next_token_bitmask(bitmask)
    bad = llama()[1].encode("}", add_special_tokens=False).ids[0]
    assert not m.accept_token(bad)
    assert m.get_captures(deduplicate=False) == before
    assert before[-2:] == [("arg", b"1"), ("arg", b"12")]


def test_nested_and_dead_hypotheses():
    # completions of hypotheses that die later stay recorded; a parent after its child
    m = matcher('start: x "z" | y "w"\nx[capture]: /[0-9]+/\ny[capture]: /[0-9]+/')
    feed(m, "12z")
    assert m.get_captures() == [("x", b"12"), ("y", b"12")]
    m = matcher('start: outer\nouter[capture]: "(" inner ")"\ninner[capture]: /[a-z]+/ | outer')
    feed(m, "((ab))")
    assert m.get_captures() == [("inner", b"ab"), ("outer", b"(ab)"), ("inner", b"(ab)"),
                                ("outer", b"((ab))")]
    m = matcher('start: a a\na[capture]: "x"*')
    feed(m, "xx")
    assert m.get_captures() == [("a", b"xx"), ("a", b"x"), ("a", b"")]


def test_ebnf_attribute_printing_and_serialization():
    g = xmask.Grammar.from_ebnf('root ::= "<" tag ">"\ntag[capture="t"] ::= [a-z]+')
    assert g.captures == {"tag": "t"}
    assert str(g) == 'root ::= "<" tag ">"\ntag[capture="t"] ::= [a-z]+'
    assert xmask.Grammar.from_ebnf(str(g)) == g
    assert xmask.Grammar.deserialize_json(g.serialize_json()) == g
    lark = xmask.Grammar.from_lark('start: a\na[capture]: "q"')
    assert str(lark).endswith('a[capture="a"] ::= "q"')
    cg = xmask.GrammarCompiler(llama()[0]).compile_grammar(g)
    again = xmask.CompiledGrammar.deserialize_json(cg.serialize_json(), cg.tokenizer_info)
    for compiled in (cg, again):
        m = xmask.GrammarMatcher(compiled)
        feed(m, "<abc>")
        assert m.get_captures() == [("t", b"abc")]
    with pytest.raises(xmask.GrammarSyntaxError, match="capture"):
        xmask.Grammar.from_ebnf('root[capture=x] ::= "a"')
    with pytest.raises(xmask.GrammarSyntaxError, match="capture"):
        xmask.Grammar.from_lark('start[capture=1]: "a"')


def test_no_captures_no_log():
    m = feed(matcher('start: /[a-z]+/'), "abc")
    assert m.get_captures() == [] and m.get_captures(deduplicate=False) == []


CASES = [
    ('start: (num ",")*\nnum[capture]: /[0-9]+/', ["1,22,", "333"]),
    ('start: num num\nnum[capture]: /[0-9]+/', ["123"]),
    ('start: y | x\nx[capture]: "a"\ny[capture]: "a"', ["a"]),
    ('start: b\nb[capture]: a\na[capture]: "q"', ["q"]),
    ('start: a*\na[capture]: "ab" | "a"', ["aab"]),
    ('start: expr\nexpr[capture]: expr "+" term | term\nterm[capture]: /[0-9]+/', ["1+23+4"]),
    ('start: "{" item* "}"\nitem[capture]: "[" item* "]" | /[a-z]/', ["{[a[b]]c}"]),
    (ARGS, ['f(1,g(22),"a,b")', ",h()"]),
]


@pytest.mark.parametrize("lark,chunks", CASES)
def test_same_as_xgrammar(lark, chunks):
    xgr = pytest.importorskip("xgrammar")
    ref = xgr.GrammarMatcher(xgr.GrammarCompiler(xgr.TokenizerInfo([])).compile_grammar(
        xgr.Grammar.from_lark(lark)), terminate_without_stop_token=True)
    m = xmask.GrammarMatcher(xmask.GrammarCompiler(xmask.TokenizerInfo([])).compile_lark(lark),
                             terminate_without_stop_token=True)
    for chunk in chunks:
        assert ref.accept_string(chunk) and m.accept_string(chunk)
        assert m.get_captures() == ref.get_captures()
        # raw events: XGrammar may repeat one per alternative; the same events otherwise
        assert sorted(set(m.get_captures(deduplicate=False))) == sorted(
            set(ref.get_captures(deduplicate=False)))
    assert np.array_equal(m.get_captures(deduplicate=False), m.get_captures(deduplicate=False))


def test_union_and_concat_keep_captures():
    a = xmask.Grammar.from_lark('start: n\nn[capture="num"]: /[0-9]+/')
    b = xmask.Grammar.from_ebnf('root ::= w\nw[capture="word"] ::= [a-z]+')
    both = xmask.Grammar.concat(a, b)
    assert sorted(both.captures.values()) == ["num", "word"]
    m = xmask.GrammarMatcher(xmask.GrammarCompiler(xmask.TokenizerInfo([])).compile_grammar(both),
                             terminate_without_stop_token=True)
    assert m.accept_string("12ab")
    assert m.get_captures() == [("num", b"12"), ("word", b"ab")]
    assert set(xmask.Grammar.union(a, b).captures.values()) == {"num", "word"}


def test_structural_tag_grammar_content_keeps_captures():
    stag = {"type": "structural_tag", "format": {
        "type": "tag", "begin": "<a>", "end": "</a>",
        "content": {"type": "grammar", "grammar": 'root ::= w\nw[capture="word"] ::= [a-z]+'}}}
    compiled = xmask.GrammarCompiler(llama()[0]).compile_structural_tag(stag)
    m = feed(xmask.GrammarMatcher(compiled), "<a>xyz</a>")
    assert m.get_captures() == [("word", b"xyz")]


def test_module_doctest():
    import doctest

    import xmask.grammar.captures

    assert doctest.testmod(xmask.grammar.captures).failed == 0
