"""Lark front-end (``Grammar.from_lark`` / ``GrammarCompiler.compile_lark``): each construct
through the independent Earley recognizer, errors with line and column, masks equal to the
slow reference on Llama-3 for realistic grammars, and a differential check against XGrammar."""

import re
import warnings

import numpy as np
import pytest
import tokenizers
from conftest import tokenizer_json

import xmask
from xmask.errors import GrammarSyntaxError
from xmask.grammar.ir import TokenSet
from xmask import Grammar
from xmask.grammar.lark_terminals import COMMON_TERMINALS, common_terminal
from xmask.grammar.recognizer import Recognizer


def recognizer(text, **kw):
    return Recognizer(Grammar.from_lark(text, **kw))


def check(text, accepted, rejected):
    r = recognizer(text)
    for s in accepted:
        assert r.accepts(s.encode()), f"{s!r} should be accepted by {text!r}"
    for s in rejected:
        assert not r.accepts(s.encode()), f"{s!r} should be rejected by {text!r}"


# ---------------------------------------------------------------------------- constructs

CONSTRUCTS = [
    # rules, alternatives, grouping, operators
    ('start: "a" b\nb: "b" | "c"', ["ab", "ac"], ["a", "abc", "b"]),
    ('start: ("a" | "b") "c"', ["ac", "bc"], ["c", "abc"]),
    ('start: "a"? "b"* "c"+', ["c", "abbcc", "acc"], ["", "ab", "aac"]),
    ('start: "x" ["y" "z"]', ["x", "xyz"], ["xy", "xz"]),
    ('start: "a" ~ 3', ["aaa"], ["aa", "aaaa"]),
    ('start: "a"~2..3 "b"', ["aab", "aaab"], ["ab", "aaaab"]),
    ('start: "a"{2} "b"{1,} "c"{,2} "d"{1,2}', ["aabd", "aabbccdd"], ["abd", "aabcccd", "aab"]),
    ('start: "a" |\n    | "b"', ["", "a", "b"], ["ab"]),
    ('start: "a"\n     | "b"\n     | "c"', ["a", "b", "c"], ["ab", ""]),
    ('start: (\n  "a"\n  | "b"\n)', ["a", "b"], [""]),
    # left recursion
    ('start: start "+" NUM | NUM\nNUM: /[0-9]+/', ["1", "1+22+3"], ["1+", "+1"]),
    # modifiers, aliases, inlined names, comments, '-' in names
    ('?start: _item+ -> items\n!_item: "x" | my-rule // comment\nmy-rule: "y" # more',
     ["x", "xyx"], ["", "z"]),
    # string literals: escapes, case-insensitive, ranges
    (r'start: "a\"b\\c\n\t\x41\u00e9\U0001F600/\/"', ['a"b\\c\n\tA\u00e9\U0001F600//'], ["ab"]),
    ('start: "select"i " " "x"', ["select x", "SeLeCt x"], ["selec x", "select X"]),
    ('start: "a".."f" "0".."9"', ["a0", "f9", "c5"], ["g0", "a", "A0"]),
    # terminals: regexes, references between terminals, flags
    ('start: ID\nID: LETTER (LETTER | DIGIT)*\nLETTER: /[a-z]/\nDIGIT: "0".."9"',
     ["a", "ab12"], ["1a", ""]),
    ('start: /ab+c/i', ["abc", "ABBC", "aBbBc"], ["ac", "abd"]),
    ('start: /a.b/s', ["a\nb", "axb"], ["ab"]),
    ('start: /a.b/', ["axb"], ["a\nb"]),
    ('start: /[^a]/i', ["b", "1"], ["a", "A"]),
    ('start: /a\\/b/', ["a/b"], ["a\\/b"]),
    ('start: /k/i', ["k", "K", "\u212a"], ["x"]),
    ('start: /x/mu', ["x"], ["X"]),
    # terminal occurrences inside a terminal are not followed by %ignore
    ('start: A "!"\nA: "a" "b"\n%ignore " "', ["ab!", "ab !", "ab ! "], ["a b!", " ab!"]),
]


@pytest.mark.parametrize("text,accepted,rejected", CONSTRUCTS)
def test_construct(text, accepted, rejected):
    check(text, accepted, rejected)


def test_ignore_follows_every_terminal_occurrence():
    """Ignored text may follow each terminal (names, literals, regexes), never precede the
    first; with no lexer, NAME NAME splits anywhere (as XGrammar)."""
    text = 'start: NAME NAME ";"\nNAME: /[a-z]+/\n%ignore " "\n%ignore /#[^\\n]*\\n/'
    check(text, ["abcd;", "ab cd;", "ab  cd ; ", "ab #note\ncd;#x\n"],
          [" ab cd;", "ab cd", "ab c d e;"])


def test_ignore_in_rules_and_nested_rules():
    text = 'start: pair ("," pair)*\npair: KEY "=" VAL\nKEY: /[a-z]+/\nVAL: /[0-9]+/\n' \
           '%import common.WS\n%ignore WS'
    check(text, ["a=1", "a = 1 ,\n b=22 ", "a=1,b=2"], ["a=1,", " a=1", "a=1 b=2"])


def test_empty_start_and_epsilon_terminal():
    check('start: A?\nA: "a"', ["", "a"], ["aa"])


def test_priorities_are_ignored_with_a_warning():
    with pytest.warns(UserWarning, match="priority of 'A' ignored") as caught:
        g = Grammar.from_lark('start.2: A B\nA.3: "a"\nB.-1: "b"')
    assert Recognizer(g).accepts(b"ab")
    assert {w.filename for w in caught} == {__file__}  # the caller's line, not inside xmask


def test_lark_warnings_point_at_the_caller_through_the_compiler_too():
    # the compiler reaches the Lark parser a few frames deeper than Grammar.from_lark
    compiler = xmask.GrammarCompiler(xmask.default_tokenizer_info(), cache_enabled=False)
    with pytest.warns(UserWarning, match="temperature") as caught:
        compiler.compile_lark('start: a\na[temperature=0.7]: /[a-z]+/')
    assert {w.filename for w in caught} == {__file__}


def test_capture_and_temperature_attributes():
    check('start: a\na[capture]: /[a-z]+/', ["abc"], [""])
    check('start: a\na[capture="n"]: "x"', ["x"], ["y"])
    with pytest.warns(UserWarning, match="temperature"):
        Grammar.from_lark('start: a\na[temperature=0.7]: /[a-z]+/')


def test_root_naming():
    """``start`` becomes ``root`` (XGrammar's name); a user rule called root is renamed."""
    g = Grammar.from_lark('start: root "x"\nroot: "r"')
    assert g.root == "root"
    assert Recognizer(g).accepts(b"rx")
    assert Grammar.from_ebnf(str(g)) == g  # printed EBNF reads back


def test_regex_flags_agree_with_python_re():
    cases = [("[a-cx]+z", "i"), ("(?:ab|c.)+", "s"), ("[^b-d]k", "i"), ("\u00e9+[\u0100-\u0104]", "i")]
    alphabet = "abcxzkABCXZK\u00e9\u00c9\u0100\u0101\u0103\n"
    import itertools
    for pattern, flags in cases:
        r = recognizer(f"start: /{pattern}/{flags}")
        py = re.compile(pattern, (re.I if "i" in flags else 0) | (re.S if "s" in flags else 0))
        for n in range(4):
            for t in itertools.product(alphabet, repeat=n):
                s = "".join(t)
                assert r.accepts(s.encode()) == bool(py.fullmatch(s)), (pattern, flags, s)


# ---------------------------------------------------------------------------- %import common

COMMON_CASES = {
    "INT": (["0", "0123"], ["", "-1", "1.0"]),
    "SIGNED_INT": (["+1", "-20", "3"], ["+", "1-"]),
    "DECIMAL": (["1.", "1.5", ".5"], [".", "1", "1e3"]),
    "FLOAT": (["1e3", "1.5E-2", ".5", "2."], ["1", "e3", "1e"]),
    "NUMBER": (["1", "1.5", "1e3", ".5e+1"], ["-1", "1.2.3"]),
    "SIGNED_NUMBER": (["-1", "+2.5", "-.5e-3", "7"], ["--1", "-"]),
    "SIGNED_FLOAT": (["-1.0", "+1e3"], ["-1"]),
    "ESCAPED_STRING": (['""', '"a\\"b"', '"a\\\\"', '"\\n\u00e9"'],
                       ['"a"b"', '"a\\"', '"a\nb"', '"', "''"]),
    "WS": ([" ", " \t\n\r\f"], ["", "\v"]),
    "WS_INLINE": ([" \t "], ["\n", ""]),
    "NEWLINE": (["\n", "\r\n\n"], ["\r", ""]),
    "CR": (["\r"], ["\n"]),
    "LF": (["\n"], ["\r"]),
    "CNAME": (["_a1", "Abc_9"], ["1a", "a-b"]),
    "WORD": (["Hello"], ["he11o", ""]),
    "LETTER": (["a", "Z"], ["1", "ab"]),
    "LCASE_LETTER": (["q"], ["Q"]),
    "UCASE_LETTER": (["Q"], ["q"]),
    "DIGIT": (["7"], ["a", "12"]),
    "HEXDIGIT": (["a", "F", "9"], ["g"]),
    "SH_COMMENT": (["# hi", "#"], ["# a\n"]),
    "CPP_COMMENT": (["// x"], ["/ x"]),
    "SQL_COMMENT": (["-- x"], ["- x"]),
    "C_COMMENT": (["/* a */", "/**/", "/* a * b **/", "/*\n*/"], ["/* a */ */", "/*/", "/* a"]),
}


@pytest.mark.parametrize("name", sorted(COMMON_CASES))
def test_common_terminal(name):
    accepted, rejected = COMMON_CASES[name]
    check(f"start: {name}\n%import common.{name}", accepted, rejected)


def test_every_common_terminal_is_tested():
    assert set(COMMON_TERMINALS) - {"_EXP"} == set(COMMON_CASES)
    assert Recognizer(Grammar({"root": common_terminal("_EXP")})).accepts(b"e-7")


def test_import_forms():
    check('start: N WS_INLINE W\n%import common (INT, WS_INLINE)\n%import common.WORD -> W\n'
          'N: INT', ["1 abc"], ["1abc"])


# ---------------------------------------------------------------------------- extensions

def test_json_schema_terminal():
    text = ('start: "call " %json {"type": "object", "properties": {"n": {"type": "integer"}},'
            '\n "required": ["n"]} ";"\n%ignore " "')
    check(text, ['call {"n": 1};', 'call {"n":-2} ;'], ['call {"n": "x"};', 'call {};'])


def test_regex_substring():
    check('start: A\nA: %regex {"substring_chunks": ["abc", "de", "f"]}',
          ["", "abc", "de", "abcde", "def", "abcdef"], ["ab", "cde", "abcf", "fde"])
    check('start: %regex {"substring_chars": "xyz"}', ["", "y", "xy", "yz", "xyz"], ["xz", "zy"])


def test_named_grammars():
    named = {"num": "start: /[0-9]+/", "word": Grammar.from_regex("[a-z]+")}
    check_g = Recognizer(Grammar.from_lark('start: @num "," @word', named_grammars=named))
    assert check_g.accepts(b"12,ab")
    assert not check_g.accepts(b"12,12")


def test_numeric_special_tokens_make_token_sets():
    g = Grammar.from_lark('start: <[128010]> "x" <[1-3,7]>')
    sets = [e for e in g.rules["root"].items if isinstance(e, TokenSet)]
    assert sets == [TokenSet((128010,)), TokenSet((1, 2, 3, 7))]


def test_named_special_token_needs_a_tokenizer():
    with pytest.raises(GrammarSyntaxError, match=r"<\|python_tag\|> needs a tokenizer") as e:
        Grammar.from_lark('start: "a"\n  | <|python_tag|> "x"')
    assert (e.value.line, e.value.column) == (2, 5)


def test_named_special_token_with_a_tokenizer():
    pytest.importorskip("xmask.tokenizer.token_lookup")
    info = xmask.TokenizerInfo.from_huggingface(str(tokenizer_json("llama3")))
    g = Grammar.from_lark('start: <|python_tag|> "x" <[128008]>', tokenizer_info=info)
    sets = [e for e in g.rules["root"].items if isinstance(e, TokenSet)]
    assert sets == [TokenSet((128010,)), TokenSet((128008,))]
    with pytest.raises(GrammarSyntaxError) as e:
        Grammar.from_lark('start: <|no_such_token|>', tokenizer_info=info)
    assert (e.value.line, e.value.column) == (1, 8)
    with pytest.raises(GrammarSyntaxError):
        Grammar.from_lark('start: <[999999]>', tokenizer_info=info)


# ---------------------------------------------------------------------------- errors

ERRORS = [
    ('start: "a"\nb: c', "undefined rule 'c'", 2, 4),
    ('start: A\n', "undefined terminal 'A'", 1, 8),
    ('a: "x"', "no 'start' rule", 1, 1),
    ('start: "x"\nstart: "y"', "duplicate definition of 'start'", 2, 1),
    ('start: A\nA: "a" b\nb: "b"', "terminal cannot reference the rule 'b'", 2, 8),
    ('start: A\nA: B "x"\nB: A', "terminal 'A' references itself", 3, 4),
    ('start: "a\n', "unterminated string", 1, 8),
    ('start: /a\n', "unterminated regex", 1, 8),
    ('start: ("a" | "b"', "expected ')'", 1, 18),
    ('start: "a" )', "unexpected ')'", 1, 12),
    ('start: "a"\n "b"', "expected rule or terminal name", 2, 2),
    ('start "a"', "expected ':'", 1, 7),
    ('start: "a"~3..1', "end is smaller than the start", 1, 11),
    ('start: "ab".."c"', "one character", 1, 8),
    ('start: "\\q"', "unknown escape", 1, 9),
    ('start: /a/x', "flag 'x' is not supported", 1, 8),
    ('start: /a(/', "bad regex", 1, 10),
    ('start: /^a/', "anchor", 1, 9),
    ('start: "x"\n%import common.FOO', "unknown common import 'common.FOO'", 2, 16),
    ('start: "x"\n%import lark.WS', "only Lark's 'common' module", 2, 9),
    ('start: "x"\n%declare A', "%declare is not supported", 2, 1),
    ('start: x\nx{a}: a', "templates are not supported", 2, 2),
    ('start: a\na[max_tokens=x]: /[a-z]+/', "expected a number", 2, 14),
    ('start: a\na[max_chars]: /[a-z]+/', "attribute 'max_chars' needs a value", 2, 3),
    ('start: A\nA: "x" %json {"type": "integer"}', "%json cannot be used in terminals", 2, 8),
    ('start: A\nA: <[5]>', "special tokens cannot be used in terminals", 2, 4),
    ('start: %json {"type": }', "bad JSON", 1, 23),
    ('start: @g', "unknown named grammar '@g'", 1, 8),
    ('start: "a"\n  | %json {"type": "object", "minProperties": "x"}', "%json: ", 2, 11),
    ('start: "x"\n%ignore r\nr: "y"', "cannot reference the rule 'r'", 2, 9),
    ('start: A\nA: "a"\n%import common.WS -> A', "duplicate definition of 'A'", 3, 16),
]


@pytest.mark.parametrize("text,message,line,column", ERRORS)
def test_error_line_and_column(text, message, line, column):
    with pytest.raises(GrammarSyntaxError, match=re.escape(message)) as e:
        Grammar.from_lark(text)
    assert (e.value.line, e.value.column) == (line, column), str(e.value)
    assert isinstance(e.value, RuntimeError)


def test_named_grammar_cycle_and_types():
    with pytest.raises(GrammarSyntaxError, match="references itself"):
        Grammar.from_lark("start: @a", named_grammars={"a": "start: @a"})
    with pytest.raises(TypeError):
        Grammar.from_lark("start: @a", named_grammars={"a": 3})
    with pytest.raises(TypeError):
        Grammar.from_lark(b'start: "a"')


# ---------------------------------------------------------------------------- masks on Llama-3

SQL = r"""
start: select_stmt ";"?
select_stmt: "SELECT"i columns "FROM"i NAME where? order? limit?
columns: "*" | column ("," column)*
column: NAME ("AS"i NAME)?
where: "WHERE"i condition (("AND"i | "OR"i) condition)*
condition: NAME OP value
OP: "=" | "<" | ">" | "<=" | ">=" | "!="
value: SIGNED_NUMBER | STRING
order: "ORDER"i "BY"i NAME ("ASC"i | "DESC"i)?
limit: "LIMIT"i INT
NAME: CNAME
STRING: /'[^']*'/
%import common (CNAME, SIGNED_NUMBER, INT, WS)
%ignore WS
"""
SQL_DOCS = ["SELECT name, age AS a FROM users WHERE age >= 18 AND city = 'Paris' "
            "ORDER BY name DESC LIMIT 10;",
            "select * from t"]

CALC = r"""
?start: sum
?sum: product | sum "+" product -> add | sum "-" product -> sub
?product: atom | product "*" atom -> mul | product "/" atom -> div
?atom: NUMBER -> number | "-" atom -> neg | NAME -> var | "(" sum ")"
%import common.CNAME -> NAME
%import common.NUMBER
%import common.WS_INLINE
%ignore WS_INLINE
"""
CALC_DOCS = ["3 * (x + 4.5) - -y / 2", "(((1)))"]

JSONISH = r"""
?start: value
?value: object | array | string | SIGNED_NUMBER -> number | "true" -> true
      | "false" -> false | "null" -> null
array  : "[" [value ("," value)*] "]"
object : "{" [pair ("," pair)*] "}"
pair   : string ":" value
string : ESCAPED_STRING
%import common.ESCAPED_STRING
%import common.SIGNED_NUMBER
%import common.WS
%ignore WS
"""
JSONISH_DOCS = ['{"a": [1, -2.5e3, true, null], "b": {"c": "d \\"e\\""}}', "[ ]"]


TOOLCALL = r"""
start: text call+
text[stop="<tool_call>"]: /(.|\n)*/
call: %json {"type": "object", "properties": {"name": {"const": "get_weather"},
      "arguments": {"type": "object", "properties": {"city": {"type": "string"}},
                    "required": ["city"]}}, "required": ["name", "arguments"]} "</tool_call>" next?
next[stop="<tool_call>"]: /\s*/
"""
TOOLCALL_DOCS = ['Let me check. <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'
                 '</tool_call>\n<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}'
                 '</tool_call>']


@pytest.fixture(scope="module")
def llama3():
    path = str(tokenizer_json("llama3"))
    info = xmask.TokenizerInfo.from_huggingface(path)
    return xmask.GrammarCompiler(info), tokenizers.Tokenizer.from_file(path)


@pytest.mark.parametrize("text,docs", [(SQL, SQL_DOCS), (CALC, CALC_DOCS),
                                       (JSONISH, JSONISH_DOCS), (TOOLCALL, TOOLCALL_DOCS)],
                         ids=["sql", "calc", "json", "toolcall"])
def test_masks_equal_reference_on_llama3(llama3, text, docs):
    compiler, tok = llama3
    compiled = compiler.compile_lark(text)
    assert compiler.compile_lark(text) is compiled  # cached
    vocab = compiled.tokenizer_info.vocab_size
    rec = Recognizer(compiled.grammar)
    for doc in docs:
        assert rec.accepts(doc.encode())
        ids = tok.encode(doc, add_special_tokens=False).ids
        m = xmask.GrammarMatcher(compiled)
        for tid in ids + [None]:
            fast = np.asarray(xmask.allocate_token_bitmask(1, vocab))
            ref = np.asarray(xmask.allocate_token_bitmask(1, vocab))
            m.fill_next_token_bitmask(fast)
            m._reference_fill_next_token_bitmask(ref)
            assert np.array_equal(fast, ref)
            if tid is not None:
                assert m.accept_token(tid)
        assert m.is_completed() or m.accept_token(compiled.tokenizer_info.stop_token_ids[0])


def test_compile_lark_named_grammars_and_cache_keys(llama3):
    compiler, _ = llama3
    a = compiler.compile_lark("start: @x", named_grammars={"x": 'start: "a"'})
    b = compiler.compile_lark("start: @x", named_grammars={"x": 'start: "b"'})
    assert a is not b
    assert compiler.compile_lark("start: @x", named_grammars={"x": 'start: "a"'}) is a
    with pytest.raises(TypeError):
        compiler.compile_lark(3)


def test_toolcall_text_ends_at_the_first_tag():
    r = Recognizer(Grammar.from_lark(TOOLCALL))
    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "X"}}</tool_call>'
    assert r.accepts(("hi " + call).encode())
    assert not r.accepts(("hi <tool_call> " + call).encode())  # the first tag opens the call
    assert not r.accepts(("hi " + call + " trailing").encode())
    assert not r.accepts(b'hi <tool_call>{"name": "other", "arguments": {}}</tool_call>')


def test_sql_rejects_malformed_queries():
    r = Recognizer(Grammar.from_lark(SQL))
    for bad in ["SELECT FROM t", "SELECT a FROM t WHERE", "SELECT a FROM t LIMIT -1",
                "DELETE FROM t", "SELECT a FROM t;;"]:
        assert not r.accepts(bad.encode()), bad


# ---------------------------------------------------------------------------- XGrammar

DIFF_GRAMMARS = [
    (JSONISH, JSONISH_DOCS + ['{"a" 1}', '[1,]', "[1 2]", ' [1]', '{"a":1} ']),
    (CALC, CALC_DOCS + ["3 +", "3 + * 4", " 3", "3 4"]),
    ('start: NAME NAME\nNAME: /[a-z]+/\n%ignore " "', ["abcd", "ab cd", " ab", "ab ", "a"]),
    ('start: "a"{2,3} ("b" | "c")~1..2 "d"i', ["aabd", "aaacbD", "ad", "aabbbd"]),
    ('start: A+\nA: "x".."z" | "_"', ["xyz_", "", "a"]),
    ('start: "x" %json {"type": "integer"}', ["x12", "x-1", "x01", "x"]),
    ('start: A\nA: %regex {"substring_chunks": ["abc", "de"]}', ["abcde", "de", "cde", ""]),
]


@pytest.mark.parametrize("text,strings", DIFF_GRAMMARS)
def test_agrees_with_xgrammar(text, strings):
    xgr = pytest.importorskip("xgrammar")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xc = xgr.GrammarCompiler(xgr.TokenizerInfo([])).compile_grammar(
            xgr.Grammar.from_lark(text))
    mine = Recognizer(Grammar.from_lark(text))
    for s in strings:
        m = xgr.GrammarMatcher(xc, terminate_without_stop_token=True)
        theirs = m.accept_string(s) and m.is_completed()
        assert mine.accepts(s.encode()) == theirs, (text, s)


# ---------------------------------------------------------------------------- left recursion

LEFT_RECURSIVE = [
    ('root ::= root "," item | item\nitem ::= [a-z]', "a,"),
    ('root ::= root "+" root | root "*" "n" | "n" | "(" root ")"', "n+*()"),
    ('root ::= root | "x"', "x"),
    ('root ::= root "a" | ""', "ab"),
    ('root ::= a "x" | "y"\na ::= root "z" | "w"', "xyzw"),  # indirect
    ('root ::= b | "x"\nb ::= root', "x"),  # unit cycle
    ('root ::= (root "+" | "-")+ "n" | "n"', "n+-"),  # left call inside a leading repeat
    ('root ::= a\na ::= b "1" | "0"\nb ::= c "2" | a "3"\nc ::= a "4" | "5"', "012345"),
]


@pytest.mark.parametrize("ebnf,alphabet", LEFT_RECURSIVE)
def test_left_recursion_rewrite_keeps_the_language(ebnf, alphabet):
    import itertools

    from xmask.grammar.left_recursion import eliminate_left_recursion

    original = Grammar.from_ebnf(ebnf)
    rewritten = eliminate_left_recursion(original)
    a, b = Recognizer(original), Recognizer(rewritten)
    for n in range(7):
        for t in itertools.product(alphabet, repeat=n):
            s = "".join(t).encode()
            assert a.accepts(s) == b.accepts(s), s
    compiled = xmask.GrammarCompiler(xmask.default_tokenizer_info()).compile_grammar(rewritten)
    assert compiled is not None  # no left recursion left


def test_left_recursive_lark_compiles():
    info = xmask.default_tokenizer_info()
    compiled = xmask.GrammarCompiler(info).compile_lark(CALC)
    m = xmask.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert m.accept_string("1 + 2 * (x - 3)") and m.is_completed()


@pytest.mark.parametrize("text", ['start: a "x" | "y"\na: "c"? start',  # behind a nullable
                                  'start: "(" start ")" | start start | ""'])
def test_hidden_left_recursion_is_a_clear_compile_error(text):
    with pytest.raises(xmask.GrammarError, match="left recursion is not supported"):
        xmask.GrammarCompiler(xmask.default_tokenizer_info()).compile_lark(text)


EXHAUSTIVE_DIFF = [
    ('start: a+ b?\na: "x" | "y" A\nb: B ~ 1..2\nA: /[xy]/\nB: "z"i\n%ignore " "', "xyzZ "),
    ('start: "(" start ")" | start start | ""', "() "),
    ('?start: sum\n?sum: product | sum "+" product\n?product: NUM | product "*" NUM'
     ' | "(" sum ")"\nNUM: /[0-9]/\n%ignore /[ ]+/', "1+*( )"),
    ('start: W ("," W)*\nW: LETTER+\n%import common.LETTER\n%ignore /x*/', "ab,x "),
    ('start: ESCAPED_STRING\n%import common.ESCAPED_STRING', '"\\a'),
    ('start: A B\nA: "a".."c"+\nB: ("b" | "bb")~2', "abc"),
]


@pytest.mark.parametrize("text,alphabet", EXHAUSTIVE_DIFF)
def test_agrees_with_xgrammar_on_every_short_string(text, alphabet):
    import itertools

    xgr = pytest.importorskip("xgrammar")
    xc = xgr.GrammarCompiler(xgr.TokenizerInfo([])).compile_grammar(xgr.Grammar.from_lark(text))
    mine = Recognizer(Grammar.from_lark(text))
    for n in range(5):
        for t in itertools.product(alphabet, repeat=n):
            s = "".join(t)
            m = xgr.GrammarMatcher(xc, terminate_without_stop_token=True)
            assert mine.accepts(s.encode()) == (m.accept_string(s) and m.is_completed()), s


@pytest.mark.parametrize("text,alphabet", [d for d in EXHAUSTIVE_DIFF if "start start" not in d[0]]
                         + [('start: "(" start ")" start | ""', "() ")])
def test_compiled_matcher_agrees_with_recognizer(text, alphabet):
    """The compiled grammar (left recursion rewritten, nullable %ignore items) accepts exactly
    what the Earley recognizer accepts."""
    import itertools

    compiled = xmask.GrammarCompiler(xmask.default_tokenizer_info()).compile_lark(text)
    rec = Recognizer(compiled.grammar)
    for n in range(5):
        for t in itertools.product(alphabet, repeat=n):
            s = "".join(t)
            m = xmask.GrammarMatcher(compiled, terminate_without_stop_token=True)
            ok = m.accept_string(s) and m.is_completed()
            assert ok == rec.accepts(s.encode()), s


def test_special_token_masks_on_llama3(llama3):
    """llguidance's Llama tool-call pattern: free text, or <|python_tag|> then a JSON call (the
    message then ends with a stop token: <|eom_id|> is one for this tokenizer, and a grammar
    cannot name a stop token, as in XGrammar); the special token is allowed exactly where the
    grammar names it."""
    pytest.importorskip("xmask.tokenizer.token_lookup")
    compiler, tok = llama3
    text = ('start: TEXT | fun_call\nTEXT: /[^{<](.|\\n)*/\n'
            'fun_call: <|python_tag|> %json {"type": "object", "properties": {"city": '
            '{"type": "string"}}, "required": ["city"]}')
    compiled = compiler.compile_lark(text)
    vocab = compiled.tokenizer_info.vocab_size
    python_tag, eom = 128010, 128008
    assert eom in compiled.tokenizer_info.stop_token_ids
    ids = [python_tag] + tok.encode('{"city": "Paris"}', add_special_tokens=False).ids + [eom]
    m = xmask.GrammarMatcher(compiled)
    for k, tid in enumerate(ids):
        fast = np.asarray(xmask.allocate_token_bitmask(1, vocab))
        ref = np.asarray(xmask.allocate_token_bitmask(1, vocab))
        m.fill_next_token_bitmask(fast)
        m._reference_fill_next_token_bitmask(ref)
        assert np.array_equal(fast, ref), k
        assert bool((fast[0, tid >> 5] >> (tid & 31)) & 1), k
        if k > 0:  # inside the call: the tag is not allowed again
            assert not (fast[0, python_tag >> 5] >> (python_tag & 31)) & 1, k
        assert m.accept_token(tid)
    assert m.is_terminated()
    text_only = xmask.GrammarMatcher(compiled)
    assert text_only.accept_string("Sure, ") and not text_only.accept_token(python_tag)


# ---------------------------------------------------------------------------- lazy rules

def _shortest(pattern, s):
    return re.fullmatch(pattern, s, re.S) is not None and not any(
        re.fullmatch(pattern, s[:k], re.S) for k in range(len(s)))


@pytest.mark.parametrize("pattern,alphabet", [
    (r"[\s\S]*<e>", "a<e"), (r"[0-9]+", "12a"), (r"(ab|a)(bc)?", "abc"), (r"a*", "ab"),
    (r"(a|ab)c|abd", "abcd"), (r"x[ab]*y|xa", "xaby")])
def test_lazy_rule_is_the_shortest_match(pattern, alphabet):
    import itertools

    r = recognizer(f"start: a\na[lazy]: /{pattern}/")
    for n in range(7):
        for t in itertools.product(alphabet, repeat=n):
            s = "".join(t)
            assert r.accepts(s.encode()) == _shortest(pattern, s), s


def test_stop_and_suffix():
    for attr in ("stop", "suffix"):
        check(f'start: a "!"\na[{attr}="<e>"]: /(.|\\n)*/',
              ["<e>!", "ab<e>!", "a\n<<e>!"], ["ab!", "a<e>b<e>!", "<e>"])
    check('start: a\na[stop=END, capture]: /[a-z]*/\nEND: /[0-9]+/', ["ab1", "7"], ["ab12", "ab"])
    check('start: a\na[lazy]: "ab" /[a-z]*/ "c"', ["abc", "abxc"], ["abcc", "ab"])


@pytest.mark.parametrize("text,message", [
    ('start: a\na[stop=""]: /(.|\\n)*/', 'stop="" (stop at the end-of-sequence token)'),
    ('start: a\na[lazy]: b\nb: "x"', "cannot reference the rule 'b'"),
])
def test_lazy_errors(text, message):
    with pytest.raises(GrammarSyntaxError, match=re.escape(message)):
        Grammar.from_lark(text)


def test_max_chars_and_max_tokens_mean_what_they_mean_in_ebnf():
    # XGrammar turns the Lark attributes into the EBNF ones: the same grammar either way
    check('start: a "!"\na[max_chars=3]: /[a-z]+/', ["a!", "abc!"], ["abcd!", "!"])
    lark = Grammar.from_lark('start: "(" a ")"\na[max_tokens=3]: /[a-z ]*/')
    assert lark.budgets == {"a": 3}
    assert str(lark) == str(Grammar.from_ebnf('root ::= "(" a ")"\na[max_tokens=3] ::= [a-z ]*'))
    with pytest.raises(xmask.GrammarError, match=r"max_tokens=0 on rule 'a' \(line 2, column 3\)"):
        Grammar.from_lark('start: a "!"\na[max_tokens=0]: /[a-z]+/')


@pytest.mark.parametrize("text,alphabet", [
    ('start: a\na[stop=END]: /[a-z]*/\nEND: /[0-9]+/', "a12"),
    ('start: a\na[lazy]: "ab" /[a-z]*/ "c"', "abc"),
    ('start: a "x"\na[lazy]: /[0-9]+/', "12x"),
    ('start: a b\na[lazy]: /a+/\nb: "a" | "b"', "ab"),
])
def test_lazy_agrees_with_xgrammar(text, alphabet):
    import itertools

    xgr = pytest.importorskip("xgrammar")
    xc = xgr.GrammarCompiler(xgr.TokenizerInfo([])).compile_grammar(xgr.Grammar.from_lark(text))
    compiled = xmask.GrammarCompiler(xmask.default_tokenizer_info()).compile_lark(text)
    for n in range(6):
        for t in itertools.product(alphabet, repeat=n):
            s = "".join(t)
            theirs = xgr.GrammarMatcher(xc, terminate_without_stop_token=True)
            mine = xmask.GrammarMatcher(compiled, terminate_without_stop_token=True)
            assert (mine.accept_string(s) and mine.is_completed()) == (
                theirs.accept_string(s) and theirs.is_completed()), s
