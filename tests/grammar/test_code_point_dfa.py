"""Code point automata (xmask.grammar.code_point_dfa): building, combining, minimizing."""

import itertools
import random

import pytest

from xmask.errors import GrammarLimitError
from xmask.grammar import code_point_dfa
from xmask.grammar.code_point_dfa import (
    UNICODE_SCALARS,
    Dfa,
    dfa_complement,
    dfa_explore,
    dfa_from_step,
    dfa_literals,
    dfa_minimize,
    dfa_product,
    dfa_with_length,
    dfa_word_complement,
    merge_edges,
    split_points,
)
from xmask.grammar.dfa_expr import dfa_from_expr
from xmask.grammar.ir import Bytes, CharClass, Repeat, Seq

WORDS = ["".join(w) for k in range(5) for w in itertools.product("abc", repeat=k)]


def test_merge_edges_sorts_and_fuses_neighbours_with_one_target():
    assert merge_edges([(3, 5, 1), (0, 2, 1), (6, 6, 2), (8, 9, 2)]) == ((0, 5, 1), (6, 6, 2), (8, 9, 2))
    assert merge_edges([]) == ()


def test_split_points_cut_where_any_range_starts_or_ends():
    assert split_points([[(0, 9)], [(5, 20)]]) == [(0, 4), (5, 9), (10, 20)]
    # a gap between two ranges of one list is an interval of its own
    assert split_points([[(0, 1), (5, 6)]]) == [(0, 1), (2, 4), (5, 6)]


def test_literals_complement_product():
    names = dfa_literals(["a", "ab", "xyz"])
    assert names.matches("ab") and not names.matches("abc")
    comp = dfa_complement(names)
    assert comp.matches("") and comp.matches("abc") and not comp.matches("xyz")
    assert comp.matches("\U0010ffff") and not comp.step(0, 0xD800) >= 0  # scalars only
    d = dfa_from_expr(Seq((Repeat(CharClass(((97, 122),)), 1, None),)))
    both = dfa_product(d, names, "diff")
    assert both.matches("abc") and not both.matches("a") and not both.matches("")


@pytest.mark.parametrize("mode", ["and", "or", "diff"])
def test_product_is_the_boolean_combination(mode):
    a = dfa_literals(["", "a", "ab", "abc", "c"])
    b = dfa_from_expr(Repeat(Bytes(b"ab"), 0, None))
    d = dfa_product(a, b, mode)
    op = {"and": lambda x, y: x and y, "or": lambda x, y: x or y, "diff": lambda x, y: x and not y}[mode]
    assert [d.matches(w) for w in WORDS] == [op(a.matches(w), b.matches(w)) for w in WORDS]


def test_with_length_keeps_the_words_of_a_length_range():
    d = dfa_from_expr(Repeat(CharClass(((48, 57),)), 1, None))
    d2 = dfa_with_length(d, 2, 4)
    assert [d2.matches("1" * n) for n in range(6)] == [False, False, True, True, True, False]
    d3 = dfa_with_length(d, 3, None)
    assert [d3.matches("1" * n) for n in range(6)] == [False, False, False, True, True, True]
    with pytest.raises(GrammarLimitError):
        dfa_with_length(d, 0, 50, max_states=10)


def test_word_complement_equals_complement_of_the_literals():
    words = ["a", "ab", "ba", "abc"]
    alphabet = [(97, 99)]
    direct = dfa_word_complement(words, alphabet)
    general = dfa_product(dfa_complement(dfa_literals(words), alphabet), dfa_complement(dfa_literals([]), alphabet))
    assert (direct.edges, direct.accept) == (general.edges, general.accept)
    assert [direct.matches(w) for w in WORDS] == [w not in words for w in WORDS]
    with pytest.raises(ValueError, match="outside the alphabet"):
        dfa_word_complement(["az"], alphabet)


def test_from_step_explores_a_counter():
    # words over {a, b} with as many a's as b's, up to a difference of 2
    def step(k, cp):
        k += 1 if cp == 97 else -1
        return k if abs(k) <= 2 else None

    d = dfa_from_step(0, step, lambda k: k == 0, [(97, 97), (98, 98)])
    assert [d.matches(w) for w in ("", "ab", "ba", "aabb", "a", "aaabbb")] == [True, True, True, True, False, False]


def test_minimize_is_canonical_and_flags_its_output():
    d = Dfa([((97, 97, 1), (98, 98, 2)), ((99, 99, 3),), ((99, 99, 3),), ()], [False, False, False, True])
    m = dfa_minimize(d)
    assert m.n_states == 3 and m.minimal and dfa_minimize(m) is m
    assert m.edges == (((97, 98, 1),), ((99, 99, 2),), ()) or m.edges == [((97, 98, 1),), ((99, 99, 2),), ()]
    empty = dfa_minimize(Dfa([((97, 97, 1),), ()], [False, False]))
    assert empty.is_empty() and empty.n_states == 1


@pytest.mark.parametrize("seed", range(6))
def test_minimize_dense_and_hashed_paths_agree(seed, monkeypatch):
    """The Cython-kernel minimizer and its hashed-signature fallback give the same minimal DFA
    (same state count, same language) on random automata with redundant states."""
    rng = random.Random(seed)
    n = 40
    edges = []
    for _ in range(n):
        cuts = sorted(rng.sample(range(97, 107), 3))
        es = [(lo, hi - 1, rng.randrange(n)) for lo, hi in zip(cuts, cuts[1:]) if rng.random() < 0.8]
        edges.append(tuple(es))
    dfa = Dfa(edges, [rng.random() < 0.3 for _ in range(n)])
    # the Python twin of the C minimizer (tests/grammar/test_cp_minimize.py compares those)
    dense = code_point_dfa._dfa_minimize_reference(dfa)
    monkeypatch.setattr(code_point_dfa, "_DENSE_MINIMIZE_CELLS", 0)
    hashed = code_point_dfa._dfa_minimize_reference(dfa)
    assert dense.n_states == hashed.n_states <= n
    words = ["".join(w) for k in range(6) for w in itertools.product("abcdefghij"[:4], repeat=k)]
    for w in words:
        assert dense.matches(w) == hashed.matches(w) == dfa.matches(w), w


def test_length_bounds():
    d = dfa_from_expr(Seq((Bytes(b"ab"), Repeat(Bytes(b"c"), 0, 3))))
    assert d.length_bounds() == (2, 5)
    d2 = dfa_from_expr(Repeat(Bytes(b"c"), 1, None))
    assert d2.length_bounds() == (1, None)
    assert dfa_literals([]).length_bounds() == (None, None)


def _length_pairs(d, min_len, max_len):
    """(state, capped length) pairs dfa_with_length reaches, counted by brute force."""
    cap = max_len if max_len is not None else min_len
    seen, todo = {(0, 0)}, [(0, 0)]
    while todo:
        q, n = todo.pop()
        if max_len is None or n < max_len:
            for _, _, t in d.edges[q]:
                k = (t, min(n + 1, cap))
                if k not in seen:
                    seen.add(k)
                    todo.append(k)
    return len(seen)


@pytest.mark.parametrize("seed", range(3))
def test_with_length_limit_is_exact_and_checked_up_front(seed):
    # the limit is decided before exploring (a 32,767-long bound over a 31-state pattern used
    # to explore 20,000 states first): raised exactly when the product has more states
    rng = random.Random(seed)
    for _ in range(300):
        n = rng.randint(1, 7)
        d = Dfa([tuple((97 + c, 97 + c, rng.randrange(n)) for c in range(rng.randint(0, 3)))
                 for _ in range(n)], [rng.random() < 0.5 for _ in range(n)])
        lo, hi = rng.randint(0, 9), rng.choice([None, rng.randint(0, 30)])
        size = _length_pairs(d, lo, hi)
        for cap in (size - 1, size):
            if cap < 1:
                continue
            if size > cap:
                with pytest.raises(GrammarLimitError, match=f"exceeds {cap} states"):
                    dfa_with_length(d, lo, hi, max_states=cap)
            else:
                got = dfa_with_length(d, lo, hi, max_states=cap)
                assert [got.matches(w) for w in WORDS] == [
                    d.matches(w) and lo <= len(w) <= (len(w) if hi is None else hi) for w in WORDS]
    big = dfa_from_expr(Repeat(CharClass(((48, 57),)), 1, None))
    with pytest.raises(GrammarLimitError):
        dfa_with_length(dfa_product(big, big, "and"), 0, 10**9)


@pytest.mark.parametrize("seed", range(3))
def test_literals_are_the_minimized_prefix_automaton(seed):
    # dfa_literals is built straight from the merged trie: the same canonical automaton as
    # minimizing the automaton of the words' prefixes
    rng = random.Random(seed)
    alphabet = "abcxyz\u00e9\U0001F600"
    for _ in range(500):
        words = ["".join(rng.choice(alphabet[:rng.randint(1, len(alphabet))])
                         for _ in range(rng.randint(0, 6))) for _ in range(rng.randint(0, 8))]
        prefixes = {w[:i] for w in words for i in range(len(w) + 1)}

        def moves(p):
            return sorted({(ord(w[len(p)]), ord(w[len(p)]), w[:len(p) + 1])
                           for w in words if len(w) > len(p) and w.startswith(p)})
        slow = dfa_minimize(dfa_explore("", moves, lambda p: p in words))
        fast = dfa_literals(words)
        assert (fast.edges, fast.accept) == (slow.edges, slow.accept), words
        assert all(fast.matches(p) == (p in words) for p in prefixes)


def test_unicode_scalars_leave_out_the_surrogates():
    assert UNICODE_SCALARS == ((0, 0xD7FF), (0xE000, 0x10FFFF))


def test_explore_numbers_states_in_discovery_order_and_caps_them():
    d = dfa_explore("s", lambda k: [(97, 98, k + "x")] if len(k) < 3 else [], lambda k: len(k) == 3)
    assert d.n_states == 3 and d.edges[0] == ((97, 98, 1),) and d.matches("ab")
    with pytest.raises(GrammarLimitError, match="counter exceeds 2 states"):
        dfa_explore(0, lambda n: [(97, 97, n + 1)], lambda n: True, max_states=2, what="counter")


@pytest.mark.parametrize("name", ["xmask.grammar.code_point_dfa", "xmask.grammar.dfa_expr",
                                  "xmask.grammar.rule_sink", "xmask.grammar.ir_expr",
                                  "xmask.grammar.ir", "xmask.grammar_api", "xmask._graph",
                                  "xmask.grammar._word_complement", "xmask.grammar.cp_minimize_reference",
                                  "xmask.grammar.edge_runs"])
def test_module_doctests(name):
    import doctest
    import importlib

    failures, _ = doctest.testmod(importlib.import_module(name))
    assert failures == 0
