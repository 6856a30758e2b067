"""Regex front-end tests: differential against Python's ``re`` through the reference recognizer.

For every pattern we build candidate strings three ways -- random samples drawn from
Python's own parse of the pattern (``re._parser``, so independent of xmask's parser),
mutations of them, and random strings over a pattern-specific alphabet -- and check that
``Recognizer(regex_to_grammar(p)).accepts(s)`` agrees with ``re.fullmatch`` (or, with
``search=True``, with ``re.search``).  The oracle runs with ``re.ASCII`` because xmask's
``\\d`` / ``\\w`` are ASCII-only (JavaScript semantics); alphabets avoid the characters where
Python's ``\\s`` and JavaScript's differ (those are tested directly).
"""

import random
import re

import pytest

from xmask.errors import RegexSyntaxError
from xmask.grammar import (
    EPSILON,
    Bytes,
    CharClass,
    Choice,
    Grammar,
    Recognizer,
    Repeat,
    Seq,
    iter_refs,
)
from xmask.grammar.regex import MAX_REPEAT_BOUND, regex_to_expr, regex_to_grammar

try:  # Python >= 3.11
    from re import _constants as sre_c
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover - Python 3.9 / 3.10
    import sre_constants as sre_c
    import sre_parse

BASE_ALPHABET = "ab zA_09-.\n\t\u00e9\u6771\U0001F600"
MAX_LEN = 24


# ---------------------------------------------------------------------------- generators

class _NoSample(Exception):
    pass


_CATEGORY = {
    sre_c.CATEGORY_DIGIT: r"\d",
    sre_c.CATEGORY_NOT_DIGIT: r"\D",
    sre_c.CATEGORY_SPACE: r"\s",
    sre_c.CATEGORY_NOT_SPACE: r"\S",
    sre_c.CATEGORY_WORD: r"\w",
    sre_c.CATEGORY_NOT_WORD: r"\W",
}


def _in_set(items, ch):
    negated, hit = False, False
    for op, av in items:
        if op is sre_c.NEGATE:
            negated = True
        elif op is sre_c.LITERAL:
            hit = hit or ord(ch) == av
        elif op is sre_c.RANGE:
            hit = hit or av[0] <= ord(ch) <= av[1]
        elif op is sre_c.CATEGORY:
            hit = hit or re.fullmatch(_CATEGORY[av], ch, re.ASCII) is not None
        else:  # pragma: no cover
            raise AssertionError(f"unexpected set item {op}")
    return hit != negated


def _set_candidates(items, alphabet, rng):
    cands = list(alphabet)
    for op, av in items:
        if op is sre_c.LITERAL:
            cands.append(chr(av))
        elif op is sre_c.RANGE:
            cands += [chr(av[0]), chr(av[1]), chr(rng.randint(av[0], av[1]))]
    return [c for c in cands if not 0xD800 <= ord(c) <= 0xDFFF]


def _gen(sub, rng, alphabet, out):
    for op, av in sub:
        if op is sre_c.LITERAL:
            out.append(chr(av))
        elif op is sre_c.NOT_LITERAL:
            out.append(rng.choice([c for c in alphabet if ord(c) != av]))
        elif op is sre_c.ANY:
            out.append(rng.choice([c for c in alphabet if c != "\n"]))
        elif op is sre_c.IN:
            ok = [c for c in _set_candidates(av, alphabet, rng) if _in_set(av, c)]
            if not ok:
                raise _NoSample
            out.append(rng.choice(ok))
        elif op is sre_c.BRANCH:
            _gen(rng.choice(av[1]), rng, alphabet, out)
        elif op is sre_c.SUBPATTERN:
            _gen(av[-1], rng, alphabet, out)
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT):
            lo, hi, item = av
            for _ in range(rng.randint(lo, min(hi, lo + 3))):
                _gen(item, rng, alphabet, out)
        elif op is sre_c.AT:
            pass
        else:  # pragma: no cover
            raise AssertionError(f"unexpected op {op}")


def sample(pattern, rng, alphabet):
    """A random string matched by ``pattern``, drawn from Python's parse of it (or None)."""
    tree = sre_parse.parse(pattern, re.ASCII)
    out = []
    try:
        _gen(tree, rng, alphabet, out)
    except _NoSample:
        return None
    return "".join(out)


def mutate(s, rng, alphabet):
    k = rng.randrange(5)
    i = rng.randint(0, len(s))
    if k == 0 and s:  # delete
        i = min(i, len(s) - 1)
        return s[:i] + s[i + 1:]
    if k == 1:  # insert
        return s[:i] + rng.choice(alphabet) + s[i:]
    if k == 2 and s:  # replace
        i = min(i, len(s) - 1)
        return s[:i] + rng.choice(alphabet) + s[i + 1:]
    if k == 3 and s:  # duplicate a slice
        j = rng.randint(i, len(s))
        return s[:j] + s[i:j] + s[j:]
    return s[: max(0, len(s) - 1)] if s else rng.choice(alphabet)


def alphabet_for(pattern):
    extra = "".join(c for c in pattern if c not in "\\()[]{}|*+?^$" and not 0xD800 <= ord(c) <= 0xDFFF)
    return sorted(set(BASE_ALPHABET + extra))


def candidates(pattern, seed, search=False, n_samples=25, n_random=25):
    rng = random.Random(seed)
    alphabet = alphabet_for(pattern)
    out = {""}
    samples = [s for s in (sample(pattern, rng, alphabet) for _ in range(n_samples)) if s is not None]
    for s in samples:
        if search:
            pre = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 2)))
            post = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 2)))
            s = pre + s + post
        out.add(s)
        for _ in range(3):
            out.add(mutate(s, rng, alphabet))
    for _ in range(n_random):
        out.add("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))))
    return sorted(s for s in out if len(s) <= MAX_LEN)


def check_fullmatch(pattern, oracle=None, seed=0):
    rec = Recognizer(regex_to_grammar(pattern))
    py = re.compile(oracle or pattern, re.ASCII)
    bad = []
    for s in candidates(oracle or pattern, seed):
        want = py.fullmatch(s) is not None
        if rec.accepts(s.encode("utf-8")) != want:
            bad.append((s, want))
    assert not bad, f"{pattern!r}: disagreements (string, python) {bad[:5]}"


def check_search(pattern, oracle=None, seed=0):
    rec = Recognizer(regex_to_grammar(pattern, search=True))
    # JavaScript '$' (end of string) is Python '\Z'
    oracle = oracle or re.sub(r"(?<!\\)\$", r"\\Z", pattern)
    py = re.compile(oracle, re.ASCII)
    bad = []
    for s in candidates(oracle, seed, search=True):
        want = py.search(s) is not None
        if rec.accepts(s.encode("utf-8")) != want:
            bad.append((s, want))
    assert not bad, f"{pattern!r} (search): disagreements (string, python) {bad[:5]}"


# ---------------------------------------------------------------------------- differential

FULLMATCH_PATTERNS = [
    # literals, empty, alternation with empty branches
    "abc", "", "a|b|", "|a", "a||b", "(a|)b", "()", "(?:)c", "a b",
    # quantifiers
    "a*", "a+", "a?", "a{0}", "a{0}b", "a{3}", "a{2,}", "a{1,3}", "a{0,2}b", "(ab){2}",
    "(ab|c){1,3}d", "a{0,0}", "(?:ab){2,}c", "x{02}",
    # lazy quantifiers (same language)
    "a*?", "a+?b", "a??", "a{1,3}?", "(a|b)*?c", "a{2,}?",
    # classes
    "[abc]", "[a-c]+", "[^abc]", "[^a-z]*", r"[a\-z]", "[-a]", "[a-]", r"[\]]", r"[\^a]", "[a^]",
    "[.*+?]+", "[a-b-c]", r"[\b]", r"[\t\n]", r"[\\]", "[$]", "[a|b]", "[(]",
    # shorthands, also inside (negated) classes
    r"[\d]", r"[\d\s]+", r"[^\W]", r"[\W\d]", r"[^\d\s]", r"[\D]", r"[^\S]", r"[\w-]+", r"[\da-f]+",
    r"\d+", r"\D", r"\w+", r"\W", r"\s", r"\S+", r"\d{2,4}", r"\W\w",
    # multi-byte UTF-8
    "[\u00e9\u6771\U0001F600]", "[^\u00e9]", "[^\u6771\U0001F600]+", "\u00e9+", "\u6771{2}",
    "\U0001F600|a", "[\u00e0-\u00ff]+", r"[\u4e00-\u9fff]+", r"[^\x00-\x7f]",
    r"[\U0001F600-\U0001F64F]", r"[^\U0001F600]", r"\u6771\u00e9", r"[^a-z\u00e9]",
    # dot
    ".", ".*", ".+a", "a.b", "[.]", r"\.",
    # escapes
    r"\t\n", r"\x41\u00e9", r"\0", r"\/", r"\.\*\\\[\]\(\)\{\}\|\^\$\?\+\-", r"\r\f\v", r"\x7e\x20",
    r"\N{LATIN SMALL LETTER E WITH ACUTE}", r"\,\:\#\ \"",
    # literal braces and brackets
    "a{", "a{x}", "a{1,2", "{", "x{}", "a}", "]", "a{1,2}{", "a{1, 3}", "{a}",
    # groups
    "((a|b)c)*", "(a(b(c)?)*)+", "(?P<x>a|b)+", "(?:a|b(?:c|d))e", "(((a)))", "(a)(b)(c)?",
    # anchors at the ends are no-ops in full-match mode
    "^abc$", "^a|b$", "^(a|b)$", "^$", "^", "$", "^a|^b", r"\Aab\Z",
    # realistic
    "[0-9]{4}-[0-9]{2}-[0-9]{2}", "[A-Za-z_][A-Za-z0-9_]*", r"(\+|-)?\d+(\.\d+)?", r'[^"\\]*',
    "https?://[a-z.]+", r"\(\d{3}\) \d{3}-\d{4}", r"[a-z]+@[a-z]+\.(com|org)",
    # tricky structure
    "(a*)*", "(a+)+b", "(a?){2}", "(a*|b)+", "(a|ab)(c|bcd)", "(a?)+?", "(a{2}){2,3}", "(|a)+",
    "(a*)?", "(a+)?", "(a?)?",
]


@pytest.mark.parametrize("pattern", FULLMATCH_PATTERNS)
def test_fullmatch_agrees_with_python(pattern):
    check_fullmatch(pattern)


SEARCH_PATTERNS = [
    "a", "ab|cd", "^ab", "ab$", "^a|b$", "^(a|b)c$", r"\d{2}", "", "^", "$", "a.c", "[^a]", "x*",
    "^$", "^a$|b", "\u00e9\u6771", "a|^b|c$", "^a|^b", "a$|b$", r"[^\n]+", "b+a?", "^.*a$", ".",
    "a{2,}", "(a|)b", "^\U0001F600", r"\s\S",
]


@pytest.mark.parametrize("pattern", SEARCH_PATTERNS)
def test_search_agrees_with_python(pattern):
    check_search(pattern)


JS_ONLY = [
    # (xmask pattern, equivalent Python pattern)
    (r"(?<x>a|b)+c", r"(?P<x>a|b)+c"),
    (r"\u{1F600}+", "\U0001F600+"),
    (r"\u{e9}|\u{6771}", "\u00e9|\u6771"),
    (r"\cJ\ca", r"\n\x01"),
    (r"[\u{1F600}-\u{1F64F}]", r"[\U0001F600-\U0001F64F]"),
    (r"\ud83d\ude00", "\U0001F600"),  # a UTF-16 surrogate pair is one code point
    (r"[\ud83d\ude00a]", "[\U0001F600a]"),
]


@pytest.mark.parametrize("pattern,oracle", JS_ONLY)
def test_javascript_syntax(pattern, oracle):
    check_fullmatch(pattern, oracle)


# ---------------------------------------------------------------------------- semantics

def accepts(pattern, s, search=False):
    return Recognizer(regex_to_grammar(pattern, search=search)).accepts(s.encode("utf-8"))


def test_dot_is_python_dot():
    for ch in "\r\u2028\u2029a\u00e9\U0001F600\x00":
        assert accepts(".", ch), repr(ch)
    assert not accepts(".", "\n")
    assert not accepts(".", "")


def test_search_prefix_and_suffix_include_newlines():
    assert accepts("a", "\n\na\n", search=True)
    assert accepts("a.c", "x\nabc\n", search=True)
    assert not accepts("a.c", "a\nc", search=True)
    assert accepts("^a", "a\n\n", search=True)
    assert not accepts("^a", "\na", search=True)  # no MULTILINE
    assert accepts("", "\n", search=True) and accepts("", "", search=True)


def test_dollar_is_end_of_string():
    # Python's '$' also matches before a final newline; xmask's does not (JavaScript semantics)
    assert re.search("a$", "xa\n") is not None
    assert not accepts("a$", "xa\n", search=True)
    assert accepts("a$", "xa", search=True)
    assert not accepts("a$", "a\n")
    assert not accepts(r"a\Z", "xa\n", search=True)


def test_anchors_per_alternative_in_search_mode():
    e = regex_to_expr("^a|b$", search=True)
    any_star = Repeat(CharClass((), negated=True), 0, None)
    assert e == Choice((Seq((Bytes(b"a"), any_star)), Seq((any_star, Bytes(b"b")))))
    assert accepts("^a|b$", "axx", search=True) and accepts("^a|b$", "xxb", search=True)
    assert not accepts("^a|b$", "xax", search=True) and not accepts("^a|b$", "bx", search=True)
    # shared anchors are factored out
    e = regex_to_expr("^a|^b", search=True)
    assert e == Seq((Choice((Bytes(b"a"), Bytes(b"b"))), any_star))
    assert regex_to_expr("^ab$", search=True) == Bytes(b"ab")
    assert regex_to_expr("^ab$") == regex_to_expr("ab") == Bytes(b"ab")


def test_shorthands_use_javascript_sets():
    for ch in " \t\n\r\f\v\u00a0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000\ufeff":
        assert accepts(r"\s", ch), repr(ch)
        assert not accepts(r"\S", ch), repr(ch)
        assert not accepts(r"[^\s]", ch), repr(ch)
    for ch in "\x1c\x1f\x85\u200b":  # Python's \s matches \x1c-\x1f and \x85; JS's does not
        assert not accepts(r"\s", ch) and accepts(r"\S", ch), repr(ch)
    for ch in "\u0663\uff11":  # non-ASCII digits
        assert not accepts(r"\d", ch) and accepts(r"\D", ch)
    for ch in "\u00e9\u6771\u00aa":
        assert not accepts(r"\w", ch) and accepts(r"\W", ch) and accepts(r"[^\w]", ch)


def test_negated_classes_with_multibyte_characters():
    r = Recognizer(regex_to_grammar("[^\u00e9\u6771\U0001F600]"))
    for ch in "a\u00e8\u00ea\u6770\u6772\U0001F601\U0001F5FF\n\u07ff\u0800\uffff\U00010000\U0010FFFF":
        assert r.accepts(ch.encode()), repr(ch)
    for ch in "\u00e9\u6771\U0001F600":
        assert not r.accepts(ch.encode()), repr(ch)
    assert not r.accepts(b"") and not r.accepts(b"ab")
    assert not r.accepts(b"\xed\xa0\x80")  # an encoded surrogate is never a character


# ---------------------------------------------------------------------------- IR shape

def test_quantifiers_make_repeat_nodes():
    assert regex_to_expr(r"\d{1,129}") == Repeat(CharClass(((48, 57),)), 1, 129)
    assert regex_to_expr("a{10000}") == Repeat(Bytes(b"a"), 10000, 10000)
    assert regex_to_expr("(ab){3,5}") == Repeat(Bytes(b"ab"), 3, 5)
    assert regex_to_expr("x{2,}") == Repeat(Bytes(b"x"), 2, None)
    assert regex_to_expr("x{0}") == EPSILON and regex_to_expr("x{0,0}") == EPSILON
    assert regex_to_expr("x{1}") == Bytes(b"x")
    assert regex_to_expr("ab*") == Seq((Bytes(b"a"), Repeat(Bytes(b"b"), 0, None)))
    for greedy, lazy in (("a*", "a*?"), ("a+", "a+?"), ("a?", "a??"), ("a{2,5}", "a{2,5}?")):
        assert regex_to_expr(greedy) == regex_to_expr(lazy)
    assert regex_to_expr("(a*)*") == regex_to_expr("(a+)*") == Repeat(Bytes(b"a"), 0, None)
    assert regex_to_expr("(a+)+") == Repeat(Bytes(b"a"), 1, None)
    r = Recognizer(regex_to_grammar(r"\d{1,129}"))
    assert r.accepts(b"7" * 129) and not r.accepts(b"7" * 130) and not r.accepts(b"")


def test_grammar_wrapper():
    g = regex_to_grammar("a|b", root_rule_name="start")
    assert isinstance(g, Grammar) and g.root == "start" and list(g.rules) == ["start"]
    assert not list(iter_refs(g.rules["start"]))
    assert str(regex_to_grammar("(?:yes|no)!*")) == 'root ::= ("yes" | "no") "!"*'
    with pytest.raises(TypeError):
        regex_to_expr(b"abc")


def test_deep_nesting_does_not_recurse():
    assert regex_to_expr("(" * 3000 + "a" + ")" * 3000) == Bytes(b"a")
    assert regex_to_expr("(?:" * 3000 + "a|b" + ")" * 3000) == Choice((Bytes(b"a"), Bytes(b"b")))


def test_literal_surrogate_pair_in_pattern_text():
    # a str holding an unpaired-looking UTF-16 pair (e.g. from some JSON decoders)
    assert regex_to_expr("\ud83d\ude00") == Bytes("\U0001F600".encode())


# ---------------------------------------------------------------------------- errors

ERRORS = [
    # (pattern, 0-based position, message fragment)
    (r"(a)\1", 3, "backreference"),
    (r"\9", 0, "backreference"),
    (r"(?P<n>a)(?P=n)", 8, "backreference"),
    (r"(?<n>a)\k<n>", 7, "backreference"),
    ("a(?=b)", 1, "lookaround"),
    ("a(?!b)", 1, "lookaround"),
    ("(?<=a)b", 0, "lookaround"),
    ("(?<!a)b", 0, "lookaround"),
    (r"a\b", 1, "word boundar"),
    (r"\Ba", 0, "word boundar"),
    ("(?i)abc", 0, "inline flags"),
    ("a(?s:.)", 1, "inline flags"),
    ("(?>ab)", 0, "atomic"),
    ("(?#x)a", 0, "comment"),
    ("a*+", 2, "possessive"),
    ("a{2}+", 4, "possessive"),
    ("a?+", 2, "possessive"),
    ("a**", 2, "multiple repeat"),
    ("a*?+", 3, "multiple repeat"),
    ("a{2}{3}", 4, "multiple repeat"),
    (r"\p{L}", 0, "property"),
    (r"[\P{L}]", 1, "property"),
    ("*a", 0, "nothing to repeat"),
    ("a|*", 2, "nothing to repeat"),
    ("(+)", 1, "nothing to repeat"),
    ("{1}", 0, "nothing to repeat"),
    ("^*", 1, "nothing to repeat"),
    ("(ab", 0, "missing ')'"),
    ("a(b(c)", 1, "missing ')'"),
    ("ab)", 2, "unbalanced"),
    ("[abc", 0, "unterminated"),
    ("[a-", 0, "unterminated"),
    ("[z-a]", 1, "bad character range"),
    (r"[\d-z]", 1, "bad character range"),
    (r"[a-\w]", 1, "bad character range"),
    ("a{3,1}", 1, "min repeat greater than max"),
    ("a{10001}", 1, "repeat bound too large"),
    ("a{1,10001}", 1, "repeat bound too large"),
    ("a{99999999999999999999}", 1, "repeat bound too large"),
    ("a{,3}", 1, "ambiguous"),
    ("a{,}", 1, "ambiguous"),
    ("[]a]", 1, "ambiguous"),
    ("[^]a]", 2, "ambiguous"),
    ("a\\", 1, "bad escape"),
    (r"\q", 0, "bad escape"),
    (r"\a", 0, "bad escape"),
    (r"\x4", 0, "\\x"),
    (r"\xzz", 0, "\\x"),
    (r"\u12", 0, "\\u"),
    (r"\u{}", 0, "\\u{"),
    (r"\u{110000}", 0, "beyond"),
    (r"\U00110000", 0, "beyond"),
    (r"\N{NO SUCH CHARACTER NAME}", 0, "undefined character name"),
    (r"\c1", 0, "\\c"),
    (r"\012", 0, "octal"),
    (r"[\1]", 1, "octal"),
    (r"[\A]", 1, "bad escape"),
    (r"\ud800", 0, "surrogate"),
    ("x\udc00", 1, "surrogate"),
    ("a^b", 1, "'^' is only supported"),
    ("(^a)", 1, "'^' is only supported"),
    ("^^a", 1, "'^' is only supported"),
    (r"a\Ab", 1, "'\\A' is only supported"),
    ("a$b", 1, "'$' is only supported"),
    ("(a$)", 2, "'$' is only supported"),
    ("a$$", 1, "'$' is only supported"),
    ("a$*", 1, "'$' is only supported"),
    (r"a\Zb", 1, "'\\Z' is only supported"),
    ("(?P<1x>a)", 4, "bad group name"),
    ("(?<a>x)(?<a>y)", 10, "redefinition"),
    ("(?P<a", 4, "missing '>'"),
    ("(?", 0, "end of pattern"),
    ("(?x", 0, "inline flags"),
]


@pytest.mark.parametrize("pattern,position,fragment", ERRORS)
def test_errors(pattern, position, fragment):
    with pytest.raises(RegexSyntaxError) as info:
        regex_to_grammar(pattern)
    err = info.value
    assert err.position == position, (pattern, str(err))
    assert err.pattern == pattern
    assert fragment in str(err), str(err)
    assert err.column == position + 1 and err.line == 1
    assert isinstance(err, ValueError)


def test_errors_python_also_rejects():
    # plain syntax errors: Python rejects them too (same 0-based position where it reports one)
    for pattern, position in (("a**", 2), ("(ab", 0), ("ab)", 2), ("[z-a]", 1), ("*a", 0),
                              ("a|+", 2), ("[abc", 0), (r"\q", 0)):
        with pytest.raises(re.error) as py:
            re.compile(pattern)
        assert py.value.pos == position, pattern
        with pytest.raises(RegexSyntaxError) as ours:
            regex_to_expr(pattern)
        assert ours.value.position == position, pattern


def test_max_repeat_bound_is_accepted():
    big = MAX_REPEAT_BOUND
    assert regex_to_expr(f"a{{{big}}}") == Repeat(Bytes(b"a"), big, big)
    assert regex_to_expr(f"a{{0,{MAX_REPEAT_BOUND}}}") == Repeat(Bytes(b"a"), 0, MAX_REPEAT_BOUND)
