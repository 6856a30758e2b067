"""``WordComplement``: the keys other than an object's declared names, as a ``Choice`` whose
expression is built only when something other than the compiler reads it.

Checked here: the compiler's automaton from the words themselves equals the automaton of the
expression (arrays equal: the minimal automaton is canonical), also inside larger rules and
inlined at several places; a JSON schema compile never builds the expression, and its automata
equal the ones built from the expression; equality, hashing, pickling, serialization and
printing treat it as the plain ``Choice`` of its items; the Python walks that dispatch on exact
node types see a ``Choice``.
"""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest

import xmask
from xmask.compiler.automaton import AutomatonLimits, build_automaton
from xmask.grammar import dfa_expr
from xmask.grammar.combine import rename_refs
from xmask.grammar.ir import (Bytes, Choice, Grammar, Repeat, RuleRef, Seq, WordComplement, make_choice,
                              make_seq, node_kind)
from xmask.grammar.json_schema import keys

ARRAYS = ("rule_start", "state_rule", "byte_class", "trans", "flags", "call_offsets", "call_target",
          "call_ret", "nullable")
PIECES = ["id", "_id", "user", "group", "Name", "at", "a", "b", "ab", " ", "!", "#", "[", "]", "~",
          "x y", ""]


def _expanded(e):
    """``e`` with every WordComplement replaced by the plain Choice of its items."""
    if type(e) is WordComplement:
        return Choice(e.items)
    if isinstance(e, (Seq, Choice)):
        return node_kind(e)(tuple(_expanded(x) for x in e.items))
    if isinstance(e, Repeat):
        return Repeat(_expanded(e.item), e.min, e.max)
    return e


def _same_automaton(a, b) -> bool:
    """Equal automata, read byte by byte: the trie's edges may split the byte classes finer
    than the expression's labels (which merge the characters leading to equal subtries), and
    the minimal automaton, numbered in byte order, is the same either way."""
    if a.n_states != b.n_states:
        return False
    rows_a = a.trans.reshape(a.n_states, a.n_classes)[:, a.byte_class]
    rows_b = b.trans.reshape(b.n_states, b.n_classes)[:, b.byte_class]
    return np.array_equal(rows_a, rows_b) and all(
        np.array_equal(getattr(a, f), getattr(b, f)) for f in ARRAYS if f not in ("byte_class", "trans"))


def _random_words(rng):
    return list({"".join(rng.choice(PIECES) for _ in range(rng.randint(0, 4)))
                 for _ in range(rng.randint(0, 10))})


def _grammars(words, alphabet):
    """(the complement, a grammar of it alone), then (the complement, a grammar where it is
    part of a rule inlined at two places: the NFA builder's memo of an expansion pastes the
    second), each with a fresh WordComplement."""
    wc = dfa_expr.word_complement_expr(words, alphabet, None)
    yield wc, {"root": wc}
    wc = dfa_expr.word_complement_expr(words, alphabet, None)
    key = make_seq([Bytes(b'"'), make_choice([wc, Seq((Bytes(b"\\"), Repeat(Bytes(b"u"), 1, 2)))]),
                    Bytes(b'"')])
    yield wc, {"root": make_seq([Bytes(b"{"), RuleRef("k"), Bytes(b":"), RuleRef("k"), Bytes(b"}")]),
               "k": key}


@pytest.mark.parametrize("seed", range(3))
def test_automaton_from_the_words_equals_the_expression_one(seed):
    rng = random.Random(seed)
    for it in range(150):
        words = _random_words(rng)
        alphabet = keys._LIT
        if it % 3 == 0:
            alphabet = ((97, 98), (99, 99), (101, 122))  # adjacent ranges, "d" missing
            words = ["".join(ch for ch in w if ch in "abcefgz") for w in words]
        for wc, rules in _grammars(words, alphabet):
            assert type(wc) is WordComplement
            # (limits where the inliner decides alike: its size of a WordComplement is an
            # estimate of the expression's)
            both = (AutomatonLimits(inline_size=0), AutomatonLimits(inline_size=10**6))
            fast = [build_automaton(Grammar(rules), limits) for limits in both]
            assert "items" not in wc.__dict__  # the compiler never built the expression
            flat = Grammar({n: _expanded(e) for n, e in rules.items()})
            for limits, got in zip(both, fast):
                assert _same_automaton(got, build_automaton(flat, limits)), (words, alphabet)


def test_non_ascii_or_foreign_characters_keep_the_expression():
    assert type(dfa_expr.word_complement_expr(["é"], ((0x20, 0xFF),), None)) is not WordComplement
    with pytest.raises(ValueError, match="outside the alphabet"):
        dfa_expr.word_complement_expr(['a"b'], keys._LIT, None)


SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string"}, "namespace": {"type": "string"}, "kind": {"enum": ["a", "b"]},
    "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}, "": {"type": "null"}}},
}}


def test_a_schema_compile_never_builds_the_expression_and_gets_the_same_automaton(monkeypatch):
    built = []
    real = dfa_expr._expand_complement

    def counted(words, alphabet):
        built.append(words)
        return real(words, alphabet)

    info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
    monkeypatch.setattr(dfa_expr, "_expand_complement", counted)
    compiler = xmask.GrammarCompiler(info, cache_enabled=False)
    lazy = compiler.compile_json_schema(SCHEMA, strict_mode=False)._resolved()
    assert not built
    # the same grammar with every complement as its expression
    expanded = Grammar.of(xmask.Grammar.from_json_schema(SCHEMA, strict_mode=False))
    assert any(type(e) is WordComplement for r in expanded.rules.values() for e in _nodes(r))
    eager = compiler.compile_grammar(Grammar({n: _expanded(e) for n, e in expanded.rules.items()},
                                             root=expanded.root))
    assert built  # (_expanded read the items)
    assert _same_automaton(lazy._automaton, eager._automaton)
    for text in ['{"name": "x", "other": 1}', '{"spec": {"": null, "r": []}}', '{"nam": 2}']:
        assert xmask.GrammarMatcher(lazy).accept_string(text)
    for text in ['{"name": "x", "name": "y"}', '{"name": 1}', '{"spec": {"replicas": "x"}}']:
        assert not xmask.GrammarMatcher(lazy).accept_string(text)


def _nodes(e):
    out, stack = [], [e]
    while stack:
        x = stack.pop()
        out.append(x)
        if type(x) in (Seq, Choice):
            stack.extend(x.items)
        elif type(x) is Repeat:
            stack.append(x.item)
    return out


def test_equality_hashing_pickling_serialization_and_printing_see_a_choice():
    wc = dfa_expr.word_complement_expr(["ab", "b", ""], keys._LIT, None)
    plain = Choice(wc.items)
    assert wc == plain and plain == wc and hash(wc) == hash(plain)
    again = dfa_expr.word_complement_expr(["b", "ab", ""], keys._LIT, None)
    assert again == wc and "items" not in again.__dict__  # compared by words, not built
    assert wc != dfa_expr.word_complement_expr(["ab"], keys._LIT, None)
    assert node_kind(wc) is Choice and node_kind(plain) is Choice and node_kind(Bytes(b"a")) is Bytes

    g = Grammar.of(xmask.Grammar.from_json_schema(SCHEMA, strict_mode=False))
    assert pickle.loads(pickle.dumps(g)) == g
    back = xmask.Grammar.deserialize_json(xmask.Grammar.of(g).serialize_json())
    assert Grammar.of(back) == g
    flat = Grammar({n: _expanded(e) for n, e in g.rules.items()}, root=g.root)
    assert str(g) == str(flat) and g == flat and hash(g) == hash(flat)


def test_python_walks_that_dispatch_on_exact_types_read_it_as_a_choice():
    wc = dfa_expr.word_complement_expr(["ab"], ((97, 98),), None)
    rule = make_seq([RuleRef("x"), wc])
    renamed = rename_refs(rule, {"x": "y"})
    assert str(Grammar({"root": renamed, "y": Bytes(b"q")})) == \
        str(Grammar({"root": make_seq([RuleRef("y"), Choice(wc.items)]), "y": Bytes(b"q")}))
    # Lark: a %json object with additional keys, through left-recursion elimination
    obj = '{"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": true}'
    lark = f'start: item\nitem: item "," %json {obj} | %json {obj}'
    compiled = xmask.GrammarCompiler(xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())) \
        .compile_lark(lark)
    assert xmask.GrammarMatcher(compiled).accept_string('{"n": 1},{"n": 2, "m": []}')
    assert not xmask.GrammarMatcher(compiled).accept_string('{"n": 1, "n": 2}')


def test_reference_walk_does_not_expand_and_finds_what_the_expansion_holds():
    """``iter_refs`` does not enter a WordComplement (its expression holds no reference, as
    the compiler's own scans assume); ``iter_nodes`` still visits the expression by default."""
    from xmask.grammar.ir import RuleRef, Seq, iter_nodes, iter_refs

    wc = dfa_expr.word_complement_expr(["ab", "b", ""], keys._LIT, None)
    expr = Seq((RuleRef("x"), wc, RuleRef("y")))
    assert sorted(iter_refs(expr)) == ["x", "y"]
    assert "items" not in wc.__dict__
    assert not [n for n in iter_nodes(Choice(wc.items)) if type(n) is RuleRef]
    inside = list(iter_nodes(expr))
    assert "items" in wc.__dict__ and len(inside) > 4
