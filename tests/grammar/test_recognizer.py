"""Reference recognizer tests (the recognizer is the oracle for the compiled engine)."""

import itertools
import json
import os
import random
import time

import pytest
from conftest import require_data

from xmask.grammar import (
    EPSILON,
    Bytes,
    CharClass,
    Choice,
    Grammar,
    Recognizer,
    Repeat,
    RuleRef,
    Seq,
    builtin_json_grammar,
    make_choice,
    make_seq,
    parse_ebnf,
)


def rec(text, root="root"):
    return Recognizer(parse_ebnf(text, root_rule_name=root))


@pytest.fixture(scope="module")
def json_rec():
    return Recognizer(builtin_json_grammar())


# ---------------------------------------------------------------------------- hand grammars

def test_simple_literals():
    r = rec('root ::= "yes" | "no"')
    assert r.accepts(b"yes") and r.accepts(b"no")
    assert not r.accepts(b"ye") and not r.accepts(b"yess") and not r.accepts(b"")
    assert r.accepts_prefix(b"") and r.accepts_prefix(b"ye") and r.accepts_prefix(b"n")
    assert not r.accepts_prefix(b"x") and not r.accepts_prefix(b"yesx")


def test_left_recursion():
    r = rec('root ::= expr\nexpr ::= expr "+" term | term\nterm ::= [0-9]+ | "(" expr ")"')
    for ok in (b"1", b"1+2", b"12+3+45", b"(1+2)+3", b"((1))", b"1+(2+(3+4))"):
        assert r.accepts(ok), ok
    for bad in (b"", b"+", b"1+", b"1++2", b"(1", b"1)", b"()"):
        assert not r.accepts(bad), bad
    assert r.accepts_prefix(b"1+") and r.accepts_prefix(b"((") and not r.accepts_prefix(b"1)")
    long = b"+".join([b"1"] * 300)
    assert r.accepts(long)


def test_right_recursion_and_mutual_recursion():
    r = rec('root ::= "a" root | "b"')
    assert r.accepts(b"b") and r.accepts(b"a" * 200 + b"b")
    assert not r.accepts(b"a" * 5)
    r = rec('root ::= x\nx ::= "(" y ")" | ""\ny ::= x x')
    assert r.accepts(b"") and r.accepts(b"()") and r.accepts(b"(()())") and r.accepts(b"((()))")
    assert not r.accepts(b"(()") and not r.accepts(b")(")


def test_nullable_rules():
    r = rec('root ::= a b c "x"\na ::= "" | "a"\nb ::= a a\nc ::= b | "c"')
    for ok in (b"x", b"ax", b"aax", b"aaax", b"aaaax", b"aaaaax", b"cx", b"acx", b"aaacx"):
        assert r.accepts(ok), ok
    for bad in (b"", b"aaaaaax", b"ccx", b"xc", b"aaaacx"):
        assert not r.accepts(bad), bad
    # nullable left recursion and epsilon loops
    r = rec('root ::= root root | "a" | ""')
    assert r.accepts(b"") and r.accepts(b"aaaa")
    r = rec('root ::= (""  | "a")* "b"')
    assert r.accepts(b"b") and r.accepts(b"aaab") and not r.accepts(b"aaa")
    r = rec('root ::= ws\nws ::= | " "')
    assert r.accepts(b"") and r.accepts(b" ") and not r.accepts(b"  ")


def test_repeat_bounds_exact():
    for lo, hi in [(0, 0), (0, 1), (1, 1), (2, 4), (3, 3), (0, 5), (2, None), (0, None), (1, None)]:
        hi_s = "" if hi is None else str(hi)
        r = rec(f'root ::= "<" "a"{{{lo},{hi_s}}} ">"')
        for n in range(9):
            expected = n >= lo and (hi is None or n <= hi)
            assert r.accepts(b"<" + b"a" * n + b">") == expected, (lo, hi, n)
            assert r.accepts_prefix(b"<" + b"a" * n) == (hi is None or n <= hi)


def test_repeat_of_nullable_and_nested_repeats():
    r = rec('root ::= ("a"?){3}')
    for n in range(5):
        assert r.accepts(b"a" * n) == (n <= 3)
    r = rec('root ::= ("ab"{1,2}){2,3}')
    for n in range(8):
        assert r.accepts(b"ab" * n) == (2 <= n <= 6), n
    r = rec('root ::= ("a" "b"?){2}')
    assert [r.accepts(s) for s in (b"aa", b"aba", b"abab", b"aab", b"a", b"abb")] == [True] * 4 + [False] * 2
    r = rec('root ::= "x"{1000}')
    assert r.accepts(b"x" * 1000) and not r.accepts(b"x" * 999) and not r.accepts(b"x" * 1001)


def test_utf8_char_classes():
    r = rec('root ::= "\\"" [^"]* "\\""')
    assert r.accepts('"é"'.encode()) and r.accepts('"日本😀"'.encode())
    assert r.accepts_prefix(b'"\xc3')  # first byte of a 2-byte char
    assert not r.accepts(b'"\xc3"')  # truncated character
    assert not r.accepts_prefix(b'"\xff')  # never valid in UTF-8
    assert not r.accepts_prefix(b'"\x80')  # lone continuation byte
    assert not r.accepts_prefix(b'"\xc0\xaf')  # overlong '/'
    assert not r.accepts_prefix(b'"\xc1')  # overlong lead byte
    assert not r.accepts_prefix(b'"\xe0\x80')  # overlong 3-byte
    assert not r.accepts_prefix(b'"\xed\xa0')  # surrogate U+D800..
    assert not r.accepts_prefix(b'"\xf4\x90')  # above U+10FFFF
    assert not r.accepts_prefix(b'"\xf5')
    assert r.accepts('"\U0010FFFF"'.encode()) and r.accepts('"\ud7ff\ue000"'.encode())
    assert not r.accepts(b'"""')
    # all of ASCII and every valid lead byte: not 0x80-0xBF, 0xC0, 0xC1, 0xF5-0xFF
    assert r.allowed_bytes(r.run(b'"')) == list(range(0x80)) + list(range(0xC2, 0xF5))
    # exact prefix pruning inside a multi-byte character
    r = rec("root ::= [é]")
    assert r.accepts("é".encode()) and not r.accepts("è".encode())
    assert r.accepts_prefix(b"\xc3") and not r.accepts_prefix(b"\xc4") and not r.accepts_prefix(b"\xc3\xa8")
    r = rec("root ::= [\\u0800-\\uFFFF]")
    assert r.allowed_bytes(r.initial()) == list(range(0xE0, 0xF0))
    assert r.allowed_bytes(r.run(b"\xe0")) == list(range(0xA0, 0xC0))
    r = rec("root ::= .")
    assert r.accepts(b"\x00") and r.accepts(b"\x7f") and r.accepts("\U0001F600".encode()) and not r.accepts(b"ab")


def test_byte_level_class():
    g = Grammar({"root": Repeat(CharClass(((0x80, 0xFF),), byte_level=True), 1, None)})
    r = Recognizer(g)
    assert r.accepts(b"\xff\x80") and r.accepts(b"\xc0\xaf") and not r.accepts(b"a")
    g = Grammar({"root": Seq((CharClass(((0x61, 0x61),), negated=True, byte_level=True), Bytes(b"!")))})
    r = Recognizer(g)
    assert r.accepts(b"\xff!") and r.accepts(b"b!") and not r.accepts(b"a!")


def test_unproductive_rules_and_exact_prefix():
    r = rec('root ::= "a" x | "b"\nx ::= "c" x')
    assert r.accepts(b"b")
    assert not r.accepts_prefix(b"a")  # x derives no finite string
    assert r.allowed_bytes(r.initial()) == [ord("b")]
    r = rec('root ::= "a" [] | "a" "b"?')
    assert r.accepts(b"a") and r.accepts(b"ab") and r.allowed_bytes(r.run(b"a")) == [ord("b")]
    r = rec("root ::= root")
    assert not r.accepts_prefix(b"") and not r.accepts(b"")
    r = rec('root ::= "a" x*\nx ::= "b" x')
    assert r.accepts(b"a") and not r.accepts_prefix(b"ab")


def test_states_are_not_mutated():
    r = rec('root ::= "ab" | "ac" | "a" [^a]')
    s1 = r.step(r.initial(), ord("a"))
    before = (set(s1._set.items), s1._pending)
    assert r.step(s1, ord("b")) is not None
    assert r.step(s1, ord("c")) is not None
    assert r.step(s1, 0xC3) is not None
    assert r.step(s1, ord("a")) is None
    assert (set(s1._set.items), s1._pending) == before
    sb = r.step(s1, ord("b"))
    assert r.can_end(sb) and not r.can_end(s1)
    assert r.step(r.initial(), ord("a")) == s1
    assert hash(r.step(r.initial(), ord("a"))) == hash(s1)


def test_root_rule_referenced_recursively():
    r = rec('root ::= "(" root ")" | "x"')
    assert r.accepts(b"((x))") and not r.can_end(r.run(b"((x)"))


# ---------------------------------------------------------------------------- brute force

def _language(g, max_len, chars):
    """All sentences of ``g`` of at most ``max_len`` bytes over ``chars`` (a fixpoint)."""
    alphabet = [c.encode() for c in chars]

    def cat(xs, ys):
        return {x + y for x in xs for y in ys if len(x) + len(y) <= max_len}

    langs = {name: set() for name in g.rules}

    def ev(e):
        if isinstance(e, Bytes):
            return {e.data} if len(e.data) <= max_len else set()
        if isinstance(e, CharClass):
            pos = e.positive_ranges()
            return {a for a in alphabet if len(a) <= max_len and any(lo <= ord(a.decode()) <= hi for lo, hi in pos)}
        if isinstance(e, Seq):
            out = {b""}
            for item in e.items:
                out = cat(out, ev(item))
            return out
        if isinstance(e, Choice):
            return set().union(*(ev(i) for i in e.items))
        if isinstance(e, RuleRef):
            return langs[e.name]
        if isinstance(e, Repeat):
            x = ev(e.item)
            top = e.min + max_len if e.max is None else min(e.max, e.min + max_len)
            out, cur = set(), {b""}
            for count in range(top + 1):
                if count >= e.min:
                    out |= cur
                cur = cat(cur, x)
                if not cur:
                    break
            return out
        raise TypeError(e)

    changed = True
    while changed:
        changed = False
        for name, e in g.rules.items():
            new = ev(e)
            if new != langs[name]:
                langs[name] = new
                changed = True
    return langs[g.root]


def _rand_expr(rng, depth, names):
    kind = rng.randrange(8 if depth > 0 else 4)
    if kind == 0:
        return Bytes(rng.choice([b"a", b"b", b"ab", "é".encode(), b"ba"]))
    if kind == 1:
        return rng.choice([
            CharClass(((97, 97),)), CharClass(((97, 98),)), CharClass(((98, 98),), negated=True),
            CharClass(((0xE9, 0xE9),)), CharClass((), negated=True), CharClass(()),
        ])
    if kind == 2:
        return RuleRef(rng.choice(names))
    if kind == 3:
        return EPSILON
    if kind in (4, 5):
        return make_seq([_rand_expr(rng, depth - 1, names) for _ in range(rng.randint(2, 3))])
    if kind == 6:
        return make_choice([_rand_expr(rng, depth - 1, names) for _ in range(rng.randint(2, 3))])
    lo = rng.randint(0, 2)
    return Repeat(_rand_expr(rng, depth - 1, names), lo, rng.choice([None, lo, lo + 1, lo + 2]))


def test_random_grammars_against_enumeration():
    rng = random.Random(42)
    chars = ["a", "b", "é", "è"]  # the language is enumerated over these characters
    max_len = 5
    inputs = [b""]
    for n in range(1, max_len + 1):
        for combo in itertools.product(chars[:3], repeat=n):
            s = "".join(combo).encode()
            if len(s) <= max_len:
                inputs.append(s)
    inputs += [b"\xc3", b"a\xc3", b"\xff", b"\xc3\xa8"]
    checked = 0
    for _ in range(150):
        names = ["root", "x", "y"]
        g = Grammar({n: _rand_expr(rng, 3, names) for n in names})
        lang = _language(g, max_len, chars)
        prefixes = {s[:i] for s in lang for i in range(len(s) + 1)}
        r = Recognizer(g)
        for s in inputs:
            assert r.accepts(s) == (s in lang), (str(g), s)
            if s in prefixes:
                assert r.accepts_prefix(s), (str(g), s)
            checked += 1
    assert checked > 1000


# ---------------------------------------------------------------------------- builtin JSON

def _rand_string(rng):
    pool = ["a", "Z", " ", '"', "\\", "/", "\n", "\t", "\x00", "\x1f", "\x7f", "é", "日", "😀", "\u2028", "\ud7ff"]
    return "".join(rng.choice(pool) for _ in range(rng.randint(0, 8)))


def _rand_value(rng, depth):
    k = rng.randrange(9 if depth > 0 else 7)
    if k == 0:
        return None
    if k == 1:
        return rng.random() < 0.5
    if k == 2:
        return rng.randint(-10**20, 10**20) if rng.random() < 0.3 else rng.randint(-100, 100)
    if k == 3:
        return rng.choice([0.0, -0.0, 1.5, -2.25e-10, 1e100, 3.14159, 123456.789, 5e-324])
    if k in (4, 5, 6):
        return _rand_string(rng)
    if k == 7:
        return [_rand_value(rng, depth - 1) for _ in range(rng.randint(0, 4))]
    return {_rand_string(rng): _rand_value(rng, depth - 1) for _ in range(rng.randint(0, 4))}


def _spaced(v, rng):
    """Serialize with random JSON whitespace inside containers."""

    def ws():
        return "".join(rng.choice(" \t\n\r") for _ in range(rng.choice([0, 0, 1, 3])))

    if isinstance(v, list):
        if not v:
            return "[" + ws() + "]"
        return "[" + ",".join(ws() + _spaced(x, rng) + ws() for x in v) + "]"
    if isinstance(v, dict):
        if not v:
            return "{" + ws() + "}"
        return "{" + ",".join(ws() + json.dumps(k) + ws() + ":" + ws() + _spaced(x, rng) + ws() for k, x in v.items()) + "}"
    return json.dumps(v)


def test_json_accepts_valid_documents(json_rec):
    rng = random.Random(7)
    docs = []
    for _ in range(120):
        v = _rand_value(rng, 3)
        docs.append(json.dumps(v))
        docs.append(json.dumps(v, ensure_ascii=False))
        docs.append(json.dumps(v, indent=2, ensure_ascii=False))
        docs.append(json.dumps(v, separators=(",", ":")))
        docs.append(_spaced(v, rng))
    docs += ["0", "-0", "1e5", "1E+5", "-1.0e-05", '"\\u00e9\\uD83D\\ude00"', '"\\/"', "[]", "{}", "[[[]]]",
             '{"a":{"b":[1,{"c":null}]}}', "true", "false", "null", '""', "[ \t\n\r]", '{ "a" : 1 }']
    for d in docs:
        data = d.encode("utf-8")
        assert json_rec.accepts(data), d
        assert json.loads(data) is not None or d == "null"


INVALID_JSON = [
    b"", b" ", b" 1", b"1 ", b"\n[]", b"[] ", b"[1,]", b"[,1]", b"[1 2]", b"{'a': 1}", b"'a'", b"{\"a\":1,}",
    b"{\"a\"}", b"{\"a\" 1}", b"{1:2}", b"01", b"-01", b"00", b"1.", b".5", b"+1", b"-", b"1e", b"1e+", b"1.e5",
    b"0x10", b"NaN", b"Infinity", b"-Infinity", b"tru", b"nul", b"True", b"None", b"[", b"]", b"[1", b"1]",
    b"[[]", b"{", b"}", b"{\"a\":1", b"\"abc", b"\"a\x01\"", b"\"\x1f\"", b"\"a\nb\"", b"\"\t\"", b"\"\\x41\"",
    b"\"\\u12\"", b"\"\\u12G4\"", b"\"\\U0041\"", b"\"\\a\"", b"\"\xff\"", b"\"\xc0\xaf\"", b"\"\xed\xa0\x80\"",
    b"\"\xc3\"", b"1 2", b"[] []", b"\"a\"\"b\"", b"[1,,2]", b"{,}", b"{\"a\":}", b"[-]", b"1e5.0",
]


@pytest.mark.parametrize("data", INVALID_JSON)
def test_json_rejects_invalid(json_rec, data):
    assert not json_rec.accepts(data)
    try:
        json.loads(data.decode("utf-8"))
        python_ok = True
    except (ValueError, UnicodeDecodeError):
        python_ok = False
    # Python's json is laxer (NaN, surrounding whitespace); it must never be stricter
    assert not python_ok or data.strip() != data or data in (b"NaN", b"Infinity", b"-Infinity") or b"\xed" in data


def test_json_prefixes(json_rec):
    for ok in (b"[1", b'{"a"', b'{"a": tr', b"-", b"1e", b'"\\u12', b'"\xe6\x97', b"[ ", b"["):
        assert json_rec.accepts_prefix(ok), ok
    for bad in (b" ", b"01", b"[1,]", b"tx", b'"\x01', b"-a", b"[1]]", b"1 "):
        assert not json_rec.accepts_prefix(bad), bad


def test_json_unambiguous_whitespace(json_rec):
    # every whitespace run matches exactly one way: the item count stays small
    st = json_rec.run(b"[" + b" " * 200)
    assert len(st._set.items) < 60
    st = json_rec.run(b'{"a":' + b"\n" * 200 + b"1" + b"\t" * 200)
    assert len(st._set.items) < 60


def test_json_speed(json_rec):
    rng = random.Random(3)
    items = []
    while len(json.dumps(items, indent=2, ensure_ascii=False).encode()) < 2000:
        items.append(_rand_value(rng, 2))
    doc = json.dumps(items, indent=2, ensure_ascii=False).encode()
    assert len(doc) >= 2000
    t0 = time.perf_counter()
    assert json_rec.accepts(doc)
    elapsed = time.perf_counter() - t0
    assert elapsed < (10.0 if os.environ.get("CI") else 2.0), elapsed


def test_maskbench_valid_instances(json_rec):
    base = require_data("maskbench")
    files = sorted(p for p in base.iterdir() if p.suffix == ".json")[:300]
    assert files
    count = 0
    for path in files:
        entry = json.loads(path.read_text(encoding="utf-8"))
        for test in entry.get("tests", []):
            if not test.get("valid"):
                continue
            try:
                text = json.dumps(test["data"], allow_nan=False)
            except ValueError:
                continue  # NaN / Infinity are not JSON
            assert json_rec.accepts(text.encode("utf-8")), (path.name, text[:200])
            count += 1
    assert count >= 100
