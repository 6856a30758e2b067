"""The C minimizer (xmask.grammar._cp_minimize) returns exactly the automaton of its Python
twin (code_point_dfa._dfa_minimize_reference): same edge tuples, same accepting list."""

import random

import pytest

from xmask.grammar import code_point_dfa
from xmask.grammar._cp_minimize import minimize_edges
from xmask.grammar.code_point_dfa import (
    UNICODE_SCALARS,
    Dfa,
    _dfa_minimize_reference,
    dfa_complement,
    dfa_literals,
    dfa_product,
    dfa_with_length,
    dfa_word_complement,
)
from xmask.grammar.dfa_expr import dfa_from_expr
from xmask.grammar.json_schema.api import json_schema_to_grammar
from xmask.grammar.string_format import KNOWN_FORMATS, format_expr, format_superset_expr


def _same(a: Dfa) -> None:
    ref = _dfa_minimize_reference(a)
    got = minimize_edges(a.edges, a.accept)
    assert got is not None
    edges, accept = got
    assert edges == ref.edges and accept == ref.accept
    assert [type(x) for x in accept] == [type(x) for x in ref.accept]
    assert all(type(es) is tuple for es in edges)
    assert minimize_edges(a.edges, a.accept, False) == got  # Moore refinement only
    # and through the public entry (memo off): flagged minimal, and a fixpoint
    m = code_point_dfa._dfa_minimize(a)
    assert m.minimal and m.edges == ref.edges and minimize_edges(m.edges, m.accept) == (m.edges, m.accept)


def _intervals(rng, n_edges, wide):
    top = 0x10FFFF if wide else 120
    base = 0 if wide else 97
    cuts = sorted(rng.sample(range(base, top + 2), 2 * n_edges))
    return [(cuts[2 * i], cuts[2 * i + 1] - 1) for i in range(n_edges)
            if rng.random() < 0.9 or not wide]


def _random_dfa(rng, n, wide, acyclic, n_classes):
    """n states, each a copy of one of n_classes 'kinds' so that many are equivalent: a kind
    fixes acceptance and, per interval, the kind of the target; the target is any state of
    that kind (later states only, when acyclic; self-loops allowed)."""
    kind = [rng.randrange(n_classes) for _ in range(n)]
    kinds_ivs = []
    for _ in range(n_classes):
        ivs = _intervals(rng, rng.randrange(0, 4), wide)
        kinds_ivs.append([(lo, hi, rng.randrange(n_classes)) for lo, hi in ivs])
    acc_kind = [rng.random() < 0.4 for _ in range(n_classes)]
    edges = []
    for q in range(n):
        es = []
        for lo, hi, k in kinds_ivs[kind[q]]:
            pool = [t for t in range(q if acyclic else 0, n) if kind[t] == k]
            if rng.random() < 0.1:
                pool = [q]  # a self-loop whatever the kind
            if not pool or rng.random() < 0.05:
                continue  # a missing edge: goes to the dead state
            es.append((lo, hi, rng.choice(pool)))
        # split an interval now and then: the fused output must not depend on the cut
        if es and rng.random() < 0.3:
            lo, hi, t = es[0]
            if hi > lo:
                mid = rng.randrange(lo, hi)
                es[0:1] = [(lo, mid, t), (mid + 1, hi, t)]
        edges.append(tuple(es))
    accept = [acc_kind[kind[q]] if rng.random() < 0.95 else not acc_kind[kind[q]] for q in range(n)]
    return Dfa(edges, accept)


@pytest.mark.parametrize("seed", range(40))
def test_random_automata(seed):
    rng = random.Random(seed)
    for _ in range(25):
        n = rng.randrange(1, 60)
        _same(_random_dfa(rng, n, wide=rng.random() < 0.5, acyclic=rng.random() < 0.5,
                          n_classes=rng.randrange(1, 6)))


@pytest.mark.parametrize("seed", range(10))
def test_random_unstructured_automata(seed):
    """Arbitrary transitions: longer cycles, unreachable and dead states, sinks."""
    rng = random.Random(1000 + seed)
    for _ in range(30):
        n = rng.randrange(1, 40)
        edges = []
        for q in range(n):
            ivs = _intervals(rng, rng.randrange(0, 5), rng.random() < 0.5)
            edges.append(tuple((lo, hi, rng.randrange(n)) for lo, hi in ivs))
        _same(Dfa(edges, [rng.random() < 0.3 for _ in range(n)]))


def test_small_cases():
    _same(Dfa([()], [False]))
    _same(Dfa([()], [True]))
    _same(Dfa([((0, 0x10FFFF, 0),)], [True]))
    _same(Dfa([((97, 97, 1),), ()], [False, False]))          # empty language
    _same(Dfa([((97, 97, 1),), ((97, 97, 1),)], [False, True]))  # a -> a*
    _same(Dfa([((97, 97, 1),), ((97, 97, 2),), ((97, 97, 2),)], [True, True, True]))
    _same(Dfa([[(97, 97, 1)], []], [0, 1]))  # lists and int flags
    chain = 300  # a long chain closed into a cycle: many Moore rounds
    _same(Dfa([((97, 97, (q + 1) % chain),) for q in range(chain)], [q % 7 == 0 for q in range(chain)]))


def test_malformed_input_goes_to_the_python_twin():
    assert minimize_edges([((98, 98, 0), (97, 97, 0))], [True]) is None  # unsorted
    assert minimize_edges([((97, 98, 0), (98, 99, 0))], [True]) is None  # overlapping
    assert minimize_edges([((97, 97, 5),)], [True]) is None  # target out of range
    assert minimize_edges([((97, 97, 0),)], [None]) is None  # not a flag
    assert minimize_edges([((97, 97, 0),)], [True, False]) is None  # lengths differ
    d = Dfa([((98, 98, 0), (97, 97, 0))], [True])
    assert code_point_dfa._dfa_minimize(d).edges == _dfa_minimize_reference(d).edges


def test_front_end_operations():
    words = ["a", "ab", "abc", "b", "key", "keys", "kiwi", "ü", "\U0001F600x"]
    lit = dfa_literals(words)
    comp = dfa_complement(lit)
    for d in (lit, comp, dfa_complement(comp), dfa_word_complement(words[:4], UNICODE_SCALARS)):
        _same(Dfa(list(d.edges), list(d.accept)))
    for mode in ("and", "or", "diff"):
        _same(dfa_product_input(lit, comp, mode))
    _same(Dfa(list(dfa_with_length(comp, 2, 9).edges), list(dfa_with_length(comp, 2, 9).accept)))


def dfa_product_input(a, b, mode):
    """The unminimized product automaton (what dfa_product hands the minimizer)."""
    seen = []
    orig = code_point_dfa._dfa_minimize

    def record(x):
        seen.append(x)
        return orig(x)

    code_point_dfa._dfa_minimize = record
    saved, code_point_dfa.MEMO_MAX_STATES = code_point_dfa.MEMO_MAX_STATES, -1
    try:
        dfa_product(a, b, mode)
    finally:
        code_point_dfa._dfa_minimize = orig
        code_point_dfa.MEMO_MAX_STATES = saved
    return seen[-1]


SCHEMAS = [
    {"type": "string", "format": f} for f in KNOWN_FORMATS
] + [
    {"type": "string", "pattern": "^[a-z]{2,5}(-[A-Z0-9]+)*$", "minLength": 3, "maxLength": 12},
    {"type": "string", "pattern": "^(\\+|-)?\\d+(\\.\\d{1,3})?$"},
    {"type": "integer", "minimum": -1234, "maximum": 98765},
    {"type": "number", "exclusiveMinimum": 0.5, "maximum": 1e6},
    {"type": "integer", "multipleOf": 5, "minimum": 10},
    {"type": "object", "propertyNames": {"pattern": "^[a-z]+$", "maxLength": 6},
     "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
     "additionalProperties": {"type": "boolean"}},
    {"type": "object", "patternProperties": {"^x-": {"type": "string"}, "^[0-9]+$": {"type": "number"}},
     "properties": {"x-a": {"type": "string", "format": "uuid"}}, "additionalProperties": False},
    {"type": "string", "not": {"enum": ["a", "bb", "ccc"]}, "maxLength": 4},
    {"type": "string", "format": "date", "pattern": "^2024"},
]


def test_front_end_conversions(monkeypatch):
    """Every automaton the JSON Schema front end minimizes while converting schemas with
    formats, patterns, numeric bounds and key constraints."""
    seen = []
    orig = code_point_dfa._dfa_minimize

    def record(a):
        seen.append(a)
        return orig(a)

    monkeypatch.setattr(code_point_dfa, "_dfa_minimize", record)
    monkeypatch.setattr(code_point_dfa, "MEMO_MAX_STATES", -1)
    for schema in SCHEMAS:
        json_schema_to_grammar(schema)
    for f in KNOWN_FORMATS:
        for e in (format_expr(f), format_superset_expr(f)):
            if e is not None:
                dfa_from_expr(e)
    monkeypatch.setattr(code_point_dfa, "_dfa_minimize", orig)  # _same calls it too
    assert len(seen) > 50
    for a in seen:
        _same(a)
