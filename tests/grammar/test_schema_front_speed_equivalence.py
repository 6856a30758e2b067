"""The schema front end's fast paths give exactly what the general paths give.

The JSON Schema converter and its DFA toolkit take shortcuts for speed: the additional-key
automaton of an object built directly as a word complement, one-pass minimization of DFAs
whose only cycles are self-loops, emission without the SCC pass, product and length
automata explored along the edges, per-node object units, process-wide memos of pattern and
format automata and of JSON spellings, cached IR hashes, the array and object generators
of the any-value rule.  Each shortcut is checked here against the general code it bypasses
(still in the modules, or a small reference below): the same grammar, serialized, on a
MaskBench sample and on the JSON-Schema-Test-Suite schemas, and the same automata on random
inputs.  The word complement alone has a shape of its own (one accept-all loop); it is
checked for the same language.
"""

from __future__ import annotations

import itertools
import json
import pickle
import random

import pytest
from conftest import require_data

from xmask.errors import GrammarError, GrammarLimitError
from xmask import Grammar
from xmask.grammar import code_point_dfa, dfa_expr, ir, json_schema, rule_sink, string_format
from xmask.grammar.ir import Bytes, CharClass, Choice, Repeat, RuleRef, Seq
from xmask.grammar.json_schema import arrays, converter, keys, merge, merged, numbers, objects, strings
from xmask.grammar.json_schema.layout import Layout
from xmask.grammar.code_point_dfa import (
    Dfa,
    dfa_complement,
    dfa_literals,
    dfa_minimize,
    dfa_product,
    dfa_with_length,
    dfa_word_complement,
)

_LIT = keys._LIT
# the memos of pure functions of automata and of their emissions (by content)
CONTENT_MEMOS = (code_point_dfa._MINIMIZED, code_point_dfa._PRODUCTS, keys._KEY_SPLITS, keys._PRODUCTS,
                 dfa_expr._TO_EXPR_MEMO, dfa_expr._COMPLEMENT_MEMO)
OPTIONS = [dict(strict_mode=False, any_whitespace=True), dict(strict_mode=True, any_whitespace=False),
           dict(strict_mode=False, lenient=True)]


# ---------------------------------------------------------------------------- references


def _split_points(interval_lists):
    cuts = sorted({x for ranges in interval_lists for lo, hi in ranges for x in (lo, hi + 1)})
    return [(cuts[i], cuts[i + 1] - 1) for i in range(len(cuts) - 1)]


def _explore(start, step, accepting, alphabet, max_states, message):
    """Breadth-first exploration of ``step`` over alphabet intervals (the general way)."""
    ids, keys, edges = {start: 0}, [start], []
    i = 0
    while i < len(keys):
        out = []
        for lo, hi in alphabet:
            nxt = step(keys[i], lo)
            if nxt is None:
                continue
            t = ids.get(nxt)
            if t is None:
                if len(keys) >= max_states:
                    raise GrammarLimitError(message.format(max_states))
                t = ids[nxt] = len(keys)
                keys.append(nxt)
            out.append((lo, hi, t))
        edges.append(tuple(out))
        i += 1
    return dfa_minimize(Dfa(edges, [bool(accepting(k)) for k in keys]))


def reference_product(a: Dfa, b: Dfa, mode: str, max_states: int) -> Dfa:
    def step(key, cp):
        p, q = key
        ta = a.step(p, cp) if p >= 0 else -1
        tb = b.step(q, cp) if q >= 0 else -1
        if (mode != "or" and ta < 0) or (mode == "and" and tb < 0) or (ta < 0 and tb < 0):
            return None
        return ta, tb

    def accepting(key):
        fa = key[0] >= 0 and a.accept[key[0]]
        fb = key[1] >= 0 and b.accept[key[1]]
        return {"and": fa and fb, "or": fa or fb, "diff": fa and not fb}[mode]

    alphabet = _split_points([[(x, y) for x, y, _ in es] for es in a.edges + b.edges])
    return _explore((0, 0), step, accepting, alphabet, max_states, "automaton product exceeds {} states")


def reference_with_length(a: Dfa, lo: int, hi, max_states: int) -> Dfa:
    cap = hi if hi is not None else lo

    def step(key, cp):
        q, n = key
        t = a.step(q, cp)
        if t < 0 or (hi is not None and n >= hi):
            return None
        return t, min(n + 1, cap)

    alphabet = _split_points([[(x, y) for x, y, _ in es] for es in a.edges])
    return _explore((0, 0), step, lambda k: a.accept[k[0]] and k[1] >= lo, alphabet, max_states,
                    "automaton exceeds {} states")


def restricted(d: Dfa, ranges) -> Dfa:
    return Dfa([tuple(sorted((max(lo, a), min(hi, b), t) for lo, hi, t in es for a, b in ranges
                             if max(lo, a) <= min(hi, b))) for es in d.edges], list(d.accept))


def random_dfa(rng: random.Random, n: int, self_loops_only: bool = False) -> Dfa:
    edges = []
    for q in range(n):
        es, lo = [], rng.choice([0, 5, 40])
        for _ in range(rng.randint(0, 4)):
            a = lo + rng.randint(0, 3)
            b = a + rng.randint(0, 3)
            t = rng.randint(q, n - 1) if self_loops_only else rng.randint(0, n - 1)
            es.append((a, b, t))
            lo = b + 1 + (1000 if rng.random() < 0.2 else 0)
        edges.append(tuple(es))
    return Dfa(edges, [rng.random() < 0.4 for _ in range(n)])


def canon(d: Dfa):
    return d.edges, d.accept


# ---------------------------------------------------------------------------- the general paths


def json_schema_modules():
    import importlib
    import pkgutil

    return [importlib.import_module(f"{json_schema.__name__}.{info.name}")
            for info in pkgutil.iter_modules(json_schema.__path__)]


@pytest.fixture
def general_paths(monkeypatch):
    """Switch every shortcut off (``yield``s; the converter then takes the general paths)."""
    # (the word complement of the declared keys stays: its shape, N | D [LIT]*, is not the
    # general emission's; its language is checked against it by test_key_emission_matches_the_
    # general_automaton and test_word_complement_expr_is_the_word_complement)
    monkeypatch.setattr(code_point_dfa, "MEMO_MAX_STATES", -1)  # no memo by automaton content
    monkeypatch.setattr(code_point_dfa, "_ONE_PASS", False)
    monkeypatch.setattr(dfa_expr, "_acyclic_order", lambda n, grouped: None)
    monkeypatch.setattr(strings, "_shared", lambda memo, key, build: build())
    monkeypatch.setattr(numbers, "_magnitude_plain_dfa", numbers._magnitude_plain_dfa_uncached)
    monkeypatch.setattr(keys, "encode_ranges_canonical", lambda ranges, escape_all=None:
                        string_format._encode_ranges_canonical(ir.merge_ranges(ranges), escape_all))
    # every module of the converter that calls them
    for mod in [m for m in json_schema_modules() if hasattr(m, "dfa_product")]:
        monkeypatch.setattr(mod, "dfa_product", lambda a, b, mode="and", max_states=code_point_dfa.MAX_DFA_STATES:
                            reference_product(a, b, mode, max_states))
        if not hasattr(mod, "dfa_with_length"):
            continue
        monkeypatch.setattr(mod, "dfa_with_length", lambda a, lo, hi, max_states=code_point_dfa.MAX_DFA_STATES:
                            reference_with_length(a, lo, hi, max_states))

    def merge_object_every_time(self, m, obj, n, p):
        unit, has_addl = self._object_unit(m, obj, n, p)
        if has_addl:
            m.has_addl = True
        m.obj_units.append(unit)

    monkeypatch.setattr(merge.Merger, "_merge_object", merge_object_every_time)
    # the any-value rule through the general array and object generators
    monkeypatch.setattr(arrays.Arrays, "gen_any_array", lambda self, depth, hint:
                        self.gen_array(merged.Merged(), depth, hint))
    monkeypatch.setattr(objects.Objects, "gen_any_object", lambda self, m, depth, hint:
                        self.gen_object(m, depth, hint))
    yield


def outcome(schema, **options):
    """The serialized grammar (and the loosenings of lenient mode), or the error (type,
    message, JSON pointer)."""
    try:
        g, report = json_schema.json_schema_to_grammar_with_report(schema, **options)
    except (GrammarError, ValueError, TypeError) as e:
        return type(e).__name__, str(e), getattr(e, "path", None)
    return g.serialize_json() if not report else (g.serialize_json(), report)


def maskbench_sample(n: int = 100) -> list:
    files = sorted(require_data("maskbench").glob("*.json"))
    return [(f.name, json.loads(f.read_text(encoding="utf-8"))["schema"])
            for f in files[:: max(1, len(files) // n)]]


def jsts_schemas() -> list:
    root = require_data("jsts", "draft2020-12")
    out = []
    for f in sorted(root.rglob("*.json")):
        for i, group in enumerate(json.loads(f.read_text(encoding="utf-8"))):
            out.append((f"{f.relative_to(root)}#{i}", group["schema"]))
    return out


def _fast_outcomes(schemas, options):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {name: outcome(s, **options) for name, s in schemas}


@pytest.mark.parametrize("options", OPTIONS, ids=["loose", "strict", "lenient"])
def test_maskbench_sample_same_grammar_as_general_paths(options, request):
    schemas = maskbench_sample()
    fast = _fast_outcomes(schemas, options)
    request.getfixturevalue("general_paths")
    slow = _fast_outcomes(schemas, options)
    differ = [name for name in fast if fast[name] != slow[name]]
    assert not differ, differ[:10]
    assert sum(not isinstance(v, tuple) or len(v) == 2 for v in fast.values()) > len(fast) // 2  # mostly grammars


def test_jsts_schemas_same_grammar_as_general_paths(request):
    schemas = jsts_schemas()
    options = OPTIONS[0]
    fast = _fast_outcomes(schemas, options)
    request.getfixturevalue("general_paths")
    slow = _fast_outcomes(schemas, options)
    differ = [name for name in fast if fast[name] != slow[name]]
    assert not differ, differ[:10]


def test_warm_memos_same_grammar_as_cold():
    """The process-wide memos (pattern/format automata, spellings, rule names) never change a
    grammar: converting with them filled by other schemas equals converting after a clear."""
    schemas = [("num", {"type": "array", "items": {"type": "number", "minimum": 0.5, "maximum": 100}}),
               ("fmt", {"type": "object", "properties": {"when": {"format": "date-time"},
                                                         "mail": {"format": "email", "maxLength": 40},
                                                         "code": {"pattern": "^[A-Z]{3}$"}}}),
               ("pat", {"type": "array", "items": {"type": "string", "pattern": "^[A-Z]{3}$",
                                                   "minLength": 2}})]
    warm = {name: outcome(s, strict_mode=False) for name, s in schemas}
    warm2 = {name: outcome(s, strict_mode=False) for name, s in schemas}
    for memo in (strings._SHARED_DFAS, strings._SHARED_ENCODINGS,
                 string_format._CANONICAL_MEMO, string_format._PLAIN_MEMO, rule_sink._CLEAN_NAMES,
                 numbers._MAGNITUDE_DFAS, dfa_expr._PLAIN_LABELS, dfa_expr._PLAIN_SIZES,
                 dfa_expr._GAPS, code_point_dfa._LITERALS) + CONTENT_MEMOS:
        memo.clear()
    cold = {name: outcome(s, strict_mode=False) for name, s in schemas}
    assert warm == warm2 == cold


def test_threads_sharing_the_memos_get_the_same_grammars():
    """Conversions running in threads at once (the memos are process-wide) give what one thread
    gives."""
    from concurrent.futures import ThreadPoolExecutor

    schemas = maskbench_sample(40)
    alone = _fast_outcomes(schemas, OPTIONS[0])
    for memo in (strings._SHARED_DFAS, strings._SHARED_ENCODINGS, string_format._CANONICAL_MEMO,
                 string_format._PLAIN_MEMO,
                 numbers._MAGNITUDE_DFAS, dfa_expr._PLAIN_LABELS, dfa_expr._PLAIN_SIZES,
                 dfa_expr._GAPS, code_point_dfa._LITERALS) + CONTENT_MEMOS:
        memo.clear()
    with ThreadPoolExecutor(4) as pool:
        # (not lenient: nothing warns, so no warnings filter is touched from the threads)
        together = list(pool.map(lambda item: (item[0], outcome(item[1], **OPTIONS[0])), schemas * 2))
    assert all(alone[name] == got for name, got in together)


# ---------------------------------------------------------------------------- automata


@pytest.mark.parametrize("seed", range(4))
def test_word_complement_is_the_restricted_complement_of_the_literals(seed):
    rng = random.Random(seed)
    alphabet = "ab c!~Z\x7e "
    for _ in range(400):
        words = list({"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 5)))
                      for _ in range(rng.randint(1, 8))})
        general = dfa_minimize(restricted(dfa_complement(dfa_literals(words)), _LIT))
        assert canon(dfa_word_complement(words, _LIT)) == canon(general), words


def test_word_complement_rejects_characters_outside_the_alphabet():
    with pytest.raises(ValueError):
        dfa_word_complement(["a\"b"], _LIT)
    with pytest.raises(ValueError):
        dfa_word_complement(["\u00e9"], _LIT)


def _inline(e, rules):
    """``e`` with its rule references replaced by the rules' bodies (none recurses here)."""
    if isinstance(e, RuleRef):
        return _inline(rules[e.name], rules)
    if isinstance(e, (Seq, Choice)):
        return ir.node_kind(e)(tuple(_inline(x, rules) for x in e.items))  # (a WordComplement: a Choice)
    if isinstance(e, Repeat):
        return Repeat(_inline(e.item, rules), e.min, e.max)
    return e


def _language(e, rules):
    return canon(dfa_minimize(dfa_expr.dfa_from_expr(_inline(e, rules))))


def test_key_emission_matches_the_general_automaton():
    """emit_key_complement has the language of emit_key_dfa(complement of the literals)."""
    rng = random.Random(7)
    names = ["apiVersion", "kind", "metadata", "spec", "status", "name", "namespace", "labels",
             "a", "ab", "abc", "fooName", "barName", "bazName", "x y", "~", "!"]
    for k in range(1, 12):
        words = rng.sample(names, k)
        fast = converter.Converter({}, Layout(True, None, None, None), strict_mode=False,
                                   lenient=False, any_order=False)
        slow = converter.Converter({}, Layout(True, None, None, None), strict_mode=False,
                                   lenient=False, any_order=False)
        e_fast = fast.keys.emit_key_complement(words, "obj_key")
        e_slow = slow.keys.emit_key_dfa(dfa_complement(dfa_literals(words)), "obj_key")
        assert _language(e_fast, fast.ctx.rules) == _language(e_slow, slow.ctx.rules), words


@pytest.mark.parametrize("seed", range(3))
def test_word_complement_expr_is_the_word_complement(seed):
    """word_complement_expr has the language of dfa_word_complement (as dfa_to_expr emits
    it, rules inlined), names no rules, and has one loop (``N | D [alphabet]*``)."""
    rng = random.Random(seed)
    pieces = ["id", "_id", "user", "group", "Name", "at", "created", "a", "b", " ", "!", "#", "[",
              "]", "~", "x y", ""]
    for it in range(600):
        words = list({"".join(rng.choice(pieces) for _ in range(rng.randint(0, 4)))
                      for _ in range(rng.randint(0, 12))})
        alphabet = _LIT
        if it % 3 == 0:
            alphabet = [(97, 98), (99, 99), (101, 122)]  # adjacent ranges fuse, "d" is missing
            words = ["".join(ch for ch in w if ch in "abcefgz") for w in words]
        sink = rule_sink.RuleSink()
        direct = dfa_expr.word_complement_expr(words, alphabet, sink, "k")
        assert not sink.rules
        general = rule_sink.RuleSink()
        expected = dfa_expr.dfa_to_expr(dfa_word_complement(words, alphabet), general, "k")
        assert _language(direct, {}) == _language(expected, general.rules), words
        assert sum(isinstance(x, Repeat) for x in ir.iter_nodes(direct)) <= 1, words
    with pytest.raises(ValueError):
        dfa_expr.word_complement_expr(["a\"b"], _LIT, None)


def _reference_dfa_from_expr(expr):
    """Subset construction testing every NFA edge against every interval (the general way)."""
    nfa = dfa_expr._Nfa()
    start = nfa.new()
    end = nfa.build(expr, start)

    def closure(states):
        seen, stack = set(states), list(states)
        while stack:
            for t in nfa.eps[stack.pop()]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)

    def moves(cur):
        sym = [(rs, t) for q in cur for rs, t in nfa.sym[q]]
        for lo, hi in _split_points([rs for rs, _ in sym]):
            targets = [t for rs, t in sym if any(a <= lo <= b for a, b in rs)]
            if targets:
                yield lo, hi, closure(targets)

    return dfa_minimize(code_point_dfa.dfa_explore(closure([start]), moves, lambda k: end in k))


def test_dfa_from_expr_matches_the_general_subset_construction():
    from xmask.grammar.regex import regex_to_expr

    patterns = ["^[a-z]+$", "ab|ac", "^(\\d{3})-(\\d{4})$", "[A-Z][a-z]*( [A-Z][a-z]*)*", "^\\w+@\\w+\\.com$",
                "(a|b)*abb", "^[^\\s]{2,5}$", "x?y+z{0,3}", "^(?:[0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$", "[\\u00e0-\\u00ff]+b"]
    rng = random.Random(11)
    atoms = ["a", "b", "[a-c]", "[^a]", "\\d", ".", "(a|bc)", "[x-z]"]
    for _ in range(150):
        patterns.append("".join(rng.choice(atoms) + rng.choice(["", "*", "+", "?", "{1,3}"])
                                for _ in range(rng.randint(1, 5))))
    for p in patterns:
        e = regex_to_expr(p, search=rng.random() < 0.5)
        assert canon(dfa_expr.dfa_from_expr(e)) == canon(_reference_dfa_from_expr(e)), p


def _reference_make_seq(items):
    out, run = [], []
    for item in items:
        for p in (item.items if type(item) is Seq else (item,)):
            if type(p) is Bytes:
                if p.data:
                    run.append(p)
                continue
            if run:
                out.append(run[0] if len(run) == 1 else Bytes(b"".join(b.data for b in run)))
                run = []
            out.append(p)
    if run:
        out.append(run[0] if len(run) == 1 else Bytes(b"".join(b.data for b in run)))
    return ir.EPSILON if not out else out[0] if len(out) == 1 else Seq(tuple(out))


def _random_expr(rng, depth=0):
    k = rng.randint(0, 6)
    if k == 0:
        return Bytes(rng.choice([b"", b"a", b"bc"]))
    if k == 1:
        return CharClass(((97, 98),))
    if k == 2 and depth < 3:
        return Seq(tuple(_random_expr(rng, depth + 1) for _ in range(rng.randint(0, 4))))
    if k == 3 and depth < 3:
        return Choice(tuple(_random_expr(rng, depth + 1) for _ in range(rng.randint(1, 3))))
    if k == 4:
        return RuleRef(rng.choice("xyz"))
    if k == 5 and depth < 3:
        return Repeat(_random_expr(rng, depth + 1), 0, None)
    return ir.EPSILON


def test_make_seq_matches_the_reference():
    # (make_seq / make_choice run in C, _ir_build.pyx: the nodes they make must be the ones the
    # classes make, down to repr, hash and pickling)
    rng = random.Random(5)
    for _ in range(5000):
        items = [_random_expr(rng) for _ in range(rng.randint(0, 5))]
        got, want = ir.make_seq(iter(items)), _reference_make_seq(items)
        assert got == want and type(got) is type(want), items
        assert (repr(got), hash(got)) == (repr(want), hash(want))
        assert pickle.loads(pickle.dumps(got)) == want
        flat = [x for it in items for x in (it.items if type(it) is Choice else (it,))]
        assert ir.make_choice(items) == (flat[0] if len(flat) == 1 else Choice(tuple(flat)))
    x = Bytes(b"q")
    assert ir.make_seq([]) is ir.EPSILON and ir.make_seq([Bytes(b""), x, Seq(())]) is x


def _reference_first_undefined_ref(rules):
    seen = set()
    for rule, expr in rules.items():
        stack = [expr]
        while stack:
            e = stack.pop()
            if type(e) is RuleRef:
                if e.name not in rules:
                    return rule, e.name
                continue
            items = e.items if type(e) in (Seq, Choice) else (e.item,) if type(e) is Repeat else ()
            for item in items:
                if type(item) not in (Bytes, CharClass) and id(item) not in seen:
                    seen.add(id(item))
                    stack.append(item)
    return None


def test_undefined_reference_check_matches_the_reference():
    rng = random.Random(9)
    for _ in range(3000):
        shared = _random_expr(rng)
        rules = {name: Choice((_random_expr(rng), shared)) for name in rng.sample("rxyz", rng.randint(1, 4))}
        assert ir.first_undefined_ref(rules) == _reference_first_undefined_ref(rules)
        want = _reference_first_undefined_ref(rules)
        if want is None:
            Grammar(rules, root=next(iter(rules)))
        else:
            with pytest.raises(GrammarError, match=f"rule '{want[1]}' is referenced but not defined"):
                Grammar(rules, root=next(iter(rules)))


@pytest.mark.parametrize("seed", range(4))
def test_minimize_one_pass_equals_moore(seed, monkeypatch):
    rng = random.Random(seed)
    dfas = [random_dfa(rng, rng.randint(1, 9), self_loops_only=rng.random() < 0.7) for _ in range(500)]
    fast = [canon(dfa_minimize(d)) for d in dfas]
    monkeypatch.setattr(code_point_dfa, "_ONE_PASS", False)
    slow = [canon(dfa_minimize(Dfa(list(d.edges), list(d.accept)))) for d in dfas]
    assert fast == slow


def test_minimize_output_is_canonical():
    rng = random.Random(3)
    for _ in range(300):
        m = dfa_minimize(random_dfa(rng, rng.randint(1, 8)))
        assert dfa_minimize(m) is m
        assert canon(dfa_minimize(Dfa(list(m.edges), list(m.accept)))) == canon(m)


def _result(build):
    """The canonical automaton ``build()`` returns, or its limit error's message."""
    try:
        return canon(build())
    except GrammarLimitError as e:
        return str(e)


@pytest.mark.parametrize("seed", range(3))
def test_product_and_length_equal_the_general_exploration(seed):
    rng = random.Random(seed)
    for _ in range(500):
        a, b = random_dfa(rng, rng.randint(1, 7)), random_dfa(rng, rng.randint(1, 7))
        cap = rng.choice([4, 20_000])
        for mode in ("and", "or", "diff"):
            assert (_result(lambda: dfa_product(a, b, mode, max_states=cap))
                    == _result(lambda: reference_product(a, b, mode, cap)))
        lo = rng.randint(0, 4)
        hi = rng.choice([None, lo, lo + 3])
        assert (_result(lambda: dfa_with_length(a, lo, hi, max_states=cap))
                == _result(lambda: reference_with_length(a, lo, hi, cap)))


def test_emission_without_scc_pass_equals_general(monkeypatch):
    rng = random.Random(11)
    dfas = [dfa_minimize(random_dfa(rng, rng.randint(1, 9), self_loops_only=True)) for _ in range(300)]

    def emit(d):
        sink = rule_sink.RuleSink({})
        return dfa_expr.dfa_to_expr(d, sink, "h"), sink.rules

    fast = [emit(d) for d in dfas]
    monkeypatch.setattr(dfa_expr, "_acyclic_order", lambda n, grouped: None)
    assert [emit(d) for d in dfas] == fast


# ---------------------------------------------------------------------------- IR


def _field_hash(e):
    return hash(tuple(getattr(e, f) for f in e.__dataclass_fields__))


def test_ir_hash_is_the_dataclass_hash_and_is_not_pickled():
    e = Seq((Bytes(b"a"), Repeat(Choice((RuleRef("x"), CharClass(((1, 5),), True))), 0, None)))
    for node in (e, e.items[0], e.items[1], e.items[1].item, e.items[1].item.items[1], RuleRef("x")):
        assert hash(node) == _field_hash(node) == hash(node)
    back = pickle.loads(pickle.dumps(e))
    assert "_h" not in back.__dict__  # (string hashes differ between processes)
    assert back == e and hash(back) == hash(e)


def test_undefined_reference_error_names_the_first_rule_and_reference():
    shared = Seq((Bytes(b"x"), RuleRef("b")))
    rules = {"root": Choice((shared, RuleRef("a"))), "a": Seq((shared, RuleRef("missing1"))),
             "b": Repeat(RuleRef("missing2"), 0, None)}
    with pytest.raises(GrammarError) as e:
        Grammar(rules)
    # the reference the rule-by-rule walk of iter_refs meets first
    first = next((name, ref) for name, x in rules.items() for ref in ir.iter_refs(x) if ref not in rules)
    assert (e.value.rule, str(e.value).split("'")[1]) == first
    g = Grammar({"root": Seq((shared, shared)), "b": Bytes(b"y")})
    assert g.root == "root"


def test_make_seq_and_choice_simplify_as_before():
    from xmask.grammar.ebnf import make_choice, make_seq

    a, b = Bytes(b"a"), Bytes(b"b")
    assert make_seq([a, Bytes(b""), Seq((b, RuleRef("r"))), a]) == Seq((Bytes(b"ab"), RuleRef("r"), a))
    assert make_seq([Seq(()), Bytes(b"")]) == Seq(())
    assert make_seq([RuleRef("r")]) == RuleRef("r")
    assert make_choice([Choice((a, b)), RuleRef("r")]) == Choice((a, b, RuleRef("r")))
    assert make_choice([a]) is a
    assert list(itertools.chain(make_seq([a, b]).data)) == list(b"ab")
