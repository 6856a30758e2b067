"""XGrammar's EBNF extensions in xmask's parser (no XGrammar needed): Regex, Substring,
Token/ExcludeToken, TagDispatch syntax, lookaheads, rule attributes, XGrammar's escapes and
printed forms, Grammar.union / Grammar.concat."""

import numpy as np
import pytest
from conftest import tokenizer_json
from maskutil import walk_equals_reference

import xmask
from xmask.errors import GrammarError, GrammarLimitError, GrammarSyntaxError
from xmask.grammar import Recognizer, TokenSet, parse_ebnf
from xmask import Grammar
from xmask.grammar.ebnf import parse_ebnf_with_lookaheads
from xmask.grammar.lookahead import lookahead_implied


def accepts(text, *strings, root="root"):
    r = Recognizer(parse_ebnf(text, root_rule_name=root))
    return {s: r.accepts(s.encode()) for s in strings}


def syntax_error(text):
    with pytest.raises(GrammarSyntaxError) as info:
        parse_ebnf(text)
    return info.value


# ---------------------------------------------------------------------------- builtin atoms

def test_regex_atom():
    got = accepts('root ::= "<" Regex("[a-c]+x{2}") ">"', "<abxx>", "<xx>", "<abx>", "<cxx>")
    assert got == {"<abxx>": True, "<xx>": False, "<abx>": False, "<cxx>": True}
    # EBNF string escapes first, then regex syntax: "\\d" is the regex \d
    assert accepts(r'root ::= Regex("\\d+")', "123", "a") == {"123": True, "a": False}


def test_regex_json_string_keeps_unescaped_json_characters():
    got = accepts('root ::= Regex("a.b", json_string=true)', 'axb', 'a"b', 'a\\b', 'a\x01b', 'aéb')
    assert got == {'axb': True, 'a"b': False, 'a\\b': False, 'a\x01b': False, 'aéb': True}


def test_regex_errors_have_positions():
    e = syntax_error('root ::= "x"\n  | Regex("a(")')
    assert "invalid regex" in str(e) and (e.line, e.column) == (2, 11)
    e = syntax_error('root ::= Regex("a", flags=1)')
    assert "no argument 'flags'" in str(e)
    assert "exactly one string" in str(syntax_error("root ::= Regex(1)"))


def test_substring_is_a_run_of_consecutive_chunks():
    got = accepts('root ::= Substring("abc", " def", " ghi")',
                  "", "abc", " def", "abc def", " def ghi", "abc def ghi", "abc ghi", "bc", " ghiabc")
    assert got == {"": True, "abc": True, " def": True, "abc def": True, " def ghi": True,
                   "abc def ghi": True, "abc ghi": False, "bc": False, " ghiabc": False}
    # one chunk: the empty string or the whole chunk (XGrammar 0.2.8's behaviour)
    assert accepts('root ::= "[" Substring("hello") "]"', "[]", "[hello]", "[ell]") == {
        "[]": True, "[hello]": True, "[ell]": False}
    assert accepts('root ::= Substring()', "", "a") == {"": True, "a": False}


def test_substring_helper_rules_do_not_clash():
    g = parse_ebnf('root ::= Substring("a", "b", "c") substring_tail\nsubstring_tail ::= "!"')
    assert g.rules["substring_tail"] == parse_ebnf('root ::= "!"').rules["root"]
    r = Recognizer(g)
    assert r.accepts(b"ab!") and r.accepts(b"!") and not r.accepts(b"ac!")


def test_token_atoms():
    g = parse_ebnf('root ::= Token(5, 2, 5) "x" ExcludeToken(3)')
    items = g.rules["root"].items
    assert items[0] == TokenSet((2, 5)) and items[2] == TokenSet((3,), negated=True)
    assert str(g) == 'root ::= Token(2, 5) "x" ExcludeToken(3)'
    assert parse_ebnf(str(g)) == g
    assert "non-negative" in str(syntax_error("root ::= Token(-1)"))
    assert "at least one" in str(syntax_error("root ::= Token()"))
    assert parse_ebnf("root ::= ExcludeToken()").rules["root"] == TokenSet((), negated=True)


def test_tag_dispatch_arguments_are_checked():
    e = syntax_error('root ::= TagDispatch(("<a>", a), stop_str=("x",))\na ::= "1"')
    assert "no argument 'stop_str'" in str(e) and (e.line, e.column) == (1, 34)
    e = syntax_error('root ::= TagDispatch(("<a>", a), excludes=("<",))\na ::= "1"')
    assert "would block trigger" in str(e)
    e = syntax_error('root ::= TagDispatch(("", a))\na ::= "1"')
    assert "non-empty" in str(e)
    with pytest.raises(GrammarError, match="'missing' is referenced but not defined"):
        parse_ebnf('root ::= TagDispatch(("<a>", missing))')
    # the free-text lowering's errors name the dispatch they come from
    with pytest.raises(GrammarError, match=r"'<a' is a prefix of trigger '<ab'.*line 2, column 7"):
        parse_ebnf('root ::= TagDispatch(("<b", a)) x\nx ::= TagDispatch(("<a", a), ("<ab", a))\na ::= "x"')


def test_tag_dispatch_language():
    text = ('root ::= TagDispatch(\n  ("<a>", a),\n  ("<b>", b),\n  loop_after_dispatch=true,\n  excludes=("</s>",)\n)\n'
            'a ::= [0-9]+ "</a>"\nb ::= "x"')
    got = accepts(text, "", "hi", "hi <a>12</a> and <b>x", "<a>1</a><a>2</a>", "hi <a>x</a>", "<b>y", "a </s> b",
                  "<", "<a")
    assert got == {"": True, "hi": True, "hi <a>12</a> and <b>x": True, "<a>1</a><a>2</a>": True,
                   "hi <a>x</a>": False, "<b>y": False, "a </s> b": False, "<": True, "<a": True}
    once = text.replace("loop_after_dispatch=true", "loop_after_dispatch=false")
    assert accepts(once, "<a>1</a>", "<a>1</a> more", "text <b>x") == {
        "<a>1</a>": True, "<a>1</a> more": False, "text <b>x": True}


def test_tag_dispatch_inside_a_rule_with_max_chars():
    # XGrammar prints this for a structural tag's any_text with max_chars inside a tag
    text = 'root ::= "<a>" any_text "</a>"\nany_text[max_chars=5] ::= TagDispatch(\n  loop_after_dispatch=false,\n  excludes=("</a>")\n)'
    got = accepts(text, "<a></a>", "<a>abcde</a>", "<a>abcdef</a>", "<a>x</a>y</a>", "<a></</a>")
    assert got == {"<a></a>": True, "<a>abcde</a>": True, "<a>abcdef</a>": False, "<a>x</a>y</a>": False,
                   "<a></</a>": True}
    assert "[max_chars" not in str(parse_ebnf(text))
    # the same bound through the generic unfolding (a trigger makes it more than free text)
    text = 'root ::= "<" x ">"\nx[max_chars=4] ::= TagDispatch(("{", y), excludes=(">",))\ny ::= [0-9] "}"'
    got = accepts(text, "<>", "<ab{1}>", "<{1}b>", "<abcde>", "<{1}{2}>", "<{12}>")
    assert got == {"<>": True, "<ab{1}>": False, "<{1}b>": True, "<abcde>": False, "<{1}{2}>": False,
                   "<{12}>": False}
    assert "dispatch" not in str(parse_ebnf(text))  # the unbounded helper rules are dropped


def test_token_tag_dispatch_structure():
    g = parse_ebnf('root ::= TokenTagDispatch((5, r), (6, r), loop_after_dispatch=false, excludes=(3,))\nr ::= "x"')
    assert "ExcludeToken(3, 5, 6)* (Token(5) r | Token(6) r)?" in str(g)
    g = parse_ebnf('root ::= TokenTagDispatch((5, r))\nr ::= "x"')
    assert "(ExcludeToken(5) | Token(5) r)*" in str(g)
    assert "would block" in str(syntax_error('root ::= TokenTagDispatch((5, r), excludes=(5,))\nr ::= "x"'))


# ---------------------------------------------------------------------------- lookaheads

def test_lookahead_is_dropped_like_xgrammar():
    # XGrammar matches as if the lookahead were absent, even where it does not hold
    g = parse_ebnf('root ::= a "c" | a "b"\na ::= "x" (= "b")')
    assert g == parse_ebnf('root ::= a "c" | a "b"\na ::= "x"')
    assert accepts('root ::= a "c"\na ::= "x" (= "b")', "xc", "xb") == {"xc": True, "xb": False}
    # XGrammar's printed spelling
    g = parse_ebnf('root ::= (("a" x)) (=("b"))\nx ::= (("y")) (=([ \\n]* "b"))')
    assert str(g) == 'root ::= "a" x\nx ::= "y"'
    g2, lookaheads = parse_ebnf_with_lookaheads('root ::= (("a" x)) (=("b"))\nx ::= (("y")) (=([ \\n]* "b"))')
    assert g2 == g and sorted(lookaheads) == ["root", "x"]


def test_lookahead_position_errors():
    e = syntax_error('root ::= "a" (= "b") "c"')
    assert "must end its rule body" in str(e) and (e.line, e.column) == (1, 22)
    e = syntax_error('root ::= ("a" (= "b"))')
    assert "may only end a rule body" in str(e) and (e.line, e.column) == (1, 15)
    e = syntax_error('root ::= "a" (= "b"')
    assert "lookahead" in str(e)


def test_lookahead_implication_checker():
    g = parse_ebnf('root ::= a [ ]* "," | "[" a "]"\na ::= "x"')
    la = parse_ebnf('root ::= [ ]* [,\\]]').rules["root"]
    assert lookahead_implied(g.rules, "root", "a", la)
    la = parse_ebnf('root ::= [ ]* ","').rules["root"]
    assert not lookahead_implied(g.rules, "root", "a", la)  # "]" follows in the second context
    # at the end of the input a lookahead is never checked
    g = parse_ebnf('root ::= "(" a\na ::= "x"')
    assert lookahead_implied(g.rules, "root", "a", la)
    # recursion through the follow of a rule
    g = parse_ebnf('root ::= item ("," item)* ";"\nitem ::= "x" | "(" root ")"')
    assert lookahead_implied(g.rules, "root", "item", parse_ebnf('root ::= [,;]').rules["root"])
    assert not lookahead_implied(g.rules, "root", "item", parse_ebnf('root ::= [,)]').rules["root"])
    assert lookahead_implied(g.rules, "root", "root", parse_ebnf('root ::= ")"').rules["root"])


# ---------------------------------------------------------------------------- rule attributes

def test_max_chars_bounds_the_rule_exactly():
    text = 'root ::= x "!"\nx[max_chars=3] ::= [a-z]*'
    assert accepts(text, "!", "ab!", "abc!", "abcd!") == {"!": True, "ab!": True, "abc!": True, "abcd!": False}
    # characters are code points, not bytes
    assert accepts('root ::= x\nx[max_chars=2] ::= "é" [a-zé]*', "é", "éé", "ééa") == {
        "é": True, "éé": True, "ééa": False}
    # recursion and other rules are unfolded within the budget
    text = 'root ::= x "!"\nx[max_chars=4] ::= "(" x ")" | y\ny ::= [a-z]?'
    assert accepts(text, "!", "()!", "(a)!", "((a))!", "(())!") == {
        "!": True, "()!": True, "(a)!": True, "((a))!": False, "(())!": True}


def test_max_chars_xmask_keeps_the_budget_where_xgrammar_relaxes_it():
    # XGrammar 0.2.8 lets this rule run on to "abcd" (with a warning); xmask matches nothing
    text = 'root ::= x "!" | "z"\nx[max_chars=3] ::= [a-z] [a-z] [a-z] [a-z]+'
    assert accepts(text, "abcd!", "z") == {"abcd!": False, "z": True}


def test_max_chars_that_cannot_be_reached_keeps_the_rule():
    g = parse_ebnf('root[max_chars=10] ::= "ab" [0-9]?')
    assert g == parse_ebnf('root ::= "ab" [0-9]?')


def test_max_tokens_on_a_token_rule():
    # XGrammar's any_tokens shape
    g = parse_ebnf('root ::= any_tokens "!"\nany_tokens[max_tokens=2] ::= ("" | (inner any_tokens))\n'
                   'inner ::= ExcludeToken(0)')
    assert "max_tokens" not in str(g)
    names = sorted(g.rules)
    assert names == ["any_tokens", "any_tokens_t1", "any_tokens_t2", "inner", "root"]
    assert str(g.rules["any_tokens_t2"]) in ('Seq(items=())',)


def test_rule_attribute_errors():
    with pytest.raises(GrammarError, match=r"max_tokens=0 on rule 'x' \(line 2, column 3\).*at least 1"):
        parse_ebnf('root ::= x\nx[max_tokens=0] ::= [a-z]*')
    with pytest.raises(GrammarError, match="max_chars on rule 'x'.*whole tokens"):
        parse_ebnf('root ::= x\nx[max_chars=3] ::= Token(1)*')
    with pytest.raises(GrammarError, match="left-recursive"):
        parse_ebnf('root ::= x\nx[max_chars=3] ::= x "a" | ""')
    with pytest.raises(GrammarLimitError, match="too large"):
        parse_ebnf('root ::= x\nx[max_chars=100000] ::= [a-z]*')
    e = syntax_error('root[max_chars=x] ::= "a"')
    assert "needs an integer" in str(e) and (e.line, e.column) == (1, 16)
    e = syntax_error('root[foo=1] ::= "a"')
    assert "unknown rule attribute 'foo'" in str(e)
    e = syntax_error('root[max_chars=1, max_chars=2] ::= "a"')
    assert "given twice" in str(e)


def test_temperature_attribute_is_accepted_and_ignored():
    assert parse_ebnf('root ::= v\nv[temperature=0.7] ::= [a-z]+') == parse_ebnf('root ::= v\nv ::= [a-z]+')


# ---------------------------------------------------------------------------- XGrammar's printed forms

def test_xgrammar_printed_forms():
    text = ('root ::= ((root_1{2, 2} root_2{0, -1} "\\xe9a"))\nroot_1 ::= (([^\\0-\\x1f\\"\\\\]))\n'
            'root_2 ::= ("" | ("b" root_2))\n')
    r = Recognizer(parse_ebnf(text))
    assert r.accepts("xybbéa".encode()) and r.accepts("xyéa".encode())
    assert not r.accepts("xéa".encode()) and not r.accepts("\x01yéa".encode())
    assert accepts(r'root ::= "\b\f\a\v\e\?" [\$\.\*\+\(\)\{\}\|]', "\b\f\a\v\x1b?$", "\b\f\a\v\x1b?|") == {
        "\b\f\a\v\x1b?$": True, "\b\f\a\v\x1b?|": True}
    assert accepts('root ::= "\\0"', "\x00") == {"\x00": True}


def test_dotted_rule_names():
    g = parse_ebnf('root ::= a.b . x.\na.b ::= "x"\nx ::= "y"')
    assert accepts('root ::= a.b . x.\na.b ::= "x"\nx ::= "y"', "x-y?", "xy") == {"x-y?": True, "xy": False}
    assert "a.b" in g.rules


# ---------------------------------------------------------------------------- union / concat

def test_union_and_concat():
    a = Grammar.from_ebnf('root ::= "a" x\nx ::= "b"')
    b = Grammar.from_ebnf('start ::= "c" x\nx ::= "d"', root_rule_name="start")
    u = Recognizer(Grammar.union(a, b, Grammar.from_regex("[0-9]+")))
    assert [u.accepts(s) for s in (b"ab", b"cd", b"42", b"ad", b"abcd")] == [True, True, True, False, False]
    c = Recognizer(Grammar.concat(a, b, a))
    assert c.accepts(b"abcdab") and not c.accepts(b"ab") and not c.accepts(b"abcdcd")
    assert Recognizer(Grammar.concat()).accepts(b"")
    one = Grammar.union(a)
    assert Recognizer(one).accepts(b"ab") and one.root == "root"
    with pytest.raises(GrammarError, match="at least one"):
        Grammar.union()
    with pytest.raises(TypeError, match="argument 1 is str"):
        Grammar.concat(a, "root ::= x")


# ---------------------------------------------------------------------------- masks on Llama-3

@pytest.mark.parametrize("text,doc", [
    ('root ::= "say " Regex("[a-z]{2,8}") " " Substring("the", " quick", " brown", " fox") "."',
     "say hello  quick brown."),
    ('root ::= "{" word ("," word)* "}"\nword[max_chars=5] ::= [a-z]+', "{abc,hello,x}"),
    ('root ::= members "]"\nmembers ::= item ("," item)*\nitem ::= "\\"" [a-z]* "\\"" (= [,\\]])',
     '"ab","cd"]'),
    ('root ::= TagDispatch(("<tool>", call), excludes=("<|eot|>",))\ncall ::= "{\\"n\\": " [0-9]+ "}</tool>"',
     'I will call <tool>{"n": 42}</tool> and then <tool>{"n": 7}</tool> done'),
])
def test_masks_equal_reference_llama3(text, doc):
    path = str(tokenizer_json("llama3"))
    import tokenizers

    info = xmask.TokenizerInfo.from_huggingface(path)
    ids = tokenizers.Tokenizer.from_file(path).encode(doc, add_special_tokens=False).ids
    compiled = xmask.GrammarCompiler(info, cache_enabled=False).compile_grammar(text)
    walk_equals_reference(xmask.GrammarMatcher(compiled), ids + [info.stop_token_ids[0]], info.vocab_size)


def test_token_budget_and_token_dispatch_masks_llama3():
    """XGrammar's any_tokens shape with max_tokens, and TokenTagDispatch, on Llama-3: masks
    equal the reference and the budget / excluded ids hold."""
    import tokenizers

    path = str(tokenizer_json("llama3"))
    info = xmask.TokenizerInfo.from_huggingface(path)
    tok = tokenizers.Tokenizer.from_file(path)
    compiler = xmask.GrammarCompiler(info, cache_enabled=False)
    header = 128006  # <|start_header_id|>
    budget = compiler.compile_grammar(
        'root ::= any_tokens Token(128006)\nany_tokens[max_tokens=3] ::= ("" | (any_tokens_inner any_tokens))\n'
        'any_tokens_inner ::= ExcludeToken(128006, 128009)')
    words = tok.encode(" one two three four", add_special_tokens=False).ids
    for n in range(5):
        m = xmask.GrammarMatcher(budget)
        assert all(m.accept_token(t) for t in words[:n]) == (n <= 3)
    walk_equals_reference(xmask.GrammarMatcher(budget), words[:3] + [header, info.stop_token_ids[0]],
                          info.vocab_size)
    dispatch = compiler.compile_grammar(
        'root ::= TokenTagDispatch((128010, call), excludes=(128005,))\ncall ::= "{" [0-9]+ "}" Token(128011)')
    ids = (tok.encode("some text ", add_special_tokens=False).ids + [128010]
           + tok.encode("{12}", add_special_tokens=False).ids + [128011]
           + tok.encode(" more", add_special_tokens=False).ids + [info.stop_token_ids[0]])
    walk_equals_reference(xmask.GrammarMatcher(dispatch), ids, info.vocab_size)
    m = xmask.GrammarMatcher(dispatch)
    assert not m.accept_token(128005) and m.accept_token(128010) and not m.accept_token(128010)


@pytest.mark.parametrize("body", [
    '[ab]*', '("a" | "bb")* "a"?', '"a" x | "b"\nx ::= "b"* "a"', '("ab" | "b")+ | ""', '"(" y ")" | "a"\ny ::= x*\nx ::= "a" | "b" | r',
    'x | "ab" x\nx ::= ("a" "b"?)*',
])
@pytest.mark.parametrize("n", [0, 1, 3])
def test_max_chars_equals_its_definition_on_every_short_string(body, n):
    """Exhaustive over the strings of up to 6 characters of the grammar's alphabet: the
    bounded rule accepts exactly the unbounded rule's strings of at most n characters."""
    import itertools

    plain = parse_ebnf(f"root ::= r\nr ::= {body}")
    bounded = parse_ebnf(f"root ::= r\nr[max_chars={n}] ::= {body}")
    a, b = Recognizer(plain), Recognizer(bounded)
    for k in range(7):
        for chars in itertools.product("ab()", repeat=k):
            s = "".join(chars).encode()
            assert b.accepts(s) == (a.accepts(s) and k <= n), s


TINY = ["a", "b", "c", "ab", "bc", "abc", "x", "</s>", "xa", "cx"]


def _token_language(make, vocab, max_len=4):
    """Every token sequence of at most ``max_len`` tokens after which the mask allows the stop
    token (id 7), as '|'-joined texts (xmask or XGrammar matchers, same API)."""
    out = []

    def walk(seq, make):
        m = make()
        for t in seq:
            assert m.accept_token(t)
        bm = np.zeros((1, 1), dtype=np.int32)
        m.fill_next_token_bitmask(bm)
        allowed = [i for i in range(len(vocab)) if (int(bm[0, 0]) >> i) & 1]
        if 7 in allowed:
            out.append("|".join(vocab[t] for t in seq))
        if len(seq) < max_len:
            for t in allowed:
                if t != 7:
                    walk(seq + [t], make)

    walk([], make)
    return sorted(out)


@pytest.mark.parametrize("n,body", [(2, "[abc] [abc]?"), (1, "[abc]"), (0, '""'),
                                    (3, '[abc] "b" [abc]?')])
def test_max_tokens_on_short_text_never_binds(n, body):
    # a token counts only if it starts inside the rule's match, so a rule of at most n bytes
    # is unchanged by max_tokens=n (XGrammar agrees); longer text gets a runtime budget
    info = xmask.TokenizerInfo(TINY, stop_token_ids=[7])
    g = xmask.Grammar.from_ebnf(f'root ::= "a" r "x"\nr[max_tokens={n}] ::= {body}')
    assert g == xmask.Grammar.from_ebnf(f'root ::= "a" r "x"\nr ::= {body}')
    longer = f'root ::= "a" r "x"\nr[max_tokens={n}] ::= {body} [abc]'
    if n == 0:
        with pytest.raises(xmask.GrammarError, match="max_tokens=0"):
            xmask.Grammar.from_ebnf(longer)
    else:
        assert xmask.Grammar.from_ebnf(longer).budgets == {"r": n}
    xgr = pytest.importorskip("xgrammar")
    cg = xmask.GrammarCompiler(info).compile_grammar(g)
    ref = xgr.GrammarCompiler(xgr.TokenizerInfo(TINY, stop_token_ids=[7])).compile_grammar(
        f'root ::= "a" r "x"\nr[max_tokens={n}] ::= {body}')
    mine = _token_language(lambda: xmask.GrammarMatcher(cg), TINY)
    assert mine == _token_language(lambda: xgr.GrammarMatcher(ref), TINY) and mine


@pytest.mark.parametrize("source", [
    'root ::= "a" r "x"\nr[max_tokens=2] ::= [abc]*',
    'root ::= r "x"\nr[max_tokens=1] ::= [abc]*',
    'root[max_tokens=3] ::= [abcx]*',
    'root ::= (r "x")+\nr[max_tokens=2] ::= ([ab] | q)*\nq[max_tokens=1] ::= "c" [ab]*',
])
def test_runtime_token_budget_language_matches_xgrammar(source):
    # Every token sequence of up to 5 tokens over a tiny vocabulary (tokens that enter,
    # straddle and leave the budgeted rule): the same complete sentences as XGrammar's
    # (its relaxation never applies: these rules can end anywhere); the masks on the way are
    # the reference's.
    info = xmask.TokenizerInfo(TINY, stop_token_ids=[7])
    cg = xmask.GrammarCompiler(info).compile_grammar(source)
    assert cg.grammar.budgets

    def make():
        return _CheckedMatcher(cg)

    mine = _token_language(make, TINY, max_len=5)
    assert mine
    xgr = pytest.importorskip("xgrammar")
    ref = xgr.GrammarCompiler(xgr.TokenizerInfo(TINY, stop_token_ids=[7])).compile_grammar(source)
    assert mine == _token_language(lambda: xgr.GrammarMatcher(ref), TINY, max_len=5)


class _CheckedMatcher:
    """A matcher whose fills are checked against the slow reference."""

    def __init__(self, compiled):
        self.m = xmask.GrammarMatcher(compiled)
        self.accept_token = self.m.accept_token

    def fill_next_token_bitmask(self, bm, index=0):
        ref = np.zeros_like(bm)
        self.m.fill_next_token_bitmask(bm, index)
        self.m._reference_fill_next_token_bitmask(ref, index)
        assert np.array_equal(bm, ref)
        return True
