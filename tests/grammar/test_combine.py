"""embed_grammar copies a grammar under fresh names: the language is unchanged and two copies
never share a rule."""

from xmask.grammar.combine import RuleNamer, embed_grammar
from xmask.grammar.ir import Choice, TokenSet, Seq
from xmask import Grammar
from xmask.grammar.recognizer import Recognizer

PART = Grammar.from_ebnf('root ::= "(" inner ")"\ninner ::= "" | root inner')


def test_embedded_copies_keep_their_language_and_do_not_collide():
    rules = {}
    namer = RuleNamer(rules)
    a = embed_grammar(rules, PART, namer, "part")
    b = embed_grammar(rules, Grammar.from_ebnf('root ::= "x"+'), namer, "part")
    assert a.name != b.name and len(rules) == 3
    rules["root"] = Choice((a, b))
    rec = Recognizer(Grammar(rules, "root"))
    for text, ok in [(b"(()())", True), (b"xxx", True), (b"(x)", False), (b"(()", False)]:
        assert rec.accepts(text) is ok, text


def test_namer_sanitizes_hints_and_keeps_existing_names():
    rules = {"tool_call": Seq(())}
    namer = RuleNamer(rules)
    assert namer.fresh("tool_call") == "tool_call_1"
    assert namer.fresh("get weather/v2") == "get_weather_v2"
    assert namer.fresh("9lives") == "r_9lives"


def test_token_sets_are_copied_as_they_are():
    rules = {}
    ref = embed_grammar(rules, Grammar({"root": TokenSet([7, 3])}), RuleNamer(rules), "t")
    assert rules[ref.name] == TokenSet([3, 7])
