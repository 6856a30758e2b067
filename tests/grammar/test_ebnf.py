"""EBNF parser, printer and built-in JSON grammar tests."""

import random

import pytest
from conftest import DATA_DIR, require_data

import xmask
from xmask.errors import GrammarError, GrammarSyntaxError
from xmask.grammar import (
    EPSILON,
    Bytes,
    CharClass,
    Choice,
    Grammar,
    Repeat,
    RuleRef,
    Seq,
    builtin_json_grammar,
    grammar_to_ebnf,
    make_choice,
    make_seq,
    parse_ebnf,
)


def body(text, rule="root"):
    return parse_ebnf(text).rules[rule]


def roundtrip(g):
    text = grammar_to_ebnf(g)
    g2 = parse_ebnf(text, root_rule_name=g.root)
    assert g2 == g, text
    assert grammar_to_ebnf(g2) == text
    return text


# ---------------------------------------------------------------------------- data files

GBNF_NAMES = [
    "llama.cpp/grammars/arithmetic.gbnf",
    "llama.cpp/grammars/c.gbnf",
    "llama.cpp/grammars/chess.gbnf",
    "llama.cpp/grammars/english.gbnf",
    "llama.cpp/grammars/japanese.gbnf",
    "llama.cpp/grammars/json.gbnf",
    "llama.cpp/grammars/json_arr.gbnf",
    "llama.cpp/grammars/list.gbnf",
    "llguidance-extra/vllm-sql.gbnf",
]


def _all_gbnf_files():
    base = DATA_DIR / "gbnf"
    found = sorted(str(p.relative_to(base)) for p in base.glob("**/*.gbnf")) if base.exists() else []
    return sorted(set(GBNF_NAMES) | set(found))


@pytest.mark.parametrize("name", _all_gbnf_files())
def test_parse_and_roundtrip_gbnf_file(name):
    path = require_data("gbnf", *name.split("/"))
    g = parse_ebnf(path.read_text(encoding="utf-8"))
    assert g.root == "root"
    assert len(g) >= 1
    roundtrip(g)


def test_gbnf_specific_structures():
    c = parse_ebnf(require_data("gbnf", "llama.cpp", "grammars", "c.gbnf").read_text())
    # factor(("*" | "/") factor)*  -- no space before "("
    assert c.rules["term"] == Seq(
        (RuleRef("factor"), Repeat(Seq((Choice((Bytes(b"*"), Bytes(b"/"))), RuleRef("factor"))), 0, None))
    )
    assert c.rules["ws"] == Repeat(CharClass(((9, 10), (32, 32))), 1, None)
    json_g = parse_ebnf(require_data("gbnf", "llama.cpp", "grammars", "json.gbnf").read_text())
    assert json_g.rules["ws"] == Choice(
        (EPSILON, Bytes(b" "), Seq((Bytes(b"\n"), Repeat(CharClass(((9, 9), (32, 32))), 0, 20))))
    )
    assert list(json_g.rules) == ["root", "value", "object", "array", "string", "number", "ws"]
    lst = parse_ebnf(require_data("gbnf", "llama.cpp", "grammars", "list.gbnf").read_text())
    cls = lst.rules["item"].items[1].item
    assert cls == CharClass(((10, 13), (0x85, 0x85), (0x2028, 0x2029)), negated=True)
    eng = parse_ebnf(require_data("gbnf", "llama.cpp", "grammars", "english.gbnf").read_text())
    punct = eng.rules["punctuation"]
    expected = {ord(ch) for ch in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"}
    got = {cp for lo, hi in punct.ranges for cp in range(lo, hi + 1)}
    assert got == expected
    jp = parse_ebnf(require_data("gbnf", "llama.cpp", "grammars", "japanese.gbnf").read_text())
    assert jp.rules["hiragana"] == CharClass(((ord("ぁ"), ord("ゟ")),))


# ---------------------------------------------------------------------------- syntax

def test_basic_rule_and_refs():
    g = parse_ebnf('root ::= "a" b*\nb ::= [0-9]')
    assert g.rules == {
        "root": Seq((Bytes(b"a"), Repeat(RuleRef("b"), 0, None))),
        "b": CharClass(((48, 57),)),
    }
    assert str(g) == 'root ::= "a" b*\nb ::= [0-9]'


def test_rule_order_and_custom_root():
    g = parse_ebnf('a ::= "x" b\nb ::= "y"\nstart ::= a', root_rule_name="start")
    assert list(g.rules) == ["a", "b", "start"]
    assert g.root == "start"
    assert grammar_to_ebnf(g).splitlines()[0] == "start ::= a"


def test_multiline_bodies_and_comments():
    text = """
    # leading comment
    root ::=   # comment after ::=
        "a"      # comment
      | "b" "#"  # '#' inside a string is not a comment
      | [#]
    other-rule_2 ::= root
        root
    """
    g = parse_ebnf(text)
    assert g.rules["root"] == Choice((Bytes(b"a"), Bytes(b"b#"), CharClass(((35, 35),))))
    assert g.rules["other-rule_2"] == Seq((RuleRef("root"), RuleRef("root")))


def test_rule_ends_at_next_definition_same_line():
    g = parse_ebnf('root ::= a b ::= "x"\na ::= "y"')
    assert g.rules["root"] == RuleRef("a")
    assert g.rules["b"] == Bytes(b"x")


def test_empty_alternatives():
    assert body('root ::= | " "') == Choice((EPSILON, Bytes(b" ")))
    assert body('root ::= " " |') == Choice((Bytes(b" "), EPSILON))
    assert body('root ::= "a" | | "b"') == Choice((Bytes(b"a"), EPSILON, Bytes(b"b")))
    assert body("root ::=") == EPSILON
    assert body('root ::= ""') == EPSILON
    assert body("root ::= ()") == EPSILON
    assert body('root ::= "" "a" ""') == Bytes(b"a")


def test_simplification():
    assert body('root ::= "a" "b" ("c" "d") "e"') == Bytes(b"abcde")
    assert body('root ::= "a" | ("b" | ("c" | "d"))') == Choice(tuple(Bytes(c) for c in (b"a", b"b", b"c", b"d")))
    assert body("root ::= ((x))\nx ::= \"1\"") == RuleRef("x")
    assert body('root ::= "a" (x "b") "c"\nx ::= "1"') == Seq((Bytes(b"a"), RuleRef("x"), Bytes(b"bc")))
    assert body('root ::= ("a" "b")*') == Repeat(Bytes(b"ab"), 0, None)


def test_postfix_and_bounds():
    a = Bytes(b"a")
    assert body('root ::= "a"*') == Repeat(a, 0, None)
    assert body('root ::= "a"+') == Repeat(a, 1, None)
    assert body('root ::= "a"?') == Repeat(a, 0, 1)
    assert body('root ::= "a"{3}') == Repeat(a, 3, 3)
    assert body('root ::= "a"{2,}') == Repeat(a, 2, None)
    assert body('root ::= "a"{2,5}') == Repeat(a, 2, 5)
    assert body('root ::= "a"{,5}') == Repeat(a, 0, 5)
    assert body('root ::= "a"{ 1 , 4 }') == Repeat(a, 1, 4)
    assert body('root ::= "a"{0}') == Repeat(a, 0, 0)
    assert body('root ::= "a" *') == Repeat(a, 0, None)
    assert body('root ::= ("a"*)?') == Repeat(Repeat(a, 0, None), 0, 1)
    assert body('root ::= [ \\t]{0,20}') == Repeat(CharClass(((9, 9), (32, 32))), 0, 20)


def test_string_escapes():
    assert body(r'root ::= "\n\r\t\\\"\'\[\]\-\/"') == Bytes(b"\n\r\t\\\"'[]-/")
    assert body(r'root ::= "\x41\x7f"') == Bytes(b"A\x7f")
    assert body(r'root ::= "\xff"') == Bytes("\u00ff".encode())  # \xHH is a code point
    assert body(r'root ::= "\u00e9\u2028"') == Bytes("é\u2028".encode())
    assert body(r'root ::= "\U0001F600"') == Bytes("😀".encode())
    assert body('root ::= "日本"') == Bytes("日本".encode())


def test_char_classes():
    assert body("root ::= [a-z]") == CharClass(((97, 122),))
    assert body("root ::= [^a-z0-9]") == CharClass(((48, 57), (97, 122)), negated=True)
    assert body("root ::= [-+]") == CharClass(((43, 43), (45, 45)))
    assert body("root ::= [a-]") == CharClass(((45, 45), (97, 97)))
    assert body(r"root ::= [\]\[\\\^\-]") == CharClass(((45, 45), (91, 94)))
    assert body("root ::= [^^]") == CharClass(((94, 94),), negated=True)
    assert body(r"root ::= [\x00-\x1F\u2028\U0001F600]") == CharClass(((0, 31), (0x2028, 0x2028), (0x1F600, 0x1F600)))
    assert body("root ::= [é-ü]") == CharClass(((0xE9, 0xFC),))
    assert body("root ::= .") == CharClass((), negated=True)
    assert body("root ::= [^]") == CharClass((), negated=True)
    assert body("root ::= []") == CharClass(())
    assert body('root ::= ["]') == CharClass(((34, 34),))


# ---------------------------------------------------------------------------- errors

def syntax_error(text, **kw):
    with pytest.raises(GrammarSyntaxError) as info:
        parse_ebnf(text, **kw)
    return info.value


def test_error_unterminated_string():
    e = syntax_error('root ::= "a" | "abc\nfoo ::= "x"')
    assert (e.line, e.column) == (1, 16)
    assert "unterminated string" in str(e)
    assert e.rule == "root"
    e = syntax_error('root ::= "abc')
    assert (e.line, e.column) == (1, 10)


def test_error_unterminated_class():
    e = syntax_error("root ::= [a-z")
    assert (e.line, e.column) == (1, 10)
    assert "unterminated character class" in str(e)


def test_error_unexpected_character():
    e = syntax_error('root ::= "a"\nfoo ::= "b" @ "c"')
    assert (e.line, e.column) == (2, 13)
    assert "unexpected character '@'" in str(e)
    assert e.rule == "foo"


def test_error_missing_assign():
    e = syntax_error('root ::= "a"\n\nfoo = "b"')
    assert (e.line, e.column) == (3, 5)
    assert "'::='" in str(e) and "foo" in str(e)
    e = syntax_error('"a"')
    assert (e.line, e.column) == (1, 1)
    e = syntax_error("root")
    assert "'::='" in str(e)


def test_error_bad_escape():
    e = syntax_error('root ::= "ab\\q"')
    assert (e.line, e.column) == (1, 13)
    assert "escape" in str(e) and "\\q" in str(e)
    e = syntax_error('root ::= "\\x4"')
    assert "hex digits" in str(e)
    e = syntax_error('root ::= "\\uD800"')
    assert "surrogate" in str(e)
    e = syntax_error('root ::= "\\U00110000"')
    assert "10FFFF" in str(e)
    e = syntax_error("root ::= [\\q]")
    assert (e.line, e.column) == (1, 11)
    e = syntax_error('root ::= "\\^"')  # \^ only inside classes
    assert "escape" in str(e)


def test_error_duplicate_rule():
    e = syntax_error('root ::= a\na ::= "x"\na ::= "y"')
    assert (e.line, e.column) == (3, 1)
    assert "duplicate" in str(e) and "'a'" in str(e)
    assert "line 2" in str(e)


def test_error_empty_grammar():
    for text in ("", "   \n  ", "# only a comment\n"):
        e = syntax_error(text)
        assert "empty grammar" in str(e)


def test_error_bad_repeat_bounds():
    e = syntax_error('root ::= "a"{3,1}')
    assert (e.line, e.column) == (1, 13)
    assert "{3,1}" in str(e)
    for bad in ('root ::= "a"{}', 'root ::= "a"{,}', 'root ::= "a"{x}', 'root ::= "a"{1,2'):
        syntax_error(bad)


def test_error_inverted_range():
    e = syntax_error("root ::= [az-a]")
    assert (e.line, e.column) == (1, 12)
    assert "range" in str(e)


def test_error_unsupported_constructs():
    e = syntax_error("root ::= 'a'")
    assert "single-quoted" in str(e) and (e.line, e.column) == (1, 10)
    e = syntax_error('root ::= "a" (= "b") "c"')
    assert "lookahead" in str(e) and (e.line, e.column) == (1, 22)


def test_error_parentheses():
    e = syntax_error('root ::= ("a" | "b"\nfoo ::= "c"')
    assert "expected ')'" in str(e) and "line 1, column 10" in str(e)
    assert (e.line, e.column) == (2, 1)
    e = syntax_error('root ::= "a")')
    assert "unmatched ')'" in str(e) and (e.line, e.column) == (1, 13)


def test_error_undefined_rule():
    with pytest.raises(GrammarError) as info:
        parse_ebnf('root ::= item+\nitem ::= "a" missing-thing')
    e = info.value
    assert not isinstance(e, GrammarSyntaxError)
    assert "missing-thing" in str(e) and "'item'" in str(e) and "line 2, column 14" in str(e)
    assert e.rule == "item"


def test_error_missing_root():
    with pytest.raises(GrammarError) as info:
        parse_ebnf('start ::= "a"')
    assert "root" in str(info.value)
    with pytest.raises(GrammarError):
        parse_ebnf('root ::= "a"', root_rule_name="main")


# ---------------------------------------------------------------------------- printer

def test_printer_string_escapes():
    g = Grammar({"root": Bytes(b'q"b\\n\n\r\t\x00\x7f\x1b' + "é日😀\u2028\x85".encode())})
    text = roundtrip(g)
    assert text == 'root ::= "q\\"b\\\\n\\n\\r\\t\\x00\\x7F\\x1Bé日😀\\u2028\\x85"'


def test_printer_invalid_utf8_bytes_approximate():
    text = grammar_to_ebnf(Grammar({"root": Bytes(b"a\xffb\xc3")}))
    assert text == 'root ::= "a\\xFFb\\xC3"'
    # re-parses as code points U+00FF / U+00C3 (documented approximation)
    assert parse_ebnf(text).rules["root"] == Bytes("a\u00ffb\u00c3".encode())


def test_printer_classes():
    cases = {
        CharClass(((97, 122),)): "[a-z]",
        CharClass(((97, 98),)): "[ab]",
        CharClass(((45, 45), (91, 94))): "[\\-\\[-\\^]",
        CharClass(((0, 31), (34, 34), (92, 92)), negated=True): '[^\\x00-\\x1F"\\\\]',
        CharClass(((9, 10), (13, 13))): "[\\t\\n\\r]",
        CharClass(((0x2028, 0x2029), (0xE9, 0xE9))): "[é\\u2028\\u2029]",
        CharClass(((0x10000, 0x10FFFF),)): "[\U00010000-\\U0010FFFF]",
        CharClass(((0xF0000, 0x10FFFF),)): "[\\U000F0000-\\U0010FFFF]",
        CharClass((), negated=True): ".",
        CharClass(()): "[]",
    }
    for cc, expected in cases.items():
        g = Grammar({"root": cc})
        assert grammar_to_ebnf(g) == f"root ::= {expected}"
        roundtrip(g)


def test_printer_byte_level_class():
    g = Grammar({"root": CharClass(((0x80, 0xBF), (0xC3, 0xC3)), byte_level=True)})
    assert grammar_to_ebnf(g) == "root ::= [\\x80-\\xBF\\xC3]"
    g = Grammar({"root": CharClass(((0x00, 0x7F),), negated=True, byte_level=True)})
    assert grammar_to_ebnf(g) == "root ::= [^\\x00-\\x7F]"


def test_printer_precedence():
    a, b, c = Bytes(b"a"), Bytes(b"b"), RuleRef("c")
    rules = {
        "root": Seq((Choice((a, b)), Repeat(Seq((a, c)), 0, None), Repeat(Choice((a, EPSILON)), 1, None))),
        "c": Choice((Seq((a, c)), EPSILON, Repeat(Repeat(b, 1, 3), 2, None), Repeat(EPSILON, 0, 1))),
        "d": Repeat(Repeat(Seq((c, Repeat(a, 0, 0))), 0, None), 0, 1),
    }
    g = Grammar(rules)
    text = roundtrip(g)
    assert text.splitlines() == [
        'root ::= ("a" | "b") ("a" c)* ("a" | "")+',
        'c ::= "a" c | "" | ("b"{1,3}){2,} | ""?',
        'd ::= ((c "a"{0})*)?',
    ]


def _random_expr(rng, depth, names):
    kind = rng.randrange(7 if depth > 0 else 4)
    if kind == 0:
        text = "".join(rng.choice(['a', '"', "\\", "\n", "\x01", "é", "😀", "\u2028", "[", "]", "-", "#", " "])
                       for _ in range(rng.randint(1, 4)))
        return Bytes(text.encode())
    if kind == 1:
        ranges = []
        for _ in range(rng.randint(0, 3)):
            lo = rng.choice([0, 9, 32, 45, 92, 93, 94, 97, 0x7F, 0xE9, 0x2028, 0xD800, 0x1F600])
            ranges.append((lo, min(lo + rng.choice([0, 1, 5, 300]), 0x10FFFF)))
        return CharClass(tuple(ranges), negated=rng.random() < 0.3)
    if kind == 2:
        return RuleRef(rng.choice(names))
    if kind == 3:
        return EPSILON
    if kind == 4:
        return make_seq([_random_expr(rng, depth - 1, names) for _ in range(rng.randint(2, 4))])
    if kind == 5:
        return make_choice([_random_expr(rng, depth - 1, names) for _ in range(rng.randint(2, 4))])
    lo = rng.randint(0, 3)
    hi = rng.choice([None, lo, lo + 1, lo + 5])
    return Repeat(_random_expr(rng, depth - 1, names), lo, hi)


def test_printer_random_roundtrip():
    rng = random.Random(1234)
    for _ in range(300):
        names = ["root", "r-1", "r_2"]
        g = Grammar({n: _random_expr(rng, 4, names) for n in names})
        roundtrip(g)


def test_grammar_str_uses_printer():
    g = parse_ebnf('root ::= "yes" | "no"')
    assert str(g) == 'root ::= "yes" | "no"'
    assert str(xmask.Grammar.from_ebnf('root ::= "yes" | "no"')) == str(g)


# ---------------------------------------------------------------------------- builtin JSON

def test_builtin_json_grammar_cached_and_roundtrips():
    g = builtin_json_grammar()
    assert g is builtin_json_grammar()
    public = xmask.Grammar.builtin_json_grammar()
    assert public == g and public is xmask.Grammar.builtin_json_grammar()
    assert g.root == "root"
    for name in ("value", "object", "member", "array", "element", "string", "char", "escape", "number", "ws"):
        assert name in g.rules
    assert g.rules["root"] == RuleRef("value")
    assert g.rules["ws"] == Repeat(CharClass(((9, 10), (13, 13), (32, 32))), 0, None)
    roundtrip(g)


def test_module_doctests():
    import doctest

    import xmask.grammar
    import xmask.grammar.builtin_json
    import xmask.grammar.ebnf
    import xmask.grammar.ir
    import xmask.grammar.printer
    import xmask.grammar.recognizer

    for mod in (xmask.grammar, xmask.grammar.ir, xmask.grammar.ebnf, xmask.grammar.printer,
                xmask.grammar.builtin_json, xmask.grammar.recognizer):
        failures, _ = doctest.testmod(mod)
        assert failures == 0, mod.__name__
